"""The command line loads only what a command needs (issue 42: "the CLI answers at once").

Each command scripts/bench_cli.py times runs here in a fresh interpreter, and the test reads what it loaded:
``neuronfleet --help`` loads no command module, no pydantic (the fleet file's models), no boto3 and no aws-cdk-lib;
a command that reads a fleet file loads pydantic but no boto3 or aws-cdk-lib; the others no pydantic either.
``neuronfleet`` itself loads only its error classes; every public name still imports from it and ``dir`` lists it.
The figures (CPU seconds) are scripts/bench_cli.py's, not a test's: a timed test would fail on a loaded machine.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import neuronfleet
from neuronfleet.cli.main import COMMANDS
from scripts.bench_cli import commands, write_inputs
from tests.conftest import ROOT

PACKAGE = ROOT / "constructs" / "neuronfleet"
CDK = ("aws_cdk", "jsii", "constructs", "cdk_nag")
"""aws-cdk-lib and what it starts (jsii starts Node.js)."""
AWS = ("boto3", "botocore")
PYDANTIC = ("pydantic", "pydantic_core")
NOT_CDK = (".facts.catalog", ".fleetfile.schema", ".settings")
"""The modules of neuronfleet's lazy names that import no aws-cdk-lib (the rest are the constructs)."""

PROBE = """
import json, sys
from neuronfleet.cli.main import main
out, args = sys.argv[1], sys.argv[2:]
code = main(args)
with open(out, "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""


def child_env() -> dict[str, str]:
    """As scripts/bench_cli.py runs the commands: no price cache of the user's, no schema descriptions asked for."""
    env = {k: v for k, v in os.environ.items() if k != "NEURONFLEET_SCHEMA_DOCS"}
    return {**env, "AWS_EC2_METADATA_DISABLED": "true"}


