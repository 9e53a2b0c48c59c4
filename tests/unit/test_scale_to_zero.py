"""Asynchronous endpoints in the money (lambdas/cost/logic/scale_to_zero.py): spend by model from the AsyncInf: usage
type, hours at zero instances, what scaling to zero saved against always on, and the evaluation's "bursty" on an
export's own fields (the publisher's example export: aws-cli's get-cost-and-usage, tests/data/aws_cli, verbatim)."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from neuronfleet.cost.exports import rows_from_cost_explorer_json
from neuronfleet.lambdas.cost.logic.discovery import creation_time
from neuronfleet.lambdas.cost.logic.evaluation import estimate
from neuronfleet.lambdas.cost.logic.rows import CostRow
from neuronfleet.lambdas.cost.logic.scale_to_zero import BURSTY_DUTY, MIN_DAYS, async_spend, is_async, shape
from neuronfleet_contract.cost import EndpointModel
from tests.publisher_examples import cli_outputs, response_errors

SAMPLE = cli_outputs("ce-get-cost-and-usage")[0]
"""aws-cli's own GetCostAndUsage example (verbatim): one MONTHLY period, 2017-09-01 to 2017-10-01."""
DAYS = [f"2026-11-{d:02d}" for d in range(1, 8)]
SUMMARISE = EndpointModel(endpoint="nf-batch-summarise", neuron_types=("ml.inf2.xlarge",), model="summarise",
                          created="2026-10-01T12:00:00+00:00")


def row(day: str, usd: str, hours: str, usage_type: str = "USE2-AsyncInf:ml.inf2.xlarge",
        instance_type: str = "ml.inf2.xlarge") -> CostRow:
    return CostRow(day=day, fleet="nf-batch", service="sagemaker", instance_type=instance_type,
                   family="inferentia" if "inf2" in instance_type else "gpu", amount=Decimal(usd),
                   usage_hours=Decimal(hours), usage="sagemaker-hosting", usage_type=usage_type)


def test_async_spend_by_model_with_idle_hours_and_the_saving_against_always_on() -> None:
    """Two busy days of seven: 9 instance-hours billed $8.91 (the rate read from them: $0.99); always on, one instance
    168 hours at that rate = $166.32; scaling to zero saved $157.41; at least 159 hours had no instance."""
    rows = [row(DAYS[0], "2.97", "3"), row(DAYS[2], "5.94", "6"),
            row(DAYS[1], "23.76", "24", usage_type="USE2-Host:ml.inf2.xlarge")]  # real-time hosting: not async
    (got,) = async_spend(rows, [SUMMARISE], DAYS)
    assert got["model"] == "summarise" and got["days"] == 7
    assert (got["spend_usd"], got["instance_hours"], got["rate_usd_per_instance_hour"]) == ("8.91", "9.00", "0.99")
    assert (got["always_on_usd"], got["saved_usd"], got["idle_hours_at_least"]) == ("166.32", "157.41", "159.00")
    assert "neuronfleet verify --check async-usage-type" in got["source"]


MONTH = [f"2026-11-{d:02d}" for d in range(1, 31)]
BUSY = [row(d, "2.97", "3") for d in MONTH[15:]]
"""1 instance x 3 h ($2.97, at $0.99) on each of days 16-30: 15 busy days of a 30-day period."""


@pytest.mark.parametrize(("created", "days", "always_on", "saved", "says"), [
    # created before the period: every recorded day, unchanged (30 x 24 h x $0.99 - $44.55)
    ("2026-10-01T12:00:00+00:00", 30, "712.80", "668.25", "over 30 recorded days, at least 675.00 hours"),
    # created on day 16 at midnight UTC: 15 days (15 x 24 h x $0.99 - $44.55; before the fix $668.25)
    ("2026-11-16T00:00:00+00:00", 15, "356.40", "311.85", "over 15 recorded days since its creation at 2026-11-16"),
    # created on day 16 at 06:00 UTC: only its 18 hours that day (354 h x $0.99 - $44.55)
    ("2026-11-16T06:00:00+00:00", 15, "350.46", "305.91", "since its creation at 2026-11-16 06:00 UTC"),
    # the same instant written in another zone
    ("2026-11-16T01:00:00-05:00", 15, "350.46", "305.91", "since its creation at 2026-11-16 06:00 UTC"),
    # created after the last recorded day: nothing to compare
    ("2026-12-01T00:00:00+00:00", 0, None, None, "after the last recorded day 2026-11-30: no recorded day"),
    # not read / unreadable: the line says so, no figure
    ("", 30, None, None, "creation time (DescribeEndpoint CreationTime) was not read: no always-on"),
    ("2026-11-16T00:00:00", 30, None, None, "is no timestamp with a time zone"),
    ("yesterday", 30, None, None, "'yesterday' is no timestamp"),
])
def test_always_on_covers_only_the_recorded_days_since_the_endpoints_creation(
        created: str, days: int, always_on: str | None, saved: str | None, says: str) -> None:
    model = EndpointModel(endpoint="nf-batch-summarise", neuron_types=("ml.inf2.xlarge",), model="summarise",
                          created=created)
    (got,) = async_spend(BUSY, [model], MONTH)
    assert (got["days"], got["always_on_usd"], got["saved_usd"]) == (days, always_on, saved)
    assert says in got["line"] and (saved is None) == ("saved $" not in got["line"])
    assert got["created"] == created


