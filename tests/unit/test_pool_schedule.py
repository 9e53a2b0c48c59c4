"""The shared pool's schedule (neuronfleet_contract.pool_schedule) and the schedule function's logic
(lambdas/pool_schedule/logic.py): the target split at an instant in the pool's time zone (DST included), the
checkpoint signal and the morning reclaim, the announcement made once; bad schedules refused with field, value and
what is allowed. A full day is driven minute by minute with a fake clock over an in-process pool."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from neuronfleet.lambdas.pool_schedule import logic
from neuronfleet.lambdas.pool_schedule.logic import Notice, Observed, TrainingPod
from neuronfleet_contract.pool_schedule import InvalidSchedule, Phase, PoolSchedule, Role, parse_iso


def schedule(**overrides) -> PoolSchedule:
    args = dict(pool="rainier", time_zone="America/New_York", day=["07:00-23:00"], pool_devices=64,
                replica_devices=4, day_replicas=16, night_floor=4, checkpoint_deadline=30)
    return PoolSchedule.build(**(args | overrides))


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC) if "+" not in text else datetime.fromisoformat(text)


# ------------------------------------------------------------------------------------------ the target split


def test_night_day_and_checkpoint_phases_in_the_pool_time_zone() -> None:
    s = schedule()  # New York, EST (UTC-5) on 2026-11-23
    night = s.target(at("2026-11-24T08:00:00"))  # 03:00 local
    assert (night.phase, night.inference_replicas, night.training_borrow, night.training_admits) == (
        Phase.NIGHT, 4, 48, True)
    assert night.next_morning == at("2026-11-24T12:00:00") and night.signal_at == at("2026-11-24T11:30:00")
    checkpoint = s.target(at("2026-11-24T11:30:00"))  # 06:30 local, the deadline's start
    assert (checkpoint.phase, checkpoint.training_borrow, checkpoint.training_admits) == (Phase.CHECKPOINT, 0, False)
    assert checkpoint.checkpoint_by == at("2026-11-24T12:00:00")
    assert s.phase(at("2026-11-24T11:29:59")) is Phase.NIGHT
    day = s.target(at("2026-11-24T12:00:00"))
    assert (day.phase, day.inference_replicas, day.inference_devices, day.training_borrow) == (Phase.DAY, 16, 64, 0)
    assert s.phase(at("2026-11-25T03:59:59")) is Phase.DAY and s.phase(at("2026-11-25T04:00:00")) is Phase.NIGHT


def test_daylight_saving_moves_the_utc_instants_not_the_local_ones() -> None:
    s = schedule()
    # 2026-03-08: New York springs forward; 07:00 EDT is 11:00 UTC (the day before it was 12:00 UTC)
    assert s.next_morning(at("2026-03-07T20:00:00")) == at("2026-03-08T11:00:00")
    assert s.next_morning(at("2026-03-06T20:00:00")) == at("2026-03-07T12:00:00")
    # 2026-11-01: back to EST
    assert s.next_morning(at("2026-10-31T20:00:00")) == at("2026-11-01T12:00:00")
    assert s.phase(at("2026-03-08T10:30:00")) is Phase.CHECKPOINT  # 06:30 EDT


def test_a_window_in_the_skipped_hour_still_has_a_morning() -> None:
    s = schedule(time_zone="America/New_York", day=["02:30-20:00"], checkpoint_deadline=60)
    morning = s.next_morning(at("2026-03-08T01:00:00"))  # 2026-03-07 20:00 EST: the next morning is in the gap
    assert morning == at("2026-03-08T07:30:00")  # 02:30 read at the offset before the jump (fold=0): 03:30 EDT
    assert s.phase(morning) is Phase.DAY


def test_weekday_windows_and_a_weekend_night() -> None:
    s = schedule(time_zone="Europe/Berlin", day=["mon-fri 08:00-20:00"], checkpoint_deadline=45)
    saturday_noon = at("2026-11-28T11:00:00")
    assert s.phase(saturday_noon) is Phase.NIGHT
    assert s.next_morning(saturday_noon) == at("2026-11-30T07:00:00")  # Monday 08:00 CET
    assert s.phase(at("2026-11-30T06:15:00")) is Phase.CHECKPOINT


def test_adjacent_windows_make_one_morning() -> None:
    s = schedule(day=["07:00-12:00", "12:00-23:00"])
    assert s.phase(at("2026-11-24T17:00:00")) is Phase.DAY  # 12:00 local
    assert s.next_morning(at("2026-11-24T13:00:00")) == at("2026-11-25T12:00:00")
    assert s.last_morning(at("2026-11-24T17:30:00")) == at("2026-11-24T12:00:00")


def test_mapping_round_trip() -> None:
    s = schedule()
    assert PoolSchedule.from_mapping(s.to_mapping()) == s


# ------------------------------------------------------------------------------------------------- refusals


def refused(**overrides) -> list[tuple[str, object, str]]:
    with pytest.raises(InvalidSchedule) as caught:
        schedule(**overrides)
    return [(p.path, p.value, p.allowed) for p in caught.value.problems]


def test_overlapping_windows_are_refused() -> None:
    [(field, value, allowed)] = refused(day=["mon-fri 07:00-13:00", "12:00-20:00"])
    assert field == "day" and value == ["mon-fri 07:00-13:00", "12:00-20:00"]
    assert "mon 07:00-13:00 and 12:00-20:00 do" in allowed


def test_unknown_time_zone_is_refused() -> None:
    [(field, value, allowed)] = refused(time_zone="Europe/Atlantis")
    assert (field, value) == ("time_zone", "Europe/Atlantis") and "IANA" in allowed


@pytest.mark.parametrize("window", ["7:00-23:00", "23:00-07:00", "mon-xyz 07:00-09:00", "07:00-24:00", "", 7])
def test_malformed_windows_are_refused(window) -> None:
    [(field, value, allowed)] = refused(day=["10:00-11:00", window])
    assert (field, value) == ("day[1]", window) and "HH:MM-HH:MM" in allowed


def test_deadline_longer_than_the_night_is_refused() -> None:
    [(field, value, allowed)] = refused(day=["07:00-23:00"], checkpoint_deadline=8 * 60)
    assert (field, value) == ("checkpoint_deadline_minutes", 480)
    assert allowed == "shorter than the night before mon 07:00 (480 minutes)"


@pytest.mark.parametrize("deadline", [0, -5, timedelta(0), None])
def test_no_deadline_is_refused(deadline) -> None:
    [(field, _, allowed)] = refused(checkpoint_deadline=deadline)
    assert field == "checkpoint_deadline_minutes" and "1 minute or more" in allowed


def test_night_floor_above_the_pool_is_refused() -> None:
    [(field, value, allowed)] = refused(day_replicas=16, night_floor=17)
    assert (field, value) == ("night_floor", 17) and allowed == "at most day_replicas (16)"
    [(field, value, allowed)] = refused(day_replicas=17, night_floor=0)
    assert (field, value) == ("day_replicas", 17) and "at most 16" in allowed


def test_every_problem_is_named_with_the_prefix() -> None:
    with pytest.raises(InvalidSchedule) as caught:
        PoolSchedule.from_mapping({"pool": "p", "time_zone": "Mars/Olympus", "day": ["x"], "pool_devices": 0,
                                   "replica_devices": 4, "day_replicas": 1, "night_floor": 0,
                                   "checkpoint_deadline_minutes": 10, "color": "red"},
                                  field_prefix="sharing.schedule.")
    fields = [p.path for p in caught.value.problems]
    assert fields == ["sharing.schedule.color"]  # unknown keys first: nothing else is read
    with pytest.raises(InvalidSchedule) as caught:
        PoolSchedule.from_mapping({"pool": "p", "time_zone": "Mars/Olympus", "day": ["x"], "pool_devices": 0,
                                   "replica_devices": 4, "day_replicas": 1, "night_floor": 0,
                                   "checkpoint_deadline_minutes": 10}, field_prefix="sharing.schedule.")
    assert [p.path for p in caught.value.problems] == [
        "sharing.schedule.time_zone", "sharing.schedule.day[0]", "sharing.schedule.pool_devices"]
    assert "sharing.schedule.time_zone: got 'Mars/Olympus'; allowed: an IANA time zone name" in str(caught.value)


def test_now_must_be_aware() -> None:
    with pytest.raises(ValueError, match="time zone-aware"):
        schedule().phase(datetime(2026, 11, 24, 3, 0))


# -------------------------------------------------------------------------------------------------- the logic


def pod(name: str, **kw) -> TrainingPod:
    return TrainingPod(name=name, namespace="default", devices=16, running=True, **kw)


NIGHT, DAY = (4, 4), (16, 16)
"""The inference autoscaler's bounds: the night floor by night; by day day_min_replicas (default: day_replicas, since
an autoscaler without a metrics source holds its minimum) to day_replicas."""
"""The inference autoscaler's bounds of schedule(): the night floor by night, up to day_replicas by day."""
NONE, HOLD, DRAIN = "None", "Hold", "HoldAndDrain"


