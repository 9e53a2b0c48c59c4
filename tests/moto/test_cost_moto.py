"""Cost monitor handlers under moto: Cost Explorer pages injected through moto's API, real DynamoDB,
CloudWatch, S3 and SNS calls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import boto3
import pytest
import requests
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.ce.models import ce_backends

from neuronfleet.lambdas.cost import collector, report, waste
from neuronfleet.lambdas.cost.adapters import Ledger, Signals, SpendMetrics, Topic, Usage
from neuronfleet.lambdas.cost.cost_explorer import CostExplorer
from neuronfleet.lambdas.cost.ledger import Ledger as SpendLedger
from tests.moto_support import announcements_table

REGION = "us-east-2"
TODAY = date(2026, 11, 4)
DAYS = ["2026-11-01", "2026-11-02", "2026-11-03"]
TYPES = ["trn2.48xlarge", "ml.inf2.xlarge", "ml.p5.48xlarge", "p5.48xlarge"]


def group(instance_type: str, fleet: str, amount: Any, hours: Any = "24") -> dict[str, Any]:
    metrics: dict[str, Any] = {"UsageQuantity": {"Amount": str(hours), "Unit": "Hrs"}}
    if amount is not None:
        metrics["UnblendedCost"] = {"Amount": str(amount), "Unit": "USD"}
    return {"Keys": [instance_type, f"neuronfleet:fleet${fleet}"], "Metrics": metrics}


def page(day: str, groups: list[dict[str, Any]], token: str | None = None) -> dict[str, Any]:
    end = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
    out: dict[str, Any] = {"ResultsByTime": [{"TimePeriod": {"Start": day, "End": end}, "Groups": groups,
                                              "Total": {}, "Estimated": False}], "DimensionValueAttributes": []}
    if token:
        out["NextPageToken"] = token
    return out


def inject(pages: list[dict[str, Any]]) -> None:
    """moto's documented API for Cost Explorer results: each new request body takes the next page."""
    backend = ce_backends["123456789012"]["global"]
    backend.cost_usage_results.clear()
    backend.cost_usage_results_queue.clear()
    resp = requests.post("http://motoapi.amazonaws.com/moto-api/static/ce/cost-and-usage-results",
                         json={"results": pages}, timeout=5)
    assert resp.status_code == 201


MONTH = [
    page("2026-11-01", [group("trn2.48xlarge", "nf-prod", "1072.83"), group("ml.inf2.xlarge", "nf-prod", "23.77"),
                        group("ml.p5.48xlarge", "nf-prod", "1320.96")], token="p2"),
    page("2026-11-02", [group("trn2.48xlarge", "nf-prod", "1072.83"), group("p5.48xlarge", "nf-other", "500.00"),
                        group("ml.inf2.xlarge", "nf-prod", "23.77")], token="p3"),
    page("2026-11-03", [group("trn2.48xlarge", "nf-prod", "536.41", 12), group("ml.inf2.xlarge", "", "10.00")]),
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
        sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
        topic = sns.create_topic(Name="alerts")["TopicArn"]
        queue = sqs.create_queue(QueueName="inbox")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="reports", CreateBucketConfiguration={"LocationConstraint": REGION})
        yield {"table": table, "ce": boto3.client("ce", region_name="us-east-1"),
               "cw": boto3.client("cloudwatch", region_name=REGION), "sns": sns, "sqs": sqs, "topic": topic,
               "queue": queue, "s3": s3}


def run_collector(aws: dict[str, Any], ce_client: Any = None, sleeps: list[float] | None = None):
    bad: list[Any] = []
    ce = CostExplorer(ce_client or aws["ce"], sleep=(sleeps.append if sleeps is not None else lambda s: None))
    summary = collector.collect(today=TODAY, lookback_days=3, instance_types=TYPES, ce=ce, ledger=SpendLedger(aws["table"]),
                                metrics=SpendMetrics(aws["cw"], "NeuronFleet/Cost"),
                                now=datetime(2026, 11, 4, 6, tzinfo=UTC), on_bad_row=bad.append)
    return summary, bad


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


