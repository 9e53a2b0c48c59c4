"""Cost monitor handlers under moto: Cost Explorer pages injected through moto's API, real DynamoDB,
CloudWatch, S3 and SNS calls."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
import requests
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws
from moto.ce.models import ce_backends
from neuronfleet_runtime.announcements import Unfinished

from neuronfleet.lambdas.cost import collector, report, waste
from neuronfleet.lambdas.cost.adapters.athena import AthenaSpend
from neuronfleet.lambdas.cost.adapters.block_reservations import CapacityBlocks
from neuronfleet.lambdas.cost.adapters.cost_explorer import CostExplorer
from neuronfleet.lambdas.cost.adapters.inventory import FleetEndpoints, FleetInventory
from neuronfleet.lambdas.cost.adapters.outputs import Ledger, SpendMetrics, Topic
from neuronfleet.lambdas.cost.adapters.spend_ledger import SpendLedger
from neuronfleet.lambdas.cost.adapters.work import Work
from neuronfleet.lambdas.cost.logic.discovery import Discovered
from neuronfleet.lambdas.cost.logic.economics import EndpointModel
from neuronfleet.lambdas.cost.logic.ledger import Published
from tests.fault_injection import Fault, Faulty, client_error
from tests.moto_support import alerts_inbox, announcements_table, sagemaker_instance_types_from_botocore

REGION = "us-east-2"
TODAY = date(2026, 11, 4)
NOW = datetime(2026, 11, 4, 6, tzinfo=UTC)
DAYS = ["2026-11-01", "2026-11-02", "2026-11-03"]
TYPES = ["trn2.48xlarge", "ml.inf2.xlarge", "ml.p5.48xlarge", "p5.48xlarge"]


def group(usage_type: str, fleet: str, amount: Any, hours: Any = "24", unblended: Any = "same") -> dict[str, Any]:
    """One Cost Explorer group: keys [USAGE_TYPE (or RECORD_TYPE), fleet tag], both cost bases."""
    metrics: dict[str, Any] = {"UsageQuantity": {"Amount": str(hours), "Unit": "Hrs"}}
    if amount is not None:
        metrics["NetAmortizedCost"] = {"Amount": str(amount), "Unit": "USD"}
        metrics["UnblendedCost"] = {"Amount": str(amount if unblended == "same" else unblended), "Unit": "USD"}
    return {"Keys": [usage_type, f"neuronfleet:fleet${fleet}"], "Metrics": metrics}


def page(day: str, groups: list[dict[str, Any]], token: str | None = None,
         estimated: bool | str = False) -> dict[str, Any]:
    end = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
    out: dict[str, Any] = {"ResultsByTime": [{"TimePeriod": {"Start": day, "End": end}, "Groups": groups,
                                              "Total": {}, "Estimated": estimated}], "DimensionValueAttributes": []}
    if token:
        out["NextPageToken"] = token
    return out


NO_ADJUSTMENTS = [page("2026-11-01", [])]


def inject(pages: list[dict[str, Any]], adjustments: list[dict[str, Any]] | None = None) -> None:
    """moto's documented API for Cost Explorer results: each new request body takes the next page. The
    collector asks the usage query's pages first, then the adjustments query's."""
    backend = ce_backends["123456789012"]["global"]
    backend.cost_usage_results.clear()
    backend.cost_usage_results_queue.clear()
    resp = requests.post("http://motoapi.amazonaws.com/moto-api/static/ce/cost-and-usage-results",
                         json={"results": pages + (NO_ADJUSTMENTS if adjustments is None else adjustments)}, timeout=5)
    assert resp.status_code == 201


MONTH = [
    page("2026-11-01", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "1072.83"),
                        group("USE2-Host:ml.inf2.xlarge", "nf-prod", "23.77"),
                        group("USE2-Host:ml.p5.48xlarge", "nf-prod", "1320.96")], token="p2"),
    page("2026-11-02", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "1072.83"),
                        group("USE2-BoxUsage:p5.48xlarge", "nf-other", "500.00"),
                        group("USE2-Host:ml.inf2.xlarge", "nf-prod", "23.77")], token="p3"),
    page("2026-11-03", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "536.41", 12),
                        group("USE2-Host:ml.inf2.xlarge", "", "10.00"),
                        group("USE2-EBS:VolumeUsage.gp3", "nf-prod", "3.00")]),
]


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        ddb = boto3.resource("dynamodb", region_name=REGION)
        table = ddb.create_table(TableName="ledger", BillingMode="PAY_PER_REQUEST",
                                 KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                            {"AttributeName": "sk", "KeyType": "RANGE"}],
                                 AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                                       {"AttributeName": "sk", "AttributeType": "S"}])
        other = ddb.create_table(TableName="ledger-other", BillingMode="PAY_PER_REQUEST",
                                 KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                            {"AttributeName": "sk", "KeyType": "RANGE"}],
                                 AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                                       {"AttributeName": "sk", "AttributeType": "S"}])
        sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
        topic, queue = alerts_inbox(sns, sqs)
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="reports", CreateBucketConfiguration={"LocationConstraint": REGION})
        yield {"table": table, "other": other, "ce": boto3.client("ce", region_name="us-east-1"),
               "cw": boto3.client("cloudwatch", region_name=REGION), "sns": sns, "sqs": sqs, "topic": topic,
               "queue": queue, "s3": s3}


def run_collector(aws: dict[str, Any], ce_client: Any = None, sleeps: list[float] | None = None, *,
                  fleet: str | None = "nf-prod", table: Any = None, blocks: Any = None, basis: Any = "net_amortized",
                  metrics: Any = None, now: datetime = NOW, lookback_days: int = 3, backfill_days: int = 0,
                  month_close_days: int = 0):
    bad: list[Any] = []
    ce = CostExplorer(ce_client or aws["ce"], sleep=(sleeps.append if sleeps is not None else lambda s: None))
    summary = collector.collect(today=now.date(), lookback_days=lookback_days, instance_types=TYPES, ce=ce,
                                ledger=SpendLedger(table or aws["table"]),
                                metrics=metrics or SpendMetrics(aws["cw"], "NeuronFleet/Cost"), now=now,
                                on_bad_row=bad.append, fleet=fleet, blocks=blocks, basis=basis,
                                backfill_days=backfill_days, month_close_days=month_close_days)
    return summary, bad


def rows_of(aws: dict[str, Any], table: str = "table") -> list[dict[str, Any]]:
    return [i for i in aws[table].scan()["Items"] if i["pk"].startswith("DAY#")]


def spend_sum(aws: dict[str, Any], day: str, fleet: str, family: str) -> float:
    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    stats = aws["cw"].get_metric_statistics(
        Namespace="NeuronFleet/Cost", MetricName="Spend", StartTime=start, EndTime=start + timedelta(days=1),
        Period=86400, Statistics=["Sum"],
        Dimensions=[{"Name": "Fleet", "Value": fleet}, {"Name": "Family", "Value": family}])
    return round(sum(p["Sum"] for p in stats["Datapoints"]), 2)


def messages(aws: dict[str, Any]) -> list[dict[str, str]]:
    got = aws["sqs"].receive_message(QueueUrl=aws["queue"], MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in got]


class Recording:
    """moto's Cost Explorer client, recording each request."""

    def __init__(self, client: Any) -> None:
        self._client, self.calls = client, []

    def get_cost_and_usage(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        return self._client.get_cost_and_usage(**kwargs)  # type: ignore[no-any-return]


def test_collects_the_fleets_rows_with_one_request_a_page_into_the_ledger_and_metrics(aws) -> None:
    inject(MONTH)
    recording = Recording(aws["ce"])
    summary, bad = run_collector(aws, recording)
    assert bad == []
    # 3 usage pages + 1 adjustments page; 5 rows are nf-prod's, 2 another fleet's or untagged, EBS ignored
    assert (summary.ce_requests, summary.rows, summary.new, summary.other_fleets_rows, summary.ignored_rows) == \
        (4, 6, 6, 2, 1)
    usage, adjustments = recording.calls[0], recording.calls[-1]
    assert usage["Metrics"] == ["NetAmortizedCost", "UnblendedCost", "UsageQuantity"]
    assert [g["Key"] for g in usage["GroupBy"]] == ["USAGE_TYPE", "neuronfleet:fleet"]
    assert usage["Filter"]["And"][0]["Dimensions"]["Values"] == \
        ["Amazon Elastic Compute Cloud - Compute", "Amazon SageMaker", "EC2 - Other"]
    assert [g["Key"] for g in adjustments["GroupBy"]] == ["RECORD_TYPE", "neuronfleet:fleet"]
    # credits and taxes; refunds but those of "EC2 - Other", which the usage query nets into Capacity Block fees
    assert adjustments["Filter"]["Or"][0]["Dimensions"]["Values"] == ["Credit", "Tax"]
    assert adjustments["Filter"]["Or"][1]["And"] == [{"Dimensions": {"Key": "RECORD_TYPE", "Values": ["Refund"]}},
                                                     {"Not": {"Dimensions": {"Key": "SERVICE", "Values": ["EC2 - Other"]}}}]
    items = rows_of(aws)
    assert {i["fleet"] for i in items} == {"nf-prod"}
    trn = [i for i in items if i["day"] == "2026-11-03" and i["instance_type"] == "trn2.48xlarge"]
    assert (trn[0]["usage"], trn[0]["family"], trn[0]["amount"], trn[0]["usage_hours"]) == \
        ("ec2", "trainium", "536.41", "12")
    assert {i["usage"] for i in items if i["instance_type"].startswith("ml.")} == {"sagemaker-hosting"}
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1320.96
    assert spend_sum(aws, "2026-11-02", "nf-prod", "trainium") == 1072.83
    assert spend_sum(aws, "2026-11-02", "nf-other", "gpu") == 0  # not this collector's fleet


def test_two_fleets_in_one_account_each_publish_only_their_own(aws) -> None:
    inject(MONTH)
    run_collector(aws, fleet="nf-prod")
    run_collector(aws, fleet="nf-other", table=aws["other"])  # same query bodies: moto returns the same pages
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1320.96  # not 2,641.92
    assert spend_sum(aws, "2026-11-02", "nf-other", "gpu") == 500.0
    assert {i["fleet"] for i in rows_of(aws, "other")} == {"nf-other"}


def test_rerun_of_the_same_days_changes_nothing(aws) -> None:
    inject(MONTH)
    run_collector(aws)
    before = sorted(json.dumps(i, sort_keys=True) for i in rows_of(aws))
    summary, _ = run_collector(aws)
    assert (summary.new, summary.replaced, summary.unchanged, summary.metric_datapoints) == (0, 0, 6, 0)
    assert sorted(json.dumps(i, sort_keys=True) for i in rows_of(aws)) == before
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1320.96  # not doubled


def gpu_corrected_to(amount: str) -> list[dict[str, Any]]:
    """MONTH with Cost Explorer's late correction of the GPU group's USD amounts (the third group of day one)."""
    corrected = json.loads(json.dumps(MONTH))
    for m in corrected[0]["ResultsByTime"][0]["Groups"][2]["Metrics"].values():
        m["Amount"] = amount if m["Unit"] == "USD" else m["Amount"]
    return corrected


def test_late_correction_replaces_the_row_and_fixes_the_metric(aws) -> None:
    inject(MONTH)
    run_collector(aws)
    inject(gpu_corrected_to("1100.00"))
    summary, _ = run_collector(aws)
    assert (summary.new, summary.replaced, summary.unchanged) == (0, 1, 5)
    (row,) = [i for i in rows_of(aws) if i["instance_type"] == "ml.p5.48xlarge"]
    assert row["amount"] == "1100.00"
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1100.0


def test_a_revision_after_day_3_is_picked_up_while_the_month_may_still_change(aws) -> None:
    """Cost Explorer revises at month end (Savings Plans, credits): the window covers the whole month."""
    late = datetime(2026, 11, 12, 6, tzinfo=UTC)
    inject(MONTH)
    summary, _ = run_collector(aws, now=late)
    assert summary.days[0] == "2026-11-01" and summary.days[-1] == "2026-11-11"
    revised = json.loads(json.dumps(MONTH))
    for m in revised[0]["ResultsByTime"][0]["Groups"][0]["Metrics"].values():
        m["Amount"] = "900.00" if m["Unit"] == "USD" else m["Amount"]
    inject(revised)
    summary, _ = run_collector(aws, now=late)
    assert summary.replaced == 1
    assert spend_sum(aws, "2026-11-01", "nf-prod", "trainium") == 900.0


def test_first_run_backfills_and_estimated_days_are_marked(aws) -> None:
    pages = [page("2026-10-10", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "100")], token="p2"),
             page("2026-11-03", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "50")], estimated=True)]
    inject(pages)
    summary, _ = run_collector(aws, backfill_days=60)
    assert summary.backfill and summary.days[0] == "2026-09-05"
    assert summary.estimated_days == ["2026-11-03"]
    (late,) = [i for i in rows_of(aws) if i["day"] == "2026-11-03"]
    assert late["estimated"] is True
    assert spend_sum(aws, "2026-11-03", "nf-prod", "trainium") == 50.0
    # 2026-10-10 is older than CloudWatch accepts (two weeks): in the ledger, not in the metric
    assert [i["amount"] for i in rows_of(aws) if i["day"] == "2026-10-10"] == ["100"]
    assert spend_sum(aws, "2026-10-10", "nf-prod", "trainium") == 0
    summary, _ = run_collector(aws, backfill_days=60)
    assert not summary.backfill and summary.days[0] == "2026-11-01"


