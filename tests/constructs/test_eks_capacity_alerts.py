"""NodegroupCapacityAlerts on config/eks.yaml's one synth (the session fixture): one function on a 5-minute schedule,
told the cluster and exactly its Neuron node groups, that may describe exactly those node groups (no wildcard), publish
to the fleet's topic and write its own ledger."""

from __future__ import annotations

import json
from typing import Any

import pytest

from neuronfleet_contract.nodegroup_capacity import SCAN_MINUTES, NodegroupAlertConfig


@pytest.fixture(scope="module")
def eks(synth_fleet) -> Any:
    return synth_fleet("eks")


def _resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r["Properties"] for k, r in template["Resources"].items() if r["Type"] == kind}


def test_node_groups_described_by_their_arns_on_a_schedule(eks) -> None:
    template = eks.template_json("train-pretrain")
    neuron_groups = {k for k, p in _resources(template, "AWS::EKS::Nodegroup").items()
                     if "neuronfleet/node-group" in p.get("Labels", {})}
    assert len(neuron_groups) == 4  # pretrain, ultra, tune, serve: not the system nodes
    [(fn_id, fn)] = [(k, p) for k, p in _resources(template, "AWS::Lambda::Function").items()
                     if p.get("Handler") == "capacity_alert.nodegroup_handler.handler"]
    env = fn["Environment"]["Variables"]
    names = [part["Fn::GetAtt"] for part in env["EKS_NODE_GROUPS"]["Fn::Join"][1] if isinstance(part, dict)]
    assert sorted(n[0] for n in names) == sorted(neuron_groups) and {n[1] for n in names} == {"NodegroupName"}
    assert env["EKS_CLUSTER_NAME"] == {"Ref": next(iter(_resources(template, "AWS::EKS::Cluster")))}
    assert "GPU_POOL" not in env  # the eks fleet has no fallback pool: the messages say so
    statements = [s for p in _resources(template, "AWS::IAM::Policy").values()
                  for s in p["PolicyDocument"]["Statement"] if "eks:DescribeNodegroup" in json.dumps(s["Action"])]
    [describe] = statements
    assert describe["Action"] == "eks:DescribeNodegroup"
    assert sorted(r["Fn::GetAtt"][0] for r in describe["Resource"]) == sorted(neuron_groups)
    assert all(r["Fn::GetAtt"][1] == "Arn" for r in describe["Resource"])
    [rule] = [p for p in _resources(template, "AWS::Events::Rule").values()
              if any(t["Arn"] == {"Fn::GetAtt": [fn_id, "Arn"]} for t in p.get("Targets", []))]
    assert rule["ScheduleExpression"] == f"rate({SCAN_MINUTES} minutes)"
    assert rule["Targets"][0]["DeadLetterConfig"]  # what EventBridge cannot deliver is kept


def test_replacements_are_read_from_the_activities_and_nothing_else_of_auto_scaling(eks) -> None:
    """The replacement announcement's one extra right: DescribeScalingActivities, which takes no resource (the
    Service Authorization Reference row in tests/data/eks); no other Auto Scaling action anywhere in the stack."""
    template = eks.template_json("train-pretrain")
    statements = [s for p in _resources(template, "AWS::IAM::Policy").values()
                  for s in p["PolicyDocument"]["Statement"] if "autoscaling:" in json.dumps(s["Action"])]
    [read] = statements
    assert (read["Action"], read["Resource"], read["Effect"]) == ("autoscaling:DescribeScalingActivities", "*", "Allow")


def test_the_environment_reads_back(eks) -> None:
    """The synthesized environment, tokens replaced by names, is one the function accepts."""
    template = eks.template_json("train-pretrain")
    [fn] = [p for p in _resources(template, "AWS::Lambda::Function").values()
            if p.get("Handler") == "capacity_alert.nodegroup_handler.handler"]
    env = {k: v if isinstance(v, str) else "x" for k, v in fn["Environment"]["Variables"].items()}
    env["EKS_NODE_GROUPS"] = json.dumps(["pretrain-ng", "ultra-ng"])
    s = NodegroupAlertConfig.from_environment(env)
    assert s.node_groups == ("pretrain-ng", "ultra-ng") and s.pool is None


def test_a_fleet_with_the_gpu_pool_names_it_in_the_node_group_alerts() -> None:
    """The fallback stack is built before the EKS stacks, so their capacity alerts can say what the pool takes."""
    import yaml

    from neuronfleet import parse_fleet
    from stacks import build_fleet
    from tests.conftest import ROOT, new_app

    doc = yaml.safe_load((ROOT / "config" / "eks.yaml").read_text())
    doc["fallback"] = {"enabled": True}
    stacks = {s.stack_name: s for s in build_fleet(new_app(), parse_fleet(doc, source="eks+fallback"))}
    eks_stack = stacks[f"{doc['name']}-train-pretrain"]
    from aws_cdk.assertions import Template

    [fn] = [p for p in _resources(Template.from_stack(eks_stack).to_json(), "AWS::Lambda::Function").values()
            if p.get("Handler") == "capacity_alert.nodegroup_handler.handler"]
    env = fn["Environment"]["Variables"]
    assert "GPU_POOL" in env and "queue_arn" in json.dumps(env["GPU_POOL"])
    assert stacks[f"{doc['name']}-fallback"] in eks_stack.dependencies
