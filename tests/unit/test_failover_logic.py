"""The failover decisions, pure: carry the load, give up on capacity that never comes, move back only on evidence,
wait out endpoint updates, clear errors."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from neuronfleet.lambdas.failover.logic import (
    CANARY_MIN_INVOCATIONS,
    AlarmState,
    CapacityChange,
    Decision,
    EndpointBounds,
    EndpointState,
    Evidence,
    Intent,
    NoGpuVariant,
    Policy,
    Record,
    VariantStatus,
    announcement,
    applied,
    decide,
    needs_evidence,
)

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
ALARMS = ("latency", "errors5xx", "modelErrors")
CAP = EndpointBounds(neuron_min=2, neuron_max=8, gpu_min=1, gpu_max=3, neuron_instances_per_gpu_instance=3)
LATENCY_MS = 8000.0
GOOD = Evidence(invocations=500, errors_5xx=0, model_errors=1, latency_p99_ms=2500)


def endpoint(neuron: float = 1.0, gpu: float = 0.0, *, n: int = 6, g: int = 1, n_desired: int | None = None,
             g_desired: int | None = None, status: str = "InService", busy: tuple[str, ...] = ()) -> EndpointState:
    return EndpointState(name="chat", status=status, last_modified=T0, variants={
        "neuron": VariantStatus("neuron", neuron, n, n if n_desired is None else n_desired, "neuron" in busy),
        "gpu": VariantStatus("gpu", gpu, g, g if g_desired is None else g_desired, "gpu" in busy)})


def alarms(states: dict[str, str] | None = None) -> list[AlarmState]:
    states = states or {}
    return [AlarmState(name=a, state=states.get(a, "OK"), updated=T0) for a in ALARMS]


FIRING = {"errors5xx": "ALARM"}


def run(e: EndpointState, states: dict[str, str] | None, record: Record, now: datetime,
        evidence: Evidence | None = None) -> Decision:
    return decide(e, alarms(states), record, now, CAP, latency_limit_ms=LATENCY_MS, evidence=evidence)


# ---------------------------------------------------------------------------------------- carrying the load


@pytest.mark.parametrize(("neuron_instances", "ratio", "gpu_max", "need"), [
    (6, 3, 3, 2), (7, 3, 3, 3), (8, 3, 3, 3), (8, 3, 2, 2), (1, 3, 3, 1), (4, 0.5, 9, 8), (3, 1.5, 5, 2)])
def test_gpu_instances_for_the_neuron_load(neuron_instances, ratio, gpu_max, need) -> None:
    cap = replace(CAP, neuron_instances_per_gpu_instance=ratio, gpu_max=gpu_max)
    assert cap.gpu_for(neuron_instances) == need


def test_neuron_instances_for_the_gpu_load_within_bounds() -> None:
    assert [CAP.neuron_for(g) for g in (0, 1, 2, 3, 4)] == [2, 3, 6, 8, 8]


def test_alarm_raises_gpu_capacity_before_moving_any_weight() -> None:
    d = run(endpoint(n=6, g=1), FIRING, Record(), T0)
    assert d.action == "raise_gpu" and d.weights == {} and d.announce
    assert d.capacity == {"gpu": CapacityChange(count=2, floor=2, ceiling=3, up=True)}
    assert d.record == Record(phase="raising-gpu", since=T0, target=2)
    assert "raising gpu to 2 instance(s) (now 1) for the load of 6 neuron instance(s)" in d.reason


def test_gpu_already_large_enough_moves_at_once() -> None:
    d = run(endpoint(n=3, g=1), FIRING, Record(), T0)
    assert (d.action, dict(d.weights), d.capacity) == ("to_gpu", {"neuron": 0.0, "gpu": 1.0}, {})
    assert d.record == Record(phase="on-gpu", since=T0)


def test_a_gpu_variant_still_changing_takes_no_traffic_at_failover_start() -> None:
    """Enough GPU instances, but SageMaker still changing the variant (VariantStatus Creating, Updating, ...): the
    failover waits for it (raising-gpu, within the capacity timeout) and moves the weight once it is done."""
    d = run(endpoint(n=3, g=1, busy=("gpu",)), FIRING, Record(), T0)
    assert d.action == "raise_gpu" and d.weights == {} and "SageMaker still changing it" in d.reason
    moved = run(endpoint(n=3, g=1), FIRING, d.record, T0 + timedelta(minutes=5))
    assert (moved.action, dict(moved.weights)) == ("to_gpu", {"neuron": 0.0, "gpu": 1.0})


def test_weight_moves_only_when_the_gpu_instances_are_in_service() -> None:
    raising = Record(phase="raising-gpu", since=T0, target=2)
    later = T0 + timedelta(minutes=20)
    assert run(endpoint(n=6, g=1, g_desired=2, status="Updating"), FIRING, raising, later).action == "wait"
    waiting = run(endpoint(n=6, g=1, g_desired=2), FIRING, raising, later)
    assert waiting.action == "hold" and "1 of 2 instance(s) in service (20 of 45 min)" in waiting.reason
    assert run(endpoint(n=6, g=2, busy=("gpu",)), FIRING, raising, later).action == "hold"
    moved = run(endpoint(n=6, g=2), FIRING, raising, later)
    assert (moved.action, dict(moved.weights)) == ("to_gpu", {"neuron": 0.0, "gpu": 1.0})
    assert moved.record == Record(phase="on-gpu", since=later)


def test_a_lost_capacity_request_is_asked_again() -> None:
    d = run(endpoint(n=6, g=1, g_desired=1), FIRING, Record(phase="raising-gpu", since=T0, target=2),
            T0 + timedelta(minutes=10))
    assert d.action == "raise_gpu" and not d.announce
    assert d.capacity == {"gpu": CapacityChange(2, 2, 3, up=False)}  # the count itself this time, not the floor alone


def test_capacity_that_never_comes_up_gives_up_and_keeps_neuron_traffic() -> None:
    raising = Record(phase="raising-gpu", since=T0, target=2)
    late = T0 + timedelta(minutes=45)
    d = run(endpoint(n=6, g=1, g_desired=2), FIRING, raising, late)
    assert d.action == "give_up" and d.weights == {} and d.announce
    assert d.capacity == {"gpu": CapacityChange(count=1, floor=1, ceiling=3)}  # lowered again
    assert "gpu capacity did not come up: 1 of 2 instance(s) in service after 45 min" in d.reason
    assert "traffic stays on neuron" in d.reason
    assert d.record == Record(phase="gave-up", since=late)
    # still Updating at the limit: give up without touching capacity, lower it at the next InService check
    busy = run(endpoint(n=6, g=1, g_desired=2, status="Updating"), FIRING, raising, late)
    assert (busy.action, busy.capacity) == ("give_up", {})
    lower = run(endpoint(n=6, g=1, g_desired=2), FIRING, busy.record, late + timedelta(minutes=5))
    assert lower.action == "lower_gpu" and lower.capacity["gpu"].count == 1 and lower.weights == {}
    # no new attempt before the cool-down, one after it
    gave_up = Record(phase="gave-up", since=late)
    assert run(endpoint(n=6, g=1), FIRING, gave_up, late + timedelta(minutes=30)).action == "hold"
    assert run(endpoint(n=6, g=1), FIRING, gave_up, late + timedelta(minutes=45)).action == "raise_gpu"


# ---------------------------------------------------------------------------------------- evidence, not silence


def test_silence_never_moves_traffic_back() -> None:
    """On GPU, every Neuron alarm OK (no traffic: missing data is not breaching) for days: a canary at most,
    never a move back without invocations."""
    record, now = Record(phase="on-gpu", since=T0), T0
    state = endpoint(0.0, 1.0, n=6, g=2)
    actions = []
    for _ in range(12 * 24 * 3):  # every 5 minutes for three days
        now += timedelta(minutes=5)
        d = run(state, None, record, now, evidence=Evidence(0, 0, 0, None) if needs_evidence(record) else None)
        actions.append(d.action)
        record = d.record
        if d.weights:
            state = endpoint(d.weights["neuron"], d.weights["gpu"], n=6, g=2)
    assert "to_neuron" not in actions
    assert actions.count("canary") == 1 and state.weights == {"neuron": 0.05, "gpu": 0.95}
    assert "no evidence yet, silence is not health" in d.reason


def test_move_back_needs_neuron_instances_in_service_for_the_gpu_load() -> None:
    on_gpu = Record(phase="on-gpu", since=T0)
    later = T0 + timedelta(minutes=15)
    d = run(endpoint(0.0, 1.0, n=2, g=2), None, on_gpu, later)  # 2 GPU instances = 6 Neuron instances of load
    assert d.action == "raise_neuron" and d.capacity == {"neuron": CapacityChange(6, 6, 8, up=True)}
    assert d.weights == {} and d.record.phase == "on-gpu"
    assert run(endpoint(0.0, 1.0, n=2, n_desired=6, g=2), None, d.record, later).action == "hold"
    assert run(endpoint(0.0, 1.0, n=6, g=2, busy=("neuron",)), None, d.record, later).action == "hold"
    canary = run(endpoint(0.0, 1.0, n=6, g=2), None, d.record, later)
    assert canary.action == "canary" and dict(canary.weights) == {"neuron": 0.05, "gpu": 0.95}


def test_minimum_dwell_on_gpu() -> None:
    on_gpu = Record(phase="on-gpu", since=T0)
    assert run(endpoint(0.0, 1.0, n=6, g=2), None, on_gpu, T0 + timedelta(minutes=9)).action == "hold"
    assert run(endpoint(0.0, 1.0, n=6, g=2), None, on_gpu, T0 + timedelta(minutes=10)).action == "canary"


def test_canary_with_evidence_moves_back_then_lowers_gpu() -> None:
    canary = Record(phase="canary", since=T0)
    early = run(endpoint(0.05, 0.95, n=6, g=2), None, canary, T0 + timedelta(minutes=5), evidence=GOOD)
    assert early.action == "hold" and "canary running for 5 of 10 min" in early.reason
    back = run(endpoint(0.05, 0.95, n=6, g=2), None, canary, T0 + timedelta(minutes=10), evidence=GOOD)
    assert (back.action, dict(back.weights)) == ("to_neuron", {"neuron": 1.0, "gpu": 0.0})
    assert "500 invocations, 0.2% errors, p99 2500 ms" in back.reason
    after = T0 + timedelta(minutes=15)
    lower = run(endpoint(1.0, 0.0, n=6, g=2), None, back.record, after)
    assert lower.action == "lower_gpu" and lower.record == Record() and lower.weights == {}
    assert lower.capacity == {"gpu": CapacityChange(1, 1, 3), "neuron": CapacityChange(None, 2, 8)}


@pytest.mark.parametrize(("evidence", "states", "needle"), [
    (Evidence(500, 10, 0, 2000), None, "canary errors 2.0% of 500 invocations (limit 1%)"),
    (Evidence(500, 0, 0, 9000), None, "canary p99 latency 9000 ms (limit 8000 ms)"),
    (GOOD, {"latency": "ALARM"}, "alarming during the canary: latency"),
])
def test_a_failed_canary_puts_traffic_back_on_gpu(evidence, states, needle) -> None:
    d = run(endpoint(0.05, 0.95, n=6, g=2), states, Record(phase="canary", since=T0), T0 + timedelta(minutes=10),
            evidence=evidence)
    assert (d.action, dict(d.weights)) == ("canary_failed", {"neuron": 0.0, "gpu": 1.0})
    assert needle in d.reason and d.record.phase == "on-gpu" and d.announce


def test_traffic_on_gpu_without_a_record_is_taken_over_and_said_never_adopted_silently() -> None:
    d = run(endpoint(0.0, 1.0, n=6, g=2), None, Record(), T0 + timedelta(minutes=30))
    assert d.action == "adopt" and d.announce and not d.changes
    assert d.record == Record(phase="on-gpu", since=T0) and "without a failover record" in d.reason
    assert "weights neuron=0, gpu=1" in d.reason
    assert run(endpoint(0.0, 1.0, n=6, g=2), None, d.record, T0 + timedelta(minutes=30)).action == "canary"


def test_alarm_after_moving_back_fails_over_again_at_once() -> None:
    d = run(endpoint(1.0, 0.0, n=6, g=2), FIRING, Record(phase="lowering-gpu", since=T0), T0)
    assert d.action == "to_gpu"


# ---------------------------------------------------------------------------------------- endpoint updates


def test_an_update_in_progress_is_waited_out_announced_once_and_acted_on_after() -> None:
    record = Record()
    seen = []
    for minute in (0, 5, 10):
        d = run(endpoint(n=6, g=1, status="Updating"), FIRING, record, T0 + timedelta(minutes=minute))
        seen.append((d.action, d.announce))
        record = d.record
    assert seen == [("wait", True), ("wait", False), ("wait", False)]
    assert "endpoint is Updating" in d.reason and "errors5xx" in d.reason
    acted = run(endpoint(n=6, g=1), FIRING, record, T0 + timedelta(minutes=15))
    assert acted.action == "raise_gpu" and not acted.record.noted_update


def test_an_update_without_an_alarm_is_not_news() -> None:
    d = run(endpoint(status="Updating"), None, Record(), T0)
    assert (d.action, d.announce, d.record) == ("hold", False, Record())


def test_waiting_on_the_failovers_own_step_is_not_announced() -> None:
    d = run(endpoint(0.0, 1.0, n=6, g=2, status="Updating"), None, Record(phase="on-gpu", since=T0), T0)
    assert (d.action, d.announce) == ("wait", False)


# ---------------------------------------------------------------------------------------- record, errors, text


@pytest.mark.parametrize("record", [Record(), Record("raising-gpu", T0, 3), Record("canary", T0, 0, True),
                                    Record("on-gpu", T0, 0, False, True, "endpoint-not-found")])
def test_record_round_trips_through_its_text(record) -> None:
    text = record.encode()
    assert Record.decode(text) == record
    assert all(c.isalnum() or c in " _.:/=+-@" for c in text) and len(text) <= 256


def test_a_record_of_an_earlier_version_still_reads() -> None:
    assert Record.decode(f"phase=on-gpu since={T0.isoformat()} target=2 noted=0") == Record("on-gpu", T0, 2)


@pytest.mark.parametrize("text", [None, "", "garbage", "phase=flying since=- target=0", "phase=on-gpu since=x"])
def test_unreadable_record_is_idle(text) -> None:
    assert Record.decode(text) == Record()


def test_no_gpu_variant_is_a_clear_error() -> None:
    solo = EndpointState(name="chat", status="InService", last_modified=T0,
                         variants={"neuron": VariantStatus("neuron", 1.0, 2, 2)})
    with pytest.raises(NoGpuVariant, match=r"endpoint 'chat' has variants \['neuron'\]; failover needs .* "
                                           r"live 'gpu' variant .* Nothing was changed"):
        run(solo, FIRING, Record(), T0)


def test_announcement_names_endpoint_step_weights_capacity_and_reason() -> None:
    d = run(endpoint(n=6, g=1), FIRING, Record(), T0)
    subject, message = announcement(d)
    assert subject == "neuronfleet: chat raising GPU capacity"
    assert message.startswith("Endpoint chat: raising GPU capacity. gpu: 2 instance(s), scaling bounds 2-3. Reason: ")
    subject, message = announcement(run(endpoint(n=3, g=1), FIRING, Record(), T0))
    assert subject == "neuronfleet: chat traffic shifted to GPU" and "Weights: gpu=1, neuron=0." in message


# ---------------------------------------------------------------------------------------- the boundaries (mutants)


def _canary(evidence: Evidence, **policy: object) -> Decision:
    return decide(endpoint(0.05, 0.95, n=6, g=2), alarms(), Record(phase="canary", since=T0),
                  T0 + timedelta(minutes=10), CAP, latency_limit_ms=LATENCY_MS, evidence=evidence,
                  policy=Policy(**policy))  # type: ignore[arg-type]


def test_canary_needs_exactly_the_minimum_invocations() -> None:
    """20 invocations (the default minimum) are evidence, 19 are not; the configured minimum, not a constant."""
    assert CANARY_MIN_INVOCATIONS == 20
    at = _canary(Evidence(20, 0, 0, 2000))
    below = _canary(Evidence(19, 0, 0, 2000))
    assert at.action == "to_neuron" and below.action == "hold" and below.weights == {}
    assert "19 neuron invocation(s) so far, 20 needed" in below.reason
    assert _canary(Evidence(99, 0, 0, 2000), canary_min_invocations=100).action == "hold"
    assert _canary(Evidence(100, 0, 0, 2000), canary_min_invocations=100).action == "to_neuron"


def test_canary_latency_limit_is_compared_exactly_at_the_boundary() -> None:
    """p99 at the limit passes, one millisecond over fails (the limit is the endpoint's, in ms, not microseconds)."""
    assert _canary(Evidence(500, 0, 0, LATENCY_MS)).action == "to_neuron"
    over = _canary(Evidence(500, 0, 0, LATENCY_MS + 1))
    assert (over.action, dict(over.weights)) == ("canary_failed", {"neuron": 0.0, "gpu": 1.0})
    assert _canary(Evidence(500, 0, 0, LATENCY_MS * 1000)).action == "canary_failed"  # 1000x: the unit trap
    assert _canary(Evidence(500, 0, 0, None)).action == "to_neuron"  # no datapoint: counts and errors decide


def test_canary_error_threshold_is_inclusive_at_exactly_the_limit() -> None:
    """1% of 500 (5 errors) passes, 6 fail; 5XX and model errors both count."""
    assert _canary(Evidence(500, 3, 2, 2000)).action == "to_neuron"
    failed = _canary(Evidence(500, 3, 3, 2000))
    assert failed.action == "canary_failed" and "canary errors 1.2% of 500 invocations (limit 1%)" in failed.reason
    assert _canary(Evidence(500, 0, 10, 2000), canary_max_error_percent=2.0).action == "to_neuron"
    assert _canary(Evidence(500, 0, 11, 2000), canary_max_error_percent=2.0).action == "canary_failed"


def test_neuron_alarms_still_firing_on_gpu_hold_the_traffic_there() -> None:
    """After the dwell, Neuron in service for the load: a canary only when its alarms are all OK."""
    late = T0 + timedelta(hours=2)
    firing = run(endpoint(0.0, 1.0, n=6, g=2), {"latency": "ALARM"}, Record(phase="on-gpu", since=T0), late)
    assert (firing.action, firing.weights, firing.capacity) == ("hold", {}, {})
    assert "neuron alarms still firing: latency" in firing.reason
    assert run(endpoint(0.0, 1.0, n=6, g=2), None, Record(phase="on-gpu", since=T0), late).action == "canary"
    raising = run(endpoint(0.0, 1.0, n=2, g=2), {"modelErrors": "ALARM"}, Record(phase="on-gpu", since=T0), late)
    assert raising.action == "hold" and raising.capacity == {}  # not even Neuron capacity while it alarms


# ---------------------------------------------------------------------------------------- the GPU variant's health


GPU_ALARMS = ("gpu-latency", "gpu-errors5xx", "gpu-modelErrors")


def gpu_alarms(*firing: str) -> list[AlarmState]:
    return [AlarmState(name=a, state="ALARM" if a in firing else "OK", updated=T0) for a in GPU_ALARMS]


def judge(e: EndpointState, states: dict[str, str] | None, record: Record, now: datetime, *gpu_firing: str,
          evidence: Evidence | None = None) -> Decision:
    return decide(e, alarms(states), record, now, CAP, latency_limit_ms=LATENCY_MS, evidence=evidence,
                  gpu_alarms=gpu_alarms(*gpu_firing))


def test_both_variants_failing_blocks_the_failover_and_is_said_once() -> None:
    record, seen = Record(), []
    for minute in (0, 5, 10):
        d = judge(endpoint(n=6, g=2), FIRING, record, T0 + timedelta(minutes=minute), "gpu-errors5xx")
        assert d.weights == {} and d.capacity == {}  # nothing moves onto the failing variant, nothing raised
        seen.append((d.action, d.announce))
        record = d.record
    assert seen == [("both_failing", True), ("hold", False), ("hold", False)]
    assert "both variants failing: neuron alarming: errors5xx; gpu alarming: gpu-errors5xx; failover blocked" in d.reason
    healed = judge(endpoint(n=6, g=2), FIRING, record, T0 + timedelta(minutes=15))
    assert healed.action == "to_gpu" and not healed.record.noted_gpu  # GPU OK again: the failover goes ahead
    again = judge(endpoint(n=6, g=2), FIRING, Record(noted_gpu=False), T0, "gpu-latency")
    assert again.action == "both_failing" and again.announce  # a new episode is news again


def test_gpu_capacity_raised_but_failing_does_not_take_the_traffic() -> None:
    raising = Record(phase="raising-gpu", since=T0, target=2)
    d = judge(endpoint(n=6, g=2), FIRING, raising, T0 + timedelta(minutes=5), "gpu-latency")
    assert (d.action, d.weights, d.announce) == ("both_failing", {}, True) and d.record.phase == "raising-gpu"
    assert judge(endpoint(n=6, g=2), FIRING, d.record, T0 + timedelta(minutes=10), "gpu-latency").action == "hold"
    assert judge(endpoint(n=6, g=2), FIRING, d.record, T0 + timedelta(minutes=10)).action == "to_gpu"
    timeout = judge(endpoint(n=6, g=2), FIRING, d.record, T0 + timedelta(minutes=45), "gpu-latency")
    assert timeout.action == "give_up"  # the capacity timeout still ends the attempt


def test_an_alarm_after_moving_back_does_not_fail_over_onto_a_failing_gpu() -> None:
    d = judge(endpoint(1.0, 0.0, n=6, g=2), FIRING, Record(phase="lowering-gpu", since=T0), T0, "gpu-errors5xx")
    assert d.action == "both_failing" and d.weights == {}


def test_gpu_failing_under_the_traffic_is_said_once_and_moves_back_on_evidence_without_the_dwell() -> None:
    """Decided: a failing GPU variant carrying the traffic, Neuron healthy again, is announced at once and the move
    back starts without the dwell, on the usual evidence (Neuron in service for the load, then a canary)."""
    on_gpu = Record(phase="on-gpu", since=T0)
    early = T0 + timedelta(minutes=1)  # well inside the 10-minute dwell
    short = judge(endpoint(0.0, 1.0, n=2, g=2), None, on_gpu, early, "gpu-errors5xx")
    assert short.action == "raise_neuron" and short.announce and short.record.noted_gpu
    assert short.reason.startswith("gpu variant alarming while it carries the traffic: gpu-errors5xx; on gpu; raising")
    waiting = judge(endpoint(0.0, 1.0, n=2, n_desired=6, g=2), None, Record(phase="on-gpu", since=T0), early,
                    "gpu-errors5xx")
    assert (waiting.action, waiting.announce) == ("gpu_failing", True)  # a hold, said because GPU fails
    quiet = judge(endpoint(0.0, 1.0, n=2, n_desired=6, g=2), None, waiting.record, early, "gpu-errors5xx")
    assert (quiet.action, quiet.announce) == ("hold", False)
    canary = judge(endpoint(0.0, 1.0, n=6, g=2), None, waiting.record, early, "gpu-errors5xx")
    assert canary.action == "canary" and canary.record.noted_gpu
    silent = judge(endpoint(0.05, 0.95, n=6, g=2), None, canary.record, early + timedelta(minutes=10),
                   "gpu-errors5xx", evidence=Evidence(0, 0, 0, None))
    assert silent.action == "hold" and "silence is not health" in silent.reason  # still no move on silence


def test_a_canary_failing_while_gpu_fails_leaves_the_weights_and_says_both_fail() -> None:
    canary = Record(phase="canary", since=T0)
    d = judge(endpoint(0.05, 0.95, n=6, g=2), {"latency": "ALARM"}, canary, T0 + timedelta(minutes=10),
              "gpu-latency", evidence=GOOD)
    assert (d.action, d.weights, d.announce) == ("both_failing", {}, True)
    bad = judge(endpoint(0.05, 0.95, n=6, g=2), None, canary, T0 + timedelta(minutes=10), "gpu-latency",
                evidence=Evidence(500, 10, 0, 2000))
    assert bad.action == "both_failing" and "canary errors 2.0%" in bad.reason
    good = judge(endpoint(0.05, 0.95, n=6, g=2), None, canary, T0 + timedelta(minutes=10), "gpu-latency",
                 evidence=GOOD)
    assert good.action == "to_neuron"  # off the failing GPU variant on the canary's own evidence


def test_neuron_and_gpu_both_alarming_on_gpu_hold_and_say_so_once() -> None:
    d = judge(endpoint(0.0, 1.0, n=6, g=2), FIRING, Record(phase="on-gpu", since=T0), T0 + timedelta(hours=1),
              "gpu-errors5xx")
    assert (d.action, d.weights, d.announce) == ("both_failing", {}, True) and "traffic stays on gpu" in d.reason


def test_a_gpu_alarm_while_neuron_serves_is_left_to_its_own_alarm_actions() -> None:
    d = judge(endpoint(n=6, g=1), None, Record(), T0, "gpu-latency")
    assert (d.action, d.announce, d.changes) == ("hold", False, False)


# ---------------------------------------------------------------------------------------- the outbox


def test_an_intent_round_trips_and_says_its_step() -> None:
    d = run(endpoint(n=6, g=1), FIRING, Record(), T0)
    intent = Intent.of(d, "chat#4")
    assert Intent.from_json(intent.to_json()) == intent
    assert intent.message.endswith(" Step chat#4.") and intent.subject == "neuronfleet: chat raising GPU capacity"
    assert intent.record == d.record and intent.capacity == d.capacity
    quiet = Intent.of(replace(d, announce=False), "chat#5")
    assert (quiet.subject, quiet.message) == ("", "")
    with pytest.raises(ValueError, match="unreadable failover intent"):
        Intent.from_json('{"id": "x"}')


def test_applied_reads_weights_counts_and_bounds() -> None:
    to_gpu = Intent.of(run(endpoint(n=3, g=1), FIRING, Record(), T0), "chat#1")
    assert to_gpu.weights == {"neuron": 0.0, "gpu": 1.0}
    assert applied(to_gpu, endpoint(0.0, 1.0, n=3, g=1), {}) and not applied(to_gpu, endpoint(n=3, g=1), {})
    raise_gpu = Intent.of(run(endpoint(n=6, g=1), FIRING, Record(), T0), "chat#1")  # count 2, bounds 2-3, up
    assert applied(raise_gpu, endpoint(n=6, g=1), {"gpu": (2, 3)})  # registered: the bounds are the raise
    assert not applied(raise_gpu, endpoint(n=6, g=1), {"gpu": (1, 3)})
    assert applied(raise_gpu, endpoint(n=6, g=1, g_desired=2), {"gpu": None})  # not registered: the count
    assert not applied(raise_gpu, endpoint(n=6, g=1), {"gpu": None})
    said = Intent.error("chat", "endpoint-not-found", "gone", Record(), "chat#1")
    assert applied(said, endpoint(), {}) and said.record.error == "endpoint-not-found"


def test_the_default_lease_outlasts_any_lambda_run() -> None:
    """A lease shorter than a run lets a second run take a step the first is still taking."""
    import botocore.session

    from neuronfleet.lambdas.failover.handler import DEFAULT_LEASE

    timeout = botocore.session.get_session().get_service_model("lambda").operation_model(
        "CreateFunction").input_shape.members["Timeout"]
    assert "the maximum allowed value is 900 seconds" in timeout.documentation
    assert DEFAULT_LEASE.total_seconds() >= 900