class Failing(SpendMetrics):
    """PutMetricData that fails the first ``n`` times."""

    def __init__(self, client: Any, n: int) -> None:
        super().__init__(client, "NeuronFleet/Cost")
        self.left = n

    def publish(self, deltas: Any) -> int:
        if self.left:
            self.left -= 1
            raise ClientError({"Error": {"Code": "InternalServiceError", "Message": "down"}}, "PutMetricData")
        return super().publish(deltas)


def test_a_failed_publish_is_repaired_by_the_next_run(aws) -> None:
    inject(MONTH)
    with pytest.raises(ClientError, match="down"):
        run_collector(aws, metrics=Failing(aws["cw"], 1))
    assert len(rows_of(aws)) == 6 and spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 0
    summary, _ = run_collector(aws)  # the rows are already in the ledger: nothing new, but the metric is repaired
    assert (summary.new, summary.metric_datapoints) == (0, 6)  # 3 days x their families
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1320.96
    run_collector(aws)
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1320.96


def test_an_overlapping_run_is_refused_by_the_lock_and_nothing_is_counted_twice(aws) -> None:
    inject(MONTH)
    ledger = SpendLedger(aws["table"])
    ledger.lock("collector#nf-prod", "the-other-run", NOW, 900)
    summary, _ = run_collector(aws)
    assert summary.skipped and summary.ce_requests == 0 and rows_of(aws) == []
    ledger.unlock("collector#nf-prod", "the-other-run")
    run_collector(aws)
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1320.96
    # a lock left by a crashed run expires
    ledger.lock("collector#nf-prod", "crashed", NOW - timedelta(hours=1), 900)
    summary, _ = run_collector(aws)
    assert not summary.skipped and spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1320.96


def test_a_published_total_changed_by_another_writer_refuses_the_whole_claim(aws) -> None:
    """The published totals are claimed on condition they still hold what this run read, all of a batch or none."""
    inject(MONTH)
    run_collector(aws)
    aws["table"].put_item(Item={"pk": "PUBLISHED#nf-prod", "sk": "2026-11-01#gpu", "value": "1"})
    ledger = SpendLedger(aws["table"])
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        ledger.claim_published("nf-prod", {("2026-10-31", "gpu"): Decimal(7), ("2026-11-01", "gpu"): Decimal(5)},
                               {("2026-11-01", "gpu"): Decimal(2)}, "run-x", "t")
    held = ledger.published("nf-prod", ["2026-10-31", "2026-11-01"])
    assert held[("2026-11-01", "gpu")] == Published(Decimal(1)) and ("2026-10-31", "gpu") not in held


def test_a_row_that_moves_from_untagged_to_the_fleet_is_retracted_and_the_metric_follows(aws) -> None:
    first = [page("2026-11-01", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "100"),
                                 group("USE2-BoxUsage:p5.48xlarge", "nf-prod", "40")])]
    inject(first)
    run_collector(aws)
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 40.0
    # Cost Explorer re-attributes: the p5 hours belong to another fleet now, the trn2 row is unchanged
    inject([page("2026-11-01", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "100"),
                                group("USE2-BoxUsage:p5.48xlarge", "nf-other", "40")])])
    summary, _ = run_collector(aws)
    assert (summary.retracted, summary.unchanged) == (1, 1)
    assert [i["instance_type"] for i in rows_of(aws)] == ["trn2.48xlarge"]
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 0
    assert spend_sum(aws, "2026-11-01", "nf-prod", "trainium") == 100.0


def test_savings_plan_negation_and_credits_both_bases_credits_apart(aws) -> None:
    """A Savings Plan covers the trn2 hours: unblended nets to 0 (SavingsPlanNegation), net amortized carries
    the plan's effective cost; a credit is kept apart and never lowers the family's spend."""
    inject([page("2026-11-01", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "650.00", unblended="0")])],
           adjustments=[page("2026-11-01", [group("Credit", "nf-prod", "-300.00", hours=0),
                                            group("Tax", "nf-prod", "12.00", hours=0)])])
    run_collector(aws)
    rows = {i["usage"]: i for i in rows_of(aws)}
    assert (rows["ec2"]["amount"], rows["ec2"]["unblended"]) == ("650.00", "0")
    assert (rows["credit"]["amount"], rows["credit"]["family"], rows["tax"]["amount"]) == ("-300.00", "", "12.00")
    assert spend_sum(aws, "2026-11-01", "nf-prod", "trainium") == 650.0
    out = report.build(fleet="nf-prod", rows=SpendLedger(aws["table"]).rows(["2026-11-01"]), start=date(2026, 11, 1),
                       end=date(2026, 11, 2), invocations={}, tokens={}, prices={}, basis="unblended")
    assert out["basis"] == "unblended" and out["spend_usd"]["by_family"]["trainium"] == "0.00"
    assert out["adjustments_usd"] == {"credit": "-300.00", "tax": "12.00"}
    amortized = report.build(fleet="nf-prod", rows=SpendLedger(aws["table"]).rows(["2026-11-01"]),
                             start=date(2026, 11, 1), end=date(2026, 11, 2), invocations={}, tokens={}, prices={})
    assert amortized["basis"] == "net_amortized" and amortized["spend_usd"]["total"] == "650.00"


def test_sagemaker_hosting_training_and_processing_are_told_apart(aws) -> None:
    inject([page("2026-11-01", [group("USE2-Host:ml.inf2.xlarge", "nf-prod", "20.00"),
                                group("USE2-Train:ml.trn1.32xlarge", "nf-prod", "500.00"),
                                group("USE2-Processing:ml.g5.xlarge", "nf-prod", "5.00"),
                                group("USE2-BoxUsage:p5.48xlarge", "nf-prod", "100.00")])])
    run_collector(aws)
    assert {i["instance_type"]: i["usage"] for i in rows_of(aws)} == {
        "ml.inf2.xlarge": "sagemaker-hosting", "ml.trn1.32xlarge": "sagemaker-training",
        "ml.g5.xlarge": "sagemaker-processing", "p5.48xlarge": "ec2"}
    out = report.build(fleet="nf-prod", rows=SpendLedger(aws["table"]).rows(["2026-11-01"]), start=date(2026, 11, 1),
                       end=date(2026, 11, 2), invocations={}, tokens={}, prices={})
    assert out["spend_usd"]["by_workload_family"] == {
        "inference/inferentia": "20.00", "processing/gpu": "5.00", "training/gpu": "100.00",
        "training/trainium": "500.00"}


def _blocks_client(blocks: list[dict[str, Any]], reservations: list[dict[str, Any]],
                   history: Any = None) -> Any:
    """EC2 stubbed with botocore's Stubber against the service model (moto has no Capacity Blocks). ``history``: the
    extension history's answer (its items; or a callable adding its own answers to the stub); no extension by
    default."""
    ec2 = boto3.client("ec2", region_name=REGION)
    stub = Stubber(ec2)
    stub.add_response("describe_capacity_blocks", {"CapacityBlocks": blocks})
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": reservations},
                      {"CapacityReservationIds": sorted(r["CapacityReservationId"] for r in reservations)})
    if callable(history):
        history(stub)
    else:
        stub.add_response("describe_capacity_block_extension_history", {"CapacityBlockExtensions": history or []})
    stub.activate()
    return ec2


