"""CloudFormationLimits at the quotas' edges, where a wrong unit or a double count would refuse a stack that deploys
or pass one that does not: the template quota is 1,000,000 bytes (not 1 MiB), user data already in base64 is measured
as what it decodes to, and a nested stack's resources count in the nested stack only."""

from __future__ import annotations

import base64
import json

import aws_cdk as cdk

from neuronfleet.core.limits import resource_problems, template_problems
from neuronfleet.core.rules import CLOUDFORMATION_QUOTAS, EC2_USER_DATA_BYTES
from tests.cdk_support import ENV

QUOTA = CLOUDFORMATION_QUOTAS["template_bytes"]


def _template_of(size: int) -> dict:
    """A template whose compact JSON is exactly ``size`` bytes."""
    template: dict = {"Resources": {"H": {"Type": "AWS::CloudFormation::WaitConditionHandle"}}, "Description": ""}
    base = len(json.dumps(template, separators=(",", ":")))
    template["Description"] = "x" * (size - base)
    assert len(json.dumps(template, separators=(",", ":"))) == size
    return template


def _rules(problems: list) -> list[str]:
    return [p.rule for p in problems]


def test_the_template_quota_is_a_million_bytes_not_a_mebibyte() -> None:
    assert QUOTA == 1_000_000
    assert "template-size" not in _rules(template_problems("s", _template_of(QUOTA)))
    over = template_problems("s", _template_of(QUOTA + 1))
    assert _rules(over) == ["template-size"]
    assert "at most 1,000,000 bytes; it would be 1,000,001" in over[0].allowed


def _launch_template(user_data: object) -> dict:
    return {"Resources": {"LT": {"Type": "AWS::EC2::LaunchTemplate",
                                 "Properties": {"LaunchTemplateData": {"UserData": user_data}}}}}


def test_user_data_already_base64_is_measured_as_what_it_decodes_to() -> None:
    """EC2's 16 KB is of the raw user data: 16,383 raw bytes are 21,844 characters of base64, and fit."""
    fits = base64.b64encode(b"a" * (EC2_USER_DATA_BYTES - 1)).decode()  # 16,383: a multiple of 3, no padding
    assert len(fits) == 21_844
    assert template_problems("s", _launch_template(fits)) == []
    too_big = base64.b64encode(b"a" * (EC2_USER_DATA_BYTES + 1)).decode()
    assert _rules(template_problems("s", _launch_template(too_big))) == ["ec2-user-data-size"]


def test_user_data_under_fn_base64_is_measured_raw() -> None:
    assert template_problems("s", _launch_template({"Fn::Base64": "a" * EC2_USER_DATA_BYTES})) == []
    problems = template_problems("s", _launch_template({"Fn::Base64": "a" * (EC2_USER_DATA_BYTES + 1)}))
    assert _rules(problems) == ["ec2-user-data-size"]
    assert problems[0].value == f"{EC2_USER_DATA_BYTES + 1:,} bytes of user data"


def _handles(scope: cdk.Stack, n: int) -> None:
    for i in range(n):
        cdk.CfnWaitConditionHandle(scope, f"Handle{i}")


def test_a_nested_stacks_resources_count_in_the_nested_stack_only() -> None:
    """A parent of 300 resources with a nested stack of 300 (and its AWS::CloudFormation::Stack in the parent) holds
    301 of its own: neither stack is over 500, though the tree under the parent holds 600."""
    app = cdk.App()
    parent = cdk.Stack(app, "Parent", stack_name="parent", env=ENV)
    _handles(parent, 300)
    _handles(cdk.NestedStack(parent, "Nested"), 300)
    assert resource_problems(app) == []


def test_a_nested_stack_over_the_quota_is_refused_by_its_own_count() -> None:
    app = cdk.App()
    parent = cdk.Stack(app, "Parent", stack_name="parent", env=ENV)
    _handles(parent, 10)
    nested = cdk.NestedStack(parent, "Nested")
    _handles(nested, CLOUDFORMATION_QUOTAS["resources"] + 1)
    problems = resource_problems(app)
    assert [p.measured for p in problems] == [CLOUDFORMATION_QUOTAS["resources"] + 1]
    assert problems[0].value == nested.stack_name
