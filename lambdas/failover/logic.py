"""Neuron -> GPU traffic failover for a SageMaker endpoint: pure decisions, no AWS calls.

Fail over at once when any of the Neuron variant's alarms is in ALARM. Fail back only when every alarm
has been OK for ``recovery`` (and the last change is at least ``min_dwell`` old): alternating alarms keep
the traffic on GPU instead of flapping. INSUFFICIENT_DATA is no evidence of health: it holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

NEURON_VARIANT = "neuron"
GPU_VARIANT = "gpu"
RECOVERY = timedelta(minutes=15)
"""Default: how long every alarm must have been OK before traffic fails back to Neuron."""
MIN_DWELL = timedelta(minutes=10)
"""Default: the least time between two shifts of one endpoint."""


class NoGpuVariant(ValueError):
    """The endpoint has no GPU variant to fail over to; nothing was changed."""


@dataclass(frozen=True)
class AlarmState:
    name: str
    state: str
    """OK | ALARM | INSUFFICIENT_DATA"""
    updated: datetime


@dataclass(frozen=True)
class EndpointState:
    name: str
    status: str
    weights: Mapping[str, float]
    """Desired weight per production variant."""
    last_modified: datetime


@dataclass(frozen=True)
class Policy:
    recovery: timedelta = RECOVERY
    min_dwell: timedelta = MIN_DWELL
    neuron_variant: str = NEURON_VARIANT
    gpu_variant: str = GPU_VARIANT


@dataclass(frozen=True)
class Decision:
    endpoint: str
    action: Literal["to_gpu", "to_neuron", "hold"]
    reason: str
    weights: Mapping[str, float] = field(default_factory=dict)
    """The weights to set (empty when holding)."""

    @property
    def shifts(self) -> bool:
        return self.action != "hold"


def decide(endpoint: EndpointState, alarms: Sequence[AlarmState], now: datetime, policy: Policy = Policy()) -> Decision:
    """What to do with ``endpoint`` given its Neuron variant's alarms at ``now``."""
    neuron, gpu = policy.neuron_variant, policy.gpu_variant
    if gpu not in endpoint.weights or neuron not in endpoint.weights:
        raise NoGpuVariant(
            f"endpoint {endpoint.name!r} has variants {sorted(endpoint.weights)}; failover needs a {neuron!r} and a "
            f"live {gpu!r} variant (a shadow variant takes no traffic). Nothing was changed.")
    if not alarms:
        raise ValueError(f"endpoint {endpoint.name!r}: no alarms configured for its {neuron!r} variant")

    def hold(reason: str) -> Decision:
        return Decision(endpoint.name, "hold", reason)

    if endpoint.status != "InService":
        return hold(f"endpoint is {endpoint.status}; SageMaker changes weights only when InService")
    firing = sorted(a.name for a in alarms if a.state == "ALARM")
    on_gpu = endpoint.weights[neuron] == 0 and endpoint.weights[gpu] > 0
    if firing:
        if on_gpu:
            return hold(f"already on {gpu}; still alarming: {', '.join(firing)}")
        return Decision(endpoint.name, "to_gpu", f"{neuron} variant alarming: {', '.join(firing)}",
                        {neuron: 0.0, gpu: 1.0})
    if not on_gpu:
        return hold(f"{neuron} variant healthy")
    unknown = sorted(a.name for a in alarms if a.state != "OK")
    if unknown:
        return hold(f"on {gpu}; no evidence of health yet (not OK: {', '.join(unknown)})")
    quiet_for = now - max(a.updated for a in alarms)
    if quiet_for < policy.recovery:
        return hold(f"on {gpu}; {neuron} healthy for {_minutes(quiet_for)} min, failing back after "
                    f"{_minutes(policy.recovery)} min")
    since_change = now - endpoint.last_modified
    if since_change < policy.min_dwell:
        return hold(f"on {gpu}; last change {_minutes(since_change)} min ago, minimum {_minutes(policy.min_dwell)} min")
    return Decision(endpoint.name, "to_neuron", f"{neuron} variant healthy for {_minutes(quiet_for)} min",
                    {neuron: 1.0, gpu: 0.0})


def _minutes(delta: timedelta) -> int:
    return int(delta.total_seconds() // 60)


def announcement(decision: Decision) -> tuple[str, str]:
    """Subject and message for the fleet's SNS topic."""
    target = "GPU" if decision.action == "to_gpu" else "Neuron"
    subject = f"neuronfleet: {decision.endpoint} traffic shifted to {target}"[:100]
    weights = ", ".join(f"{variant}={weight:g}" for variant, weight in sorted(decision.weights.items()))
    return subject, f"Endpoint {decision.endpoint}: traffic shifted to {target} ({weights}). Reason: {decision.reason}."