def _block(block_id: str, cr: str, start: datetime, days: int, created: datetime, tags: dict[str, str]) -> dict[str, Any]:
    return {"CapacityBlockId": block_id, "CapacityReservationIds": [cr], "StartDate": start,
            "EndDate": start + timedelta(days=days), "CreateDate": created, "State": "active",
            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}


def _reservation(cr: str, instance_type: str, count: int, tags: dict[str, str] | None = None) -> dict[str, Any]:
    return {"CapacityReservationId": cr, "InstanceType": instance_type, "TotalInstanceCount": count,
            "Tags": [{"Key": k, "Value": v} for k, v in (tags or {}).items()]}


def test_capacity_block_fees_are_amortised_over_the_block_per_fleet_and_an_unused_block_is_visible(aws) -> None:
    """Block A (nf-prod by its tag) was bought on 11-01 for 4 days from 11-01 11:30 (instances bill $0, 96 h of
    use); block B (no tag on the block, its reservation says nf-prod) bought the same day, unused; block C has
    no fleet tag anywhere and its fee row is untagged: it stays untagged, not this fleet's."""
    bought = datetime(2026, 11, 1, 9, tzinfo=UTC)
    start = datetime(2026, 11, 1, 11, 30, tzinfo=UTC)
    ec2 = _blocks_client(
        [_block("cb-a", "cr-a", start, 4, bought, {"neuronfleet:fleet": "nf-prod"}),
         _block("cb-b", "cr-b", start, 2, bought, {}),
         _block("cb-c", "cr-c", start, 2, bought, {})],
        [_reservation("cr-a", "trn2.48xlarge", 1), _reservation("cr-b", "p5.48xlarge", 1, {"neuronfleet:fleet": "nf-prod"}),
         _reservation("cr-c", "p4d.24xlarge", 1)])
    inject([page("2026-11-01", [group("USE2-CapacityBlockFee:trn2.48xlarge", "", "4000.00", hours=0),
                                group("USE2-CapacityBlockFee:p5.48xlarge", "", "1500.00", hours=0),
                                group("USE2-CapacityBlockFee:p4d.24xlarge", "", "800.00", hours=0),
                                group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "0", hours=12.5)], token="p2"),
            page("2026-11-02", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "0", hours=24)], token="p3"),
            page("2026-11-03", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "0", hours=24)])])
    summary, _ = run_collector(aws, blocks=CapacityBlocks(ec2))
    assert summary.capacity_blocks == 2 and summary.unmatched_fees == 0
    fees = sorted((i["detail"], i["day"], i["amount"]) for i in rows_of(aws) if i["usage"] == "capacity-block")
    # block A: 96 h from 11-01 11:30 -> 12.5 h, 24, 24, 24, 11.5 h of $4000; the last day takes the remainder
    assert [f for f in fees if f[0] == "cb-a"] == [
        ("cb-a", "2026-11-01", "520.833333"), ("cb-a", "2026-11-02", "1000.000000"),
        ("cb-a", "2026-11-03", "1000.000000"), ("cb-a", "2026-11-04", "1000.000000"),
        ("cb-a", "2026-11-05", "479.166667")]
    assert sum(Decimal(a) for d, _, a in fees if d == "cb-a") == Decimal("4000.00")
    assert {f[0] for f in fees} == {"cb-a", "cb-b"}  # cb-c is nobody's: not written by nf-prod's collector
    assert spend_sum(aws, "2026-11-02", "nf-prod", "trainium") == 1000.0  # was $0: the instances bill nothing
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == round(1500 * 12.5 / 48, 2)
    out = report.build(fleet="nf-prod", rows=SpendLedger(aws["table"]).rows(
        [f"2026-11-0{d}" for d in range(1, 6)]), start=date(2026, 11, 1), end=date(2026, 11, 6), invocations={},
        tokens={}, prices={})
    blocks = {b["block_id"]: b for b in out["capacity_blocks"]}
    assert (blocks["cb-a"]["unused"], blocks["cb-a"]["used_instance_hours"], blocks["cb-a"]["fee_usd"]) == \
        (False, "60.5", "4000.00")
    assert (blocks["cb-b"]["unused"], blocks["cb-b"]["fee_usd"]) == (True, "1500.00")
    assert out["spend_usd"]["by_usage"]["capacity-block"] == "5500.00"


def test_a_fee_no_block_matches_stays_on_its_purchase_day(aws) -> None:
    ec2 = _blocks_client([], [])
    inject([page("2026-11-02", [group("USE2-CapacityBlockFee:trn2.48xlarge", "nf-prod", "700.00", hours=0)])])
    summary, _ = run_collector(aws, blocks=CapacityBlocks(ec2))
    assert summary.unmatched_fees == 1
    (row,) = rows_of(aws)
    assert (row["day"], row["amount"], row["detail"]) == ("2026-11-02", "700.00", "unmatched")


class Throttled:
    """moto's Cost Explorer client, throttled for the first ``n`` calls."""

    def __init__(self, client: Any, n: int) -> None:
        self._client, self._left = client, n

    def get_cost_and_usage(self, **kwargs: Any) -> dict[str, Any]:
        if self._left:
            self._left -= 1
            raise ClientError({"Error": {"Code": "LimitExceededException", "Message": "Rate exceeded"}},
                              "GetCostAndUsage")
        return self._client.get_cost_and_usage(**kwargs)  # type: ignore[no-any-return]


def test_throttling_is_retried_with_backoff_and_every_request_counted(aws) -> None:
    inject(MONTH)
    sleeps: list[float] = []
    summary, _ = run_collector(aws, Throttled(aws["ce"], 2), sleeps)
    assert (summary.ce_requests, summary.ce_throttled, summary.new) == (6, 2, 6)
    assert len(sleeps) == 2 and 1.0 <= sleeps[0] <= 1.5 and 2.0 <= sleeps[1] <= 3.0


def test_persistent_throttling_fails_the_run_and_writes_nothing(aws) -> None:
    inject(MONTH)
    with pytest.raises(ClientError, match="Rate exceeded"):
        run_collector(aws, Throttled(aws["ce"], 100), [])
    assert rows_of(aws) == []
    assert SpendLedger(aws["table"]).state("collector#nf-prod") is None
    assert not [i for i in aws["table"].scan()["Items"] if i["pk"] == "LOCK"]  # the lock is released


def test_bad_rows_are_counted_and_the_good_rows_kept(aws) -> None:
    inject([page("2026-11-01", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "100.00"),
                                group("USE2-BoxUsage:trn1.32xlarge", "nf-prod", None),
                                group("USE2-BoxUsage:inf2.xlarge", "nf-prod", "abc"),
                                group("USE2-BoxUsage:m5.large", "nf-prod", "3.00"),
                                group("USE2-Host:ml.inf2.xlarge", "nf-prod", "NaN")])])
    summary, bad = run_collector(aws)
    assert (summary.rows, summary.bad_rows, summary.new, summary.ignored_rows) == (1, 3, 1, 1)
    reasons = sorted(b.reason for b in bad)
    assert any(r.startswith("Metrics.NetAmortizedCost.Amount: got 'NaN'; allowed: a finite") for r in reasons)
    assert any("got 'abc'; allowed: a decimal number of USD" in r for r in reasons)
    assert any("Metrics.UnblendedCost.Amount: got nothing" in r for r in reasons)


# ---------------------------------------------------------------- collector hardening (issue 23)


def test_on_demand_unused_reserved_and_another_regions_p5_on_one_day_all_count(aws) -> None:
    """The issue's example: On-Demand p5 $1,000 + unused reserved p5 $300 (an ODCR's unused hours, billed) + p5 in a
    second region $500 on one day. Before: one ledger key for the three, the last kept: $500 in the ledger and the
    metric."""
    inject([page("2026-11-01", [group("USE2-BoxUsage:p5.48xlarge", "nf-prod", "1000.00"),
                                group("USE2-UnusedBox:p5.48xlarge", "nf-prod", "300.00", hours=5.45),
                                group("USW2-BoxUsage:p5.48xlarge", "nf-prod", "500.00")])])
    summary, bad = run_collector(aws)
    assert bad == [] and (summary.new, summary.duplicate_rows) == (3, 0)
    rows = rows_of(aws)
    assert sorted(i["usage_type"] for i in rows) == ["USE2-BoxUsage:p5.48xlarge", "USE2-UnusedBox:p5.48xlarge",
                                                     "USW2-BoxUsage:p5.48xlarge"]
    assert sum(Decimal(i["amount"]) for i in rows) == Decimal("1800.00")
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1800.0
    summary, _ = run_collector(aws)  # and a rerun changes nothing
    assert (summary.unchanged, summary.metric_datapoints) == (3, 0)
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1800.0


def test_rows_an_older_collector_keyed_without_usage_type_are_replaced_not_added(aws) -> None:
    """A ledger written before rows carried their usage type: the run writes the new keys and retracts the old
    row of the same day, so the day is not counted twice."""
    old = {"pk": "DAY#2026-11-01", "sk": "FLEET#nf-prod#USAGE#ec2#SVC#ec2#TYPE#p5.48xlarge", "day": "2026-11-01",
           "fleet": "nf-prod", "service": "ec2", "usage": "ec2", "instance_type": "p5.48xlarge", "family": "gpu",
           "amount": "500.00", "unblended": "500.00", "usage_hours": "24", "estimated": False,
           "source_day": "2026-11-01", "detail": ""}
    aws["table"].put_item(Item=old)
    inject([page("2026-11-01", [group("USE2-BoxUsage:p5.48xlarge", "nf-prod", "1000.00"),
                                group("USW2-BoxUsage:p5.48xlarge", "nf-prod", "500.00")])])
    summary, _ = run_collector(aws)
    assert (summary.new, summary.retracted) == (2, 1)
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1500.0


