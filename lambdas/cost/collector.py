"""Daily spend collector: Cost Explorer (+ EC2 Capacity Blocks) -> DynamoDB ledger -> CloudWatch metrics.

Scoping: one collector per fleet (each fleet's CostMonitors), each asking Cost Explorer the account's queries
(grouped by the fleet tag, never filtered to one fleet) and writing and publishing only its own fleet's rows
into its own ledger. Why not one collector per account serving every fleet: every fleet deploys its own
stacks from its own fleet file and owns its ledger, dashboard and alarms; an account-level collector would
need an owner outside any fleet and write into tables it does not own. The price is one query set per fleet
per day ($0.01 a page). Rows of other fleets and untagged rows are counted in the run summary, not written.

Each request is one page ($0.01), retried with exponential backoff when throttled. Configuration:
:class:`~.settings.CollectorSettings` (read once per container). Spend goes to its ``metrics_namespace``
(``SPEND_NAMESPACE`` by default); the run's own metrics to ``COST_MONITORS_NAMESPACE``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
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
from .capacity_blocks import CapacityBlocks, amortise
from .cost_explorer import CostExplorer
from .cur import AthenaSpend
from .ledger import Busy, Ledger, plan
from .rows import BadRow, Basis, CostRow, parse, totals
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
    retracted: int = 0
    ignored_rows: int = 0
    capacity_blocks: int = 0
    unmatched_fees: int = 0
    other_fleets_rows: int = 0
    estimated_days: list[str] = field(default_factory=list)
    backfill: bool = False
    skipped: str = ""


METRIC_MAX_AGE = timedelta(days=14)
"""PutMetricData accepts timestamps up to two weeks before the current date (botocore 1.44.5 cloudwatch model,
PutMetricData documentation, read 2026-11-22): older days stay in the ledger (the report reads them)."""
LOCK_SECONDS = 15 * 60
"""The run lock outlives the Lambda's timeout (10 minutes), so a crashed run frees it."""


def window(today: date, lookback_days: int, month_close_days: int) -> tuple[date, date]:
    """The days asked for: the last ``lookback_days`` and, while Cost Explorer may still revise them (Savings
    Plan and credit application at month end), the whole current month, and the previous month during the
    first ``month_close_days`` of a month."""
    start = min(today - timedelta(days=lookback_days), today.replace(day=1))
    if today.day <= month_close_days:
        start = min(start, (today.replace(day=1) - timedelta(days=1)).replace(day=1))
    return start, today


def metric_days(today: date, now: datetime) -> list[str]:
    """Days CloudWatch still accepts datapoints for (timestamped at noon UTC), yesterday included, today not."""
    out = []
    for back in range(1, METRIC_MAX_AGE.days + 1):
        day = today - timedelta(days=back)
        if datetime.combine(day, datetime.min.time(), UTC) + timedelta(hours=12) > now - METRIC_MAX_AGE:
            out.append(day.isoformat())
    return sorted(out)


def collect(*, today: date, lookback_days: int, instance_types: Sequence[str], ce: CostExplorer, ledger: Ledger,
            metrics: SpendMetrics, now: datetime, on_bad_row: Callable[[BadRow], None], fleet: str | None = None,
            blocks: CapacityBlocks | None = None, basis: Basis = "net_amortized", backfill_days: int = 0,
            month_close_days: int = 0, owner: str = "") -> RunSummary:
    """One run: Cost Explorer (and the Capacity Blocks) -> ledger rows -> CloudWatch, under the run lock.

    ``fleet``: this collector's fleet; only its rows are written and published (None: every fleet's, for
    tools). ``backfill_days``: on the first run (no collector state in the ledger), read this many days."""
    name = f"collector#{fleet or '*'}"
    owner = owner or f"{now.isoformat()}#{uuid.uuid4()}"
    try:
        ledger.lock(name, owner, now, LOCK_SECONDS)
    except Busy as exc:
        return RunSummary(days=[], ce_requests=0, ce_throttled=0, rows=0, new=0, replaced=0, unchanged=0, bad_rows=0,
                          metric_datapoints=0, skipped=str(exc))
    try:
        first = backfill_days > 0 and ledger.state(name) is None
        start, end = window(today, max(lookback_days, backfill_days if first else 0), month_close_days)
        summary = _collect(start=start, end=end, instance_types=instance_types, ce=ce, ledger=ledger, metrics=metrics,
                           today=today, now=now, on_bad_row=on_bad_row, fleet=fleet, blocks=blocks, basis=basis)
        summary.backfill = first
        ledger.set_state(name, last_run=now.isoformat(), first_day=start.isoformat())
        return summary
    finally:
        ledger.unlock(name, owner)


