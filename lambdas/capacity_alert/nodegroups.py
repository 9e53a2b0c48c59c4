"""An EKS managed node group's description -> what to announce, once per node group and episode. Pure logic.

The node group's ``health.issues`` of a launch kind (neuronfleet_contract.nodegroup_capacity.LAUNCH_ISSUES) open the
lasting condition "cannot get its nodes" (announced once when it starts, with what the GPU pool can take when AWS's
words are a capacity refusal, as the Batch path's launch messages say); a description without one closes it
(announced once, only if it was open). Tested on aws-cli's own describe-nodegroup example (tests/data/aws_cli) and
variations of it.

A description of another shape than botocore's (a member of another type, a node group without a name) is not
guessed at: :func:`nodegroup` raises :class:`Unreadable` naming every member, its value and what is allowed, and
:func:`unreadable` makes it the lasting condition "cannot be read" of that node group (announced once per episode,
once more when it can be read again); its capacity condition stays as it was.

Replaced nodes: the node group's Auto Scaling activities (DescribeScalingActivities) with a termination followed by a
launch (:func:`replaced`) are announced once each (:data:`REPLACED_KIND`), with AWS's cause: node auto repair's
Replace, an EC2 health check or an operator. Tested on botocore's and the EC2 Auto Scaling user guide's examples.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from neuronfleet_contract.nodegroup_capacity import CONDITION_KIND, LAUNCH_ISSUES, UNREADABLE_KIND
from neuronfleet_contract.problems import MISSING, Problem, render

from .logic import CONDITION_TTL, Action, End, GpuPoolQueue, Ignore, Say, Start, _pool_lines, is_capacity_refusal


@dataclass(frozen=True)
class Issue:
    code: str
    message: str
    resource_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Nodegroup:
    """What the alerts read of DescribeNodegroup's ``nodegroup`` (botocore 1.44.5 eks Nodegroup shape)."""

    cluster: str
    name: str
    status: str
    desired: int
    capacity_type: str
    auto_scaling_groups: tuple[str, ...]
    issues: tuple[Issue, ...]

    @property
    def launch_issues(self) -> tuple[Issue, ...]:
        return tuple(i for i in self.issues if i.code in LAUNCH_ISSUES)


