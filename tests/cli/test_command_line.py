"""The ``neuronfleet`` command line: help, exit codes, ``--json``, the kit's field/value/allowed errors, no traceback,
and no Node.js started by importing it or by commands that need no CDK."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import click
import pytest

from neuronfleet.cli import main as cli_main
from neuronfleet.cli.main import COMMANDS, SHORT_HELP, main
from neuronfleet.cli.output import BAD_INPUT, FINDINGS, INTERNAL, OK, CheckLine, check_lines_text, exit_code_of
from tests.conftest import ROOT


def test_help_lists_every_registered_command_and_each_has_its_own_help(capsys) -> None:
    assert main(["--help"]) == OK
    out = capsys.readouterr().out
    assert "Exit codes: 0 ok, 1 something blocking found, 2 bad usage or input" in out
    for name in COMMANDS:
        assert f"  {name} " in out
        assert main([name, "--help"]) == OK
        assert f"Usage: neuronfleet {name} [OPTIONS]" in capsys.readouterr().out


def test_the_root_help_lines_are_each_commands_own_short_help() -> None:
    """``neuronfleet --help`` lists SHORT_HELP without loading the command modules; each line must be what the
    command itself says (click's short help, unshortened)."""
    assert set(SHORT_HELP) == set(COMMANDS)
    for name, target in COMMANDS.items():
        module, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module), attr)
        assert SHORT_HELP[name] == command.get_short_help_str(limit=10_000), name


def test_a_command_without_a_short_help_line_is_loaded_to_ask_it(monkeypatch, capsys) -> None:
    @click.command(short_help="Planted for the test.")
    def planted() -> int:
        return OK

    monkeypatch.setattr(sys.modules[__name__], "planted_command", planted, raising=False)
    monkeypatch.setitem(COMMANDS, "planted", f"{__name__}:planted_command")
    assert main(["--help"]) == OK
    out = capsys.readouterr().out
    assert "  planted    Planted for the test." in out
    assert f"  validate   {SHORT_HELP['validate']}" in out


def test_validate_passes_a_shipped_fleet_file(capsys) -> None:
    assert main(["validate", "-c", str(ROOT / "config" / "prod.yaml")]) == OK
    assert "ok, fleet 'nf-prod' in us-east-2" in capsys.readouterr().out
    assert main(["validate", "-c", str(ROOT / "config" / "prod.yaml"), "--json"]) == OK
    doc = json.loads(capsys.readouterr().out)
    assert (doc["valid"], doc["name"], doc["region"]) == (True, "nf-prod", "us-east-2")


def test_a_bad_fleet_file_is_exit_2_naming_field_value_and_allowed_without_traceback(capsys) -> None:
    bad = ROOT / "tests" / "cli" / "malformed" / "account_eleven_digits.yaml"
    assert main(["validate", "-c", str(bad)]) == BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"neuronfleet: {bad}: the fleet file: account: got '11111111111'; allowed: an AWS "
                          "account id: exactly 12 digits")
    assert "Traceback" not in err
    assert main(["validate", "--json", "-c", str(bad)]) == BAD_INPUT
    doc = json.loads(capsys.readouterr().out)
    assert doc["problems"] == [{"path": "account", "value": "'11111111111'",
                                "allowed": "an AWS account id: exactly 12 digits, e.g. 111111111111"}]


def test_usage_errors_are_exit_2(capsys) -> None:
    assert main(["nosuch"]) == BAD_INPUT
    assert "No such command 'nosuch'" in capsys.readouterr().err
    assert main(["validate"]) == BAD_INPUT
    assert "Missing option '-c' / '--config'" in capsys.readouterr().err


def test_an_unexpected_error_is_one_line_and_exit_3(monkeypatch, capsys) -> None:
    @click.command()
    def broken() -> int:
        raise KeyError("oops")

    monkeypatch.setattr(sys.modules[__name__], "broken_command", broken, raising=False)
    monkeypatch.setitem(COMMANDS, "broken", f"{__name__}:broken_command")
    assert main(["broken"]) == INTERNAL
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "neuronfleet: unexpected KeyError: 'oops' (this is a neuronfleet bug; NEURONFLEET_DEBUG=1 shows the traceback)"]
    monkeypatch.setenv("NEURONFLEET_DEBUG", "1")
    with pytest.raises(KeyError):
        main(["broken"])


def test_check_lines_exit_1_only_when_a_line_blocks() -> None:
    ok = CheckLine("ok", "quota", "96 of 192 vCPUs")
    warn = CheckLine("warning", "offering", "unknown", fix="check the console")
    block = CheckLine("blocking", "image", "missing", fix="push it")
    assert exit_code_of([ok, warn]) == OK
    assert exit_code_of([ok, warn, block]) == FINDINGS
    text = check_lines_text([ok, warn, block])
    assert "BLOCKING image: missing\n         fix: push it" in text
    assert text.endswith("1 ok, 1 warning(s), 1 blocking")


@pytest.mark.slow
def test_the_cli_starts_no_node_js() -> None:
    """aws-cdk-lib loads lazily: --help, every command's --help, validate and estimate run without jsii (no
    Node.js)."""
    probe = (
        "import sys\n"
        "from neuronfleet.cli.main import COMMANDS, main\n"
        "assert main(['--help']) == 0\n"
        "for name in COMMANDS: assert main([name, '--help']) == 0, name\n"
        f"assert main(['validate', '-c', {str(ROOT / 'config' / 'prod.yaml')!r}]) == 0\n"
        "import pathlib, tempfile\n"
        "csv = pathlib.Path(tempfile.mkdtemp()) / 'gpu.csv'\n"
        "csv.write_text('instance_type,amount_usd,hours\\np5.48xlarge,5504,100\\nm5.large,1,1\\n')\n"
        "assert main(['estimate', str(csv), '--json']) == 0\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('jsii', 'aws_cdk', 'constructs'))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_console_script_is_declared() -> None:
    import tomllib

    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert doc["project"]["scripts"]["neuronfleet"] == "neuronfleet.cli.main:main"
    assert cli_main.__doc__ and "COMMANDS" in cli_main.__doc__
