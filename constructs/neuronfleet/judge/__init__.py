"""The pilot judge: a function that sends the team's prompt set to an endpoint's Neuron and GPU variants and writes a
go / no-go verdict (record and metric), and the alarm on that verdict that the endpoint's cutover rolls back on."""

from .pilot_judge import PilotJudge

__all__ = ["PilotJudge"]