def test_night_bounds_inference_at_its_floor_and_lets_training_admit() -> None:
    plan = logic.decide(schedule(), at("2026-11-24T08:00:00"),
                        Observed(inference_bounds=DAY, inference_devices=64, training_stop=DRAIN))
    assert (plan.bounds, plan.training_stop, plan.signals) == (NIGHT, NONE, [])
    assert plan.usage == {Role.INFERENCE: 64, Role.TRAINING: 0, Role.IDLE: 0}


def test_checkpoint_signals_each_running_pod_once_and_holds_training_at_its_local_queue() -> None:
    s = schedule()
    now = at("2026-11-24T11:31:00")
    pods = (pod("a"), pod("b", checkpoint_by=at("2026-11-24T12:00:00")), replace(pod("c"), running=False))
    plan = logic.decide(s, now, Observed(inference_bounds=NIGHT, inference_devices=16, training_stop=NONE,
                                         training_pods=pods))
    assert plan.training_stop == HOLD and plan.bounds is None
    # the pool's notice first (b was told for this morning already: kept), then the pods not told yet
    assert plan.record_notice == Notice(at("2026-11-24T12:00:00"), at("2026-11-24T12:00:00"))
    assert [(sig.pod.name, sig.checkpoint_by) for sig in plan.signals] == [("a", at("2026-11-24T12:00:00"))]
    assert plan.usage == {Role.INFERENCE: 16, Role.TRAINING: 32, Role.IDLE: 16}
    # a pod annotated for an earlier morning is annotated again
    stale = pod("d", checkpoint_by=at("2026-11-23T12:00:00"))
    plan = logic.decide(s, now, Observed(NIGHT, 16, HOLD, (stale,)))
    assert [sig.pod.name for sig in plan.signals] == ["d"] and plan.training_stop is None


