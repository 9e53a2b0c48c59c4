"""Trainium capacity events and Capacity Block ends -> what to announce, once. Pure logic: no AWS calls.

The facts (event names, when a block's instances stop, read on 2026-11-22, with their sources) live with the data in
:mod:`neuronfleet_contract.capacity_alert`, which the CapacityAlerts construct subscribes with.

Each event's documented example is copied verbatim in tests/data/events (README there names each source, read
2026-11-23) and run through :func:`decide`. The Capacity Block page's examples are not EventBridge envelopes: they
spell the event name ``detail_type`` (and carry ``customer_event_id``), where every envelope EventBridge delivers,
and the rules match, has ``detail-type``: :func:`detail_type` reads either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from neuronfleet_contract.capacity_alert import (
    CAPACITY_BLOCK_DELIVERED,
    CAPACITY_BLOCK_ENDING,
    EC2_EVENTS,
    JOB_STARTED,
    JOB_STATE,
    LAUNCH_SUCCESSFUL,
    LAUNCH_UNSUCCESSFUL,
    QUEUE_BLOCKED,
    RESERVATION_TROUBLE,
    SCHEDULED,
    TERMINATION,
    GpuPoolQueue,
    GpuType,
    Termination,
)

__all__ = ["CAPACITY_BLOCK_DELIVERED", "CAPACITY_BLOCK_ENDING", "EC2_EVENTS", "JOB_STARTED", "JOB_STATE",
           "LAUNCH_SUCCESSFUL", "LAUNCH_UNSUCCESSFUL", "QUEUE_BLOCKED", "RESERVATION_TROUBLE", "SCHEDULED",
           "TERMINATION", "GpuPoolQueue", "GpuType", "Termination"]
"""Also here: what the contract defines and this logic reads (the event names, the blocks' termination, the pool)."""

AWS_WARNING_BEFORE_END = timedelta(minutes=40)


WARN_BEFORE_TERMINATION = (timedelta(hours=24), timedelta(hours=2))
"""The scan's warning points, counted back from the moment the block's instances stop (not from its end)."""
CONDITION_TTL = timedelta(days=7)
"""An open condition is forgotten after this long, so one that still holds is announced again (a reminder)."""

QUEUE_BLOCKED_KIND = "queue-blocked"
LAUNCH_FAILING_KIND = "launch-failing"


@dataclass(frozen=True)
class Block:
    """A Capacity Block of the fleet, as EC2 describes it."""

    reservation_id: str
    instance_type: str
    count: int
    end: datetime
    kind: str = "instances"
    """``instances`` or ``ultraserver`` (see TERMINATION)."""

    @property
    def termination(self) -> Termination:
        return TERMINATION[self.kind]

    @property
    def stops_at(self) -> datetime:
        return self.end - self.termination.lead


@dataclass(frozen=True)
class Say:
    subject: str
    message: str


@dataclass(frozen=True)
class Once:
    """Announce once per ``key`` (until ``expires``)."""

    key: str
    expires: datetime
    say: Say


@dataclass(frozen=True)
class Start:
    """A lasting condition started: announce unless it is already open."""

    kind: str
    subject: str
    expires: datetime
    say: Say


@dataclass(frozen=True)
class End:
    """A lasting condition ended: announce if it was open."""

    kind: str
    subject: str
    expires: datetime
    say: Say


@dataclass(frozen=True)
class Ignore:
    reason: str


@dataclass(frozen=True)
class Refuse:
    """A malformed event: logged and counted (``MalformedEvents``), never acted on, never retried."""

    reason: str


Action = Once | Start | End | Ignore | Refuse

_LAUNCH_FIELDS = (("AutoScalingGroupName",), ("StatusCode", "StatusMessage", "Cause", "EC2InstanceId"))
EVENT_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    **{kind: (("capacity-reservation-id",), ("end-date", "state")) for kind in EC2_EVENTS},
    QUEUE_BLOCKED: (("jobQueue",), ("jobName", "jobId", "status", "statusReason")),
    JOB_STATE: (("jobQueue", "status"), ("jobName", "jobId")),
    LAUNCH_UNSUCCESSFUL: _LAUNCH_FIELDS,
    LAUNCH_SUCCESSFUL: _LAUNCH_FIELDS,
    SCHEDULED: ((), ()),
}
"""detail-type -> (``detail`` members it must carry, members it may carry), each a string (an optional one may be
null). Read off the publishers' examples in tests/data/events (the members the kit reads; others are let be)."""


def _show(value: Any) -> str:
    text = repr(value)
    return f"{text if len(text) <= 80 else text[:77] + '...'} ({type(value).__name__})"


