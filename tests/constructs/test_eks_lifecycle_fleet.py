"""config/eks.yaml's one synth (the session fixture): every Capacity Block node group of every EKS stack has a
lifecycle. The capacity stack exists though the fleet file has no capacity_policy (the follow-only policy: nothing
bought); its function carries exactly the Capacity Block node groups (pretrain, ultra; not tune on its ODCR nor
serve On-Demand), each by its own node group's name, and its role may describe and scale exactly those node groups'
ARNs and write exactly their drain flags in the EKS stack's data bucket."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import properties


@pytest.fixture(scope="module")
def eks(synth_fleet) -> Any:
    return synth_fleet("eks")


def _function(template: Any) -> dict[str, Any]:
    (fn,) = [p for p in properties(template, "AWS::Lambda::Function").values()
             if p.get("Handler") == "capacity_lifecycle.handler.handler"]
    return fn


def _imports(value: Any) -> list[str]:
    """The export names ``value`` imports, in order."""
    if isinstance(value, dict):
        if "Fn::ImportValue" in value:
            return [str(value["Fn::ImportValue"])]
        return [name for v in value.values() for name in _imports(v)]
    if isinstance(value, list):
        return [name for v in value for name in _imports(v)]
    return []


def _exported(eks: Any, stack: str, output: str) -> Any:
    """What the export named by the Outputs entry ``output`` of ``stack`` holds."""
    return eks.template_json(stack)["Outputs"][output]["Value"]


def _source(eks: Any, name: str) -> Any:
    """The value behind an import of export ``name`` (``<stack>:<output>``)."""
    stack, output = name.split(":", 1)
    return _exported(eks, stack.removeprefix("nf-eks-"), output)


def test_every_capacity_block_node_group_has_a_lifecycle(eks):
    settings = eks.stacks["train-pretrain"].cluster.settings
    blocks = sorted(g.name for g in settings.node_groups if g.capacity.type == "capacity-block")
    assert blocks == ["pretrain", "ultra"]
    targets = [t for name, s in eks.stacks.items() if name.startswith("train-") for t in s.lifecycle_targets]
    assert sorted(t.name for t in targets) == blocks
    lifecycle = eks.stacks["capacity"].lifecycle
    assert sorted(lifecycle.node_group_names) == blocks and lifecycle.cluster_names == ()
    assert len(lifecycle.functions) == 1


def test_the_function_names_each_node_group_by_its_own_name(eks):
    env = _function(eks.template("capacity"))["Environment"]["Variables"]
    groups = env["NODE_GROUPS"]
    names = [json.dumps(_source(eks, n)) for n in _imports(groups)]
    # the EKS cluster's name, then the node group's NodegroupName, and the data bucket, per node group
    nodegroups = [n for n in names if "NodegroupName" in n]
    assert len(nodegroups) == 2
    assert any("EksPretrainNodes" in n for n in nodegroups) and any("EksUltraNodes" in n for n in nodegroups)
    text = json.dumps(groups)
    assert '\\"count\\":2' in text and '\\"count\\":4' in text and '\\"ultraserver_size\\":4' in text
    assert "cr-0a1b2c3d4e5f60720" in text and "group/nf-eks-trn2u-blocks" in text
    assert env["CLUSTERS"] == "[]"


def test_the_policy_is_follow_only(eks):
    (parameter,) = [p for p in properties(eks.template("capacity"), "AWS::SSM::Parameter").values()
                    if p.get("Name") == "/neuronfleet/nf-eks/capacity-policy"]
    policy = json.loads(parameter["Value"])
    assert policy["max_upfront_fee_usd"] == "0" and policy["allow_extension"] is False


def test_the_role_may_scale_exactly_the_capacity_block_node_groups(eks):
    template = eks.template("capacity")
    role = _function(template)["Role"]["Fn::GetAtt"][0]
    statements = [s for p in properties(template, "AWS::IAM::Policy").values() if {"Ref": role} in p["Roles"]
                  for s in p["PolicyDocument"]["Statement"]]
    eks_statements = [s for s in statements if any(str(a).startswith("eks:") for a in _list(s["Action"]))]
    (statement,) = eks_statements
    assert statement["Action"] == ["eks:DescribeNodegroup", "eks:UpdateNodegroupConfig"]
    arns = [_source(eks, n) for n in _imports(statement["Resource"])]
    assert len(_list(statement["Resource"])) == 2
    pretrain, ultra = sorted(a["Fn::GetAtt"][0] for a in arns)
    assert pretrain.startswith("EksPretrainNodes") and ultra.startswith("EksUltraNodes")
    assert all(a["Fn::GetAtt"][1] == "Arn" for a in arns)
    (listing,) = [s for s in statements if "resource-groups:ListGroupResources" in _list(s["Action"])]
    assert listing["Resource"] == "arn:aws:resource-groups:us-east-2:444444444444:group/nf-eks-trn2u-blocks"
    flags = [s for s in statements if "s3:PutObject" in _list(s["Action"])]
    objects = json.dumps([s["Resource"] for s in flags])
    assert "/neuronfleet/drain/pretrain.json" in objects and "/neuronfleet/drain/ultra.json" in objects
    assert "/neuronfleet/drain/tune.json" not in objects and "*" not in objects


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