MORNING = at("2026-11-24T12:00:00")
ON_TIME = Notice(MORNING, MORNING)


def test_morning_drains_and_names_the_pods_that_missed_apart_from_those_never_told() -> None:
    s = schedule()
    morning = MORNING
    pods = (pod("late", checkpoint_by=morning),
            pod("ok", checkpoint_by=morning, checkpointed_at=at("2026-11-24T11:45:00")),
            pod("stale-ack", checkpoint_by=morning, checkpointed_at=at("2026-11-23T11:45:00")),
            pod("untold", checkpoint_by=at("2026-11-23T12:00:00"), checkpointed_at=at("2026-11-24T11:40:00")))
    plan = logic.decide(s, morning + timedelta(seconds=20), Observed(NIGHT, 16, HOLD, pods, notice=ON_TIME))
    assert plan.bounds == DAY and plan.training_stop == DRAIN and plan.signals == []
    assert [p.name for p in plan.unacknowledged] == ["late", "stale-ack"]
    assert [p.name for p in plan.not_notified] == ["untold"]  # its own checkpoint was no answer to a notice
    assert plan.announcement is not None
    assert plan.announcement.key == "pool-checkpoint-missed#rainier#2026-11-24T12:00:00Z"
    did_not, never = plan.announcement.message.split("\n")[1:3]
    assert did_not.startswith("- did not acknowledge") and did_not.endswith("default/late, default/stale-ack")
    assert never.startswith("- never notified") and never.endswith(": default/untold")
    assert "48 Neuron device(s)" in plan.announcement.message and len(plan.announcement.subject) <= 100
    assert "suspends their Jobs" in plan.announcement.message
    # the same morning gives the same key (the ledger says it once); the next morning another
    later = logic.decide(s, morning + timedelta(minutes=3), Observed(DAY, 64, DRAIN, pods[:1], notice=ON_TIME))
    assert later.announcement is not None and later.announcement.key == plan.announcement.key
    tomorrow_notice = Notice(morning + timedelta(days=1), morning + timedelta(days=1))
    tomorrow = logic.decide(s, morning + timedelta(days=1, seconds=5),
                            Observed(DAY, 64, HOLD, (pod("late", checkpoint_by=morning + timedelta(days=1)),),
                                     notice=tomorrow_notice))
    assert tomorrow.announcement is not None and tomorrow.announcement.key.endswith("2026-11-25T12:00:00Z")
    assert "did not acknowledge" in tomorrow.announcement.message and "never notified" not in (
        tomorrow.announcement.message)


