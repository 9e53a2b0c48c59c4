"""The tests' CDK helpers: a stack with fixed AZs, a network, one synth per fleet, an App with cdk-nag as a gate.

Kept out of tests/conftest.py so that unit tests never load aws-cdk-lib (and never start Node.js); conftest
forwards these names on first use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks, HIPAASecurityChecks, NIST80053R5Checks, PCIDSS321Checks

from neuronfleet import Fleet, FleetNetwork, NetworkSettings, StaticAzStack
from tests.conftest import ROOT

AZS = ["us-east-2a", "us-east-2b"]
ENV = cdk.Environment(account="111111111111", region="us-east-2")


class AzStack(StaticAzStack):
    """A stack whose AZs are AZS (no context lookup), for construct-level tests."""

    def __init__(self, scope: cdk.App, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, availability_zones=AZS, **kwargs)


def network(stack: cdk.Stack, construct_id: str = "Net", **settings: Any) -> FleetNetwork:
    """A FleetNetwork in AZS (training subnet in us-east-2b, no interface endpoints unless asked)."""
    return FleetNetwork(stack, construct_id, settings=NetworkSettings(
        **{"availability_zones": AZS, "training_az": "us-east-2b", "interface_endpoints": False, **settings}))


def properties(template: Template, kind: str) -> dict[str, dict[str, Any]]:
    """The Properties of every resource of one type, by logical id."""
    return {k: v["Properties"] for k, v in template.find_resources(kind).items()}


class SynthesizedFleet:
    """One in-process synth of a fleet: the app, its stacks by short name, their templates."""

    def __init__(self, fleet: Fleet) -> None:
        from stacks import build_fleet

        self.fleet = fleet
        self.app = new_app(compliance_packs=True)
        self.stacks = {s.stack_name.removeprefix(f"{fleet.name}-"): s for s in build_fleet(self.app, fleet)}
        self.assembly = self.app.synth()
        self._templates: dict[str, Template] = {}

    def validation_report(self) -> dict[str, Any]:
        """CDK's policy validation report: cdk-nag and the built-in CloudFormation validator."""
        return json.loads((Path(self.assembly.directory) / "validation-report.json").read_text())

    def template_json(self, short_name: str) -> dict[str, Any]:
        return self.assembly.get_stack_by_name(self.stacks[short_name].stack_name).template

    def template(self, short_name: str) -> Template:
        if short_name not in self._templates:
            self._templates[short_name] = Template.from_json(self.template_json(short_name))
        return self._templates[short_name]


def new_app(*, compliance_packs: bool = False) -> cdk.App:
    """An App with the reference app's context (cdk.json) and cdk-nag's AwsSolutions pack.

    A finding that is not acknowledged (with a reason) fails synth: every synth in the tests is a gate.
    ``compliance_packs``: cdk-nag's NIST 800-53 R5, HIPAA Security and PCI DSS 3.2.1 packs too (issue 36), for whole
    fleets (:class:`SynthesizedFleet`), whose kept findings the reference app acknowledges (neuronfleet.core.nag);
    measured 2026-11-28 on pilot: 15.7 s -> 15.9 s and 16.2 s -> 16.4 s a synth (about 1 %).
    """
    app = cdk.App(context=_cdk_json_context())
    packs: list[cdk.IPolicyValidationPlugin] = [AwsSolutionsChecks(app, verbose=True)]
    if compliance_packs:
        packs += [NIST80053R5Checks(app, verbose=True), HIPAASecurityChecks(app, verbose=True),
                  PCIDSS321Checks(app, verbose=True)]
    cdk.Validations.of(app).add_plugins(*packs)
    return app


def _cdk_json_context() -> dict[str, object]:
    return json.loads((ROOT / "cdk.json").read_text())["context"]
