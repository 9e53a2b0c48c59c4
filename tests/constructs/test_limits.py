"""CloudFormationLimits: the library's check of what CloudFormation, Lambda and IAM would refuse, for any app."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_

from neuronfleet import CloudFormationLimits, FleetConfigError, parse_fleet
from neuronfleet.core.limits import LIMITS_PLUGIN, RULES
from neuronfleet.core.rules import CLOUDFORMATION_QUOTAS, LAMBDA_ENVIRONMENT_BYTES
from stacks import build_fleet
from stacks.limits import fleet_problems
from tests.cdk_support import ENV, _cdk_json_context
from tests.constructs.test_scale import DEV

OVER_FULL = f"stacks: got 'big-one'; allowed: at most {CLOUDFORMATION_QUOTAS['resources']} resources per stack; " \
            f"it would hold {CLOUDFORMATION_QUOTAS['resources'] + 1}"
"""The refusal of a stack named big-one with one resource too many, in the kit's field/value/allowed wording."""

OUTSIDE_APP = """\
import aws_cdk as cdk
from neuronfleet import CloudFormationLimits, FleetConfigError, parse_fleet

app = cdk.App()
CloudFormationLimits(app)
stack = cdk.Stack(app, "Big", stack_name="big-one",
                  env=cdk.Environment(account="111111111111", region="us-east-2"))
for i in range({count}):
    cdk.CfnWaitConditionHandle(stack, f"Handle{{i}}")
app.synth()
"""


def over_full(app: cdk.App, name: str = "big-one") -> cdk.Stack:
    stack = cdk.Stack(app, "Big", stack_name=name, env=ENV)
    for i in range(CLOUDFORMATION_QUOTAS["resources"] + 1):
        cdk.CfnWaitConditionHandle(stack, f"Handle{i}")
    return stack


def test_an_app_outside_the_repo_gets_the_refusal_in_one_line(tmp_path: Path) -> None:
    """Its own folder and app.py (the repo is not on its path: the installed neuronfleet and aws-cdk-lib only), run the
    way the CLI runs it: nothing is written, and the refusal names the field, the value and what is allowed."""
    (tmp_path / "app.py").write_text(OUTSIDE_APP.format(count=CLOUDFORMATION_QUOTAS["resources"] + 1))
    out = tmp_path / "cdk.out"
    env = {**os.environ, "CDK_OUTDIR": str(out), "CDK_CONTEXT_JSON": json.dumps(_cdk_json_context())}
    result = subprocess.run([sys.executable, "app.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert OVER_FULL in result.stderr, result.stderr[-2000:]
    assert not [p for p in out.rglob("*.template.json")]  # refused before any template is written


def test_the_reference_app_refuses_an_over_full_stack_the_same_way() -> None:
    """The reference app's refusal (app.py: FleetConfigError from stacks.limits.fleet_problems) of a stack that is
    not an inference partition is the library's, word for word."""
    fleet = parse_fleet(DEV, source="test")
    app = cdk.App(context=_cdk_json_context())
    limits = CloudFormationLimits(app)
    stacks = [*build_fleet(app, fleet), over_full(app)]
    with pytest.raises(RuntimeError, match="Validation failed"):
        app.synth()
    (problem,) = fleet_problems(fleet, stacks, limits.problems)
    assert str(problem) == OVER_FULL
    assert str(FleetConfigError(fleet.name, [problem])).endswith(OVER_FULL)


def _function_stack(app: cdk.App, environment: dict[str, str]) -> cdk.Stack:
    stack = cdk.Stack(app, "Fn", stack_name="fn-stack", env=ENV)
    lambda_.CfnFunction(stack, "Report", role="arn:aws:iam::111111111111:role/r", runtime="python3.13",
                        handler="index.handler", code=lambda_.CfnFunction.CodeProperty(zip_file="def handler(e, c): 0"),
                        environment=lambda_.CfnFunction.EnvironmentProperty(variables=environment))
    return stack


def test_a_template_over_a_quota_fails_cdks_validation_with_the_field_value_and_allowed() -> None:
    app = cdk.App(context=_cdk_json_context())
    limits = CloudFormationLimits(app)
    _function_stack(app, {"MODELS": "x" * LAMBDA_ENVIRONMENT_BYTES})
    with pytest.raises(RuntimeError, match=r"ValidationFailed: ERROR fn-stack\.Report: got '4,102 bytes of "
                                           r"environment'; allowed: at most 4,096 bytes") as raised:
        app.synth()
    assert f"Acknowledge with '{LIMITS_PLUGIN}::lambda-environment-size'" in str(raised.value)
    (problem,) = limits.problems
    assert problem.rule == "lambda-environment-size" and problem.logical_id == "Report"
    assert str(problem).startswith(f"fn-stack.Report: got '{LAMBDA_ENVIRONMENT_BYTES + 6:,} bytes of environment'; "
                                   f"allowed: at most {LAMBDA_ENVIRONMENT_BYTES:,} bytes (Lambda's quota); the "
                                   "largest variables: MODELS (4,096)")


def test_a_template_finding_can_be_acknowledged_by_its_rule_and_a_fitting_one_passes() -> None:
    app = cdk.App(context=_cdk_json_context())
    limits = CloudFormationLimits(app)
    stack = _function_stack(app, {"MODELS": "x" * LAMBDA_ENVIRONMENT_BYTES})
    cdk.Validations.of(stack).acknowledge(cdk.Acknowledgment(
        id=f"{LIMITS_PLUGIN}::lambda-environment-size", reason="test: acknowledged on purpose"))
    app.synth()
    fits = cdk.App(context=_cdk_json_context())
    fitting = CloudFormationLimits(fits)
    _function_stack(fits, {"MODELS": "x" * (LAMBDA_ENVIRONMENT_BYTES - len("MODELS"))})
    fits.synth()
    assert fitting.problems == [] and set(RULES) == {"resources-per-stack", "template-size", "lambda-environment-size",
                                                     "role-inline-policy-size", "ec2-user-data-size"}
    assert limits.problems[0].rule == "lambda-environment-size"  # found, and acknowledged

