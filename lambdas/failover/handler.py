"""Lambda entry point: on an alarm state change of a watched endpoint, or on the schedule, decide one step and take it.

Configuration: :class:`neuronfleet_contract.failover.FailoverConfig` (read once per container).
Metrics: ``FAILOVER_NAMESPACE``; the health counts (``FailoverErrors``, ``MalformedEvents``) per fleet
(neuronfleet_contract.health: ``service`` and, given ``FLEET``, ``Fleet``).
The function runs with reserved concurrency 1; overlapping runs (a retry, a second invocation) are kept apart by the
state item's version all the same.

Each endpoint is checked on its own: an error on one (deleted, alarms deleted, throttled, no GPU variant) is logged,
counted (``FailoverErrors``) and announced once per kind; the others go on. An event that is not one the rules send is
refused with a log line and a count (``MalformedEvents``), never a crash.

Exactly once, per step (see logic.Intent):

1. the step is recorded in the endpoint's state item first, with the record to keep, the announcement it owes and a
   lease (a write conditional on the version read: of two overlapping runs one records it, the other stops);
2. the changes are made; 3. the announcement is published from the record; 4. the record is kept and the step cleared
   (conditional again; retried in the run).

A run whose change fails checks the endpoint: change not made, the step is dropped (and the error said); made (its
answer lost), the step goes on. A run whose publish fails releases its lease; one that dies (a timeout) leaves it to
expire. The next run finds the step: if the endpoint shows its changes (``logic.applied``) it publishes and clears it;
if not, the step was not taken, is dropped unannounced and decided afresh. Nothing changed goes unannounced and no
step is announced twice, with one window left: a run that dies after SNS accepted the message and before the one
write that clears the step (or whose in-run retries of that write all fail) has it published again by the run that
completes it, with the same ``Step <endpoint>#<version>`` in the message.

The state store down (the item cannot be read, or DynamoDB refuses the step's record): the safe default,
``logic.decide_without_state``. Traffic moves to a healthy GPU variant that already has the instances for the load
(announced by the run that moves it, no step id); nothing else changes (no capacity, no move back). The check counts
as an error (``FailoverErrors``: the blind alarm after 15 minutes). With its table back, the next check finds the
traffic on GPU without a record and takes it over (``adopt``, announced). A move whose announcement fails is said
only by that take-over.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError
from neuronfleet_runtime.fleet_metrics import per_fleet

from neuronfleet_contract import failover as contract
from neuronfleet_contract import namespaces
from neuronfleet_contract.failover import FailoverConfig, WatchedEndpoint

from .adapters import Alarms, CanaryMetrics, SageMakerEndpoints, Scaling, States, Stored, Topic
from .logic import (
    Decision,
    Intent,
    NoGpuVariant,
    Policy,
    Record,
    announcement,
    applied,
    decide,
    decide_without_state,
    needs_evidence,
)

SERVICE = contract.SERVICE
NAMESPACE = namespaces.FAILOVER_NAMESPACE
logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)

METRIC_BY_ACTION = {
    "to_gpu": "TrafficShiftsToGpu", "to_neuron": "TrafficShiftsToNeuron", "raise_gpu": "GpuCapacityRaises",
    "raise_neuron": "NeuronCapacityRaises", "give_up": "FailoverGiveUps", "canary": "Canaries",
    "canary_failed": "CanaryFailures", "lower_gpu": "GpuCapacityLowered", "wait": "UpdateWaits",
    "both_failing": "BothVariantsFailing", "gpu_failing": "GpuVariantFailing", "adopt": "TakeOvers",
}
"""The count each step adds (dimension ``Endpoint``), in ``FAILOVER_NAMESPACE``."""
ERRORS_METRIC = contract.ERRORS_METRIC
"""An endpoint that could not be checked (dimensions ``service`` and ``Fleet``: neuronfleet_contract.health); the
endpoint and the error are in the log line."""
REFUSED_METRIC = contract.MALFORMED_METRIC
"""An event that is not one the failover's rules send (dimensions ``service`` and ``Fleet``)."""
DEFAULT_LEASE = timedelta(minutes=15)
"""The lease without a Lambda context: Lambda's longest timeout, "the maximum allowed value is 900 seconds" (botocore
1.44.5 lambda CreateFunction ``Timeout`` documentation, read 2026-11-23; its model's max, 5,400, is for Lambda Managed
Instances). In the function the lease is the run's own remaining time plus :data:`LEASE_MARGIN`."""
LEASE_MARGIN = timedelta(seconds=30)
"""Added to the run's remaining time: its lease ends only after the run can no longer be working."""
COMMIT_ATTEMPTS = 3
"""Tries of the write that clears a published step, before the run gives up (the next run completes it)."""
ENDPOINT_NOT_FOUND = "Could not find endpoint "
"""How SageMaker's ValidationException for an endpoint that does not exist begins: ``Could not find endpoint
"arn:aws:sagemaker:<region>:<account>:endpoint/<name>".`` (AWS's answer to DeleteEndpoint quoted in
aws/amazon-sagemaker-examples issue 2402, 2021-05-14; moto 5.2.5's DescribeEndpoint: ``Could not find endpoint
'<arn>'.``; read 2026-11-23). DescribeEndpoint's own text on AWS is not confirmed here: any other error is announced
under its code all the same."""


