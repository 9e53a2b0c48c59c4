"""Neuron -> GPU traffic failover for a SageMaker endpoint: pure decisions, no AWS calls.

One decision per endpoint per check (an alarm state change, or the schedule every few minutes). The failover
walks through phases, and remembers its phase between checks in a :class:`Record` (kept in the failover's own
DynamoDB item per endpoint, see adapters.py and :class:`Intent`):

``serving-neuron``
    A Neuron alarm in ALARM starts a failover. The GPU variant must carry the Neuron variant's current load:
    it needs ``ceil(neuron instances / neuron_instances_per_gpu_instance)`` instances (within its bounds). If it
    has them in service, the weight moves at once; otherwise its capacity is raised first (``raising-gpu``).
``raising-gpu``
    Waits (next check, never a sleep) until that many GPU instances are in service, then moves all weight to
    GPU (``on-gpu``). If they are not in service within ``capacity_timeout`` it gives up, says so, lowers the
    GPU capacity again and leaves the traffic on Neuron (``gave-up``; a new attempt after ``capacity_timeout``).
``on-gpu``
    Moves back only on positive evidence that Neuron serves, never on silence: the Neuron alarms treat missing
    data as not breaching, so with no traffic on Neuron an OK alarm says nothing. After ``min_dwell``, the
    Neuron variant must first have enough instances in service for the GPU variant's load (raised like the GPU
    variant was), then gets a small canary weight (``canary``).
``canary``
    After ``canary_window``, the Neuron variant's own invocations, errors and p99 latency over the window
    (CloudWatch) decide: at least ``canary_min_invocations`` invocations, an error rate at most
    ``canary_max_error_percent`` and p99 latency within the latency alarm's threshold move all weight back
    (``lowering-gpu``); errors, latency or any alarm put the weight back on GPU (``on-gpu``, dwell restarts);
    too few invocations hold: silence is no evidence.
``lowering-gpu``
    Once the endpoint is in service again, the GPU variant's capacity and scaling floor go back to their
    configured minimum and the Neuron variant's floor back to its own (``serving-neuron``).

SageMaker takes one update at a time: while the endpoint is not ``InService`` (autoscaling updates it in a
load spike) the failover waits, says so once, and acts at the first check that finds it in service.

The GPU variant's own alarms (5XX, model errors, p99 latency, as the Neuron variant's) are judged too:

- traffic never moves onto a GPU variant in alarm: with Neuron failing too the failover is blocked, traffic stays
  on Neuron and "both variants failing" is announced once (``both_failing``); a canary that fails while the GPU
  variant alarms leaves the canary's weights as they are (no move onto the failing variant), announced once;
- the GPU variant alarming while it carries the traffic, Neuron healthy: announced once (``gpu_failing``), and the
  move back starts without waiting out ``min_dwell`` (the dwell guards against flapping onto a Neuron variant that
  just failed; with GPU failing it only prolongs the failure) but on the existing rules: Neuron instances in service
  for the load, then a canary with its own evidence. Silence is still no evidence;
- Neuron alarms still firing while on GPU hold the traffic on GPU (both firing: ``both_failing``, announced once).

A GPU variant alarming while Neuron serves (at weight 0 it has no traffic, so rarely) is left to its own alarm
actions: the failover only holds.

Without its state (the DynamoDB table unreadable, or refusing the step's record): :func:`decide_without_state`, the
safe default. It needs no memory: traffic moves to the GPU variant when the Neuron variant alarms and the GPU variant
is healthy with the instances for the load already in service (a weight change), and nothing else happens: no
capacity raised (no record to lower it again), no move back to Neuron (that needs a canary over time), no lowering.
A later check with its table adopts the traffic found on GPU (``adopt``, announced) and goes on as usual.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal

from neuronfleet_contract.failover import (
    CANARY_MAX_ERROR_PERCENT,
    CANARY_MIN_INVOCATIONS,
    CANARY_WEIGHT,
    CANARY_WINDOW,
    CAPACITY_TIMEOUT,
    MIN_DWELL,
    EndpointBounds,
    Policy,
)
from neuronfleet_contract.variants import GPU_VARIANT, NEURON_VARIANT

__all__ = ["CANARY_MAX_ERROR_PERCENT", "CANARY_MIN_INVOCATIONS", "CANARY_WEIGHT", "CANARY_WINDOW", "CAPACITY_TIMEOUT",
           "GPU_VARIANT", "MIN_DWELL", "NEURON_VARIANT", "EndpointBounds", "Policy"]
"""Also here: what the contract defines and this logic uses (its policy, its variants)."""

DEFAULT_POLICY = Policy()
IN_SERVICE = "InService"

Phase = Literal["serving-neuron", "raising-gpu", "on-gpu", "canary", "lowering-gpu", "gave-up"]
PHASES: tuple[Phase, ...] = ("serving-neuron", "raising-gpu", "on-gpu", "canary", "lowering-gpu", "gave-up")
Action = Literal["hold", "wait", "raise_gpu", "to_gpu", "give_up", "raise_neuron", "canary", "canary_failed",
                 "to_neuron", "lower_gpu", "both_failing", "gpu_failing", "adopt"]


class NoGpuVariant(ValueError):
    """The endpoint has no GPU variant to fail over to; nothing was changed."""


@dataclass(frozen=True)
class AlarmState:
    name: str
    state: str
    """OK | ALARM | INSUFFICIENT_DATA"""
    updated: datetime


@dataclass(frozen=True)
class VariantStatus:
    """One production variant as DescribeEndpoint shows it."""

    name: str
    weight: float
    """Desired weight."""
    current_instances: int
    desired_instances: int
    busy: bool = False
    """SageMaker is changing it (its VariantStatus lists Creating, Updating, ActivatingTraffic, ...)."""

    def serving(self, count: int) -> bool:
        """At least ``count`` instances in service and nothing in flight."""
        return self.current_instances >= count and not self.busy


@dataclass(frozen=True)
class EndpointState:
    name: str
    status: str
    variants: Mapping[str, VariantStatus]
    last_modified: datetime
    arn: str = ""

    @property
    def weights(self) -> dict[str, float]:
        return {name: v.weight for name, v in self.variants.items()}


@dataclass(frozen=True)
class Record:
    """What the failover remembers between checks (stored with the endpoint)."""

    phase: Phase = "serving-neuron"
    since: datetime | None = None
    """When the phase began."""
    target: int = 0
    """The instance count being waited for (raising-gpu: GPU; on-gpu: Neuron)."""
    noted_update: bool = False
    """The wait for an endpoint update has been announced (say it once)."""
    noted_gpu: bool = False
    """The GPU variant's alarms (blocking a failover, or failing under the traffic) have been announced (say it
    once; cleared when they are all OK again)."""
    error: str = ""
    """The kind of error the failover last announced for this endpoint (say it once; cleared by a clean check)."""

    @property
    def idle(self) -> bool:
        return self.phase == "serving-neuron" and not self.noted_update and not self.noted_gpu and not self.error

    def encode(self) -> str:
        """Letters, digits, spaces and ``_.:/=+-@`` only."""
        since = self.since.isoformat() if self.since else "-"
        return (f"phase={self.phase} since={since} target={self.target} noted={int(self.noted_update)}"
                f" gpu={int(self.noted_gpu)} error={self.error or '-'}")

    @classmethod
    def decode(cls, text: str | None) -> Record:
        """The record in a tag value; an absent or unreadable value is the idle record."""
        if not text:
            return cls()
        try:
            parts = dict(p.split("=", 1) for p in text.split())
            phase = parts["phase"]
            if phase not in PHASES:
                return cls()
            since = None if parts["since"] == "-" else datetime.fromisoformat(parts["since"])
            error = parts.get("error", "-")
            return cls(phase=phase, since=since, target=int(parts["target"]),
                       noted_update=parts.get("noted") == "1", noted_gpu=parts.get("gpu") == "1",
                       error="" if error == "-" else error)
        except (KeyError, ValueError):
            return cls()


@dataclass(frozen=True)
class Evidence:
    """The Neuron variant's own traffic over the canary window (CloudWatch AWS/SageMaker)."""

    invocations: float
    errors_5xx: float
    model_errors: float
    latency_p99_ms: float | None
    """None when CloudWatch has no latency datapoint."""


