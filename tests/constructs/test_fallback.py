"""GPU pool, endpoint failover and capacity alerts, as synthesised from config/prod.yaml."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from neuronfleet import (
    CATALOG,
    EndpointFailover,
    EndpointSettings,
    FleetNetwork,
    GpuPool,
    GpuPoolSettings,
    InvalidSettings,
    NeuronEndpoint,
    StaticAzStack,
)
from neuronfleet.functions import RUNTIME, lambda_source_dir
from neuronfleet.settings import GPU_ECS_AMI_PARAMETER
from tests.conftest import ENV, AzStack, network, properties


@pytest.fixture(scope="module")
def prod(synth_fleet):
    return synth_fleet("prod")


@pytest.fixture(scope="module")
def fallback(prod) -> Template:
    return prod.template("fallback")


def test_one_compute_environment_per_gpu_type_in_priority_order_idle_at_zero(prod, fallback) -> None:
    envs = properties(fallback, "AWS::Batch::ComputeEnvironment")
    by_type = {e["ComputeResources"]["InstanceTypes"][0]: (k, e) for k, e in envs.items()}
    assert set(by_type) == {"p5.48xlarge", "p5en.48xlarge", "g6e.48xlarge"}
    for _, env in by_type.values():
        res = env["ComputeResources"]
        assert (res["MinvCpus"], res["MaxvCpus"]) == (0, 1536)
        assert len(res["Subnets"]) == 3 and "SecurityGroupIds" not in res
    (queue,) = properties(fallback, "AWS::Batch::JobQueue").values()
    order = sorted(queue["ComputeEnvironmentOrder"], key=lambda o: o["Order"])
    got = [o["ComputeEnvironment"]["Fn::GetAtt"][0] for o in order]
    assert got == [by_type[t][0] for t in prod.fleet.fallback.instance_types]


@pytest.mark.parametrize(("instance_type", "efa"), [("p5.48xlarge", 32), ("p5en.48xlarge", 16), ("g6e.48xlarge", 4)])
def test_every_efa_card_attached_on_gpu_types(fallback, instance_type: str, efa: int) -> None:
    (data,) = [lt["LaunchTemplateData"] for lt in properties(fallback, "AWS::EC2::LaunchTemplate").values()
               if lt["LaunchTemplateData"]["InstanceType"] == instance_type]
    interfaces = data["NetworkInterfaces"]
    assert len(interfaces) == efa == CATALOG.get(instance_type).efa_interfaces
    assert [(i["NetworkCardIndex"], i["DeviceIndex"], i["InterfaceType"]) for i in interfaces] == \
        [(0, 0, "efa")] + [(c, 1, "efa-only") for c in range(1, efa)]
    assert all("SubnetId" not in i for i in interfaces)  # AWS Batch takes subnets from the compute environment
    assert data["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 2}
    assert data["BlockDeviceMappings"][0]["Ebs"]["Encrypted"] is True
    tags = {(t["Key"], t["Value"]) for spec in data["TagSpecifications"] for t in spec["Tags"]}
    assert ("neuronfleet:accelerator-family", "gpu") in tags and ("neuronfleet:fleet", "nf-prod") in tags


def test_gpu_ami_from_ssm_and_efa_group_rules(fallback) -> None:
    params = fallback.to_json()["Parameters"]
    assert any(p.get("Default") == GPU_ECS_AMI_PARAMETER for p in params.values())
    for ingress in properties(fallback, "AWS::EC2::SecurityGroupIngress").values():
        assert "CidrIp" not in ingress and ingress["SourceSecurityGroupId"] == ingress["GroupId"]


def test_routing_parameter_names_cuda_only_workloads(fallback) -> None:
    (param,) = properties(fallback, "AWS::SSM::Parameter").values()
    text = json.dumps(param["Value"])
    assert "custom-cuda-kernels" in text and "flash-attn-v3-eval" in text and "gpu_queue_arn" in text


def _function(t: Template, handler: str) -> dict[str, Any]:
    (fn,) = [f for f in properties(t, "AWS::Lambda::Function").values() if f["Handler"] == handler]
    return fn


def test_failover_function_and_its_least_privilege(prod) -> None:
    t = prod.template("inference")
    fn = _function(t, "failover.handler.handler")
    assert fn["Runtime"] == RUNTIME.name and "DeadLetterConfig" in fn
    assert "Layers" in fn and "AWSLambdaPowertoolsPythonV3" in json.dumps(fn["Layers"])
    watched = json.dumps(fn["Environment"]["Variables"]["FAILOVER_ENDPOINTS"])
    chat = prod.stacks["inference"].endpoints["Chat"]
    assert chat.endpoint_name in watched and prod.stacks["inference"].endpoints["Embed"].endpoint_name not in watched
    statements = [s for p in properties(t, "AWS::IAM::Policy").values() for s in p["PolicyDocument"]["Statement"]
                  if "sagemaker:UpdateEndpointWeightsAndCapacities" in json.dumps(s["Action"])]
    (statement,) = statements
    resource = json.dumps(statement["Resource"])
    assert f"endpoint/{chat.endpoint_name}" in resource and "*" not in resource.replace('"*"', "")
    t.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(5 minutes)"})
    t.has_resource_properties("AWS::Events::Rule", {"EventPattern": {
        "source": ["aws.cloudwatch"], "detail-type": ["CloudWatch Alarm State Change"],
        "resources": Match.any_value()}})


def test_capacity_alerts_watch_both_training_clusters(prod, fallback) -> None:
    """(The routes themselves are tested in test_alert_routes.py.)"""
    fn = _function(fallback, "capacity_alert.handler.handler")
    pool = json.dumps(fn["Environment"]["Variables"]["GPU_POOL"])
    assert "p5.48xlarge" in pool and "H100" in pool
    patterns = [r["EventPattern"] for r in properties(fallback, "AWS::Events::Rule").values() if "EventPattern" in r]
    (blocked,) = [p for p in patterns if p["detail-type"] == ["Batch Job Queue Blocked"]]
    assert len(blocked["detail"]["jobQueue"]) == len(prod.fleet.training_clusters)


def test_lambda_asset_holds_the_handlers() -> None:
    from pathlib import Path

    root = Path(lambda_source_dir())
    assert (root / "failover" / "handler.py").is_file() and (root / "capacity_alert" / "handler.py").is_file()


def _net() -> tuple[cdk.Stack, FleetNetwork]:
    stack = AzStack(cdk.App(), "S", env=ENV)
    return stack, network(stack)


def test_failover_refuses_an_endpoint_without_a_live_gpu_variant() -> None:
    stack, net = _net()
    endpoint = NeuronEndpoint(stack, "Solo", vpc=net.vpc,
                              settings=EndpointSettings(instance_type="ml.inf2.xlarge", hf_model_id="o/m"))
    topic = cdk.aws_sns.Topic(stack, "T")
    with pytest.raises(ValueError, match=r"without a live 'gpu' variant cannot fail over: Solo"):
        EndpointFailover(stack, "F", endpoints=[endpoint], topic=topic)


@pytest.mark.parametrize(("props", "message"), [
    ({"instance_types": ["trn2.48xlarge"]}, "instance_types[0]: got 'trn2.48xlarge'; allowed: 'p5.48xlarge'"),
    ({"instance_types": []}, "instance_types: got []; allowed: at least 1 entry"),
    ({"instance_types": ["p5.48xlarge"], "max_vcpus": 96}, "max_vcpus: got 96; allowed: at least one p5.48xlarge "
                                                           "(192 vCPUs)"),
])
def test_gpu_pool_bad_input(props, message) -> None:
    stack, net = _net()
    with pytest.raises(InvalidSettings) as info:
        GpuPool(stack, "P", vpc=net.vpc, subnets=net.vpc.private_subnets, settings=GpuPoolSettings(**props))
    assert any(str(p).startswith(message) for p in info.value.problems), info.value.problems


def test_gpu_pool_checks_offerings_in_its_region() -> None:
    azs = ["ap-east-1a", "ap-east-1b"]
    stack = StaticAzStack(cdk.App(), "S", availability_zones=azs, env=cdk.Environment(region="ap-east-1"))
    net = network(stack, availability_zones=azs, training_az="ap-east-1b")
    with pytest.raises(InvalidSettings, match=r"instance_types\[0\]: got 'p5.48xlarge'; allowed: a type offered in "
                                              r"ap-east-1 \(AWS's offerings list it in: ap-northeast-1"):
        GpuPool(stack, "P", vpc=net.vpc, subnets=net.vpc.private_subnets, settings=GpuPoolSettings())