def test_a_morning_without_a_notice_notifies_first_and_drains_only_at_its_deadline() -> None:
    """No run during the checkpoint window: the first morning run records the notice and tells the pods; the
    LocalQueue holds and inference keeps its night bounds until the deadline, a full checkpoint deadline (less one
    run period) later."""
    s = schedule()
    first = MORNING + timedelta(minutes=10)
    plan = logic.decide(s, first, Observed(NIGHT, 16, NONE, (pod("unseen"),)))
    deadline = first + timedelta(minutes=29)
    assert plan.record_notice == Notice(MORNING, deadline) and plan.training_stop == HOLD
    assert [(sig.pod.name, sig.checkpoint_by) for sig in plan.signals] == [("unseen", deadline)]
    assert plan.bounds is None and plan.missed == [] and plan.waiting_until == deadline
    told = (pod("unseen", checkpoint_by=deadline),)
    waiting = logic.decide(s, deadline - timedelta(seconds=1), Observed(NIGHT, 16, HOLD, told,
                                                                         notice=Notice(MORNING, deadline)))
    assert waiting.bounds is None and not waiting.changes and waiting.announcement is None
    due = logic.decide(s, deadline, Observed(NIGHT, 16, HOLD, told, notice=Notice(MORNING, deadline)))
    assert due.bounds == DAY and due.training_stop == DRAIN and [p.name for p in due.unacknowledged] == ["unseen"]
    # a pool with no training running has nobody to tell: the first morning run drains and raises the bounds
    empty = logic.decide(s, first, Observed(NIGHT, 16, HOLD, ()))
    assert empty.bounds == DAY and empty.training_stop == DRAIN and empty.record_notice is None


def test_the_notice_is_the_morning_within_one_run_of_the_window_and_its_own_later() -> None:
    s = schedule()
    window = MORNING - timedelta(minutes=30)
    assert logic.notice_deadline(s, MORNING, window) == MORNING
    assert logic.notice_deadline(s, MORNING, window + timedelta(seconds=60)) == MORNING
    assert logic.notice_deadline(s, MORNING, window + timedelta(seconds=61)) == MORNING + timedelta(seconds=1)
    late = logic.decide(s, MORNING - timedelta(minutes=5), Observed(NIGHT, 16, HOLD, (pod("a"),)))
    assert late.record_notice == Notice(MORNING, MORNING + timedelta(minutes=24))


