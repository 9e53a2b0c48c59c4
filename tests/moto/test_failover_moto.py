"""The failover handler against moto: real SageMaker, Application Auto Scaling, CloudWatch and SNS API calls.

moto applies UpdateEndpointWeightsAndCapacities at once (InService, every requested instance in service, and an
instance count of None for a variant whose weight alone changed); SageMaker still provisioning, or short of capacity,
is stood in by :func:`sagemaker_is`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.sagemaker import models as sagemaker_models

from neuronfleet.lambdas.failover.adapters import (
    RECORD_TAG,
    SCALABLE_DIMENSION,
    Alarms,
    CanaryMetrics,
    Records,
    SageMakerEndpoints,
    Scaling,
    Topic,
)
from neuronfleet.lambdas.failover.handler import Adapters, run
from neuronfleet.lambdas.failover.logic import Capacity, Policy
from neuronfleet.lambdas.failover.settings import WatchedEndpoint
from tests.moto_support import alerts_inbox, sagemaker_instance_types_from_botocore
from tests.publisher_examples import event

REGION = "us-east-2"
ACCOUNT = "123456789012"
ALARMS = ("chat-latency", "chat-5xx", "chat-model-errors")
CHAT = WatchedEndpoint(alarms=ALARMS, latency_limit_ms=8000, capacity=Capacity(
    neuron_min=2, neuron_max=8, gpu_min=1, gpu_max=3, neuron_instances_per_gpu_instance=3))
SCHEDULE = {"source": "aws.events", "detail-type": "Scheduled Event"}
T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(var, "testing")
    with mock_aws(), sagemaker_instance_types_from_botocore():
        clients = {name: boto3.client(name, region_name=REGION)
                   for name in ("sagemaker", "cloudwatch", "sns", "sqs", "application-autoscaling")}
        sns, sqs, cw = clients["sns"], clients["sqs"], clients["cloudwatch"]
        topic, queue = alerts_inbox(sns, sqs)
        for name in ALARMS:
            cw.put_metric_alarm(AlarmName=name, MetricName="ModelLatency", Namespace="AWS/SageMaker", Period=60,
                                EvaluationPeriods=1, Threshold=1, ComparisonOperator="GreaterThanThreshold",
                                Statistic="Average")
            cw.set_alarm_state(AlarmName=name, StateValue="OK", StateReason="test")
        sm = clients["sagemaker"]
        adapters = Adapters(endpoints=SageMakerEndpoints(sm), alarms=Alarms(cw), records=Records(sm),
                            scaling=Scaling(clients["application-autoscaling"]),
                            canary=CanaryMetrics(cw, latency_statistic="Maximum"),  # moto computes no p99
                            topic=Topic(sns, topic))
        yield {**clients, "topic": topic, "queue": queue, "adapters": adapters}


def make_endpoint(aws: dict[str, Any], name: str = "chat", *, gpu: bool = True, neuron_instances: int = 6,
                  autoscaled: bool = True) -> None:
    sm = aws["sagemaker"]
    role = f"arn:aws:iam::{ACCOUNT}:role/sm"
    image = f"763104351884.dkr.ecr.{REGION}.amazonaws.com/djl-inference"
    sm.create_model(ModelName=f"{name}-neuron", ExecutionRoleArn=role, PrimaryContainer={"Image": f"{image}:x"})
    variants = [{"VariantName": "neuron", "ModelName": f"{name}-neuron", "InstanceType": "ml.inf2.48xlarge",
                 "InitialInstanceCount": neuron_instances, "InitialVariantWeight": 1.0}]
    if gpu:
        sm.create_model(ModelName=f"{name}-gpu", ExecutionRoleArn=role, PrimaryContainer={"Image": f"{image}:y"})
        variants.append({"VariantName": "gpu", "ModelName": f"{name}-gpu", "InstanceType": "ml.p5.48xlarge",
                         "InitialInstanceCount": 1, "InitialVariantWeight": 0.0})
    sm.create_endpoint_config(EndpointConfigName=f"{name}-config", ProductionVariants=variants)
    sm.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-config")
    if autoscaled:  # as the stack registers them
        for variant, (low, high) in {"neuron": (2, 8), "gpu": (1, 3)}.items():
            aws["application-autoscaling"].register_scalable_target(
                ServiceNamespace="sagemaker", ResourceId=f"endpoint/{name}/variant/{variant}",
                ScalableDimension=SCALABLE_DIMENSION, MinCapacity=low, MaxCapacity=high)


def sagemaker_is(status: str = "InService", name: str = "chat", **instances: int) -> None:
    """The endpoint's status, and how many instances each named variant has in service."""
    endpoint = sagemaker_models.sagemaker_backends[ACCOUNT][REGION].endpoints[name]
    endpoint.endpoint_status = status
    for variant in endpoint.production_variants:
        if variant["VariantName"] in instances:
            variant["CurrentInstanceCount"] = instances[variant["VariantName"]]
            variant["DesiredInstanceCount"] = variant.get("DesiredInstanceCount") or instances[variant["VariantName"]]