def loaded_by(args: list[str], tmp_path: Path) -> set[str]:
    """The modules a fresh interpreter holds after ``neuronfleet ARGS`` (which must exit 0)."""
    out = tmp_path / "modules.json"
    env = {**child_env(), "NEURONFLEET_PRICE_CACHE": str(tmp_path / "price-cache")}
    result = subprocess.run([sys.executable, "-c", PROBE, str(out), *args], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["code"] == 0, (args, result.stdout[-1000:], result.stderr[-1000:])
    return set(doc["modules"])


def tops(modules: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in roots)


def bench_commands(tmp_path: Path) -> dict[str, list[str]]:
    return dict(commands(write_inputs(tmp_path), tmp_path))


BENCHED = ["--help", "validate -c config/prod.yaml", "estimate gpu.csv", "estimate gpu.csv -c config/prod.yaml",
           "judge prompts prompts.jsonl", "report report.json", "report --help"]


def test_the_benchmark_times_the_commands_checked_here(tmp_path: Path) -> None:
    assert list(bench_commands(tmp_path)) == BENCHED


def test_help_loads_no_command_module_no_pydantic_no_boto3_no_aws_cdk(tmp_path: Path) -> None:
    loaded = loaded_by(["--help"], tmp_path)
    assert tops(loaded, CDK + AWS + PYDANTIC) == []
    command_modules = sorted({target.partition(":")[0] for target in COMMANDS.values()})
    assert [m for m in command_modules if m in loaded] == []
    assert "neuronfleet.settings" not in loaded and "neuronfleet.fleetfile.schema" not in loaded


@pytest.mark.parametrize("name", [n for n in BENCHED if n != "--help"])
def test_each_benchmarked_command_loads_only_what_it_needs(name: str, tmp_path: Path) -> None:
    loaded = loaded_by(bench_commands(tmp_path)[name], tmp_path)
    assert tops(loaded, CDK + AWS) == [], name
    if "-c config/prod.yaml" in name:  # reads a fleet file: the settings' models, and nothing more
        assert "neuronfleet.fleetfile.schema" in loaded and "pydantic" in loaded
    else:
        assert tops(loaded, PYDANTIC) == [], name


def test_importing_neuronfleet_loads_only_its_error_classes() -> None:
    code = ("import sys, json, neuronfleet; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('neuronfleet', 'pydantic', 'aws_cdk', 'jsii', 'boto3'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child_env(), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["neuronfleet", "neuronfleet.core", "neuronfleet.core.problems"]


def lazy_names() -> dict[str, str]:
    return dict(neuronfleet._LAZY)


def test_every_public_name_is_loaded_now_or_on_first_use_and_dir_lists_it() -> None:
    eager = {"FleetConfigError", "InvalidSettings", "Problem"}
    assert set(neuronfleet.__all__) == eager | set(lazy_names())
    assert set(neuronfleet.__all__) <= set(dir(neuronfleet))
    assert {"__version__", "_LAZY"} <= set(dir(neuronfleet))
    with pytest.raises(AttributeError, match="has no attribute 'Fleeet'"):
        _ = neuronfleet.Fleeet


def defined_in(path: Path) -> set[str]:
    """The names a module's source binds at top level (classes, functions, assignments, imports)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names |= {a.asname or a.name for a in node.names}
    return names


def test_every_lazy_name_is_defined_where_it_points() -> None:
    """Read from the sources (the constructs' modules import aws-cdk-lib, which a unit test does not load)."""
    wrong = {}
    for name, module in lazy_names().items():
        path = PACKAGE.joinpath(*module.lstrip(".").split("."))
        source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        if name not in defined_in(source):
            wrong[name] = module
    assert wrong == {}


def type_checking_imports(path: Path) -> dict[str, str]:
    """The names a module's ``if TYPE_CHECKING:`` block imports, each with the (relative) module it names."""
    names: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom), ast.dump(imp)
                names |= {a.asname or a.name: "." * imp.level + (imp.module or "") for a in imp.names}
    return names


def test_type_checkers_see_every_lazy_name_from_where_it_loads() -> None:
    """The TYPE_CHECKING block (what mypy and editors read) names each lazy name from the module it loads from, and
    the issue 43 names are public: the batch transform construct, its settings and the async endpoint's settings (the
    async endpoint's construct is NeuronEndpoint; its AsyncQueue is reached as ``endpoint.async_queue``)."""
    assert type_checking_imports(PACKAGE / "__init__.py") == lazy_names()
    assert {"NeuronBatchTransform", "BatchJobSettings", "AsyncInferenceSettings"} <= set(neuronfleet.__all__)
    assert lazy_names()["NeuronBatchTransform"] == ".inference.batch_transform"


def test_the_loader_catalog_and_settings_names_import_from_neuronfleet_as_the_same_objects() -> None:
    names = sorted(n for n, m in lazy_names().items() if m in NOT_CDK)
    assert {"Fleet", "load_fleet", "parse_fleet", "CATALOG", "TrainiumClusterSettings"} <= set(names)
    code = (f"import sys, importlib, neuronfleet\n"
            f"from neuronfleet import {', '.join(names)}, FleetConfigError\n"
            "from neuronfleet.core import problems\n"
            "from neuronfleet.fleetfile import schema\n"
            "assert FleetConfigError is problems.FleetConfigError is schema.FleetConfigError\n"
            f"for n in {names!r}:\n"
            "    module = importlib.import_module(neuronfleet._LAZY[n], 'neuronfleet')\n"
            "    assert getattr(neuronfleet, n) is getattr(module, n), n\n"
            "assert set(neuronfleet.__all__) <= set(dir(neuronfleet))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aws_cdk', 'jsii', 'boto3')))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child_env(), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_a_fleet_config_error_is_caught_as_itself_after_the_move() -> None:
    from neuronfleet import FleetConfigError, parse_fleet
    from neuronfleet.fleetfile import schema

    with pytest.raises(schema.FleetConfigError) as caught:
        parse_fleet([], source="f.yaml")
    assert type(caught.value) is FleetConfigError
    assert str(caught.value).startswith("f.yaml: the fleet file: (top level): got []; allowed: a mapping")


@pytest.mark.parametrize(("asked", "described"), [(False, False), (True, True)])
def test_field_descriptions_are_read_only_when_the_schema_script_asks(asked: bool, described: bool) -> None:
    """pydantic's attribute-docstring extraction (tokenizing every model's source) runs only for
    scripts/fleet_schema.py, which sets NEURONFLEET_SCHEMA_DOCS=1; its --check test keeps the published schema."""
    env = child_env() | ({"NEURONFLEET_SCHEMA_DOCS": "1"} if asked else {})
    code = "from neuronfleet import Fleet; print(Fleet.model_fields['notification_emails'].description is not None)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == str(described)
