"""The pool's schedule, one run: from the schedule, the instant and what the cluster shows, what to change.

Pure (no boto3, no Kubernetes client). Every run recomputes the target from the clock and from what the cluster
records, so a missed or repeated run changes nothing a later run would not: the function runs every minute
(EventBridge Scheduler ``rate(1 minute)``) and each run converges the pool on the target of its instant.

- **night**: inference at its night floor; the training ClusterQueue admits (Kueue ``stopPolicy: None``) and
  borrows what inference lends;
- **checkpoint** (the last ``checkpoint_deadline`` of the night) and **day**: training admits nothing new (``Hold``).

The morning is always the same sequence, whatever runs were missed: **notify, wait for the deadline, reclaim**.

1. **notify**: the first run of the checkpoint window (or, when no run came during it, of the day, if training still
   runs) records the pool's notice on the training ClusterQueue: the morning and the deadline given
   (:class:`Notice`; the morning itself when given within one run period of the window's start, else the notice's
   instant plus the checkpoint deadline, less that period). Only then is each running training pod annotated
   ``neuronfleet/checkpoint-by: <deadline>`` (once; a pod not told yet, its annotation having failed, is told by a
   later run while the deadline is ahead).
2. **wait**: inference stays at its night floor until the deadline (the latest one any running pod was given).
3. **reclaim**: the training pods still running are written down first, apart: those told that did not acknowledge
   (``neuronfleet/checkpointed-at`` at or after their notice) and those the notice never reached (:class:`Reclaim`,
   on the training ClusterQueue); then inference is scaled to its day replicas and Kueue preempts the borrowing
   training workloads for them (``reclaimWithinCohort``), each pod getting SIGTERM and its grace period. The
   report is announced once per pool and morning and counted, by the run that wrote it or, if that failed, by the
   next ones (the pods are gone by then: the report on the queue is what they read), until the queue says it was
   (``neuronfleet/reported-for``).
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
    """The pool's notice for one morning, kept on the training ClusterQueue (annotations ``neuronfleet/notice-for``
    and ``neuronfleet/checkpoint-by``)."""

    morning: datetime
    checkpoint_by: datetime


@dataclass(frozen=True)
class Reclaim:
    """What a morning's reclaim took without a checkpoint, written on the training ClusterQueue before the scale
    (annotation ``neuronfleet/reclaimed``, JSON)."""

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


@dataclass(frozen=True)
class Observed:
    """What the cluster shows at the run's instant."""

    inference_replicas: int
    """The inference Deployment's desired replicas (its scale's ``spec.replicas``)."""
    inference_devices: int
    """Neuron devices requested by running inference pods."""
    training_held: bool
    """Whether the training ClusterQueue's ``stopPolicy`` is ``Hold`` (or ``HoldAndDrain``)."""
    training_pods: tuple[TrainingPod, ...] = ()
    notice: Notice | None = None
    """The pool's last notice, as the training ClusterQueue records it (None: none, or unreadable)."""
    reclaim: Reclaim | None = None
    """The last reclaim's report, as the training ClusterQueue records it."""
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
    scale_inference_to: int | None = None
    hold_training: bool | None = None
    """True: set the training ClusterQueue's stopPolicy to Hold; False: to None; None: leave it."""
    record_notice: Notice | None = None
    """The pool's notice to record on the training ClusterQueue before any pod is told (step 1)."""
    signals: list[Signal] = field(default_factory=list)
    record_reclaim: Reclaim | None = None
    """The reclaim's report to write on the training ClusterQueue before the scale (no scale if that fails)."""
    report: Reclaim | None = None
    """The report to announce and count this run (then the queue is marked ``reported-for`` its morning)."""
    waiting_until: datetime | None = None
    """Inference waits for training's deadline until this instant (step 2)."""
    unacknowledged: list[TrainingPod] = field(default_factory=list)
    """Running at the reclaim, told, not acknowledged."""
    not_notified: list[TrainingPod] = field(default_factory=list)
    """Running at the reclaim, never told (every annotation of them failed before the deadline)."""
    announcement: Announcement | None = None
    usage: dict[Role, int] = field(default_factory=dict)
    """Neuron devices in use per role at the run's instant (idle = the rest of the pool)."""

    @property
    def missed(self) -> list[TrainingPod]:
        """Every training pod the reclaim takes without a checkpoint acknowledged."""
        return [*self.unacknowledged, *self.not_notified]

    @property
    def changes(self) -> bool:
        return (self.scale_inference_to is not None or self.hold_training is not None or bool(self.signals)
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


def decide(schedule: PoolSchedule, now: datetime, observed: Observed) -> Plan:
    target = schedule.target(now)
    plan = Plan(target=target, usage=usage(schedule, observed))
    if observed.training_held == target.training_admits:
        plan.hold_training = not target.training_admits
    if target.phase is Phase.NIGHT:
        if observed.inference_replicas != target.inference_replicas:
            plan.scale_inference_to = target.inference_replicas
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
        if observed.inference_replicas < schedule.night_floor:  # the floor is never lent: no reclaim
            plan.scale_inference_to = schedule.night_floor
        return plan
    if observed.inference_replicas != target.inference_replicas:
        plan.scale_inference_to = target.inference_replicas
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
             f"running when inference took the pool back for the morning of {iso(report.morning)} "
             f"({schedule.time_zone}) at the deadline {iso(report.checkpoint_by)}:"]
    if report.unacknowledged:
        lines.append(f"- did not acknowledge the checkpoint notice ({minutes} minutes; annotation "
                     f"neuronfleet/checkpointed-at): {', '.join(report.unacknowledged)}")
    if report.not_notified:
        lines.append(f"- never notified: the schedule function could not annotate them before the deadline (see its "
                     f"errors in its log), so they had no chance to checkpoint: {', '.join(report.not_notified)}")
    lines.append("Kueue reclaims their devices for inference now; work since their last checkpoint is lost. "
                 + ("Check that the job reads its checkpoint-by file and annotates its pod, or lengthen "
                    "checkpoint_deadline_minutes." if report.unacknowledged else "")
                 + (" Check the schedule function's access to the training pods (RBAC patch on pods in "
                    "training's namespace)." if report.not_notified else ""))
    return Announcement(key=f"{ANNOUNCE_KIND}#{schedule.pool}#{iso(report.morning)}", subject=subject[:100],
                        message="\n".join(lines), expires=report.morning + ANNOUNCEMENT_LIFETIME)
