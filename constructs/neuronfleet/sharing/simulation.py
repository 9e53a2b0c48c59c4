"""A day of one shared pool, minute by minute, through the schedule's own rules (neuronfleet_contract.pool_schedule):
chip-hours used by inference, by training and idle, against a pool that serves inference only; training work lost
at the morning reclaim with and without the checkpoint signal; the reclaim's latency.

Pure and deterministic (no aws-cdk-lib, no randomness): ``scripts/sharing_sim.py`` prints it, docs/sharing.md shows
its output, tests/unit/test_sharing_sim.py runs it on small inputs. A chip is a Neuron device (one Trainium2 chip on
trn2.48xlarge, 16 a node). What is modelled, and what each number rests on:

- **Demand**: the fraction of the day's peak inference load per local hour. :data:`SYNTHETIC_CURVE` is the kit's own
  (labelled synthetic: one business day in one time zone, peak early afternoon, trough 03:00-04:00 at 18 % of peak);
  ``hourly_demand`` derives a curve from a trace in the Azure LLM inference trace's published schema
  (``TIMESTAMP,ContextTokens,GeneratedTokens``: request counts per local hour, averaged over the trace's days,
  divided by the busiest hour).
- **Inference**: by day replicas follow demand (``ceil(demand x day_replicas)``, an autoscaler within the day
  replicas); at night they stay at the night floor; demand above the floor at night is reported unserved. The
  inference-only pool follows demand all day and leaves the rest idle.
- **Training** (shared pool only): admitted at the first minute of the night on every chip inference lends (whole
  nodes), running until the morning reclaim; it checkpoints every ``checkpoint_every`` minutes (each write taking
  ``checkpoint_write`` minutes). Without the signal, SIGTERM at the morning gives it the grace period: a write longer
  than the grace does not finish and the work since the last periodic checkpoint is lost. With the signal, the job
  starts its final checkpoint so that it completes ``margin`` minutes before the morning (the kit's example job
  contract); what is lost is the work of those minutes.
- **Reclaim latency** (signal to chips free for inference): with the signal, the deadline plus the job's exit after
  SIGTERM (``exit_seconds``, bounded by the grace period); without, the grace period (the job is killed mid-write).
  Inference pods' own start (model load, compile cache) comes on top and is not modelled.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from neuronfleet_contract.pool_schedule import Phase, PoolSchedule

SYNTHETIC_CURVE: tuple[float, ...] = (
    0.30, 0.24, 0.20, 0.18, 0.18, 0.21, 0.30, 0.45, 0.65, 0.82, 0.93, 0.98,
    0.99, 1.00, 0.98, 0.95, 0.90, 0.82, 0.72, 0.62, 0.52, 0.45, 0.38, 0.33)
"""Fraction of the day's peak per local hour 00..23: SYNTHETIC (the kit's own shape, not measured anywhere)."""

CHIPS_PER_NODE = 16
"""Trainium2 chips (Neuron devices) per trn2.48xlarge and per trn2u.48xlarge (the instance catalog's
``accelerators``; an UltraServer is four trn2u.48xlarge: 64 chips)."""


@dataclass(frozen=True, kw_only=True)
class TrainingModel:
    checkpoint_every: int = 60
    """Minutes between a job's periodic checkpoints (an assumption the user sets)."""
    checkpoint_write: int = 5
    """Minutes a checkpoint takes to write (an assumption)."""
    margin: int = 2
    """Minutes before the morning by which a signalled job's last checkpoint completes (the job's choice)."""
    grace_seconds: int = 120
    """terminationGracePeriodSeconds of the training pods (neuronfleet.sharing.pins.TRAINING_GRACE_SECONDS)."""
    exit_seconds: int = 15
    """A signalled, checkpointed job's exit after SIGTERM (an assumption; at most the grace period)."""


@dataclass(frozen=True)
class Figures:
    """Chip-hours over the simulated day."""

    inference: float
    training: float
    idle: float
    unserved: float
    """Chip-hours of inference demand above what the pool served (the night floor)."""

    @property
    def total(self) -> float:
        return self.inference + self.training + self.idle


@dataclass(frozen=True)
class DayResult:
    pool_chips: int
    shared: Figures
    inference_only: Figures
    training_lost_with_signal: float
    training_lost_without_signal: float
    reclaim_seconds_with_signal: float
    """From the checkpoint signal to the training chips free: the deadline plus the job's exit."""
    reclaim_seconds_without_signal: float
    """From SIGTERM at the morning to the chips free: the grace period (the job killed mid-write)."""
    morning_wait_with_signal: float
    """Seconds inference waits for the chips after the morning: the checkpointed job's exit."""
    night_floor: int
    day_replicas: int
    replica_chips: int
    hourly: tuple[tuple[int, int, int, int], ...]
    """Per local hour: (hour, inference chips, training chips, idle chips) at the hour's first minute, shared pool."""


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


