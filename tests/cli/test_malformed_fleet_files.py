"""Malformed fleet files, as a platform engineer writes them: the reference app must refuse each one fast.

Each tests/cli/malformed/*.yaml is a copy of config/dev.yaml or config/prod.yaml with one mistake; its first
line says which field the error must name (``# expect: endpoints[0].tensor_parallel_degree``, or
``# expect: line 7, column 3`` for YAML errors). The app runs as the CDK CLI runs it (``python app.py`` with
CDK_OUTDIR and the context in CDK_CONTEXT_JSON) but without the CLI, so each case takes a fraction of a second.

Per file: a non-zero exit; a stderr line ``<field>: got ...; allowed: ...``; no traceback; nothing written to
CDK_OUTDIR; aws-cdk-lib never imported (so Node.js never started: app.py validates the file first, which is what
makes a refusal take a fraction of a second; asserted on the child's modules rather than on wall time, which a
loaded CI machine stretches) and under 200 MB of peak memory. Peak memory is the child's own VmHWM, read from /proc at its
exit: rusage's ru_maxrss would include the forked copy of this (large) test process from before exec.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted((Path(__file__).parent / "malformed").glob("*.yaml"))
MAX_RSS_MB = 200


@dataclass
class Run:
    returncode: int
    stderr: str
    stdout: str
    seconds: float
    max_rss_mb: float
    loaded: list[str]
    """The modules of aws-cdk-lib / jsii the child had imported at its exit."""


# Runs app.py as __main__ and, at exit, writes the process's peak resident set (VmHWM, its own address space
# since exec) to the file named by NF_HWM_FILE.
_LAUNCH = """
import atexit, os, runpy, sys

def _peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            open(os.environ["NF_HWM_FILE"], "w").write(line.split()[1])
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("aws_cdk", "jsii"))
    open(os.environ["NF_HWM_FILE"] + ".modules", "w").write(" ".join(loaded))

atexit.register(_peak)
sys.argv = ["app.py"]
runpy.run_path("app.py", run_name="__main__")
"""


def run_app(fleet_file: Path, outdir: Path, tmp: Path) -> Run:
    """Run app.py as the CDK CLI would, and measure the child alone (its VmHWM)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_", "CONTEXT_OVERFLOW"))}
    env.update(CDK_OUTDIR=str(outdir), CDK_CONTEXT_JSON=json.dumps({"config": str(fleet_file)}),
               AWS_EC2_METADATA_DISABLED="true", NF_HWM_FILE=str(tmp / "hwm.txt"))
    out_path, err_path = tmp / "stdout.txt", tmp / "stderr.txt"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCH], cwd=ROOT, env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL)
        killer = threading.Timer(60, proc.kill)
        killer.start()
        try:
            _, status, _ = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(proc.returncode, err_path.read_text(errors="replace"), out_path.read_text(errors="replace"),
               seconds, int((tmp / "hwm.txt").read_text()) / 1024,  # VmHWM in kB
               (tmp / "hwm.txt.modules").read_text().split())


def expected_field(path: Path) -> str:
    first = path.read_bytes().split(b"\n", 1)[0].decode()
    m = re.fullmatch(r"# expect: (.+)", first)
    assert m, f"{path.name}: the first line must be '# expect: <field path>'"
    return m.group(1)


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 60
    assert all(expected_field(p) for p in CASES)


@pytest.mark.parametrize("case", CASES, ids=[p.stem for p in CASES])
def test_malformed_fleet_file_is_refused(case: Path, tmp_path: Path) -> None:
    field = expected_field(case)
    outdir = tmp_path / "cdk.out"
    run = run_app(case, outdir, tmp_path)

    assert run.returncode != 0, f"accepted a malformed fleet file\nstderr:\n{run.stderr}"
    assert "Traceback" not in run.stderr, run.stderr
    assert "Nothing was synthesised." in run.stderr, run.stderr
    naming = re.compile(r"(?:^|\s)" + re.escape(field) + r": got .*; allowed: ")
    assert any(naming.search(line) for line in run.stderr.splitlines()), (
        f"no line names {field!r} with 'got ...; allowed: ...'\nstderr:\n{run.stderr}")
    written = sorted(p.name for p in outdir.rglob("*")) if outdir.exists() else []
    assert written == [], f"wrote to CDK_OUTDIR: {written}"
    assert run.loaded == [], f"imported {run.loaded[:3]}...: validate the fleet file before loading aws-cdk-lib"
    assert run.max_rss_mb < MAX_RSS_MB, f"peak memory {run.max_rss_mb:.0f} MB"