class DocumentedCloudWatch:
    """moto's CloudWatch refusing what CloudWatch's documentation says it refuses: values outside -2^360..2^360 and
    NaN/Infinity (botocore 1.44.5 PutMetricData; moto 5.2.5 refuses only NaN)."""

    def __init__(self, client: Any) -> None:
        self._client, self.refused = client, 0

    def put_metric_data(self, **kwargs: Any) -> Any:
        for d in kwargs["MetricData"]:
            if not math.isfinite(d["Value"]) or abs(d["Value"]) > 2.0**360:
                self.refused += 1
                raise ClientError({"Error": {"Code": "InvalidParameterValue",
                                             "Message": f"The value {d['Value']} for parameter MetricData is invalid"}},
                                  "PutMetricData")
        return self._client.put_metric_data(**kwargs)


def test_an_amount_of_1e400_is_a_bad_row_never_stored_and_later_publishes_go_on(aws) -> None:
    """Before: 1E+400 passed validation (Decimal finds it finite), was stored, became inf in PutMetricData, and
    every later run failed: no spend metrics for 14 days."""
    cloudwatch = DocumentedCloudWatch(aws["cw"])
    metrics = SpendMetrics(cloudwatch, "NeuronFleet/Cost")
    inject([page("2026-11-01", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "1E+400"),
                                group("USE2-BoxUsage:p5.48xlarge", "nf-prod", "100.00")], token="p2"),
            page("2026-11-02", [group("USE2-BoxUsage:p5.48xlarge", "nf-prod", "50.00")])])
    summary, bad = run_collector(aws, metrics=metrics)
    assert (summary.bad_rows, summary.new, summary.unpublishable) == (1, 2, [])
    assert bad[0].reason.startswith("Metrics.NetAmortizedCost.Amount: got '1E+400'; allowed: 0 or a magnitude")
    assert {i["instance_type"] for i in rows_of(aws)} == {"p5.48xlarge"}
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 100.0 and cloudwatch.refused == 0
    inject([page("2026-11-01", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "1E+400"),
                                group("USE2-BoxUsage:p5.48xlarge", "nf-prod", "120.00")], token="p2"),
            page("2026-11-02", [group("USE2-BoxUsage:p5.48xlarge", "nf-prod", "50.00")])])
    summary, _ = run_collector(aws, metrics=metrics)  # the next run publishes its correction
    assert summary.replaced == 1 and spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 120.0


def test_a_1e400_row_an_older_collector_stored_is_retracted_and_the_other_spend_published(aws) -> None:
    """A ledger already poisoned: the run leaves the row out of the totals (named in ``unpublishable``), publishes
    every other day and family, and retracts the row once Cost Explorer's answer for its day no longer has it."""
    cloudwatch = DocumentedCloudWatch(aws["cw"])
    poison = {"pk": "DAY#2026-11-02", "sk": "FLEET#nf-prod#USAGE#ec2#SVC#ec2#TYPE#trn2.48xlarge#UT#x", "day": "2026-11-02",
              "fleet": "nf-prod", "service": "ec2", "usage": "ec2", "instance_type": "trn2.48xlarge",
              "family": "trainium", "amount": "1E+400", "unblended": "1E+400", "usage_hours": "1",
              "estimated": False, "source_day": "2026-11-02", "detail": "", "usage_type": "x"}
    aws["table"].put_item(Item=poison)
    published = collector.publish(SpendLedger(aws["table"]), SpendMetrics(cloudwatch, "NeuronFleet/Cost"),
                                  fleet="nf-prod", basis="net_amortized", days=["2026-11-02"], stamp="t")
    assert published.datapoints == 0 and published.unpublishable == [
        "row DAY#2026-11-02/FLEET#nf-prod#USAGE#ec2#SVC#ec2#TYPE#trn2.48xlarge#UT#x: 1E+400"]
    inject(MONTH)
    summary, _ = run_collector(aws, metrics=SpendMetrics(cloudwatch, "NeuronFleet/Cost"))
    assert summary.retracted == 1 and summary.unpublishable == [] and cloudwatch.refused == 0
    assert spend_sum(aws, "2026-11-02", "nf-prod", "trainium") == 1072.83


def test_a_repeated_page_token_fails_the_run_loudly_writes_nothing_and_a_retry_completes(aws) -> None:
    """Before: the collector followed a repeating NextPageToken until the Lambda timed out, $0.01 a request."""
    from neuronfleet.lambdas.cost.logic.paging import PagingError

    looping = [page("2026-11-01", [group("USE2-BoxUsage:p5.48xlarge", "nf-prod", "100")], token="tok-2"),
               page("2026-11-02", [group("USE2-BoxUsage:p5.48xlarge", "nf-prod", "100")], token="tok-2")]
    inject(looping)
    recording = Recording(aws["ce"])
    with pytest.raises(PagingError, match=r"GetCostAndUsage: next-page token 'tok-2' repeated after page 2 "
                                          r"\(\$0\.02 at \$0\.01 a page\)"):
        run_collector(aws, recording)
    assert len(recording.calls) == 2 and recording.calls[1]["NextPageToken"] == "tok-2"
    assert rows_of(aws) == [] and not [i for i in aws["table"].scan()["Items"] if i["pk"] == "LOCK"]
    inject(MONTH)  # Cost Explorer answers properly again: the retry completes
    summary, _ = run_collector(aws)
    assert (summary.new, summary.ce_requests, summary.ce_pages) == (6, 4, 4)


def test_a_group_with_null_keys_or_no_amount_is_a_bad_row_the_run_completes_and_that_days_rows_stay(aws) -> None:
    """Before: ``Keys: null`` raised TypeError and ended the run, and a metric without its Amount read $0. A
    malformed answer for a day never retracts what the ledger knew of it. (moto's JSON drops a null ``Groups``: that
    case, and a null ``ResultsByTime``, are parsed in tests/unit/test_publisher_examples.py.)"""
    inject(MONTH)
    run_collector(aws)
    broken = json.loads(json.dumps(MONTH))
    del broken[1]["ResultsByTime"][0]["Groups"][0]["Metrics"]["NetAmortizedCost"]["Amount"]
    broken[2]["ResultsByTime"][0]["Groups"][0]["Keys"] = None
    inject(broken)
    summary, bad = run_collector(aws)
    assert [b.reason for b in bad] == [
        "Metrics.NetAmortizedCost.Amount: got nothing; allowed: a decimal number of USD",
        "Keys: got None; allowed: [usage type, 'neuronfleet:fleet$<fleet>'] (two strings)"]
    assert (summary.bad_rows, summary.retracted, summary.kept_rows, summary.unchanged) == (2, 0, 2, 4)
    assert spend_sum(aws, "2026-11-02", "nf-prod", "trainium") == 1072.83
    assert spend_sum(aws, "2026-11-03", "nf-prod", "trainium") == 536.41


class _Breaks(SpendLedger):
    """The spend ledger with one of its published-total steps failing ``n`` times."""

    def __init__(self, table: Any, step: str, n: int = 1) -> None:
        super().__init__(table)
        self.step, self.left = step, n

    def _fail(self, step: str) -> None:
        if step == self.step and self.left:
            self.left -= 1
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": step}},
                              "TransactWriteItems")

    def claim_published(self, *args: Any, **kwargs: Any) -> None:
        self._fail("claim")
        super().claim_published(*args, **kwargs)

    def confirm_published(self, *args: Any, **kwargs: Any) -> None:
        self._fail("confirm")
        super().confirm_published(*args, **kwargs)


def _run_on(aws: dict[str, Any], ledger: SpendLedger, **kwargs: Any) -> collector.RunSummary:
    ce = CostExplorer(aws["ce"], sleep=lambda s: None)
    return collector.collect(today=NOW.date(), lookback_days=3, instance_types=TYPES, ce=ce, ledger=ledger,
                             metrics=kwargs.pop("metrics", SpendMetrics(aws["cw"], "NeuronFleet/Cost")), now=NOW,
                             on_bad_row=lambda b: None, fleet="nf-prod", **kwargs)


def test_a_metric_published_whose_record_then_fails_is_not_sent_again(aws) -> None:
    """Before: the published total was written after PutMetricData; when that write failed, the next run sent the
    same deltas again and the dashboard's day doubled. Now the totals are claimed first: CloudWatch took the batch,
    the confirmation failed, the next run sends nothing and names the totals it cannot confirm."""
    inject(MONTH)
    with pytest.raises(ClientError, match="confirm"):
        _run_on(aws, _Breaks(aws["table"], "confirm"))
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1320.96
    summary = _run_on(aws, SpendLedger(aws["table"]))
    assert summary.metric_datapoints == 0 and len(summary.unconfirmed) == 6
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1320.96  # not 2,641.92


def test_a_claim_that_fails_publishes_nothing_and_the_next_run_publishes_once(aws) -> None:
    inject(MONTH)
    with pytest.raises(ClientError, match="claim"):
        _run_on(aws, _Breaks(aws["table"], "claim"))
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 0
    summary = _run_on(aws, SpendLedger(aws["table"]))
    assert (summary.metric_datapoints, summary.unconfirmed) == (6, [])
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1320.96
    summary = _run_on(aws, SpendLedger(aws["table"]))
    assert (summary.metric_datapoints, summary.unconfirmed) == (0, [])  # confirmed: nothing left to doubt


class _SentThenTimedOut(SpendMetrics):
    """PutMetricData that reaches CloudWatch, whose answer never arrives (the outcome unknown to the caller)."""

    def publish(self, deltas: Any) -> int:
        from botocore.exceptions import ReadTimeoutError

        super().publish(deltas)
        raise ReadTimeoutError(endpoint_url="https://monitoring.us-east-2.amazonaws.com/")


def test_a_publish_whose_outcome_is_unknown_is_never_sent_twice_and_is_named(aws) -> None:
    inject(MONTH)
    with pytest.raises(Exception, match="Read timeout"):
        _run_on(aws, SpendLedger(aws["table"]), metrics=_SentThenTimedOut(aws["cw"], "NeuronFleet/Cost"))
    summary = _run_on(aws, SpendLedger(aws["table"]))
    assert summary.metric_datapoints == 0 and spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1320.96
    assert "nf-prod/2026-11-01/gpu: 1320.96 claimed by " in summary.unconfirmed[0]


