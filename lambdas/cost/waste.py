"""Hourly waste detector: idle NeuronCores on paid capacity, announced when an instance goes idle and when it stops
being idle (the announcements ledger remembers which are open), never hourly in between.

Configuration: :class:`~.settings.WasteSettings` (read once per container): utilisation is read from its
``neuron_namespace`` (``NEURON_NAMESPACE`` by default). The decisions are in idle.py, the AWS calls in adapters.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from ._shared import announcements
from .adapters import Ledger, Signals, Topic
from .idle import IDLE_KIND, ended_message, idle_instances, started_message
from .settings import WasteSettings

logger = Logger(service="neuronfleet-waste")


REMIND_AFTER = timedelta(days=7)
"""An instance idle for a week is announced again (its ledger entry expires)."""


def run(*, now: datetime, signals: Signals, topic: Topic, ledger: Ledger, threshold: float, hours: int) -> list[str]:
    """Announce the instances that went idle and those that stopped being idle since the last run; the subjects."""
    idle = dict(idle_instances(signals.hourly_utilisation(hours, now), threshold=threshold, hours=hours))
    change = announcements.changes({i: str(avg) for i, avg in idle.items()}, ledger.open_subjects(IDLE_KIND))
    sent: list[str] = []

    def say(subject_message: tuple[str, str]) -> None:
        topic.announce(*subject_message)
        sent.append(subject_message[0])

    expires = now + REMIND_AFTER
    ledger.start_all(IDLE_KIND, list(change.started), expires=expires, announce=lambda started: say(
        started_message([(i, idle[i]) for i in started], threshold=threshold, hours=hours)))
    ledger.end_all(IDLE_KIND, change.ended, expires=expires,
                   announce=lambda ended: say(ended_message(ended, threshold=threshold)))
    return sent


@dataclass(frozen=True)
class Container:
    """What one Lambda container builds once: its settings and its adapters."""

    settings: WasteSettings
    signals: Signals
    topic: Topic
    ledger: Ledger


@cache
def container() -> Container:
    s = WasteSettings.from_environment()
    return Container(settings=s, signals=Signals(boto3.client("cloudwatch"), s.neuron_namespace, s.utilization_metric),
                     topic=Topic(boto3.client("sns"), s.topic_arn), ledger=Ledger(boto3.client("dynamodb"),
                                                                                   s.ledger_table))


@logger.inject_lambda_context
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> list[str]:
    c = container()
    sent = run(now=datetime.now(UTC), signals=c.signals, topic=c.topic, ledger=c.ledger,
               threshold=c.settings.idle_percent,
               hours=c.settings.idle_hours)
    logger.info("waste check", extra={"announced": sent})
    return sent