def test_collects_every_page_with_one_request_each_into_the_ledger_and_metrics(aws) -> None:
    inject(MONTH)
    summary, bad = run_collector(aws)
    assert bad == []
    assert (summary.ce_requests, summary.rows, summary.new, summary.bad_rows) == (3, 8, 8, 0)
    items = aws["table"].scan()["Items"]
    assert len(items) == 8
    trn = [i for i in items if i["day"] == "2026-11-03" and i["instance_type"] == "trn2.48xlarge"]
    assert (trn[0]["fleet"], trn[0]["family"], trn[0]["amount"], trn[0]["usage_hours"]) == \
        ("nf-prod", "trainium", "536.41", "12")
    assert {i["service"] for i in items if i["instance_type"].startswith("ml.")} == {"sagemaker"}
    assert [i["fleet"] for i in items if i["day"] == "2026-11-03" and i["family"] == "inferentia"] == ["(untagged)"]
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1320.96
    assert spend_sum(aws, "2026-11-02", "nf-prod", "trainium") == 1072.83
    assert spend_sum(aws, "2026-11-02", "nf-other", "gpu") == 500.0


def test_rerun_of_the_same_days_changes_nothing(aws) -> None:
    inject(MONTH)
    run_collector(aws)
    before = sorted(json.dumps(i, sort_keys=True) for i in aws["table"].scan()["Items"])
    summary, _ = run_collector(aws)  # same query bodies: moto returns the same pages
    assert (summary.new, summary.replaced, summary.unchanged, summary.metric_datapoints) == (0, 0, 8, 0)
    assert sorted(json.dumps(i, sort_keys=True) for i in aws["table"].scan()["Items"]) == before
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1320.96  # not doubled


def test_late_correction_replaces_the_row_and_fixes_the_metric(aws) -> None:
    inject(MONTH)
    run_collector(aws)
    corrected = json.loads(json.dumps(MONTH))
    corrected[0]["ResultsByTime"][0]["Groups"][2]["Metrics"]["UnblendedCost"]["Amount"] = "1100.00"
    inject(corrected)
    summary, _ = run_collector(aws)
    assert (summary.new, summary.replaced, summary.unchanged) == (0, 1, 7)
    (row,) = [i for i in aws["table"].scan()["Items"] if i["instance_type"] == "ml.p5.48xlarge"]
    assert row["amount"] == "1100.00"
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 1100.0


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
    assert (summary.ce_requests, summary.ce_throttled, summary.new) == (5, 2, 8)
    assert len(sleeps) == 2 and 1.0 <= sleeps[0] <= 1.5 and 2.0 <= sleeps[1] <= 3.0


def test_persistent_throttling_fails_the_run_and_writes_nothing(aws) -> None:
    inject(MONTH)
    with pytest.raises(ClientError, match="Rate exceeded"):
        run_collector(aws, Throttled(aws["ce"], 100), [])
    assert aws["table"].scan()["Items"] == []


def test_bad_rows_are_counted_and_the_good_rows_kept(aws) -> None:
    inject([page("2026-11-01", [group("trn2.48xlarge", "nf-prod", "100.00"), group("trn2.48xlarge", "nf-x", None),
                                group("inf2.xlarge", "nf-prod", "abc"), group("m5.large", "nf-prod", "3.00"),
                                group("ml.inf2.xlarge", "nf-prod", "NaN")])])
    summary, bad = run_collector(aws)
    assert (summary.rows, summary.bad_rows, summary.new) == (1, 4, 1)
    reasons = sorted(b.reason for b in bad)
    assert reasons[0].startswith("Metrics.UnblendedCost.Amount: got 'NaN'")
    assert any("got 'abc'; allowed: a decimal number of USD" in r for r in reasons)
    assert any("got nothing" in r for r in reasons)
    assert any("instance type: got 'm5.large'; allowed: a Trainium (trn*), Inferentia (inf*) or GPU" in r
               for r in reasons)


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
        "Dimensions": [{"Name": "Fleet", "Value": "nf-prod"}, {"Name": "Variant", "Value": "neuron"}]}])
    out = report.run(today=TODAY, fleet="nf-prod", period_days=3, endpoints=["chat"], prices=PRICES,
                     ledger=SpendLedger(aws["table"]), usage=Usage(aws["cw"], "NeuronFleet/Workload"),
                     s3=aws["s3"], bucket="reports", sns=aws["sns"], topic_arn=aws["topic"])
    assert out["spend_usd"]["by_family"] == {"trainium": "2682.07", "inferentia": "47.54", "gpu": "1320.96"}
    econ = out["unit_economics"]["inferences"]
    # Neuron: $47.54 / 2M = $23.77 per million; GPU: $1320.96 / 1M = $1320.96 per million
    assert (econ["neuron_usd_per_million"], econ["gpu_usd_per_million"]) == ("23.77", "1320.96")
    assert (econ["gpu_baseline_usd"], econ["savings_usd"], econ["savings_percent"]) == ("2641.92", "2594.38", "98.20")
    assert out["unit_economics"]["tokens"]["neuron_usd_per_million"] == "0.10"
    assert out["verdict"][0].startswith("Inference spend $13685.00/month is over $10,000: migrating inference pays")
    keys = sorted(o["Key"] for o in aws["s3"].list_objects_v2(Bucket="reports")["Contents"])
    assert keys == ["reports/nf-prod/2026-11-04/report.html", "reports/nf-prod/2026-11-04/report.json"]
    page_html = aws["s3"].get_object(Bucket="reports", Key=keys[0])["Body"].read().decode()
    assert "<h1>Migration report: nf-prod</h1>" in page_html and "1320.96" in page_html
    (note,) = messages(aws)
    assert "Cost per million inferences: Neuron 23.77, GPU 1320.96" in note["Message"]
    assert "s3://reports/reports/nf-prod/2026-11-04/report.html" in note["Message"]


