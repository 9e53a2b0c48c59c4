"""Trainium capacity events -> an announcement of what the GPU queue can take instead. Pure logic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CAPACITY_BLOCK_ENDING = ("Capacity Block Reservation Expiration Warning", "Capacity Block Expiration Warning")
RESERVATION_ENDED = ("EC2 Capacity Reservation Failed", "EC2 Capacity Reservation Expired",
                     "EC2 Capacity Reservation Delayed")
LAUNCH_UNSUCCESSFUL = "EC2 Instance Launch Unsuccessful"
BATCH_JOB = "Batch Job State Change"


@dataclass(frozen=True)
class GpuType:
    instance_type: str
    gpus: int
    gpu_name: str
    efa: int
    vcpus: int


@dataclass(frozen=True)
class GpuPool:
    queue_arn: str
    types: Sequence[GpuType]
    """In priority order."""
    max_vcpus: int
    cuda_only_workloads: Sequence[str] = ()


@dataclass(frozen=True)
class Alert:
    subject: str
    message: str


class UnknownEvent(ValueError):
    """Not a capacity event this handler knows."""


def what_happened(event: Mapping[str, Any]) -> str:
    """One sentence on the Trainium capacity problem the event reports."""
    kind = event.get("detail-type")
    detail = event.get("detail") or {}
    if kind in CAPACITY_BLOCK_ENDING:
        return (f"Capacity Block {detail.get('capacity-reservation-id', '?')} ends at {detail.get('end-date', '?')}: "
                "its instances are terminated from 30 minutes before the end")
    if kind in RESERVATION_ENDED:
        state = str(kind).rsplit(" ", 1)[-1].lower()
        return f"capacity reservation {detail.get('capacity-reservation-id', '?')} is {state}"
    if kind == LAUNCH_UNSUCCESSFUL:
        return (f"instances could not launch in {detail.get('AutoScalingGroupName', '?')}: "
                f"{detail.get('StatusMessage', 'no reason given')}")
    if kind == BATCH_JOB:
        return (f"Batch job {detail.get('jobName', '?')} ({detail.get('jobId', '?')}) is stuck {detail.get('status')}: "
                f"{detail.get('statusReason', 'no reason given')}")
    raise UnknownEvent(f"detail-type {kind!r} is not a capacity event; known: "
                       + ", ".join([*CAPACITY_BLOCK_ENDING, *RESERVATION_ENDED, LAUNCH_UNSUCCESSFUL, BATCH_JOB]))


def alert(event: Mapping[str, Any], pool: GpuPool) -> Alert:
    happened = what_happened(event)
    first = pool.types[0]
    lines = [
        f"Trainium capacity: {happened}.",
        "",
        f"The GPU fallback queue can take CUDA-ready jobs instead: {pool.queue_arn}",
        f"  up to {pool.max_vcpus} vCPUs ({pool.max_vcpus // first.vcpus} x {first.instance_type} at most), "
        "instance types in priority order:",
        *[f"  - {t.instance_type}: {t.gpus} x {t.gpu_name}, {t.efa} EFA, {t.vcpus} vCPUs" for t in pool.types],
    ]
    if pool.cuda_only_workloads:
        lines.append(f"CUDA-only workloads that always run there: {', '.join(pool.cuda_only_workloads)}")
    return Alert(subject=f"neuronfleet: Trainium capacity event ({event.get('detail-type')})"[:100],
                 message="\n".join(lines))
