"""The failover and capacity-alert handlers against moto: real SageMaker, CloudWatch and SNS API calls."""

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

from neuronfleet.lambdas.capacity_alert import handler as capacity_handler
from neuronfleet.lambdas.capacity_alert.settings import gpu_pool
from neuronfleet.lambdas.failover.adapters import Alarms, SageMakerEndpoints, Topic
from neuronfleet.lambdas.failover.handler import run
from neuronfleet.lambdas.failover.logic import Policy
from tests.moto_support import sagemaker_instance_types_from_botocore

REGION = "us-east-2"
ALARMS = ["chat-latency", "chat-5xx", "chat-model-errors"]


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(var, "testing")
    with mock_aws(), sagemaker_instance_types_from_botocore():
        sm = boto3.client("sagemaker", region_name=REGION)
        cw = boto3.client("cloudwatch", region_name=REGION)
        sns = boto3.client("sns", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        topic = sns.create_topic(Name="alerts")["TopicArn"]
        queue = sqs.create_queue(QueueName="inbox")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
        for name in ALARMS:
            cw.put_metric_alarm(AlarmName=name, MetricName="ModelLatency", Namespace="AWS/SageMaker", Period=60,
                                EvaluationPeriods=1, Threshold=1, ComparisonOperator="GreaterThanThreshold",
                                Statistic="Average")
            cw.set_alarm_state(AlarmName=name, StateValue="OK", StateReason="test")
        yield {"sm": sm, "cw": cw, "sns": sns, "sqs": sqs, "topic": topic, "queue": queue}


def make_endpoint(sm: Any, name: str, *, gpu: bool = True) -> None:
    sm.create_model(ModelName=f"{name}-neuron", ExecutionRoleArn="arn:aws:iam::123456789012:role/sm",
                    PrimaryContainer={"Image": "763104351884.dkr.ecr.us-east-2.amazonaws.com/djl-inference:x"})
    variants = [{"VariantName": "neuron", "ModelName": f"{name}-neuron", "InstanceType": "ml.inf2.48xlarge",
                 "InitialInstanceCount": 2, "InitialVariantWeight": 1.0}]
    if gpu:
        sm.create_model(ModelName=f"{name}-gpu", ExecutionRoleArn="arn:aws:iam::123456789012:role/sm",
                        PrimaryContainer={"Image": "763104351884.dkr.ecr.us-east-2.amazonaws.com/djl-inference:y"})
        variants.append({"VariantName": "gpu", "ModelName": f"{name}-gpu", "InstanceType": "ml.p5.48xlarge",
                         "InitialInstanceCount": 1, "InitialVariantWeight": 0.0})
    sm.create_endpoint_config(EndpointConfigName=f"{name}-config", ProductionVariants=variants)
    sm.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-config")


def weights(sm: Any, name: str) -> dict[str, float]:
    return {v["VariantName"]: v["DesiredWeight"] for v in sm.describe_endpoint(EndpointName=name)["ProductionVariants"]}


def messages(aws: dict[str, Any]) -> list[dict[str, str]]:
    got = aws["sqs"].receive_message(QueueUrl=aws["queue"], MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in got]


def invoke(aws: dict[str, Any], event: dict[str, Any], now: datetime, config: dict[str, list[str]] | None = None):
    return run(event, config=config or {"chat": ALARMS}, endpoints=SageMakerEndpoints(aws["sm"]),
               alarms=Alarms(aws["cw"]), topic=Topic(aws["sns"], aws["topic"]), policy=Policy(), now=now)


def alarm_event(name: str) -> dict[str, Any]:
    return {"source": "aws.cloudwatch", "detail-type": "CloudWatch Alarm State Change", "detail": {"alarmName": name}}


def test_moto_gap_is_extended_from_botocore_not_loosened(monkeypatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    variant = {"VariantName": "v", "ModelName": "m", "InitialInstanceCount": 1}
    with mock_aws():
        sm = boto3.client("sagemaker", region_name=REGION)
        sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/sm",
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


def test_alarm_shifts_traffic_to_gpu_logs_and_announces(aws) -> None:
    make_endpoint(aws["sm"], "chat")
    aws["cw"].set_alarm_state(AlarmName="chat-5xx", StateValue="ALARM", StateReason="5XX")
    result = invoke(aws, alarm_event("chat-5xx"), datetime.now(UTC))
    assert result == [{"endpoint": "chat", "action": "to_gpu", "reason": "neuron variant alarming: chat-5xx"}]
    assert weights(aws["sm"], "chat") == {"neuron": 0.0, "gpu": 1.0}
    (note,) = messages(aws)
    assert note["Subject"] == "neuronfleet: chat traffic shifted to GPU"
    assert "Reason: neuron variant alarming: chat-5xx" in note["Message"]


def test_shift_back_after_recovery(aws) -> None:
    make_endpoint(aws["sm"], "chat")
    aws["cw"].set_alarm_state(AlarmName="chat-latency", StateValue="ALARM", StateReason="slow")
    invoke(aws, alarm_event("chat-latency"), datetime.now(UTC))
    # SageMaker finishes the update (moto leaves the endpoint Updating for ever)
    sagemaker_models.sagemaker_backends["123456789012"][REGION].endpoints["chat"].endpoint_status = "InService"
    aws["cw"].set_alarm_state(AlarmName="chat-latency", StateValue="OK", StateReason="fast again")
    soon = invoke(aws, {"source": "aws.events"}, datetime.now(UTC) + timedelta(minutes=5))
    assert soon[0]["action"] == "hold" and weights(aws["sm"], "chat") == {"neuron": 0.0, "gpu": 1.0}
    later = invoke(aws, {"source": "aws.events"}, datetime.now(UTC) + timedelta(minutes=16))
    assert later[0]["action"] == "to_neuron"
    assert weights(aws["sm"], "chat") == {"neuron": 1.0, "gpu": 0.0}
    assert [m["Subject"] for m in messages(aws)] == ["neuronfleet: chat traffic shifted to GPU",
                                                     "neuronfleet: chat traffic shifted to Neuron"]


def test_no_gpu_variant_changes_nothing_and_says_why(aws) -> None:
    make_endpoint(aws["sm"], "solo", gpu=False)
    aws["cw"].set_alarm_state(AlarmName="chat-latency", StateValue="ALARM", StateReason="slow")
    result = invoke(aws, alarm_event("chat-latency"), datetime.now(UTC), config={"solo": ALARMS})
    assert result[0]["action"] == "error"
    assert "endpoint 'solo' has variants ['neuron']" in result[0]["reason"]
    assert "Nothing was changed" in result[0]["reason"]
    assert weights(aws["sm"], "solo") == {"neuron": 1.0}
    assert aws["sm"].describe_endpoint(EndpointName="solo")["EndpointStatus"] == "InService"
    assert messages(aws) == []


def test_unwatched_alarm_is_ignored(aws) -> None:
    make_endpoint(aws["sm"], "chat")
    assert invoke(aws, alarm_event("someone-elses-alarm"), datetime.now(UTC)) == []


POOL = {"queue_arn": "arn:aws:batch:us-east-2:123456789012:job-queue/gpu", "max_vcpus": 384,
        "cuda_only_workloads": ["custom-cuda-kernels"],
        "types": [{"instance_type": "p5.48xlarge", "gpus": 8, "gpu_name": "H100", "efa": 32, "vcpus": 192},
                  {"instance_type": "g6e.48xlarge", "gpus": 8, "gpu_name": "L40S", "efa": 4, "vcpus": 192}]}


@pytest.mark.parametrize(("event", "needle"), [
    ({"detail-type": "Capacity Block Reservation Expiration Warning", "source": "aws.ec2",
      "detail": {"capacity-reservation-id": "cr-0123", "end-date": "2026-11-02T11:30:00Z"}},
     "Capacity Block cr-0123 ends at 2026-11-02T11:30:00Z: its instances are terminated from 30 minutes before"),
    ({"detail-type": "EC2 Instance Launch Unsuccessful", "source": "aws.autoscaling",
      "detail": {"AutoScalingGroupName": "batch-trn2", "StatusMessage": "InsufficientInstanceCapacity: none"}},
     "instances could not launch in batch-trn2: InsufficientInstanceCapacity: none"),
    ({"detail-type": "Batch Job State Change", "source": "aws.batch",
      "detail": {"jobName": "pretrain", "jobId": "j-1", "status": "RUNNABLE",
                 "statusReason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - no trn2"}},
     "Batch job pretrain (j-1) is stuck RUNNABLE: CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"),
])
def test_capacity_event_announces_what_the_gpu_queue_can_take(aws, event, needle) -> None:
    result = capacity_handler.run(event, pool=gpu_pool(POOL), alerts=Topic(aws["sns"], aws["topic"]))
    assert result["action"] == "announced"
    (note,) = messages(aws)
    assert needle in note["Message"]
    assert "arn:aws:batch:us-east-2:123456789012:job-queue/gpu" in note["Message"]
    assert "up to 384 vCPUs (2 x p5.48xlarge at most)" in note["Message"]
    assert "- p5.48xlarge: 8 x H100, 32 EFA, 192 vCPUs" in note["Message"]
    assert "CUDA-only workloads that always run there: custom-cuda-kernels" in note["Message"]


def test_unknown_event_is_ignored_not_crashed(aws) -> None:
    result = capacity_handler.run({"detail-type": "Something Else"}, pool=gpu_pool(POOL),
                                  alerts=Topic(aws["sns"], aws["topic"]))
    assert result["action"] == "ignored" and "detail-type 'Something Else' is not a capacity event" in result["reason"]
    assert messages(aws) == []