def test_a_pod_told_a_later_deadline_is_waited_for_and_a_pod_told_for_this_morning_is_kept() -> None:
    """Two overlapping runs each recorded a notice; the pods carry either deadline: the drain waits for the
    latest. A queue whose record was lost takes the pods' notice back instead of starting over."""
    s = schedule()
    d1, d2 = MORNING + timedelta(minutes=29), MORNING + timedelta(minutes=29, seconds=30)
    pods = (pod("a", checkpoint_by=d1), pod("b", checkpoint_by=d2))
    plan = logic.decide(s, d1 + timedelta(seconds=10), Observed(NIGHT, 16, HOLD, pods, notice=Notice(MORNING, d1)))
    assert plan.bounds is None and plan.training_stop is None and plan.waiting_until == d2 and plan.signals == []
    assert logic.decide(s, d2, Observed(NIGHT, 16, HOLD, pods, notice=Notice(MORNING, d1))).bounds == DAY
    lost = logic.decide(s, d2, Observed(NIGHT, 16, HOLD, pods))
    assert lost.record_notice == Notice(MORNING, d2) and lost.bounds == DAY


def test_a_pod_never_told_by_the_deadline_is_drained_and_named_as_never_notified() -> None:
    s = schedule()
    plan = logic.decide(s, MORNING + timedelta(minutes=1), Observed(NIGHT, 16, HOLD, (pod("mute"),), notice=ON_TIME))
    assert plan.signals == [] and plan.bounds == DAY and plan.training_stop == DRAIN
    assert plan.unacknowledged == [] and [p.name for p in plan.not_notified] == ["mute"]


def test_a_converged_pool_changes_nothing() -> None:
    plan = logic.decide(schedule(), at("2026-11-24T15:00:00"), Observed(DAY, 64, DRAIN))
    assert not plan.changes and plan.announcement is None
    night = logic.decide(schedule(), at("2026-11-24T08:00:00"), Observed(NIGHT, 16, NONE))
    assert not night.changes


def test_the_schedule_never_steps_back_from_a_drain_within_a_morning() -> None:
    """A notice given by day to a pod still running (a run that saw it late) holds; a queue already draining keeps
    draining (Hold would not readmit, but nothing is gained by leaving the drain)."""
    plan = logic.decide(schedule(), MORNING + timedelta(minutes=5), Observed(NIGHT, 16, DRAIN, (pod("a"),)))
    assert plan.training_stop is None and plan.waiting_until is not None


def test_annotation_instants() -> None:
    assert parse_iso("2026-11-24T12:00:00Z") == at("2026-11-24T12:00:00")
    assert parse_iso("yesterday") is None and parse_iso("2026-11-24T12:00:00") is None and parse_iso(None) is None


# --------------------------------------------------------------------------------- a full day, minute by minute


class FakePool:
    """An in-process pool: the inference autoscaler's bounds (demand keeps it at its maximum), the training
    LocalQueue's stopPolicy and a training Job of two pods that checkpoints ``ack_after`` after its signal (None:
    never). Kueue as the model tests below establish it: the Job is admitted while the LocalQueue is at None and
    two whole nodes are lent; HoldAndDrain evicts it (suspended, not failed); reclaim evicts it when inference
    needs its devices."""

    def __init__(self, s: PoolSchedule, *, ack_after: timedelta | None) -> None:
        self.s, self.ack_after = s, ack_after
        self.bounds, self.stop = logic.day_bounds(s), "HoldAndDrain"
        self.notice: logic.Notice | None = None
        self.reclaim: logic.Reclaim | None = None
        self.reported_for: datetime | None = None
        self.mute: set[str] = set()
        """Pods whose annotation always fails."""
        self.pods: dict[str, TrainingPod] = {}
        self.signalled_at: dict[str, datetime] = {}
        self.announced: set[str] = set()
        self.messages: list[str] = []
        self.preempted_at: datetime | None = None
        self.order: list[str] = []
        """What the morning did, in order: 'drain' (the LocalQueue at HoldAndDrain), 'day bounds'."""

    def observe(self, now: datetime) -> Observed:
        for name, p in list(self.pods.items()):
            sent = self.signalled_at.get(name)
            if self.ack_after is not None and sent is not None and now >= sent + self.ack_after:
                self.pods[name] = replace(p, checkpointed_at=sent + self.ack_after)
        return Observed(self.bounds, self.bounds[1] * self.s.replica_devices, self.stop, tuple(self.pods.values()),
                        notice=self.notice, reclaim=self.reclaim, reported_for=self.reported_for)

    def apply(self, plan: logic.Plan, now: datetime) -> None:
        if plan.record_reclaim is not None:
            self.reclaim = plan.record_reclaim
        if plan.announcement and plan.announcement.key not in self.announced:
            self.announced.add(plan.announcement.key)
            self.messages.append(plan.announcement.message)
        if plan.report is not None:
            self.reported_for = plan.report.morning
        if plan.record_notice is not None:
            self.notice = plan.record_notice
        for sig in plan.signals:
            if sig.pod.name in self.mute:
                continue
            self.pods[sig.pod.name] = replace(self.pods[sig.pod.name], checkpoint_by=sig.checkpoint_by)
            self.signalled_at[sig.pod.name] = now
        if plan.training_stop is not None:
            self.stop = plan.training_stop
            if self.stop == "HoldAndDrain":
                self.order.append("drain")
        if plan.bounds is not None:
            self.bounds = plan.bounds
            if plan.bounds[1] > self.s.night_floor:
                self.order.append("day bounds")
        free = self.s.pool_devices - self.bounds[1] * self.s.replica_devices
        if self.pods and (self.stop == "HoldAndDrain" or sum(p.devices for p in self.pods.values()) > free):
            self.pods, self.preempted_at = {}, now  # evicted: the Job suspended
            self.reclaimed_from = dict(self.signalled_at)
        if self.stop == "None" and not self.pods and free >= 32:
            self.pods = {n: TrainingPod(n, "default", 16, True) for n in ("train-0", "train-1")}