def test_a_refused_correction_is_released_to_the_total_cloudwatch_holds_and_sent_by_the_next_run(aws) -> None:
    inject(MONTH)
    run_collector(aws)
    inject(gpu_corrected_to("1100.00"))
    with pytest.raises(ClientError, match="down"):
        run_collector(aws, metrics=Failing(aws["cw"], 1))
    held = SpendLedger(aws["table"]).published("nf-prod", ["2026-11-01"])[("2026-11-01", "gpu")]
    assert (held.value, held.sending) == (Decimal("1320.96"), "")
    summary, _ = run_collector(aws)
    assert (summary.metric_datapoints, summary.unconfirmed) == (1, [])
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1100.0


def test_an_estimated_day_turning_final_with_the_same_amount_is_rewritten(aws) -> None:
    inject([page("2026-11-03", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "50", hours=2)], estimated=True)])
    run_collector(aws)
    inject([page("2026-11-03", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "50", hours=2)],
                 estimated="false")])  # a string, as a proxy might send it
    summary, bad = run_collector(aws)
    assert bad == [] and summary.replaced == 1 and [i["estimated"] for i in rows_of(aws)] == [False]
    inject([page("2026-11-03", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "50", hours=3)])])
    summary, _ = run_collector(aws)  # hours-only correction
    assert summary.replaced == 1 and [i["usage_hours"] for i in rows_of(aws)] == ["3"]
    assert spend_sum(aws, "2026-11-03", "nf-prod", "trainium") == 50.0


def test_a_block_bought_ahead_keeps_its_amortised_days_after_its_fee_day_leaves_the_window(aws) -> None:
    """Bought on 10-30 for 11-02 (fee dated the purchase day, matched there), the fee is spread over 11-02..11-03.
    A November run no longer asks for 10-30; the block's rows stay (retraction follows the fee's day)."""
    bought, start = datetime(2026, 10, 30, 9, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)

    def blocks() -> CapacityBlocks:
        tags = {"neuronfleet:fleet": "nf-prod"}
        return CapacityBlocks(_blocks_client([_block("cb-ahead", "cr-a", start, 2, bought, tags)],
                                             [_reservation("cr-a", "trn2.48xlarge", 2)]))

    october = datetime(2026, 10, 31, 6, tzinfo=UTC)
    inject([page("2026-10-30", [group("USE2-CapacityBlockFee:trn2.48xlarge", "", "2000.00", hours=0)])])
    summary, _ = run_collector(aws, blocks=blocks(), now=october)
    assert (summary.capacity_blocks, summary.unmatched_fees) == (1, 0)
    fees = sorted((i["day"], i["amount"], i["source_day"]) for i in rows_of(aws))
    assert fees == [("2026-11-02", "1000.000000", "2026-10-30"), ("2026-11-03", "1000.000000", "2026-10-30")]
    inject(MONTH)
    summary, _ = run_collector(aws, blocks=blocks())  # November: 10-30 is not asked any more
    assert summary.retracted == 0
    assert sorted(i["day"] for i in rows_of(aws) if i["usage"] == "capacity-block") == ["2026-11-02", "2026-11-03"]
    assert spend_sum(aws, "2026-11-02", "nf-prod", "trainium") == round(1072.83 + 1000, 2)


