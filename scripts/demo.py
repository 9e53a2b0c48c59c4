"""`make demo`: run the kit offline and say what it produced.

Today: validates config/dev.yaml, synthesises every stack through the pinned CDK CLI (no AWS account,
no network) and prints the stacks and resources. The moto deploy and the cost-monitor run join as their
issues land.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))

from neuronfleet import load_fleet  # noqa: E402


def step(text: str) -> None:
    print(f"==> {text}", flush=True)


def main() -> int:
    started = time.perf_counter()
    env_name = os.environ.get("ENV", "dev")
    path = ROOT / "config" / f"{env_name}.yaml"
    step(f"validating {path.relative_to(ROOT)}")
    fleet = load_fleet(path)
    print(f"    fleet {fleet.name}, phase {fleet.phase}, {fleet.region}, training AZ {fleet.network.training_az}")
    for c in fleet.training_clusters:
        spec = fleet.catalog.get(c.instance_type)
        print(f"    training cluster {c.name}: {c.count} x {c.instance_type} ({spec.accelerators} x "
              f"{spec.accelerator_name}, {spec.neuron_cores} NeuronCores, {spec.efa_interfaces} EFA each), "
              f"{c.capacity.type}")
    for e in fleet.endpoints:
        print(f"    endpoint {e.name}: {e.instance_type} {e.container}, TP={e.tensor_parallel_degree}, "
              f"{e.min_instances}-{e.max_instances} instances")

    out = ROOT / "cdk.out" / f"demo-{env_name}"
    step(f"synthesising every stack offline into {out.relative_to(ROOT)} (pinned CDK CLI, Node from PyPI)")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "CDK_DISABLE_CLI_TELEMETRY": "true"}
    subprocess.run([str(BIN / "cdk"), "synth", "--quiet", "-c", f"env={env_name}", "-o", str(out)],
                   cwd=ROOT, env=env, check=True)

    step("what was synthesised")
    for template_path in sorted(out.glob("*.template.json")):
        resources = json.loads(template_path.read_text()).get("Resources", {})
        kinds = Counter(r["Type"] for r in resources.values())
        print(f"    {template_path.name.removesuffix('.template.json')}: {len(resources)} resources")
        for kind, n in sorted(kinds.items()):
            print(f"      {n:3d} {kind}")
    print("\n    Not built yet (validated from the fleet file only): inf2 endpoints, GPU fallback,")
    print("    cost monitors, the moto deploy and the migration report.")
    print(f"\ndone in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
