"""The failover handler against moto: real SageMaker, Application Auto Scaling, CloudWatch, DynamoDB and SNS API calls,
and faults injected at each of them (:class:`Faulty`, over the moto-backed adapters).

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
    SCALABLE_DIMENSION,
    Alarms,
    CanaryMetrics,
    SageMakerEndpoints,
    Scaling,
    States,
    Topic,
)
from neuronfleet.lambdas.failover.handler import Adapters, run
from neuronfleet.lambdas.failover.logic import EndpointBounds, Policy, Record
from neuronfleet_contract.failover import WatchedEndpoint
from tests.moto_support import alerts_inbox, sagemaker_instance_types_from_botocore
from tests.publisher_examples import event

REGION = "us-east-2"
ACCOUNT = "123456789012"
ALARMS = ("chat-latency", "chat-5xx", "chat-model-errors")
GPU_ALARMS = ("chat-gpu-latency", "chat-gpu-5xx", "chat-gpu-model-errors")
CHAT = WatchedEndpoint(alarms=ALARMS, gpu_alarms=GPU_ALARMS, latency_limit_ms=8000, capacity=EndpointBounds(
    neuron_min=2, neuron_max=8, gpu_min=1, gpu_max=3, neuron_instances_per_gpu_instance=3))
TABLE = "failover-state"
SCHEDULE = {"source": "aws.events", "detail-type": "Scheduled Event"}
T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(var, "testing")
    with mock_aws(), sagemaker_instance_types_from_botocore():
        clients = {name: boto3.client(name, region_name=REGION)
                   for name in ("sagemaker", "cloudwatch", "sns", "sqs", "application-autoscaling", "dynamodb")}
        sns, sqs, cw = clients["sns"], clients["sqs"], clients["cloudwatch"]
        topic, queue = alerts_inbox(sns, sqs)
        for name in (*ALARMS, *GPU_ALARMS):
            make_alarm(cw, name)
        clients["dynamodb"].create_table(  # as EndpointFailover builds it
            TableName=TABLE, KeySchema=[{"AttributeName": "endpoint", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "endpoint", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
        sm = clients["sagemaker"]
        adapters = Adapters(endpoints=SageMakerEndpoints(sm), alarms=Alarms(cw),
                            states=States(clients["dynamodb"], TABLE),
                            scaling=Scaling(clients["application-autoscaling"]),
                            canary=CanaryMetrics(cw, latency_statistic="Maximum"),  # moto computes no p99
                            topic=Topic(sns, topic))
        yield {**clients, "topic": topic, "queue": queue, "adapters": adapters}


def make_alarm(cw: Any, name: str) -> None:
    cw.put_metric_alarm(AlarmName=name, MetricName="ModelLatency", Namespace="AWS/SageMaker", Period=60,
                        EvaluationPeriods=1, Threshold=1, ComparisonOperator="GreaterThanThreshold", Statistic="Average")
    cw.set_alarm_state(AlarmName=name, StateValue="OK", StateReason="test")


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


def record(aws: dict[str, Any], name: str = "chat") -> Record:
    stored = aws["adapters"].states.get(name)
    assert stored.intent is None, f"a step is still owed: {stored.intent}"
    return stored.record


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
        with pytest.raises(ClientError, match=r"ml\.inf2\.48xlarge"):  # moto's own list lags AWS (docs/DESIGN.md)
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
    assert record(aws).phase == "raising-gpu"

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
    assert record(aws) == Record()
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


def test_no_gpu_variant_changes_nothing_and_says_why_once(aws) -> None:
    make_endpoint(aws, "solo", gpu=False, autoscaled=False)
    alarm(aws, "chat-latency", "ALARM")
    result = check(aws, T0, alarm_event("chat-latency"), config={"solo": CHAT})
    assert result["action"] == "error"
    assert "endpoint 'solo' has variants ['neuron']" in result["reason"] and "Nothing was changed" in result["reason"]
    assert weights(aws, "solo") == {"neuron": 1.0}
    assert aws["sagemaker"].describe_endpoint(EndpointName="solo")["EndpointStatus"] == "InService"
    assert check(aws, T0 + timedelta(minutes=5), config={"solo": CHAT})["action"] == "error"
    assert subjects(aws) == ["neuronfleet: solo failover cannot check it"]  # said once, not every 5 minutes
    assert record(aws, "solo").error == "no-gpu-variant"


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


# -------------------------------------------------------------------------------------------- faults, one at a time
# A one-step failover (3 Neuron instances need 1 GPU instance, in service): in a run the adapters are called in this
# order: endpoints.get, states.get, alarms.get, states.write (the step, with its lease), endpoints.set_weights,
# topic.announce, states.write (the record kept, the step cleared). Each fault below hits one of them once.


class RunStopped(BaseException):  # the Lambda runtime ending the run (a timeout): no handler sees it
    pass


def throttled(operation: str) -> ClientError:
    return ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, operation)


class Faulty:
    """An adapter whose ``n``-th call of ``method`` fails (``faults[(method, n)] = (error, after)``): before the call
    (nothing happened) or after it (it took effect, its answer lost); ``before[(method, n)]`` runs first (another
    run overlapping this one)."""

    def __init__(self, inner: Any, faults: dict[tuple[str, int], tuple[BaseException, bool]] | None = None,
                 before: dict[tuple[str, int], Any] | None = None) -> None:
        self._inner, self._faults, self._before = inner, dict(faults or {}), dict(before or {})
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            n = self.calls[name] = self.calls.get(name, 0) + 1
            if (name, n) in self._before:
                self._before.pop((name, n))()
            fault = self._faults.get((name, n))
            if fault is None:
                return attr(*args, **kwargs)
            error, after = fault
            if after:
                attr(*args, **kwargs)
            raise error

        return call


def faulty(aws: dict[str, Any], **adapters: Faulty) -> Adapters:
    from dataclasses import replace

    return replace(aws["adapters"], **adapters)


def one_step(aws: dict[str, Any], adapters: Adapters, now: datetime = T0) -> dict[str, str]:
    (result,) = run(alarm_event("chat-5xx"), config={"chat": CHAT}, aws=adapters, policy=Policy(), now=now,
                    lease_until=now + timedelta(minutes=2))
    return result


def messages(aws: dict[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    while got := aws["sqs"].receive_message(QueueUrl=aws["queue"], MaxNumberOfMessages=10).get("Messages", []):
        out += [(json.loads(m["Body"])["Subject"], json.loads(m["Body"])["Message"]) for m in got]
        aws["sqs"].delete_message_batch(QueueUrl=aws["queue"], Entries=[
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])
    return out


MOVED = "neuronfleet: chat traffic shifted to GPU"
ADOPTED = "neuronfleet: chat traffic found on GPU without a failover record"
CANNOT = "neuronfleet: chat failover cannot check it"


@pytest.fixture
def alarming(aws) -> dict[str, Any]:
    make_endpoint(aws, neuron_instances=3)
    alarm(aws, "chat-5xx", "ALARM")
    return aws


def settled(aws: dict[str, Any], later: datetime) -> dict[str, str]:
    """The next scheduled check, after the lease: the state must agree with the endpoint, nothing owed."""
    return check(aws, later)


@pytest.mark.parametrize(("where", "fault", "said"), [
    # DynamoDB refuses the step's record: the safe default moves the traffic now (GPU has the instances), said; the
    # next run, table back, takes the traffic found on GPU over, said
    ("states", ("write", 1, False), [MOVED, ADOPTED]),
    # the weights never changed: the step is dropped unannounced, said as an error, taken next run
    ("endpoints", ("set_weights", 1, False), [CANNOT, MOVED]),
    # the weights changed, SageMaker's answer was lost (a timeout): the endpoint shows it, the step completes now
    ("endpoints", ("set_weights", 1, True), [MOVED]),
    # SNS refused: the step stays owed, the next run finds the weights moved and announces it (never adopted)
    ("topic", ("announce", 1, False), [MOVED]),
    # the record kept after publishing failed once: tried again in the run
    ("states", ("write", 2, False), [MOVED]),
    # the record kept took effect but its answer was lost: the retry finds the item moved on, nothing repeated
    ("states", ("write", 2, True), [MOVED]),
])
def test_a_single_failure_at_each_point_loses_nothing_and_repeats_nothing(alarming, where, fault, said) -> None:
    aws = alarming
    method, n, after = fault
    error = throttled(method)
    broken = Faulty(getattr(aws["adapters"], where), {(method, n): (error, after)})
    first = one_step(aws, faulty(aws, **{where: broken}))
    again = settled(aws, T0 + timedelta(minutes=5))
    later = settled(aws, T0 + timedelta(minutes=10))
    assert weights(aws) == {"neuron": 0.0, "gpu": 1.0}, (first, again)
    assert record(aws).phase == "on-gpu" and record(aws).error == ""  # state agrees with the endpoint, nothing owed
    got = messages(aws)
    assert [subject for subject, _ in got] == said, (first, again, later)
    moved = [m for s, m in got if s == MOVED]
    assert len(moved) == 1 and ("Step chat#" in moved[0] or "state store unavailable" in moved[0])
    assert later["action"] == "hold"


def test_the_run_stopping_after_its_record_before_acting_is_decided_afresh(alarming) -> None:
    aws = alarming
    stop = Faulty(aws["adapters"].endpoints, {("set_weights", 1): (RunStopped("timeout"), False)})
    with pytest.raises(RunStopped):
        one_step(aws, faulty(aws, endpoints=stop))
    held = check(aws, T0 + timedelta(minutes=1))  # within the stopped run's lease: left alone
    assert held["action"] == "busy" and weights(aws) == {"neuron": 1.0, "gpu": 0.0}
    taken = check(aws, T0 + timedelta(minutes=5))
    assert taken["action"] == "to_gpu" and weights(aws) == {"neuron": 0.0, "gpu": 1.0}
    assert subjects(aws) == [MOVED] and record(aws).phase == "on-gpu"


def test_the_run_stopping_after_acting_before_publishing_is_completed_by_the_next(alarming) -> None:
    aws = alarming
    stop = Faulty(aws["adapters"].topic, {("announce", 1): (RunStopped("timeout"), False)})
    with pytest.raises(RunStopped):
        one_step(aws, faulty(aws, topic=stop))
    assert weights(aws) == {"neuron": 0.0, "gpu": 1.0} and subjects(aws) == []
    done = check(aws, T0 + timedelta(minutes=5))
    assert done["action"] == "to_gpu" and "completed step chat#" in done["reason"]
    assert subjects(aws) == [MOVED] and record(aws).phase == "on-gpu"
    assert check(aws, T0 + timedelta(minutes=10))["action"] == "hold" and subjects(aws) == []


def test_the_one_window_left_publish_taken_then_the_run_dies_repeats_the_same_step(alarming) -> None:
    """SNS has no idempotent publish on a standard topic: a run that dies after SNS took the message and before the
    one write that clears the step has it published again, with the same step id, by the run that completes it."""
    aws = alarming
    stop = Faulty(aws["adapters"].topic, {("announce", 1): (RunStopped("timeout"), True)})
    with pytest.raises(RunStopped):
        one_step(aws, faulty(aws, topic=stop))
    check(aws, T0 + timedelta(minutes=5))
    got = messages(aws)
    assert [s for s, _ in got] == [MOVED, MOVED] and got[0][1] == got[1][1]  # the same text, the same step
    assert record(aws).phase == "on-gpu"


def test_overlapping_runs_take_one_step_and_say_it_once(alarming) -> None:
    aws = alarming
    inner: list[dict[str, str]] = []

    # B runs entirely while A is between recording its step and acting: B finds A's lease and leaves the endpoint
    a = Faulty(aws["adapters"].endpoints, before={("set_weights", 1): lambda: inner.append(check(aws, T0))})
    assert one_step(aws, faulty(aws, endpoints=a))["action"] == "to_gpu"
    assert inner[0]["action"] == "busy" and "a run is taking step chat#1 (to_gpu)" in inner[0]["reason"]
    assert subjects(aws) == [MOVED]


def test_overlapping_runs_that_read_the_same_version_let_one_write_win(aws) -> None:
    make_endpoint(aws, neuron_instances=3)
    alarm(aws, "chat-5xx", "ALARM")
    inner: list[dict[str, str]] = []
    # B runs entirely after A read the item and before A records its step: A's write is refused, A does nothing
    a = Faulty(aws["adapters"].states, before={("write", 1): lambda: inner.append(check(aws, T0))})
    late = one_step(aws, faulty(aws, states=a))
    assert inner[0]["action"] == "to_gpu" and late["action"] == "busy"
    assert "another run recorded a step first" in late["reason"]
    assert subjects(aws) == [MOVED] and record(aws).phase == "on-gpu"


def test_a_retry_after_a_failed_publish_completes_the_step_at_once(alarming) -> None:
    """The failed run releases its lease: Lambda's retry a minute later completes the step, it does not wait for
    the lease to run out."""
    aws = alarming
    refused = Faulty(aws["adapters"].topic, {("announce", 1): (throttled("Publish"), False)})
    assert one_step(aws, faulty(aws, topic=refused))["action"] == "error"
    retry = one_step(aws, aws["adapters"], now=T0 + timedelta(minutes=1))
    assert retry["action"] == "to_gpu" and "completed step" in retry["reason"]
    assert subjects(aws) == [MOVED]


def test_a_step_whose_change_never_happened_is_not_announced_as_done(alarming) -> None:
    """A run stopped after recording the step; the next finds the weights unchanged and an endpoint now healthy:
    the step is dropped, nothing is said about a move that did not happen."""
    aws = alarming
    stop = Faulty(aws["adapters"].endpoints, {("set_weights", 1): (RunStopped("timeout"), False)})
    with pytest.raises(RunStopped):
        one_step(aws, faulty(aws, endpoints=stop))
    alarm(aws, "chat-5xx", "OK")
    assert check(aws, T0 + timedelta(minutes=5))["action"] == "hold"
    assert subjects(aws) == [] and weights(aws) == {"neuron": 1.0, "gpu": 0.0} and record(aws) == Record()


# -------------------------------------------------------------------------------------------- each endpoint on its own


def test_a_deleted_endpoint_is_said_once_and_the_others_still_fail_over(aws) -> None:
    make_endpoint(aws, neuron_instances=3)
    gone = WatchedEndpoint(alarms=("gone-latency",), gpu_alarms=(), latency_limit_ms=8000, capacity=CHAT.capacity)
    config = {"gone": gone, "chat": CHAT}  # the deleted one first: it must not stop the loop
    make_alarm(aws["cloudwatch"], "gone-latency")
    alarm(aws, "chat-5xx", "ALARM")
    results = run(SCHEDULE, config=config, aws=aws["adapters"], policy=Policy(), now=T0)
    assert [(r["endpoint"], r["action"]) for r in results] == [("gone", "error"), ("chat", "to_gpu")]
    assert "Could not find endpoint" in results[0]["reason"]
    for minute in (5, 10):
        again = run(SCHEDULE, config=config, aws=aws["adapters"], policy=Policy(), now=T0 + timedelta(minutes=minute))
        assert [r["action"] for r in again] == ["error", "hold"]
    alarm(aws, "gone-latency", "ALARM")  # its alarm fires: no crash, not said again
    (event_result,) = run(alarm_event("gone-latency"), config=config, aws=aws["adapters"], policy=Policy(), now=T0)
    assert event_result["action"] == "error"
    assert subjects(aws) == ["neuronfleet: gone failover cannot check it", MOVED]
    assert record(aws, "gone").error == "endpoint-not-found"


def test_alarms_deleted_out_of_band_are_said_once_and_cleared_when_restored(aws) -> None:
    make_endpoint(aws)
    aws["cloudwatch"].delete_alarms(AlarmNames=["chat-gpu-5xx"])
    first = check(aws, T0)
    assert first["action"] == "error" and "alarms not found: chat-gpu-5xx" in first["reason"]
    assert check(aws, T0 + timedelta(minutes=5))["action"] == "error"
    make_alarm(aws["cloudwatch"], "chat-gpu-5xx")
    assert check(aws, T0 + timedelta(minutes=10))["action"] == "hold" and record(aws) == Record()
    assert subjects(aws) == [CANNOT]


def test_throttling_on_one_endpoint_leaves_the_others_and_is_said_once(aws) -> None:
    make_endpoint(aws, neuron_instances=3)
    make_endpoint(aws, "embed", neuron_instances=3)
    embed = WatchedEndpoint(alarms=("embed-latency",), gpu_alarms=(), latency_limit_ms=500, capacity=CHAT.capacity)
    make_alarm(aws["cloudwatch"], "embed-latency")
    alarm(aws, "chat-5xx", "ALARM")
    calls = {"n": 0}
    real = aws["adapters"].alarms

    class ThrottledForChat:
        def get(self, names: Any) -> Any:
            calls["n"] += 1
            if "chat-5xx" in names:
                raise throttled("DescribeAlarms")
            return real.get(names)

    adapters = faulty(aws, alarms=ThrottledForChat())  # type: ignore[arg-type]
    config = {"chat": CHAT, "embed": embed}
    for minute in (0, 5):
        results = run(SCHEDULE, config=config, aws=adapters, policy=Policy(), now=T0 + timedelta(minutes=minute))
        assert [(r["endpoint"], r["action"]) for r in results] == [("chat", "error"), ("embed", "hold")]
    assert "DescribeAlarms: ThrottlingException: Rate exceeded" in results[0]["reason"]
    assert subjects(aws) == [CANNOT] and weights(aws) == {"neuron": 1.0, "gpu": 0.0}
    assert check(aws, T0 + timedelta(minutes=10))["action"] == "to_gpu"  # throttling over: it fails over
    assert record(aws).error == ""


# -------------------------------------------------------------------------------------------- the GPU variant's alarms


def test_a_gpu_alarm_event_is_heard_and_a_failing_gpu_blocks_the_failover(aws) -> None:
    make_endpoint(aws, neuron_instances=3)
    alarm(aws, "chat-gpu-5xx", "ALARM")
    alarm(aws, "chat-5xx", "ALARM")
    blocked = check(aws, T0, alarm_event("chat-gpu-5xx"))
    assert blocked["action"] == "both_failing" and weights(aws) == {"neuron": 1.0, "gpu": 0.0}
    assert check(aws, T0 + timedelta(minutes=5))["action"] == "hold"
    alarm(aws, "chat-gpu-5xx", "OK")
    assert check(aws, T0 + timedelta(minutes=10), alarm_event("chat-gpu-5xx"))["action"] == "to_gpu"
    assert subjects(aws) == ["neuronfleet: chat both variants failing", MOVED]


def test_a_gpu_variant_failing_under_the_traffic_is_said_and_neuron_gets_a_canary(aws) -> None:
    make_endpoint(aws, neuron_instances=3)
    alarm(aws, "chat-5xx", "ALARM")
    assert check(aws, T0)["action"] == "to_gpu"
    sagemaker_is(neuron=3, gpu=1)
    alarm(aws, "chat-5xx", "OK")
    alarm(aws, "chat-gpu-latency", "ALARM")
    canary = check(aws, T0 + timedelta(minutes=2), alarm_event("chat-gpu-latency"))  # inside the 10-minute dwell
    assert canary["action"] == "canary" and weights(aws) == {"neuron": 0.05, "gpu": 0.95}
    assert canary["reason"].startswith("gpu variant alarming while it carries the traffic: chat-gpu-latency")
    assert subjects(aws) == [MOVED, "neuronfleet: chat canary back to Neuron"]


# -------------------------------------------------------------------------------------------- malformed events


@pytest.mark.parametrize(("change", "needle"), [
    ({"detail": "chat-5xx"}, "detail: got str 'chat-5xx'; allowed: an object with alarmName"),
    ({"detail": ["chat-5xx"]}, "detail: got list ['chat-5xx']; allowed: an object with alarmName"),
    ({"detail": None}, "detail: got NoneType None"),
    ({"detail": {"state": {"value": "ALARM"}}}, "detail.alarmName: got NoneType None; allowed: the name of an alarm"),
    ({"detail": {"alarmName": 5}}, "detail.alarmName: got int 5"),
    ({"source": None}, "source: got NoneType None; allowed: 'aws.cloudwatch'"),
    ({"source": "aws.ec2"}, "source: got str 'aws.ec2'"),
])
def test_malformed_events_are_refused_with_a_log_line_and_a_metric(aws, change, needle, capsys, caplog) -> None:
    """Through the Lambda entry point (Powertools' EventBridgeEvent, Logger, Metrics), CloudWatch's own example
    changed one field at a time."""
    from neuronfleet.lambdas.failover import handler as entry
    from neuronfleet_contract.failover import FailoverConfig

    make_endpoint(aws)
    event = {**alarm_event("chat-5xx"), **change}
    settings = FailoverConfig(endpoints={"chat": CHAT}, topic_arn=aws["topic"], state_table=TABLE)
    container = entry.Container(settings=settings, aws=aws["adapters"])
    original = entry.container
    entry.container = lambda: container  # type: ignore[assignment]
    try:
        (result,) = entry.handler(event, LambdaContextStub())
    finally:
        entry.container = original
    assert result["action"] == "refused" and needle in result["reason"], result
    (line,) = [r for r in caplog.records if r.getMessage() == "event refused"]
    assert line.levelname == "WARNING" and needle in line.reason  # type: ignore[attr-defined]
    emf = [json.loads(out) for out in capsys.readouterr().out.splitlines() if '"_aws"' in out]
    assert [m["MalformedEvents"] for m in emf] == [[1.0]]
    assert emf[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "NeuronFleet/Failover"
    assert subjects(aws) == [] and weights(aws) == {"neuron": 1.0, "gpu": 0.0}


class LambdaContextStub:
    function_name = "failover"
    memory_limit_in_mb = 256
    invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:failover"
    aws_request_id = "c6af9ac6-7b61-11e6-9a41-93e812345678"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 60_000
