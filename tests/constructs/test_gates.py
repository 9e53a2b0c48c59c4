"""Gates users trust: cdk-nag's AwsSolutions pack and cfn-lint on every synthesised stack.

Every synth in the tests runs with cdk-nag as a CDK validation plugin (tests/conftest.py:new_app), so an
unacknowledged finding fails synth itself; these tests show the reports are clean and the gate is live.
"""

from __future__ import annotations

import json
from functools import cache

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from cfnlint.api import ManualArgs, lint
from cfnlint.config import ConfigMixIn
from cfnlint.rules import RulesCollection
from cfnlint.runner import Runner

from neuronfleet.inference.endpoint import CKV_MODEL_NETWORK_ISOLATION, HUB_MODEL_NETWORK
from tests.conftest import BUILTIN_VALIDATOR, EXAMPLE_FLEETS, new_app

FLEETS = EXAMPLE_FLEETS


@pytest.mark.parametrize("name", FLEETS)
def test_validation_report_is_clean_and_every_acknowledgement_has_a_reason(synth_fleet, name: str) -> None:
    report = synth_fleet(name).validation_report()
    # CDK's built-in validator ran on the fleet: the CLI's end-to-end tests rely on it (CLI_NO_REVALIDATION)
    assert BUILTIN_VALIDATOR in {p["pluginName"] for p in report["pluginReports"]}, report
    for plugin in report["pluginReports"]:
        assert plugin["conclusion"] == "success", plugin["pluginName"]
        assert plugin["violations"] == [], plugin["pluginName"]
        for ack in plugin.get("suppressedViolations", []):
            assert len(ack["reason"]) >= 20, ack


def test_the_nag_gate_is_live() -> None:
    """A security group open to the world must stop synth with AwsSolutions-EC23."""
    app = new_app()
    stack = cdk.Stack(app, "Canary", env=cdk.Environment(account="111111111111", region="us-east-2"))
    vpc = ec2.Vpc(stack, "Vpc", nat_gateways=0, restrict_default_security_group=False,
                  availability_zones=["us-east-2a"])
    sg = ec2.SecurityGroup(stack, "Open", vpc=vpc)
    sg.add_ingress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(22))
    with pytest.raises(RuntimeError, match=r"ValidationFailed(.|\n)*AwsSolutions-EC23"):
        app.synth()


@cache
def cfn_lint_rules(region: str) -> RulesCollection:
    """cfn-lint's rules, loaded once per process (0.4 s of CPU each time ``lint`` loads them itself) and shared by
    every template, as cfn-lint's own command line does for the templates it is given (cfnlint/runner/cli.py: one
    ``Runner`` and its ``rules`` for all of them); ``lint`` takes them as its ``rules`` argument."""
    return Runner(ConfigMixIn(regions=[region])).rules


@pytest.mark.parametrize("name", FLEETS)
def test_cfn_lint_finds_nothing(synth_fleet, name: str) -> None:
    fleet = synth_fleet(name)
    assert fleet.stacks, name
    for short, stack in fleet.stacks.items():
        template = fleet.template_json(short)  # each stack in its own region (a CUR 2.0 export is in us-east-1)
        matches = lint(json.dumps(template), rules=cfn_lint_rules(stack.region), config=ManualArgs(regions=[stack.region]))
        assert [f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})" for m in matches] == []


@pytest.mark.parametrize("name", FLEETS)
def test_models_from_s3_run_isolated_and_hub_models_say_why_not(synth_fleet, name: str) -> None:
    """checkov CKV_AWS_370 (SageMaker model network isolation): a model from S3 (ModelDataUrl) has
    EnableNetworkIsolation; a hub model, which downloads itself at start, has not, and carries checkov's skip metadata
    with the reason. Nothing else is skipped."""
    fleet = synth_fleet(name)
    seen = set()
    for short in fleet.stacks:
        for model_id, model in fleet.template(short).find_resources("AWS::SageMaker::Model").items():
            props, skip = model["Properties"], model.get("Metadata", {}).get("checkov", {}).get("skip")
            from_s3 = bool({"ModelDataUrl", "ModelDataSource"} & set(props["PrimaryContainer"]))  # a copy of a hub model too
            seen.add(from_s3)
            assert props["EnableNetworkIsolation"] is from_s3, model_id
            if from_s3:
                assert skip is None, model_id
            else:
                assert skip == [{"id": CKV_MODEL_NETWORK_ISOLATION, "comment": HUB_MODEL_NETWORK}], model_id
    if name == "prod":
        assert seen == {True, False}  # both kinds are exercised