def malformed(event: Any) -> str | None:
    """Why ``event`` cannot be one of the events the kit subscribes to (naming the field, the value and what is
    allowed), or None. An event of another detail-type need only be a JSON object with a string name."""
    if not isinstance(event, Mapping):
        return f"event: got {_show(event)}; allowed: a JSON object (an EventBridge event)"
    name_field = "detail-type" if "detail-type" in event else "detail_type"
    kind = event.get(name_field)
    if not isinstance(kind, str) or not kind.strip():
        got = "nothing" if name_field not in event else _show(kind)
        return f"{name_field}: got {got}; allowed: a non-blank string naming the event"
    if kind not in EVENT_FIELDS:
        return None
    required, optional = EVENT_FIELDS[kind]
    if "detail" not in event and not required:
        return None
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        got = "nothing" if "detail" not in event else _show(detail)
        return f"detail of a {kind!r} event: got {got}; allowed: a JSON object with " + (
            ", ".join(required) if required else "any members")
    for field in (*required, *optional):
        if field not in detail or (field in optional and detail[field] is None):
            if field in required:
                return f"detail.{field} of a {kind!r} event: got nothing; allowed: a non-blank string"
            continue
        value = detail[field]
        if not isinstance(value, str) or (field in required and not value.strip()):
            return (f"detail.{field} of a {kind!r} event: got {_show(value)}; allowed: "
                    + ("a non-blank string" if field in required else "a string or null"))
    return None


