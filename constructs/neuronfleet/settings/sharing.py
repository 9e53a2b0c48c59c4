"""A shared pool's settings as the fleet file gives them (``training_clusters[].eks.sharing``): the day/night schedule
of one reserved Neuron node group. The rules are neuronfleet_contract.pool_schedule's (one home); the pool's devices
come from the node group, so a night floor above the pool is refused against what the group really has."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from neuronfleet_contract.pool_schedule import InvalidSchedule, PoolSchedule, sharing_problems

from ..core.problems import InvalidSettings, Problem
from ._base import Settings
from .eks import NeuronEksClusterSettings, NeuronNodegroupSettings


class SharingSettings(Settings):
    """``eks.sharing``: inference by day, training by night on one node group (docs/sharing.md)."""

    what: ClassVar[str] = "sharing"
    node_group: str | None = None
    """The shared node group (default: the entry's own, the cluster's first)."""
    time_zone: str
    day: tuple[str, ...] = Field(min_length=1, max_length=28)
    replica_devices: int = Field(ge=1)
    day_replicas: int = Field(ge=0)
    night_floor: int = Field(ge=0)
    day_min_replicas: int | None = Field(default=None, ge=1)
    """The least inference replicas by day (default: ``day_replicas``). The inference autoscaler follows demand
    between this and ``day_replicas`` only with a metrics source it reads (metrics-server or a custom metrics
    adapter: the kit installs none); without one it holds this minimum, so set it below ``day_replicas`` only with
    one (docs/sharing.md)."""
    checkpoint_deadline_minutes: int
    deployment: str = "serve"
    """The inference Deployment (namespace ``neuronfleet-serving``): the pool creates its HorizontalPodAutoscaler and
    the schedule sets that autoscaler's bounds (never the replicas)."""

    def shared_node_group(self, cluster: NeuronEksClusterSettings) -> str:
        """The name of the node group the pool shares: ``node_group``, or the cluster's first (the entry's own)."""
        return self.node_group or cluster.node_groups[0].name

    def pool_schedule(self, cluster: NeuronEksClusterSettings, pool: str) -> PoolSchedule:
        """The schedule on ``cluster``'s node group, named ``pool``; InvalidSettings with paths relative to this
        section (``night_floor``, ``node_group``, ...)."""
        groups = {g.name: g for g in cluster.node_groups}
        name = self.shared_node_group(cluster)
        group = groups.get(name)
        if group is None:
            raise InvalidSettings([Problem("node_group", name, f"one of the cluster's node groups: {sorted(groups)}")],
                                  what=self.what)
        if (allowed := unshareable(group)) is not None:
            raise InvalidSettings([Problem("node_group", name, allowed)], what=self.what)
        try:
            schedule = PoolSchedule.build(pool=pool, time_zone=self.time_zone, day=self.day,
                                      pool_devices=group.count * group.spec.accelerators,
                                      replica_devices=self.replica_devices, day_replicas=self.day_replicas,
                                      night_floor=self.night_floor, checkpoint_deadline=self.checkpoint_deadline_minutes,
                                      day_min_replicas=self.day_min_replicas)
        except InvalidSchedule as error:
            raise InvalidSettings(error.problems,
                                  what=self.what) from None
        problems = sharing_problems(schedule, node_devices=group.spec.accelerators,
                                    job_nodes=group.spec.ultraserver_size, node_type=group.instance_type)
        if problems:
            raise InvalidSettings(problems, what=self.what)
        return schedule


def unshareable(group: NeuronNodegroupSettings) -> str | None:
    """What a pool's node group must be, when ``group`` is not it (None when it is): one text for the fleet file's
    ``eks.sharing`` and :class:`neuronfleet.sharing.pool.SharingPool`'s ``node_group``."""
    if not group.reserved:
        return (f"a node group on reserved capacity (odcr or capacity-block); {group.name!r} is {group.capacity.type}:"
                " a pool that On-Demand may not refill in the morning is not shared")
    if group.dra:
        return (f"a node group on the device plugin: {group.name!r} hands out its devices by DRA, and the pool's "
                "quota and pods are in aws.amazon.com/neuron, which DRA pods do not request (Kueue 0.19.2 would also "
                "need a DeviceClass mapping the kit does not set: facts.kueue.TAS_DRA)")
    return None