@pytest.mark.parametrize("ack_after", [timedelta(minutes=10), None])
def test_a_full_day_through_the_logic(ack_after: timedelta | None) -> None:
    s = schedule()
    fake = FakePool(s, ack_after=ack_after)
    start = at("2026-11-24T03:00:00")  # 22:00 local, day
    phases: list[Phase] = []
    trained_minutes = 0
    for minute in range(24 * 60):
        now = start + timedelta(minutes=minute)
        plan = logic.decide(s, now, fake.observe(now))
        fake.apply(plan, now)
        phases.append(plan.target.phase)
        trained_minutes += bool(fake.pods)
    assert phases[0] is Phase.DAY and Phase.NIGHT in phases and Phase.CHECKPOINT in phases
    assert fake.bounds == DAY and fake.stop == "HoldAndDrain" and not fake.pods
    assert fake.preempted_at == at("2026-11-24T12:00:00")  # the first run of the morning drains
    assert fake.order == ["drain", "day bounds"]  # the day's bounds only after the drain
    assert set(fake.signalled_at.values()) == {at("2026-11-24T11:30:00")}  # signalled once, at the deadline
    assert trained_minutes == 8 * 60  # 23:00 to 07:00 local: the first run of the night admits, the morning reclaims
    if ack_after is None:
        assert len(fake.messages) == 1 and "train-0, default/train-1" in fake.messages[0]
    else:
        assert fake.messages == []


def drive(fake: FakePool, s: PoolSchedule, *, skip: tuple[datetime, datetime] | None = None) -> None:
    """A day minute by minute from 22:00 local; no run at all in ``skip`` [start, end) (throttled, failed, off)."""
    start = at("2026-11-24T03:00:00")
    for minute in range(24 * 60):
        now = start + timedelta(minutes=minute)
        if skip is not None and skip[0] <= now < skip[1]:
            continue
        fake.apply(logic.decide(s, now, fake.observe(now)), now)


@pytest.mark.parametrize("ack_after", [timedelta(minutes=10), None])
@pytest.mark.parametrize("resume", ["2026-11-24T12:00:00", "2026-11-24T12:10:00", "2026-11-24T11:50:00"])
def test_runs_missed_across_the_checkpoint_window_still_notify_wait_then_reclaim(ack_after, resume) -> None:
    """No run from 11:00 UTC (night) until ``resume`` (in the window, at the morning, or after it): the first run
    tells the pods, inference waits a full checkpoint deadline (less one run), then reclaims."""
    s = schedule()
    fake = FakePool(s, ack_after=ack_after)
    first = at(resume)
    drive(fake, s, skip=(at("2026-11-24T11:00:00"), first))
    deadline = first + timedelta(minutes=29)
    assert set(fake.signalled_at.values()) == {first}  # told at the first run, then never again
    assert fake.preempted_at == deadline  # drained at the deadline, not before
    assert fake.bounds == DAY and fake.stop == "HoldAndDrain" and not fake.pods
    if ack_after is None:
        assert len(fake.messages) == 1 and "- did not acknowledge" in fake.messages[0]
        assert "never notified" not in fake.messages[0]
    else:
        assert fake.messages == []


