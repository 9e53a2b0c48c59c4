"""CapacityLifecycle with EKS Capacity Block node groups only (construct level, one small synth: the node groups are
stand-ins with literal names and ARNs, so the policy can be read exactly): the function's NODE_GROUPS read back
through the contract, and its role may describe and scale exactly those node groups and write exactly their drain
flags; what the construct refuses. The eks fleet's own wiring is tests/constructs/test_eks_lifecycle_fleet.py."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template

from neuronfleet import Capacity, FleetAlerts
from neuronfleet.capacity.lifecycle import LONGEST, CapacityLifecycle, environment_bytes
from neuronfleet.settings.capacity import CapacityPolicySettings
from neuronfleet.settings.eks import NeuronNodegroupSettings
from neuronfleet_contract.capacity_lifecycle import LifecycleConfig, NodegroupRef
from tests.conftest import ENV, AzStack, new_app, properties

GROUP = f"arn:aws:resource-groups:{ENV.region}:{ENV.account}:group/nf-eks-trn2u-blocks"
ULTRA_ARN = f"arn:aws:eks:{ENV.region}:{ENV.account}:nodegroup/nf-eks/UltraNodes/1"
PRETRAIN_ARN = f"arn:aws:eks:{ENV.region}:{ENV.account}:nodegroup/nf-eks/PretrainNodes/2"
POLICY = CapacityPolicySettings(max_upfront_fee_usd=Decimal(0), max_usd_per_instance_hour=Decimal(0))
ULTRA = NeuronNodegroupSettings(name="ultra", instance_type="trn2u.48xlarge", count=8, allow_unlisted_region=True,
                                capacity=Capacity.capacity_block(resource_group_arn=GROUP,
                                                                 availability_zone="us-east-2b"),
                                device_plugin=False, dra=True)
PRETRAIN = NeuronNodegroupSettings(name="pretrain", instance_type="trn2.48xlarge", count=2,
                                   capacity=Capacity.capacity_block(reservation_id="cr-0a1b2c3d4e5f60720",
                                                                    availability_zone="us-east-2b"))


def target(settings: NeuronNodegroupSettings, arn: str, bucket: Any) -> Any:
    """A stand-in for NeuronEksCluster.lifecycle_targets' CapacityBlockNodegroup (the same members)."""
    return SimpleNamespace(name=settings.name, cluster=SimpleNamespace(cluster_name="nf-eks-pretrain"),
                           nodegroup=SimpleNamespace(nodegroup_name=f"{settings.name}-ng", nodegroup_arn=arn,
                                                     node=SimpleNamespace(path=f"Eks/{settings.name}")),
                           settings=settings, drain_bucket=bucket)


@pytest.fixture(scope="module")
def built() -> tuple[CapacityLifecycle, Template]:
    app = new_app()
    stack = AzStack(app, "Follow", env=ENV)
    alerts = FleetAlerts(stack, "Alerts", emails=["ml-platform@example.com"])
    bucket = s3.Bucket.from_bucket_name(stack, "Data", "nf-eks-data")
    lifecycle = CapacityLifecycle(stack, "Lifecycle", fleet="nf-eks", clusters={}, topic=alerts.topic, policy=POLICY,
                                  node_groups=[target(ULTRA, ULTRA_ARN, bucket), target(PRETRAIN, PRETRAIN_ARN, bucket)])
    return lifecycle, Template.from_stack(stack)


def _role_statements(template: Template) -> list[dict[str, Any]]:
    (fn,) = [p for p in properties(template, "AWS::Lambda::Function").values()
             if p.get("Handler") == "capacity_lifecycle.handler.handler"]
    role = fn["Role"]["Fn::GetAtt"][0]
    (policy,) = [p for p in properties(template, "AWS::IAM::Policy").values()
                 if {"Ref": role} in p["Roles"]]
    return list(policy["PolicyDocument"]["Statement"])


def test_the_node_groups_reach_the_function_through_the_contract(built):
    lifecycle, template = built
    (fn,) = [p for p in properties(template, "AWS::Lambda::Function").values()
             if p.get("Handler") == "capacity_lifecycle.handler.handler"]
    env = {k: v if isinstance(v, str) else f"<{k}>" for k, v in fn["Environment"]["Variables"].items()}
    assert isinstance(fn["Environment"]["Variables"]["NODE_GROUPS"], str)   # every member literal here
    config = LifecycleConfig.from_environment(env, read_parameter=lambda name: POLICY.policy().to_json())
    assert config.clusters == () and lifecycle.node_group_names == ("ultra", "pretrain")
    assert config.node_groups == (
        NodegroupRef(name="ultra", cluster="nf-eks-pretrain", nodegroup="ultra-ng", instance_type="trn2u.48xlarge",
                     count=8, drain_bucket="nf-eks-data", ultraserver_size=4, group_arns=(GROUP,)),
        NodegroupRef(name="pretrain", cluster="nf-eks-pretrain", nodegroup="pretrain-ng",
                     instance_type="trn2.48xlarge", count=2, drain_bucket="nf-eks-data",
                     reservation_ids=("cr-0a1b2c3d4e5f60720",)))
    # the follow-only policy buys nothing
    assert config.policy.max_upfront_fee_usd == 0 and not config.policy.allow_extension


