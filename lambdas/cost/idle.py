"""Waste on paid capacity: idle NeuronCores. Pure decisions, no AWS calls.

(Capacity Blocks ending are announced by the capacity alerts, lambdas/capacity_alert, timed from when their
instances stop.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

IDLE_KIND = "idle-instance"
"""The kind of the lasting condition in the announcements ledger."""


def idle_instances(hourly: Mapping[str, Sequence[float]], *, threshold: float, hours: int) -> list[tuple[str, float]]:
    """Instances whose every one of the last ``hours`` hourly averages is below ``threshold`` percent.
    An instance with fewer datapoints than ``hours`` is not judged (no evidence either way)."""
    out = []
    for instance, values in sorted(hourly.items()):
        recent = list(values)[-hours:]
        if len(recent) == hours and max(recent) < threshold:
            out.append((instance, round(sum(recent) / hours, 1)))
    return out


def started_message(idle: Sequence[tuple[str, float]], *, threshold: float, hours: int) -> tuple[str, str]:
    lines = [f"- {i}: {avg}% average NeuronCore utilisation" for i, avg in idle]
    return (f"neuronfleet: {len(idle)} Neuron instance(s) went idle",
            f"NeuronCore utilisation below {threshold}% for the last {hours} hours on paid capacity:\n"
            + "\n".join(lines) + "\nEach is announced again only when it stops being idle.")


def ended_message(instances: Sequence[str], *, threshold: float) -> tuple[str, str]:
    return (f"neuronfleet: {len(instances)} Neuron instance(s) no longer idle",
            f"Back above {threshold}% NeuronCore utilisation, or no longer reporting (stopped):\n"
            + "\n".join(f"- {i}" for i in instances))