def test_a_pod_the_notice_never_reaches_is_named_as_never_notified_not_as_silent() -> None:
    s = schedule()
    fake = FakePool(s, ack_after=timedelta(minutes=10))
    fake.mute = {"train-1"}
    drive(fake, s)
    assert fake.preempted_at == MORNING  # the notice's deadline: one pod not told does not hold inference back
    [message] = fake.messages
    assert "- never notified" in message and message.count("train-1") == 1 and "train-0" not in message
    assert "did not acknowledge" not in message


def test_the_schedule_runs_as_often_as_the_logic_assumes() -> None:
    from neuronfleet.sharing import pins
    from neuronfleet_contract.pool_schedule import RUN_EVERY_SECONDS

    assert f"rate({RUN_EVERY_SECONDS // 60} minute)" == pins.SCHEDULE_EXPRESSION


def test_the_reclaims_report_is_written_before_the_scale_and_announced_until_marked_reported() -> None:
    """The pods are gone a minute after the reclaim: the report on the queue carries the announcement to the runs
    after a failed one, until the queue says it was announced and counted."""
    s = schedule()
    pods = (pod("late", checkpoint_by=MORNING), pod("mute"))
    first = logic.decide(s, MORNING, Observed(NIGHT, 16, HOLD, pods, notice=ON_TIME))
    report = first.record_reclaim
    assert report == logic.Reclaim(MORNING, MORNING, ("default/late",), ("default/mute",), 32)
    assert first.bounds == DAY and first.report == report and first.announcement is not None
    after = logic.decide(s, MORNING + timedelta(minutes=1), Observed(DAY, 64, DRAIN, (), notice=ON_TIME,
                                                                     reclaim=report))
    assert after.record_reclaim is None and after.announcement == first.announcement
    done = logic.decide(s, MORNING + timedelta(minutes=2), Observed(DAY, 64, DRAIN, (), notice=ON_TIME,
                                                                    reclaim=report, reported_for=MORNING))
    assert done.announcement is None and done.report is None
    assert logic.Reclaim.from_json(report.to_json()) == report
    for bad in (None, "", "{}", "[1]", '{"morning": "x", "checkpoint_by": "y", "unacknowledged": [], '
                '"not_notified": [], "devices": 0}'):
        assert logic.Reclaim.from_json(bad) is None


def test_a_day_minimum_below_the_day_replicas_lets_the_autoscaler_follow_demand_by_day() -> None:
    """With a metrics source, a team lowers the day's minimum: the day bounds become (day_min_replicas, day_replicas);
    below the night floor or above the day replicas it is refused, naming the field."""
    base = schedule()
    lowered = PoolSchedule.build(**{**_build_args(base), "day_min_replicas": 8})
    assert logic.day_bounds(lowered) == (8, base.day_replicas) and logic.day_bounds(base) == DAY
    assert PoolSchedule.from_mapping(lowered.to_mapping()) == lowered
    for bad in (base.night_floor - 1, base.day_replicas + 1):
        with pytest.raises(InvalidSchedule, match=rf"day_min_replicas: got {bad}; allowed: at least night_floor"):
            PoolSchedule.build(**{**_build_args(base), "day_min_replicas": bad})


def _build_args(s: PoolSchedule) -> dict[str, Any]:
    return {"pool": s.pool, "time_zone": s.time_zone, "day": s.day, "pool_devices": s.pool_devices,
            "replica_devices": s.replica_devices, "day_replicas": s.day_replicas, "night_floor": s.night_floor,
            "checkpoint_deadline": s.checkpoint_deadline}
