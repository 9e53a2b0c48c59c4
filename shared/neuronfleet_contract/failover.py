"""The failover's contract: what the function is told (built by EndpointFailover, read once per container by the
handler) and the policy's defaults and capacity bounds the construct sets.

Pure: no boto3, no Powertools, no CDK. ``to_environment`` only encodes (its values may be CDK tokens);
``from_environment`` checks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Self

from . import environment
from .alarms import default_alarms
from .environment import variable
from .variants import GPU_VARIANT, NEURON_VARIANT

SERVICE = "neuronfleet-failover"
"""The failover's Powertools service: the ``service`` dimension of its health metrics in FAILOVER_NAMESPACE (with
``Fleet``: neuronfleet_contract.health)."""
ERRORS_METRIC = "FailoverErrors"
"""Count of endpoints that could not be checked (FAILOVER_NAMESPACE, neuronfleet_contract.health's dimensions)."""
MALFORMED_METRIC = "MalformedEvents"
"""Count of events refused: not one the failover's rules send (FAILOVER_NAMESPACE, health dimensions)."""

MIN_DWELL = timedelta(minutes=10)
"""Default: the least time traffic stays on GPU before the failover starts to bring it back."""
CAPACITY_TIMEOUT = timedelta(minutes=45)
"""Default: how long raised capacity may take to come into service before the failover gives up."""
CANARY_WEIGHT = 0.05
"""Default: the share of traffic the Neuron variant gets back during the canary."""
CANARY_WINDOW = timedelta(minutes=10)
"""Default: how long the canary runs before its evidence is read."""
CANARY_MIN_INVOCATIONS = 20
"""Default: the fewest Neuron invocations in the canary window that count as evidence."""
CANARY_MAX_ERROR_PERCENT = 1.0
"""Default: the highest share of 5XX and model errors among the canary's invocations."""

@dataclass(frozen=True)
class EndpointBounds:
    """An endpoint's configured instance bounds and the GPU:Neuron throughput ratio."""

    neuron_min: int
    neuron_max: int
    gpu_min: int
    gpu_max: int
    neuron_instances_per_gpu_instance: float
    """How many Neuron instances one GPU instance replaces (from the pilot's measured throughput)."""

    def gpu_for(self, neuron_instances: int) -> int:
        """GPU instances that carry the load of ``neuron_instances`` Neuron instances, within the GPU bounds."""
        need = math.ceil(neuron_instances / self.neuron_instances_per_gpu_instance - 1e-9)
        return min(self.gpu_max, max(self.gpu_min, need))

    def neuron_for(self, gpu_instances: int) -> int:
        """Neuron instances that carry the load of ``gpu_instances`` GPU instances, within the Neuron bounds."""
        need = math.ceil(gpu_instances * self.neuron_instances_per_gpu_instance - 1e-9)
        return min(self.neuron_max, max(self.neuron_min, need))


@dataclass(frozen=True)
class Policy:
    min_dwell: timedelta = MIN_DWELL
    capacity_timeout: timedelta = CAPACITY_TIMEOUT
    canary_weight: float = CANARY_WEIGHT
    canary_window: timedelta = CANARY_WINDOW
    canary_min_invocations: int = CANARY_MIN_INVOCATIONS
    canary_max_error_percent: float = CANARY_MAX_ERROR_PERCENT
    neuron_variant: str = NEURON_VARIANT
    gpu_variant: str = GPU_VARIANT


_MINUTE = timedelta(minutes=1)
MAX_CANARY_WEIGHT = 0.5
"""A canary is a small share: at most half the traffic."""
MAX_CANARY_ERROR_PERCENT = 50.0
"""A canary that fails half its requests is no evidence of health."""


@dataclass(frozen=True)
class WatchedEndpoint:
    """One endpoint the failover watches."""

    alarms: Sequence[str]
    """The names of its Neuron variant's alarms."""
    capacity: EndpointBounds
    """Instance bounds of both variants and the GPU:Neuron throughput ratio."""
    latency_limit_ms: float
    """The canary's p99 latency limit (the latency alarm's threshold)."""
    gpu_alarms: Sequence[str] = ()
    """The names of its GPU variant's alarms (judged while it carries traffic, and before traffic moves onto it)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "alarms", tuple(self.alarms))
        object.__setattr__(self, "gpu_alarms", tuple(self.gpu_alarms))
        if not self.alarms:
            raise ValueError("no alarms")
        c = self.capacity
        if not (1 <= c.neuron_min <= c.neuron_max and 1 <= c.gpu_min <= c.gpu_max):
            raise ValueError(f"bounds must be 1 <= min <= max: {c}")
        if not c.neuron_instances_per_gpu_instance > 0:
            raise ValueError(f"neuron_instances_per_gpu_instance must be above 0, got "
                             f"{c.neuron_instances_per_gpu_instance}")
        if not self.latency_limit_ms > 0:
            raise ValueError(f"latency_limit_ms must be above 0, got {self.latency_limit_ms}")

    def to_json(self, name: str = "") -> dict[str, Any]:
        """The endpoint's entry in ``FAILOVER_ENDPOINTS``; its alarms are left out when they are the ones
        :func:`default_alarms` derives from ``name`` (a hundred endpoints' alarm names fill Lambda's 4 KB)."""
        c = self.capacity
        alarms = {} if name and self.alarms == default_alarms(name) else {"alarms": list(self.alarms)}
        if not (name and self.gpu_alarms == default_alarms(name, gpu=True)):
            alarms["gpu_alarms"] = list(self.gpu_alarms)
        return {**alarms, "latency_limit_ms": self.latency_limit_ms,
                "neuron": {"min": c.neuron_min, "max": c.neuron_max},
                "gpu": {"min": c.gpu_min, "max": c.gpu_max},
                "neuron_instances_per_gpu_instance": c.neuron_instances_per_gpu_instance}

    @classmethod
    def from_json(cls, doc: Any, name: str = "") -> Self:
        if not isinstance(doc, dict):
            raise ValueError("expected an object")
        n, g = doc["neuron"], doc["gpu"]
        alarms = environment.strings(doc["alarms"]) if "alarms" in doc or not name else default_alarms(name)
        gpu_alarms = environment.strings(doc.get("gpu_alarms", [])) if "gpu_alarms" in doc or not name \
            else default_alarms(name, gpu=True)
        return cls(alarms=alarms, gpu_alarms=gpu_alarms, latency_limit_ms=float(doc["latency_limit_ms"]),
                   capacity=EndpointBounds(neuron_min=_whole(n["min"]), neuron_max=_whole(n["max"]),
                                     gpu_min=_whole(g["min"]), gpu_max=_whole(g["max"]),
                                     neuron_instances_per_gpu_instance=float(doc["neuron_instances_per_gpu_instance"])))


def _whole(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {value!r}")
    return value


_ENDPOINTS_ALLOWED = (
    'a JSON object {endpoint name: {"alarms": [alarm name, ...] (default: <endpoint name>-latency-p99, '
    '-errors-5xx, -model-errors), "latency_limit_ms": N, "neuron": {"min": N, "max": N}, "gpu": '
    '{"min": N, "max": N}, "neuron_instances_per_gpu_instance": N, "gpu_alarms": [alarm name, ...] '
    '(default: <endpoint name>-gpu-latency-p99, ...)}} of at least one endpoint')


def _endpoints_document(endpoints: Mapping[str, WatchedEndpoint]) -> dict[str, Any]:
    return {name: e.to_json(name) for name, e in endpoints.items()}


@dataclass(frozen=True)
class FailoverConfig(environment.Configured):
    endpoints: Mapping[str, WatchedEndpoint] = field(metadata=variable(
        "FAILOVER_ENDPOINTS", allowed=_ENDPOINTS_ALLOWED, encode=_endpoints_document, decode=lambda d: _endpoints(d)))
    """Endpoint name -> what the failover knows of it (``FAILOVER_ENDPOINTS``, JSON; an endpoint's alarms are left
    out when they are the ones its name derives: WatchedEndpoint.to_json)."""
    topic_arn: str = field(metadata=variable("ALERTS_TOPIC_ARN", allowed="the ARN of the fleet's SNS topic"))
    """The fleet's SNS topic (``ALERTS_TOPIC_ARN``)."""
    state_table: str = field(metadata=variable(
        "FAILOVER_TABLE", allowed="the name of the failover's DynamoDB state table"))
    """The failover's DynamoDB table: one item per endpoint, its record and the step it owes (``FAILOVER_TABLE``)."""
    min_dwell: timedelta = field(default=MIN_DWELL, metadata=variable("MIN_DWELL_MINUTES", unit="minutes"))
    """The least time on GPU before moving back starts (``MIN_DWELL_MINUTES``)."""
    capacity_timeout: timedelta = field(default=CAPACITY_TIMEOUT, metadata=variable(
        "CAPACITY_TIMEOUT_MINUTES", unit="minutes", minimum=1))
    """How long raised capacity may take to come into service (``CAPACITY_TIMEOUT_MINUTES``)."""
    canary_window: timedelta = field(default=CANARY_WINDOW, metadata=variable("CANARY_WINDOW_MINUTES", unit="minutes"))
    """How long the canary runs before its evidence is read (``CANARY_WINDOW_MINUTES``)."""
    canary_weight: float = field(default=CANARY_WEIGHT, metadata=variable(
        "CANARY_WEIGHT", above=0, at_most=MAX_CANARY_WEIGHT, unit="(share of traffic)"))
    """The Neuron variant's share of traffic during the canary (``CANARY_WEIGHT``)."""
    canary_min_invocations: int = field(default=CANARY_MIN_INVOCATIONS, metadata=variable(
        "CANARY_MIN_INVOCATIONS", minimum=1, unit="invocations"))
    """The fewest canary invocations that count as evidence (``CANARY_MIN_INVOCATIONS``)."""
    canary_max_error_percent: float = field(default=CANARY_MAX_ERROR_PERCENT, metadata=variable(
        "CANARY_MAX_ERROR_PERCENT", above=0, at_most=MAX_CANARY_ERROR_PERCENT, unit="percent"))
    """The highest error share of the canary's invocations (``CANARY_MAX_ERROR_PERCENT``)."""

    def __post_init__(self) -> None:
        if not self.endpoints:
            raise ValueError("FailoverConfig.endpoints: got none; allowed: at least one endpoint")
        for name in ("min_dwell", "capacity_timeout", "canary_window"):
            value = getattr(self, name)
            if value < timedelta(0) or value % _MINUTE:
                raise ValueError(f"FailoverConfig.{name}: got {value}; allowed: a whole number of minutes, 0 or more")
        if self.capacity_timeout < _MINUTE:
            raise ValueError(f"FailoverConfig.capacity_timeout: got {self.capacity_timeout}; allowed: 1 minute or more")
        if not 0 < self.canary_weight <= MAX_CANARY_WEIGHT:
            raise ValueError(f"FailoverConfig.canary_weight: got {self.canary_weight}; allowed: above 0 and at most "
                             f"{MAX_CANARY_WEIGHT}")
        if self.canary_min_invocations < 1:
            raise ValueError(f"FailoverConfig.canary_min_invocations: got {self.canary_min_invocations}; allowed: "
                             "1 or more (silence is no evidence)")
        if not 0 < self.canary_max_error_percent <= MAX_CANARY_ERROR_PERCENT:
            raise ValueError(f"FailoverConfig.canary_max_error_percent: got {self.canary_max_error_percent}; "
                             f"allowed: above 0 and at most {MAX_CANARY_ERROR_PERCENT:g}")

    @property
    def policy(self) -> Policy:
        return Policy(min_dwell=self.min_dwell, capacity_timeout=self.capacity_timeout,
                      canary_weight=self.canary_weight, canary_window=self.canary_window,
                      canary_min_invocations=self.canary_min_invocations,
                      canary_max_error_percent=self.canary_max_error_percent)


def _endpoints(doc: Any) -> dict[str, WatchedEndpoint]:
    if not isinstance(doc, dict) or not doc:
        raise ValueError("expected a non-empty object")
    out = {}
    for name, entry in doc.items():
        try:
            out[name] = WatchedEndpoint.from_json(entry, name)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"endpoint {name!r}: {exc}") from None
    return out