def test_the_role_may_scale_exactly_its_node_groups_and_write_exactly_their_flags(built):
    _, template = built
    statements = _role_statements(template)
    eks = [s for s in statements if any(str(a).startswith("eks:") for a in _list(s["Action"]))]
    assert eks == [{"Action": ["eks:DescribeNodegroup", "eks:UpdateNodegroupConfig"], "Effect": "Allow",
                    "Resource": sorted([ULTRA_ARN, PRETRAIN_ARN])}]   # CDK sorts a statement's resources
    # the UltraServer group's blocks are its resource group's members: listing exactly that group
    (listing,) = [s for s in statements if "resource-groups:ListGroupResources" in _list(s["Action"])]
    assert listing == {"Action": "resource-groups:ListGroupResources", "Effect": "Allow", "Resource": GROUP}
    flags = [s for s in statements if "s3:PutObject" in _list(s["Action"])]
    objects = sorted(_text(r) for s in flags for r in _list(s["Resource"]))
    assert objects == ["arn:aws:s3:::nf-eks-data/neuronfleet/drain/pretrain.json",   # ENV pins the partition
                       "arn:aws:s3:::nf-eks-data/neuronfleet/drain/ultra.json"]
    assert all(sorted(s["Action"]) == ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"] for s in flags)
    assert not any("eks:*" in _list(s["Action"]) or (s.get("Resource") == "*" and any(
        str(a).startswith("eks:") for a in _list(s["Action"]))) for s in statements)


def _text(value: Any) -> str:
    """A resource as text, the partition's reference as ``<partition>``."""
    if isinstance(value, str):
        return value
    return "".join("<partition>" if part == {"Ref": "AWS::Partition"} else str(part)
                   for part in value["Fn::Join"][1])


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_what_the_construct_refuses():
    app = new_app()
    stack = AzStack(app, "Refused", env=ENV)
    alerts = FleetAlerts(stack, "Alerts")
    bucket = s3.Bucket.from_bucket_name(stack, "Data", "nf-data")
    odcr = NeuronNodegroupSettings(name="tune", instance_type="trn1.32xlarge", count=2, capacity=Capacity.odcr(
        reservation_id="cr-0a1b2c3d4e5f60721", availability_zone="us-east-2b"))
    with pytest.raises(ValueError, match=r"node_groups\[0\] \(tune\): got capacity 'odcr'; allowed: 'capacity-block'"):
        CapacityLifecycle(stack, "A", fleet="nf", clusters={}, topic=alerts.topic, policy=POLICY,
                          node_groups=[target(odcr, ULTRA_ARN, bucket)])
    twice = target(ULTRA, ULTRA_ARN, bucket)
    with pytest.raises(ValueError, match=r"node_groups\[1\]: got ultra \(Eks/ultra\) twice"):
        CapacityLifecycle(stack, "B", fleet="nf", clusters={}, topic=alerts.topic, policy=POLICY,
                          node_groups=[twice, twice])
    with pytest.raises(ValueError, match=r"clusters: got none; allowed: at least one TrainiumCluster .* or an EKS"):
        CapacityLifecycle(stack, "C", fleet="nf", clusters={}, topic=alerts.topic, policy=POLICY)


def test_a_node_groups_references_are_sized_at_their_longest():
    """Each reference a node group carries (the cluster's and the node group's names, the bucket) counts as the longest
    value AWS allows there, so a fleet's environment never outgrows Lambda's once deployed."""
    token = "${Token[TOKEN.1]}"
    ref = NodegroupRef(name="ultra", cluster=token, nodegroup=token, instance_type="trn2u.48xlarge", count=8,
                       drain_bucket=token, ultraserver_size=4)
    base = LifecycleConfig(fleet="nf", topic_arn="t", ledger_table="l", policy=POLICY.policy(), clusters=(),
                           node_groups=(ref,), policy_parameter="/neuronfleet/nf/capacity-policy")
    literal = LifecycleConfig(fleet="nf", topic_arn="t", ledger_table="l", policy=POLICY.policy(), clusters=(),
                              node_groups=(NodegroupRef(name="ultra", cluster="", nodegroup="", instance_type=
                                                        "trn2u.48xlarge", count=8, drain_bucket="",
                                                        ultraserver_size=4),),
                              policy_parameter="/neuronfleet/nf/capacity-policy")
    assert environment_bytes(base) - environment_bytes(literal) == (
        LONGEST["eks_cluster"] + LONGEST["nodegroup"] + LONGEST["drain_bucket"])
    assert (LONGEST["eks_cluster"], LONGEST["nodegroup"]) == (100, 256)
