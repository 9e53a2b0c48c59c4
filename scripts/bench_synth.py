"""Synth benchmark: config/prod.yaml against an empty CDK app, same CLI, same environment.

Prints the median wall time of each over several runs and their ratio (information only: the empty app was the
first baseline, replaced by the floor of scripts/bench_floor.py, whose guards `make bench` checks), the same with
CDK's built-in template validation off (``cdk synth --no-validation``: what that validation costs each), and where
the fleet's time goes in one in-process run. Run by hand (`make bench` no longer runs it). A script, not a test: shared
machines are noisy, the ratio is what to compare.

    python scripts/bench_synth.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

EXIT_AS_THE_KIT = """\
import atexit, os, sys
atexit._run_exitfuncs(); sys.stdout.flush(); sys.stderr.flush(); os._exit(0)
"""
"""How app.py ends (its exit_now): every app the benchmarks time ends the same way."""

APP_COMMAND = json.loads((ROOT / "cdk.json").read_text())["app"].replace("python3", sys.executable, 1)
"""The kit's app command (cdk.json: its interpreter flags) with this interpreter: every app the benchmarks time runs
under the same flags."""

# The smallest app the CLI accepts: one stack with one placeholder resource (the CLI refuses an app
# without stacks, and CDK's validator a stack without resources).
EMPTY_APP = """\
import aws_cdk as cdk
app = cdk.App()
stack = cdk.Stack(app, "Empty", env=cdk.Environment(account="111111111111", region="us-east-2"))
cdk.CfnWaitConditionHandle(stack, "Placeholder")
app.synth()
""" + EXIT_AS_THE_KIT


def _time_synth(cwd: Path, args: list[str], out: Path) -> float:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "CDK_DISABLE_CLI_TELEMETRY": "true"}
    start = time.perf_counter()
    result = subprocess.run([str(BIN / "cdk"), "synth", "--quiet", *args, "-o", str(out)], cwd=cwd, env=env,
                            capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"synth failed in {cwd}:\n{result.stderr}")
    return time.perf_counter() - start


def empty_app(tmp: Path) -> Path:
    """The empty app, with the kit's cdk.json (same feature flags, same CLI settings)."""
    empty = tmp / "empty"
    empty.mkdir()
    (empty / "app.py").write_text(EMPTY_APP)
    context = json.loads((ROOT / "cdk.json").read_text())
    (empty / "cdk.json").write_text(json.dumps({**context, "app": APP_COMMAND}))
    return empty


def time_against_empty(tmp: Path, name: str, args: list[str], runs: int, out: Path) -> dict[tuple[str, bool], list[float]]:
    """Synth times through the CLI of the empty app and of the kit's app with ``args``, each with and without CDK's
    built-in validation, interleaved (drift on a shared machine hits all alike). The kit's validated runs write to
    ``out``."""
    empty = empty_app(tmp)
    times: dict[tuple[str, bool], list[float]] = {}
    for i in range(runs):
        for validation in (True, False):
            flag = [] if validation else ["--no-validation"]
            times.setdefault(("empty app", validation), []).append(_time_synth(empty, flag, tmp / f"e{i}{validation}"))
            times.setdefault((name, validation), []).append(
                _time_synth(ROOT, [*args, *flag], out if validation else tmp / f"k{i}"))
    return times


def print_times(times: dict[tuple[str, bool], list[float]], name: str, goal: float | None = None) -> None:
    medians = {k: statistics.median(v) for k, v in times.items()}
    for (app, validation), values in times.items():
        label = f"{app}{'' if validation else ' --no-validation'}"
        print(f"{label:34s} median {medians[app, validation]:6.2f} s  (runs: {', '.join(f'{v:.2f}' for v in values)})")
    ratio = medians[name, True] / medians["empty app", True]
    print(f"ratio {name}/empty: {ratio:.2f}x " + (f"(goal: <= {goal}x)" if goal else "(information: the guards are "
                                                 "against the floor, scripts/bench_floor.py)"))
    for app in ("empty app", name):
        print(f"CDK's built-in template validation, {app}: {medians[app, True] - medians[app, False]:.2f} s of its median")


PHASES = """\
import json, os, sys, time
start = time.perf_counter()
sys.path.insert(0, {root!r})
os.chdir({root!r})
trips = [0]
try:  # jsii's process provider: every call into Node.js goes through send (an internal: counted if present)
    from jsii._kernel.providers import process as _process
    _send = _process._NodeProcess.send
    def send(self, request, response_type):
        trips[0] += 1
        return _send(self, request, response_type)
    _process._NodeProcess.send = send
except (ImportError, AttributeError):
    trips[0] = -1
marks = {{}}
from neuronfleet import load_fleet
fleet = load_fleet({fleet!r})
marks["read and validate the fleet file"] = time.perf_counter()
import aws_cdk
from aws_cdk import App
from stacks import build_fleet
from stacks.fleet import assembly_problems
marks["import aws-cdk-lib (starts Node.js) and the kit's stacks"] = time.perf_counter()
app = App(outdir={outdir!r})
build_fleet(app, fleet)
marks["build the construct tree"] = time.perf_counter()
built = trips[0]
assembly = app.synth()
marks["CDK synth (templates, assets, CDK's validation)"] = time.perf_counter()
problems = assembly_problems(assembly.directory)
marks["the kit's checks of the written templates"] = time.perf_counter()
print(json.dumps({{"start": start, "marks": marks, "trips": built, "problems": len(problems)}}))
"""


def phases(fleet_path: Path, outdir: Path) -> dict[str, Any]:
    """One in-process synth of the fleet, timed by phase, with the CLI's context (cdk.json's feature flags)."""
    context = {**json.loads((ROOT / "cdk.json").read_text())["context"], "config": str(fleet_path),
               "aws:cdk:disable-stack-trace": True}  # no stack traces, as `make` runs the CLI (Makefile)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "CDK_CONTEXT_JSON": json.dumps(context)}
    code = PHASES.format(root=str(ROOT), fleet=str(fleet_path), outdir=str(outdir))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"in-process synth failed:\n{result.stderr}")
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def print_phases(split: dict[str, Any], units: int, what: str) -> None:
    """The phases of :func:`phases`, with the jsii round trips per unit (endpoint or cluster)."""
    print(f"in process, one run ({split['trips']:,} jsii round trips while building; "
          f"{split['trips'] / max(units, 1):.0f} per {what}):")
    before = split["start"]
    for phase, at in split["marks"].items():
        print(f"  {at - before:6.2f} s  {phase}")
        before = at
    print(f"  {before - split['start']:6.2f} s  in all (plus the CLI's own start and its reading of the assembly)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from neuronfleet import load_fleet
    prod = load_fleet(ROOT / "config" / "prod.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        times = time_against_empty(Path(tmp), "config/prod.yaml", ["-c", "env=prod"], args.runs, Path(tmp) / "out")
        split = phases(ROOT / "config" / "prod.yaml", Path(tmp) / "phases")
    print_times(times, "config/prod.yaml")
    print_phases(split, len(prod.endpoints) + len(prod.training_clusters), "endpoint or cluster")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
