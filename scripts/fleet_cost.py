#!/usr/bin/env python3
"""What a fleet file's deployment costs an hour, and a run of it end to end, at the kit's own prices only.

    .venv/bin/python scripts/fleet_cost.py -c config/smoke.yaml [--hours H] [--training-hours T]

Every figure comes from the kit: instance rates from its price table (neuronfleet.facts.prices.price_table: the
built-in prices of neuronfleet_contract/data/prices.json, or the fleet file's ``prices:``), each printed with its
source, the region it was read for and whether it is sourced; the kit's own running cost from the overhead bill the
cost monitors carry (neuronfleet.cost.overhead.bill_of_materials over the fleet's stacks, built as the reference app
builds them: a 730-hour month), with what it leaves unpriced. Nothing is looked up live; no AWS call is made.

Standing, every hour the fleet is deployed: each endpoint's ``min_instances`` at its SageMaker hosting rate, a hot GPU
standby's ``min_instances`` (NeuronEndpoint.standby_usd_per_hour's rule), and the overhead bill / 730. While a Batch
job runs: the cluster's instances at their EC2 rate (the compute environment keeps 0 vCPUs between jobs,
neuronfleet.training.batch). A training cluster on a reservation (ODCR, Capacity Block) is refused here: what it costs
is the reservation's, not an hourly rate of the kit's.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CENT = Decimal("0.01")
MILL = Decimal("0.0001")


@dataclass(frozen=True)
class Line:
    """One priced line: ``count`` x ``instance_type`` at ``usd_per_hour`` each, with the price's provenance."""

    what: str
    count: int
    instance_type: str
    usd_per_hour: Decimal
    entry: dict[str, str]

    @property
    def hourly(self) -> Decimal:
        return self.count * self.usd_per_hour

    def render(self, region: str) -> str:
        e = self.entry
        flags = "" if e.get("sourced", "true") == "true" else "; UNSOURCED"
        note = (f"; {e['note']}" if e.get("note") else
                "" if e["region"] == region else f"; the fleet runs in {region}, where the price may differ")
        return (f"  {self.what}: {self.count} x {self.instance_type} at ${self.usd_per_hour}/h = "
                f"${self.hourly.quantize(MILL)}/h  [{e['source']}, {e['as_of']}, read for {e['region']}{flags}{note}]")


@dataclass(frozen=True)
class FleetCost:
    fleet: str
    region: str
    standing: tuple[Line, ...]
    training: tuple[Line, ...]
    overhead_monthly: Decimal
    hours_per_month: Decimal
    unpriced: tuple[str, ...]

    @property
    def overhead_hourly(self) -> Decimal:
        return self.overhead_monthly / self.hours_per_month

    @property
    def standing_hourly(self) -> Decimal:
        return sum((line.hourly for line in self.standing), Decimal(0)) + self.overhead_hourly

    @property
    def training_hourly(self) -> Decimal:
        return sum((line.hourly for line in self.training), Decimal(0))

    def run(self, hours: Decimal, training_hours: Decimal) -> Decimal:
        """A run: deployed for ``hours``, with ``training_hours`` of it running a job on every training cluster."""
        return self.standing_hourly * hours + self.training_hourly * training_hours


def _line(table: dict[str, dict[str, str]], what: str, count: int, instance_type: str) -> Line:
    entry = table.get(instance_type)
    if entry is None or entry.get("usd_per_hour") in (None, "", "None"):
        raise SystemExit(f"fleet_cost: {what}: {instance_type}: the kit has no price for it; set one under prices: in "
                         "the fleet file (docs/cost.md)")
    return Line(what, count, instance_type, Decimal(entry["usd_per_hour"]), entry)


