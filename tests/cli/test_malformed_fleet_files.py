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
import time
from collections.abc import Iterator
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


# One interpreter per test worker loads what app.py imports before it reads the fleet file (neuronfleet and the
# fleet file's models), then forks once per case: each fork is the app's process for that case, started as the CDK CLI
# starts it (its environment, its stdout and stderr, `python app.py` as __main__), without paying the interpreter's
# start and the models' build 150 times (0.4 s of CPU each, 2026-11-29). At exit the fork writes its peak resident set
# (VmHWM: its own address space, the pages it shares with the parent included) and the aws-cdk-lib / jsii modules it
# had imported, to the files named by NF_HWM_FILE. tests/cli/test_cli.py runs the app cold, as its own process.
_SERVER = """
import atexit, json, os, runpy, signal, sys, traceback
from neuronfleet import load_fleet  # what app.py imports first (the fleet file's models, built once here)

def _peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            open(os.environ["NF_HWM_FILE"], "w").write(line.split()[1])
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("aws_cdk", "jsii"))
    open(os.environ["NF_HWM_FILE"] + ".modules", "w").write(" ".join(loaded))

for line in sys.stdin:
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        signal.alarm(60)
        for fd, name in ((1, job["stdout"]), (2, job["stderr"])):
            os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        os.environ.clear()
        os.environ.update(job["env"])
        atexit.register(_peak)
        sys.argv = ["app.py"]
        code = 1
        try:
            runpy.run_path("app.py", run_name="__main__")  # app.py ends its process itself (exit_now)
            code = 0
        except SystemExit as end:
            code = end.code if isinstance(end.code, int) else 1
        except BaseException:
            traceback.print_exc()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    _, status, _ = os.wait4(pid, 0)
    print(os.waitstatus_to_exitcode(status), flush=True)
"""


@pytest.fixture(scope="module")
def app_server() -> Iterator[subprocess.Popen[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_", "CONTEXT_OVERFLOW"))}
    server = subprocess.Popen([sys.executable, "-c", _SERVER], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        yield server
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=60)


def run_app(server: subprocess.Popen[str], fleet_file: Path, outdir: Path, tmp: Path) -> Run:
    """Run app.py as the CDK CLI would (in a fork of ``server``), and measure that process alone (its VmHWM)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_", "CONTEXT_OVERFLOW"))}
    env.update(CDK_OUTDIR=str(outdir), CDK_CONTEXT_JSON=json.dumps({"config": str(fleet_file)}),
               AWS_EC2_METADATA_DISABLED="true", NF_HWM_FILE=str(tmp / "hwm.txt"))
    out_path, err_path = tmp / "stdout.txt", tmp / "stderr.txt"
    start = time.perf_counter()
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(json.dumps({"env": env, "stdout": str(out_path), "stderr": str(err_path)}) + "\n")
    server.stdin.flush()
    returncode = int(server.stdout.readline())
    seconds = time.perf_counter() - start
    return Run(returncode, err_path.read_text(errors="replace"), out_path.read_text(errors="replace"),
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
def test_malformed_fleet_file_is_refused(case: Path, tmp_path: Path, app_server: subprocess.Popen[str]) -> None:
    field = expected_field(case)
    outdir = tmp_path / "cdk.out"
    run = run_app(app_server, case, outdir, tmp_path)

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