def test_rows_before_the_creation_belong_to_no_saving_of_this_endpoint() -> None:
    """A row on day 10 (an earlier endpoint of the same name) is left out of the spend and named in the line."""
    model = EndpointModel(endpoint="nf-batch-summarise", neuron_types=("ml.inf2.xlarge",), model="summarise",
                          created="2026-11-16T00:00:00+00:00")
    (got,) = async_spend([row(MONTH[9], "9.90", "10"), *BUSY], [model], MONTH)
    assert (got["spend_usd"], got["instance_hours"], got["saved_usd"]) == ("44.55", "45.00", "311.85")
    assert "$9.90 billed on days before its creation left out" in got["line"]


def test_the_creation_time_from_describe_endpoint() -> None:
    """botocore's DescribeEndpoint output: CreationTime, a required timestamp (a timezone-aware datetime)."""
    when = datetime(2026, 11, 16, 1, 0, tzinfo=timezone(timedelta(hours=-5)))
    assert creation_time({"CreationTime": when}) == "2026-11-16T06:00:00+00:00"
    assert creation_time({}) == creation_time({"CreationTime": datetime(2026, 11, 16)}) == ""  # never guessed


def test_a_type_two_endpoints_share_is_not_split() -> None:
    other = EndpointModel(endpoint="nf-batch-other", neuron_types=("ml.inf2.xlarge",))
    assert async_spend([row(DAYS[0], "2.97", "3")], [SUMMARISE, other], DAYS) == []


def test_the_usage_type_decides_async() -> None:
    assert is_async(row(DAYS[0], "1", "1")) and is_async(row(DAYS[0], "1", "1", usage_type="AsyncInf:ml.inf2.xlarge"))
    assert not is_async(row(DAYS[0], "1", "1", usage_type="USE2-Host:ml.inf2.xlarge"))


def test_bursty_needs_a_week_the_publishers_monthly_export_cannot_tell() -> None:
    """The publisher's example is one monthly period: no workload's shape can be read from it."""
    doc = copy.deepcopy(SAMPLE)
    doc["GroupDefinitions"] = [{"Type": "DIMENSION", "Key": "USAGE_TYPE"}]
    (period,) = doc["ResultsByTime"]
    g = period["Groups"][0]
    g["Keys"] = ["USE1-Host:ml.g5.2xlarge"]
    g["Metrics"]["UsageQuantity"] = {"Amount": "120", "Unit": "Hrs"}
    assert response_errors("ce", "GetCostAndUsage", doc) == []
    rows = rows_from_cost_explorer_json(doc).rows
    assert {r.day for r in rows} == {"2017-09-01"}
    (got,) = shape(rows).values()
    assert got["bursty"] is None and got["days"] == 1 and f"at least {MIN_DAYS} days" in got["why"]


def daily_export(hours_by_day: list[str]) -> dict:
    """The publisher's example as a DAILY export (its period copied per day, keys and amounts set per day)."""
    doc = copy.deepcopy(SAMPLE)
    doc["GroupDefinitions"] = [{"Type": "DIMENSION", "Key": "USAGE_TYPE"}]
    template = doc["ResultsByTime"][0]
    doc["ResultsByTime"] = []
    for i, hours in enumerate(hours_by_day):
        p = copy.deepcopy(template)
        p["TimePeriod"] = {"Start": f"2017-09-{i + 1:02d}", "End": f"2017-09-{i + 2:02d}"}
        g = p["Groups"][0]
        p["Groups"] = [g]
        g["Keys"] = ["USE1-BoxUsage:g5.2xlarge"]
        g["Metrics"]["UnblendedCost"]["Amount"] = str(Decimal(hours) * Decimal("1.212"))
        g["Metrics"]["UsageQuantity"] = {"Amount": hours, "Unit": "Hrs"}
        doc["ResultsByTime"].append(p)
    assert response_errors("ce", "GetCostAndUsage", doc) == []
    return doc


