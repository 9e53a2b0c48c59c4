"""Lambda entry point for Trainium capacity: EventBridge events of the fleet's capacity, and a scheduled scan of its
Capacity Blocks (the safety net for AWS's own warning event).

Configuration: :class:`~.settings.CapacityAlertSettings` (read once per container). Metrics: ``CAPACITY_NAMESPACE``.
Every announcement goes through the announcements ledger: once per block and warning point, once per start and end
of a lasting condition, whatever EventBridge retries or however runs overlap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from ._shared import namespaces
from .adapters import FleetBlocks, Ledger, Topic
from .logic import (
    EC2_EVENTS,
    SCHEDULED,
    Action,
    End,
    GpuPool,
    Ignore,
    Once,
    Say,
    Start,
    block_warnings,
    decide,
    detail_type,
)
from .settings import CapacityAlertSettings

SERVICE = "neuronfleet-capacity"
logger = Logger(service=SERVICE)
metrics = Metrics(namespace=namespaces.CAPACITY_NAMESPACE, service=SERVICE)


def run(event: Mapping[str, Any], *, pool: GpuPool, alerts: Topic, ledger: Ledger, blocks: FleetBlocks,
        now: datetime) -> dict[str, Any]:
    """Decide what the event means and announce it at most once. Returns what was announced and skipped."""
    kind = detail_type(event)
    if kind == SCHEDULED:
        actions: list[Action] = list(block_warnings(blocks.blocks(), now))
    elif kind in EC2_EVENTS:
        rid = str((event.get("detail") or {}).get("capacity-reservation-id", ""))
        if rid not in blocks.reservation_ids():
            actions = [Ignore(f"capacity reservation {rid!r} is not one of this fleet's")]
        else:
            actions = decide(event, pool=pool, now=now, block=blocks.block(rid))
    else:
        actions = decide(event, pool=pool, now=now)
    announced, skipped = [], []
    for action in actions:
        if isinstance(action, Ignore):
            logger.info("ignored", extra={"reason": action.reason})
            skipped.append(action.reason)
            continue
        if _carry_out(action, alerts, ledger):
            announced.append(action.say.subject)
        else:
            skipped.append(f"already said: {action.say.subject}")
    if announced:
        metrics.add_metric(name="CapacityAnnouncements", unit=MetricUnit.Count, value=len(announced))
    logger.info("capacity check", extra={"detail_type": kind, "announced": announced, "skipped": skipped})
    return {"announced": announced, "skipped": skipped}


def _carry_out(action: Once | Start | End, alerts: Topic, ledger: Ledger) -> bool:
    say: Say = action.say

    def announce() -> None:
        alerts.announce(say.subject, say.message)

    if isinstance(action, Once):
        return ledger.once(action.key, expires=action.expires, announce=announce)
    if isinstance(action, Start):
        return ledger.start(action.kind, action.subject, expires=action.expires, announce=announce)
    return ledger.end(action.kind, action.subject, expires=action.expires, announce=announce)


@dataclass(frozen=True)
class Container:
    """What one Lambda container builds once: its settings and its adapters."""

    settings: CapacityAlertSettings
    alerts: Topic
    ledger: Ledger
    blocks: FleetBlocks


@cache
def container() -> Container:
    s = CapacityAlertSettings.from_environment()
    return Container(settings=s, alerts=Topic(boto3.client("sns"), s.topic_arn),
                     ledger=Ledger(boto3.client("dynamodb"), s.ledger_table),
                     blocks=FleetBlocks(boto3.client("ec2"), boto3.client("resource-groups"),
                                        reservation_ids=s.reservation_ids, resource_group_arns=s.resource_group_arns,
                                        ultraserver_types=s.ultraserver_types))


@logger.inject_lambda_context
@metrics.log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    c = container()
    return run(event.raw_event, pool=c.settings.pool, alerts=c.alerts, ledger=c.ledger, blocks=c.blocks,
               now=datetime.now(UTC))
