"""Daily spend collector: Cost Explorer (+ EC2 Capacity Blocks) -> DynamoDB ledger -> CloudWatch metrics.

Scoping: one collector per fleet (each fleet's CostMonitors), each asking Cost Explorer the account's queries
(grouped by the fleet tag, never filtered to one fleet) and writing and publishing only its own fleet's rows
into its own ledger. Why not one collector per account serving every fleet: every fleet deploys its own
stacks from its own fleet file and owns its ledger, dashboard and alarms; an account-level collector would
need an owner outside any fleet and write into tables it does not own. The price is one query set per fleet
per day ($0.01 a page). Rows of other fleets and untagged rows are counted in the run summary, not written.

Each request is one page ($0.01), retried with exponential backoff when throttled; a repeated page token or more
pages than the cap stop the run before anything is written (cost_explorer.MAX_PAGES). The Spend metric is
made idempotent by the ledger: each run publishes the change of each day's total since what the ledger records
CloudWatch holds, claiming the new totals before PutMetricData and confirming them after (ledger.py), so neither a
retry nor a failed record sends a day twice; the dashboard reads the day's Sum of those changes. Configuration:
:class:`~.settings.CollectorConfig` (read once per container). Spend goes to its ``metrics_namespace``
(``SPEND_NAMESPACE`` by default); the run's own metrics to ``COST_MONITORS_NAMESPACE``, per fleet
(neuronfleet_contract.health: ``service`` and, given ``FLEET``, ``Fleet``).
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
from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError
from neuronfleet_runtime.fleet_metrics import per_fleet

from neuronfleet_contract import namespaces
from neuronfleet_contract.cost import COLLECTOR_METRICS, COLLECTOR_SERVICE, CollectorConfig

from .adapters import cost_explorer
from .adapters.athena import AthenaSpend
from .adapters.block_reservations import CapacityBlocks
from .adapters.cost_explorer import CostExplorer
from .adapters.outputs import SpendMetrics
from .adapters.spend_ledger import SpendLedger
from .logic.block_amortisation import amortise
from .logic.block_fees import extension_blocks, in_sight, reconcile
from .logic.ledger import TRANSACTION_ITEMS, Busy, answered_days, plan
from .logic.rows import BadRow, Basis, CostRow, parse, publishable, totals


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
    ce_pages: int = 0
    kept_rows: int = 0
    """Held rows not retracted because a bad row came from their day."""
    duplicate_rows: int = 0
    unpublishable: list[str] = field(default_factory=list)
    """Ledger rows and totals CloudWatch would refuse (rows.METRIC_VALUE_LIMITS): not published, named."""
    unconfirmed: list[str] = field(default_factory=list)
    """Totals an earlier run claimed and whose PutMetricData outcome it never confirmed: not sent again."""
    ignored_rows: int = 0
    capacity_blocks: int = 0
    unmatched_fees: int = 0
    other_fleets_rows: int = 0
    estimated_days: list[str] = field(default_factory=list)
    unbilled_fees_usd: str = "0"
    """Capacity Blocks the kit bought (its purchase tags) and their extensions (EC2's extension history) whose fee
    Cost Explorer has not booked yet: reported, never written as spend, so a fee is counted once
    (logic/block_fees.py); 0 once Cost Explorer books them. Blocks only when ``extension_fees_unknown`` is set."""
    unbilled_fees: list[str] = field(default_factory=list)
    """Each unbilled purchase (``bought:block:<offering>`` or ``bought:extension:<offering>``, its day and fee), each
    purchase record that could not be read, and, when the history could not be read, a line saying so."""
    extension_fees_unknown: str = ""
    """Why the Capacity Block extension history could not be read this run (throttled, denied, ...): extension fees
    not yet booked are unknown, not $0. Empty when it was read (or there was no block to ask about). The spend the
    run writes (Cost Explorer's rows) does not depend on it."""
    backfill: bool = False
    skipped: str = ""
    answered_days: int = 0
    """Days of the window Cost Explorer's answer covered, marked in the ledger as recorded (ledger.answered_days)."""


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


def collect(*, today: date, lookback_days: int, instance_types: Sequence[str], ce: CostExplorer, ledger: SpendLedger,
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
                           today=today, now=now, on_bad_row=on_bad_row, fleet=fleet, blocks=blocks, basis=basis,
                           run=owner)
        summary.backfill = first
        ledger.set_state(name, last_run=now.isoformat(), first_day=start.isoformat())
        return summary
    finally:
        ledger.unlock(name, owner)


def _collect(*, start: date, end: date, instance_types: Sequence[str], ce: CostExplorer, ledger: SpendLedger,
             metrics: SpendMetrics, today: date, now: datetime, on_bad_row: Callable[[BadRow], None],
             fleet: str | None, blocks: CapacityBlocks | None, basis: Basis, run: str = "") -> RunSummary:
    days = [(start + timedelta(days=i)).isoformat() for i in range((end - start).days)]
    rows: list[CostRow] = []
    bad = ignored = 0
    bad_days: set[str] = set()
    estimated: set[str] = set()
    answered: set[str] = set()
    for adjustments, pages in ((False, ce.pages(start, end, instance_types)), (True, ce.adjustment_pages(start, end))):
        for page in pages:
            parsed = parse(page, adjustments=adjustments)
            if not adjustments:  # the spend's query: the days its answer covers, a day with no spend included
                answered |= parsed.days or set()
            rows += parsed.rows
            ignored += parsed.ignored
            for b in parsed.bad:
                bad += 1
                bad_days.add(b.day)
                on_bad_row(b)
    estimated = {r.day for r in rows if r.estimated}
    fees = [r for r in rows if r.usage == "capacity-block"]
    found = blocks.describe() if blocks is not None else []
    bought, fee_tag_problems = blocks.bought() if blocks is not None else ([], [])
    extensions = blocks.extensions(since=start) if blocks is not None else None
    if extensions is not None:
        bought, fee_tag_problems = bought + extensions.bought, fee_tag_problems + extensions.problems
    judged = reconcile(in_sight([b for b in bought if fleet is None or b.fleet == fleet], start.isoformat()), fees)
    amortised, unmatched = amortise(fees, found + extension_blocks(judged.booked))
    unbilled = judged.pending
    unknown = extensions.unknown if extensions is not None else ""
    rows = [r for r in rows if r.usage != "capacity-block"] + amortised + unmatched
    mine = [r for r in rows if fleet is None or r.fleet == fleet]
    read = set(days) | {r.day for r in mine}
    existing = ledger.existing(read)
    todo = plan(mine, existing, scope=days, fleet=fleet, bad_days=bad_days)
    stamp = now.isoformat()
    ledger.write(todo.writes, stamp)
    ledger.delete(todo.retracted)
    recorded = answered_days(days, answered, bad_days)
    ledger.mark_queried(recorded, stamp)
    published = publish(ledger, metrics, fleet=fleet, basis=basis, days=metric_days(today, now), stamp=stamp,
                        run=run or stamp)
    return RunSummary(days=days, ce_requests=ce.requests, ce_throttled=ce.throttled, rows=len(mine),
                      new=len(todo.new), replaced=len(todo.replaced), unchanged=todo.unchanged, bad_rows=bad,
                      metric_datapoints=published.datapoints, retracted=len(todo.retracted), ignored_rows=ignored,
                      ce_pages=ce.pages_read,
                      kept_rows=todo.kept, duplicate_rows=todo.duplicates, unpublishable=published.unpublishable,
                      unconfirmed=published.unconfirmed,
                      capacity_blocks=len({r.detail for r in amortised if (r.fleet == fleet or fleet is None)
                                           and "/extension/" not in r.detail}),
                      unmatched_fees=len(unmatched), other_fleets_rows=len(rows) - len(mine),
                      estimated_days=sorted(estimated),
                      unbilled_fees_usd=str(sum((r.amount for r in unbilled), Decimal(0))),
                      unbilled_fees=[f"{r.detail} on {r.day}: ${r.amount}" for r in unbilled] + fee_tag_problems
                      + ([f"extensions: unknown this run ({unknown})"] if unknown else []),
                      extension_fees_unknown=unknown, answered_days=len(recorded))


@dataclass
class Publication:
    datapoints: int = 0
    unpublishable: list[str] = field(default_factory=list)
    unconfirmed: list[str] = field(default_factory=list)


_NOT_SENT = (ClientError, EndpointConnectionError, ConnectTimeoutError, ValueError)
"""Errors after which CloudWatch holds nothing of the batch: it answered with an error, no connection was made, or
SpendMetrics refused a value before sending. Any other error (a read timeout after sending) leaves the outcome
unknown: the claim stays, unconfirmed, and the batch is not sent again."""


def publish(ledger: SpendLedger, metrics: SpendMetrics, *, fleet: str | None, basis: Basis, days: Sequence[str],
            stamp: str, run: str = "") -> Publication:
    """Publish ledger total - published total per (day, fleet, family), in batches of at most
    ledger.TRANSACTION_ITEMS: claim the new totals (all of the batch or none), PutMetricData, confirm. A batch
    CloudWatch refused is released and sent by the next run; a batch that was sent is never sent again, even when
    its confirmation fails. Rows and totals CloudWatch would refuse are left out and named (``unpublishable``)."""
    out = Publication()
    if not days:
        return out
    run = run or stamp
    rows = ledger.rows(days)
    for r in rows:
        if not publishable(r.cost(basis)):
            out.unpublishable.append(f"row {'/'.join(r.key)}: {r.cost(basis)}")
    by_fleet: dict[str, dict[tuple[str, str], Decimal]] = {}
    for (d, f, fam), v in totals([r for r in rows if publishable(r.cost(basis))], basis).items():
        by_fleet.setdefault(f, {})[(d, fam)] = v
    fleets = [fleet] if fleet is not None else sorted(by_fleet)
    for f in fleets:
        held = ledger.published(f, days)
        out.unconfirmed += [f"{f}/{d}/{fam}: {h.value} claimed by {h.sending}" for (d, fam), h in sorted(held.items())
                            if h.sending]
        want = dict(by_fleet.get(f, {}))
        for key in held:  # a day/family whose rows were all retracted goes back to 0
            want.setdefault(key, Decimal(0))
        deltas: dict[tuple[str, str, str], Decimal] = {}
        for (d, fam), v in sorted(want.items()):
            delta = v - (held[(d, fam)].value if (d, fam) in held else Decimal(0))
            if delta == 0:
                continue
            if publishable(v) and publishable(delta):
                deltas[(d, f, fam)] = delta
            else:
                out.unpublishable.append(f"total {f}/{d}/{fam}: {v} (change {delta})")
        changed = sorted(deltas)
        for i in range(0, len(changed), TRANSACTION_ITEMS):
            batch = changed[i:i + TRANSACTION_ITEMS]
            new = {(d, fam): want[(d, fam)] for d, _, fam in batch}
            before = {(d, fam): held[(d, fam)].value for d, _, fam in batch if (d, fam) in held}
            ledger.claim_published(f, new, before, run, stamp)
            try:
                out.datapoints += metrics.publish({k: deltas[k] for k in batch})
            except _NOT_SENT:
                ledger.release_published(f, new, before, run, stamp)
                raise
            ledger.confirm_published(f, new, run, stamp)
    return out


SERVICE = COLLECTOR_SERVICE
logger = Logger(service=SERVICE)
metrics = Metrics(namespace=namespaces.COST_MONITORS_NAMESPACE, service=SERVICE)


@dataclass(frozen=True)
class Container:
    """What one Lambda container builds once: its settings and the clients of its adapters (a CostExplorer
    adapter counts one run's requests, so each run gets a new one)."""

    settings: CollectorConfig
    ce_client: Any
    ledger: SpendLedger
    spend: SpendMetrics
    blocks: CapacityBlocks | None


@cache
def container() -> Container:
    settings = CollectorConfig.from_environment()
    return Container(settings=settings, ce_client=boto3.client("athena") if settings.source == "athena"
                     else boto3.client("ce", region_name=cost_explorer.REGION),
                     ledger=SpendLedger(boto3.resource("dynamodb").Table(settings.ledger_table)),
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
    per_fleet(metrics)
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
    if summary.unconfirmed:
        logger.warning("spend totals whose publish was never confirmed (not sent again): compare the dashboard's "
                       "Spend of these days with the ledger's", extra={"unconfirmed": summary.unconfirmed})
    if summary.unpublishable:
        logger.warning("spend CloudWatch would refuse, not published", extra={"unpublishable": summary.unpublishable})
    if summary.extension_fees_unknown:
        logger.warning("Capacity Block extension fees unknown this run (not $0): unbilled_fees_usd counts blocks "
                       "only; the spend written is Cost Explorer's", extra={"reason": summary.extension_fees_unknown})
    counts = (summary.ce_requests, summary.bad_rows, summary.new + summary.replaced, summary.retracted,
              len(summary.unconfirmed), len(summary.unpublishable))
    for name, value in zip(COLLECTOR_METRICS, counts, strict=True):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    logger.info("collected", extra=asdict(summary))
    return asdict(summary)
