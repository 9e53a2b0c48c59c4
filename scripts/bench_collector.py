"""Spend-collector benchmark: 100,000 Cost Explorer rows through the collector, time and memory in separate runs.

Cost Explorer pages come through boto3 from moto (real request/response parsing, real request count). The ledger
and the metrics publisher are in-memory stand-ins with the adapters' interface, so the figures measure the
collector, not moto's DynamoDB (--moto-ledger uses it, slowly).

- time run (no tracemalloc, which slows Python several-fold): wall time of a first run (every row new) and a
  rerun, split into time inside the Cost Explorer client (moto answering + botocore parsing the pages) and the
  kit's own time (the rest); then the kit alone: the same pages already parsed, fed to the collector.
- memory run (a separate process, under tracemalloc): peak Python memory of the same first run, and the
  process's maximum resident set.

    python scripts/bench_collector.py [--rows 100000] [--page-size 1000] [--moto-ledger]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator, Sequence
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
from neuronfleet.lambdas.cost.adapters.cost_explorer import CostExplorer  # noqa: E402
from neuronfleet.lambdas.cost.adapters.spend_ledger import SpendLedger  # noqa: E402
from neuronfleet.lambdas.cost.logic.ledger import Published, item  # noqa: E402
from neuronfleet.lambdas.cost.logic.rows import CostRow  # noqa: E402

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
            usage_type = f"USE2-Host:{t}" if t.startswith("ml.") else f"USE2-BoxUsage:{t}"
            by_day.setdefault(d, []).append({"Keys": [usage_type, f"neuronfleet:fleet$fleet-{f:04d}"], "Metrics": {
                "NetAmortizedCost": {"Amount": f"{(d + 1) * 1.25 + f:.2f}", "Unit": "USD"},
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


class MemoryLedger(SpendLedger):
    def __init__(self) -> None:
        self.items: dict[tuple[str, str], dict[str, Any]] = {}
        self.pub: dict[str, dict[tuple[str, str], Decimal]] = {}
        self.states: dict[str, dict[str, Any]] = {}

    def existing(self, days: Any) -> dict[tuple[str, str], dict[str, Any]]:
        wanted = {f"DAY#{d}" for d in days}
        return {k: v for k, v in self.items.items() if k[0] in wanted}

    def write(self, rows: Sequence[CostRow], updated_at: str) -> None:
        for row in rows:
            self.items[row.key] = item(row, updated_at)

    def delete(self, keys: Sequence[tuple[str, str]]) -> None:
        for k in keys:
            self.items.pop(k, None)

    def published(self, fleet: str, days: Sequence[str]) -> dict[tuple[str, str], Published]:
        wanted = set(days)
        return {k: Published(v) for k, v in self.pub.get(fleet, {}).items() if k[0] in wanted}

    def claim_published(self, fleet: str, totals: Any, expected: Any, run: str, updated_at: str) -> None:
        self.pub.setdefault(fleet, {}).update(totals)

    def confirm_published(self, fleet: str, totals: Any, run: str, updated_at: str) -> None:
        return None

    def release_published(self, fleet: str, totals: Any, previous: Any, run: str, updated_at: str) -> None:
        for key in totals:
            if key in previous:
                self.pub[fleet][key] = previous[key]
            else:
                self.pub[fleet].pop(key, None)

    def lock(self, name: str, owner: str, now: datetime, seconds: int) -> None:
        return None

    def unlock(self, name: str, owner: str) -> None:
        return None

    def state(self, name: str) -> dict[str, Any] | None:
        return self.states.get(name)

    def set_state(self, name: str, **values: Any) -> None:
        self.states[name] = values


class MemoryMetrics(collector.SpendMetrics):
    def __init__(self) -> None:
        super().__init__(None, "NeuronFleet/Cost")

    def publish(self, deltas: dict[tuple[str, str, str], Decimal]) -> int:
        return sum(1 for v in deltas.values() if v != 0)


class TimedClient:
    """The Cost Explorer client, timing each call (moto + botocore parsing)."""

    def __init__(self, client: Any) -> None:
        self._client, self.seconds = client, 0.0
        self.pages: list[dict[str, Any]] = []

    def get_cost_and_usage(self, **kwargs: Any) -> dict[str, Any]:
        t = time.perf_counter()
        page: dict[str, Any] = self._client.get_cost_and_usage(**kwargs)
        self.seconds += time.perf_counter() - t
        self.pages.append(page)
        return page


class Replay:
    """Pages already parsed, with the CostExplorer adapter's interface: the kit alone."""

    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self._pages, self.requests, self.throttled, self.pages_read = pages, 0, 0, 0

    def pages(self, start: date, end: date, instance_types: Sequence[str]) -> Iterator[dict[str, Any]]:
        for p in self._pages[:-1]:
            self.requests += 1
            yield p

    def adjustment_pages(self, start: date, end: date) -> Iterator[dict[str, Any]]:
        self.requests += 1
        yield self._pages[-1]


