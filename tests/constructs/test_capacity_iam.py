"""Capacity Block spending bounded in IAM (issue 36, finding 1): the facts the statements rest on, pinned to the
Service Authorization Reference rows in tests/data/iam/, and the lifecycle role's statements per fleet file (named
reservations by ARN; group members only when tagged with the fleet; none when extensions are not allowed)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template

from neuronfleet import Capacity, FleetAlerts, GpuPool, GpuPoolSettings, TrainiumCluster, TrainiumClusterSettings
from neuronfleet.capacity import iam as capacity_iam
from neuronfleet.capacity.lifecycle import CapacityLifecycle
from neuronfleet.settings.capacity import CapacityPolicySettings
from tests.conftest import ENV, AzStack, network, new_app, properties
from tests.sar_rows import IAM_DATA, action_row, cells

ROWS = (IAM_DATA / "list_amazonec2-capacity-rows.html").read_text()
GROUP = f"arn:aws:resource-groups:{ENV.region}:{ENV.account}:group/ultra-blocks"
ACTION = "ec2:PurchaseCapacityBlockExtension"


def _cells(row_id: str) -> list[list[str]]:
    return cells(ROWS, row_id)


def _row(action: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(resource types, condition keys, dependent actions) of an action's rows."""
    return action_row(ROWS, f"amazonec2-{action}")


@pytest.mark.parametrize("fact", [capacity_iam.PURCHASE_EXTENSION, capacity_iam.PURCHASE_BLOCK],
                         ids=lambda f: f.action)
def test_each_purchase_actions_resource_types_and_condition_keys_are_the_references(fact):
    types, keys, dependent = _row(fact.action.split(":")[1])
    assert types == fact.resource_types and keys == fact.condition_keys and dependent == fact.dependent_actions


def test_the_reservation_arn_and_the_tag_key_are_the_references():
    (name, arn, keys) = _cells("amazonec2-capacity-reservation")[:3]
    assert name == ["capacity-reservation"] and "".join(arn[0].split()) == capacity_iam.CAPACITY_RESERVATION_ARN
    assert "aws:ResourceTag/${TagKey}" in keys
    assert _cells("amazonec2-aws_ResourceTag___TagKey_")[1] == ["Filters access by a tag key and value pair of a "
                                                               "resource"]


def test_no_purchase_action_has_a_condition_key_on_money():
    for fact in (capacity_iam.PURCHASE_EXTENSION, capacity_iam.PURCHASE_BLOCK):
        assert fact.action in capacity_iam.NO_PRICE_KEY
        assert not [k for k in fact.condition_keys if re.search(r"Price|Fee|Duration|Count|Amount", k)]


# ------------------------------------------------------------------------------------------------ the role


def _lifecycle(capacity: Capacity, *, allow_extension: bool = True) -> Template:
    app = new_app()
    stack = AzStack(app, "Lifecycle", env=ENV)
    net = network(stack)
    alerts = FleetAlerts(stack, "Alerts", emails=["ml-platform@example.com"])
    cluster = TrainiumCluster(stack, "Pretrain", vpc=net.vpc, subnet=net.training_subnet,
                              settings=TrainiumClusterSettings(instance_type="trn2.48xlarge", count=2,
                                                               capacity=capacity))
    pool = GpuPool(stack, "Gpu", vpc=net.vpc, vpc_subnets=ec2.SubnetSelection(subnets=net.vpc.private_subnets[:1]),
                   settings=GpuPoolSettings(instance_types=["p5.48xlarge"], max_vcpus=192))
    CapacityLifecycle(stack, "Lifecycle", fleet="nf-test", clusters=[cluster], topic=alerts.topic, pool=pool,
                      policy=CapacityPolicySettings(max_upfront_fee_usd=20000, max_usd_per_instance_hour=45,
                                                    allow_extension=allow_extension,
                                                    extension_budget_usd=5000 if allow_extension else 0))
    return Template.from_stack(stack)


def _extensions(t: Template) -> list[dict[str, Any]]:
    statements = [s for p in properties(t, "AWS::IAM::Policy").values() for s in p["PolicyDocument"]["Statement"]]
    return [s for s in statements if ACTION in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])]


def _arn(value: Any) -> str:
    """An ARN as text, its pseudo parameters as ${...}."""
    if isinstance(value, str):
        return value
    return "".join(p if isinstance(p, str) else "${" + p["Ref"].replace("AWS::", "") + "}"
                   for p in value["Fn::Join"][1])


def test_a_group_member_is_extendable_only_when_tagged_with_the_fleet():
    (statement,) = _extensions(_lifecycle(Capacity.capacity_block(resource_group_arn=GROUP,
                                                                  availability_zone="us-east-2b")))
    assert _arn(statement["Resource"]).endswith(":capacity-reservation/*")
    assert statement["Condition"] == {"StringEquals": {"aws:ResourceTag/neuronfleet:fleet": "nf-test"}}


def test_a_named_reservation_is_extendable_by_its_arn_alone():
    (statement,) = _extensions(_lifecycle(Capacity.capacity_block(reservation_id="cr-0123456789abcdef0",
                                                                  availability_zone="us-east-2b")))
    assert _arn(statement["Resource"]).endswith(":capacity-reservation/cr-0123456789abcdef0")
    assert "Condition" not in statement


def test_no_extension_right_when_the_policy_allows_none():
    t = _lifecycle(Capacity.capacity_block(resource_group_arn=GROUP, availability_zone="us-east-2b"),
                   allow_extension=False)
    assert _extensions(t) == []
    assert "capacity-reservation/*" not in json.dumps(properties(t, "AWS::IAM::Policy"))