def _seed_invocations(aws: dict[str, Any], endpoint: str, neuron: float, gpu: float) -> None:
    ts = datetime(2026, 11, 2, 12, tzinfo=UTC)
    for variant, value in (("neuron", neuron), ("gpu", gpu)):
        aws["cw"].put_metric_data(Namespace="AWS/SageMaker", MetricData=[{
            "MetricName": "Invocations", "Value": value, "Timestamp": ts,
            "Dimensions": [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": variant}]}])


PRICES = {t: {"usd_per_hour": p, "source": "https://aws.amazon.com/ec2/pricing/on-demand/", "as_of": "2025-10-01"}
          for t, p in {"p5.48xlarge": "55.04", "trn2.48xlarge": "44.7013", "inf2.xlarge": "0.7582"}.items()}


def test_weekly_report_joins_spend_and_work_to_s3_and_sns(aws) -> None:
    inject(MONTH)
    run_collector(aws)
    _seed_invocations(aws, "chat", neuron=2_000_000, gpu=1_000_000)
    aws["cw"].put_metric_data(Namespace="NeuronFleet/Workload", MetricData=[{
        "MetricName": "Tokens", "Value": 5e8, "Timestamp": datetime(2026, 11, 2, 12, tzinfo=UTC),
        "Dimensions": [{"Name": "Fleet", "Value": "nf-prod"}, {"Name": "Endpoint", "Value": "chat"},
                       {"Name": "Variant", "Value": "neuron"}]}])
    chat = EndpointModel(endpoint="chat", neuron_types=("ml.inf2.xlarge",), gpu_type="ml.p5.48xlarge",
                         gpu_role="baseline")
    out = report.run(today=TODAY, fleet="nf-prod", period_days=3, prices=PRICES,
                     ledger=SpendLedger(aws["table"]), usage=Work(aws["cw"], "NeuronFleet/Workload"),
                     s3=aws["s3"], bucket="reports", sns=aws["sns"], topic_arn=aws["topic"],
                     endpoints=Discovered(models=(chat,)))
    assert out["spend_usd"]["by_family"] == {"trainium": "2682.07", "inferentia": "47.54", "gpu": "1320.96"}
    (model,) = out["unit_economics"]["models"]
    econ = model["units"]["inferences"]
    # chat's Neuron variant: $47.54 / 2M = $23.77 per million; its GPU baseline: $1320.96 / 1M
    assert (econ["neuron_usd_per_million"], econ["gpu_usd_per_million"]) == ("23.77", "1320.96")
    assert econ["comparison"] == {"gpu_baseline_usd": "2641.92", "savings_usd": "2594.38", "savings_percent": "98.20",
                                  "why_none": None}
    # $47.54 / 500M tokens: $0.09508 per million, shown, not rounded to 0.10
    assert model["units"]["tokens"]["neuron_usd_per_million"] == "0.09508"
    assert out["period"]["recorded_days"] == 3
    # the GPU baseline's $1320.96 a day is work that could move: over the guide's $10,000 a month (quoted), no figure
    assert out["verdict"][0] == ("Inference: the GPU inference work that could move is over $10,000 a month (a monthly "
                                 "rate from 3 of 3 recorded days), where the migration guide (quoted) says migrating "
                                 "inference pays.")
    # the dashboard's unit costs are the report's: published from the same quantities, at full precision
    got = aws["cw"].get_metric_statistics(
        Namespace="NeuronFleet/Economics", MetricName="CostPerMillionInferences", Statistics=["Average"],
        Dimensions=[{"Name": "Fleet", "Value": "nf-prod"}, {"Name": "Endpoint", "Value": "chat"},
                    {"Name": "Variant", "Value": "gpu"}], StartTime=NOW - timedelta(days=2), EndTime=NOW, Period=86400)
    assert [p["Average"] for p in got["Datapoints"]] == [1320.96]
    keys = sorted(o["Key"] for o in aws["s3"].list_objects_v2(Bucket="reports")["Contents"])
    assert keys == ["reports/nf-prod/2026-11-04/report.html", "reports/nf-prod/2026-11-04/report.json"]
    page_html = aws["s3"].get_object(Bucket="reports", Key=keys[0])["Body"].read().decode()
    assert "<h1>Migration report: nf-prod</h1>" in page_html and "1320.96" in page_html
    (note,) = messages(aws)
    assert ("Cost per million, per model: chat: Neuron $23.77/M inferences recorded (the fleet's spend over its "
            "Invocations metric), GPU $1320.96/M, saves $2594.38 (98.20%) "
            "against the GPU baseline") in note["Message"]
    assert "s3://reports/reports/nf-prod/2026-11-04/report.html" in note["Message"]


def test_the_report_takes_live_prices_caches_them_in_the_ledger_and_notes_its_prices_once(aws) -> None:
    """Price List answers stubbed with botocore's Stubber (moto has no pricing service), the cache on moto's
    DynamoDB: overrides > live > catalog, one line on stale/unsourced prices, one on what the API did not answer."""
    from neuronfleet.lambdas.cost.adapters.pricelist import PriceCache, PriceListApi
    from neuronfleet.lambdas.cost.logic.pricelist import LivePrices, filters
    from tests.unit.test_price_list import derived

    inject(MONTH)
    run_collector(aws)
    prices = {**PRICES, "ml.p5.48xlarge": {"usd_per_hour": "100", "source": "our EDP", "as_of": "2026-10-01",
                                           "override": "true"}}
    accelerators = {"trn2.48xlarge": ("trainium", 1536), "inf2.xlarge": ("inferentia", 32),
                    "p5.48xlarge": ("gpu", 640)}
    pricing = boto3.client("pricing", region_name="us-east-1")

    def expect(stub: Stubber, instance_type: str, *texts: str) -> None:
        service = "AmazonSageMaker" if instance_type.startswith("ml.") else "AmazonEC2"
        stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": list(texts)},
                          {"ServiceCode": service, "Filters": filters(instance_type, REGION),
                           "FormatVersion": "aws_v1", "MaxResults": 100})

    trn2 = [derived(sku=f"SKU{i}", attributes={"instanceType": "trn2.48xlarge"}, prices={"USD": usd})
            for i, usd in ((1, "44.7013"), (2, "46.00"))]
    chat = EndpointModel(endpoint="chat", neuron_types=("ml.inf2.xlarge",), gpu_type="ml.p5.48xlarge",
                         gpu_role="baseline")

    def run(live: LivePrices) -> dict[str, Any]:
        return report.run(today=TODAY, fleet="nf-prod", period_days=3, prices=prices,
                          ledger=SpendLedger(aws["table"]), usage=Work(aws["cw"], "NeuronFleet/Workload"),
                          s3=aws["s3"], bucket="reports", sns=aws["sns"], topic_arn=aws["topic"],
                          endpoints=Discovered(models=(chat,)), accelerators=accelerators, live=live, now=NOW)

    with Stubber(pricing) as stub:  # asked in order: the types of nf-prod's rows and the Neuron candidates
        expect(stub, "inf2.xlarge", derived(attributes={"instanceType": "inf2.xlarge"}, prices={"USD": "0.76"}))
        expect(stub, "ml.inf2.xlarge", derived(attributes={"instanceName": "ml.inf2.xlarge"}, prices={"USD": "0.99"}))
        expect(stub, "ml.trn2.48xlarge")
        expect(stub, "trn2.48xlarge", *trn2)
        out = run(LivePrices(api=PriceListApi(pricing), region=REGION, cache=PriceCache(aws["table"])))
        stub.assert_no_pending_responses()
    assert out["price_origins"] == {"inf2.xlarge": "live", "ml.inf2.xlarge": "live", "ml.p5.48xlarge": "override",
                                    "trn2.48xlarge": "catalog"}
    assert out["price_list"]["requests"] == 4 and out["price_list"]["cached"] == []
    stale, live_line = out["price_notes"]
    assert stale.startswith("1 of 4 prices need a look: 1 stale (read over 180 days ago, the oldest on 2025-10-01): "
                            "catalog: trn2.48xlarge. The 4 prices came from: live 2, catalog 1, override 1.")
    assert live_line == (
        "Price List API: no live price for 2 of 4 types (the catalog's or an override used): ml.trn2.48xlarge: no "
        "product in the Price List for ml.trn2.48xlarge in us-east-2 (AmazonSageMaker); trn2.48xlarge: ambiguous: 2 "
        "products for trn2.48xlarge in us-east-2 with different prices (SKU SKU1 44.7013 USD/h, SKU SKU2 46.00 USD/h); "
        "none used: override it (prices: in the fleet file)")
    held = {i["sk"]: i for i in aws["table"].scan()["Items"] if i["pk"] == f"PRICE#{REGION}"}
    assert {t: i["usd_per_hour"] for t, i in held.items()} == {"inf2.xlarge": "0.76", "ml.inf2.xlarge": "0.99"}
    assert held["inf2.xlarge"]["read_at"] == NOW.isoformat()
    (note,) = messages(aws)
    assert note["Message"].count("Price note: ") == 2  # not one per type
    # the next run (another container, within the week) reads the ledger's prices; it asks again what had none
    with Stubber(pricing) as stub:
        expect(stub, "ml.trn2.48xlarge")
        expect(stub, "trn2.48xlarge", trn2[0])
        again = run(LivePrices(api=PriceListApi(pricing), region=REGION, cache=PriceCache(aws["table"])))
        stub.assert_no_pending_responses()
    assert again["price_list"]["cached"] == ["inf2.xlarge", "ml.inf2.xlarge"] and again["price_list"]["requests"] == 2
    assert again["price_origins"]["trn2.48xlarge"] == "live"
    (line,) = [n for n in again["price_notes"] if n.startswith("Price List API")]
    assert line.startswith("Price List API: no live price for 1 of 4 types")


def _utilisation(aws: dict[str, Any], instance: str, values: list[float], end: datetime) -> None:
    """Hourly NeuronCore utilisation, the last value in the hour before ``end``."""
    for back, value in enumerate(reversed(values)):
        aws["cw"].put_metric_data(Namespace="NeuronFleet/Neuron", MetricData=[{
            "MetricName": "NeuronCoreUtilization", "Value": value, "Timestamp": end - timedelta(minutes=30 + 60 * back),
            "Unit": "Percent", "Dimensions": [{"Name": "InstanceId", "Value": instance}]}])


class _Ec2:
    """moto's EC2 for instances; capacity reservations (moto has none) from a botocore Stubber on the real model."""

    def __init__(self, reservations: list[dict[str, Any]]) -> None:
        self.moto = boto3.client("ec2", region_name=REGION)
        self.stubbed = boto3.client("ec2", region_name=REGION)
        self.stubber = Stubber(self.stubbed)
        self.reservations = reservations

    def get_paginator(self, operation: str) -> Any:
        if operation == "describe_capacity_reservations":
            self.stubber.add_response("describe_capacity_reservations",
                                      {"CapacityReservations": self.reservations})
            self.stubber.activate()
            return self.stubbed.get_paginator(operation)
        return self.moto.get_paginator(operation)


class _SageMaker:
    """DescribeEndpoint answers as SageMaker gives them (moto drops CurrentWeight 0: it copies only truthy weights)."""

    exceptions = boto3.client("sagemaker", region_name=REGION).exceptions

    def __init__(self, endpoints: dict[str, list[dict[str, Any]]]) -> None:
        self.endpoints = endpoints

    def describe_endpoint(self, EndpointName: str) -> dict[str, Any]:
        return {"EndpointName": EndpointName, "ProductionVariants": self.endpoints[EndpointName]}


class _Tagging:
    """GetResources on the real service model (botocore Stubber): the fleet's endpoints as tagged with it."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def get_paginator(self, operation: str) -> Any:
        client = boto3.client("resourcegroupstaggingapi", region_name=REGION)  # one answer per run
        stubber = Stubber(client)
        stubber.add_response("get_resources", {"ResourceTagMappingList": [{
            "ResourceARN": f"arn:aws:sagemaker:{REGION}:123456789012:endpoint/{n}",
            "Tags": [{"Key": "neuronfleet:fleet", "Value": "nf-prod"}]} for n in self.names]})
        stubber.activate()
        return client.get_paginator(operation)


def _instance(fleet: str, instance_type: str = "trn1.32xlarge") -> str:
    ec2 = boto3.client("ec2", region_name=REGION)
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    (i,) = ec2.run_instances(ImageId=image, InstanceType=instance_type, MinCount=1, MaxCount=1, TagSpecifications=[
        {"ResourceType": "instance", "Tags": [{"Key": "neuronfleet:fleet", "Value": fleet}]}])["Instances"]
    return str(i["InstanceId"])


def _detector(aws: dict[str, Any], reservations: list[dict[str, Any]] | None = None,
              endpoints: dict[str, list[dict[str, Any]]] | None = None) -> tuple[FleetInventory, Ledger]:
    ddb = boto3.client("dynamodb", region_name=REGION)
    inventory = FleetInventory(ec2=_Ec2(reservations or []), sagemaker=_SageMaker(endpoints or {}),
                               cloudwatch=aws["cw"], tagging=_Tagging(sorted(endpoints or {})), fleet="nf-prod",
                               namespace="NeuronFleet/Neuron",
                               metric="NeuronCoreUtilization")
    return inventory, Ledger(ddb, announcements_table(ddb))


def test_idle_instances_of_the_fleet_are_announced_when_they_go_idle_and_when_they_stop_not_hourly(aws) -> None:
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=7)  # instances up 7 h
    idle, busy, other = _instance("nf-prod"), _instance("nf-prod"), _instance("nf-other")
    _utilisation(aws, idle, [5.0] * 6, now)
    _utilisation(aws, busy, [85.0] * 6, now)
    _utilisation(aws, other, [5.0] * 6, now)  # another fleet's idle instance: not this detector's to announce
    inventory, ledger = _detector(aws)

    def check(at: datetime) -> list[str]:
        return waste.run(now=at, inventory=inventory, topic=Topic(aws["sns"], aws["topic"]), ledger=ledger,
                         threshold=20, hours=6)

    assert check(now) == ["neuronfleet: 1 Neuron instance(s) went idle"]
    (note,) = messages(aws)
    assert f"- {idle}: 5.0% average NeuronCore utilisation" in note["Message"]
    assert busy not in note["Message"] and other not in note["Message"]
    assert check(now) == [] and check(now + timedelta(minutes=5)) == []  # a rerun, an overlapping run: silence
    _utilisation(aws, idle, [5.0] * 6, now + timedelta(hours=1))     # still idle an hour later: silence
    assert check(now + timedelta(hours=1)) == []
    _utilisation(aws, idle, [90.0], now + timedelta(hours=2))         # busy again: said once
    assert check(now + timedelta(hours=2)) == ["neuronfleet: 1 Neuron instance(s) no longer idle"]
    assert check(now + timedelta(hours=2)) == []
    assert [m["Subject"] for m in messages(aws)] == ["neuronfleet: 1 Neuron instance(s) no longer idle"]


def test_a_running_instance_with_no_datapoints_is_its_own_signal_never_silence(aws) -> None:
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=7)
    silent = _instance("nf-prod")
    inventory, ledger = _detector(aws)
    sent = waste.run(now=now, inventory=inventory, topic=Topic(aws["sns"], aws["topic"]), ledger=ledger,
                     threshold=20, hours=6)
    assert sent == ["neuronfleet nf-prod: 1 Neuron instance(s) publish no utilisation"]
    (note,) = messages(aws)
    assert f"- {silent}: trn1.32xlarge, running since" in note["Message"]
    assert "no NeuronCore utilisation datapoint in the last 6 hours" in note["Message"]
    # a freshly launched instance (under the window) is not yet judged silent
    _instance("nf-prod")
    assert waste.run(now=now - timedelta(hours=6, minutes=30), inventory=inventory,
                     topic=Topic(aws["sns"], aws["topic"]), ledger=ledger, threshold=20, hours=6) == [
        "neuronfleet nf-prod: 1 Neuron instance(s) publishing utilisation again or stopped"]


def test_a_dra_node_with_no_datapoints_is_said_once_to_be_not_measured_never_silent(aws) -> None:
    """An EKS node of a DRA node group (its launch template's ``neuronfleet:neuron-devices`` tag says ``dra``) runs no
    utilisation publisher, on purpose (Neuron Monitor does not support the DRA driver): one "not measured" line, once;
    a device-plugin node with no datapoints is still silent."""
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=7)
    ec2 = boto3.client("ec2", region_name=REGION)
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    ids = {}
    for devices in ("dra", "device-plugin"):
        (i,) = ec2.run_instances(ImageId=image, InstanceType="trn2.48xlarge", MinCount=1, MaxCount=1,
                                 TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                     {"Key": "neuronfleet:fleet", "Value": "nf-prod"},
                                     {"Key": "neuronfleet:neuron-devices", "Value": devices}]}])["Instances"]
        ids[devices] = i["InstanceId"]
    inventory, ledger = _detector(aws)

    def check() -> list[str]:
        return waste.run(now=now, inventory=inventory, topic=Topic(aws["sns"], aws["topic"]), ledger=ledger,
                         threshold=20, hours=6)

    assert sorted(check()) == ["neuronfleet nf-prod: 1 Neuron instance(s) publish no utilisation",
                               "neuronfleet nf-prod: 1 Neuron instance(s) whose utilisation is not measured "
                               "(Neuron DRA driver)"]
    assert check() == []  # a rerun: silence
    notes = {m["Subject"]: m["Message"] for m in messages(aws)}
    (silent,) = [m for s, m in notes.items() if "publish no utilisation" in s]
    (unmeasured,) = [m for s, m in notes.items() if "not measured" in s]
    assert ids["device-plugin"] in silent and ids["dra"] not in silent
    assert unmeasured.count(ids["dra"]) == 1 and ids["device-plugin"] not in unmeasured
    assert "Neuron's DRA driver, which Neuron Monitor does not support" in unmeasured
    assert [i.instance_id for i in inventory.running_neuron_instances()].count(ids["dra"]) == 1  # never dropped


def test_an_instance_meant_for_a_capacity_block_that_runs_outside_it_is_announced_once(aws) -> None:
    """moto launches every instance On-Demand (no CapacityReservationId), as Batch would if it ignored the launch
    template's market options: the instance tagged for a Capacity Block is announced, once; the untagged one is not."""
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    ec2 = boto3.client("ec2", region_name=REGION)
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    (off,) = ec2.run_instances(ImageId=image, InstanceType="trn2.48xlarge", MinCount=1, MaxCount=1,
                               TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                   {"Key": "neuronfleet:fleet", "Value": "nf-prod"},
                                   {"Key": "neuronfleet:capacity", "Value": "capacity-block"}]}])["Instances"]
    plain = _instance("nf-prod")
    inventory, ledger = _detector(aws)

    def check() -> list[str]:
        return waste.run(now=now, inventory=inventory, topic=Topic(aws["sns"], aws["topic"]), ledger=ledger,
                         threshold=20, hours=6)

    assert check() == ["neuronfleet nf-prod: 1 instance(s) running outside their reservation"]
    assert check() == []  # a rerun: silence
    (note,) = messages(aws)
    assert f"- {off['InstanceId']}: trn2.48xlarge targets capacity-block" in note["Message"]
    assert plain not in note["Message"]


def test_free_reservation_slots_idle_endpoints_and_the_gpu_standby_are_waste_where_the_money_goes(aws) -> None:
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    end = now + timedelta(days=3)
    reservations = [
        {"CapacityReservationId": "cr-0block", "InstanceType": "trn2.48xlarge", "TotalInstanceCount": 4,
         "AvailableInstanceCount": 2, "State": "active", "ReservationType": "capacity-block", "EndDate": end},
        {"CapacityReservationId": "cr-0full", "InstanceType": "trn2.48xlarge", "TotalInstanceCount": 4,
         "AvailableInstanceCount": 0, "State": "active", "ReservationType": "default"}]
    endpoints = {"chat": [{"VariantName": "neuron", "CurrentInstanceCount": 2, "CurrentWeight": 1.0},
                          {"VariantName": "gpu", "CurrentInstanceCount": 1, "CurrentWeight": 0.0}],
                 "embed": [{"VariantName": "neuron", "CurrentInstanceCount": 2, "CurrentWeight": 1.0}]}
    aws["cw"].put_metric_data(Namespace="AWS/SageMaker", MetricData=[{
        "MetricName": "Invocations", "Value": 5000, "Timestamp": now - timedelta(hours=1),
        "Dimensions": [{"Name": "EndpointName", "Value": "chat"}, {"Name": "VariantName", "Value": "neuron"}]}])
    inventory, ledger = _detector(aws, reservations, endpoints)
    sent = waste.run(now=now, inventory=inventory, topic=Topic(aws["sns"], aws["topic"]), ledger=ledger,
                     threshold=20, hours=6)
    assert sent == ["neuronfleet nf-prod: 1 reservation(s) with free slots",
                    "neuronfleet nf-prod: 1 endpoint variant(s) idle", "neuronfleet nf-prod: 1 GPU standby(s) running"]
    text = "\n".join(m["Message"] for m in messages(aws))
    assert f"- cr-0block: 2 of 4 trn2.48xlarge slots free (capacity-block, paid upfront, ends {end.isoformat()})" in text
    assert "cr-0full" not in text
    assert "- embed/neuron: 2 instance(s), no invocation in the last 6 hours" in text
    assert "- chat/gpu: 1 instance(s) at weight 0: the failover's standby, idle by design" in text
    assert "chat/neuron" not in text


def test_an_idle_announcement_that_fails_to_publish_is_made_by_the_retry(aws) -> None:
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=7)
    _utilisation(aws, _instance("nf-prod"), [5.0] * 6, now)
    inventory, ledger = _detector(aws)
    with pytest.raises(Unfinished, match=r"publishing 'neuronfleet: 1 Neuron instance\(s\) went idle'.*NotFound"):
        waste.run(now=now, inventory=inventory, topic=Topic(aws["sns"], aws["topic"] + "-gone"), ledger=ledger,
                  threshold=20, hours=6)
    assert waste.run(now=now, inventory=inventory, topic=Topic(aws["sns"], aws["topic"]), ledger=ledger, threshold=20,
                     hours=6) == ["neuronfleet: 1 Neuron instance(s) went idle"]  # the recorded message, completed
    assert len(messages(aws)) == 1


