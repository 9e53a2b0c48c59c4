"""config/batch.yaml (issue 43), synthesised once (the session's synth_fleet: cdk-nag's AwsSolutions, NIST 800-53 R5,
HIPAA Security and PCI DSS packs as gates) and deployed into moto by neuronfleet.offline, as the demo deploys: its
asynchronous endpoint, its queue's bucket and topics, the cost monitors. What moto skips (Application Auto Scaling,
CloudWatch alarms) is held by the template assertions here and in tests/constructs/test_async_endpoint.py."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from neuronfleet.offline import deploy_assembly, offline_aws
from tests.cdk_support import properties


@pytest.fixture(scope="module")
def batch(synth_fleet) -> Any:
    return synth_fleet("batch")


def test_the_inference_template_holds_the_async_endpoint_its_scaling_to_zero_and_its_alarms(batch) -> None:
    template = batch.template("inference")
    (config,) = properties(template, "AWS::SageMaker::EndpointConfig").values()
    assert set(config["AsyncInferenceConfig"]["OutputConfig"]["NotificationConfig"]) == {"SuccessTopic", "ErrorTopic"}
    (target,) = properties(template, "AWS::ApplicationAutoScaling::ScalableTarget").values()
    assert (target["MinCapacity"], target["MaxCapacity"]) == (0, 2)
    kinds = sorted(p["PolicyType"] for p in properties(template, "AWS::ApplicationAutoScaling::ScalingPolicy").values())
    assert kinds == ["StepScaling", "TargetTrackingScaling"]
    metrics = sorted(p["MetricName"] for p in properties(template, "AWS::CloudWatch::Alarm").values())
    assert metrics == ["ApproximateAgeOfOldestRequest", "HasBacklogWithoutCapacity", "Invocation5XXErrors",
                       "InvocationFailures", "ModelLatency"]
    assert not batch.stacks.get("failover") and "Failover" not in str(template.to_json()), \
        "no run-time failover for an asynchronous endpoint"


ASYNC_OUTPUTS = ("AsyncSuccessTopicArn", "AsyncErrorTopicArn", "AsyncInputPath", "AsyncOutputPath", "AsyncFailurePath")
"""The inference stack's outputs per asynchronous endpoint (after <id>): its topics and its queue's three prefixes."""


def test_the_inference_stack_outputs_the_async_endpoints_topics_and_prefixes(batch) -> None:
    """The outputs name the endpoint configuration's own topics and the queue's own bucket and prefixes."""
    template = batch.template("inference").to_json()
    (cid,) = batch.stacks["inference"].endpoints
    outputs = {k: v["Value"] for k, v in template["Outputs"].items() if k.startswith(cid)}
    assert set(outputs) == {f"{cid}EndpointName", *(cid + name for name in ASYNC_OUTPUTS)}
    (config,) = properties(batch.template("inference"), "AWS::SageMaker::EndpointConfig").values()
    notify = config["AsyncInferenceConfig"]["OutputConfig"]["NotificationConfig"]
    assert (outputs[f"{cid}AsyncSuccessTopicArn"], outputs[f"{cid}AsyncErrorTopicArn"]) == (
        notify["SuccessTopic"], notify["ErrorTopic"])
    output_path = config["AsyncInferenceConfig"]["OutputConfig"]["S3OutputPath"]
    for name, part in (("Input", "input"), ("Output", "output"), ("Failure", "failures")):
        value = outputs[f"{cid}Async{name}Path"]["Fn::Join"]
        assert value[1][:-1] == output_path["Fn::Join"][1][:-1]  # s3:// and the queue's bucket
        assert value[1][-1] == f"/async/{cid}/{part}/"


def test_batch_deploys_into_moto_with_its_queue(batch) -> None:
    fleet = batch.fleet
    with offline_aws(account=fleet.account, region=fleet.region):
        result = deploy_assembly(batch.assembly.directory)
        sm, sns = boto3.client("sagemaker", fleet.region), boto3.client("sns", fleet.region)
        endpoints = sm.list_endpoints()["Endpoints"]
        configs = [sm.describe_endpoint_config(EndpointConfigName=sm.describe_endpoint(
            EndpointName=e["EndpointName"])["EndpointConfigName"]) for e in endpoints]
        topics = [t["TopicArn"] for t in sns.list_topics()["Topics"]]
        functions = sorted(f["Handler"] for f in boto3.client("lambda", fleet.region).list_functions()["Functions"])
    assert {s.status for s in result.stacks} == {"CREATE_COMPLETE"}
    assert {f"nf-batch-{part}" for part in ("network", "alerts", "inference", "cost")} <= {s.name for s in result.stacks}
    (endpoint,) = endpoints
    (construct,) = batch.stacks["inference"].endpoints.values()
    assert endpoint["EndpointName"] == construct.endpoint_name
    (config,) = configs
    assert config["ProductionVariants"][0]["InstanceType"] == "ml.inf2.xlarge"
    out = config["AsyncInferenceConfig"]["OutputConfig"]  # moto keeps what CloudFormation passed
    assert out["S3OutputPath"].endswith(f"/async/{construct.node.id}/output")
    assert out["S3FailurePath"].endswith(f"/async/{construct.node.id}/failures")
    assert {out["NotificationConfig"]["SuccessTopic"], out["NotificationConfig"]["ErrorTopic"]} <= set(topics)
    assert sum(1 for t in topics if "SuccessTopic" in t or "ErrorTopic" in t) == 2, topics
    assert {"cost.collector.handler", "cost.waste.handler"} <= set(functions)
    # the outputs as deployed: the topics SageMaker notifies, the prefixes it reads and writes (with their /)
    inference = next(s for s in result.stacks if s.name == "nf-batch-inference").outputs
    cid = construct.node.id
    assert inference[f"{cid}AsyncSuccessTopicArn"] == out["NotificationConfig"]["SuccessTopic"]
    assert inference[f"{cid}AsyncErrorTopicArn"] == out["NotificationConfig"]["ErrorTopic"]
    assert inference[f"{cid}AsyncOutputPath"] == out["S3OutputPath"] + "/"
    assert inference[f"{cid}AsyncFailurePath"] == out["S3FailurePath"] + "/"
    assert inference[f"{cid}AsyncInputPath"] == out["S3OutputPath"].removesuffix("output") + "input/"
