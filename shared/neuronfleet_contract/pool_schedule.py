"""One pool of Neuron capacity shared by day and night (Rainier's pattern): the schedule and what it asks of the pool.

By day the pool serves inference; at night inference scales to its night floor and training borrows the rest; a
checkpoint deadline ahead of each morning tells training to checkpoint before inference takes its chips back. This
module is the one home of the schedule's rules: the construct refuses a bad schedule at synth with it, the pool's
schedule function (lambdas/pool_schedule) computes its target from it, and scripts/sharing_sim.py simulates it.

Pure: no boto3, no CDK; the standard library's ``zoneinfo`` gives the time zones (the IANA database of the machine:
Lambda's Amazon Linux and most Linux hosts ship it under /usr/share/zoneinfo).

Times are wall-clock times in the schedule's IANA time zone. Everything outside the day windows is night. On a day
whose clocks jump forward, a window starting in the skipped hour starts at the same UTC instant a clock that had not
jumped would show (``zoneinfo``'s fold=0 reading); on the day clocks go back, a window starting in the repeated hour
starts at its first occurrence. The checkpoint deadline is an absolute duration before the morning's UTC instant.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .environment import Configured, variable
from .namespaces import POOL_NAMESPACE
from .problems import Problem

# ------------------------------------------------------------------------------------------ names both sides use

LABEL_ROLE = "neuronfleet/pool-role"
"""Pod label: ``inference`` or ``training``. The schedule function finds the pool's pods by it."""
LABEL_POOL = "neuronfleet/pool"
"""Pod label: the pool's name (several pools may share a cluster)."""
ANNOTATION_CHECKPOINT_BY = "neuronfleet/checkpoint-by"
"""Pod annotation the schedule function sets on each running training pod at the checkpoint signal: the UTC instant
(ISO 8601, ``Z``) by which the job must have checkpointed. A job reads it from a downwardAPI volume (annotations in
such a volume are refreshed while the pod runs; environment variables are not)."""
ANNOTATION_CHECKPOINTED_AT = "neuronfleet/checkpointed-at"
"""Pod annotation the training job sets on its own pod once its checkpoint is durable: the UTC instant (ISO 8601).
A pod whose value is at or after its signal has checkpointed in time."""
CHECKPOINT_FILE = "/etc/neuronfleet/checkpoint-by"
"""Where the example job's downwardAPI volume puts :data:`ANNOTATION_CHECKPOINT_BY` (empty until signalled)."""

ANNOTATION_NOTICE_FOR = "neuronfleet/notice-for"
"""Annotation the schedule function sets on the pool's training ClusterQueue when it first tells training to
checkpoint for a morning: that morning (UTC, ISO 8601). With :data:`ANNOTATION_CHECKPOINT_BY` on the same queue
(the deadline it gave) it is the pool's notice: the one record of when the morning's sequence started, read back by
every run, so the reclaim waits for the deadline whatever runs were missed."""
ANNOTATION_RECLAIMED = "neuronfleet/reclaimed"
"""Annotation on the training ClusterQueue: the last reclaim's report (JSON: the morning, the deadline, the pods
that did not acknowledge, those never notified, their devices), written before inference scales up, so the
announcement survives the pods' deletion and a failed run."""
ANNOTATION_REPORTED_FOR = "neuronfleet/reported-for"
"""Annotation on the training ClusterQueue: the morning whose reclaim report was announced (recorded in the outbox)
and counted (its metrics put)."""
RUN_EVERY_SECONDS = 60
"""The schedule function's period (EventBridge Scheduler ``rate(1 minute)``: neuronfleet.sharing.pins
SCHEDULE_EXPRESSION, which a test holds equal). A notice given later than one period into the checkpoint window
gets its own deadline: the checkpoint deadline from the notice, less one period."""

ANNOUNCE_KIND = "pool-checkpoint-missed"
"""The announcement ledger's once-only key prefix of "training did not checkpoint in time" (one per pool and
morning)."""

