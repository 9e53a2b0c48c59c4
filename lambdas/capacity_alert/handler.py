"""Lambda entry point for Trainium capacity: EventBridge events of the fleet's capacity, and a scheduled scan of its
Capacity Blocks (the safety net for AWS's own warning event).

Configuration: :class:`neuronfleet_contract.capacity_alert.CapacityAlertConfig` (read once per container).
Metrics: ``CAPACITY_NAMESPACE``, per fleet (neuronfleet_contract.health: ``service`` and, given ``FLEET``, ``Fleet``).
Every announcement goes through the announcements ledger's outbox (neuronfleet_runtime.announcements): once per block and
warning point, once per start and end of a lasting condition, whatever EventBridge retries or however runs overlap;
each run first publishes what earlier runs recorded and could not publish. A malformed event is refused: a log
line and the ``MalformedEvents`` metric, never an exception (a retry would not mend it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext
from neuronfleet_runtime.fleet_metrics import per_fleet

from neuronfleet_contract import namespaces
from neuronfleet_contract.capacity_alert import (
    ANNOUNCEMENTS_METRIC,
    MALFORMED_METRIC,
    SERVICE,
    UNPUBLISHABLE_METRIC,
    CapacityAlertConfig,
)

from .adapters import FleetBlocks, Ledger, Outbox, Outcome, Topic
from .logic import (
    EC2_EVENTS,
    SCHEDULED,
    Action,
    End,
    GpuPoolQueue,
    Ignore,
    Once,
    Refuse,
    Start,
    block_warnings,
    decide,
    detail_type,
    malformed,
)

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=namespaces.CAPACITY_NAMESPACE, service=SERVICE)


def run(event: Any, *, pool: GpuPoolQueue, alerts: Topic, ledger: Ledger, blocks: FleetBlocks, now: datetime,
        deadline: float | None = None) -> dict[str, Any]:
    """Decide what the event means and announce it once (the ledger's outbox; ``deadline``: when this invocation
    ends, epoch seconds). Returns what was announced (including earlier runs' messages completed), left pending,
    set aside (SNS refused the message itself: kept, noticed once, never retried; ``UnpublishableAnnouncements``),
    skipped, or refused. Raises announcements.Unfinished, after doing all it could, when something is left for the
    retry."""
    refusal = malformed(event)
    if refusal:
        logger.error("malformed event refused", extra={"reason": refusal})
        metrics.add_metric(name=MALFORMED_METRIC, unit=MetricUnit.Count, value=1)
        return {"announced": [], "pending": [], "set_aside": [], "skipped": [], "refused": refusal}
    box = ledger.outbox(alerts, deadline=deadline)
    box.complete()
    kind = detail_type(event)
    if kind == SCHEDULED:
        actions: list[Action] = list(block_warnings(blocks.blocks(), now))
    elif kind in EC2_EVENTS:
        rid = str(event["detail"]["capacity-reservation-id"])
        if rid not in blocks.reservation_ids():
            actions = [Ignore(f"capacity reservation {rid!r} is not one of this fleet's")]
        else:
            actions = decide(event, pool=pool, now=now, block=blocks.block(rid))
    else:
        actions = decide(event, pool=pool, now=now)
    pending, skipped = [], []
    for action in actions:
        if isinstance(action, Ignore | Refuse):
            logger.info("ignored", extra={"reason": action.reason})
            skipped.append(action.reason)
            continue
        outcome = _carry_out(action, box)
        if outcome in (Outcome.PENDING, Outcome.UNRECORDED):
            pending.append(action.say.subject)
        elif outcome == Outcome.ALREADY:
            skipped.append(f"already said: {action.say.subject}")
    if box.sent:
        metrics.add_metric(name=ANNOUNCEMENTS_METRIC, unit=MetricUnit.Count, value=len(box.sent))
    if box.set_aside:
        metrics.add_metric(name=UNPUBLISHABLE_METRIC, unit=MetricUnit.Count, value=len(box.set_aside))
    logger.info("capacity check", extra={"detail_type": kind, "announced": box.sent, "pending": pending,
                                         "set_aside": box.set_aside, "skipped": skipped})
    box.finish()
    return {"announced": box.sent, "pending": pending, "set_aside": box.set_aside, "skipped": skipped}


def _carry_out(action: Once | Start | End, box: Outbox) -> Outcome:
    say = (action.say.subject, action.say.message)
    if isinstance(action, Once):
        return box.once(action.key, expires=action.expires, say=say)
    if isinstance(action, Start):
        return box.start(action.kind, action.subject, expires=action.expires, say=say)
    return box.end(action.kind, action.subject, expires=action.expires, say=say)


@dataclass(frozen=True)
class Container:
    """What one Lambda container builds once: its settings and its adapters."""

    settings: CapacityAlertConfig
    alerts: Topic
    ledger: Ledger
    blocks: FleetBlocks


@cache
def container() -> Container:
    s = CapacityAlertConfig.from_environment()
    return Container(settings=s, alerts=Topic(boto3.client("sns"), s.topic_arn),
                     ledger=Ledger(boto3.client("dynamodb"), s.ledger_table),
                     blocks=FleetBlocks(boto3.client("ec2"), boto3.client("resource-groups"),
                                        reservation_ids=s.reservation_ids, resource_group_arns=s.resource_group_arns,
                                        ultraserver_types=s.ultraserver_types))


@logger.inject_lambda_context
@metrics.log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    per_fleet(metrics)
    c = container()
    return run(event.raw_event, pool=c.settings.pool, alerts=c.alerts, ledger=c.ledger, blocks=c.blocks,
               now=datetime.now(UTC), deadline=time.time() + context.get_remaining_time_in_millis() / 1000)
