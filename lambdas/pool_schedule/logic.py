"""The pool's schedule, one run: from the schedule, the instant and what the cluster shows, what to change.

Pure (no boto3, no Kubernetes client). Every run recomputes the target from the clock, so a missed or repeated run
changes nothing a later run would not: the function runs every minute (EventBridge Scheduler ``rate(1 minute)``) and
each run converges the pool on the target of its instant.

- **night**: inference at its night floor; the training ClusterQueue admits (Kueue ``stopPolicy: None``) and
  borrows what inference lends;
- **checkpoint** (the last ``checkpoint_deadline`` of the night): training admits nothing new (``Hold``) and every
  running training pod is annotated ``neuronfleet/checkpoint-by: <morning>`` once (a pod annotated for another
  morning is annotated again);
- **day**: inference scaled to its day replicas; Kueue preempts the borrowing training workloads for them
  (``reclaimWithinCohort``), each pod getting SIGTERM and its grace period. A training pod still running then that
  did not acknowledge the signal (``neuronfleet/checkpointed-at`` at or after its signal) missed its checkpoint:
  announced once per pool and morning, naming the pods.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from neuronfleet_contract.pool_sharing import ANNOUNCE_KIND, Phase, PoolSchedule, Role, Target, iso


@dataclass(frozen=True)
class TrainingPod:
    name: str
    namespace: str
    devices: int
    running: bool
    checkpoint_by: datetime | None = None
    checkpointed_at: datetime | None = None


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
    signals: list[Signal] = field(default_factory=list)
    missed: list[TrainingPod] = field(default_factory=list)
    announcement: Announcement | None = None
    usage: dict[Role, int] = field(default_factory=dict)
    """Neuron devices in use per role at the run's instant (idle = the rest of the pool)."""

    @property
    def changes(self) -> bool:
        return self.scale_inference_to is not None or self.hold_training is not None or bool(self.signals)


ANNOUNCEMENT_LIFETIME = timedelta(days=8)
"""How long the ledger keeps a morning's claim (past any run that could still see that morning)."""


def usage(schedule: PoolSchedule, observed: Observed) -> dict[Role, int]:
    training = sum(p.devices for p in observed.training_pods if p.running)
    inference = observed.inference_devices
    return {Role.INFERENCE: inference, Role.TRAINING: training,
            Role.IDLE: max(schedule.pool_devices - inference - training, 0)}


def decide(schedule: PoolSchedule, now: datetime, observed: Observed) -> Plan:
    target = schedule.target(now)
    plan = Plan(target=target, usage=usage(schedule, observed))
    if observed.inference_replicas != target.inference_replicas:
        plan.scale_inference_to = target.inference_replicas
    if observed.training_held == target.training_admits:
        plan.hold_training = not target.training_admits
    running = [p for p in observed.training_pods if p.running]
    if target.phase is Phase.CHECKPOINT:
        assert target.checkpoint_by is not None
        plan.signals = [Signal(p, target.checkpoint_by) for p in running if p.checkpoint_by != target.checkpoint_by]
    elif target.phase is Phase.DAY and running:
        morning = schedule.last_morning(now)
        if morning is not None:
            plan.signals = [Signal(p, morning) for p in running if p.checkpoint_by is None]
            plan.missed = [p for p in running if not acknowledged(schedule, p, morning)]
            if plan.missed:
                plan.announcement = missed_announcement(schedule, morning, plan.missed)
    return plan


def acknowledged(schedule: PoolSchedule, pod: TrainingPod, morning: datetime) -> bool:
    """Whether ``pod`` checkpointed after the signal of ``morning`` (an acknowledgement from an earlier night does
    not count)."""
    signal = morning - schedule.checkpoint_deadline
    return pod.checkpointed_at is not None and pod.checkpointed_at >= signal


def missed_announcement(schedule: PoolSchedule, morning: datetime, pods: Sequence[TrainingPod]) -> Announcement:
    names = ", ".join(f"{p.namespace}/{p.name}" for p in sorted(pods, key=lambda p: (p.namespace, p.name)))
    devices = sum(p.devices for p in pods)
    minutes = int(schedule.checkpoint_deadline.total_seconds() // 60)
    subject = f"[neuronfleet] {schedule.pool}: training did not checkpoint before the morning"
    message = (
        f"Pool {schedule.pool}: {len(pods)} training pod(s) on {devices} Neuron device(s) were still running at the "
        f"morning window ({iso(morning)}, {schedule.time_zone}) without acknowledging the checkpoint signal sent "
        f"{minutes} minutes before it (annotation neuronfleet/checkpointed-at): {names}. Kueue reclaims their "
        f"devices for inference now; work since their last checkpoint is lost. Check that the job reads its "
        f"checkpoint-by file and annotates its pod, or lengthen checkpoint_deadline_minutes.")
    return Announcement(key=f"{ANNOUNCE_KIND}#{schedule.pool}#{iso(morning)}", subject=subject[:100],
                        message=message, expires=morning + ANNOUNCEMENT_LIFETIME)
