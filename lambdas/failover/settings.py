"""What the failover function is told: built by EndpointFailover, read once per container by the handler.

Pure: no boto3, no Powertools, no CDK. ``to_environment`` only encodes (its values may be CDK tokens);
``from_environment`` checks.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Self

from ._shared import environment
from .logic import MIN_DWELL, RECOVERY, Policy

_MINUTE = timedelta(minutes=1)


@dataclass(frozen=True)
class FailoverSettings:
    endpoints: Mapping[str, Sequence[str]]
    """Endpoint name -> the names of its Neuron variant's alarms (``FAILOVER_ENDPOINTS``, JSON)."""
    topic_arn: str
    """The fleet's SNS topic (``ALERTS_TOPIC_ARN``)."""
    recovery: timedelta = RECOVERY
    """Every alarm OK this long before failing back (``RECOVERY_MINUTES``)."""
    min_dwell: timedelta = MIN_DWELL
    """The least time between two shifts (``MIN_DWELL_MINUTES``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "endpoints", {name: tuple(alarms) for name, alarms in self.endpoints.items()})
        for name, value in (("recovery", self.recovery), ("min_dwell", self.min_dwell)):
            if value < timedelta(0) or value % _MINUTE:
                raise ValueError(f"FailoverSettings.{name}: got {value}; allowed: a whole number of minutes, 0 or more")

    @property
    def policy(self) -> Policy:
        return Policy(recovery=self.recovery, min_dwell=self.min_dwell)

    def to_environment(self, *, to_json: Callable[[Any], str] = json.dumps) -> dict[str, str]:
        """The function's environment. Pass ``to_json=Stack.of(scope).to_json_string`` when names are tokens."""
        return {"FAILOVER_ENDPOINTS": to_json({name: list(alarms) for name, alarms in self.endpoints.items()}),
                "ALERTS_TOPIC_ARN": str(self.topic_arn),
                "RECOVERY_MINUTES": str(self.recovery // _MINUTE),
                "MIN_DWELL_MINUTES": str(self.min_dwell // _MINUTE)}

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Self:
        """The settings in ``env`` (the process environment by default); InvalidEnvironment if one is wrong."""
        read = environment.Variables(os.environ if env is None else env)
        return cls(
            endpoints=read.json("FAILOVER_ENDPOINTS", _endpoints, allowed=(
                "a JSON object {endpoint name: [alarm name, ...]} of at least one endpoint, each with an alarm")),
            topic_arn=read.text("ALERTS_TOPIC_ARN", allowed="the ARN of the fleet's SNS topic"),
            recovery=_MINUTE * read.whole("RECOVERY_MINUTES", default=RECOVERY // _MINUTE, minimum=0, unit="minutes"),
            min_dwell=_MINUTE * read.whole("MIN_DWELL_MINUTES", default=MIN_DWELL // _MINUTE, minimum=0,
                                           unit="minutes"))


def _endpoints(doc: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(doc, dict) or not doc:
        raise ValueError("expected a non-empty object")
    out = {}
    for name, alarms in doc.items():
        out[name] = environment.strings(alarms)
        if not out[name]:
            raise ValueError(f"endpoint {name!r} has no alarms")
    return out
