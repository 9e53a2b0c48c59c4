"""Daily spend collector: Cost Explorer -> DynamoDB ledger -> CloudWatch metrics.

One GetCostAndUsage query for all fleets (grouped by instance type and the fleet tag), one request per
page ($0.01 each), retried with exponential backoff when throttled. Configuration:
:class:`~.settings.CollectorSettings` (read once per container). Spend goes to its ``metrics_namespace``
(``SPEND_NAMESPACE`` by default); the run's own metrics to ``COST_MONITORS_NAMESPACE``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from . import cost_explorer
from ._shared import namespaces
from .adapters import SpendMetrics
from .cost_explorer import CostExplorer
from .ledger import Ledger, plan
from .rows import BadRow, CostRow, parse_page, totals
from .settings import CollectorSettings


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


SERVICE = "neuronfleet-cost-collector"
logger = Logger(service=SERVICE)
metrics = Metrics(namespace=namespaces.COST_MONITORS_NAMESPACE, service=SERVICE)


@dataclass(frozen=True)
class Container:
    """What one Lambda container builds once: its settings and the clients of its adapters (a CostExplorer
    adapter counts one run's requests, so each run gets a new one)."""

    settings: CollectorSettings
    ce_client: Any
    ledger: Ledger
    spend: SpendMetrics


@cache
def container() -> Container:
    settings = CollectorSettings.from_environment()
    return Container(settings=settings, ce_client=boto3.client("ce", region_name=cost_explorer.REGION),
                     ledger=Ledger(boto3.resource("dynamodb").Table(settings.ledger_table)),
                     spend=SpendMetrics(boto3.client("cloudwatch"), settings.metrics_namespace))


def _log_bad_row(bad: BadRow) -> None:
    logger.warning("bad Cost Explorer row skipped", extra={"day": bad.day, "keys": list(bad.keys), "reason": bad.reason})


@logger.inject_lambda_context
@metrics.log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    c = container()
    now = datetime.now(UTC)
    summary = collect(today=now.date(), lookback_days=c.settings.lookback_days,
                      instance_types=c.settings.instance_types, ce=CostExplorer(c.ce_client), ledger=c.ledger,
                      metrics=c.spend, now=now, on_bad_row=_log_bad_row)
    for name, value in (("CostExplorerRequests", summary.ce_requests), ("BadRows", summary.bad_rows),
                        ("RowsWritten", summary.new + summary.replaced)):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    logger.info("collected", extra=asdict(summary))
    return asdict(summary)