class Refused(ValueError):
    """An event the failover does not act on: what is wrong with it."""


class AlarmsMissing(LookupError):
    """Some of an endpoint's alarms do not exist (deleted out of band): its health cannot be judged."""


@dataclass(frozen=True)
class Adapters:
    endpoints: SageMakerEndpoints
    alarms: Alarms
    states: States
    scaling: Scaling
    canary: CanaryMetrics
    topic: Topic


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:120]


def watched(event: Any, config: Mapping[str, WatchedEndpoint]) -> list[str]:
    """Endpoints to evaluate: those whose alarm changed, or all of them on the schedule. :class:`Refused` for an
    event the rules do not send (naming the field, the value and what is allowed)."""
    if not isinstance(event, Mapping):
        raise Refused(f"event: got {_shown(event)}; allowed: an EventBridge event (a JSON object)")
    source = event.get("source")
    if source == "aws.events":  # the schedule
        return list(config)
    if source != "aws.cloudwatch":
        raise Refused(f"source: got {_shown(source)}; allowed: 'aws.cloudwatch' (CloudWatch Alarm State Change) or "
                      f"'aws.events' (Scheduled Event)")
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        raise Refused(f"detail: got {_shown(detail)}; allowed: an object with alarmName (CloudWatch Alarm State Change)")
    alarm = detail.get("alarmName")
    if not isinstance(alarm, str) or not alarm:
        raise Refused(f"detail.alarmName: got {_shown(alarm)}; allowed: the name of an alarm")
    hits = [name for name, e in config.items() if alarm in e.alarms or alarm in e.gpu_alarms]
    if not hits:
        logger.warning("alarm is not watched", extra={"alarm": alarm})
    return hits


def run(event: Any, *, config: Mapping[str, WatchedEndpoint], aws: Adapters, policy: Policy, now: datetime,
        lease_until: datetime | None = None) -> list[dict[str, str]]:
    """Check each endpoint the event names, each on its own."""
    try:
        names = watched(event, config)
    except Refused as exc:
        logger.warning("event refused", extra={"reason": str(exc)})
        metrics.add_metric(name=REFUSED_METRIC, unit=MetricUnit.Count, value=1)
        return [{"endpoint": "", "action": "refused", "reason": str(exc)}]
    lease = lease_until or now + DEFAULT_LEASE
    results = []
    for name in names:
        try:
            results.append(Check(name, config[name], aws, policy, now, lease).run())
        except Exception as exc:  # one endpoint's error never stops the others
            results.append(_failed(name, exc, aws, now, lease))
    return results


def _error_kind(exc: Exception) -> tuple[str, str]:
    """A short kind (said once per kind) and the detail."""
    if isinstance(exc, NoGpuVariant):
        return "no-gpu-variant", str(exc)
    if isinstance(exc, AlarmsMissing):
        return "alarms-missing", str(exc)
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code, message = str(error.get("Code", "ClientError")), str(error.get("Message", exc))
        if message.startswith(ENDPOINT_NOT_FOUND) and not message.startswith(f"{ENDPOINT_NOT_FOUND}config"):
            return "endpoint-not-found", message
        return code, f"{exc.operation_name}: {code}: {message}"
    return type(exc).__name__, str(exc)


