"""Each function's asset holds its own handler package, the contract and the shared runtime, nothing else, under the
names the tests import; its staging folder (and so its CDK asset hash) changes only with those files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from neuronfleet.core.assets import (
    SHARED_PACKAGES,
    asset_files,
    digest,
    handler_packages,
    lambda_source_dir,
    shared_source_dir,
    stage,
)

SOURCE = lambda_source_dir()
SHARED = {name: shared_source_dir(name) for name in SHARED_PACKAGES}


def test_the_kit_has_its_handler_packages() -> None:
    assert handler_packages() == ("capacity_alert", "capacity_lifecycle", "cost", "failover", "hub_staging", "judge",
                                  "pool_schedule")


@pytest.mark.parametrize("package", ["capacity_alert", "cost", "failover"])
def test_an_asset_holds_its_package_and_the_shared_ones_only(package: str) -> None:
    files = asset_files(package)
    assert {name.split("/")[0] for name in files} == {package, *SHARED_PACKAGES}
    folders = {package: SOURCE / package, **SHARED}
    expected = {f"{name}/{p.relative_to(folder).as_posix()}" for name, folder in folders.items()
                for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert set(files) == expected
    assert f"{package}/__init__.py" in files and "neuronfleet_contract/tags.py" in files


def test_an_unknown_package_is_refused_naming_the_known_ones() -> None:
    known = "capacity_alert, capacity_lifecycle, cost, failover, hub_staging, judge"
    with pytest.raises(ValueError, match=rf"handler package: got 'lambdas'; allowed: one of {known}"):
        asset_files("lambdas")
    with pytest.raises(ValueError, match="got 'neuronfleet_contract'"):
        asset_files("neuronfleet_contract")


def test_an_edit_changes_only_the_assets_that_hold_the_file(tmp_path: Path) -> None:
    source, shared = tmp_path / "lambdas", {name: tmp_path / "shared" / name for name in SHARED_PACKAGES}
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns("__pycache__"))
    for name, folder in shared.items():
        shutil.copytree(SHARED[name], folder, ignore=shutil.ignore_patterns("__pycache__"))
    before = {p: digest(asset_files(p, source, shared)) for p in handler_packages(source)}
    assert before == {p: digest(asset_files(p)) for p in handler_packages()}  # the copy is the tree
    with (source / "cost" / "report.py").open("a") as f:
        f.write("\n# an edit\n")
    after_cost = {p: digest(asset_files(p, source, shared)) for p in handler_packages(source)}
    assert after_cost["cost"] != before["cost"]
    others = ("failover", "capacity_alert")
    assert {p: after_cost[p] for p in others} == {p: before[p] for p in others}
    with (shared["neuronfleet_contract"] / "tags.py").open("a") as f:
        f.write("\n# a contract edit\n")
    after_contract = {p: digest(asset_files(p, source, shared)) for p in handler_packages(source)}
    assert all(after_contract[p] != after_cost[p] for p in after_contract)  # the contract ships with every function


def test_staging_writes_the_files_once_per_content(tmp_path: Path) -> None:
    folder = stage("failover", into=tmp_path)
    assert folder == stage("failover", into=tmp_path)
    staged = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert staged == asset_files("failover")
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]  # no partial folder left behind


@pytest.mark.slow
@pytest.mark.parametrize(("package", "module"), [("failover", "failover.handler"),
                                                  ("capacity_alert", "capacity_alert.handler"),
                                                  ("cost", "cost.collector")])
def test_a_staged_asset_imports_as_deployed(package: str, module: str, tmp_path: Path) -> None:
    """The staged folder is the code root: the handler imports with only its own folder beside the shared ones."""
    folder = stage(package, into=tmp_path)
    code = (f"import sys, {module}; from neuronfleet_contract import namespaces; "
            "assert not [m for m in sys.modules if m.split('.')[0] == 'neuronfleet'], 'imported the library'; "
            "assert namespaces.__file__.startswith(sys.argv[1]), namespaces.__file__; "
            "others = {'failover', 'capacity_alert', 'cost'} - {sys.argv[2]}; "
            "assert not [m for m in sys.modules if m.split('.')[0] in others], 'reached another handler'")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHONPATH"))} | {
        "AWS_DEFAULT_REGION": "us-east-2"}
    out = subprocess.run([sys.executable, "-c", code, str(folder), package], cwd=folder, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
