"""Hourly waste detector: idle NeuronCores on paid capacity, and Capacity Blocks ending soon.

Configuration: :class:`~.settings.WasteSettings` (read once per container): utilisation is read from its
``neuron_namespace`` (``NEURON_NAMESPACE`` by default). The decisions are in idle.py, the AWS calls in adapters.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from .adapters import Signals, Topic
from .idle import ending_blocks, idle_instances, messages
from .settings import WasteSettings

logger = Logger(service="neuronfleet-waste")


def run(*, now: datetime, signals: Signals, topic: Topic, threshold: float, hours: int) -> list[str]:
    idle = idle_instances(signals.hourly_utilisation(hours, now), threshold=threshold, hours=hours)
    ending = ending_blocks(signals.capacity_blocks(), now)
    sent = []
    for subject, message in messages(idle, ending, threshold=threshold, hours=hours):
        topic.announce(subject, message)
        sent.append(subject)
    return sent


@dataclass(frozen=True)
class Container:
    """What one Lambda container builds once: its settings and its adapters."""

    settings: WasteSettings
    signals: Signals
    topic: Topic


@cache
def container() -> Container:
    s = WasteSettings.from_environment()
    return Container(settings=s, signals=Signals(boto3.client("cloudwatch"), boto3.client("ec2"), s.neuron_namespace,
                                                 s.utilization_metric), topic=Topic(boto3.client("sns"), s.topic_arn))


@logger.inject_lambda_context
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> list[str]:
    c = container()
    sent = run(now=datetime.now(UTC), signals=c.signals, topic=c.topic, threshold=c.settings.idle_percent,
               hours=c.settings.idle_hours)
    logger.info("waste check", extra={"announced": sent})
    return sent
