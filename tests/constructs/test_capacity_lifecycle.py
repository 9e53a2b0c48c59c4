"""CapacityLifecycle's template (one synth): the function's settings reach it through the contract, its schedule and
the Capacity Block events start it, and its role may do what the handler does and no more."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Match, Template

from neuronfleet import Capacity, FleetAlerts, GpuPool, GpuPoolSettings, TrainiumCluster, TrainiumClusterSettings
from neuronfleet.capacity.lifecycle import CapacityLifecycle
from neuronfleet.settings.capacity import CapacityPolicySettings
from neuronfleet_contract.capacity_alert import CAPACITY_BLOCK_ENDING
from tests.conftest import ENV, AzStack, network, new_app, properties

GROUP = f"arn:aws:resource-groups:{ENV.region}:{ENV.account}:group/ultra-blocks"


@pytest.fixture(scope="module")
def template() -> Template:
    app = new_app()
    stack = AzStack(app, "Lifecycle", env=ENV)
    net = network(stack)
    alerts = FleetAlerts(stack, "Alerts", emails=["ml-platform@example.com"])
    cluster = TrainiumCluster(stack, "Pretrain", vpc=net.vpc, subnet=net.training_subnet,
                              settings=TrainiumClusterSettings(instance_type="trn2.48xlarge", count=2,
                                                               capacity=Capacity.capacity_block(
                                                                   resource_group_arn=GROUP,
                                                                   availability_zone="us-east-2b")))
    pool = GpuPool(stack, "Gpu", vpc=net.vpc, vpc_subnets=ec2.SubnetSelection(subnets=net.vpc.private_subnets[:1]),
                   settings=GpuPoolSettings(instance_types=["p5.48xlarge"], max_vcpus=192))
    pool.add_job_definition("FinetuneCuda", job_definition_name="finetune-cuda",   # what a held job may move to
                            image=ecs.ContainerImage.from_registry("public.ecr.aws/example/finetune-cuda:1"))
    CapacityLifecycle(stack, "Lifecycle", fleet="nf-test", clusters=[cluster], topic=alerts.topic, pool=pool,
                      policy=CapacityPolicySettings(max_upfront_fee_usd=20000, max_usd_per_instance_hour=45,
                                                    allow_extension=True, extension_budget_usd=5000,
                                                    fallback_after_minutes=60))
    return Template.from_stack(stack)


def _function(t: Template) -> dict[str, Any]:
    (fn,) = [p for p in properties(t, "AWS::Lambda::Function").values()
             if p.get("Handler") == "capacity_lifecycle.handler.handler"]
    return fn


def test_the_policy_reaches_the_function_through_a_parameter_it_may_only_read(template):
    """Finding 1: the limits were in the function's environment (CAPACITY_POLICY), which
    lambda:UpdateFunctionConfiguration rewrites. Now the stack writes them to an SSM parameter; the environment names
    it, and the role may GetParameter that one parameter and nothing else of SSM."""
    env = _function(template)["Environment"]["Variables"]
    assert "CAPACITY_POLICY" not in env and env["CAPACITY_POLICY_PARAMETER"] == "/neuronfleet/nf-test/capacity-policy"
    ((logical, parameter),) = [(k, p) for k, p in properties(template, "AWS::SSM::Parameter").items()
                               if p.get("Name") == "/neuronfleet/nf-test/capacity-policy"]
    assert parameter["Tier"] == "Standard" and parameter["Type"] == "String"
    policy = json.loads(parameter["Value"])
    assert policy["availability_zones"] == ["us-east-2b"] and policy["fallback_after_minutes"] == 60
    assert policy["max_usd_per_instance_hour"] == "45" and policy["extension_budget_usd"] == "5000"
    assert policy["fleet_extension_budget_usd"] is None   # the fleet-wide budget defaults to one block's
    role = _function(template)["Role"]["Fn::GetAtt"][0]
    statements = [s for p in properties(template, "AWS::IAM::Policy").values() if {"Ref": role} in p["Roles"]
                  for s in p["PolicyDocument"]["Statement"]]
    ssm = [s for s in statements if any(a.startswith("ssm") for a in ([s["Action"]] if isinstance(s["Action"], str)
                                                                       else s["Action"]))]
    assert [s["Action"] for s in ssm] == ["ssm:GetParameter"]
    assert ssm[0]["Resource"]["Fn::Join"][1][-1] == {"Ref": logical}   # Ref: the parameter's name
    assert env["GPU_INSTANCE_TYPE"] == "p5.48xlarge" and env["FLEET"] == "nf-test"
    assert set(json.loads(env["PRICES"])) == {"trn2.48xlarge", "p5.48xlarge"}


def test_a_schedule_and_the_block_events_start_it(template):
    rules = properties(template, "AWS::Events::Rule")
    assert any(r.get("ScheduleExpression") == "rate(10 minutes)" for r in rules.values())
    assert any(set(CAPACITY_BLOCK_ENDING) <= set((r.get("EventPattern") or {}).get("detail-type", []))
               for r in rules.values())


def test_the_role_may_extend_move_and_flag_and_nothing_more(template):
    statements = [s for p in properties(template, "AWS::IAM::Policy").values()
                  for s in p["PolicyDocument"]["Statement"]]
    actions = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert {"ec2:PurchaseCapacityBlockExtension", "ec2:DescribeCapacityBlockExtensionHistory", "batch:SubmitJob",
            "batch:CancelJob", "s3:PutObject", "resource-groups:ListGroupResources"} <= actions
    assert "ec2:PurchaseCapacityBlock" not in actions   # buying a new block is the user's, with the CLI
    (flag,) = [s for s in statements if "neuronfleet/drain/pretrain.json" in json.dumps(s["Resource"])]
    assert flag["Action"] == ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]   # the flag only, not the bucket
    template.has_resource_properties("AWS::IAM::Policy", {"PolicyDocument": {"Statement": Match.array_with([
        Match.object_like({"Action": "resource-groups:ListGroupResources", "Resource": GROUP})])}})


def test_the_policy_fits_a_standard_parameter_as_ssm_documents_it():
    import re

    import botocore.session

    from neuronfleet.capacity.lifecycle import SSM_STANDARD_VALUE_BYTES

    doc = botocore.session.get_session().get_service_model("ssm").operation_model("PutParameter").input_shape
    assert "Standard parameters have a value limit of 4 KB" in re.sub(r"\s+", " ", doc.members["Value"].documentation)
    assert SSM_STANDARD_VALUE_BYTES == 4096


def test_a_fleet_name_that_cannot_name_the_parameter_is_refused():
    from neuronfleet.capacity.lifecycle import _PARAMETER_SAFE

    assert _PARAMETER_SAFE.fullmatch("nf-prod_2.a") and not _PARAMETER_SAFE.fullmatch("nf prod/x")
