"""The pilot judge: a function that sends the team's prompt set to an endpoint's Neuron and GPU variants and writes a
go / no-go verdict (record and metric), and the alarm on that verdict that the endpoint's cutover rolls back on.

``PilotJudge`` loads aws-cdk-lib on first use (``neuronfleet judge`` commands start no Node.js)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .pilot_judge import PilotJudge

__all__ = ["PilotJudge"]


def __getattr__(name: str) -> Any:
    if name == "PilotJudge":
        from .pilot_judge import PilotJudge
        return PilotJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