@dataclass(frozen=True)
class CapacityChange:
    """Set a variant's instance count (``count``; None: leave it) and its autoscaling bounds."""

    count: int | None
    floor: int
    ceiling: int
    up: bool = False
    """A raise. Application Auto Scaling moves a registered variant's capacity into new bounds itself
    (RegisterScalableTarget), so a raise of a registered variant is its floor alone; a lowering sets the floor,
    then the count."""


@dataclass(frozen=True)
class Decision:
    endpoint: str
    action: Action
    reason: str
    record: Record
    """The record to keep after this decision."""
    weights: Mapping[str, float] = field(default_factory=dict)
    """The weights to set (empty: leave them)."""
    capacity: Mapping[str, CapacityChange] = field(default_factory=dict)
    """Instance counts and scaling bounds to set, per variant (at most one count: SageMaker changes the
    capacity of one variant per request)."""
    announce: bool = False

    @property
    def shifts(self) -> bool:
        return bool(self.weights)

    @property
    def changes(self) -> bool:
        return bool(self.weights or self.capacity)


def needs_evidence(record: Record) -> bool:
    """Whether :func:`decide` needs the canary's :class:`Evidence` for this record."""
    return record.phase == "canary"


def decide(endpoint: EndpointState, alarms: Sequence[AlarmState], record: Record, now: datetime,
           capacity: EndpointBounds, *, latency_limit_ms: float, evidence: Evidence | None = None,
           policy: Policy = DEFAULT_POLICY, gpu_alarms: Sequence[AlarmState] = ()) -> Decision:
    """What to do with ``endpoint`` at ``now``, given its Neuron variant's ``alarms``, its GPU variant's
    ``gpu_alarms`` and the failover's record."""
    neuron_name, gpu_name = policy.neuron_variant, policy.gpu_variant
    if gpu_name not in endpoint.variants or neuron_name not in endpoint.variants:
        raise NoGpuVariant(
            f"endpoint {endpoint.name!r} has variants {sorted(endpoint.variants)}; failover needs a {neuron_name!r} "
            f"and a live {gpu_name!r} variant (a shadow variant takes no traffic). Nothing was changed.")
    if not alarms:
        raise ValueError(f"endpoint {endpoint.name!r}: no alarms configured for its {neuron_name!r} variant")
    return _Decider(endpoint, alarms, record, now, capacity, latency_limit_ms, evidence, policy,
                    gpu_alarms).decide()