def test_a_waste_run_whose_later_claim_is_throttled_announces_the_rest_and_the_retry_only_the_missing_one(
        aws) -> None:
    """Two kinds start (an idle and a silent instance); DynamoDB throttles the second kind's transaction (after
    botocore's retries). The run announces the first, raises; the retry announces the second; each once."""
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=7)
    _utilisation(aws, _instance("nf-prod"), [5.0] * 6, now)
    _instance("nf-prod")  # no datapoints: silent
    inventory, ledger = _detector(aws)
    throttled = Faulty(ledger.client, {("transact_write_items", 2): Fault(client_error(
        "ProvisionedThroughputExceededException", "TransactWriteItems", client=ledger.client))})
    topic = Topic(aws["sns"], aws["topic"])
    with pytest.raises(Unfinished, match="recording start of silent-instance"):
        waste.run(now=now, inventory=inventory, topic=topic, ledger=Ledger(throttled, ledger.table), threshold=20,
                  hours=6)
    first = [m["Subject"] for m in messages(aws)]
    assert first == ["neuronfleet: 1 Neuron instance(s) went idle"]
    assert ledger.open_subjects("silent-instance") == []  # nothing half-recorded
    retry = waste.run(now=now, inventory=inventory, topic=topic, ledger=ledger, threshold=20, hours=6)
    assert retry == ["neuronfleet nf-prod: 1 Neuron instance(s) publish no utilisation"]
    assert waste.run(now=now, inventory=inventory, topic=topic, ledger=ledger, threshold=20, hours=6) == []


def test_the_collector_reads_the_cur_through_athena_and_writes_the_same_rows(aws) -> None:
    """moto's Athena answers the two queries (usage, then adjustments) with result sets shaped as Athena returns
    them (a header row, then text values); the ledger rows and the metric are what Cost Explorer would give."""
    athena = boto3.client("athena", region_name=REGION)
    athena.create_work_group(Name="nf-cur2-wg", Configuration={"ResultConfiguration": {
        "OutputLocation": "s3://reports/results/"}})

    def result(header: list[str], rows: list[list[str]]) -> dict[str, Any]:
        return {"rows": [{"Data": [{"VarCharValue": v} for v in r]} for r in [header, *rows]],
                "column_info": [{"Name": h, "Type": "varchar"} for h in header]}

    cols = ["day", "usage_type", "fleet", "net_amortized_cost", "unblended_cost", "usage_quantity"]
    adj = ["day", "record_type", "fleet", "net_amortized_cost", "unblended_cost", "usage_quantity"]
    resp = requests.post("http://motoapi.amazonaws.com/moto-api/static/athena/query-results", json={
        "region": REGION, "results": [
            result(cols, [["2026-11-01", "USE2-BoxUsage:trn2.48xlarge", "nf-prod", "650.0", "0.0", "24.0"],
                          ["2026-11-01", "USE2-Host:ml.inf2.xlarge", "nf-other", "27.0", "30.0", "24.0"]]),
            result(adj, [["2026-11-01", "Credit", "nf-prod", "-300.0", "-300.0", "0"]])]}, timeout=5)
    assert resp.status_code == 201
    source = AthenaSpend(athena, workgroup="nf-cur2-wg", table="cur_db.cur2", sleep=lambda s: None)
    summary = collector.collect(today=TODAY, lookback_days=3, instance_types=TYPES, ce=source,  # type: ignore[arg-type]
                                ledger=SpendLedger(aws["table"]), metrics=SpendMetrics(aws["cw"], "NeuronFleet/Cost"),
                                now=NOW, on_bad_row=lambda b: None, fleet="nf-prod")
    assert (summary.ce_requests, summary.new, summary.other_fleets_rows) == (2, 2, 1)
    rows = {i["usage"]: i for i in rows_of(aws)}
    assert (rows["ec2"]["amount"], rows["ec2"]["unblended"], rows["credit"]["amount"]) == ("650.0", "0.0", "-300.0")
    assert spend_sum(aws, "2026-11-01", "nf-prod", "trainium") == 650.0
    (execution,) = [e for e in athena.list_query_executions(WorkGroup="nf-cur2-wg")["QueryExecutionIds"]][:1]
    sql = athena.get_query_execution(QueryExecutionId=execution)["QueryExecution"]["Query"]
    assert "FROM cur_db.cur2" in sql and "DATE '2026-11-01'" in sql


# --- the fleet's endpoints, found by their tag when the functions run ------------------------------------------------


@pytest.fixture
def fleets(aws) -> Iterator[dict[str, Any]]:
    """Endpoints of two fleets in moto, tagged as tag_fleet tags them: nf-prod's chat (Neuron and a weighted GPU
    variant: a baseline), embed (Neuron only) and stale (its configuration deleted since), nf-other's chat."""
    with sagemaker_instance_types_from_botocore():
        sm = boto3.client("sagemaker", region_name=REGION)
        sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/sagemaker",
                        PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-2.amazonaws.com/serve:1"})
        for name, fleet, gpu in (("nf-prod-chat", "nf-prod", True), ("nf-prod-embed", "nf-prod", False),
                                 ("nf-prod-stale", "nf-prod", False), ("nf-other-chat", "nf-other", True)):
            _endpoint(sm, name, fleet, gpu=gpu)
        sm.delete_endpoint_config(EndpointConfigName="nf-prod-stale-config")
        yield {**aws, "sagemaker": sm, "tagging": boto3.client("resourcegroupstaggingapi", region_name=REGION)}