class Unreadable(ValueError):
    """A node group description the alerts cannot read: each problem names the member, its value and what is
    allowed (botocore 1.44.5 eks Nodegroup shape)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__(render(problems, "the node group's description"))


def _text(doc: Mapping[str, Any], key: str, problems: list[Problem], *, where: str = "",
          required: bool = False) -> str | None:
    value = doc.get(key, MISSING)
    if value is MISSING or value is None:
        if required:
            problems.append(Problem(f"{where}{key}", MISSING, "a non-blank string"))
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        problems.append(Problem(f"{where}{key}", value, "a non-blank string" if required else "a string"))
        return None
    return value


def _object(value: Any, where: str, problems: list[Problem]) -> Mapping[str, Any]:
    """``value`` if it is an object, {} if absent (null), else a problem and {}."""
    if value is None or value is MISSING:
        return {}
    if not isinstance(value, Mapping):
        problems.append(Problem(where, value, "an object"))
        return {}
    return value


def _items(value: Any, where: str, problems: list[Problem]) -> list[Mapping[str, Any]]:
    """The objects of list ``value`` ([] if absent); every other element or type a problem."""
    if value is None or value is MISSING:
        return []
    if not isinstance(value, list):
        problems.append(Problem(where, value, "a list of objects"))
        return []
    out = []
    for i, item in enumerate(value):
        if isinstance(item, Mapping):
            out.append(item)
        else:
            problems.append(Problem(f"{where}[{i}]", item, "an object"))
    return out


def nodegroup(doc: Any) -> Nodegroup:
    """DescribeNodegroup's ``nodegroup`` member as the alerts read it; :class:`Unreadable` naming every member of
    another shape (none is guessed at: a wrong reading would open or close a condition falsely)."""
    problems: list[Problem] = []
    if not isinstance(doc, Mapping):
        raise Unreadable([Problem("nodegroup", MISSING if doc is None else doc,
                                  "an object (DescribeNodegroup's nodegroup)")])
    cluster = _text(doc, "clusterName", problems, required=True)
    name = _text(doc, "nodegroupName", problems, required=True)
    status = _text(doc, "status", problems)
    capacity_type = _text(doc, "capacityType", problems)
    scaling = _object(doc.get("scalingConfig"), "scalingConfig", problems)
    desired = scaling.get("desiredSize", 0)
    if desired is None:
        desired = 0
    if not isinstance(desired, int) or isinstance(desired, bool) or desired < 0:
        problems.append(Problem("scalingConfig.desiredSize", desired, "a whole number of nodes, 0 or more"))
        desired = 0
    groups = []
    resources = _object(doc.get("resources"), "resources", problems)
    for i, g in enumerate(_items(resources.get("autoScalingGroups"), "resources.autoScalingGroups", problems)):
        if (group_name := _text(g, "name", problems, where=f"resources.autoScalingGroups[{i}].")):
            groups.append(group_name)
    issues = []
    health = _object(doc.get("health"), "health", problems)
    for i, item in enumerate(_items(health.get("issues"), "health.issues", problems)):
        where = f"health.issues[{i}]."
        code = _text(item, "code", problems, where=where)
        message = _text(item, "message", problems, where=where)
        ids = item.get("resourceIds") or []
        if not isinstance(ids, list) or not all(isinstance(r, str) for r in ids):
            problems.append(Problem(f"{where}resourceIds", ids, "a list of strings"))
            ids = []
        issues.append(Issue(code or "Unknown", message or "", tuple(ids)))
    if problems:
        raise Unreadable(problems)
    assert cluster is not None and name is not None
    return Nodegroup(cluster=cluster, name=name, status=status or "?", desired=desired,
                     capacity_type=capacity_type or "?", auto_scaling_groups=tuple(groups), issues=tuple(issues))


def subject(group: Nodegroup) -> str:
    """The condition's subject in the ledger: one per node group of one cluster."""
    return f"{group.cluster}/{group.name}"


def actions(group: Nodegroup, *, pool: GpuPoolQueue | None, now: datetime) -> list[Action]:
    """What one node group's description means: Start (cannot get nodes), End (it can again), or Ignore."""
    expires = now + CONDITION_TTL
    found = group.launch_issues
    asg = ", ".join(group.auto_scaling_groups) or "(none listed)"
    if not found:
        others = [i.code for i in group.issues]
        return [End(CONDITION_KIND, subject(group), expires, Say(
            f"neuronfleet: node group {group.name} gets nodes again"[:100],
            f"EKS node group {group.name} of cluster {group.cluster} reports no launch issue any more "
            f"(status {group.status}, desired {group.desired} nodes; Auto Scaling group {asg})."
            + (f" Other health issues: {', '.join(others)}." if others else "")))]
    capacity = any(i.code == "AsgInstanceLaunchFailures" and is_capacity_refusal(i.message) for i in found)
    lines = [f"EKS node group {group.name} of cluster {group.cluster} cannot get its nodes "
             f"({group.capacity_type}, desired {group.desired}, status {group.status}; Auto Scaling group {asg}):"]
    for i in found:
        lines.append(f"  - {i.code}: {LAUNCH_ISSUES[i.code]}. AWS says: {i.message or '(no message)'}"
                     + (f" [{', '.join(i.resource_ids)}]" if i.resource_ids else ""))
    lines.append("It is announced again only when the node group reports no launch issue (then once more).")
    if capacity:
        lines[0] = "Neuron capacity: " + lines[0]
        lines += _pool_lines(pool) if pool is not None else [
            "", "No GPU fallback pool was given to these alerts: nothing can take the work instead."]
        title = f"neuronfleet: no Neuron capacity for node group {group.name}"
    else:
        title = f"neuronfleet: node group {group.name} cannot get nodes"
    return [Start(CONDITION_KIND, subject(group), expires, Say(title[:100], "\n".join(lines)))]


