"""The pool's schedule, one run: from the schedule, the instant and what the cluster shows, what to change.

Pure (no boto3, no Kubernetes client). Every run recomputes the target from the clock and from what the cluster
records, so a missed or repeated run changes nothing a later run would not: the function runs every minute
(EventBridge Scheduler ``rate(1 minute)``) and each run converges the pool on the target of its instant.

The schedule moves two things, never a ClusterQueue and never the Deployment's replicas (docs/sharing.md):

- the training **LocalQueue**'s ``stopPolicy``: ``None`` by night (Kueue admits training, which borrows what
  inference lends), ``Hold`` through the checkpoint window (nothing new admitted; running Jobs keep running),
  ``HoldAndDrain`` from the deadline through the day (Kueue evicts the admitted training workloads: their Jobs are
  suspended, pods deleted with their grace period, no failure counted; the next night's ``None`` readmits them and
  Kueue unsuspends them). The ClusterQueues stay active throughout, so Kueue's reclaim (inference
  ``reclaimWithinCohort: LowerPriority``) can always see training's workloads.
- the inference **HorizontalPodAutoscaler**'s bounds: ``[night_floor, night_floor]`` by night and until the
  deadline, ``[night_floor, day_replicas]`` by day once training is drained; the autoscaler sets the replicas.

The morning is always the same sequence, whatever runs were missed: **notify, wait for the deadline, drain**.

1. **notify**: the first run of the checkpoint window (or, when no run came during it, of the day, if training still
   runs) records the pool's notice on the training LocalQueue: the morning and the deadline given
   (:class:`Notice`; the morning itself when given within one run period of the window's start, else the notice's
   instant plus the checkpoint deadline, less that period). Only then is each running training pod annotated
   ``neuronfleet/checkpoint-by: <deadline>`` (once; a pod not told yet, its annotation having failed, is told by a
   later run while the deadline is ahead).
2. **wait**: the LocalQueue holds (``Hold``) and inference stays within its night bounds until the deadline (the
   latest one any running pod was given).
3. **drain**: the training pods still running are written down first, apart: those told that did not acknowledge
   (``neuronfleet/checkpointed-at`` at or after their notice) and those the notice never reached (:class:`Reclaim`,
   on the training LocalQueue), with the LocalQueue set to ``HoldAndDrain`` in the same patch; only once that
   patch is made are inference's bounds raised to the day's. The report is announced once per pool and morning
   and counted, by the run that wrote it or, if that failed, by the next ones (the pods are gone by then: the
   report on the queue is what they read), until the queue says it was (``neuronfleet/reported-for``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from neuronfleet_contract.pool_schedule import (
    ANNOUNCE_KIND,
    RUN_EVERY_SECONDS,
    Phase,
    PoolSchedule,
    Role,
    Target,
    iso,
    parse_iso,
)

RUN_EVERY = timedelta(seconds=RUN_EVERY_SECONDS)


@dataclass(frozen=True)
class TrainingPod:
    name: str
    namespace: str
    devices: int
    running: bool
    checkpoint_by: datetime | None = None
    checkpointed_at: datetime | None = None


@dataclass(frozen=True)
class Notice:
    """The pool's notice for one morning, kept on the training LocalQueue (annotations ``neuronfleet/notice-for``
    and ``neuronfleet/checkpoint-by``)."""

    morning: datetime
    checkpoint_by: datetime


@dataclass(frozen=True)
class Reclaim:
    """What a morning's drain took without a checkpoint, written on the training LocalQueue with the drain, before
    inference's day bounds (annotation ``neuronfleet/reclaimed``, JSON)."""

    morning: datetime
    checkpoint_by: datetime
    unacknowledged: tuple[str, ...] = ()
    """``namespace/name`` of each pod told that did not acknowledge."""
    not_notified: tuple[str, ...] = ()
    """``namespace/name`` of each pod the notice never reached."""
    devices: int = 0

    def to_json(self) -> str:
        return json.dumps({"morning": iso(self.morning), "checkpoint_by": iso(self.checkpoint_by),
                           "unacknowledged": list(self.unacknowledged), "not_notified": list(self.not_notified),
                           "devices": self.devices}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> Reclaim | None:
        """The report, or None when absent or not one (it is the function's own annotation: none is guessed at)."""
        try:
            doc = json.loads(text or "")
            morning, by = parse_iso(doc["morning"]), parse_iso(doc["checkpoint_by"])
            names = [tuple(str(n) for n in doc[k]) for k in ("unacknowledged", "not_notified")]
            devices = int(doc["devices"])
        except (ValueError, TypeError, KeyError):
            return None
        if morning is None or by is None:
            return None
        return cls(morning, by, names[0], names[1], devices)


NONE, HOLD, DRAIN = "None", "Hold", "HoldAndDrain"
"""Kueue's stopPolicy values (LocalQueue and ClusterQueue spec.stopPolicy, v1beta2 CRD at v0.19.2)."""

Bounds = tuple[int, int]
"""An autoscaler's (minReplicas, maxReplicas)."""


@dataclass(frozen=True)
class Observed:
    """What the cluster shows at the run's instant."""

    inference_bounds: Bounds
    """The inference HorizontalPodAutoscaler's (minReplicas, maxReplicas)."""
    inference_devices: int
    """Neuron devices requested by running inference pods."""
    training_stop: str
    """The training LocalQueue's ``stopPolicy``: None, Hold or HoldAndDrain."""
    training_pods: tuple[TrainingPod, ...] = ()
    notice: Notice | None = None
    """The pool's last notice, as the training LocalQueue records it (None: none, or unreadable)."""
    reclaim: Reclaim | None = None
    """The last drain's report, as the training LocalQueue records it."""
    reported_for: datetime | None = None
    """The morning whose report was last announced and counted (``neuronfleet/reported-for``)."""


@dataclass(frozen=True)
class Signal:
    pod: TrainingPod
    checkpoint_by: datetime


@dataclass(frozen=True)
class Announcement:
    key: str
    """The ledger's once-only key: one per pool and morning."""
    subject: str
    message: str
    expires: datetime


@dataclass
class Plan:
    target: Target
    bounds: Bounds | None = None
    """The inference autoscaler's bounds to set (None: leave them)."""
    training_stop: str | None = None
    """The training LocalQueue's stopPolicy to set (None: leave it)."""
    record_notice: Notice | None = None
    """The pool's notice to record on the training LocalQueue before any pod is told (step 1)."""
    signals: list[Signal] = field(default_factory=list)
    record_reclaim: Reclaim | None = None
    """The drain's report to write on the training LocalQueue with the drain (no day bounds if that fails)."""
    report: Reclaim | None = None
    """The report to announce and count this run (then the queue is marked ``reported-for`` its morning)."""
    waiting_until: datetime | None = None
    """Inference waits for training's deadline until this instant (step 2)."""
    unacknowledged: list[TrainingPod] = field(default_factory=list)
    """Running at the drain, told, not acknowledged."""
    not_notified: list[TrainingPod] = field(default_factory=list)
    """Running at the drain, never told (every annotation of them failed before the deadline)."""
    announcement: Announcement | None = None
    usage: dict[Role, int] = field(default_factory=dict)
    """Neuron devices in use per role at the run's instant (idle = the rest of the pool)."""

    @property
    def missed(self) -> list[TrainingPod]:
        """Every training pod the drain takes without a checkpoint acknowledged."""
        return [*self.unacknowledged, *self.not_notified]

    @property
    def changes(self) -> bool:
        return (self.bounds is not None or self.training_stop is not None or bool(self.signals)
                or self.record_notice is not None)


ANNOUNCEMENT_LIFETIME = timedelta(days=8)
"""How long the ledger keeps a morning's claim (past any run that could still see that morning)."""


def usage(schedule: PoolSchedule, observed: Observed) -> dict[Role, int]:
    training = sum(p.devices for p in observed.training_pods if p.running)
    inference = observed.inference_devices
    return {Role.INFERENCE: inference, Role.TRAINING: training,
            Role.IDLE: max(schedule.pool_devices - inference - training, 0)}


def notice_deadline(schedule: PoolSchedule, morning: datetime, now: datetime) -> datetime:
    """The deadline a notice given at ``now`` for ``morning`` gives: the morning, or, given later than one run
    period into the checkpoint window, the checkpoint deadline from ``now`` less that period."""
    return max(morning, now + schedule.checkpoint_deadline - RUN_EVERY)


def told(pod: TrainingPod, notice: Notice) -> bool:
    """Whether ``pod`` carries a notice for ``notice``'s morning (any deadline at or after that morning: every
    notice for an earlier morning is earlier, a night being longer than the checkpoint deadline)."""
    return pod.checkpoint_by is not None and pod.checkpoint_by >= notice.morning


def night_bounds(schedule: PoolSchedule) -> Bounds:
    return (schedule.night_floor, schedule.night_floor)


def day_bounds(schedule: PoolSchedule) -> Bounds:
    return (schedule.day_min_replicas, schedule.day_replicas)


def decide(schedule: PoolSchedule, now: datetime, observed: Observed) -> Plan:
    target = schedule.target(now)
    plan = Plan(target=target, usage=usage(schedule, observed))

    def want(stop: str, bounds: Bounds) -> None:
        plan.training_stop = stop if observed.training_stop != stop else None
        plan.bounds = bounds if observed.inference_bounds != bounds else None

    if target.phase is Phase.NIGHT:
        want(NONE, night_bounds(schedule))
        return plan
    running = [p for p in observed.training_pods if p.running]
    morning = target.checkpoint_by if target.phase is Phase.CHECKPOINT else schedule.last_morning(now)
    assert morning is not None  # a day phase follows a morning within the schedule's reach
    notice = observed.notice if observed.notice is not None and observed.notice.morning == morning else None
    fresh = False
    if notice is None:
        given = [p.checkpoint_by for p in running if p.checkpoint_by is not None and p.checkpoint_by >= morning]
        if given:  # pods told for this morning, the queue's record lost (or written by an older version): keep it
            notice = plan.record_notice = Notice(morning, max(given))
        elif target.phase is Phase.CHECKPOINT or running:
            notice = plan.record_notice = Notice(morning, notice_deadline(schedule, morning, now))
            fresh = True
    due = max([notice.checkpoint_by, *(p.checkpoint_by for p in running if told(p, notice) and p.checkpoint_by)]
              ) if notice is not None else now
    if notice is not None and now < notice.checkpoint_by:
        plan.signals = [Signal(p, notice.checkpoint_by) for p in running if not told(p, notice)]
    if target.phase is Phase.CHECKPOINT or now < due or fresh:
        plan.waiting_until = due if target.phase is Phase.DAY else None
        # hold (never back from a drain already made); inference within its night bounds: the floor is never lent
        want(DRAIN if observed.training_stop == DRAIN else HOLD, night_bounds(schedule))
        return plan
    want(DRAIN, day_bounds(schedule))  # the handler raises the bounds only once the drain is made
    report = observed.reclaim if observed.reclaim is not None and observed.reclaim.morning == morning else None
    if notice is not None:
        plan.not_notified = [p for p in running if not told(p, notice)]
        plan.unacknowledged = [p for p in running if told(p, notice) and not acknowledged(schedule, p)]
        if report is None and plan.missed:
            report = plan.record_reclaim = Reclaim(morning, notice.checkpoint_by, _names(plan.unacknowledged),
                                                   _names(plan.not_notified), sum(p.devices for p in plan.missed))
    if report is not None and observed.reported_for != morning:
        plan.report = report
        plan.announcement = missed_announcement(schedule, report)
    return plan


def acknowledged(schedule: PoolSchedule, pod: TrainingPod) -> bool:
    """Whether ``pod`` checkpointed after its notice (the deadline it was given less the checkpoint deadline; an
    acknowledgement from an earlier night does not count)."""
    if pod.checkpoint_by is None:
        return False
    signal = pod.checkpoint_by - schedule.checkpoint_deadline
    return pod.checkpointed_at is not None and pod.checkpointed_at >= signal


def _names(pods: Sequence[TrainingPod]) -> tuple[str, ...]:
    return tuple(sorted(f"{p.namespace}/{p.name}" for p in pods))


def missed_announcement(schedule: PoolSchedule, report: Reclaim) -> Announcement:
    count = len(report.unacknowledged) + len(report.not_notified)
    minutes = int(schedule.checkpoint_deadline.total_seconds() // 60)
    subject = f"[neuronfleet] {schedule.pool}: training did not checkpoint before the morning"
    lines = [f"Pool {schedule.pool}: {count} training pod(s) on {report.devices} Neuron device(s) were still "
             f"running when the pool drained training for the morning of {iso(report.morning)} "
             f"({schedule.time_zone}) at the deadline {iso(report.checkpoint_by)}:"]
    if report.unacknowledged:
        lines.append(f"- did not acknowledge the checkpoint notice ({minutes} minutes; annotation "
                     f"neuronfleet/checkpointed-at): {', '.join(report.unacknowledged)}")
    if report.not_notified:
        lines.append(f"- never notified: the schedule function could not annotate them before the deadline (see its "
                     f"errors in its log), so they had no chance to checkpoint: {', '.join(report.not_notified)}")
    lines.append("Kueue suspends their Jobs now (they resume the next night from their last checkpoint); work "
                 "since that checkpoint is lost. "
                 + ("Check that the job reads its checkpoint-by file and annotates its pod, or lengthen "
                    "checkpoint_deadline_minutes." if report.unacknowledged else "")
                 + (" Check the schedule function's access to the training pods (RBAC patch on pods in "
                    "training's namespace)." if report.not_notified else ""))
    return Announcement(key=f"{ANNOUNCE_KIND}#{schedule.pool}#{iso(report.morning)}", subject=subject[:100],
                        message="\n".join(lines), expires=report.morning + ANNOUNCEMENT_LIFETIME)
