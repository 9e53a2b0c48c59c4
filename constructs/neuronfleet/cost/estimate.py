"""Evaluation-phase estimate: what the last 30 days of GPU work would cost on Trainium/Inferentia.

    neuronfleet-estimate --csv gpu-spend.csv [--fleet config/prod.yaml]
    neuronfleet-estimate --cost-explorer          # one paginated Cost Explorer query ($0.01 a page)

The CSV has columns ``instance_type,amount_usd,hours`` and optionally ``workload`` (inference | training; default:
inference for ``ml.`` types, training otherwise); hours may be empty (spend / list price is used). Inference maps to
inference types, training to training types, each with enough accelerator memory; throughput is assumed 1:1 and
said so (the weekly report uses the pilot's measured ratio where it has one).
Prices are the catalog's (each with its source and date), with a fleet file's ``prices:`` overrides.
The same logic runs in the weekly migration report.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from ..facts.catalog import CATALOG, AcceleratorFamily
from ..facts.prices import price_table
from ..lambdas.cost.logic.economics import estimate
from ..lambdas.cost.logic.rows import CostRow, family_of, parse_page

__all__ = ["main", "price_table", "rows_from_cost_explorer", "rows_from_csv"]


def rows_from_csv(path: Path) -> list[CostRow]:
    rows = []
    with path.open(newline="") as fh:
        for n, rec in enumerate(csv.DictReader(fh), start=2):
            instance_type = (rec.get("instance_type") or "").strip()
            if family_of(instance_type) != "gpu":
                raise ValueError(f"{path}:{n}: instance_type: got {instance_type!r}; allowed: a GPU type (p*, g*)")
            try:
                amount = Decimal(rec.get("amount_usd") or "")
                hours = Decimal(rec.get("hours") or "0")
            except InvalidOperation:
                raise ValueError(f"{path}:{n}: amount_usd/hours: got {rec.get('amount_usd')!r}/{rec.get('hours')!r}; "
                                 "allowed: decimal numbers") from None
            for field, value in (("amount_usd", amount), ("hours", hours)):
                if not value.is_finite() or value < 0:
                    raise ValueError(f"{path}:{n}: {field}: got {rec.get(field)!r}; allowed: a finite number >= 0")
            kind = (rec.get("workload") or ("inference" if instance_type.startswith("ml.") else "training")).strip()
            if kind not in ("inference", "training"):
                raise ValueError(f"{path}:{n}: workload: got {kind!r}; allowed: inference | training")
            rows.append(CostRow(day="", fleet="", service="ec2", instance_type=instance_type, family="gpu",
                                amount=amount, usage_hours=hours,
                                usage="sagemaker-hosting" if kind == "inference" else "ec2"))
    return rows


def rows_from_cost_explorer(days: int = 30) -> list[CostRow]:
    import boto3

    from ..lambdas.cost.adapters.cost_explorer import CostExplorer

    end = datetime.now(UTC).date()
    ce = CostExplorer(boto3.client("ce", region_name="us-east-1"))
    gpu_types = [t for s in CATALOG if s.family is AcceleratorFamily.GPU for t in (s.instance_type, f"ml.{s.instance_type}")]
    rows: list[CostRow] = []
    for page in ce.pages(end - timedelta(days=days), end, gpu_types):
        rows += parse_page(page)[0]
    print(f"Cost Explorer requests made: {ce.requests} (${ce.requests * 0.01:.2f})", file=sys.stderr)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="neuronfleet-estimate", description=(__doc__ or "").splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--csv", type=Path, help="instance_type,amount_usd,hours rows of GPU spend")
    source.add_argument("--cost-explorer", action="store_true", help="read the last 30 days from Cost Explorer")
    parser.add_argument("--fleet", type=Path, help="a fleet file whose prices: override the catalog")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    catalog, region, overrides = CATALOG, None, {}
    if args.fleet:
        from ..fleetfile.schema import load_fleet

        fleet = load_fleet(args.fleet)
        catalog, region, overrides = fleet.catalog, fleet.region, dict(fleet.prices)
    try:
        rows = rows_from_csv(args.csv) if args.csv else rows_from_cost_explorer()
    except ValueError as exc:
        print(f"neuronfleet-estimate: {exc}", file=sys.stderr)
        return 2
    from .monitors import accelerators_of

    result = estimate(rows, price_table(catalog, region, overrides), accelerators=accelerators_of(catalog))
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(_table(result))
    return 0


def _table(result: dict[str, Any]) -> str:
    lines = [f"{'GPU type':16} {'-> Neuron':16} {'hours':>10} {'GPU spend':>12} {'Neuron est.':>12}  price used"]
    for line in result["lines"]:
        p = line["neuron_price"]
        lines.append(f"{line['gpu_type']:16} {line['neuron_type']:16} {line['instance_hours']:>10} "
                     f"{'$' + line['gpu_spend_usd']:>12} {'$' + line['neuron_estimate_usd']:>12}  "
                     f"{p['usd_per_hour']}/h ({p['source']}, {p['as_of']})")
    lines.append(f"total: GPU ${result['gpu_spend_usd']} -> Neuron ${result['neuron_estimate_usd']} "
                 f"(saves ${result['savings_usd']}, {result['savings_percent']}%)")
    if result["not_estimated"]:
        lines.append("not estimated (no Neuron equivalent): "
                     + ", ".join(f"{k} ${v}" for k, v in result["not_estimated"].items()))
    lines.append(f"assumption: {result['assumption']}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