def _failed(name: str, exc: Exception, aws: Adapters, now: datetime, lease: datetime) -> dict[str, str]:
    """Log and count the error, and announce it once per kind (the kind is kept in the endpoint's record)."""
    kind, detail = _error_kind(exc)
    logger.exception("endpoint not checked", extra={"endpoint": name, "error": kind})
    metrics.add_metric(name=ERRORS_METRIC, unit=MetricUnit.Count, value=1)
    try:
        stored = aws.states.get(name)
        if stored.record.error == kind or (stored.lease_until is not None and stored.lease_until > now):
            return {"endpoint": name, "action": "error", "reason": detail}
        if stored.intent is not None:  # a step owes its announcement: the next run completes it, unless it cannot
            if kind != "endpoint-not-found":
                return {"endpoint": name, "action": "error", "reason": detail}
            detail += f" (an unfinished step, {stored.intent.id} {stored.intent.action}, could not be checked)"
        intent = Intent.error(name, kind, detail, stored.record, step=f"{name}#{stored.version + 1}")
        if aws.states.write(name, stored.version, stored.record, intent, lease):
            _complete(name, stored.version + 1, intent, aws)
    except Exception:  # the error is logged and counted already; the next run says it
        logger.exception("error not announced", extra={"endpoint": name, "error": kind})
    return {"endpoint": name, "action": "error", "reason": detail}


def _complete(name: str, version: int, intent: Intent, aws: Adapters) -> None:
    """Publish the step's announcement from the record, then keep its record and clear it (item at ``version``)."""
    _publish(intent, aws)
    _commit(name, version, intent, aws)


def _publish(intent: Intent, aws: Adapters) -> None:
    if intent.subject:
        aws.topic.announce(intent.subject, intent.message)


def _commit(name: str, version: int, intent: Intent, aws: Adapters) -> None:
    for attempt in range(1, COMMIT_ATTEMPTS + 1):
        try:
            if not aws.states.write(name, version, intent.record):  # an earlier try took effect, or another run
                logger.warning("the item moved on after this run published its step", extra={"endpoint": name,
                                                                                           "step": intent.id})
            return
        except (ClientError, BotoCoreError):
            if attempt == COMMIT_ATTEMPTS:
                raise
            logger.warning("step published, clearing it failed; trying again", extra={"endpoint": name,
                                                                                       "step": intent.id})