def variants(aws: dict[str, Any], name: str = "chat") -> dict[str, tuple[float, int | None, int | None]]:
    """weight, current and desired instances per variant."""
    desc = aws["sagemaker"].describe_endpoint(EndpointName=name)
    return {v["VariantName"]: (v.get("DesiredWeight", 0.0), v.get("CurrentInstanceCount"),
                               v.get("DesiredInstanceCount")) for v in desc["ProductionVariants"]}


def weights(aws: dict[str, Any], name: str = "chat") -> dict[str, float]:
    return {v: w for v, (w, _, _) in variants(aws, name).items()}


def floors(aws: dict[str, Any], name: str = "chat") -> dict[str, tuple[int, int]]:
    targets = aws["application-autoscaling"].describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]
    return {t["ResourceId"].rsplit("/", 1)[1]: (t["MinCapacity"], t["MaxCapacity"]) for t in targets
            if t["ResourceId"].startswith(f"endpoint/{name}/")}


def record(aws: dict[str, Any], name: str = "chat") -> str | None:
    arn = aws["sagemaker"].describe_endpoint(EndpointName=name)["EndpointArn"]
    tags = {t["Key"]: t["Value"] for t in aws["sagemaker"].list_tags(ResourceArn=arn)["Tags"]}
    return tags.get(RECORD_TAG)


def subjects(aws: dict[str, Any]) -> list[str]:
    out: list[str] = []
    while got := aws["sqs"].receive_message(QueueUrl=aws["queue"], MaxNumberOfMessages=10).get("Messages", []):
        out += [json.loads(m["Body"])["Subject"] for m in got]
        aws["sqs"].delete_message_batch(QueueUrl=aws["queue"], Entries=[
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])
    return out


def alarm(aws: dict[str, Any], name: str, state: str) -> None:
    aws["cloudwatch"].set_alarm_state(AlarmName=name, StateValue=state, StateReason="test")


def check(aws: dict[str, Any], now: datetime, event: dict[str, Any] | None = None,
          config: dict[str, WatchedEndpoint] | None = None) -> dict[str, str]:
    (result,) = run(event or SCHEDULE, config=config or {"chat": CHAT}, aws=aws["adapters"], policy=Policy(), now=now)
    return result


def alarm_event(name: str) -> dict[str, Any]:
    """CloudWatch's documented alarm state change (tests/data/events), for the alarm ``name``."""
    out = event("cloudwatch-alarm-state-change")
    out["detail"]["alarmName"] = name
    return out


def canary_traffic(aws: dict[str, Any], start: datetime, *, invocations: int, errors: int = 0,
                   latency_ms: float = 2000) -> None:
    dims = [{"Name": "EndpointName", "Value": "chat"}, {"Name": "VariantName", "Value": "neuron"}]
    data = [("Invocations", invocations), ("Invocation5XXErrors", errors), ("InvocationModelErrors", 0),
            ("ModelLatency", latency_ms * 1000)]
    aws["cloudwatch"].put_metric_data(Namespace="AWS/SageMaker", MetricData=[
        {"MetricName": m, "Dimensions": dims, "Value": v, "Timestamp": start + timedelta(minutes=3)} for m, v in data])


# --------------------------------------------------------------------------------------------------------------