UTILISATION_METRIC = "PoolDevices"
"""Metric name the schedule function publishes (unit Count, one datapoint per run): the pool's Neuron devices in use,
dimensions ``Pool`` and ``Role`` (inference | training | idle)."""
RECLAIM_METRIC = "ReclaimSeconds"
"""Seconds from the checkpoint signal to the last training pod gone (unit Seconds, dimension ``Pool``)."""
MISSED_METRIC = "CheckpointsMissed"
"""Training pods still running at the reclaim that were told to checkpoint and had not acknowledged it (unit Count,
dimension ``Pool``)."""
UNPUBLISHABLE_METRIC = "UnpublishableAnnouncements"
"""Announcements the run set aside because SNS refused them as such (neuronfleet_runtime.announcements, step 5;
each also said once by a short notice) (unit Count, dimension ``Pool``)."""
UNNOTIFIED_METRIC = "CheckpointNoticesUndelivered"
"""Training pods still running at the reclaim that the notice never reached (every annotation of them failed before
the deadline) (unit Count, dimension ``Pool``)."""


class Role(StrEnum):
    INFERENCE = "inference"
    TRAINING = "training"
    IDLE = "idle"


class Phase(StrEnum):
    DAY = "day"
    """Inference by demand up to its day replicas; training drained (its LocalQueue at HoldAndDrain, once the
    morning's deadline has passed)."""
    NIGHT = "night"
    """Inference at its night floor; training borrows the whole nodes inference lends (its LocalQueue at None)."""
    CHECKPOINT = "checkpoint"
    """Night still, within the checkpoint deadline of the morning: running training pods are told to checkpoint by
    the morning; training admits nothing new (its LocalQueue at Hold)."""


# ---------------------------------------------------------------------------------------------------- refusals


class InvalidSchedule(ValueError):
    """A schedule refused: every problem names its field, the value and what is allowed."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("invalid pool schedule: " + "; ".join(str(p) for p in self.problems))


# ------------------------------------------------------------------------------------------------- the schedule

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_WINDOW = re.compile(r"^\s*(?:(?P<d1>[a-z]{3})(?:-(?P<d2>[a-z]{3}))?\s+)?(?P<start>\d{2}:\d{2})-(?P<end>\d{2}:\d{2})\s*$",
                     re.IGNORECASE)
WINDOW_FORMAT = ("'[DAY[-DAY] ]HH:MM-HH:MM' with DAY one of mon..sun (no day: every day), start before end within "
                 "one day, e.g. 'mon-fri 07:00-22:00'")


@dataclass(frozen=True)
class Window:
    """A day window on one weekday (0 = Monday), [start, end) in local wall-clock time."""

    weekday: int
    start: time
    end: time


def _hhmm(text: str) -> time | None:
    hours, minutes = (int(x) for x in text.split(":"))
    if hours > 23 or minutes > 59:
        return None
    return time(hours, minutes)


def parse_windows(field_name: str, specs: Sequence[str]) -> tuple[list[Window], list[Problem]]:
    windows: list[Window] = []
    problems: list[Problem] = []
    for i, spec in enumerate(specs):
        where = f"{field_name}[{i}]"
        match = _WINDOW.match(spec) if isinstance(spec, str) else None
        if not match:
            problems.append(Problem(where, spec, WINDOW_FORMAT))
            continue
        start, end = _hhmm(match["start"]), _hhmm(match["end"])
        d1, d2 = (match["d1"] or "mon").lower(), (match["d2"] or match["d1"] or "sun").lower()
        if start is None or end is None or d1 not in DAYS or d2 not in DAYS or start >= end:
            problems.append(Problem(where, spec, WINDOW_FORMAT))
            continue
        first, last = DAYS.index(d1), DAYS.index(d2)
        days = range(first, last + 1) if first <= last else [*range(first, 7), *range(0, last + 1)]
        windows.extend(Window(d, start, end) for d in days)
    return windows, problems


def _minutes(t: time) -> int:
    return t.hour * 60 + t.minute


def weekly_gaps(windows: Sequence[Window]) -> list[tuple[Window, timedelta]]:
    """For each morning (a day window not right after another), the night before it (wall-clock, across the week):
    the gap since the previous window's end. One window a week gives a gap of a week minus the window."""
    marks = sorted(windows, key=lambda w: (w.weekday, w.start))
    out = []
    for i, w in enumerate(marks):
        prev = marks[i - 1]
        start = w.weekday * 1440 + _minutes(w.start)
        prev_end = prev.weekday * 1440 + _minutes(prev.end)
        gap = (start - prev_end) % (7 * 1440)
        if gap == 0 and len(marks) == 1:
            gap = 7 * 1440
        if gap:  # a window right after another is no morning
            out.append((w, timedelta(minutes=gap)))
    return out


