"""Waste on paid capacity: idle NeuronCores and Capacity Blocks ending soon. Pure decisions, no AWS calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

WARN_BEFORE = (timedelta(hours=24), timedelta(hours=1))
TERMINATION_LEAD = timedelta(minutes=30)
"""Instances on a Capacity Block are terminated from 30 minutes before the block ends."""


@dataclass(frozen=True)
class Block:
    reservation_id: str
    instance_type: str
    count: int
    end: datetime


def idle_instances(hourly: Mapping[str, Sequence[float]], *, threshold: float, hours: int) -> list[tuple[str, float]]:
    """Instances whose every one of the last ``hours`` hourly averages is below ``threshold`` percent.
    An instance with fewer datapoints than ``hours`` is not judged (no evidence either way)."""
    out = []
    for instance, values in sorted(hourly.items()):
        recent = list(values)[-hours:]
        if len(recent) == hours and max(recent) < threshold:
            out.append((instance, round(sum(recent) / hours, 1)))
    return out


def ending_blocks(blocks: Sequence[Block], now: datetime, every: timedelta = timedelta(hours=1)) -> list[tuple[Block, str]]:
    """Blocks crossing a warning point (24 h, 1 h before the end) within this run's window (``every``),
    so an hourly schedule warns once per point."""
    out = []
    for block in blocks:
        left = block.end - now
        for lead in WARN_BEFORE:
            if lead - every < left <= lead:
                out.append((block, f"{int(lead.total_seconds() // 3600)}h"))
    return out


def messages(idle: Sequence[tuple[str, float]], ending: Sequence[tuple[Block, str]], *, threshold: float,
             hours: int) -> list[tuple[str, str]]:
    out = []
    if idle:
        lines = [f"- {i}: {avg}% average NeuronCore utilisation" for i, avg in idle]
        out.append((f"neuronfleet: {len(idle)} idle Neuron instance(s)",
                    f"NeuronCore utilisation below {threshold}% for the last {hours} hours on paid capacity:\n"
                    + "\n".join(lines)))
    for block, point in ending:
        stop = block.end - TERMINATION_LEAD
        out.append((f"neuronfleet: Capacity Block {block.reservation_id} ends in {point}",
                    f"Capacity Block {block.reservation_id} ({block.count} x {block.instance_type}) ends at "
                    f"{block.end.isoformat()}. Its instances are terminated from {stop.isoformat()} (30 minutes "
                    "before the end): checkpoint and drain before then."))
    return out
