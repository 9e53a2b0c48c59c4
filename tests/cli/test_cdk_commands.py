"""``neuronfleet synth|diff|deploy``: the fleet file checked first, then the app's pinned CDK CLI run in the app's
folder with ``-c config=PATH`` (a stand-in CLI records what it was given: the real synth is tests/cli/test_cli.py's)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from neuronfleet.cli.main import main
from neuronfleet.cli.output import BAD_INPUT, FINDINGS, OK
from tests.conftest import ROOT


@pytest.fixture
def app(tmp_path: Path) -> Path:
    folder = tmp_path / "app"
    (folder / "stacks").mkdir(parents=True)
    (folder / "app.py").write_text("")
    (folder / "cdk.json").write_text("{}")
    cdk = folder / "node_modules" / ".bin" / "cdk"
    cdk.parent.mkdir(parents=True)
    cdk.write_text('#!/bin/sh\necho "$PWD" "$@" > "$(dirname "$0")/../../called"\nexit "${FAKE_CDK_EXIT:-0}"\n')
    cdk.chmod(cdk.stat().st_mode | stat.S_IEXEC)
    return folder


@pytest.mark.parametrize("command", ["synth", "diff", "deploy"])
def test_runs_the_apps_cdk_cli_with_the_fleet_file(app: Path, command: str, monkeypatch) -> None:
    config = ROOT / "config" / "dev.yaml"
    monkeypatch.chdir(app)
    assert main([command, "-c", str(config), "--", "--all", "-o", "out"]) == OK
    assert (app / "called").read_text().split() == [str(app), command, "-c", f"config={config}", "--all", "-o", "out"]
    monkeypatch.setenv("FAKE_CDK_EXIT", "3")
    assert main([command, "-c", str(config)]) == FINDINGS


def test_a_bad_fleet_file_stops_before_the_cdk_cli(app: Path, capsys) -> None:
    bad = ROOT / "tests" / "cli" / "malformed" / "account_eleven_digits.yaml"
    assert main(["synth", "-c", str(bad), "--app-dir", str(app)]) == BAD_INPUT
    assert "account: got '11111111111'" in capsys.readouterr().err
    assert not (app / "called").exists()


def test_outside_the_app_it_says_how_to_get_it(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["deploy", "-c", str(ROOT / "config" / "dev.yaml")]) == BAD_INPUT
    err = capsys.readouterr().err
    assert "it ships in the repository, not in the wheel. Clone the repository, run `make setup` there" in err


def test_a_parents_app_is_named_never_run(app: Path, capsys, monkeypatch) -> None:
    """Issue 36, finding 8: the command ran the CDK app it found in a parent folder."""
    monkeypatch.chdir(app / "stacks")
    assert main(["deploy", "-c", str(ROOT / "config" / "dev.yaml")]) == BAD_INPUT
    err = capsys.readouterr().err
    assert f"a parent folder holds one ({app}), which is not run unless named: cd there or pass --app-dir {app}" in err
    assert not (app / "called").exists()
    assert main(["deploy", "-c", str(ROOT / "config" / "dev.yaml"), "--app-dir", str(app)]) == OK
    assert (app / "called").read_text().split()[:2] == [str(app), "deploy"]


def test_the_repository_is_the_app() -> None:
    from neuronfleet.cli.cdk import cdk_cli, find_app

    assert find_app(ROOT) == ROOT and find_app(ROOT / "stacks") is None
    assert cdk_cli(ROOT) is not None and os.access(cdk_cli(ROOT), os.X_OK)  # type: ignore[arg-type]