def simulate_day(schedule: PoolSchedule, curve: Sequence[float], *, training: TrainingModel | None = None,
                 day: date = _REFERENCE_DAY) -> DayResult:
    """One local calendar day (00:00 to 24:00 in the schedule's time zone), minute by minute."""
    if len(curve) != 24 or any(not 0 <= x <= 1 for x in curve):
        raise ValueError(f"curve: got {list(curve)!r}; allowed: 24 fractions of the peak, each within 0..1")
    model = training or TrainingModel()
    zone = ZoneInfo(schedule.time_zone)
    start = datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)
    end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=zone).astimezone(UTC)
    warm = datetime.combine(day - timedelta(days=1), time(0), tzinfo=zone).astimezone(UTC)
    """The day before runs too (not counted), so a night that began yesterday trains from its own start."""
    minutes = int((end - warm).total_seconds() // 60)
    pool, per = schedule.pool_devices, schedule.replica_devices
    node_chips = CHIPS_PER_NODE if pool % CHIPS_PER_NODE == 0 else 1
    shared = [0.0, 0.0, 0.0, 0.0]  # inference, training, idle, unserved (chip-minutes)
    alone = [0.0, 0.0, 0.0, 0.0]
    hourly: list[tuple[int, int, int, int]] = []
    training_chips = 0
    run_started: datetime | None = None
    lost_signal = lost_plain = 0.0
    for m in range(minutes):
        now = warm + timedelta(minutes=m)
        counted = now >= start
        local = now.astimezone(zone)
        demand = curve[local.hour]
        needed = min(math.ceil(demand * schedule.day_replicas - 1e-9), schedule.day_replicas) * per
        target = schedule.target(now)
        if target.phase is Phase.DAY:
            if training_chips and counted:  # the morning reclaim
                lost_signal += training_chips * _lost_minutes(model, run_started, now, signalled=True)
                lost_plain += training_chips * _lost_minutes(model, run_started, now, signalled=False)
                training_chips, run_started = 0, None
            inference, unserved = needed, 0
        else:
            inference = schedule.night_floor * per
            unserved = max(needed - inference, 0)
            if target.phase is Phase.NIGHT and not training_chips:
                training_chips = (pool - inference) // node_chips * node_chips
                run_started = now
        idle = pool - inference - training_chips
        if not counted:
            if target.phase is Phase.DAY:
                training_chips, run_started = 0, None
            continue
        for acc, values in ((shared, (inference, training_chips, idle, unserved)),
                            (alone, (needed, 0, pool - needed, 0))):
            for i, v in enumerate(values):
                acc[i] += v
        if local.minute == 0:
            hourly.append((local.hour, inference, training_chips, idle))
    grace = model.grace_seconds
    return DayResult(
        pool_chips=pool, shared=Figures(*(x / 60 for x in shared)), inference_only=Figures(*(x / 60 for x in alone)),
        training_lost_with_signal=lost_signal / 60, training_lost_without_signal=lost_plain / 60,
        reclaim_seconds_with_signal=schedule.checkpoint_deadline.total_seconds() + min(model.exit_seconds, grace),
        reclaim_seconds_without_signal=float(grace), morning_wait_with_signal=float(min(model.exit_seconds, grace)),
        night_floor=schedule.night_floor,
        day_replicas=schedule.day_replicas, replica_chips=per, hourly=tuple(hourly))


def _lost_minutes(model: TrainingModel, started: datetime | None, reclaim: datetime, *, signalled: bool) -> float:
    """Minutes of a run's work lost at ``reclaim``."""
    if started is None:
        return 0.0
    ran = (reclaim - started).total_seconds() / 60
    if signalled:
        return float(min(model.margin, ran))
    if model.checkpoint_write * 60 <= model.grace_seconds:  # SIGTERM's grace is enough to write one more
        return 0.0
    # the last periodic checkpoint that completed before the reclaim
    completed = [k * model.checkpoint_every + model.checkpoint_write
                 for k in range(1, int(ran // model.checkpoint_every) + 1)
                 if k * model.checkpoint_every + model.checkpoint_write <= ran]
    saved_at = completed[-1] - model.checkpoint_write if completed else 0.0
    return ran - saved_at


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
