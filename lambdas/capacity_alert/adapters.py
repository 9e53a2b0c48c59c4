"""Thin boto3 adapters for the capacity alerts: the fleet's Capacity Blocks (EC2, Resource Groups), SNS, DynamoDB."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from neuronfleet_runtime import announcements, reservations, topic

from .logic import Block

Topic = topic.Topic
Ledger = announcements.Ledger
Outbox = announcements.Outbox
Outcome = announcements.Outcome

LIVE_STATES = ("active", "scheduled")


class FleetBlocks:
    """The fleet's own Capacity Blocks: the reservations it names and the members of the resource groups it names."""

    def __init__(self, ec2: Any, groups: Any, *, reservation_ids: Sequence[str], resource_group_arns: Sequence[str],
                 ultraserver_types: Sequence[str]) -> None:
        self._ec2, self._groups = ec2, groups
        self._ids, self._group_arns = tuple(reservation_ids), tuple(resource_group_arns)
        self._ultraserver_types = frozenset(ultraserver_types)

    def reservation_ids(self) -> list[str]:
        return sorted(set(self._ids) | reservations.group_members(self._groups, self._group_arns))

    def blocks(self, ids: Sequence[str] | None = None) -> list[Block]:
        """The live Capacity Blocks among ``ids`` (the fleet's by default)."""
        wanted = list(self.reservation_ids() if ids is None else ids)
        if not wanted:
            return []
        out = []
        for page in self._ec2.get_paginator("describe_capacity_reservations").paginate(CapacityReservationIds=wanted):
            for r in page.get("CapacityReservations", []):
                if r.get("ReservationType") == "capacity-block" and r.get("State") in LIVE_STATES and r.get("EndDate"):
                    kind = "ultraserver" if r["InstanceType"] in self._ultraserver_types else "instances"
                    out.append(Block(r["CapacityReservationId"], r["InstanceType"], int(r["TotalInstanceCount"]),
                                     r["EndDate"], kind))
        return out

    def block(self, reservation_id: str) -> Block | None:
        """The live block with this id (the caller has checked it is the fleet's), or None."""
        found = self.blocks([reservation_id])
        return found[0] if found else None


class FleetNodegroups:
    """The fleet's Neuron node groups of one EKS cluster, described one by one (eks:DescribeNodegroup on their ARNs).

    botocore's own retries take throttling first; what still fails (throttled after them, a 5xx, access denied, a
    node group not found, no connection) leaves that node group unchecked this run: its announced condition stays
    as it was, and the next scheduled run looks again."""

    def __init__(self, eks: Any, *, cluster: str, names: Sequence[str], autoscaling: Any = None) -> None:
        """``autoscaling``: a client to read the node groups' Auto Scaling activities with (the replacement
        announcement); None: replacements are not looked for."""
        self._eks, self.cluster, self.names, self.autoscaling = eks, cluster, tuple(names), autoscaling

    def describe(self, name: str) -> Described:
        """The node group's ``nodegroup`` member as EKS answered it (not checked: nodegroups.nodegroup reads it),
        or why it could not be described (``<error code>: <message>``)."""
        return _described(lambda: self._eks.describe_nodegroup(clusterName=self.cluster, nodegroupName=name),
                          "nodegroup")


    def activities(self, auto_scaling_group: str) -> Described:
        """The group's newest scaling activities (DescribeScalingActivities, one page of at most 100: a Neuron node
        group has far fewer in the day the announcement looks back), or why they could not be read."""
        return _described(lambda: self.autoscaling.describe_scaling_activities(
            AutoScalingGroupName=auto_scaling_group, MaxRecords=100), "Activities")


@dataclass(frozen=True)
class Described:
    """One DescribeNodegroup: the answer's ``nodegroup`` member (any shape), or the error that kept it."""

    doc: Any = None
    error: str | None = None


def _described(call: Callable[[], Any], member: str) -> Described:
    """``call``'s answer's ``member`` (any shape: the logic reads it), or why it failed (``<error code>: <message>``)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer = call()
    except ClientError as exc:
        err = exc.response.get("Error", {})
        return Described(error=f"{err.get('Code', 'error')}: {err.get('Message', exc)}")
    except BotoCoreError as exc:
        return Described(error=f"{type(exc).__name__}: {exc}")
    return Described(doc=answer.get(member) if isinstance(answer, dict) else answer)