def _hours(lead: timedelta) -> str:
    minutes = int(lead.total_seconds() // 60)
    return f"{minutes // 60}h" if minutes % 60 == 0 else f"{minutes}min"


def block_stop_text(block: Block) -> str:
    t = block.termination
    how = ("AWS terminates its instances from" if block.kind == "instances" else
           "stop its instances (UltraServer block) by")
    note = "" if t.confirmed else f" [assumed: {t.source}]"
    return (f"Capacity Block {block.reservation_id} ({block.count} x {block.instance_type}) ends at "
            f"{block.end.isoformat()}; {how} {block.stops_at.isoformat()} ({_hours(t.lead)} before the end){note}. "
            "Checkpoint and drain before then.")


def block_warnings(blocks: Sequence[Block], now: datetime) -> list[Once]:
    """The scan (a safety net for AWS's own event): for each block, the most urgent warning point it has crossed,
    and a last one once its instances are stopping. The keys make each point announce once, however often or
    however late the scan runs."""
    out = []
    for block in blocks:
        stops = block.stops_at
        expires = block.end + timedelta(days=1)
        if stops <= now < block.end:
            out.append(Once(f"{block.reservation_id}#stopping", expires, Say(
                f"neuronfleet: Capacity Block {block.reservation_id} is stopping now", block_stop_text(block))))
            continue
        crossed = [lead for lead in WARN_BEFORE_TERMINATION if stops - lead <= now < stops]
        if crossed:
            lead = min(crossed)
            out.append(Once(f"{block.reservation_id}#{_hours(lead)}", expires, Say(
                f"neuronfleet: Capacity Block {block.reservation_id} stops in under {_hours(lead)}",
                block_stop_text(block))))
    return out


def _pool_lines(pool: GpuPoolQueue) -> list[str]:
    first = pool.types[0]
    lines = [
        "",
        f"The GPU fallback queue can take CUDA-ready jobs instead: {pool.queue_arn}",
        f"  up to {pool.max_vcpus} vCPUs in all ({pool.max_vcpus // first.vcpus} x {first.instance_type} at most), "
        "instance types:",
        *[f"  - {t.instance_type}: {t.gpus} x {t.gpu_name}, {t.efa} EFA, {t.vcpus} vCPUs" for t in pool.types],
    ]
    if pool.cuda_only_workloads:
        lines.append(f"CUDA-only workloads that always run there: {', '.join(pool.cuda_only_workloads)}")
    return lines


def _with_pool(subject: str, happened: str, pool: GpuPoolQueue) -> Say:
    return Say(subject[:100], "\n".join([f"Trainium capacity: {happened}", *_pool_lines(pool)]))


def detail_type(event: Mapping[str, Any]) -> str | None:
    """The event's name: the envelope's ``detail-type``, else the ``detail_type`` of the EC2 guide's Capacity Block
    examples."""
    kind = event.get("detail-type", event.get("detail_type"))
    return None if kind is None else str(kind)


def decide(event: Mapping[str, Any], *, pool: GpuPoolQueue, now: datetime, block: Block | None = None) -> list[Action]:
    """What one event means. ``block`` is the fleet's Capacity Block the event names, if it names one."""
    refusal = malformed(event)
    if refusal:
        return [Refuse(refusal)]
    kind = detail_type(event)
    detail = event.get("detail") or {}
    if kind in EC2_EVENTS:
        return [_reservation_event(str(kind), detail, pool=pool, now=now, block=block)]
    if kind == QUEUE_BLOCKED:
        queue = str(detail.get("jobQueue", "?"))
        reason = str(detail.get("statusReason", "no reason given"))
        return [Start(QUEUE_BLOCKED_KIND, queue, now + CONDITION_TTL, _with_pool(
            f"neuronfleet: Trainium queue blocked ({queue.rsplit('/', 1)[-1]})",
            f"queue {queue} is blocked by job {detail.get('jobName', '?')} ({detail.get('jobId', '?')}), "
            f"RUNNABLE: {reason}. It is announced again only when a job of this queue starts.", pool))]
    if kind == JOB_STATE:
        queue = str(detail.get("jobQueue", "?"))
        if detail.get("status") not in JOB_STARTED:
            return [Ignore(f"job {detail.get('jobId', '?')} is {detail.get('status')}: no condition changes")]
        return [End(QUEUE_BLOCKED_KIND, queue, now + CONDITION_TTL, Say(
            f"neuronfleet: Trainium queue unblocked ({queue.rsplit('/', 1)[-1]})"[:100],
            f"Job {detail.get('jobName', '?')} ({detail.get('jobId', '?')}) is {detail.get('status')} on {queue}: "
            "the queue is moving again."))]
    if kind in (LAUNCH_UNSUCCESSFUL, LAUNCH_SUCCESSFUL):
        return [_launch_event(str(kind), detail, pool=pool, now=now)]
    return [Ignore(f"detail-type {kind!r} is not a capacity event; known: "
                   + ", ".join([*EC2_EVENTS, QUEUE_BLOCKED, JOB_STATE, LAUNCH_UNSUCCESSFUL, LAUNCH_SUCCESSFUL]))]


def _reservation_event(kind: str, detail: Mapping[str, Any], *, pool: GpuPoolQueue, now: datetime,
                       block: Block | None) -> Action:
    rid = str(detail.get("capacity-reservation-id", "?"))
    expires = now + timedelta(days=2)
    if kind in CAPACITY_BLOCK_ENDING:
        if block is None:
            text = (f"Capacity Block {rid} ends at {detail.get('end-date', '?')}: AWS warns that its instances "
                    "begin to terminate in 10 minutes.")
        else:
            text = f"AWS's expiration warning. {block_stop_text(block)}"
        return Once(f"{rid}#aws-warning", expires, _with_pool(f"neuronfleet: Capacity Block {rid} ending", text, pool))
    if kind in CAPACITY_BLOCK_DELIVERED:
        ends = block_stop_text(block) if block else f"It ends at {detail.get('end-date', '?')}."
        return Once(f"{rid}#delivered", expires, Say(f"neuronfleet: Capacity Block {rid} is active",
                                                     f"Capacity Block {rid} has started. {ends}"))
    state = kind.rsplit(" ", 1)[-1].lower()
    return Once(f"{rid}#{state}", expires, _with_pool(
        f"neuronfleet: capacity reservation {rid} {state}", f"capacity reservation {rid} is {state}.", pool))


def is_capacity_refusal(status_message: str) -> bool:
    """EC2's words for having no capacity (InsufficientInstanceCapacity, or its text in Auto Scaling's message)."""
    text = status_message.lower()
    return "insufficientinstancecapacity" in text or ("sufficient" in text and "capacity" in text)


def _launch_event(kind: str, detail: Mapping[str, Any], *, pool: GpuPoolQueue, now: datetime) -> Action:
    group = str(detail.get("AutoScalingGroupName", "?"))
    if kind == LAUNCH_SUCCESSFUL:
        return End(LAUNCH_FAILING_KIND, group, now + CONDITION_TTL, Say(
            "neuronfleet: Trainium instances launching again",
            f"Auto Scaling group {group} launched instance {detail.get('EC2InstanceId', '?')}."))
    message = str(detail.get("StatusMessage") or detail.get("Cause") or "no reason given")
    if is_capacity_refusal(message):
        return Start(LAUNCH_FAILING_KIND, group, now + CONDITION_TTL, _with_pool(
            "neuronfleet: no Trainium capacity to launch", f"instances could not launch in {group}: {message}", pool))
    return Start(LAUNCH_FAILING_KIND, group, now + CONDITION_TTL, Say(
        "neuronfleet: Trainium instances fail to launch",
        f"instances could not launch in {group} (not for capacity): {message}"))