def test_a_workload_that_comes_and_goes_is_bursty_and_the_estimate_suggests_async() -> None:
    """Seven days, 12 instance-hours on two of them, none on the others: the peak day needs one instance, so the duty is
    24 instance-hours over 7 x 24: 0.14, bursty."""
    rows = rows_from_cost_explorer_json(daily_export(["12", "0", "0", "12", "0", "0", "0"])).rows
    (got,) = shape(rows).values()
    assert got["bursty"] is True and got["duty"] == "0.14" and got["peak_day_instances"] == 1
    out = estimate(rows, {"g5.2xlarge": {"usd_per_hour": "1.212", "source": "test"}}, accelerators={
        "g5.2xlarge": ("gpu", 24)})
    assert any("bursty" in s and "invocation: async" in s for s in out["suggestions"])


def test_a_steady_workload_is_not_bursty() -> None:
    rows = rows_from_cost_explorer_json(daily_export(["24"] * 6 + ["20"])).rows
    (got,) = shape(rows).values()
    assert got["bursty"] is False and Decimal(got["duty"]) >= BURSTY_DUTY


def test_the_report_shows_what_scaling_to_zero_saved() -> None:
    """The weekly report (report.build) carries the figure per model, with its source."""
    from datetime import date

    from neuronfleet.lambdas.cost.report import build

    rows = [row(DAYS[0], "2.97", "3"), row(DAYS[2], "5.94", "6"), row(DAYS[6], "0", "0")]
    out = build(fleet="nf-batch", rows=rows, start=date(2026, 11, 1), end=date(2026, 11, 8), invocations={},
                tokens={}, prices={}, models=[SUMMARISE])
    (got,) = out["scale_to_zero"]
    assert (got["model"], got["days"], got["saved_usd"]) == ("summarise", 3, "62.37")  # 72 h x $0.99 - $8.91
    assert "scale_to_zero" in out["sources"]


def test_an_async_endpoint_with_instances_and_no_invocations_is_not_idle() -> None:
    """SageMaker publishes no Invocations for an asynchronous endpoint: the waste detector reads its
    AsyncInferenceConfig (DescribeEndpoint, botocore Stubber on the real model) and never calls it idle; a real-time
    endpoint with the same counts is."""
    from datetime import UTC, datetime

    import boto3
    from botocore.stub import ANY, Stubber

    from neuronfleet.lambdas.cost.adapters.inventory import FleetInventory
    from neuronfleet.lambdas.cost.logic.idle import endpoint_waste

    sm = boto3.client("sagemaker", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    cw = boto3.client("cloudwatch", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    now = datetime(2026, 11, 29, tzinfo=UTC)
    variant = {"VariantName": "neuron", "CurrentInstanceCount": 1, "CurrentWeight": 1.0}
    base = {"EndpointArn": "arn:aws:sagemaker:us-east-2:777777777777:endpoint/e", "EndpointConfigName": "c",
            "EndpointStatus": "InService", "CreationTime": now, "LastModifiedTime": now,
            "ProductionVariants": [variant]}
    queue = {"OutputConfig": {"S3OutputPath": "s3://b/async/Summarise/output"}}
    with Stubber(sm) as s, Stubber(cw) as c:
        s.add_response("describe_endpoint", {**base, "EndpointName": "summarise", "AsyncInferenceConfig": queue},
                       {"EndpointName": "summarise"})
        s.add_response("describe_endpoint", {**base, "EndpointName": "chat"}, {"EndpointName": "chat"})
        c.add_response("get_metric_data", {"MetricDataResults": [
            {"Id": "v0", "Values": [], "StatusCode": "Complete"}, {"Id": "v1", "Values": [], "StatusCode": "Complete"}]},
            {"StartTime": ANY, "EndTime": ANY, "MetricDataQueries": ANY})
        inventory = FleetInventory(ec2=None, sagemaker=sm, cloudwatch=cw, tagging=None, fleet="nf-batch",
                                   namespace="n", metric="m")
        traffic = inventory.variants(["summarise", "chat"], 6, now)
    assert [(v.endpoint, v.asynchronous) for v in traffic] == [("summarise", True), ("chat", False)]
    idle, _ = endpoint_waste(traffic, hours=6)
    assert list(idle) == ["chat/neuron"]


def test_the_report_page_states_the_saving_once() -> None:
    from datetime import date

    from neuronfleet.lambdas.cost.logic.report_page import render_html
    from neuronfleet.lambdas.cost.report import build

    rows = [row(DAYS[0], "2.97", "3"), row(DAYS[2], "5.94", "6"), row(DAYS[6], "0", "0")]
    page = render_html(build(fleet="nf-batch", rows=rows, start=date(2026, 11, 1), end=date(2026, 11, 8),
                             invocations={}, tokens={}, prices={}, models=[SUMMARISE]))
    assert "Scaling to zero: asynchronous endpoints" in page
    assert page.count("scaling to zero saved $62.37") == 1 and page.count("at least 63.00 hours at zero instances") == 1
