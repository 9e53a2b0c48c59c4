"""Lambda entry point for Trainium capacity events (EventBridge).

Configuration: :class:`~.settings.CapacityAlertSettings` (read once per container). Metrics: ``CAPACITY_NAMESPACE``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from ._shared import namespaces, topic
from .logic import GpuPool, UnknownEvent, alert
from .settings import CapacityAlertSettings

SERVICE = "neuronfleet-capacity"
logger = Logger(service=SERVICE)
metrics = Metrics(namespace=namespaces.CAPACITY_NAMESPACE, service=SERVICE)


def run(event: Mapping[str, Any], *, pool: GpuPool, alerts: topic.Topic) -> dict[str, str]:
    try:
        message = alert(event, pool)
    except UnknownEvent as exc:
        logger.warning(str(exc))
        metrics.add_metric(name="UnknownCapacityEvents", unit=MetricUnit.Count, value=1)
        return {"action": "ignored", "reason": str(exc)}
    alerts.announce(message.subject, message.message)
    logger.info("capacity event announced", extra={"subject": message.subject})
    metrics.add_metric(name="CapacityEvents", unit=MetricUnit.Count, value=1)
    return {"action": "announced", "subject": message.subject}


@dataclass(frozen=True)
class Container:
    """What one Lambda container builds once: its settings and its adapters."""

    settings: CapacityAlertSettings
    alerts: topic.Topic


@cache
def container() -> Container:
    settings = CapacityAlertSettings.from_environment()
    return Container(settings=settings, alerts=topic.Topic(boto3.client("sns"), settings.topic_arn))


@logger.inject_lambda_context
@metrics.log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, str]:
    c = container()
    return run(event, pool=c.settings.pool, alerts=c.alerts)
