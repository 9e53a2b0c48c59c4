"""The capacity alerts' contract: the events the CapacityAlerts construct routes to the function, when a Capacity
Block's instances stop, the GPU pool it reports on, and what the function is told (built by CapacityAlerts, read once
per container by the handler).

The facts below were read on 2026-11-22:

- Capacity Block events (EC2 user guide, "Monitor Capacity Blocks using EventBridge",
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-monitor.html): "Capacity Block Delivered" when
  a block starts and, forty minutes before it ends, "Capacity Block Expiration Warning" ("any instances running in
  the reservation will begin to terminate in 10 minutes"); detail ``capacity-reservation-id`` and ``end-date``. The
  guide spells the names both with and without "Reservation" across its versions: both are matched.
- Instance Capacity Blocks: "Thirty minutes before the reservation expires, we begin to terminate any instances that
  are still running" (EC2 user guide, "Work with Capacity Blocks", capacity-blocks-using.html).
- UltraServer Capacity Blocks: for P6e-GB200 AWS asks users to stop their instances 60 minutes before the end
  (EC2 user guide, as cited by issue 12 and dev.classmethod.jp "Instance CB vs UltraServer CB", 2026-02-08). No
  public page gives the figure for Trn2 UltraServers: the kit assumes the same 60 minutes (the earlier, safer time)
  and says so in every UltraServer warning (``Termination.confirmed``).
- Future-dated Capacity Reservation state changes: "EC2 Capacity Reservation <State>" for Scheduled, Active,
  Delayed, Unsupported, Failed, Expired; detail ``capacity-reservation-id``, ``state`` (monitor-fcr-state.html).
- "Batch Job Queue Blocked" (AWS Batch user guide, batch-job-queue-blocked-events.html): a RUNNABLE job blocking a
  queue; ``detail.jobQueue``, ``detail.statusReason`` (for capacity: ``CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY -
  Service cannot fulfill the capacity requested for instance type [...]``, job_stuck_in_runnable_capacity.html).
- "EC2 Instance Launch Unsuccessful"/"... Successful" (EC2 Auto Scaling, ``detail.AutoScalingGroupName``,
  ``detail.StatusMessage``): EC2's capacity refusal reads "We currently do not have sufficient <type> capacity ...".


Pure: no boto3, no Powertools, no CDK. ``to_environment`` only encodes (its values may be CDK tokens);
``from_environment`` checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from . import environment
from .environment import variable

SERVICE = "neuronfleet-capacity"
"""The capacity alerts' Powertools service: the ``service`` dimension of its metrics in CAPACITY_NAMESPACE."""
ANNOUNCEMENTS_METRIC = "CapacityAnnouncements"
"""Count of messages a run published (CAPACITY_NAMESPACE, dimension ``service``)."""
MALFORMED_METRIC = "MalformedEvents"
"""Count of events refused as malformed (CAPACITY_NAMESPACE, dimension ``service``)."""
UNPUBLISHABLE_METRIC = "UnpublishableAnnouncements"
"""Count of messages a run set aside because SNS refused them as such (too large for the topic, an invalid parameter:
neuronfleet_runtime.announcements, step 5); each is also announced once by a short notice (CAPACITY_NAMESPACE,
dimension ``service``)."""

CAPACITY_BLOCK_DELIVERED = ("Capacity Block Reservation Delivered", "Capacity Block Delivered")
CAPACITY_BLOCK_ENDING = ("Capacity Block Reservation Expiration Warning", "Capacity Block Expiration Warning")
RESERVATION_TROUBLE = tuple(f"EC2 Capacity Reservation {s}" for s in ("Delayed", "Unsupported", "Failed", "Expired"))
LAUNCH_UNSUCCESSFUL = "EC2 Instance Launch Unsuccessful"
LAUNCH_SUCCESSFUL = "EC2 Instance Launch Successful"
QUEUE_BLOCKED = "Batch Job Queue Blocked"
JOB_STATE = "Batch Job State Change"
SCHEDULED = "Scheduled Event"
EC2_EVENTS = (*CAPACITY_BLOCK_DELIVERED, *CAPACITY_BLOCK_ENDING, *RESERVATION_TROUBLE)
JOB_STARTED = ("STARTING", "RUNNING")
"""A job of a blocked queue reaching one of these ends the blocked condition."""

@dataclass(frozen=True)
class Termination:
    lead: timedelta
    """How long before the block's end its instances stop (AWS terminates them, or asks you to)."""
    confirmed: bool
    source: str