def _collect(*, start: date, end: date, instance_types: Sequence[str], ce: CostExplorer, ledger: Ledger,
             metrics: SpendMetrics, today: date, now: datetime, on_bad_row: Callable[[BadRow], None],
             fleet: str | None, blocks: CapacityBlocks | None, basis: Basis) -> RunSummary:
    days = [(start + timedelta(days=i)).isoformat() for i in range((end - start).days)]
    rows: list[CostRow] = []
    bad = ignored = 0
    estimated: set[str] = set()
    for adjustments, pages in ((False, ce.pages(start, end, instance_types)), (True, ce.adjustment_pages(start, end))):
        for page in pages:
            parsed = parse(page, adjustments=adjustments)
            rows += parsed.rows
            ignored += parsed.ignored
            for b in parsed.bad:
                bad += 1
                on_bad_row(b)
    estimated = {r.day for r in rows if r.estimated}
    fees = [r for r in rows if r.usage == "capacity-block"]
    found = blocks.describe() if blocks is not None else []
    amortised, unmatched = amortise(fees, found)
    rows = [r for r in rows if r.usage != "capacity-block"] + amortised + unmatched
    mine = [r for r in rows if fleet is None or r.fleet == fleet]
    read = set(days) | {r.day for r in mine}
    existing = ledger.existing(read)
    todo = plan(mine, existing, scope=days, fleet=fleet)
    stamp = now.isoformat()
    ledger.write(todo.writes, stamp)
    ledger.delete(todo.retracted)
    published = publish(ledger, metrics, fleet=fleet, basis=basis, days=metric_days(today, now), stamp=stamp)
    return RunSummary(days=days, ce_requests=ce.requests, ce_throttled=ce.throttled, rows=len(mine),
                      new=len(todo.new), replaced=len(todo.replaced), unchanged=todo.unchanged, bad_rows=bad,
                      metric_datapoints=published, retracted=len(todo.retracted), ignored_rows=ignored,
                      capacity_blocks=len({r.detail for r in amortised if r.fleet == fleet or fleet is None}),
                      unmatched_fees=len(unmatched), other_fleets_rows=len(rows) - len(mine),
                      estimated_days=sorted(estimated))


def publish(ledger: Ledger, metrics: SpendMetrics, *, fleet: str | None, basis: Basis, days: Sequence[str],
            stamp: str) -> int:
    """Publish ledger total - published total per (day, fleet, family); record each batch's new totals only
    after CloudWatch took it. A failed publish leaves the published totals as they were: the next run sends
    the same deltas again."""
    if not days:
        return 0
    by_fleet: dict[str, dict[tuple[str, str], Decimal]] = {}
    for (d, f, fam), v in totals(ledger.rows(days), basis).items():
        by_fleet.setdefault(f, {})[(d, fam)] = v
    fleets = [fleet] if fleet is not None else sorted(by_fleet)
    sent = 0
    for f in fleets:
        held = ledger.published(f, days)
        want = dict(by_fleet.get(f, {}))
        for key in held:  # a day/family whose rows were all retracted goes back to 0
            want.setdefault(key, Decimal(0))
        deltas = {(d, f, fam): v - held.get((d, fam), Decimal(0)) for (d, fam), v in want.items()}
        changed = sorted(k for k, v in deltas.items() if v != 0)
        for i in range(0, len(changed), 1000):
            batch = changed[i:i + 1000]
            sent += metrics.publish({k: deltas[k] for k in batch})
            ledger.mark_published(f, {(d, fam): want[(d, fam)] for d, _, fam in batch},
                                  {(d, fam): held[(d, fam)] for d, _, fam in batch if (d, fam) in held}, stamp)
    return sent


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
    blocks: CapacityBlocks | None


@cache
def container() -> Container:
    settings = CollectorSettings.from_environment()
    return Container(settings=settings, ce_client=boto3.client("athena") if settings.source == "athena"
                     else boto3.client("ce", region_name=cost_explorer.REGION),
                     ledger=Ledger(boto3.resource("dynamodb").Table(settings.ledger_table)),
                     spend=SpendMetrics(boto3.client("cloudwatch"), settings.metrics_namespace),
                     blocks=CapacityBlocks(boto3.client("ec2"), fleet=settings.fleet,
                                           reservation_ids=settings.reservation_ids,
                                           group_arns=settings.resource_group_arns,
                                           groups=boto3.client("resource-groups") if settings.resource_group_arns
                                           else None) if settings.capacity_blocks else None)


def _log_bad_row(bad: BadRow) -> None:
    logger.warning("bad Cost Explorer row skipped", extra={"day": bad.day, "keys": list(bad.keys), "reason": bad.reason})


@logger.inject_lambda_context
@metrics.log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    c = container()
    now = datetime.now(UTC)
    s = c.settings
    source: Any = AthenaSpend(c.ce_client, workgroup=s.athena_workgroup, table=s.athena_table) \
        if s.source == "athena" else CostExplorer(c.ce_client)
    summary = collect(today=now.date(), lookback_days=s.lookback_days, instance_types=s.instance_types,
                      ce=source, ledger=c.ledger, metrics=c.spend, now=now,
                      on_bad_row=_log_bad_row, fleet=s.fleet, blocks=c.blocks, basis=s.basis,  # type: ignore[arg-type]
                      backfill_days=s.backfill_days, month_close_days=s.month_close_days,
                      owner=context.aws_request_id)
    if summary.skipped:
        logger.warning("skipped: another run holds the lock", extra=asdict(summary))
    for name, value in (("CostExplorerRequests", summary.ce_requests), ("BadRows", summary.bad_rows),
                        ("RowsWritten", summary.new + summary.replaced), ("RowsRetracted", summary.retracted)):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    logger.info("collected", extra=asdict(summary))
    return asdict(summary)