def _endpoint(sm: Any, name: str, fleet: str, *, gpu: bool = False, config: str | None = None) -> None:
    if config is None:
        config = f"{name}-config"
        variants = [{"VariantName": "neuron", "ModelName": "m", "InstanceType": "ml.inf2.xlarge",
                     "InitialInstanceCount": 1, "InitialVariantWeight": 1.0}]
        if gpu:
            variants.append({"VariantName": "gpu", "ModelName": "m", "InstanceType": "ml.p5.48xlarge",
                             "InitialInstanceCount": 1, "InitialVariantWeight": 1.0})
        sm.create_endpoint_config(EndpointConfigName=config, ProductionVariants=variants)
    sm.create_endpoint(EndpointName=name, EndpointConfigName=config,
                       Tags=[{"Key": "neuronfleet:fleet", "Value": fleet}, {"Key": "team", "Value": "ml"}])


@pytest.fixture
def report_env(fleets, monkeypatch) -> Iterator[dict[str, Any]]:
    """The report function's environment as CostMonitors writes it (no endpoint in it), its container fresh."""
    from neuronfleet.facts.catalog import CATALOG, accelerators_of
    from neuronfleet_contract.cost import ReportConfig

    env = ReportConfig(fleet="nf-prod", ledger_table="ledger", report_bucket="reports", topic_arn=fleets["topic"],
                       prices=PRICES, period_days=3, accelerators=accelerators_of(CATALOG)).to_environment()
    assert "ENDPOINTS" not in env and "MODELS" not in env
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    report.container.cache_clear()
    yield fleets
    report.container.cache_clear()


def test_the_report_handler_models_the_endpoints_tagged_with_its_fleet_and_only_those(report_env, caplog) -> None:
    aws = report_env
    for name in ("nf-prod-chat", "nf-other-chat"):
        _seed_invocations(aws, name, neuron=1000, gpu=10)
    context = SimpleNamespace(function_name="nf-prod-report", memory_limit_in_mb=512, aws_request_id="r-1",
                              invoked_function_arn=f"arn:aws:lambda:{REGION}:123456789012:function:nf-prod-report")
    published = report.handler({"version": "0", "id": "1", "detail-type": "Scheduled Event", "source": "aws.events",
                                "account": "123456789012", "time": "2026-11-02T07:00:00Z", "region": REGION,
                                "resources": [], "detail": {}}, context)
    key = published["json"].split("/", 3)[3]
    got = json.loads(aws["s3"].get_object(Bucket="reports", Key=key)["Body"].read())
    models = {m["endpoint"]: m for m in got["unit_economics"]["models"]}
    assert sorted(models) == ["nf-prod-chat", "nf-prod-embed"]  # nf-other's chat is not this fleet's
    assert (models["nf-prod-chat"]["gpu_type"], models["nf-prod-chat"]["gpu_role"]) == ("ml.p5.48xlarge", "baseline")
    assert (models["nf-prod-embed"]["neuron_types"], models["nf-prod-embed"]["gpu_role"]) == (["ml.inf2.xlarge"], "none")
    assert got["endpoints"]["modelled"] == ["nf-prod-chat", "nf-prod-embed"]
    (reason,) = got["endpoints"]["skipped"].values()
    assert list(got["endpoints"]["skipped"]) == ["nf-prod-stale"]
    assert reason.startswith("not described (deleted since it was listed?): Could not find endpoint configuration")
    (skip,) = [r for r in caplog.records if r.getMessage() == "endpoint skipped"]  # logged, not a crash
    assert (skip.levelname, getattr(skip, "endpoint", None), getattr(skip, "reason", None)) == (
        "WARNING", "nf-prod-stale", reason)
    assert "Endpoint not in the report: nf-prod-stale" in messages(aws)[0]["Message"]
    # moto has no pricing service (it answers 404 "Not yet implemented"): the report is published with the catalog's
    # prices, says so once, and asks no further type after the first failure
    assert got["price_list"]["requests"] == 1
    assert set(got["price_list"]["not_live"].values()) == {
        "the API failed (404: Not yet implemented); no further type asked this run"}
    assert [n for n in got["price_notes"] if n.startswith("Price List API")] == [got["price_notes"][-1]]


def test_the_waste_detector_judges_the_endpoints_tagged_with_its_fleet_and_only_those(fleets) -> None:
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    ddb = boto3.client("dynamodb", region_name=REGION)
    inventory = FleetInventory(ec2=_Ec2([]), sagemaker=fleets["sagemaker"], cloudwatch=fleets["cw"],
                               tagging=fleets["tagging"], fleet="nf-prod", namespace="NeuronFleet/Neuron",
                               metric="NeuronCoreUtilization")
    sent = waste.run(now=now, inventory=inventory, topic=Topic(fleets["sns"], fleets["topic"]),
                     ledger=Ledger(ddb, announcements_table(ddb)), threshold=20, hours=6)
    assert sent == ["neuronfleet nf-prod: 4 endpoint variant(s) idle"]
    (note,) = messages(fleets)
    idle = sorted(line.split(":")[0] for line in note["Message"].splitlines() if line.startswith("- "))
    # the stale endpoint still runs (only its configuration is gone): its instances are waste too
    assert idle == ["- nf-prod-chat/gpu", "- nf-prod-chat/neuron", "- nf-prod-embed/neuron", "- nf-prod-stale/neuron"]
    assert "nf-other" not in note["Message"]


def test_every_page_of_tagged_endpoints_is_read(aws) -> None:
    """moto answers GetResources 50 resources a page (its default ResourcesPerPage, as AWS's maximum is 100)."""
    with sagemaker_instance_types_from_botocore():
        sm = boto3.client("sagemaker", region_name=REGION)
        sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/sagemaker",
                        PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-2.amazonaws.com/serve:1"})
        _endpoint(sm, "nf-prod-000", "nf-prod")
        for i in range(1, 120):
            _endpoint(sm, f"nf-prod-{i:03d}" if i % 10 else f"nf-other-{i:03d}", "nf-prod" if i % 10 else "nf-other",
                      config="nf-prod-000-config")
        tagging = boto3.client("resourcegroupstaggingapi", region_name=REGION)
        pages = list(tagging.get_paginator("get_resources").paginate(ResourceTypeFilters=["sagemaker:endpoint"]))
        assert len(pages) >= 3  # the listing really is paged
        found = FleetEndpoints(tagging=tagging, sagemaker=sm, fleet="nf-prod")
        names = found.names()
        assert names == [f"nf-prod-{i:03d}" for i in range(120) if i % 10 or i == 0]  # 109, over 3 pages
        assert FleetEndpoints(tagging=tagging, sagemaker=sm, fleet="nf-other").names() == [
            f"nf-other-{i:03d}" for i in range(10, 120, 10)]


def test_each_endpoints_model_carries_its_creation_time_from_describe_endpoint(aws) -> None:
    """The scale-to-zero comparison starts at the endpoint's creation: FleetEndpoints reads DescribeEndpoint's
    CreationTime (moto answers one) into the model, in UTC."""
    with sagemaker_instance_types_from_botocore():
        sm = boto3.client("sagemaker", region_name=REGION)
        sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/sagemaker",
                        PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-2.amazonaws.com/serve:1"})
        _endpoint(sm, "nf-prod-summarise", "nf-prod")
        when = sm.describe_endpoint(EndpointName="nf-prod-summarise")["CreationTime"]
        found = FleetEndpoints(tagging=boto3.client("resourcegroupstaggingapi", region_name=REGION), sagemaker=sm,
                               fleet="nf-prod").models({"inf2.xlarge": ("inferentia", 32)})
    (model,) = found.models
    assert model.created == when.astimezone(UTC).isoformat() and model.created.endswith("+00:00")


def test_a_day_cost_explorer_answered_with_no_spend_is_a_recorded_day(aws) -> None:
    """Cost Explorer answers a period for each day asked, its Groups empty on a day with no spend (an asynchronous
    endpoint at zero instances): the collector marks the three days answered in the ledger, once each however often it
    asks, and the report counts 3 recorded days, not the 2 with rows (before: 2, and every monthly rate x 1.5)."""
    answer = [page("2026-11-01", [group("USE2-AsyncInf:ml.inf2.xlarge", "nf-prod", "2.97", 3)], token="p2"),
              page("2026-11-02", [], token="p3"),
              page("2026-11-03", [group("USE2-AsyncInf:ml.inf2.xlarge", "nf-prod", "2.97", 3)])]
    for _ in range(2):
        inject(answer)
        summary, bad = run_collector(aws)
        assert (bad, summary.answered_days, summary.rows) == ([], 3, 2)
    ledger = SpendLedger(aws["table"])
    assert ledger.queried(DAYS) == set(DAYS) and ledger.queried(["2026-10-31"]) == set()
    assert sorted(i["sk"] for i in aws["table"].scan()["Items"] if i["pk"] == "QUERIED") == DAYS
    summarise = EndpointModel(endpoint="summarise", neuron_types=("ml.inf2.xlarge",),
                              created="2026-10-01T00:00:00+00:00")  # before the period: all 3 days compared
    out = report.run(today=TODAY, fleet="nf-prod", period_days=3, prices=PRICES, ledger=ledger,
                     usage=Work(aws["cw"], "NeuronFleet/Workload"), s3=aws["s3"], bucket="reports", sns=aws["sns"],
                     topic_arn=aws["topic"], endpoints=Discovered(models=(summarise,)))
    assert out["period"]["recorded_days"] == 3
    (z,) = out["scale_to_zero"]
    assert (z["days"], z["always_on_usd"], z["saved_usd"]) == (3, "71.28", "65.34")  # 72 h x $0.99 - $5.94
    (note,) = messages(aws)
    assert "None" not in note["Message"] and "inferences not counted by the kit" in note["Message"]
