"""What `make demo` shows of the CDK CLI's output (scripts/demo_output.py) and how setup shows progress
(scripts/progress.py), on captured text.

tests/data/demo/cdk-synth-prod.txt and cdk-deploy-prod.txt are the CDK CLI 2.1148.1's own output (stdout and stderr
as the terminal showed them) of `ENV=prod make demo`'s `cdk synth` and `cdk deploy`, captured on 2026-11-28 (18:23
UTC) before this filter existed: the validation report prints the training image note once per cluster, under the
jsii kernel's `program.js` location line, at synth and again at deploy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import setup_node
from scripts.demo_output import CliFilter, story_block
from scripts.progress import run, ticker_line
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "demo"
SYNTH = (DATA / "cdk-synth-prod.txt").read_text().splitlines()
DEPLOY = (DATA / "cdk-deploy-prod.txt").read_text().splitlines()
IMAGE = "public.ecr.aws/neuron/pytorch-training-neuronx:2.14.0-neuronx-py314-sdk2.33.0-ubuntu26.04"


def shown(mode: str = "normal", *commands: list[str]) -> list[str]:
    out: list[str] = []
    cli = CliFilter(out.append, mode)
    for lines in commands or (SYNTH, DEPLOY):
        for line in lines:
            cli.feed(line)
        cli.close()
    return out


def test_the_captured_report_repeats_the_note_per_cluster_and_command() -> None:
    """What the filter is for: the raw CLI printed the note four times, each under a program.js line."""
    raw = SYNTH + DEPLOY
    assert sum(line.startswith(f"INFO neuronfleet: training image {IMAGE} is unconfirmed") for line in raw) == 4
    assert sum("lib/program.js:" in line for line in raw) == 4


def test_each_note_once_with_one_line_per_cluster_and_no_jsii_location() -> None:
    out = shown()
    text = "\n".join(out)
    assert text.count("is unconfirmed") == 1 and "program.js" not in text and "Acknowledge with" not in text
    head = out.index(next(line for line in out if line.startswith("    INFO (2 constructs): neuronfleet: training image")))
    note = " ".join(line.strip() for line in out[head:head + 12])
    assert f"{IMAGE} is unconfirmed" in note and f"docker manifest inspect {IMAGE}" in note  # the check, whole
    assert "(Construct Annotations)" not in note
    assert [line for line in out if line.startswith("      - ")] == [
        "      - nf-prod-train-pretrain/Cluster", "      - nf-prod-train-finetune/Cluster"]
    assert max(len(line) for line in out[head:head + 12]) <= 118


def test_the_deploy_says_in_one_line_that_it_repeats_the_note() -> None:
    out = shown()
    assert "    (the CDK CLI repeats 1 note shown above, on 2 constructs: not printed again)" in out
    alone = shown("normal", DEPLOY)  # a deploy on its own has not shown it yet
    assert sum(line.startswith("    INFO (2 constructs): ") for line in alone) == 1


def test_the_deploy_shows_one_line_per_stack_and_the_cli_s_headlines() -> None:
    out = shown("normal", DEPLOY)
    stacks = [line for line in out if line.startswith("✅  ")]
    assert stacks == [f"✅  nf-prod-{s}" for s in ("network", "alerts", "train-finetune", "train-pretrain", "inference",
                                                   "cost", "fallback", "capacity")]
    assert out[-1] == "✨  Total time: 9.96s"
    noise = ("CREATE_IN_PROGRESS", "Building ", "Publishing ", "Outputs:", "Stack ARN:", "creating CloudFormation")
    assert not [line for line in out if any(n in line for n in noise)]
    assert "" not in out


def test_synth_keeps_the_cli_s_result_line() -> None:
    out = shown("normal", SYNTH)
    assert out[-1].startswith("Successfully synthesized to ") and out[-1].endswith("cdk.out/demo-prod")


def test_verbose_is_the_cli_s_output_unchanged_and_quiet_keeps_only_the_notes() -> None:
    assert shown("verbose") == SYNTH + DEPLOY
    quiet = shown("quiet")
    assert quiet[0].startswith("    INFO (2 constructs): ") and quiet[-1].startswith("    (the CDK CLI repeats 1 note")
    assert not [line for line in quiet if line.startswith(("✅", "Successfully"))]
    with pytest.raises(ValueError, match="mode: 'loud' is not one of quiet, normal, verbose"):
        CliFilter(print, "loud")


def test_errors_are_shown_whole_each_time() -> None:
    block = ["bin/app.js:1:2", "ERROR the stack is over its resource limit (Construct Annotations)",
             "   nf-dev-big/Stack", "   Suggested fix: split it", "   Rule Annotation::error-annotation"]
    out = shown("normal", [*block, "", *block], block)
    errors = [line for line in out if line.startswith("    ERROR (1 construct): the stack is over its resource limit")]
    assert len(errors) == 3 and out.count("      Suggested fix: split it") == 3 and "bin/app.js:1:2" not in out


def test_lines_that_only_look_like_the_report_pass_through() -> None:
    lines = ["lib/x.js:3:4", "not a severity line", "INFO no block follows", "plain line after it"]
    assert shown("normal", lines) == lines


def test_the_story_is_last_wrapped_under_its_title() -> None:
    story = "Synthetic: as deployed, " + "the kit's own running cost comes to $43.38 a month; " * 6
    lines = story_block("the story of nf-dev (evaluation), SYNTHETIC figures", story.strip())
    assert lines[0] == "" and lines[2] == "  the story of nf-dev (evaluation), SYNTHETIC figures"
    assert lines[1] == lines[3] == lines[-1] == "=" * 100
    body = lines[4:-1]
    assert len(body) > 1 and all(len(line) <= 118 and line.startswith("    ") for line in body)
    assert " ".join(line.strip() for line in body) == story.strip()
    assert story_block("t", "")[4] == "    nothing to tell"


def test_a_silent_command_gets_a_ticker_line_and_its_exit_code_is_kept() -> None:
    said: list[str] = []
    got: list[str] = []
    code = run([sys.executable, "-c", "import sys, time; print('first'); time.sleep(1.0); print('second'); sys.exit(3)"],
               "slow step", on_line=got.append, every=0.2, say=said.append)
    assert code == 3 and got == ["first", "second"]
    assert said and all(line.startswith("    ... slow step: ") and line.endswith(" s, still running") for line in said)


def test_lines_a_filter_leaves_out_do_not_count_as_progress() -> None:
    """The deploy prints resource events the demo leaves out: a person sees nothing, so the ticker still comes."""
    said: list[str] = []
    noisy = "import time\nfor i in range(8):\n    print(f'nf-dev-network |  {i}/9 | CREATE_IN_PROGRESS'); time.sleep(0.15)"
    cli = CliFilter(said.append)
    assert run([sys.executable, "-c", noisy], "cdk deploy", on_line=cli.feed, every=0.4, say=said.append) == 0
    assert said and all(line.startswith("    ... cdk deploy: ") for line in said)
    assert cli.feed("✅  nf-dev-network") is True and cli.feed("nf-dev-network |  9/9 | CREATE_COMPLETE") is False


def test_the_ticker_reports_the_folder_being_filled_as_du_counts_it(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f").write_bytes(b"x" * (3 * 1024 * 1024 + 1))
    (tmp_path / "g").write_bytes(b"y" * 1000)
    du = subprocess.run(["du", "-sm", str(tmp_path)], capture_output=True, text=True, check=True).stdout.split()[0]
    assert du == "4" and ticker_line("pip", 40.2, tmp_path) == f"    ... pip: 40 s, still running, {tmp_path} now 4 MB"
    assert ticker_line("pip", 9.6) == "    ... pip: 10 s, still running"


def test_npm_ci_is_skipped_only_when_node_modules_holds_the_lock(tmp_path: Path) -> None:
    lock = {"name": "x", "lockfileVersion": 3, "packages": {"": {"name": "x"}, "node_modules/aws-cdk": {
        "version": "2.1148.1", "integrity": "sha512-a"}}}
    (tmp_path / "package-lock.json").write_text(json.dumps(lock))
    assert not setup_node.installed(tmp_path)  # no node_modules
    (tmp_path / "node_modules").mkdir()
    record = {"name": "x", "lockfileVersion": 3, "packages": {"node_modules/aws-cdk": {
        "version": "2.1147.0", "integrity": "sha512-b"}}}
    (tmp_path / "node_modules" / ".package-lock.json").write_text(json.dumps(record))
    assert not setup_node.installed(tmp_path)  # another version
    record["packages"] = {k: v for k, v in lock["packages"].items() if k}
    (tmp_path / "node_modules" / ".package-lock.json").write_text(json.dumps(record))
    assert setup_node.installed(tmp_path)