def decide_without_state(endpoint: EndpointState, alarms: Sequence[AlarmState], now: datetime,
                         capacity: EndpointBounds, *, why: str, policy: Policy = DEFAULT_POLICY,
                         gpu_alarms: Sequence[AlarmState] = ()) -> Decision:
    """The safe default while the state store is down (``why``): move traffic to a healthy GPU variant that has the
    instances in service for the Neuron variant's load, or hold. Never a capacity change, never a move to Neuron.
    The decision's record is the idle one (nothing is stored)."""
    neuron_name, gpu_name = policy.neuron_variant, policy.gpu_variant
    if gpu_name not in endpoint.variants or neuron_name not in endpoint.variants:
        raise NoGpuVariant(
            f"endpoint {endpoint.name!r} has variants {sorted(endpoint.variants)}; failover needs a {neuron_name!r} "
            f"and a live {gpu_name!r} variant (a shadow variant takes no traffic). Nothing was changed.")
    return _Decider(endpoint, alarms, Record(), now, capacity, 1.0, None, policy, gpu_alarms).without_state(why)


class _Decider:
    def __init__(self, endpoint: EndpointState, alarms: Sequence[AlarmState], record: Record, now: datetime,
                 capacity: EndpointBounds, latency_limit_ms: float, evidence: Evidence | None, policy: Policy,
                 gpu_alarms: Sequence[AlarmState]) -> None:
        self.e, self.record, self.now, self.cap, self.policy = endpoint, record, now, capacity, policy
        self.latency_limit_ms, self.evidence = latency_limit_ms, evidence
        self.n_name, self.g_name = policy.neuron_variant, policy.gpu_variant
        self.neuron, self.gpu = endpoint.variants[self.n_name], endpoint.variants[self.g_name]
        self.firing = sorted(a.name for a in alarms if a.state == "ALARM")
        self.gpu_firing = sorted(a.name for a in gpu_alarms if a.state == "ALARM")

    # ------------------------------------------------------------------ helpers

    def _d(self, action: Action, reason: str, record: Record | None = None, **kw: object) -> Decision:
        return Decision(self.e.name, action, reason, record if record is not None else self.record, **kw)  # type: ignore[arg-type]

    def _phase(self, phase: Phase, target: int = 0) -> Record:
        return Record(phase=phase, since=self.now, target=target, noted_gpu=self.record.noted_gpu)

    def _both_failing(self, where: str, neuron_why: str = "") -> Decision:
        """Neuron and GPU both failing: nothing moves (never onto a failing variant); said once."""
        neuron_why = neuron_why or f"alarming: {', '.join(self.firing)}"
        reason = (f"both variants failing: {self.n_name} {neuron_why}; {self.g_name} alarming: "
                  f"{', '.join(self.gpu_firing)}; {where}")
        if self.record.noted_gpu:
            return self._d("hold", reason)
        return self._d("both_failing", reason, replace(self.record, noted_gpu=True), announce=True)

    def _age(self) -> timedelta:
        return self.now - (self.record.since or self.now)

    def _on_gpu_weights(self) -> dict[str, float]:
        return {self.n_name: 0.0, self.g_name: 1.0}

    # ------------------------------------------------------------------ the decision

    def decide(self) -> Decision:
        if self.e.status != IN_SERVICE:
            return self._wait_for_update()
        if self.record.noted_update:
            self.record = replace(self.record, noted_update=False)
        if self.record.noted_gpu and not self.gpu_firing:  # GPU healthy again: the next failure is news
            self.record = replace(self.record, noted_gpu=False)
        handler = {"serving-neuron": self._serving_neuron, "raising-gpu": self._raising_gpu, "on-gpu": self._on_gpu,
                   "canary": self._canary, "lowering-gpu": self._lowering_gpu, "gave-up": self._gave_up}
        return handler[self.record.phase]()

    def without_state(self, why: str) -> Decision:
        where = f"state store unavailable ({why}): only a move to a healthy GPU variant already carrying the load"
        if self.e.status != IN_SERVICE:
            return self._d("hold", f"endpoint is {self.e.status}; {where}")
        if not self.firing:
            return self._d("hold", f"{self.n_name} variant not alarming; {where}")
        if self.neuron.weight == 0:
            return self._d("hold", f"traffic already off {self.n_name}; {where}")
        if self.gpu_firing:
            return self._d("hold", f"both variants failing ({', '.join(self.firing)}; {', '.join(self.gpu_firing)}); "
                                   f"traffic stays on {self.n_name}; {where}")
        need = self.cap.gpu_for(self.neuron.current_instances)
        if not self.gpu.serving(need):
            return self._d("hold", f"{self.n_name} variant alarming: {', '.join(self.firing)}; {self.g_name} has "
                                   f"{self.gpu.current_instances} of {need} instance(s) in service"
                                   f"{' (still changing)' if self.gpu.busy else ''}: no capacity is raised without "
                                   f"the state store, traffic stays on {self.n_name}; {where}")
        return self._d("to_gpu", f"{self.n_name} variant alarming: {', '.join(self.firing)}; {self.g_name} has {need} "
                                 f"instance(s) in service for the load of {self.neuron.current_instances} "
                                 f"{self.n_name} instance(s); {where}. The next check with its table takes the "
                                 f"traffic over (moving back on evidence only)",
                       weights=self._on_gpu_weights(), announce=True)

    def _wait_for_update(self) -> Decision:
        status = self.e.status
        if self.record.phase == "raising-gpu" and self._age() >= self.policy.capacity_timeout:
            return self._give_up()
        if not self.firing and self.record.phase == "serving-neuron":
            return self._d("hold", f"endpoint is {status}; {self.n_name} variant not alarming")
        reason = (f"endpoint is {status} (SageMaker takes one update at a time); waiting for InService, the next "
                  f"check acts (phase {self.record.phase})")
        if self.record.phase != "serving-neuron":  # mostly the failover's own last step: log it, no announcement
            return self._d("wait", reason)
        # an alarm wants a failover while the endpoint updates (autoscaling does in a load spike): say so once
        reason = f"{self.n_name} variant alarming: {', '.join(self.firing)}; {reason}"
        return self._d("wait", reason, replace(self.record, noted_update=True), announce=not self.record.noted_update)

    def _serving_neuron(self) -> Decision:
        if self.neuron.weight < self.gpu.weight:  # the record is lost (or traffic was moved by hand): on GPU
            self.record = Record(phase="on-gpu", since=self.e.last_modified)
            return self._d("adopt", f"traffic is on {self.g_name} (weights {self.n_name}={self.neuron.weight:g}, "
                                    f"{self.g_name}={self.gpu.weight:g}) without a failover record: moved by hand or "
                                    f"the record was lost; taking it over (moving back on evidence only)",
                           self.record, announce=True)
        if not self.firing:
            return self._d("hold", f"{self.n_name} variant healthy")
        return self._start_failover()

    def _start_failover(self) -> Decision:
        if self.gpu_firing:
            return self._both_failing(f"failover blocked, traffic stays on {self.n_name}")
        alarming = ", ".join(self.firing)
        need = self.cap.gpu_for(self.neuron.current_instances)
        if self.gpu.serving(need):
            return self._d("to_gpu", f"{self.n_name} variant alarming: {alarming}; {self.g_name} has {need} "
                                     f"instance(s) in service for the load of {self.neuron.current_instances} "
                                     f"{self.n_name} instance(s)",
                           self._phase("on-gpu"), weights=self._on_gpu_weights(), announce=True)
        changing = " and SageMaker still changing it" if self.gpu.busy else ""
        return self._d("raise_gpu", f"{self.n_name} variant alarming: {alarming}; raising {self.g_name} to {need} "
                                    f"instance(s) (now {self.gpu.current_instances}{changing}) for the load of "
                                    f"{self.neuron.current_instances} {self.n_name} instance(s) before moving traffic",
                       self._phase("raising-gpu", need),
                       capacity={self.g_name: CapacityChange(need, need, max(self.cap.gpu_max, need), up=True)},
                       announce=True)

    def _raising_gpu(self) -> Decision:
        target = self.record.target
        if self.gpu.serving(target) and not self.gpu_firing:
            return self._d("to_gpu", f"{self.g_name} has {self.gpu.current_instances} of {target} instance(s) in "
                                     f"service; traffic moved", self._phase("on-gpu"),
                           weights=self._on_gpu_weights(), announce=True)
        if self._age() >= self.policy.capacity_timeout:
            return self._give_up()
        waited = f"{_minutes(self._age())} of {_minutes(self.policy.capacity_timeout)} min"
        if self.gpu.desired_instances < target:  # not applied, or lost (a failed update): set the count itself
            return self._d("raise_gpu", f"{self.g_name} desired {self.gpu.desired_instances}, needs {target}; "
                                        f"setting it again ({waited})",
                           capacity={self.g_name: CapacityChange(target, target, max(self.cap.gpu_max, target))})
        if self.gpu_firing:
            return self._both_failing(f"failover blocked, traffic stays on {self.n_name} ({waited})")
        return self._d("hold", f"waiting for {self.g_name} capacity: {self.gpu.current_instances} of {target} "
                               f"instance(s) in service ({waited}); traffic stays on {self.n_name}")

    def _give_up(self) -> Decision:
        reason = (f"{self.g_name} capacity did not come up: {self.gpu.current_instances} of {self.record.target} "
                  f"instance(s) in service after {_minutes(self._age())} min (limit "
                  f"{_minutes(self.policy.capacity_timeout)} min); traffic stays on {self.n_name}, {self.g_name} "
                  f"capacity lowered again, next attempt in {_minutes(self.policy.capacity_timeout)} min")
        lower = {self.g_name: CapacityChange(self.cap.gpu_min, self.cap.gpu_min, self.cap.gpu_max)} \
            if self.e.status == IN_SERVICE else {}
        return self._d("give_up", reason, self._phase("gave-up"), capacity=lower, announce=True)

    def _gave_up(self) -> Decision:
        if self.gpu.desired_instances > self.cap.gpu_min:  # lower what the give-up could not (endpoint was busy)
            return self._d("lower_gpu", f"lowering {self.g_name} to {self.cap.gpu_min} instance(s) after giving up",
                           capacity={self.g_name: CapacityChange(self.cap.gpu_min, self.cap.gpu_min, self.cap.gpu_max)})
        if self.firing and self._age() >= self.policy.capacity_timeout:
            return self._start_failover()
        return self._d("hold", f"gave up {_minutes(self._age())} min ago; traffic on {self.n_name}"
                               + (f", still alarming: {', '.join(self.firing)}" if self.firing else ""))

    def _on_gpu(self) -> Decision:
        if self.firing and self.gpu_firing:
            return self._both_failing(f"traffic stays on {self.g_name}")
        if self.firing:
            return self._d("hold", f"on {self.g_name}; {self.n_name} alarms still firing: {', '.join(self.firing)}")
        if not self.gpu_firing:
            return self._move_back()
        # GPU failing under the traffic, Neuron healthy: move back on the same evidence, without the dwell; say so once
        d = self._move_back(dwell=False)
        if self.record.noted_gpu:
            return d
        why = f"{self.g_name} variant alarming while it carries the traffic: {', '.join(self.gpu_firing)}"
        return replace(d, action="gpu_failing" if d.action == "hold" else d.action, reason=f"{why}; {d.reason}",
                       record=replace(d.record, noted_gpu=True), announce=True)

    def _move_back(self, *, dwell: bool = True) -> Decision:
        if dwell and self._age() < self.policy.min_dwell:
            return self._d("hold", f"on {self.g_name} for {_minutes(self._age())} min, minimum "
                                   f"{_minutes(self.policy.min_dwell)} min")
        need = self.cap.neuron_for(self.gpu.current_instances)
        if not self.neuron.serving(need):
            if self.neuron.desired_instances < need:
                return self._d("raise_neuron", f"on {self.g_name}; raising {self.n_name} to {need} instance(s) (now "
                                               f"{self.neuron.current_instances}) for the load of "
                                               f"{self.gpu.current_instances} {self.g_name} instance(s) before a canary",
                               replace(self.record, target=need),
                               capacity={self.n_name: CapacityChange(need, need, max(self.cap.neuron_max, need), up=True)},
                               announce=True)
            return self._d("hold", f"on {self.g_name}; waiting for {self.n_name}: {self.neuron.current_instances} of "
                                   f"{need} instance(s) in service")
        canary = self.policy.canary_weight
        return self._d("canary", f"{self.n_name} has {self.neuron.current_instances} instance(s) in service; canary: "
                                 f"{canary:.0%} of traffic back to {self.n_name} for "
                                 f"{_minutes(self.policy.canary_window)} min", self._phase("canary"),
                       weights={self.n_name: canary, self.g_name: 1.0 - canary}, announce=True)

    def _canary(self) -> Decision:
        if self.firing:
            return self._canary_failed(f"alarming during the canary: {', '.join(self.firing)}")
        if self._age() < self.policy.canary_window:
            return self._d("hold", f"canary running for {_minutes(self._age())} of "
                                   f"{_minutes(self.policy.canary_window)} min")
        ev = self.evidence
        if ev is None or ev.invocations < self.policy.canary_min_invocations:
            got = 0 if ev is None else int(ev.invocations)
            return self._d("hold", f"canary: {got} {self.n_name} invocation(s) so far, "
                                   f"{self.policy.canary_min_invocations} needed; no evidence yet, silence is not "
                                   f"health: traffic stays on {self.g_name}")
        error_percent = 100.0 * (ev.errors_5xx + ev.model_errors) / ev.invocations
        if error_percent > self.policy.canary_max_error_percent:
            return self._canary_failed(f"canary errors {error_percent:.1f}% of {int(ev.invocations)} invocations "
                                       f"(limit {self.policy.canary_max_error_percent:g}%)")
        if ev.latency_p99_ms is not None and ev.latency_p99_ms > self.latency_limit_ms:
            return self._canary_failed(f"canary p99 latency {ev.latency_p99_ms:.0f} ms (limit "
                                       f"{self.latency_limit_ms:.0f} ms)")
        latency = "no latency datapoint" if ev.latency_p99_ms is None else f"p99 {ev.latency_p99_ms:.0f} ms"
        return self._d("to_neuron", f"{self.n_name} served the canary: {int(ev.invocations)} invocations, "
                                    f"{error_percent:.1f}% errors, {latency}", self._phase("lowering-gpu"),
                       weights={self.n_name: 1.0, self.g_name: 0.0}, announce=True)

    def _canary_failed(self, why: str) -> Decision:
        if self.gpu_firing:  # never back onto a failing variant
            return self._both_failing("the canary's weights stay as they are", why)
        return self._d("canary_failed", f"{why}; traffic back on {self.g_name}", self._phase("on-gpu"),
                       weights=self._on_gpu_weights(), announce=True)

    def _lowering_gpu(self) -> Decision:
        if self.firing:
            return self._start_failover()
        return self._d("lower_gpu", f"traffic on {self.n_name}; {self.g_name} back to {self.cap.gpu_min} instance(s), "
                                    f"{self.n_name} scaling floor back to {self.cap.neuron_min}", Record(),
                       capacity={self.g_name: CapacityChange(self.cap.gpu_min, self.cap.gpu_min, self.cap.gpu_max),
                                 self.n_name: CapacityChange(None, self.cap.neuron_min, self.cap.neuron_max)},
                       announce=True)


