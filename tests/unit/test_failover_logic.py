"""The failover decisions, pure: shift, hold, shift back, no flapping, clear errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from neuronfleet.lambdas.failover.logic import (
    AlarmState,
    Decision,
    EndpointState,
    NoGpuVariant,
    Policy,
    announcement,
    decide,
)

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
ALARMS = ("latency", "errors5xx", "modelErrors")


def endpoint(neuron: float = 1.0, gpu: float = 0.0, status: str = "InService", modified: datetime = T0,
             variants: dict[str, float] | None = None) -> EndpointState:
    return EndpointState(name="chat", status=status, weights=variants or {"neuron": neuron, "gpu": gpu},
                         last_modified=modified)


def alarms(states: dict[str, str] | None = None, updated: datetime = T0) -> list[AlarmState]:
    states = states or {}
    return [AlarmState(name=n, state=states.get(n, "OK"), updated=updated) for n in ALARMS]


def test_an_alarm_shifts_all_traffic_to_gpu_at_once() -> None:
    d = decide(endpoint(), alarms({"errors5xx": "ALARM"}), T0 + timedelta(seconds=30))
    assert (d.action, dict(d.weights)) == ("to_gpu", {"neuron": 0.0, "gpu": 1.0})
    assert "errors5xx" in d.reason


def test_healthy_neuron_holds() -> None:
    d = decide(endpoint(), alarms(), T0)
    assert (d.action, d.weights) == ("hold", {})


def test_shift_back_only_after_the_recovery_window() -> None:
    on_gpu = endpoint(neuron=0, gpu=1, modified=T0)
    ok_since = T0 + timedelta(minutes=5)
    early = decide(on_gpu, alarms(updated=ok_since), ok_since + timedelta(minutes=14))
    assert early.action == "hold" and "failing back after 15 min" in early.reason
    back = decide(on_gpu, alarms(updated=ok_since), ok_since + timedelta(minutes=15))
    assert (back.action, dict(back.weights)) == ("to_neuron", {"neuron": 1.0, "gpu": 0.0})


def test_minimum_dwell_after_a_change() -> None:
    policy = Policy(recovery=timedelta(minutes=1), min_dwell=timedelta(minutes=10))
    on_gpu = endpoint(neuron=0, gpu=1, modified=T0)
    assert decide(on_gpu, alarms(updated=T0 - timedelta(hours=1)), T0 + timedelta(minutes=5), policy).action == "hold"
    assert decide(on_gpu, alarms(updated=T0 - timedelta(hours=1)), T0 + timedelta(minutes=10), policy).action \
        == "to_neuron"


def test_alternating_alarms_do_not_flap() -> None:
    """ALARM/OK every 3 minutes for an hour, then quiet: one shift to GPU, one shift back, nothing between."""
    state = endpoint()
    shifts: list[tuple[datetime, str]] = []
    now = T0
    for i in range(40):  # one decision a minute, alarm flipping every 3 minutes
        flip_at = T0 + timedelta(minutes=(i // 3) * 3)
        value = "ALARM" if (i // 3) % 2 == 0 and i < 20 else "OK"
        d = decide(state, alarms({"latency": value}, updated=flip_at if i < 21 else T0 + timedelta(minutes=21)), now)
        if d.shifts:
            shifts.append((now, d.action))
            state = endpoint(neuron=d.weights["neuron"], gpu=d.weights["gpu"], modified=now)
        now += timedelta(minutes=1)
    assert [a for _, a in shifts] == ["to_gpu", "to_neuron"]
    assert shifts[1][0] - timedelta(minutes=21) - T0 >= timedelta(minutes=15)


def test_insufficient_data_is_no_evidence_of_health() -> None:
    d = decide(endpoint(neuron=0, gpu=1), alarms({"latency": "INSUFFICIENT_DATA"}, updated=T0),
               T0 + timedelta(hours=2))
    assert d.action == "hold" and "not OK: latency" in d.reason


def test_endpoint_not_in_service_holds() -> None:
    d = decide(endpoint(status="Updating"), alarms({"latency": "ALARM"}), T0)
    assert d.action == "hold" and "Updating" in d.reason


def test_already_on_gpu_and_still_alarming_holds() -> None:
    assert decide(endpoint(neuron=0, gpu=1), alarms({"latency": "ALARM"}), T0).action == "hold"


def test_no_gpu_variant_is_a_clear_error() -> None:
    with pytest.raises(NoGpuVariant, match=r"endpoint 'chat' has variants \['neuron'\]; failover needs .* "
                                           r"live 'gpu' variant .* Nothing was changed"):
        decide(endpoint(variants={"neuron": 1.0}), alarms({"latency": "ALARM"}), T0)


def test_announcement_names_endpoint_direction_and_reason() -> None:
    subject, message = announcement(Decision("chat", "to_gpu", "neuron variant alarming: latency",
                                             {"neuron": 0.0, "gpu": 1.0}))
    assert subject == "neuronfleet: chat traffic shifted to GPU"
    assert message == ("Endpoint chat: traffic shifted to GPU (gpu=1, neuron=0). "
                       "Reason: neuron variant alarming: latency.")