def unreadable(cluster: str, name: str, error: Unreadable, *, now: datetime) -> Start:
    """A description of another shape: the condition "cannot be read" of this node group (its capacity condition
    stays as it was)."""
    return Start(UNREADABLE_KIND, f"{cluster}/{name}", now + CONDITION_TTL, Say(
        f"neuronfleet: node group {name} cannot be read"[:100],
        f"EKS's description of node group {name} of cluster {cluster} is not of the shape the capacity alerts read "
        f"(botocore's DescribeNodegroup): {error}.\nIts capacity is not checked while this lasts; whatever was "
        "announced of it stands. The other node groups are checked as usual. This is announced once, and once more "
        "when it can be read again."))


def readable(cluster: str, name: str, *, now: datetime) -> End:
    """The node group's description reads again: ends "cannot be read" if it was open (announced then only)."""
    return End(UNREADABLE_KIND, f"{cluster}/{name}", now + CONDITION_TTL, Say(
        f"neuronfleet: node group {name} can be read again"[:100],
        f"EKS's description of node group {name} of cluster {cluster} reads again: its capacity is checked again."))


def unchecked(name: str, reason: str) -> Ignore:
    """A node group this run could not describe: its condition stays as it was (nothing opened or closed)."""
    return Ignore(f"node group {name} not checked: {reason}")


def summary(groups: Sequence[Nodegroup]) -> list[str]:
    return [f"{g.name}: {g.status}, desired {g.desired}, issues {[i.code for i in g.issues]}" for g in groups]


# ------------------------------------------------------------------------------------------- replaced nodes

REPLACED_KIND = "nodegroup-node-replaced"
"""The ledger's kind of "this node of this node group was replaced": one claim per Auto Scaling termination activity
(subject ``<cluster>/<node group>/<activity id>``), so each replacement is announced once however often the poll
runs or overlaps."""
LOOKBACK = timedelta(hours=24)
"""Activities older than this are not looked at: shorter than the claims' life (:data:`CONDITION_TTL`, 7 days), so a
claim never expires while its activity could still be read, and a first run announces at most a day back."""
REPLACEMENT_WINDOW = timedelta(minutes=30)
"""A termination is a replacement when the group starts a launch within this long after it. Amazon EC2 Auto Scaling:
"Amazon EC2 Auto Scaling creates a new scaling activity for terminating the unhealthy instance and then terminates it.
While the instance is terminating, another scaling activity launches a new instance" (user guide, "View the reason for
health check failures", tests/data/eks). A termination with no launch after it is a scale-in (a Capacity Block's end,
an operator): not announced. How EKS node auto repair's Replace shows in the group's activities is NOT published:
docs/checks.md ``node-repair-replace``."""
TERMINATING = "Terminating EC2 instance: "
LAUNCHING = "Launching a new EC2 instance"
"""How an activity's ``Description`` begins (botocore 1.44.5 autoscaling examples-1.json, DescribeScalingActivities:
"Launching a new EC2 instance: i-4ba0837f"; the user guide's example: "Terminating EC2 instance: i-04925c838b6438f14").
A failed launch has no instance: its description is the prefix alone, or with EC2's reason."""


@dataclass(frozen=True)
class Activity:
    """What the announcement reads of one DescribeScalingActivities ``Activities[]`` item (botocore's Activity)."""

    activity_id: str
    description: str
    cause: str
    status: str
    start: datetime
    status_message: str = ""

    @property
    def instance(self) -> str:
        return self.description.rpartition(": ")[2] if ": i-" in self.description else "(no instance)"

    @property
    def termination(self) -> bool:
        return self.description.startswith(TERMINATING)

    @property
    def launch(self) -> bool:
        return self.description.startswith(LAUNCHING)