class Check:
    """One endpoint, one check: complete a step a run left, or decide one and take it."""

    def __init__(self, name: str, watched_endpoint: WatchedEndpoint, aws: Adapters, policy: Policy, now: datetime,
                 lease: datetime) -> None:
        self.name, self.watched, self.aws, self.policy, self.now, self.lease = \
            name, watched_endpoint, aws, policy, now, lease

    def _result(self, action: str, reason: str) -> dict[str, str]:
        return {"endpoint": self.name, "action": action, "reason": reason}

    def run(self) -> dict[str, str]:
        endpoint = self.aws.endpoints.get(self.name)
        try:
            stored = self.aws.states.get(self.name)
        except (ClientError, BotoCoreError) as exc:
            return self._without_state(endpoint, exc)
        if stored.intent is not None:
            if stored.lease_until is not None and stored.lease_until > self.now:
                return self._busy(f"a run is taking step {stored.intent.id} ({stored.intent.action}) until "
                                  f"{stored.lease_until.isoformat()}")
            intent = stored.intent
            if not self.aws.states.write(self.name, stored.version, stored.record, intent, self.lease):
                return self._busy(f"another run took over step {intent.id}")
            version = stored.version + 1
            bounds = {v: self.aws.scaling.bounds(self.name, v) for v in intent.capacity}
            if applied(intent, endpoint, bounds):
                _complete(self.name, version, intent, self.aws)
                logger.info("completed a recorded step", extra={"endpoint": self.name, "step": intent.id,
                                                                 "action": intent.action})
                return self._result(intent.action, f"completed step {intent.id}: {intent.subject or 'no announcement'}")
            logger.info("a recorded step was not taken: dropped, deciding afresh",
                        extra={"endpoint": self.name, "step": intent.id, "action": intent.action})
            if not self.aws.states.write(self.name, version, stored.record):
                return self._busy(f"another run took over after step {intent.id}")
            stored = Stored(record=stored.record, version=version + 1)
        return self._decide(endpoint, stored)

    def _busy(self, reason: str) -> dict[str, str]:
        logger.info("endpoint busy", extra={"endpoint": self.name, "reason": reason})
        return self._result("busy", reason)

    def _alarms(self) -> dict[str, Any]:
        names = (*self.watched.alarms, *self.watched.gpu_alarms)
        states = {a.name: a for a in self.aws.alarms.get(names)}
        missing = [n for n in names if n not in states]
        if missing:
            raise AlarmsMissing(f"alarms not found: {', '.join(missing)} (deleted out of band?); redeploy the stack "
                                f"to restore them")
        return states

    def _without_state(self, endpoint: Any, exc: Exception) -> dict[str, str]:
        """The safe default while the state store is down (the module's docstring)."""
        kind, detail = _error_kind(exc)
        logger.warning("state store unavailable: the safe default (a move to a healthy GPU variant only)",
                       extra={"endpoint": self.name, "error": kind, "detail": detail})
        metrics.add_metric(name=ERRORS_METRIC, unit=MetricUnit.Count, value=1)
        states = self._alarms()
        decision = decide_without_state(endpoint, [states[n] for n in self.watched.alarms], self.now,
                                        self.watched.capacity, why=detail, policy=self.policy,
                                        gpu_alarms=[states[n] for n in self.watched.gpu_alarms])
        if decision.weights and self.aws.endpoints.get(self.name).variants[self.policy.neuron_variant].weight == 0:
            decision = replace(decision, action="hold", reason="another run moved the traffic to GPU first",
                               weights={}, announce=False)  # no item to hold a lease: the endpoint read again
        if decision.weights:
            self.aws.endpoints.set_weights(self.name, decision.weights)
            self.aws.topic.announce(*announcement(decision))
            with single_metric(name=METRIC_BY_ACTION.get(decision.action, "FailoverSteps"), unit=MetricUnit.Count,
                               value=1, namespace=NAMESPACE) as metric:
                metric.add_dimension(name="Endpoint", value=self.name)
        logger.info("failover step without state", extra={"endpoint": self.name, "action": decision.action,
                                                          "reason": decision.reason})
        return self._result(decision.action, decision.reason)

    def _decide(self, endpoint: Any, stored: Stored) -> dict[str, str]:
        states = self._alarms()
        record = replace(stored.record, error="")  # a clean check clears an announced error
        evidence = None
        if needs_evidence(record) and record.since is not None:
            evidence = self.aws.canary.read(self.name, self.policy.neuron_variant, record.since, self.now)
        decision = decide(endpoint, [states[n] for n in self.watched.alarms], record, self.now,
                          self.watched.capacity, latency_limit_ms=self.watched.latency_limit_ms, evidence=evidence,
                          policy=self.policy, gpu_alarms=[states[n] for n in self.watched.gpu_alarms])
        log = {"endpoint": self.name, "action": decision.action, "reason": decision.reason,
               "phase": decision.record.phase}
        if not decision.changes and not decision.announce:
            if decision.record != stored.record and not self.aws.states.write(self.name, stored.version,
                                                                              decision.record):
                return self._busy("another run wrote the record")
            logger.info("holding" if decision.action == "hold" else "no change", extra=log)
            return self._result(decision.action, decision.reason)
        return self._take(endpoint, decision, stored, log)

    def _take(self, endpoint: Any, decision: Decision, stored: Stored, log: dict[str, Any]) -> dict[str, str]:
        intent = Intent.of(decision, step=f"{self.name}#{stored.version + 1}")
        try:
            recorded = self.aws.states.write(self.name, stored.version, stored.record, intent, self.lease)
        except ClientError as exc:  # DynamoDB answered no: nothing was written (a timeout is not this)
            return self._without_state(endpoint, exc)
        if not recorded:
            return self._busy("another run recorded a step first")
        version = stored.version + 1
        try:
            _act(decision, self.aws)
        except Exception:
            shown = self._shows(intent)
            if shown is None:  # cannot tell: the next run looks again
                self._release(version, stored.record, intent)
                raise
            if not shown:  # not taken (or only in part): nothing to announce; the next run decides afresh
                self._drop(version, stored.record, intent)
                raise
            logger.warning("a change raised but the endpoint shows it: completing the step",
                           extra={"endpoint": self.name, "step": intent.id})
        try:
            _publish(intent, self.aws)
        except Exception:
            self._release(version, stored.record, intent)
            raise
        _commit(self.name, version, intent, self.aws)  # published: no release (the lease runs out; see above)
        logger.info("failover step", extra={**log, "step": intent.id, "weights": dict(decision.weights),
                                            "capacity": {v: vars(c) for v, c in decision.capacity.items()}})
        with single_metric(name=METRIC_BY_ACTION.get(decision.action, "FailoverSteps"), unit=MetricUnit.Count,
                           value=1, namespace=NAMESPACE) as metric:
            metric.add_dimension(name="Endpoint", value=self.name)
        return self._result(decision.action, decision.reason)

    def _shows(self, intent: Intent) -> bool | None:
        """Whether the endpoint shows the step's changes; None if it cannot be read."""
        try:
            endpoint = self.aws.endpoints.get(self.name)
            return applied(intent, endpoint, {v: self.aws.scaling.bounds(self.name, v) for v in intent.capacity})
        except Exception:
            logger.exception("endpoint not read after a failed change", extra={"endpoint": self.name})
            return None

    def _drop(self, version: int, record: Record, intent: Intent) -> None:
        """Clear a step whose changes were not made (its lease runs out on its own if this write fails)."""
        try:
            self.aws.states.write(self.name, version, record)
        except Exception:
            logger.exception("step not cleared", extra={"endpoint": self.name, "step": intent.id})

    def _release(self, version: int, record: Record, intent: Intent) -> None:
        """End this run's lease on a step it could not finish, so that the next run completes or drops it."""
        try:
            self.aws.states.write(self.name, version, record, intent, self.now)
        except Exception:  # the lease then runs out on its own
            logger.exception("lease not released", extra={"endpoint": self.name, "step": intent.id})


