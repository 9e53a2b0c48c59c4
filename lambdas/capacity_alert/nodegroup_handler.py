"""Lambda entry point for EKS node-group capacity: every few minutes (EventBridge schedule), each of the fleet's
Neuron node groups is described; a node group that cannot get its nodes is announced once per episode, and once
more when it can again.

Configuration: :class:`neuronfleet_contract.nodegroup_capacity.NodegroupAlertSettings` (read once per container).
Metrics: ``CapacityAnnouncements`` in ``CAPACITY_NAMESPACE`` under the capacity alerts' service, per fleet
(neuronfleet_contract.health: ``service`` and, given ``FLEET``, ``Fleet``).
Announcements go through the ledger's outbox (neuronfleet_runtime.announcements), as the capacity alerts' do: each
run first publishes what earlier runs recorded and could not; overlapping runs never announce one episode twice. A
node group that cannot be described this run is left as it was and looked at again next run.
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
from aws_lambda_powertools.utilities.typing import LambdaContext
from neuronfleet_runtime.health import per_fleet

from neuronfleet_contract import namespaces
from neuronfleet_contract.capacity_alert import ANNOUNCEMENTS_METRIC, SERVICE
from neuronfleet_contract.nodegroup_capacity import NodegroupAlertSettings

from .adapters import FleetNodegroups, Ledger, Outcome, Topic
from .handler import _carry_out
from .logic import End, GpuPoolQueue, Ignore, Refuse
from .nodegroups import actions, nodegroup, unchecked

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=namespaces.CAPACITY_NAMESPACE, service=SERVICE)


def run(*, groups: FleetNodegroups, pool: GpuPoolQueue | None, alerts: Topic, ledger: Ledger, now: datetime,
        deadline: float | None = None) -> dict[str, Any]:
    """Describe each node group and announce what changed, once. Returns what was announced (earlier runs'
    messages included), left pending, skipped and not checked. Raises announcements.Unfinished, after doing all it
    could, when something is left for the retry."""
    box = ledger.outbox(alerts, deadline=deadline)
    box.complete()
    pending: list[str] = []
    skipped: list[str] = []
    not_checked: list[str] = []
    for name in groups.names:
        doc = groups.describe(name)
        if isinstance(doc, str):
            todo: list[Any] = [unchecked(name, doc)]
            not_checked.append(f"{name}: {doc}")
        else:
            try:
                todo = actions(nodegroup(doc), pool=pool, now=now)
            except (KeyError, TypeError, ValueError) as exc:
                todo = [unchecked(name, f"unreadable description ({type(exc).__name__}: {exc})")]
                not_checked.append(f"{name}: unreadable")
        for action in todo:
            if isinstance(action, Ignore | Refuse):
                logger.warning("node group not checked", extra={"reason": action.reason})
                continue
            outcome = _carry_out(action, box)
            if outcome in (Outcome.PENDING, Outcome.UNRECORDED):
                pending.append(action.say.subject)
            elif outcome == Outcome.ALREADY and not isinstance(action, End):  # an End of nothing open: no news
                skipped.append(f"already said: {action.say.subject}")
    if box.sent:
        metrics.add_metric(name=ANNOUNCEMENTS_METRIC, unit=MetricUnit.Count, value=len(box.sent))
    logger.info("node group check", extra={"announced": box.sent, "pending": pending, "skipped": skipped,
                                           "not_checked": not_checked})
    box.finish()
    return {"announced": box.sent, "pending": pending, "skipped": skipped, "not_checked": not_checked}


@dataclass(frozen=True)
class Container:
    settings: NodegroupAlertSettings
    alerts: Topic
    ledger: Ledger
    groups: FleetNodegroups


@cache
def container() -> Container:
    s = NodegroupAlertSettings.from_environment()
    return Container(settings=s, alerts=Topic(boto3.client("sns"), s.topic_arn),
                     ledger=Ledger(boto3.client("dynamodb"), s.ledger_table),
                     groups=FleetNodegroups(boto3.client("eks"), cluster=s.cluster_name, names=s.node_groups))


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    per_fleet(metrics)
    c = container()
    return run(groups=c.groups, pool=c.settings.pool, alerts=c.alerts, ledger=c.ledger, now=datetime.now(UTC),
               deadline=time.time() + context.get_remaining_time_in_millis() / 1000)
