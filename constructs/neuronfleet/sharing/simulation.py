"""A day of one shared pool, minute by minute, node by node, through the schedule's own clock
(neuronfleet_contract.pool_schedule): what the pool's chips did that was *useful* (inference demand served plus
training progress that survived), against two baselines, with every time the figures rest on stated.

Pure and deterministic (no aws-cdk-lib, no randomness): ``scripts/sharing_sim.py`` prints it (and its assumptions),
docs/sharing.md and the README quote that output, tests/unit/test_sharing_sim.py holds them equal and runs the model
on small inputs. A chip is a Neuron device (one Trainium2 chip; 16 a trn2.48xlarge node). What is modelled:

- **Demand**: the fraction of the day's peak inference load per local hour. :data:`SYNTHETIC_CURVE` is the kit's own
  (labelled synthetic); ``hourly_demand`` derives one from a trace in the Azure LLM inference trace's schema. Demand in
  chips is ``fraction x day_replicas x replica_chips`` (not rounded up): a replica above demand serves nothing.
- **Useful chip-hours** = demand served (at most the chips of *ready* inference replicas) + training progress kept
  (minutes of training steps whose result survives the next reclaim). Start, compile-cache load, checkpoint restore,
  checkpoint writes, work lost at a reclaim, replicas loading a model and replicas above demand are allocated, not
  useful. Both "useful %" and "allocated %" are printed.
- **Inference** follows demand (an HPA: ``ceil(demand x day_replicas)`` replicas within the phase's bounds; under the
  clock, by day at least ``day_min_replicas``, which is ``day_replicas`` unless given: the kit installs no metrics
  source, so its autoscaler holds the day's minimum). A new
  replica serves after ``Timings.inference_load``. Placement is Kueue TAS's for unconstrained pods
  (LeastFreeCapacity: the fullest node with room first). Scale-in removes replicas either from the sparsest node
  first (:attr:`Placement.PACKED`: what a pod-deletion-cost equal to the devices on the pod's node, kept current,
  gives) or from the node with the most replicas first (:attr:`Placement.SPREAD`: Kubernetes' own ranking,
  "doubled up" pods first, without a deletion cost).
- **Training** runs as jobs of ``job_nodes`` whole nodes (one 16-device pod a node); a node is free for training only
  with no inference replica on it and no pod still terminating (TAS counts every pod on the node). Each admission
  pays start + compile-cache load + checkpoint restore, then works ``checkpoint_every`` minutes and writes a
  checkpoint for ``checkpoint_write`` minutes (synchronous: no progress while writing), over and over.
- **Policies** (:class:`Policy`): nothing at night (inference only); the kit's day/night clock with its checkpoint
  notice (training admitted by night only, drained at the morning, its last checkpoint written ``margin`` minutes
  before it); the same clock without the notice; and Kueue's plain borrowing with no clock (training admitted whenever
  whole nodes are free, preempted, newest first, when inference needs the node, with no notice).
- **A reclaim without notice**: SIGTERM, then the grace period. The work since the last completed checkpoint is lost,
  unless ``writes_on_sigterm`` and a write fits in the grace period: then the job's SIGTERM handler saves it (SIGTERM
  *is* the signal then; the model's, not a Kubernetes, guarantee). The node is free after the grace period (or the
  write, if it fits), then a new inference replica loads its model.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo

from neuronfleet_contract.pool_schedule import Phase, PoolSchedule

SYNTHETIC_CURVE: tuple[float, ...] = (
    0.30, 0.24, 0.20, 0.18, 0.18, 0.21, 0.30, 0.45, 0.65, 0.82, 0.93, 0.98,
    0.99, 1.00, 0.98, 0.95, 0.90, 0.82, 0.72, 0.62, 0.52, 0.45, 0.38, 0.33)
"""Fraction of the day's peak per local hour 00..23: SYNTHETIC (the kit's own shape, not measured anywhere)."""

CHIPS_PER_NODE = 16
"""Trainium2 chips (Neuron devices) per trn2.48xlarge and per trn2u.48xlarge (the instance catalog's
``accelerators``; an UltraServer is four trn2u.48xlarge: 64 chips)."""

CHECKPOINT_INTERVALS: tuple[int, ...] = (15, 30, 45, 60, 90)
"""Minutes between periodic checkpoints the lost-work table covers."""
GRACE_PERIODS: tuple[int, ...] = (30, 120, 300)
"""terminationGracePeriodSeconds the lost-work table covers (the kit's example: 120)."""


@dataclass(frozen=True, kw_only=True)
class Timings:
    """Start-up times, in minutes. No public source states any of them for Trainium2; each is an ASSUMPTION, and the
    sources below bound or explain it without measuring it (read 2026-11-29)."""

    job_start: int = 3
    """A training pod scheduled to its launcher running (image already on the node). ASSUMPTION."""
    compile_cache_load: int = 2
    """Loading the job's compiled graphs (NEFFs) from the Neuron persistent cache: a cache hit, no compilation.
    ASSUMPTION. The Neuron docs say the on-disk cache exists so a re-run does not recompile
    (awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-features/neuron-caching.html) and that a
    compile can take "several minutes for large graphs" (.../en/latest/vllm-neuron/docs/design/compilation/
    compilation_cache.html); neither gives a load time."""
    checkpoint_restore: int = 5
    """Reading the last checkpoint back onto the devices at each admission. ASSUMPTION (it scales with the model's
    size and the file system's throughput)."""
    inference_load: int = 5
    """A new inference replica scheduled to serving (weights and compiled graphs loaded). ASSUMPTION. AWS bounds the
    same step on SageMaker, not its length: ContainerStartupHealthCheckTimeoutInSeconds and
    ModelDataDownloadTimeoutInSeconds each accept 60..3600 s
    (docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentStartupParameters.html)."""

    @property
    def training_overhead(self) -> int:
        return self.job_start + self.compile_cache_load + self.checkpoint_restore


@dataclass(frozen=True, kw_only=True)
class TrainingModel:
    checkpoint_every: int = 60
    """Minutes of training between periodic checkpoints (the user's choice; the table covers 15..90)."""
    checkpoint_write: int = 5
    """Minutes a checkpoint takes to write, training stalled meanwhile. ASSUMPTION."""
    margin: int = 2
    """Minutes before the morning by which a notified job's last checkpoint completes (the job's choice)."""
    grace_seconds: int = 120
    """terminationGracePeriodSeconds of the training pods (neuronfleet.sharing.pins.TRAINING_GRACE_SECONDS)."""
    exit_seconds: int = 15
    """A notified, checkpointed job's exit after SIGTERM. ASSUMPTION (at most the grace period)."""
    job_nodes: int = 2
    """Whole nodes one training job takes (the kit's example Job: 2 pods x 16 devices)."""
    writes_on_sigterm: bool = True
    """Whether the job saves a checkpoint when SIGTERM comes (it does only if the write fits the grace period)."""

    def __post_init__(self) -> None:
        for name in ("checkpoint_every", "checkpoint_write", "job_nodes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: got {getattr(self, name)}; allowed: 1 or more")
        for name in ("margin", "grace_seconds", "exit_seconds"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: got {getattr(self, name)}; allowed: 0 or more")

    @property
    def sigterm_saves(self) -> bool:
        return self.writes_on_sigterm and self.checkpoint_write * 60 <= self.grace_seconds


class Policy(StrEnum):
    INFERENCE_ONLY = "nothing at night"
    DAY_NIGHT = "day/night, notice"
    DAY_NIGHT_NO_NOTICE = "day/night, no notice"
    PLAIN_RECLAIM = "Kueue plain reclaim"


class Placement(StrEnum):
    PACKED = "packed"
    SPREAD = "spread"


@dataclass(frozen=True)
class Figures:
    """Chip-hours over one local day (steady state: the day before and after run too)."""

    pool: float
    demand: float
    served: float
    inference_allocated: float
    training_allocated: float
    """Chips held by training pods, running or terminating."""
    training_progress: float
    """Training steps whose result survived."""
    training_lost: float
    """Training steps done, then lost at a reclaim."""
    evictions: int
    """Training jobs evicted (drained or preempted) during the day."""

    @property
    def useful(self) -> float:
        return self.served + self.training_progress

    @property
    def useful_percent(self) -> float:
        return 100 * self.useful / self.pool

    @property
    def allocated_percent(self) -> float:
        return 100 * (self.inference_allocated + self.training_allocated) / self.pool

    @property
    def unserved(self) -> float:
        return self.demand - self.served

    @property
    def training_overhead(self) -> float:
        """Training chip-hours neither kept nor lost: start, cache load, restore, writes, terminating pods."""
        return self.training_allocated - self.training_progress - self.training_lost


def floor_for(curve: Sequence[float], schedule_day: Sequence[str], time_zone: str, day_replicas: int) -> int:
    """The night floor that serves the curve's busiest night hour (whole replicas)."""
    probe = PoolSchedule.build(pool="probe", time_zone=time_zone, day=schedule_day, pool_devices=day_replicas,
                               replica_devices=1, day_replicas=day_replicas, night_floor=0, checkpoint_deadline=1)
    zone = ZoneInfo(time_zone)
    night = [curve[h] for h in range(24)
             if not probe.in_day(datetime.combine(_REFERENCE_DAY, time(h, 30), tzinfo=zone))]
    return math.ceil(max(night, default=0.0) * day_replicas - 1e-9)


_REFERENCE_DAY = date(2026, 11, 24)
"""A Tuesday without a clock change in the IANA zones the docs use."""


@dataclass(frozen=True)
class Clock:
    """The minutes of three local days (the day before, the counted day, the day after) with their phase and
    demand: computed once, shared by every policy's run."""

    schedule: PoolSchedule
    phases: tuple[Phase, ...]
    demand: tuple[float, ...]
    counted: range

    @classmethod
    def of(cls, schedule: PoolSchedule, curve: Sequence[float], day: date = _REFERENCE_DAY) -> Clock:
        if len(curve) != 24 or any(not 0 <= x <= 1 for x in curve):
            raise ValueError(f"curve: got {list(curve)!r}; allowed: 24 fractions of the peak, each within 0..1")
        zone = ZoneInfo(schedule.time_zone)

        def midnight(d: date) -> datetime:
            return datetime.combine(d, time(0), tzinfo=zone).astimezone(UTC)

        warm, start, end, tail = (midnight(day + timedelta(days=k)) for k in (-1, 0, 1, 2))
        minutes = int((tail - warm).total_seconds() // 60)
        first, last = int((start - warm).total_seconds() // 60), int((end - warm).total_seconds() // 60)
        stamps = [warm + timedelta(minutes=m) for m in range(minutes)]
        return cls(schedule, tuple(schedule.phase(s) for s in stamps),
                   tuple(curve[s.astimezone(zone).hour] for s in stamps), range(first, last))


@dataclass
class _Job:
    start: int
    nodes: list[int]
    chips: int


@dataclass
class _Tally:
    counted: range
    progress: float = 0.0
    lost: float = 0.0
    evictions: int = 0

    def end_job(self, job: _Job, end: int, model: TrainingModel, timings: Timings, *, notice: bool) -> None:
        """Attributes each minute of a job's run to progress kept or lost (chip-minutes within the counted day)."""
        if end in self.counted:
            self.evictions += 1
        o, every, write = timings.training_overhead, model.checkpoint_every, model.checkpoint_write
        cycle = every + write
        elapsed = end - job.start
        final = elapsed - model.margin - write  # a notified job's last write starts here
        completed = max(elapsed - o, 0) // cycle  # periodic writes finished by the end
        for t in range(o, elapsed):
            if job.start + t not in self.counted:
                continue
            k, rem = divmod(t - o, cycle)
            if notice and final >= o and t >= final:
                if t >= final + write:
                    self.lost += job.chips
                continue
            if rem >= every:
                continue  # writing
            if notice or k < completed or model.sigterm_saves:
                self.progress += job.chips
            else:
                self.lost += job.chips


@dataclass
class _Pool:
    """The nodes' state: inference replicas per node, the training job on a node, when a terminating pod frees it."""

    nodes: int
    slots: int
    model: TrainingModel
    times: Timings
    tally: _Tally
    inference: list[int] = field(default_factory=list)
    owner: list[_Job | None] = field(default_factory=list)
    free_at: list[int] = field(default_factory=list)
    loading: list[int] = field(default_factory=list)
    """Ready-at minute of the replicas still loading their model, oldest first."""
    jobs: list[_Job] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.inference, self.owner, self.free_at = [0] * self.nodes, [None] * self.nodes, [0] * self.nodes

    def evict(self, job: _Job, now: int, *, notice: bool) -> None:
        model = self.model
        self.tally.end_job(job, now, model, self.times, notice=notice)
        if notice:
            seconds = min(model.exit_seconds, model.grace_seconds)
        else:  # a SIGTERM handler that saves exits when its write is done; otherwise SIGKILL at the grace's end
            seconds = model.checkpoint_write * 60 if model.sigterm_saves else model.grace_seconds
        for n in job.nodes:
            self.owner[n], self.free_at[n] = None, now + math.ceil(seconds / 60)
        self.jobs.remove(job)

    def scale_in(self, target: int, placement: Placement) -> None:
        """Loading replicas go first, from the node the placement picks."""
        inference = self.inference
        while sum(inference) > target:
            busy = [n for n in range(self.nodes) if inference[n]]
            n = min(busy, key=lambda i: (inference[i], -i)) if placement is Placement.PACKED \
                else max(busy, key=lambda i: (inference[i], i))
            inference[n] -= 1
            if self.loading:
                self.loading.pop()

    def scale_out(self, target: int, now: int, *, preempts: bool) -> None:
        """The fullest node with room first (LeastFreeCapacity); with ``preempts``, Kueue's reclaim evicts the most
        recently admitted training job (kueue@8eab6877 pkg/scheduler/preemption/common/ordering.go
        ``CandidatesOrdering``) when no node has room, and no more than the replicas still without room need."""
        inference = self.inference
        while sum(inference) < target:
            room = [n for n in range(self.nodes)
                    if self.owner[n] is None and self.free_at[n] <= now and inference[n] < self.slots]
            if not room:
                freeing = sum(self.slots - inference[n] for n in range(self.nodes)
                              if self.owner[n] is None and self.free_at[n] > now)
                if preempts and self.jobs and freeing < target - sum(inference):
                    self.evict(max(self.jobs, key=lambda j: j.start), now, notice=False)
                    continue
                return  # the rest wait for nodes being freed
            inference[max(room, key=lambda i: (inference[i], -i))] += 1
            self.loading.append(now + self.times.inference_load)

    def admit(self, now: int) -> None:
        """Training jobs on whole free nodes (no replica, no terminating pod), as many as fit."""
        size = self.model.job_nodes
        whole = [n for n in range(self.nodes)
                 if self.owner[n] is None and not self.inference[n] and self.free_at[n] <= now]
        while len(whole) >= size:
            job = _Job(now, whole[:size], size * CHIPS_PER_NODE)
            whole = whole[size:]
            for n in job.nodes:
                self.owner[n] = job
            self.jobs.append(job)

    def training_chips(self, now: int) -> int:
        return sum(CHIPS_PER_NODE for n in range(self.nodes) if self.owner[n] is not None or self.free_at[n] > now)


def simulate(clock: Clock, policy: Policy, placement: Placement = Placement.PACKED, *,
             training: TrainingModel | None = None, timings: Timings | None = None) -> Figures:
    """One policy over the clock's counted day, node by node."""
    schedule = clock.schedule
    per = schedule.replica_devices
    if schedule.pool_devices % CHIPS_PER_NODE or CHIPS_PER_NODE % per:
        raise ValueError(f"pool: got {schedule.pool_devices} chips of replicas of {per}; allowed: whole "
                         f"{CHIPS_PER_NODE}-chip nodes, replicas that divide a node")
    tally = _Tally(clock.counted)
    pool = _Pool(schedule.pool_devices // CHIPS_PER_NODE, CHIPS_PER_NODE // per, training or TrainingModel(),
                 timings or Timings(), tally)
    sums = dict(demand=0.0, served=0.0, inference=0.0, training=0.0)
    clocked = policy in (Policy.DAY_NIGHT, Policy.DAY_NIGHT_NO_NOTICE)
    for m, (phase, fraction) in enumerate(zip(clock.phases, clock.demand, strict=True)):
        needed = max(1, min(math.ceil(fraction * schedule.day_replicas - 1e-9), schedule.day_replicas))
        # the clock's day holds at least day_min_replicas (the autoscaler's day minimum: day_replicas unless a metrics
        # source lets a team lower it, PoolSchedule.day_min_replicas)
        target = schedule.night_floor if clocked and phase is not Phase.DAY else \
            max(needed, schedule.day_min_replicas) if clocked else needed
        if clocked and phase is Phase.DAY:
            for job in list(pool.jobs):  # the morning drain
                pool.evict(job, m, notice=policy is Policy.DAY_NIGHT)
        pool.scale_in(target, placement)
        pool.scale_out(target, m, preempts=policy is Policy.PLAIN_RECLAIM)
        while pool.loading and pool.loading[0] <= m:
            pool.loading.pop(0)
        if policy is Policy.PLAIN_RECLAIM or (clocked and phase is Phase.NIGHT):
            pool.admit(m)
        if m in clock.counted:
            placed = sum(pool.inference)
            demand_chips = fraction * schedule.day_replicas * per
            sums["demand"] += demand_chips
            sums["served"] += min(demand_chips, (placed - len(pool.loading)) * per)
            sums["inference"] += placed * per
            sums["training"] += pool.training_chips(m)
    for job in list(pool.jobs):  # still running when the simulated days end: as if reclaimed then (outside the count)
        pool.evict(job, len(clock.phases), notice=True)
    return Figures(pool=schedule.pool_devices * len(clock.counted) / 60, demand=sums["demand"] / 60,
                   served=sums["served"] / 60, inference_allocated=sums["inference"] / 60,
                   training_allocated=sums["training"] / 60, training_progress=tally.progress / 60,
                   training_lost=tally.lost / 60, evictions=tally.evictions)


def lost_table(clock: Clock, policy: Policy, *, training: TrainingModel | None = None,
               timings: Timings | None = None, placement: Placement = Placement.PACKED,
               intervals: Sequence[int] = CHECKPOINT_INTERVALS,
               graces: Sequence[int] = GRACE_PERIODS) -> dict[tuple[int, int], float]:
    """Training chip-hours lost in the day per (checkpoint interval, grace period)."""
    base = training or TrainingModel()
    return {(every, grace): simulate(clock, policy, placement, timings=timings,
                                     training=replace(base, checkpoint_every=every, grace_seconds=grace)).training_lost
            for every in intervals for grace in graces}


def hourly_demand(rows: Iterable[str], *, time_zone: str = "UTC") -> tuple[float, ...]:
    """A demand curve from a trace in the Azure LLM inference trace's schema: requests per local hour of day,
    averaged over the days the trace covers in that hour, as a fraction of the busiest hour. ``time_zone`` is the
    zone of the trace's TIMESTAMPs (the trace does not say; UTC unless told)."""
    reader = csv.DictReader(rows)
    if reader.fieldnames is None or "TIMESTAMP" not in reader.fieldnames:
        raise ValueError(f"trace: got columns {reader.fieldnames!r}; allowed: a CSV whose header has TIMESTAMP "
                         "(TIMESTAMP,ContextTokens,GeneratedTokens)")
    zone = ZoneInfo(time_zone)
    counts = [0] * 24
    days: list[set[date]] = [set() for _ in range(24)]
    for line, row in enumerate(reader, start=2):
        text = (row.get("TIMESTAMP") or "").strip()
        try:
            stamp = datetime.strptime(text[:26], "%Y-%m-%d %H:%M:%S.%f") if "." in text else \
                datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            raise ValueError(f"trace line {line}: TIMESTAMP got {text!r}; allowed: 'YYYY-MM-DD HH:MM:SS[.fraction]'") \
                from None
        local = stamp.replace(tzinfo=zone)
        counts[local.hour] += 1
        days[local.hour].add(local.date())
    rates = [counts[h] / len(days[h]) if days[h] else 0.0 for h in range(24)]
    peak = max(rates)
    if not peak:
        raise ValueError("trace: got no rows; allowed: one request or more")
    return tuple(round(r / peak, 4) for r in rates)
