"""Scale benchmark: a Rainier-scale fleet synthesised through the CDK CLI, against an empty app.

Writes a fleet of 2,000 Trn2 UltraServers (8,000 trn2u.48xlarge in 20 clusters of 100 UltraServers, their
Capacity Blocks spread over 3 AZs) and 100 endpoints (spread over ``inference_stacks`` stacks by name), then
prints: the median synth time of each and their ratio, the largest template's resources and bytes, and the
resources per cluster and per endpoint (which must not grow with instance counts).

    python scripts/bench_scale.py [--runs 3] [--clusters 20] [--ultraservers 2000] [--endpoints 100]

A script, not a test: shared machines are noisy; compare the ratio. The cluster and endpoint entries are
copied from config/prod.yaml's UltraServer cluster and config/dev.yaml's endpoint, so the fleet follows the kit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.bench_synth import EMPTY_APP, ROOT, _time_synth

AZS = ["us-east-2a", "us-east-2b", "us-east-2c"]
ULTRASERVER = 4  # trn2u.48xlarge instances per Trn2 UltraServer (the catalog's ultraserver_size)


def rainier(*, clusters: int = 20, ultraservers: int = 2000, endpoints: int = 100,
            inference_stacks: int = 16) -> dict[str, Any]:
    """A fleet file (as a mapping) at Rainier scale, built from the kit's own example entries."""
    prod = yaml.safe_load((ROOT / "config" / "prod.yaml").read_text())
    dev = yaml.safe_load((ROOT / "config" / "dev.yaml").read_text())
    (base_cluster,) = [c for c in prod["training_clusters"] if c["instance_type"] == "trn2u.48xlarge"]
    base_endpoint = dev["endpoints"][0]
    per_cluster = ultraservers // clusters
    account = prod["account"]
    fleet = {k: v for k, v in prod.items() if k not in ("training_clusters", "endpoints")}
    fleet["name"] = "nf-rainier"
    fleet["inference_stacks"] = inference_stacks
    # The cost monitors' report and waste functions carry every endpoint in their environment, which does not fit
    # Lambda's 4 KB at this scale (synth refuses it, see README "Large fleets"): measured without them.
    fleet["cost_monitors"] = {"enabled": False}
    fleet["training_clusters"] = [{
        **base_cluster, "name": f"ultra-{i:02d}", "count": per_cluster * ULTRASERVER,
        "job_nodes": per_cluster * ULTRASERVER,
        "capacity": {"type": "capacity-block", "availability_zone": AZS[i % len(AZS)],
                     "resource_group_arn": f"arn:aws:resource-groups:us-east-2:{account}:group/ultra-{i:02d}"},
    } for i in range(clusters)]
    fleet["endpoints"] = [{**base_endpoint, "name": f"model-{i:03d}"} for i in range(endpoints)]
    return fleet


def resources(template: dict[str, Any]) -> int:
    return len(template.get("Resources", {}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--ultraservers", type=int, default=2000)
    parser.add_argument("--endpoints", type=int, default=100)
    parser.add_argument("--inference-stacks", type=int, default=16)
    args = parser.parse_args()
    fleet = rainier(clusters=args.clusters, ultraservers=args.ultraservers, endpoints=args.endpoints,
                    inference_stacks=args.inference_stacks)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rainier.yaml"
        path.write_text(yaml.safe_dump(fleet, sort_keys=False))
        empty = Path(tmp) / "empty"
        empty.mkdir()
        (empty / "app.py").write_text(EMPTY_APP)
        context = json.loads((ROOT / "cdk.json").read_text())
        (empty / "cdk.json").write_text(json.dumps({**context, "app": f"{sys.executable} app.py"}))
        times: dict[str, list[float]] = {"empty app": [], "rainier": []}
        out = Path(tmp) / "out"
        for i in range(args.runs):  # interleaved, so drift on a shared machine hits both alike
            times["empty app"].append(_time_synth(empty, [], Path(tmp) / f"e{i}"))
            times["rainier"].append(_time_synth(ROOT, ["-c", f"config={path}"], out))
        templates = {p.name.removesuffix(".template.json"): (json.loads(p.read_text()), p.stat().st_size)
                     for p in out.glob("*.template.json")}
    medians = {k: statistics.median(v) for k, v in times.items()}
    instances = sum(c["count"] for c in fleet["training_clusters"])
    print(f"fleet: {len(fleet['training_clusters'])} clusters, {instances:,} trn2u.48xlarge "
          f"({instances // ULTRASERVER:,} UltraServers) over {len(AZS)} AZs, {len(fleet['endpoints'])} endpoints in "
          f"{fleet['inference_stacks']} stack partitions; {len(templates)} stacks (cost monitors off: their "
          "environment does not fit 100 endpoints)")
    for name, values in times.items():
        print(f"{name:10s} median {medians[name]:6.2f} s  (runs: {', '.join(f'{v:.2f}' for v in values)})")
    print(f"ratio rainier/empty: {medians['rainier'] / medians['empty app']:.2f}x (goal: <= 2x)")
    biggest = max(templates, key=lambda n: resources(templates[n][0]))
    heaviest = max(templates, key=lambda n: templates[n][1])
    print(f"most resources: {biggest}: {resources(templates[biggest][0])} (limit 500)")
    print(f"largest template: {heaviest}: {templates[heaviest][1]:,} bytes (limit 1,000,000)")
    train = [resources(t) for n, (t, _) in templates.items() if "-train-" in n]
    inference = {n: resources(t) for n, (t, _) in templates.items() if "-inference" in n}
    print(f"resources per training cluster: min {min(train)}, max {max(train)} "
          f"(for {fleet['training_clusters'][0]['count']} instances each)")
    print(f"inference stacks: {len(inference)}, resources {min(inference.values())}-{max(inference.values())}, "
          f"{sum(inference.values()) / len(fleet['endpoints']):.1f} per endpoint on average")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
