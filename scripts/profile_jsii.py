"""Where the kit's jsii round trips go: every call from Python into Node.js (and every answer to a callback from it)
counted by the kit's construct class that made it, and by the kit's line that made it.

One in-process synth of a fleet file (config/prod.yaml, or the Rainier-sized fleet of ``scripts.bench_scale``) with
the reference app's context (cdk.json); the round trips are counted at jsii's process provider (each request written
to Node.js and its answer read), the calling construct found by walking the Python stack to the innermost frame of
the kit's own code (constructs/neuronfleet, stacks/) whose ``self`` is a construct.

    python scripts/profile_jsii.py [prod|rainier] [--top 25]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.bench_floor import rainier_fleet
from scripts.bench_synth import ROOT

BIN = Path(sys.executable).parent

PROFILE = """\
import json, os, sys, time
from collections import Counter
sys.path.insert(0, {root!r})
os.chdir({root!r})
KIT = (os.path.join({root!r}, "constructs", "neuronfleet") + os.sep, os.path.join({root!r}, "stacks") + os.sep)
phase = ["import"]
by_class, by_line, by_phase, by_kind = Counter(), Counter(), Counter(), Counter()
ms_class, ms_line, ms_phase = Counter(), Counter(), Counter()
by_api, ms_api = Counter(), Counter()
def api(request):
    what = getattr(request, "fqn", None) or getattr(getattr(request, "objref", None), "ref", "?").split("@")[0]
    member = getattr(request, "method", None) or getattr(request, "property", None) or ""
    return f"{{type(request).__name__.removesuffix('Request')}} {{what}}.{{member}}"
from jsii._kernel.providers import process as _process
_send = _process._NodeProcess.send
def send(self, request, response_type):
    by_phase[phase[0]] += 1
    by_kind[type(request).__name__] += 1
    frame, line, owner = sys._getframe(1), None, None
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(KIT):
            if line is None:
                line = f"{{os.path.relpath(path, {root!r})}}:{{frame.f_lineno}} {{frame.f_code.co_name}}"
            me = frame.f_locals.get("self")
            if owner is None and me is not None and hasattr(type(me), "__jsii_type__"):
                owner = type(me).__module__.removeprefix("neuronfleet.") + "." + type(me).__name__
        if line is not None and owner is not None:
            break
        frame = frame.f_back
    owner, line = owner or "(no kit construct)", line or "(no kit line)"
    by_class[owner] += 1
    by_line[line] += 1
    called = f"{{owner}}: {{api(request)}}"
    by_api[called] += 1
    start = time.perf_counter()
    try:
        return _send(self, request, response_type)
    finally:
        spent = (time.perf_counter() - start) * 1000
        ms_class[owner] += spent
        ms_line[line] += spent
        ms_phase[phase[0]] += spent
        ms_api[called] += spent
_process._NodeProcess.send = send
from neuronfleet import load_fleet
fleet = load_fleet({fleet!r})
from aws_cdk import App
from stacks import build_fleet
app = App(outdir={outdir!r})
phase[0] = "build"
start = time.perf_counter()
build_fleet(app, fleet)
built = time.perf_counter() - start
phase[0] = "synth"
app.synth()
synthed = time.perf_counter() - start - built
print(json.dumps({{"by_class": by_class, "by_line": by_line, "by_phase": by_phase, "by_kind": by_kind,
                   "by_api": by_api, "ms_api": ms_api, "ms_class": ms_class, "ms_line": ms_line, "ms_phase": ms_phase,
                   "build_seconds": built, "synth_seconds": synthed}}))
"""


def profile(fleet_path: Path, outdir: Path) -> dict[str, Any]:
    context = {**json.loads((ROOT / "cdk.json").read_text())["context"], "config": str(fleet_path),
               "aws:cdk:disable-stack-trace": True}
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "CDK_CONTEXT_JSON": json.dumps(context),
           "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION": "1"}
    code = PROFILE.format(root=str(ROOT), fleet=str(fleet_path), outdir=str(outdir))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"in-process synth failed:\n{result.stderr[-4000:]}")
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fleet", nargs="?", default="prod", choices=["prod", "rainier"])
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = ROOT / "config" / "prod.yaml"
        if args.fleet == "rainier":
            path = Path(tmp) / "rainier.yaml"
            path.write_text(yaml.safe_dump(rainier_fleet(), sort_keys=False))
        counts = profile(path, Path(tmp) / "out")
    phases = counts["by_phase"]
    print(f"{args.fleet}: jsii round trips: {sum(phases.values()):,} ("
          + ", ".join(f"{k} {v:,} in {counts['ms_phase'][k] / 1000:.2f} s" for k, v in phases.items())
          + f"); building took {counts['build_seconds']:.2f} s, app.synth() {counts['synth_seconds']:.2f} s")
    print("by request kind: " + ", ".join(f"{k} {v:,}" for k, v in sorted(counts["by_kind"].items(),
                                                                            key=lambda kv: -kv[1])))
    for title, key in (("by the kit's construct class", "class"), ("by the kit's line", "line")):
        print(f"{title} (round trips, ms waiting on Node.js; by time):")
        for name, ms in sorted(counts[f"ms_{key}"].items(), key=lambda kv: -kv[1])[:args.top]:
            print(f"  {counts[f'by_{key}'][name]:7,}  {ms:8.0f} ms  {name}")
    print("by the kit's construct class and jsii API (round trips, ms waiting on Node.js; by time):")
    for name, ms in sorted(counts["ms_api"].items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {counts['by_api'][name]:7,}  {ms:8.0f} ms  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
