"""Spend-collector benchmark: 100,000 Cost Explorer rows through the collector.

Cost Explorer pages come through boto3 from moto (real request/response parsing, real request count).
The ledger and the metrics publisher are in-memory stand-ins with the adapters' interface, so the figures
measure the collector, not moto's DynamoDB (which needs minutes for 100,000 items; --moto-ledger uses it).
Prints wall time, peak Python memory (tracemalloc) and Cost Explorer requests for a first run (every row
new) and a rerun (nothing changes). A script, not a test: shared machines are noisy.

    python scripts/bench_collector.py [--rows 100000] [--page-size 1000] [--moto-ledger]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-2")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")

import boto3  # noqa: E402
import requests  # noqa: E402
from moto import mock_aws  # noqa: E402

from neuronfleet.lambdas.cost import collector  # noqa: E402
from neuronfleet.lambdas.cost.cost_explorer import CostExplorer  # noqa: E402
from neuronfleet.lambdas.cost.ledger import Ledger, item  # noqa: E402
from neuronfleet.lambdas.cost.rows import CostRow  # noqa: E402

TYPES = ["trn2.48xlarge", "trn1.32xlarge", "ml.inf2.xlarge", "ml.inf2.48xlarge", "p5.48xlarge", "ml.g6e.12xlarge"]
TODAY = date(2026, 11, 1)
DAYS = 30


def pages(rows: int, page_size: int) -> list[dict[str, Any]]:
    fleets = max(1, -(-rows // (DAYS * len(TYPES))))
    groups = [(d, t, f) for d in range(DAYS) for f in range(fleets) for t in TYPES][:rows]
    out = []
    for i in range(0, len(groups), page_size):
        chunk = groups[i:i + page_size]
        by_day: dict[int, list[dict[str, Any]]] = {}
        for d, t, f in chunk:
            by_day.setdefault(d, []).append({"Keys": [t, f"neuronfleet:fleet$fleet-{f:04d}"], "Metrics": {
                "UnblendedCost": {"Amount": f"{(d + 1) * 1.25 + f:.2f}", "Unit": "USD"},
                "UsageQuantity": {"Amount": "24", "Unit": "Hrs"}}})
        page: dict[str, Any] = {"ResultsByTime": [{"TimePeriod": {"Start": (TODAY - timedelta(days=DAYS - d)).isoformat(),
                                                  "End": (TODAY - timedelta(days=DAYS - d - 1)).isoformat()},
                                   "Groups": g, "Total": {}, "Estimated": False} for d, g in sorted(by_day.items())],
                "DimensionValueAttributes": []}
        if i + page_size < len(groups):
            page["NextPageToken"] = f"p{i // page_size + 1}"
        out.append(page)
    return out


class MemoryLedger(Ledger):
    def __init__(self) -> None:
        self.items: dict[tuple[str, str], dict[str, Any]] = {}

    def existing(self, days: Sequence[str]) -> dict[tuple[str, str], dict[str, Any]]:
        wanted = {f"DAY#{d}" for d in days}
        return {k: v for k, v in self.items.items() if k[0] in wanted}

    def write(self, rows: Sequence[CostRow], updated_at: str) -> None:
        for row in rows:
            self.items[row.key] = item(row, updated_at)


class MemoryMetrics(collector.SpendMetrics):
    def __init__(self) -> None:
        super().__init__(None, "NeuronFleet/Cost")

    def publish(self, deltas: dict[tuple[str, str, str], Decimal]) -> int:
        return sum(1 for v in deltas.values() if v != 0)


def run_once(ledger: Ledger, metrics: collector.SpendMetrics) -> tuple[collector.RunSummary, float, int]:
    tracemalloc.start()
    start = time.perf_counter()
    summary = collector.collect(today=TODAY, lookback_days=DAYS, instance_types=TYPES,
                                ce=CostExplorer(boto3.client("ce", region_name="us-east-1")), ledger=ledger,
                                metrics=metrics, now=datetime.now(UTC),
                                on_bad_row=lambda b: None)
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return summary, elapsed, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--page-size", type=int, default=1000)
    parser.add_argument("--moto-ledger", action="store_true", help="moto's DynamoDB and CloudWatch (slow)")
    args = parser.parse_args()
    with mock_aws():
        if args.moto_ledger:
            table = boto3.resource("dynamodb").create_table(
                TableName="ledger", BillingMode="PAY_PER_REQUEST",
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                      {"AttributeName": "sk", "AttributeType": "S"}])
            ledger, metrics = Ledger(table), collector.SpendMetrics(boto3.client("cloudwatch"), "NeuronFleet/Cost")
        else:
            ledger, metrics = MemoryLedger(), MemoryMetrics()
        generated = pages(args.rows, args.page_size)
        requests.post("http://motoapi.amazonaws.com/moto-api/static/ce/cost-and-usage-results",
                      json={"results": generated}, timeout=30)
        for label in ("first run", "rerun"):
            summary, elapsed, peak = run_once(ledger, metrics)
            print(f"{label:9s}: {summary.rows} rows from {len(generated)} pages in {elapsed:.1f} s, "
                  f"peak memory {peak / 2**20:.0f} MiB, Cost Explorer requests {summary.ce_requests} "
                  f"(${summary.ce_requests * 0.01:.2f}); new {summary.new}, replaced {summary.replaced}, "
                  f"unchanged {summary.unchanged}, metric datapoints {summary.metric_datapoints}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