def _minutes(delta: timedelta) -> int:
    return int(delta.total_seconds() // 60)


_TITLES: dict[str, str] = {
    "wait": "waiting for an endpoint update", "raise_gpu": "raising GPU capacity", "to_gpu": "traffic shifted to GPU",
    "give_up": "GPU capacity did not come up", "raise_neuron": "raising Neuron capacity",
    "canary": "canary back to Neuron", "canary_failed": "canary failed, traffic on GPU",
    "to_neuron": "traffic shifted to Neuron", "lower_gpu": "GPU capacity lowered",
    "both_failing": "both variants failing", "gpu_failing": "GPU variant failing under traffic",
    "adopt": "traffic found on GPU without a failover record",
}


def announcement(decision: Decision, step: str = "") -> tuple[str, str]:
    """Subject and message for the fleet's SNS topic; ``step`` names the recorded step (the same on a repeat)."""
    subject = f"neuronfleet: {decision.endpoint} {_TITLES.get(decision.action, decision.action)}"[:100]
    parts = [f"Endpoint {decision.endpoint}: {_TITLES.get(decision.action, decision.action)}."]
    if decision.weights:
        parts.append("Weights: " + ", ".join(f"{v}={w:g}" for v, w in sorted(decision.weights.items())) + ".")
    for variant, change in sorted(decision.capacity.items()):
        count = "" if change.count is None else f"{change.count} instance(s), "
        parts.append(f"{variant}: {count}scaling bounds {change.floor}-{change.ceiling}.")
    parts.append(f"Reason: {decision.reason}.")
    if step:
        parts.append(f"Step {step}.")
    return subject, " ".join(parts)


def error_announcement(endpoint: str, kind: str, detail: str, step: str = "") -> tuple[str, str]:
    """Subject and message for an endpoint the failover cannot evaluate (said once per kind of error)."""
    subject = f"neuronfleet: {endpoint} failover cannot check it"[:100]
    message = (f"Endpoint {endpoint}: the failover cannot check it ({kind}): {detail}. The other endpoints are "
               f"checked as usual; this one is not failed over until the error clears. Said once.")
    return subject, message + (f" Step {step}." if step else "")


# ---------------------------------------------------------------------------------------- the outbox


@dataclass(frozen=True)
class Intent:
    """A step recorded before it is taken (the outbox): the changes it makes, the announcement it owes and the
    record to keep once announced. It stays in the endpoint's state item until a run has published it: the run that
    recorded it, or a later one that finds the changes made (:func:`applied`) and completes it. A step whose changes
    are not found was not taken: it is dropped unannounced and decided afresh."""

    id: str
    """``<endpoint>#<version>``: the item version that recorded it. Repeated in the message."""
    action: str
    record: Record
    """The record to keep once the step is announced."""
    subject: str = ""
    """Empty: nothing to announce."""
    message: str = ""
    weights: Mapping[str, float] = field(default_factory=dict)
    capacity: Mapping[str, CapacityChange] = field(default_factory=dict)

    @classmethod
    def of(cls, decision: Decision, step: str) -> Intent:
        subject, message = announcement(decision, step) if decision.announce else ("", "")
        return cls(id=step, action=decision.action, record=decision.record, subject=subject, message=message,
                   weights=dict(decision.weights), capacity=dict(decision.capacity))

    @classmethod
    def error(cls, endpoint: str, kind: str, detail: str, record: Record, step: str) -> Intent:
        subject, message = error_announcement(endpoint, kind, detail, step)
        return cls(id=step, action="error", record=replace(record, error=kind), subject=subject, message=message)

    def to_json(self) -> str:
        return json.dumps({"id": self.id, "action": self.action, "record": self.record.encode(),
                           "subject": self.subject, "message": self.message, "weights": dict(self.weights),
                           "capacity": {v: [c.count, c.floor, c.ceiling, c.up] for v, c in self.capacity.items()}},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Intent:
        """The intent a run recorded; ValueError naming what is wrong if it cannot be read."""
        try:
            doc = json.loads(text)
            return cls(id=str(doc["id"]), action=str(doc["action"]), record=Record.decode(doc["record"]),
                       subject=str(doc["subject"]), message=str(doc["message"]),
                       weights={str(v): float(w) for v, w in doc["weights"].items()},
                       capacity={str(v): CapacityChange(None if c[0] is None else int(c[0]), int(c[1]), int(c[2]),
                                                        bool(c[3])) for v, c in doc["capacity"].items()})
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise ValueError(f"unreadable failover intent {text[:200]!r}: {exc!r}") from None

    @property
    def changes(self) -> bool:
        return bool(self.weights or self.capacity)


def applied(intent: Intent, endpoint: EndpointState, bounds: Mapping[str, tuple[int, int] | None]) -> bool:
    """Whether ``endpoint`` shows every change of ``intent``: its desired weights, its desired instance counts and
    the scaling bounds of its registered variants (``bounds``: variant -> (min, max), None if not registered). A
    raise of a registered variant is its bounds alone (Application Auto Scaling moves the count)."""
    for name, weight in intent.weights.items():
        variant = endpoint.variants.get(name)
        if variant is None or abs(variant.weight - weight) > 1e-9:
            return False
    for name, change in intent.capacity.items():
        variant, registered = endpoint.variants.get(name), bounds.get(name)
        if variant is None or (registered is not None and registered != (change.floor, change.ceiling)):
            return False
        count_set = change.count is not None and not (registered is not None and change.up)
        if count_set and variant.desired_instances != change.count:
            return False
    return True