def _utilisation(aws: dict[str, Any], instance: str, values: list[float], end: datetime) -> None:
    """Hourly NeuronCore utilisation, the last value in the hour before ``end``."""
    for back, value in enumerate(reversed(values)):
        aws["cw"].put_metric_data(Namespace="NeuronFleet/Neuron", MetricData=[{
            "MetricName": "NeuronCoreUtilization", "Value": value, "Timestamp": end - timedelta(minutes=30 + 60 * back),
            "Dimensions": [{"Name": "InstanceId", "Value": instance}]}])


def test_idle_instances_are_announced_when_they_go_idle_and_when_they_stop_not_hourly(aws) -> None:
    now = datetime(2026, 11, 4, 12, tzinfo=UTC)
    _utilisation(aws, "i-idle", [5.0] * 6, now)
    _utilisation(aws, "i-busy", [85.0] * 6, now)
    ledger = Ledger(boto3.client("dynamodb", region_name=REGION),
                    announcements_table(boto3.client("dynamodb", region_name=REGION)))

    def check(at: datetime) -> list[str]:
        return waste.run(now=at, signals=Signals(aws["cw"], "NeuronFleet/Neuron", "NeuronCoreUtilization"),
                         topic=Topic(aws["sns"], aws["topic"]), ledger=ledger, threshold=20, hours=6)

    assert check(now) == ["neuronfleet: 1 Neuron instance(s) went idle"]
    (note,) = messages(aws)
    assert "- i-idle: 5.0% average NeuronCore utilisation" in note["Message"] and "i-busy" not in note["Message"]
    assert check(now) == [] and check(now + timedelta(minutes=5)) == []  # a rerun, an overlapping run: silence
    _utilisation(aws, "i-idle", [5.0] * 6, now + timedelta(hours=1))     # still idle an hour later: silence
    assert check(now + timedelta(hours=1)) == []
    _utilisation(aws, "i-idle", [90.0], now + timedelta(hours=2))         # busy again: said once
    assert check(now + timedelta(hours=2)) == ["neuronfleet: 1 Neuron instance(s) no longer idle"]
    assert check(now + timedelta(hours=2)) == []
    assert [m["Subject"] for m in messages(aws)] == ["neuronfleet: 1 Neuron instance(s) no longer idle"]


def test_an_idle_announcement_that_fails_to_publish_is_made_by_the_retry(aws) -> None:
    now = datetime(2026, 11, 4, 12, tzinfo=UTC)
    _utilisation(aws, "i-idle", [5.0] * 6, now)
    ddb = boto3.client("dynamodb", region_name=REGION)
    ledger = Ledger(ddb, announcements_table(ddb))
    signals = Signals(aws["cw"], "NeuronFleet/Neuron", "NeuronCoreUtilization")
    with pytest.raises(ClientError):
        waste.run(now=now, signals=signals, topic=Topic(aws["sns"], aws["topic"] + "-gone"), ledger=ledger,
                  threshold=20, hours=6)
    assert waste.run(now=now, signals=signals, topic=Topic(aws["sns"], aws["topic"]), ledger=ledger, threshold=20,
                     hours=6) == ["neuronfleet: 1 Neuron instance(s) went idle"]