@dataclass(frozen=True, kw_only=True)
class PoolSchedule:
    """The pool and its schedule. Quantities are Neuron devices (``aws.amazon.com/neuron``), the unit Kueue's quota
    and the pods' requests use; an inference replica takes ``replica_devices`` of them."""

    pool: str
    time_zone: str
    day: tuple[str, ...]
    """Day windows (:data:`WINDOW_FORMAT`); every other time is night."""
    pool_devices: int
    replica_devices: int
    day_replicas: int
    night_floor: int
    """Inference replicas kept at night."""
    checkpoint_deadline: timedelta
    """How long before each morning training is told to checkpoint."""
    day_min_replicas: int = 0
    """The least inference replicas by day: the inference autoscaler's minReplicas by day (0: ``day_replicas``). A
    HorizontalPodAutoscaler holds its bounds before it reads a metric and holds still without one (Kubernetes
    pkg/controller/podautoscaler/horizontal.go ``reconcileAutoscaler``: below minReplicas it scales to it, else it
    computes from metrics and keeps the count when none can be read); the kit installs no metrics source, so by
    default the day's minimum is the day's replicas and the morning always takes the day's devices back. Lower it only
    with a metrics source the autoscaler reads (metrics-server, a custom metrics adapter)."""
    windows: tuple[Window, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def build(cls, *, pool: str, time_zone: str, day: Iterable[str], pool_devices: int, replica_devices: int,
              day_replicas: int, night_floor: int, checkpoint_deadline: timedelta | int,
              day_min_replicas: int | None = None, field_prefix: str = "") -> PoolSchedule:
        """The schedule, or :class:`InvalidSchedule` naming every bad field (``field_prefix`` roots the names, e.g.
        ``sharing.schedule.``). ``checkpoint_deadline`` as a timedelta or whole minutes."""
        p = field_prefix
        problems: list[Problem] = []
        day = tuple(day) if not isinstance(day, str) else (day,)
        if not isinstance(time_zone, str) or not zone_known(time_zone):
            problems.append(Problem(f"{p}time_zone", time_zone,
                                    "an IANA time zone name, e.g. 'Europe/Berlin' or 'UTC'"))
        windows, bad = _day_windows(f"{p}day", day)
        problems += bad
        problems += _count_problems(p, pool_devices=pool_devices, replica_devices=replica_devices,
                                    day_replicas=day_replicas, night_floor=night_floor)
        if not problems:
            problems += _fit_problems(p, pool_devices, replica_devices, day_replicas, night_floor)
        if day_min_replicas is not None and not problems and not night_floor <= day_min_replicas <= day_replicas:
            problems.append(Problem(f"{p}day_min_replicas", day_min_replicas,
                                    f"at least night_floor ({night_floor}) and at most day_replicas ({day_replicas})"))
        if isinstance(checkpoint_deadline, int) and not isinstance(checkpoint_deadline, bool):
            checkpoint_deadline = timedelta(minutes=checkpoint_deadline)
        problems += _deadline_problems(p, checkpoint_deadline, windows if not problems else [])
        if problems:
            raise InvalidSchedule(problems)
        assert isinstance(checkpoint_deadline, timedelta)
        return cls(pool=pool, time_zone=time_zone, day=day, pool_devices=pool_devices,
                   replica_devices=replica_devices, day_replicas=day_replicas, night_floor=night_floor,
                   checkpoint_deadline=checkpoint_deadline, day_min_replicas=day_min_replicas or day_replicas,
                   windows=tuple(windows))

    # ------------------------------------------------------------------------------------------- at an instant

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)

    def _instants(self, around: datetime) -> list[tuple[datetime, datetime]]:
        """The day windows as UTC [start, end) from a day before ``around`` to eight days after, sorted."""
        zone = self.zone
        local_day = around.astimezone(zone).date()
        out = []
        for offset in range(-1, 9):
            d = local_day + timedelta(days=offset)
            for w in self.windows:
                if w.weekday == d.weekday():
                    out.append((_utc(d, w.start, zone), _utc(d, w.end, zone)))
        return sorted(out)

    def in_day(self, now: datetime) -> bool:
        return any(start <= now < end for start, end in self._instants(_aware(now)))

    def next_morning(self, now: datetime) -> datetime:
        """The next day window's start at or after ``now`` that is not inside a day window (UTC)."""
        now = _aware(now)
        spans = self._instants(now)
        for start, _ in spans:
            if start >= now and not any(s <= start - timedelta(seconds=1) < e for s, e in spans):
                return start
        raise AssertionError("a valid schedule has a morning within eight days")  # pragma: no cover

    def last_morning(self, now: datetime) -> datetime | None:
        """The latest morning (a day window's start after a night) at or before ``now``, within a day and a week."""
        now = _aware(now)
        spans = self._instants(now)
        mornings = [s for s, _ in spans if s <= now and not any(a <= s - timedelta(seconds=1) < b for a, b in spans)]
        return mornings[-1] if mornings else None

    def phase(self, now: datetime) -> Phase:
        now = _aware(now)
        if self.in_day(now):
            return Phase.DAY
        if self.next_morning(now) - now <= self.checkpoint_deadline:
            return Phase.CHECKPOINT
        return Phase.NIGHT

    def target(self, now: datetime) -> Target:
        """The pool's target split at ``now``."""
        phase = self.phase(now)
        replicas = self.day_replicas if phase is Phase.DAY else self.night_floor
        inference = replicas * self.replica_devices
        morning = self.next_morning(now)
        return Target(phase=phase, inference_replicas=replicas, inference_devices=inference,
                      training_borrow=self.pool_devices - inference if phase is Phase.NIGHT else 0,
                      training_admits=phase is Phase.NIGHT,
                      checkpoint_by=morning if phase is Phase.CHECKPOINT else None,
                      next_morning=morning, signal_at=morning - self.checkpoint_deadline)

    # ------------------------------------------------------------------------------------------------ codec

    def to_mapping(self) -> dict[str, Any]:
        return {"pool": self.pool, "time_zone": self.time_zone, "day": list(self.day),
                "pool_devices": self.pool_devices, "replica_devices": self.replica_devices,
                "day_replicas": self.day_replicas, "night_floor": self.night_floor,
                "checkpoint_deadline_minutes": int(self.checkpoint_deadline.total_seconds() // 60),
                "day_min_replicas": self.day_min_replicas}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, field_prefix: str = "") -> PoolSchedule:
        known = {"pool", "time_zone", "day", "pool_devices", "replica_devices", "day_replicas", "night_floor",
                 "checkpoint_deadline_minutes", "day_min_replicas"}
        unknown = sorted(set(data) - known)
        missing = sorted(known - set(data) - {"day_min_replicas"})
        problems = [Problem(f"{field_prefix}{k}", data[k], f"one of {sorted(known)}") for k in unknown]
        problems += [Problem(f"{field_prefix}{k}", None, "a value (required)") for k in missing]
        if problems:
            raise InvalidSchedule(problems)
        return cls.build(pool=data["pool"], time_zone=data["time_zone"], day=data["day"],
                         pool_devices=data["pool_devices"], replica_devices=data["replica_devices"],
                         day_replicas=data["day_replicas"], night_floor=data["night_floor"],
                         checkpoint_deadline=data["checkpoint_deadline_minutes"],
                         day_min_replicas=data.get("day_min_replicas"), field_prefix=field_prefix)