def fleet_cost(fleet: Any, stacks: list[Any]) -> FleetCost:
    """The cost of ``fleet`` (a loaded Fleet) whose ``stacks`` build_fleet built."""
    from neuronfleet.cost.overhead import bill_of_materials
    from neuronfleet.facts.overhead_prices import hours_per_month
    from neuronfleet.facts.prices import price_table

    table = price_table(region=fleet.region, overrides=fleet.prices)
    standing: list[Line] = []
    for e in fleet.endpoints:
        serving = e.gpu_variant.instance_type if e.serves_on_gpu else e.instance_type  # cutover serve_on: gpu
        standing.append(_line(table, f"endpoint {e.name}, serving variant (min_instances)", e.min_instances, serving))
        gpu = e.live_gpu_variant  # hot (the failover's target) or shadow: runs instances; warm runs none
        if gpu is not None:
            kind = "shadow" if gpu.shadow else "standby, hot"
            standing.append(_line(table, f"endpoint {e.name}, GPU {kind} (min_instances)", gpu.min_instances,
                                  gpu.instance_type))
    training: list[Line] = []
    for c in fleet.training_clusters:
        if c.capacity.type != "on-demand":
            raise SystemExit(f"fleet_cost: training_clusters {c.name}: capacity {c.capacity.type}: its cost is the "
                             "reservation's (docs/capacity-blocks.md), not an hourly rate of the kit's")
        training.append(_line(table, f"training cluster {c.name} ({c.scheduler}, while a job runs)", c.count,
                              c.instance_type))
    bill = bill_of_materials(*stacks, region=fleet.region)
    unpriced = tuple(f"{i.key} x{i.count} ({i.reason})" for i in bill.items if not i.priced)
    return FleetCost(fleet.name, fleet.region, tuple(standing), tuple(training), bill.total_monthly_usd,
                     hours_per_month(), unpriced)


def build(path: Path) -> tuple[Any, list[Any]]:
    """Load ``path`` and build its stacks as the reference app does (no synth to disk)."""
    from aws_cdk import App

    from neuronfleet import load_fleet
    from stacks import build_fleet

    fleet = load_fleet(path)
    return fleet, build_fleet(App(), fleet)


def render(cost: FleetCost, path: str, hours: Decimal, training_hours: Decimal) -> str:
    out = [f"{cost.fleet} ({path}), {cost.region}: the kit's prices (neuronfleet.facts.prices.price_table, "
           "neuronfleet.cost.overhead.bill_of_materials); no live price",
           "standing, every hour the fleet is deployed:"]
    out += [line.render(cost.region) for line in cost.standing]
    out.append(f"  the kit's own running cost: ${cost.overhead_monthly.quantize(CENT)} a month / {cost.hours_per_month} h"
               f" = ${cost.overhead_hourly.quantize(MILL)}/h")
    out.append(f"  not priced (neuronfleet_contract.overhead.REASONS; docs/cost.md): {', '.join(cost.unpriced) or 'none'}")
    out.append(f"  standing total: ${cost.standing_hourly.quantize(MILL)}/h")
    out.append("while a training job runs (the compute environment keeps 0 vCPUs between jobs):")
    out += [line.render(cost.region) for line in cost.training]
    out.append(f"  training total: ${cost.training_hourly.quantize(MILL)}/h")
    total = cost.run(hours, training_hours).quantize(CENT, ROUND_HALF_UP)
    out.append(f"a run deployed {hours} h with {training_hours} h of training: ${total} (the lines not priced above "
               "not counted)")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-c", "--config", type=Path, default=ROOT / "config" / "smoke.yaml")
    parser.add_argument("--hours", type=Decimal, default=Decimal(4),
                        help="how long the fleet stands, first deploy to destroyed (default 4)")
    parser.add_argument("--training-hours", type=Decimal, default=Decimal(1),
                        help="of those, the hours a training job holds the cluster's instances (default 1)")
    args = parser.parse_args(argv)
    if args.hours < 0 or args.training_hours < 0 or args.training_hours > args.hours:
        parser.error(f"--hours {args.hours} --training-hours {args.training_hours}: allowed: 0 <= training hours "
                     "<= hours")
    from neuronfleet import FleetConfigError

    try:
        fleet, stacks = build(args.config)
    except FleetConfigError as exc:
        print(f"fleet_cost: {exc}", file=sys.stderr)
        return 2
    print(render(fleet_cost(fleet, stacks), str(args.config), args.hours, args.training_hours))
    return 0


if __name__ == "__main__":
    sys.exit(main())
