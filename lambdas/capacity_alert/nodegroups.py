"""An EKS managed node group's description -> what to announce, once per node group and episode. Pure logic.

The node group's ``health.issues`` of a launch kind (neuronfleet_contract.nodegroup_capacity.LAUNCH_ISSUES) open the
lasting condition "cannot get its nodes" (announced once when it starts, with what the GPU pool can take when AWS's
words are a capacity refusal, as the Batch path's launch messages say); a description without one closes it
(announced once, only if it was open). Tested on aws-cli's own describe-nodegroup example (tests/data/aws_cli) and
variations of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from neuronfleet_contract.nodegroup_capacity import CONDITION_KIND, LAUNCH_ISSUES

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


def nodegroup(doc: Mapping[str, Any]) -> Nodegroup:
    """DescribeNodegroup's ``nodegroup`` member as the alerts read it; KeyError/TypeError when it is not one."""
    health = doc.get("health") or {}
    return Nodegroup(
        cluster=str(doc["clusterName"]), name=str(doc["nodegroupName"]), status=str(doc.get("status", "?")),
        desired=int((doc.get("scalingConfig") or {}).get("desiredSize", 0)),
        capacity_type=str(doc.get("capacityType", "?")),
        auto_scaling_groups=tuple(str(g["name"]) for g in (doc.get("resources") or {}).get("autoScalingGroups", [])
                                  if g.get("name")),
        issues=tuple(Issue(str(i.get("code", "Unknown")), str(i.get("message", "")),
                           tuple(str(r) for r in i.get("resourceIds", []))) for i in health.get("issues", [])))


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


def unchecked(name: str, reason: str) -> Ignore:
    """A node group this run could not describe: its condition stays as it was (nothing opened or closed)."""
    return Ignore(f"node group {name} not checked: {reason}")


def summary(groups: Sequence[Nodegroup]) -> list[str]:
    return [f"{g.name}: {g.status}, desired {g.desired}, issues {[i.code for i in g.issues]}" for g in groups]