def test_moto_gap_is_extended_from_botocore_not_loosened(monkeypatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    variant = {"VariantName": "v", "ModelName": "m", "InitialInstanceCount": 1}
    with mock_aws():
        sm = boto3.client("sagemaker", region_name=REGION)
        sm.create_model(ModelName="m", ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/sm",
                        PrimaryContainer={"Image": "763104351884.dkr.ecr.us-east-2.amazonaws.com/x:y"})
        with pytest.raises(ClientError, match=r"ml\.inf2\.48xlarge"):  # moto's own list lags AWS (DESIGN.md)
            sm.create_endpoint_config(EndpointConfigName="a", ProductionVariants=[
                {**variant, "InstanceType": "ml.inf2.48xlarge"}])
        with sagemaker_instance_types_from_botocore():
            sm.create_endpoint_config(EndpointConfigName="b", ProductionVariants=[
                {**variant, "InstanceType": "ml.inf2.48xlarge"}])
            with pytest.raises(ClientError, match=r"ml\.inf3\.xlarge"):  # not in AWS's list either
                sm.create_endpoint_config(EndpointConfigName="c", ProductionVariants=[
                    {**variant, "InstanceType": "ml.inf3.xlarge"}])


def test_failover_carries_the_load_and_comes_back_on_evidence(aws) -> None:
    """The whole cycle: raise GPU to carry 6 Neuron instances (ratio 3 -> 2), wait for them, move the weight, stay
    while Neuron is silent, canary, read the canary's own traffic, move back, lower GPU again."""
    make_endpoint(aws)
    alarm(aws, "chat-5xx", "ALARM")
    raised = check(aws, T0, alarm_event("chat-5xx"))
    assert raised["action"] == "raise_gpu"
    assert floors(aws)["gpu"] == (2, 3) and weights(aws) == {"neuron": 1.0, "gpu": 0.0}
    assert "phase=raising-gpu" in (record(aws) or "")

    # moto's Application Auto Scaling does not move SageMaker into the new floor: the next check sets the count
    again = check(aws, T0 + timedelta(minutes=5))
    assert again["action"] == "raise_gpu" and "setting it again" in again["reason"] and variants(aws)["gpu"][2] == 2
    sagemaker_is("Updating", gpu=1)  # SageMaker provisions the second p5
    assert check(aws, T0 + timedelta(minutes=10))["action"] == "wait"
    sagemaker_is("InService", gpu=1)  # in service, the new instance not yet
    assert check(aws, T0 + timedelta(minutes=15))["action"] == "hold"
    assert weights(aws) == {"neuron": 1.0, "gpu": 0.0}
    sagemaker_is("InService", gpu=2)
    moved = check(aws, T0 + timedelta(minutes=15))
    assert moved["action"] == "to_gpu" and weights(aws) == {"neuron": 0.0, "gpu": 1.0}

    sagemaker_is(neuron=6, gpu=2)  # moto leaves a re-weighted variant's count at None
    alarm(aws, "chat-5xx", "OK")  # no traffic on Neuron: its alarms go OK on missing data
    assert check(aws, T0 + timedelta(minutes=20))["action"] == "hold"  # minimum dwell
    canary = check(aws, T0 + timedelta(minutes=30))
    assert canary["action"] == "canary" and weights(aws) == {"neuron": 0.05, "gpu": 0.95}
    sagemaker_is(neuron=6, gpu=2)
    silent = check(aws, T0 + timedelta(minutes=45))
    assert silent["action"] == "hold" and "silence is not health" in silent["reason"]
    assert weights(aws) == {"neuron": 0.05, "gpu": 0.95}

    canary_traffic(aws, T0 + timedelta(minutes=30), invocations=400, errors=1)
    back = check(aws, T0 + timedelta(minutes=50))
    assert back["action"] == "to_neuron", back
    assert weights(aws) == {"neuron": 1.0, "gpu": 0.0} and floors(aws)["gpu"] == (2, 3)

    sagemaker_is(neuron=6, gpu=2)
    lowered = check(aws, T0 + timedelta(minutes=55))
    assert lowered["action"] == "lower_gpu"
    assert floors(aws) == {"neuron": (2, 8), "gpu": (1, 3)} and variants(aws)["gpu"][2] == 1
    assert record(aws) is None
    assert subjects(aws) == ["neuronfleet: chat raising GPU capacity", "neuronfleet: chat traffic shifted to GPU",
                             "neuronfleet: chat canary back to Neuron", "neuronfleet: chat traffic shifted to Neuron",
                             "neuronfleet: chat GPU capacity lowered"]


def test_capacity_that_never_comes_up_gives_up_and_keeps_neuron_traffic(aws) -> None:
    make_endpoint(aws)
    alarm(aws, "chat-latency", "ALARM")
    assert check(aws, T0)["action"] == "raise_gpu"
    assert check(aws, T0 + timedelta(minutes=5))["action"] == "raise_gpu"  # the count itself (moto's AAS is inert)
    sagemaker_is(gpu=1)  # SageMaker cannot place the second p5: desired 2, 1 in service
    held = check(aws, T0 + timedelta(minutes=30))
    assert held["action"] == "hold" and "1 of 2 instance(s) in service (30 of 45 min)" in held["reason"]
    gave_up = check(aws, T0 + timedelta(minutes=45))
    assert gave_up["action"] == "give_up" and "traffic stays on neuron" in gave_up["reason"]
    assert weights(aws) == {"neuron": 1.0, "gpu": 0.0}
    assert floors(aws)["gpu"] == (1, 3) and variants(aws)["gpu"][2] == 1
    assert subjects(aws) == ["neuronfleet: chat raising GPU capacity", "neuronfleet: chat GPU capacity did not come up"]


def test_an_endpoint_update_is_waited_out_said_once_then_acted_on(aws) -> None:
    make_endpoint(aws, neuron_instances=3)
    sagemaker_is("Updating")  # autoscaling adds Neuron instances in the spike
    alarm(aws, "chat-latency", "ALARM")
    assert [check(aws, T0 + timedelta(minutes=m))["action"] for m in (0, 5, 10)] == ["wait", "wait", "wait"]
    assert subjects(aws) == ["neuronfleet: chat waiting for an endpoint update"]
    sagemaker_is(neuron=3, gpu=1)
    acted = check(aws, T0 + timedelta(minutes=15))
    assert acted["action"] == "to_gpu" and weights(aws) == {"neuron": 0.0, "gpu": 1.0}  # 3 / 3 = 1 GPU instance


def test_without_autoscaling_the_instance_count_is_set_directly(aws) -> None:
    make_endpoint(aws, autoscaled=False)
    alarm(aws, "chat-5xx", "ALARM")
    assert check(aws, T0)["action"] == "raise_gpu"
    assert variants(aws)["gpu"][2] == 2 and floors(aws) == {}


def test_no_gpu_variant_changes_nothing_and_says_why(aws) -> None:
    make_endpoint(aws, "solo", gpu=False, autoscaled=False)
    alarm(aws, "chat-latency", "ALARM")
    result = check(aws, T0, alarm_event("chat-latency"), config={"solo": CHAT})
    assert result["action"] == "error"
    assert "endpoint 'solo' has variants ['neuron']" in result["reason"] and "Nothing was changed" in result["reason"]
    assert weights(aws, "solo") == {"neuron": 1.0}
    assert aws["sagemaker"].describe_endpoint(EndpointName="solo")["EndpointStatus"] == "InService"
    assert subjects(aws) == []


def test_unwatched_alarm_is_ignored(aws) -> None:
    make_endpoint(aws)
    assert run(alarm_event("someone-elses-alarm"), config={"chat": CHAT}, aws=aws["adapters"], policy=Policy(),
               now=T0) == []


def test_canary_evidence_sums_counts_and_takes_the_worst_latency_in_ms() -> None:
    from botocore.stub import Stubber

    cw = boto3.client("cloudwatch", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    start, end = T0, T0 + timedelta(minutes=10)
    with Stubber(cw) as stub:
        stub.add_response("get_metric_data", {"MetricDataResults": [
            {"Id": "invocations", "Values": [120.0, 80.0]}, {"Id": "errors5xx", "Values": [1.0]},
            {"Id": "modelerrors", "Values": []}, {"Id": "latency", "Values": [2500000.0, 3100000.0]}]})
        evidence = CanaryMetrics(cw).read("chat", "neuron", start, end)
        stub.assert_no_pending_responses()
    assert (evidence.invocations, evidence.errors_5xx, evidence.model_errors, evidence.latency_p99_ms) == \
        (200.0, 1.0, 0.0, 3100.0)


def test_canary_reads_p99_latency_as_the_alarm_does() -> None:
    """The request as AWS gets it (botocore's Stubber checks it against the CloudWatch model): counts as Sum, latency
    as p99 (microseconds), one period over the window."""
    from botocore.stub import ANY, Stubber

    cw = boto3.client("cloudwatch", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    dims = [{"Name": "EndpointName", "Value": "chat"}, {"Name": "VariantName", "Value": "neuron"}]

    def query(qid: str, metric: str, stat: str) -> dict[str, Any]:
        return {"Id": qid, "ReturnData": True, "MetricStat": {"Metric": {
            "Namespace": "AWS/SageMaker", "MetricName": metric, "Dimensions": dims}, "Period": 600, "Stat": stat}}

    with Stubber(cw) as stub:
        stub.add_response("get_metric_data", {"MetricDataResults": []}, {
            "MetricDataQueries": [query("invocations", "Invocations", "Sum"),
                                  query("errors5xx", "Invocation5XXErrors", "Sum"),
                                  query("modelerrors", "InvocationModelErrors", "Sum"),
                                  query("latency", "ModelLatency", "p99")],
            "StartTime": ANY, "EndTime": ANY})
        evidence = CanaryMetrics(cw).read("chat", "neuron", T0, T0 + timedelta(minutes=10))
    assert evidence.invocations == 0 and evidence.latency_p99_ms is None
