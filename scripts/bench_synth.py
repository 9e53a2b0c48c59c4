"""Synth benchmark: config/prod.yaml against an empty CDK app, same CLI, same environment, one run.

Prints the median wall time of each over several runs and their ratio (the goal: prod within 1.5x of
the empty app). A script, not a test: shared machines are noisy, the ratio is what to compare.

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

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

# The smallest app the CLI accepts: one stack with one placeholder resource (the CLI refuses an app
# without stacks, and CDK's validator a stack without resources).
EMPTY_APP = """\
import aws_cdk as cdk
app = cdk.App()
stack = cdk.Stack(app, "Empty", env=cdk.Environment(account="111111111111", region="us-east-2"))
cdk.CfnWaitConditionHandle(stack, "Placeholder")
app.synth()
"""


def _time_synth(cwd: Path, args: list[str], out: Path) -> float:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "CDK_DISABLE_CLI_TELEMETRY": "true"}
    start = time.perf_counter()
    result = subprocess.run([str(BIN / "cdk"), "synth", "--quiet", *args, "-o", str(out)], cwd=cwd, env=env,
                            capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"synth failed in {cwd}:\n{result.stderr}")
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty"
        empty.mkdir()
        (empty / "app.py").write_text(EMPTY_APP)
        context = json.loads((ROOT / "cdk.json").read_text())
        (empty / "cdk.json").write_text(json.dumps({**context, "app": f"{sys.executable} app.py"}))
        times: dict[str, list[float]] = {"empty app": [], "config/prod.yaml": []}
        for i in range(args.runs):  # interleaved, so drift on a shared machine hits both alike
            times["empty app"].append(_time_synth(empty, [], Path(tmp) / f"e{i}"))
            times["config/prod.yaml"].append(_time_synth(ROOT, ["-c", "env=prod"], Path(tmp) / f"p{i}"))
    medians = {k: statistics.median(v) for k, v in times.items()}
    for name, values in times.items():
        print(f"{name:18s} median {medians[name]:6.2f} s  (runs: {', '.join(f'{v:.2f}' for v in values)})")
    ratio = medians["config/prod.yaml"] / medians["empty app"]
    print(f"ratio prod/empty: {ratio:.2f}x (goal: <= 1.5x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