def scaling_activities(doc: Any) -> list[Activity]:
    """DescribeScalingActivities' ``Activities`` as the announcement reads them; :class:`Unreadable` naming every item
    of another shape (nothing guessed: a misread would announce a replacement that was not, or miss one)."""
    problems: list[Problem] = []
    out = []
    for i, item in enumerate(_items(doc, "Activities", problems)):
        where = f"Activities[{i}]."
        activity_id = _text(item, "ActivityId", problems, where=where, required=True)
        description = _text(item, "Description", problems, where=where) or ""
        cause = _text(item, "Cause", problems, where=where, required=True)
        status = _text(item, "StatusCode", problems, where=where, required=True)
        message = _text(item, "StatusMessage", problems, where=where) or ""
        start = item.get("StartTime", MISSING)
        if not isinstance(start, datetime) or start.tzinfo is None:
            problems.append(Problem(f"{where}StartTime", start, "a timestamp with its time zone"))
            continue
        if activity_id and cause is not None and status:
            out.append(Activity(activity_id, description, cause, status, start, message))
    if problems:
        raise Unreadable(problems)
    return out


def replaced(activities: Sequence[Activity], *, now: datetime) -> list[tuple[Activity, Activity]]:
    """(termination, the launch that followed it) for each node the group replaced: a successful termination in the
    last :data:`LOOKBACK` with a launch (whatever its outcome) started within :data:`REPLACEMENT_WINDOW` after it,
    each launch paired with one termination only, oldest first."""
    launches = sorted((a for a in activities if a.launch), key=lambda a: a.start)
    out: list[tuple[Activity, Activity]] = []
    used: set[str] = set()
    for t in sorted((a for a in activities if a.termination), key=lambda a: a.start):
        if t.status != "Successful" or t.start < now - LOOKBACK:
            continue
        follow = next((launch for launch in launches if launch.activity_id not in used
                       and t.start <= launch.start <= t.start + REPLACEMENT_WINDOW), None)
        if follow is not None:
            used.add(follow.activity_id)
            out.append((t, follow))
    return out


def replaced_subject(group: Nodegroup, activity: Activity) -> str:
    return f"{group.cluster}/{group.name}/{activity.activity_id}"


def replacement_say(group: Nodegroup, pairs: Sequence[tuple[Activity, Activity]]) -> Callable[
        [list[str]], tuple[str, str]]:
    """The announcement of the replacements whose subjects the ledger recorded as new (``say(subjects)``)."""
    by_subject = {replaced_subject(group, t): (t, launch) for t, launch in pairs}

    def say(subjects: list[str]) -> tuple[str, str]:
        found = [by_subject[s] for s in subjects]
        names = ", ".join(t.instance for t, _ in found)
        lines = [f"EKS node group {group.name} of cluster {group.cluster} replaced {len(found)} node(s): {names}."]
        for t, launch in found:
            lines.append(f"  - {t.instance} terminated at {t.start.isoformat()}. AWS's cause: {t.cause}")
            outcome = (f"{launch.instance} ({launch.status})" if launch.status != "Failed"
                       else f"failed: {launch.status_message or launch.description}")
            lines.append(f"    replacement launch at {launch.start.isoformat()}: {outcome}")
        lines += ["", "EKS node auto repair replaces a node whose condition (AcceleratedHardwareReady for a Neuron "
                      "device error, NetworkingReady, KernelReady, Ready...) held past its wait; an operator or an "
                      "EC2 health check can too: AWS's cause says which. Pods on the node were stopped: a training "
                      "job restarts from its last checkpoint. A failed launch is announced by these alerts as the "
                      "node group not getting its nodes. Each replacement is announced once."]
        title = f"neuronfleet: node group {group.name} replaced {names}"
        return title[:100], "\n".join(lines)
    return say
