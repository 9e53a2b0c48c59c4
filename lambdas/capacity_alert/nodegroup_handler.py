"""Lambda entry point for EKS node-group capacity: every few minutes (EventBridge schedule), each of the fleet's
Neuron node groups is described; a node group that cannot get its nodes is announced once per episode, and once
more when it can again; a node the group replaced (its Auto Scaling activities: a termination, then a launch) is
announced once.

Configuration: :class:`neuronfleet_contract.nodegroup_capacity.NodegroupAlertConfig` (read once per container).
Metrics: ``CapacityAnnouncements``, ``UnreadableNodegroups`` (node groups whose description is not of botocore's
shape: each announced once per episode, the others still checked) and ``UnpublishableAnnouncements`` (messages SNS
refused as such, set aside by the outbox) in ``CAPACITY_NAMESPACE`` under the capacity alerts' service, per fleet
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
from neuronfleet_runtime.fleet_metrics import per_fleet

from neuronfleet_contract import namespaces
from neuronfleet_contract.capacity_alert import ANNOUNCEMENTS_METRIC, SERVICE, UNPUBLISHABLE_METRIC
from neuronfleet_contract.nodegroup_capacity import UNREADABLE_METRIC, NodegroupAlertConfig

from .adapters import FleetNodegroups, Ledger, Outbox, Outcome, Topic
from .handler import _carry_out
from .logic import CONDITION_TTL, End, GpuPoolQueue, Ignore, Refuse
from .nodegroups import (
    REPLACED_KIND,
    Nodegroup,
    Unreadable,
    actions,
    nodegroup,
    readable,
    replaced,
    replaced_subject,
    replacement_say,
    scaling_activities,
    unchecked,
    unreadable,
)

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=namespaces.CAPACITY_NAMESPACE, service=SERVICE)


def run(*, groups: FleetNodegroups, pool: GpuPoolQueue | None, alerts: Topic, ledger: Ledger, now: datetime,
        deadline: float | None = None) -> dict[str, Any]:
    """Describe each node group and announce what changed, once. Returns what was announced (earlier runs'
    messages included), left pending, set aside, skipped and not checked. Each node group is handled on its own:
    one that cannot be described, or read, or whose handling fails, never keeps the others from being checked.
    Raises announcements.Unfinished, after doing all it could, when something is left for the retry."""
    box = ledger.outbox(alerts, deadline=deadline)
    box.complete()
    out: dict[str, list[str]] = {"pending": [], "skipped": [], "not_checked": [], "unreadable": []}
    for name in groups.names:
        try:
            _check(name, groups, pool=pool, box=box, now=now, out=out)
        except Exception as exc:  # a fault of this node group's handling: the others are still checked
            logger.exception("node group check failed", extra={"node_group": name})
            out["not_checked"].append(f"{name}: {type(exc).__name__}: {exc}")
            box.problems.append(f"checking node group {name}: {type(exc).__name__}: {exc}")
    if box.sent:
        metrics.add_metric(name=ANNOUNCEMENTS_METRIC, unit=MetricUnit.Count, value=len(box.sent))
    if out["unreadable"]:
        metrics.add_metric(name=UNREADABLE_METRIC, unit=MetricUnit.Count, value=len(out["unreadable"]))
    if box.set_aside:
        metrics.add_metric(name=UNPUBLISHABLE_METRIC, unit=MetricUnit.Count, value=len(box.set_aside))
    logger.info("node group check", extra={"announced": box.sent, "set_aside": box.set_aside, **out})
    box.finish()
    return {"announced": box.sent, "pending": out["pending"], "set_aside": box.set_aside,
            "skipped": out["skipped"], "not_checked": out["not_checked"], "unreadable": out["unreadable"]}


def _check(name: str, groups: FleetNodegroups, *, pool: GpuPoolQueue | None, box: Outbox, now: datetime,
           out: dict[str, list[str]]) -> None:
    looked = groups.describe(name)
    todo: list[Any]
    group: Nodegroup | None = None
    if looked.error is not None:
        todo = [unchecked(name, looked.error)]
        out["not_checked"].append(f"{name}: {looked.error}")
    else:
        try:
            group = nodegroup(looked.doc)
        except Unreadable as exc:
            logger.error("node group description unreadable", extra={"node_group": name, "problems": str(exc)})
            todo = [unreadable(groups.cluster, name, exc, now=now)]
            out["not_checked"].append(f"{name}: unreadable")
            out["unreadable"].append(f"{name}: {exc}")
        else:
            todo = [readable(groups.cluster, name, now=now), *actions(group, pool=pool, now=now)]
    for action in todo:
        if isinstance(action, Ignore | Refuse):
            logger.warning("node group not checked", extra={"reason": action.reason})
            continue
        outcome = _carry_out(action, box)
        if outcome in (Outcome.PENDING, Outcome.UNRECORDED):
            out["pending"].append(action.say.subject)
        elif outcome == Outcome.ALREADY and not isinstance(action, End):  # an End of nothing open: no news
            out["skipped"].append(f"already said: {action.say.subject}")
    if group is not None and groups.autoscaling is not None:
        _replacements(group, groups, box=box, now=now, out=out)  # after its capacity: a fault here spares that


def _replacements(group: Nodegroup, groups: FleetNodegroups, *, box: Outbox, now: datetime,
                  out: dict[str, list[str]]) -> None:
    """Announce, once each, the nodes the group's Auto Scaling groups replaced (nodegroups.replaced). An activity
    list that cannot be read or is of another shape leaves them for the next run (nothing claimed)."""
    for asg in group.auto_scaling_groups:
        looked = groups.activities(asg)
        if looked.error is not None:
            out["not_checked"].append(f"{group.name}: replacements: {looked.error}")
            continue
        try:
            pairs = replaced(scaling_activities(looked.doc), now=now)
        except Unreadable as exc:
            logger.error("scaling activities unreadable", extra={"node_group": group.name, "problems": str(exc)})
            out["not_checked"].append(f"{group.name}: replacements: unreadable")
            out["unreadable"].append(f"{group.name} ({asg}): {exc}")
            continue
        if not pairs:
            continue
        subjects = [replaced_subject(group, t) for t, _ in pairs]
        before = len(box.problems)
        recorded = box.start_all(REPLACED_KIND, subjects, expires=now + CONDITION_TTL,
                                 say=replacement_say(group, pairs))
        if len(box.problems) > before:
            out["pending"] += [s for s in subjects if s not in recorded]
        out["skipped"] += [f"already said: replaced {s}" for s in subjects if s not in recorded
                           and len(box.problems) == before]


@dataclass(frozen=True)
class Container:
    settings: NodegroupAlertConfig
    alerts: Topic
    ledger: Ledger
    groups: FleetNodegroups


@cache
def container() -> Container:
    s = NodegroupAlertConfig.from_environment()
    return Container(settings=s, alerts=Topic(boto3.client("sns"), s.topic_arn),
                     ledger=Ledger(boto3.client("dynamodb"), s.ledger_table),
                     groups=FleetNodegroups(boto3.client("eks"), cluster=s.cluster_name, names=s.node_groups,
                                            autoscaling=boto3.client("autoscaling")))


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    per_fleet(metrics)
    c = container()
    return run(groups=c.groups, pool=c.settings.pool, alerts=c.alerts, ledger=c.ledger, now=datetime.now(UTC),
               deadline=time.time() + context.get_remaining_time_in_millis() / 1000)