def _day_windows(where: str, day: tuple[str, ...]) -> tuple[list[Window], list[Problem]]:
    """The day windows of ``day`` and the problems with them: none given, a bad spec, two that overlap."""
    problems = [] if day else [Problem(where, list(day), f"one window or more, {WINDOW_FORMAT}")]
    windows, bad = parse_windows(where, day)
    problems += bad
    by_day: dict[int, list[Window]] = {}
    for w in windows:
        by_day.setdefault(w.weekday, []).append(w)
    overlaps = [(weekday, a, b) for weekday, ws in sorted(by_day.items())
                for a, b in pairwise(sorted(ws, key=lambda w: w.start)) if b.start < a.end]
    if overlaps:  # the first one named: the same two specs overlap on every day they share
        weekday, a, b = overlaps[0]
        problems.append(Problem(where, list(day), (
            f"windows that do not overlap ({DAYS[weekday]} "
            f"{a.start:%H:%M}-{a.end:%H:%M} and {b.start:%H:%M}-{b.end:%H:%M} do)")))
    return windows, problems


def _count_problems(p: str, **counts: Any) -> list[Problem]:
    """Devices are whole numbers of 1 or more, replicas of 0 or more."""
    out = []
    for name, value in counts.items():
        least = 1 if name.endswith("_devices") else 0
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            what = "Neuron devices, 1 or more" if least else "replicas, 0 or more"
            out.append(Problem(f"{p}{name}", value, f"a whole number of {what}"))
    return out


