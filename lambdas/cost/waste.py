"""Hourly waste detector, scoped to the fleet: idle and silent Neuron instances, reservations with free slots, idle
endpoint variants, GPU standbys, instances running outside the reservation they target, and (not waste, said so a
quiet DRA node is not mistaken for a silent one) instances whose utilisation is not measured (idle.py says what each
is), each announced when it starts and when it ends (the announcements ledger remembers which are open), never
hourly in between. The fleet's endpoints are found at run time by their ``neuronfleet:fleet`` tag
(inventory.FleetEndpoints), not listed in the environment.

Configuration: :class:`~.settings.WasteConfig` (read once per container): utilisation is read from its
``neuron_namespace`` (``NEURON_NAMESPACE`` by default). The decisions are in idle.py, the AWS calls in adapters.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext
from neuronfleet_runtime import announcements
from neuronfleet_runtime.fleet_metrics import per_fleet

from neuronfleet_contract import namespaces
from neuronfleet_contract.cost import WASTE_MALFORMED_METRIC, WASTE_SERVICE, WasteConfig

from .adapters.inventory import FleetInventory
from .adapters.outputs import Ledger, Topic
from .logic.idle import (
    GPU_STANDBY_KIND,
    IDLE_ENDPOINT_KIND,
    IDLE_KIND,
    KINDS,
    OFF_RESERVATION_KIND,
    SILENT_KIND,
    UNMEASURED_KIND,
    UNUSED_RESERVATION_KIND,
    ended,
    ended_message,
    endpoint_waste,
    idle_instances,
    malformed_schedule,
    off_reservation,
    silent_instances,
    started,
    started_message,
    unmeasured_instances,
    unused_reservations,
)

SERVICE = WASTE_SERVICE
logger = Logger(service=SERVICE)
metrics = Metrics(namespace=namespaces.WASTE_NAMESPACE, service=SERVICE)
MALFORMED_METRIC = WASTE_MALFORMED_METRIC
"""Counted in ``WASTE_NAMESPACE`` for each event refused (idle.malformed_schedule), per fleet
(neuronfleet_contract.health: ``service`` and, given ``FLEET``, ``Fleet``; read before the container is built)."""


REMIND_AFTER = timedelta(days=7)
"""An instance idle for a week is announced again (its ledger entry expires)."""


def run(*, now: datetime, inventory: FleetInventory, topic: Topic, ledger: Ledger, threshold: float, hours: int,
        reservation_ids: Sequence[str] = (), deadline: float | None = None) -> list[str]:
    """Announce the fleet's waste conditions that started and ended since the last run (through the ledger's
    outbox, after completing what earlier runs left pending); the SNS subjects sent. Raises
    announcements.Unfinished, after doing all it could, when something is left for the retry."""
    box = ledger.outbox(topic, deadline=deadline)
    box.complete()
    fleet = inventory.fleet
    running = inventory.running_neuron_instances()
    hourly = inventory.hourly_utilisation([i.instance_id for i in running], hours, now)
    idle = dict(idle_instances(hourly, threshold=threshold, hours=hours))
    endpoints = inventory.endpoints.names()
    idle_variants, standbys = endpoint_waste(inventory.variants(endpoints, hours, now) if endpoints else [],
                                             hours=hours)
    current: dict[str, dict[str, str]] = {
        IDLE_KIND: {i: str(avg) for i, avg in idle.items()},
        SILENT_KIND: silent_instances(running, hourly, now=now, hours=hours),
        UNUSED_RESERVATION_KIND: unused_reservations(inventory.reservations(reservation_ids)),
        IDLE_ENDPOINT_KIND: idle_variants,
        GPU_STANDBY_KIND: standbys,
        OFF_RESERVATION_KIND: off_reservation(running),
        UNMEASURED_KIND: unmeasured_instances(running, hourly),
    }
    expires = now + REMIND_AFTER
    for kind in KINDS:
        items = current[kind]
        try:
            change = announcements.changes(items, ledger.open_subjects(kind))
        except Exception as e:
            box.problems.append(f"reading open {kind} conditions: {e}")
            continue
        if kind == IDLE_KIND:
            box.start_all(kind, list(change.started), expires=expires, say=lambda started_: started_message(
                [(i, idle[i]) for i in started_], threshold=threshold, hours=hours))
            box.end_all(kind, change.ended, expires=expires,
                        say=lambda ended_: ended_message(ended_, threshold=threshold))
            continue
        box.start_all(kind, list(change.started), expires=expires, say=_say_started(kind, fleet, items))
        box.end_all(kind, change.ended, expires=expires, say=_say_ended(kind, fleet))
    box.finish()
    return box.sent


def _say_started(kind: str, fleet: str, items: dict[str, str]) -> Callable[[list[str]], tuple[str, str]]:
    return lambda subjects: started(kind, fleet, {s: items[s] for s in subjects})


def _say_ended(kind: str, fleet: str) -> Callable[[list[str]], tuple[str, str]]:
    return lambda subjects: ended(kind, fleet, subjects)


@dataclass(frozen=True)
class Container:
    """What one Lambda container builds once: its settings and its adapters."""

    settings: WasteConfig
    inventory: FleetInventory
    topic: Topic
    ledger: Ledger


@cache
def container() -> Container:
    s = WasteConfig.from_environment()
    return Container(settings=s, inventory=FleetInventory(
                         ec2=boto3.client("ec2"), sagemaker=boto3.client("sagemaker"), cloudwatch=boto3.client("cloudwatch"),
                         tagging=boto3.client("resourcegroupstaggingapi"), fleet=s.fleet, namespace=s.neuron_namespace,
                         metric=s.utilization_metric),
                     topic=Topic(boto3.client("sns"), s.topic_arn), ledger=Ledger(boto3.client("dynamodb"),
                                                                                   s.ledger_table))


@logger.inject_lambda_context
@metrics.log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> list[str]:
    per_fleet(metrics)
    refusal = malformed_schedule(event.raw_event)
    if refusal:
        logger.error("malformed event refused", extra={"reason": refusal})
        metrics.add_metric(name=MALFORMED_METRIC, unit=MetricUnit.Count, value=1)
        return []
    c = container()
    sent = run(now=datetime.now(UTC), inventory=c.inventory, topic=c.topic, ledger=c.ledger,
               threshold=c.settings.idle_percent, hours=c.settings.idle_hours,
               reservation_ids=c.settings.reservation_ids,
               deadline=time.time() + context.get_remaining_time_in_millis() / 1000)
    logger.info("waste check", extra={"announced": sent})
    return sent
