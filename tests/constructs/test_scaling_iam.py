"""Scalable targets bounded in IAM (issue 36, finding 8): the facts inference.scaling_iam rests on, pinned to the Service
Authorization Reference rows in tests/data/iam/, and the failover's RegisterScalableTarget bound to its own endpoints'
targets (tagged), SageMaker variants' instance counts, the stack's account and region."""

from __future__ import annotations

import pytest

from neuronfleet.inference import scaling_iam
from tests.sar_rows import IAM_DATA, action_row, cells

ROWS = (IAM_DATA / "list_awsapplicationautoscaling-scalable-target-rows.html").read_text()
PREFIX = "awsapplicationautoscaling-"


@pytest.mark.parametrize("fact", [scaling_iam.REGISTER_SCALABLE_TARGET], ids=lambda f: f.action)
def test_register_scalable_targets_resource_types_and_condition_keys_are_the_references(fact):
    assert action_row(ROWS, PREFIX + fact.action.split(":")[1]) == (
        fact.resource_types, fact.condition_keys, fact.dependent_actions)


def test_describe_scalable_targets_has_no_resource_type():
    found = cells(ROWS, PREFIX + "DescribeScalableTargets")
    assert found[2] == ["Read"] and found[3:] == [[], [], []]
    assert scaling_iam.DESCRIBE_SCALABLE_TARGETS.resource_types == ()


def test_the_scalable_target_arn_and_its_keys_are_the_references():
    (name, arn, keys) = cells(ROWS, PREFIX + "ScalableTarget")[:3]
    assert name == ["ScalableTarget"] and "".join(arn[0].split()) == scaling_iam.SCALABLE_TARGET_ARN
    assert tuple(keys) == scaling_iam.SCALABLE_TARGET_KEYS
    assert cells(ROWS, PREFIX + "aws_ResourceTag___TagKey_")[1] == ["Filters access by the tags associated with the "
                                                                     "resource"]


def test_the_namespace_and_dimension_keys_filter_the_request():
    for key in ("service-namespace", "scalable-dimension"):
        (name, description, kind) = cells(ROWS, PREFIX + f"application-autoscaling_{key}")
        assert name == [f"application-autoscaling:{key}"] and kind == ["String"]
        assert description[0].endswith("that is passed in the request")
        assert f"application-autoscaling:{key}" in scaling_iam.REGISTER_SCALABLE_TARGET.condition_keys


def test_a_statement_without_a_tag_is_refused():
    import aws_cdk as cdk

    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(account="111111111111", region="us-east-2"))
    with pytest.raises(ValueError, match=r"^tag: got \('neuronfleet:failover', ''\); allowed: a tag key and a value"):
        scaling_iam.variant_bounds_statement(stack, tag=(scaling_iam.FAILOVER_TAG, ""))