TERMINATION = {
    "instances": Termination(timedelta(minutes=30), True, "EC2 user guide, Work with Capacity Blocks (2026-11-22)"),
    "ultraserver": Termination(timedelta(minutes=60), False, (
        "EC2 user guide gives 60 minutes for P6e-GB200 UltraServer blocks; no figure is published for Trn2 "
        "UltraServers, so the kit assumes the same (2026-11-22)")),
}
@dataclass(frozen=True)
class GpuType:
    instance_type: str
    gpus: int
    gpu_name: str
    efa: int
    vcpus: int


@dataclass(frozen=True)
class GpuPoolQueue:
    queue_arn: str
    types: Sequence[GpuType]
    """In priority order."""
    max_vcpus: int
    cuda_only_workloads: Sequence[str] = ()



_POOL_ALLOWED = ('a JSON object {"queue_arn": str, "max_vcpus": int, "cuda_only_workloads": [str, ...], "types": '
                 '[{"instance_type": str, "gpus": int, "gpu_name": str, "efa": int, "vcpus": int}, ...]} with at '
                 "least one type")


def pool_document(pool: GpuPoolQueue) -> dict[str, Any]:
    """``GPU_POOL``'s JSON document (what :func:`gpu_pool` reads)."""
    return {"queue_arn": pool.queue_arn, "max_vcpus": pool.max_vcpus,
            "cuda_only_workloads": list(pool.cuda_only_workloads),
            "types": [{"instance_type": t.instance_type, "gpus": t.gpus, "gpu_name": t.gpu_name, "efa": t.efa,
                       "vcpus": t.vcpus} for t in pool.types]}


def gpu_pool_variable() -> dict[str, environment.Variable]:
    """The ``GPU_POOL`` variable of a configuration (what the GPU fallback pool can take)."""
    return variable("GPU_POOL", allowed=_POOL_ALLOWED, encode=pool_document, decode=lambda d: gpu_pool(d))


@dataclass(frozen=True)
class CapacityAlertConfig(environment.Configured):
    pool: GpuPoolQueue = field(metadata=gpu_pool_variable())
    """What the GPU fallback pool can take (``GPU_POOL``, JSON: GpuPool.describe() of the construct library)."""
    topic_arn: str = field(metadata=variable("ALERTS_TOPIC_ARN", allowed="the ARN of the fleet's SNS topic"))
    """The fleet's SNS topic (``ALERTS_TOPIC_ARN``)."""
    ledger_table: str = field(metadata=variable("ANNOUNCEMENTS_TABLE", allowed="the name of the announcements table"))
    """What has been announced (``ANNOUNCEMENTS_TABLE``, DynamoDB; see shared/neuronfleet_runtime/announcements.py)."""
    reservation_ids: tuple[str, ...] = field(default=(), metadata=variable("FLEET_RESERVATIONS"))
    """The fleet's capacity reservations by id (``FLEET_RESERVATIONS``, JSON list)."""
    resource_group_arns: tuple[str, ...] = field(default=(), metadata=environment.arns(
        "FLEET_RESERVATION_GROUPS", allowed="a JSON list of non-blank strings"))
    """Capacity-reservation resource groups whose members are the fleet's (``FLEET_RESERVATION_GROUPS``: their
    shared ARN prefix once, then the names, so that a fleet of many clusters fits Lambda's 4 KB)."""
    ultraserver_types: tuple[str, ...] = field(default=(), metadata=variable("ULTRASERVER_TYPES"))
    """Instance types sold as UltraServer blocks (``ULTRASERVER_TYPES``): their instances stop earlier."""


def gpu_pool(doc: Mapping[str, Any]) -> GpuPoolQueue:
    """The pool a ``GPU_POOL`` document describes; ValueError, TypeError or KeyError when it is malformed."""
    types = tuple(GpuType(instance_type=_text(t["instance_type"]), gpus=_whole(t["gpus"]), gpu_name=_text(t["gpu_name"]),
                          efa=_whole(t["efa"]), vcpus=_whole(t["vcpus"], minimum=1)) for t in doc["types"])
    if not types:
        raise ValueError("types is empty")
    return GpuPoolQueue(queue_arn=_text(doc["queue_arn"]), types=types, max_vcpus=_whole(doc["max_vcpus"], minimum=1),
                   cuda_only_workloads=environment.strings(doc.get("cuda_only_workloads", [])))


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{value!r} is not a non-blank string")
    return value


def _whole(value: Any, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{value!r} is not a whole number of at least {minimum}")
    return value
