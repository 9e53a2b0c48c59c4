"""`pip install .` gives a wheel named neuronfleet that works outside the repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.cli.test_readme import readme_program
from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def source_tree(into: Path) -> Path:
    """The repository's files as a checkout has them (tracked, and new files not ignored): no build/ left over from
    an earlier build, whose stale files setuptools would pack (a package moved away stays in build/lib)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            (into / name).write_bytes(source.read_bytes())
    return into


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    tree = source_tree(tmp_path_factory.mktemp("source"))
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(tree)],
                   check=True, capture_output=True, text=True)
    (built,) = out.glob("neuronfleet-*.whl")
    return built


def test_wheel_contains_the_library_its_data_and_the_lambda_sources(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"neuronfleet/__init__.py", "neuronfleet/facts/catalog.py", "neuronfleet/fleetfile/schema.py",
            "neuronfleet/py.typed", "neuronfleet/facts/data/instance_type_offerings.json"} <= names
    lambda_sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "lambdas").rglob("*.py")}
    assert {f"neuronfleet/{p}" for p in lambda_sources} <= names
    # the contract and the shared runtime (shared/), importable under their own top-level names (constructs and
    # handlers alike), once: not also inside neuronfleet/lambdas
    shared = {p.relative_to(ROOT / "shared").as_posix() for p in (ROOT / "shared").rglob("*.py")}
    assert shared and shared <= names
    assert {"neuronfleet_contract/py.typed", "neuronfleet_runtime/py.typed"} <= names
    assert not [n for n in names if n.startswith(("neuronfleet/lambdas/neuronfleet_", "shared/"))]
    # the built-in price table and accelerator map, in their one home: read by the catalog and by every function
    assert {"neuronfleet_contract/data/prices.json", "neuronfleet_contract/data/accelerators.json"} <= names
    assert not any(n.startswith(("constructs/", "stacks/", "tests/", "config/")) for n in names)
    # the command line and preflight, with the console scripts
    assert {"neuronfleet/cli/main.py", "neuronfleet/cli/estimate.py", "neuronfleet/preflight/checks.py"} <= names
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    scripts = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert [line for line in scripts.splitlines() if " = " in line] == ["neuronfleet = neuronfleet.cli.main:main"]


def test_installs_in_a_fresh_venv_outside_the_repo(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    # --no-compile: pip byte-compiled all of aws-cdk-lib at install (36 s of CPU of 39, 2026-11-29); the synth below
    # compiles only what it imports (12 s more than with the pycs)
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-compile", "--disable-pip-version-check", str(wheel)],
                   check=True, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    # an app outside the repository: the README's construct snippets, as pasted (the offline kit needs moto)
    (tmp_path / "app.py").write_text(readme_program(offline=False))
    out = tmp_path / "cdk.out"
    env = {**os.environ, "CDK_OUTDIR": str(out), "PYTHONPATH": ""}
    synth = subprocess.run([str(py), "app.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert synth.returncode == 0, synth.stderr[-3000:]
    template = json.loads((out / "MyTeam.template.json").read_text())
    kinds = {r["Type"] for r in template["Resources"].values()}
    assert {"AWS::EC2::LaunchTemplate", "AWS::Batch::JobQueue", "AWS::SageMaker::Endpoint", "AWS::Lambda::Function",
            "AWS::DynamoDB::Table", "AWS::Budgets::Budget"} <= kinds
    from neuronfleet.node import SCRIPTS

    assets = [p for p in out.glob("asset.*") if p.is_dir()]
    # the training cluster's node scripts from the wheel's neuronfleet/node, exactly node.SCRIPTS
    node = [a for a in assets if {p.name for p in a.iterdir()} == set(SCRIPTS)]
    assert len(node) == 1, [sorted(p.name for p in a.iterdir()) for a in assets]
    # the wheel's Lambda sources, one handler package an asset, each with the contract and the shared runtime
    handlers = {"failover", "capacity_alert", "cost"}
    lambdas = [a for a in assets if a not in node]
    assert lambdas and all({p.name for p in a.iterdir()} - handlers == {"neuronfleet_contract", "neuronfleet_runtime"}
                           and len({p.name for p in a.iterdir()} & handlers) == 1 for a in lambdas)
    assert any((a / "failover" / "handler.py").is_file() for a in assets)
    probe = (
        "import neuronfleet, constructs, pathlib;"
        "from neuronfleet import CATALOG;"
        "assert 'site-packages' in neuronfleet.__file__ and 'site-packages' in constructs.__file__;"
        "assert CATALOG.offered_in('trn2.48xlarge', 'us-east-2');"
        "print(neuronfleet.__version__, CATALOG.get('trn2u.48xlarge').efa_interfaces)"
    )
    result = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert result.stdout.split() == ["0.1.0", "16"]
    # the `neuronfleet` command from the wheel, outside the repository: validate, estimate (no Node.js), and the
    # CDK commands saying where the fleet-file app is
    bin_dir = venv / "bin"
    (tmp_path / "fleet.yaml").write_text((ROOT / "config" / "prod.yaml").read_text())
    (tmp_path / "gpu.csv").write_text("instance_type,amount_usd,hours,workload\np5.48xlarge,5504.00,100,training\n"
                                      "m5.large,9,100,training\n")
    run = {"capture_output": True, "text": True, "cwd": tmp_path, "env": env, "timeout": 120}
    assert subprocess.run([str(bin_dir / "neuronfleet"), "--help"], **run).returncode == 0  # type: ignore[call-overload]
    validated = subprocess.run([str(bin_dir / "neuronfleet"), "validate", "-c", "fleet.yaml"], **run)  # type: ignore[call-overload]
    assert validated.returncode == 0 and "ok, fleet 'nf-prod'" in validated.stdout, validated.stderr
    estimated = subprocess.run([str(bin_dir / "neuronfleet"), "estimate", "gpu.csv", "--json"], **run)  # type: ignore[call-overload]
    assert estimated.returncode == 0, estimated.stderr
    assert json.loads(estimated.stdout)["lines"][0]["neuron_type"] == "trn2.48xlarge"
    synth = subprocess.run([str(bin_dir / "neuronfleet"), "synth", "-c", "fleet.yaml"], **run)  # type: ignore[call-overload]
    assert synth.returncode == 2 and "it ships in the repository, not in the wheel" in synth.stderr