def _fit_problems(p: str, pool_devices: int, replica_devices: int, day_replicas: int,
                  night_floor: int) -> list[Problem]:
    """The day's replicas fit the pool; the night's floor is at most the day's and fits the pool."""
    out = []
    if day_replicas * replica_devices > pool_devices:
        out.append(Problem(f"{p}day_replicas", day_replicas, (
            f"at most {pool_devices // replica_devices} ({pool_devices} devices in the pool, "
            f"{replica_devices} a replica)")))
    if night_floor > day_replicas:
        out.append(Problem(f"{p}night_floor", night_floor, f"at most day_replicas ({day_replicas})"))
    elif night_floor * replica_devices > pool_devices:
        out.append(Problem(f"{p}night_floor", night_floor, (
            f"at most {pool_devices // replica_devices} replicas: a floor above the pool "
            f"({pool_devices} devices, {replica_devices} a replica)")))
    return out


def _deadline_problems(p: str, deadline: Any, windows: Sequence[Window]) -> list[Problem]:
    """The checkpoint deadline is 1 minute or more, and shorter than every night before a morning of ``windows``."""
    if not isinstance(deadline, timedelta) or deadline <= timedelta(0):
        return [Problem(f"{p}checkpoint_deadline_minutes", deadline,
                        "a deadline of 1 minute or more before each morning")]
    for w, night in weekly_gaps(windows) if windows else ():
        if deadline >= night:
            return [Problem(f"{p}checkpoint_deadline_minutes", int(deadline.total_seconds() // 60), (
                f"shorter than the night before {DAYS[w.weekday]} {w.start:%H:%M} "
                f"({int(night.total_seconds() // 60)} minutes)"))]
    return []


