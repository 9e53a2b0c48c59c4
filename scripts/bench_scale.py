"""Scale benchmark: a Rainier-scale fleet synthesised through the CDK CLI, against an empty app.

Writes a fleet of 2,000 Trn2 UltraServers (8,000 trn2u.48xlarge in 20 clusters of 100 UltraServers, their
Capacity Blocks spread over 3 AZs) and 100 endpoints (spread over ``inference_stacks`` stacks by name), then
prints:
- the median synth time of each through the CLI and their ratio, and the same with CDK's built-in template
  validation off (``cdk synth --no-validation``), which shows what that validation costs each;
- where the fleet's time goes, measured in process in one run: importing, building the construct tree (with the
  number of jsii round trips to Node.js), CDK's synth, the kit's checks of the written templates;
- the largest template's resources and bytes, and the resources per cluster and per endpoint (which must not
  grow with instance counts).

    python scripts/bench_scale.py [--runs 3] [--clusters 20] [--ultraservers 2000] [--endpoints 100]

A script, not a test: shared machines are noisy; compare the ratio. The cluster and endpoint entries are
copied from config/prod.yaml's UltraServer cluster and, alternately, config/dev.yaml's endpoint and prod's endpoint
with a GPU fallback, so the fleet follows the kit.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.bench_synth import ROOT, phases, print_phases, print_times, time_against_empty

AZS = ["us-east-2a", "us-east-2b", "us-east-2c"]
ULTRASERVER = 4  # trn2u.48xlarge instances per Trn2 UltraServer (the catalog's ultraserver_size)


def rainier(*, clusters: int = 20, ultraservers: int = 2000, endpoints: int = 100,
            inference_stacks: int = 16) -> dict[str, Any]:
    """A fleet file (as a mapping) at Rainier scale, built from the kit's own example entries."""
    prod = yaml.safe_load((ROOT / "config" / "prod.yaml").read_text())
    dev = yaml.safe_load((ROOT / "config" / "dev.yaml").read_text())
    (base_cluster,) = [c for c in prod["training_clusters"] if c["instance_type"] == "trn2u.48xlarge"]
    # every other endpoint has a GPU fallback (prod's), so the failover functions carry their share
    bases = [dev["endpoints"][0], next(e for e in prod["endpoints"] if e.get("gpu_variant"))]
    per_cluster = ultraservers // clusters
    account = prod["account"]
    fleet = {k: v for k, v in prod.items() if k not in ("training_clusters", "endpoints")}
    fleet["name"] = "nf-rainier"
    fleet["inference_stacks"] = inference_stacks
    fleet["training_clusters"] = [{
        **base_cluster, "name": f"ultra-{i:02d}", "count": per_cluster * ULTRASERVER,
        "job_nodes": per_cluster * ULTRASERVER,
        "capacity": {"type": "capacity-block", "availability_zone": AZS[i % len(AZS)],
                     "resource_group_arn": f"arn:aws:resource-groups:us-east-2:{account}:group/ultra-{i:02d}"},
    } for i in range(clusters)]
    fleet["endpoints"] = [{**bases[i % 2], "name": f"model-{i:03d}"} for i in range(endpoints)]
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
        out = Path(tmp) / "out"
        times = time_against_empty(Path(tmp), "rainier", ["-c", f"config={path}"], args.runs, out)
        templates = {p.name.removesuffix(".template.json"): (json.loads(p.read_text()), p.stat().st_size)
                     for p in out.glob("*.template.json")}
        split = phases(path, Path(tmp) / "phases")
    instances = sum(c["count"] for c in fleet["training_clusters"])
    print(f"fleet: {len(fleet['training_clusters'])} clusters, {instances:,} trn2u.48xlarge "
          f"({instances // ULTRASERVER:,} UltraServers) over {len(AZS)} AZs, {len(fleet['endpoints'])} endpoints in "
          f"{fleet['inference_stacks']} stack partitions (every other one with a GPU fallback), cost monitors on; "
          f"{len(templates)} stacks")
    print_times(times, "rainier", 2)
    print_phases(split, len(fleet["endpoints"]) + len(fleet["training_clusters"]), "endpoint or cluster")
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