def run_once(ledger: SpendLedger, metrics: collector.SpendMetrics, ce: Any) -> tuple[collector.RunSummary, float]:
    start = time.perf_counter()
    summary = collector.collect(today=TODAY, lookback_days=DAYS, instance_types=TYPES, ce=ce, ledger=ledger,
                                metrics=metrics, now=datetime.combine(TODAY, datetime.min.time(), UTC) +
                                timedelta(hours=6), on_bad_row=lambda b: None)
    return summary, time.perf_counter() - start


def _setup(args: argparse.Namespace) -> tuple[SpendLedger, collector.SpendMetrics, int]:
    if args.moto_ledger:
        table = boto3.resource("dynamodb").create_table(
            TableName="ledger", BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "sk", "AttributeType": "S"}])
        ledger: SpendLedger = SpendLedger(table)
        metrics: collector.SpendMetrics = collector.SpendMetrics(boto3.client("cloudwatch"), "NeuronFleet/Cost")
    else:
        ledger, metrics = MemoryLedger(), MemoryMetrics()
    generated = pages(args.rows, args.page_size)
    generated.append({"ResultsByTime": [], "DimensionValueAttributes": []})  # the adjustments query's page
    requests.post("http://motoapi.amazonaws.com/moto-api/static/ce/cost-and-usage-results",
                  json={"results": generated}, timeout=60)
    return ledger, metrics, len(generated)


def time_run(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with mock_aws():
        ledger, metrics, n_pages = _setup(args)
        for label in ("first run", "rerun"):
            client = TimedClient(boto3.client("ce", region_name="us-east-1"))
            summary, elapsed = run_once(ledger, metrics, CostExplorer(client))
            out[label] = {"rows": summary.rows, "pages": n_pages, "requests": summary.ce_requests,
                          "seconds": elapsed, "sdk_seconds": client.seconds, "kit_seconds": elapsed - client.seconds,
                          "new": summary.new, "unchanged": summary.unchanged,
                          "datapoints": summary.metric_datapoints}
            parsed = client.pages
        fresh, fresh_metrics = (MemoryLedger(), MemoryMetrics()) if not args.moto_ledger else (ledger, metrics)
        summary, elapsed = run_once(fresh, fresh_metrics, Replay(parsed))
        out["kit alone"] = {"rows": summary.rows, "seconds": elapsed}
    return out


def memory_run(args: argparse.Namespace) -> dict[str, Any]:
    with mock_aws():
        ledger, metrics, _ = _setup(args)
        tracemalloc.start()
        summary, _ = run_once(ledger, metrics, CostExplorer(boto3.client("ce", region_name="us-east-1")))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return {"rows": summary.rows, "peak_mib": peak / 2**20,
            "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--page-size", type=int, default=1000)
    parser.add_argument("--moto-ledger", action="store_true", help="moto's DynamoDB and CloudWatch (slow)")
    parser.add_argument("--mode", choices=("both", "time", "memory"), default="both", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode != "both":
        print(json.dumps(time_run(args) if args.mode == "time" else memory_run(args)))
        return 0
    results = {}
    for mode in ("time", "memory"):  # separate processes: tracemalloc never slows the timed run
        cmd = [sys.executable, __file__, "--mode", mode, "--rows", str(args.rows), "--page-size", str(args.page_size)]
        cmd += ["--moto-ledger"] if args.moto_ledger else []
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        results[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    t, m = results["time"], results["memory"]
    for label in ("first run", "rerun"):
        r = t[label]
        print(f"{label:9s}: {r['rows']} rows, {r['requests']} Cost Explorer requests for {r['pages']} pages "
              f"(${r['requests'] * 0.01:.2f}) in {r['seconds']:.2f} s: Cost Explorer client (moto + botocore "
              f"parsing) {r['sdk_seconds']:.2f} s, the kit's own {r['kit_seconds']:.2f} s; new {r['new']}, "
              f"unchanged {r['unchanged']}, metric datapoints {r['datapoints']}")
    k = t["kit alone"]
    print(f"kit alone: {k['rows']} rows from pages already parsed in {k['seconds']:.2f} s "
          f"({k['seconds'] / max(k['rows'], 1) * 100_000:.2f} s per 100,000 rows)")
    print(f"memory   : peak {m['peak_mib']:.0f} MiB of Python objects (tracemalloc, separate run), "
          f"max resident set {m['max_rss_mib']:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