def _act(decision: Decision, aws: Adapters) -> None:
    """Capacity, then weights. A decision carries at most one count or one weight change: SageMaker takes one
    update at a time.

    A variant registered with Application Auto Scaling gets its bounds first (RegisterScalableTarget: "it changes
    the resource's current capacity to a value that is inside of this range", Application Auto Scaling API
    reference, RegisterScalableTarget, read 2026-11-22), so a raise is its floor alone and target tracking cannot
    scale in below it; a lowering then sets DesiredInstanceCount (UpdateEndpointWeightsAndCapacities). A variant
    that is not registered gets DesiredInstanceCount only."""
    name = decision.endpoint
    for variant, change in sorted(decision.capacity.items()):
        registered = aws.scaling.set_bounds(name, variant, change.floor, change.ceiling)
        if not registered:
            logger.info("variant not registered with Application Auto Scaling; instance count only",
                        extra={"endpoint": name, "variant": variant})
        if change.count is not None and not (registered and change.up):
            aws.endpoints.set_instances(name, variant, change.count)
    if decision.weights:
        aws.endpoints.set_weights(name, decision.weights)


@dataclass(frozen=True)
class Container:
    """What one Lambda container builds once: its settings and its adapters."""

    settings: FailoverConfig
    aws: Adapters


@cache
def container() -> Container:
    settings = FailoverConfig.from_environment()
    sagemaker, cloudwatch = boto3.client("sagemaker"), boto3.client("cloudwatch")
    return Container(settings=settings, aws=Adapters(
        endpoints=SageMakerEndpoints(sagemaker), alarms=Alarms(cloudwatch),
        states=States(boto3.client("dynamodb"), settings.state_table),
        scaling=Scaling(boto3.client("application-autoscaling")), canary=CanaryMetrics(cloudwatch),
        topic=Topic(boto3.client("sns"), settings.topic_arn)))


@logger.inject_lambda_context
@metrics.log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> list[dict[str, str]]:
    per_fleet(metrics)
    c = container()
    now = datetime.now(UTC)
    lease = now + timedelta(milliseconds=context.get_remaining_time_in_millis()) + LEASE_MARGIN
    return run(event.raw_event, config=c.settings.endpoints, aws=c.aws, policy=c.settings.policy, now=now,
               lease_until=lease)
