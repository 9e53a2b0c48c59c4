"""Daily spend collector: Cost Explorer -> DynamoDB ledger -> CloudWatch metrics.

One GetCostAndUsage query for all fleets (grouped by instance type and the fleet tag), one request per
page ($0.01 each), retried with exponential backoff when throttled. Environment: LEDGER_TABLE,
INSTANCE_TYPES (JSON list: the accelerator types to ask for), LOOKBACK_DAYS (default 3: Cost Explorer
revises recent days), METRICS_NAMESPACE.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from .cost_explorer import CostExplorer
from .ledger import Ledger, plan
from .rows import BadRow, CostRow, parse_page, totals


class SpendMetrics:
    """PutMetricData, batched; datapoints carry the day they are about."""

    def __init__(self, client: Any, namespace: str) -> None:
        self._client = client
        self.namespace = namespace

    def publish(self, deltas: dict[tuple[str, str, str], Decimal]) -> int:
        data = [{"MetricName": "Spend", "Unit": "None", "Value": float(value),
                 "Timestamp": datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC),
                 "Dimensions": [{"Name": "Fleet", "Value": fleet}, {"Name": "Family", "Value": family}]}
                for (day, fleet, family), value in sorted(deltas.items()) if value != 0]
        for i in range(0, len(data), 1000):
            self._client.put_metric_data(Namespace=self.namespace, MetricData=data[i:i + 1000])
        return len(data)


@dataclass
class RunSummary:
    days: list[str]
    ce_requests: int
    ce_throttled: int
    rows: int
    new: int
    replaced: int
    unchanged: int
    bad_rows: int
    metric_datapoints: int


def collect(*, today: date, lookback_days: int, instance_types: Sequence[str], ce: CostExplorer, ledger: Ledger,
            metrics: SpendMetrics, now: datetime, on_bad_row: Callable[[BadRow], None]) -> RunSummary:
    start, end = today - timedelta(days=lookback_days), today
    days = [(start + timedelta(days=i)).isoformat() for i in range(lookback_days)]
    rows: list[CostRow] = []
    bad = 0
    for page in ce.pages(start, end, instance_types):
        good, rejected = parse_page(page)
        rows += good
        for b in rejected:
            bad += 1
            on_bad_row(b)
    existing = ledger.existing(days)
    todo = plan(rows, existing)
    ledger.write(todo.writes, now.isoformat())
    # CloudWatch datapoints cannot be replaced: publish the change of each (day, fleet, family) total, so
    # the Sum over a day is the ledger's figure after corrections too, and a rerun publishes nothing.
    deltas = totals(todo.writes)
    for row in todo.replaced:
        key = (row.day, row.fleet, row.family)
        deltas[key] -= Decimal(str(existing[row.key]["amount"]))
    published = metrics.publish(deltas)
    return RunSummary(days=days, ce_requests=ce.requests, ce_throttled=ce.throttled, rows=len(rows),
                      new=len(todo.new), replaced=len(todo.replaced), unchanged=todo.unchanged, bad_rows=bad,
                      metric_datapoints=published)


logger = Logger(service="neuronfleet-cost-collector")
metrics = Metrics(namespace="NeuronFleet/CostMonitors", service="neuronfleet-cost-collector")


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    def on_bad_row(bad: BadRow) -> None:
        logger.warning("bad Cost Explorer row skipped", extra={"day": bad.day, "keys": list(bad.keys),
                                                               "reason": bad.reason})

    now = datetime.now(UTC)
    summary = collect(
        today=now.date(), lookback_days=int(os.environ.get("LOOKBACK_DAYS", "3")),
        instance_types=json.loads(os.environ["INSTANCE_TYPES"]),
        ce=CostExplorer(boto3.client("ce", region_name="us-east-1")),  # Cost Explorer's only endpoint
        ledger=Ledger(boto3.resource("dynamodb").Table(os.environ["LEDGER_TABLE"])),
        metrics=SpendMetrics(boto3.client("cloudwatch"), os.environ.get("METRICS_NAMESPACE", "NeuronFleet/Cost")),
        now=now, on_bad_row=on_bad_row)
    for name, value in (("CostExplorerRequests", summary.ce_requests), ("BadRows", summary.bad_rows),
                        ("RowsWritten", summary.new + summary.replaced)):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    logger.info("collected", extra=asdict(summary))
    return asdict(summary)