def lendable_nodes(schedule: PoolSchedule, node_devices: int) -> int:
    """The whole nodes the inference ClusterQueue lends at night: the pool's nodes less those its night's replicas
    can occupy (the night floor's devices rounded up to whole nodes). Lent in whole nodes because a training pod
    takes a whole node (Kueue's topology-aware scheduling admits it only where one is free: docs/sharing.md)."""
    nodes = schedule.pool_devices // node_devices
    kept = -(-schedule.night_floor * schedule.replica_devices // node_devices)
    return max(nodes - kept, 0)


def sharing_problems(schedule: PoolSchedule, *, node_devices: int, job_nodes: int = 1, node_type: str = "",
                     field_prefix: str = "") -> list[Problem]:
    """What a schedule on nodes of ``node_devices`` cannot do (empty: nothing): lend training one job of
    ``job_nodes`` whole nodes at night (the smallest training job: one whole node, or one whole UltraServer), or
    keep a HorizontalPodAutoscaler's minReplicas at the night floor (1 or more unless the alpha HPAScaleToZero gate
    is on: Kubernetes 1.36 OpenAPI HorizontalPodAutoscalerSpec.minReplicas)."""
    p = field_prefix
    out = []
    if schedule.night_floor < 1:
        out.append(Problem(f"{p}night_floor", schedule.night_floor, (
            "1 or more: it is the inference HorizontalPodAutoscaler's minReplicas (0 needs Kubernetes' alpha "
            "HPAScaleToZero gate)")))
    elif lendable_nodes(schedule, node_devices) < job_nodes:
        nodes = schedule.pool_devices // node_devices
        most = (nodes - job_nodes) * node_devices // schedule.replica_devices
        out.append(Problem(f"{p}night_floor", schedule.night_floor, (
            f"at most {max(most, 0)} replicas of {schedule.replica_devices} devices, so that the night lends "
            f"training one job: {job_nodes} whole node(s) of {node_devices} Neuron devices ({nodes} x "
            f"{node_type or 'node'} in the pool; a training pod takes a whole node, and inference lends whole "
            "nodes only)")))
    return out


@dataclass(frozen=True)
class Target:
    phase: Phase
    inference_replicas: int
    """The inference autoscaler's maxReplicas at this phase (its minReplicas: the night floor by night,
    ``day_min_replicas`` by day)."""
    inference_devices: int
    training_borrow: int
    """Devices inference's night floor leaves (0 outside the night). What the inference ClusterQueue lends is less
    when the floor's devices do not fill whole nodes: :func:`lendable_nodes` times a node's devices."""
    training_admits: bool
    """Whether the training LocalQueue admits new workloads (Kueue ``stopPolicy: None``) or not (``Hold``, then
    ``HoldAndDrain`` from the morning's deadline)."""
    checkpoint_by: datetime | None
    """In the checkpoint phase, the instant running training must have checkpointed by (the morning)."""
    next_morning: datetime
    signal_at: datetime


def _aware(now: datetime) -> datetime:
    if now.tzinfo is None:
        raise ValueError(f"now: got {now!r}; allowed: a time zone-aware instant")
    return now.astimezone(UTC)


def _utc(day: date, at: time, zone: ZoneInfo) -> datetime:
    return datetime.combine(day, at, tzinfo=zone).astimezone(UTC)


def zone_known(name: str) -> bool:
    """Whether the machine's IANA database has ``name`` (one file opened, not the whole database listed)."""
    if not name or name != name.strip() or name.startswith(("/", ".")) or "\\" in name:
        return False
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


def iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str | None) -> datetime | None:
    """An annotation's instant, or None when absent or unreadable (a pod's own annotation is its job's to write)."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else None


# ---------------------------------------------------------------------------------------- the function's settings



def _schedule(doc: Any) -> PoolSchedule:
    try:
        return PoolSchedule.from_mapping(doc)
    except InvalidSchedule as error:
        raise ValueError(str(error)) from None


_KUBERNETES_NAMESPACE = "a Kubernetes namespace"


@dataclass(frozen=True, kw_only=True)
class PoolScheduleConfig(Configured):
    """What the schedule function needs: the schedule, the cluster's API, the objects it moves, where it announces."""

    schedule: PoolSchedule = field(metadata=variable(
        "POOL_SCHEDULE", encode=PoolSchedule.to_mapping, decode=_schedule, allowed="the pool's schedule as a JSON object"))
    cluster_name: str = field(metadata=variable("POOL_CLUSTER", allowed="the EKS cluster's name"))
    endpoint: str = field(metadata=variable("POOL_ENDPOINT", allowed="the cluster's API server URL"))
    """The cluster's API server URL (https://...)."""
    certificate_authority: str = field(metadata=variable("POOL_CA", allowed="the cluster's CA data (base64)"))
    """The cluster's CA, base64 PEM as EKS gives it (``certificateAuthority.data``)."""
    namespace: str = field(metadata=variable("POOL_NAMESPACE", allowed=_KUBERNETES_NAMESPACE))
    """Where the inference Deployment and its pods are (serving's namespace)."""
    deployment: str = field(metadata=variable("POOL_DEPLOYMENT", allowed=(
        "the inference Deployment's name (its HorizontalPodAutoscaler's too)")))
    """The inference Deployment; the schedule sets its HorizontalPodAutoscaler's bounds (same name)."""
    training_queue: str = field(metadata=variable("POOL_TRAINING_QUEUE", allowed=(
        "the training LocalQueue's name (in training_namespace)")))
    """The training LocalQueue whose ``stopPolicy`` the schedule sets (never a ClusterQueue)."""
    topic_arn: str = field(metadata=variable("POOL_TOPIC_ARN", allowed="an SNS topic ARN"))
    ledger_table: str = field(metadata=variable("POOL_LEDGER_TABLE", allowed="the announcement ledger's table name"))
    fleet: str = field(default="", metadata=variable("POOL_FLEET", allowed="the fleet's name", blank=True))
    metrics_namespace: str = field(default=POOL_NAMESPACE, metadata=variable(
        "POOL_METRICS_NAMESPACE", allowed="a CloudWatch namespace"))
    training_namespace: str = field(default="default", metadata=variable(
        "POOL_TRAINING_NAMESPACE", allowed=_KUBERNETES_NAMESPACE))
    """Where the training pods are (training's namespace; the kit's construct sets it)."""
