"""Lambda entry point: on an alarm state change of a watched endpoint, or on the schedule, decide one step and take it.

Configuration: :class:`~.settings.FailoverSettings` (read once per container). Metrics: ``FAILOVER_NAMESPACE``.
The function runs with reserved concurrency 1: one decision at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from ._shared import namespaces
from .adapters import Alarms, CanaryMetrics, Records, SageMakerEndpoints, Scaling, Topic
from .logic import Decision, NoGpuVariant, Policy, announcement, decide, needs_evidence
from .settings import FailoverSettings, WatchedEndpoint

SERVICE = "neuronfleet-failover"
NAMESPACE = namespaces.FAILOVER_NAMESPACE
logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)

METRIC_BY_ACTION = {
    "to_gpu": "TrafficShiftsToGpu", "to_neuron": "TrafficShiftsToNeuron", "raise_gpu": "GpuCapacityRaises",
    "raise_neuron": "NeuronCapacityRaises", "give_up": "FailoverGiveUps", "canary": "Canaries",
    "canary_failed": "CanaryFailures", "lower_gpu": "GpuCapacityLowered", "wait": "UpdateWaits",
}
"""The count each step adds (dimension ``Endpoint``), in ``FAILOVER_NAMESPACE``."""


@dataclass(frozen=True)
class Adapters:
    endpoints: SageMakerEndpoints
    alarms: Alarms
    records: Records
    scaling: Scaling
    canary: CanaryMetrics
    topic: Topic


def watched(event: Mapping[str, Any], config: Mapping[str, WatchedEndpoint]) -> list[str]:
    """Endpoints to evaluate: the one whose alarm changed, or all of them on the schedule."""
    if event.get("source") == "aws.cloudwatch":
        alarm = (event.get("detail") or {}).get("alarmName")
        hits = [name for name, e in config.items() if alarm in e.alarms]
        if not hits:
            logger.warning("alarm is not watched", extra={"alarm": alarm})
        return hits
    return list(config)


def run(event: Mapping[str, Any], *, config: Mapping[str, WatchedEndpoint], aws: Adapters, policy: Policy,
        now: datetime) -> list[dict[str, str]]:
    results = []
    for name in watched(event, config):
        try:
            decision = evaluate(name, config[name], aws, policy, now)
        except NoGpuVariant as exc:
            logger.error(str(exc), extra={"endpoint": name})
            metrics.add_metric(name="FailoverErrors", unit=MetricUnit.Count, value=1)
            results.append({"endpoint": name, "action": "error", "reason": str(exc)})
            continue
        results.append({"endpoint": name, "action": decision.action, "reason": decision.reason})
    return results


def evaluate(name: str, watched_endpoint: WatchedEndpoint, aws: Adapters, policy: Policy, now: datetime) -> Decision:
    """Read the endpoint, its alarms and record (and the canary's evidence when it needs it), decide, act."""
    endpoint = aws.endpoints.get(name)
    record = aws.records.get(endpoint.arn)
    evidence = None
    if needs_evidence(record) and record.since is not None:
        evidence = aws.canary.read(name, policy.neuron_variant, record.since, now)
    decision = decide(endpoint, aws.alarms.get(watched_endpoint.alarms), record, now, watched_endpoint.capacity,
                      latency_limit_ms=watched_endpoint.latency_limit_ms, evidence=evidence, policy=policy)
    log = {"endpoint": name, "action": decision.action, "reason": decision.reason, "phase": decision.record.phase}
    if decision.action in ("hold",):
        logger.info("holding", extra=log)
    else:
        _act(decision, aws)
        logger.info("failover step", extra={**log, "weights": dict(decision.weights),
                                            "capacity": {v: vars(c) for v, c in decision.capacity.items()}})
        with single_metric(name=METRIC_BY_ACTION[decision.action], unit=MetricUnit.Count, value=1,
                           namespace=NAMESPACE) as metric:
            metric.add_dimension(name="Endpoint", value=name)
    if decision.announce:
        aws.topic.announce(*announcement(decision))
    if decision.record != record:
        aws.records.put(endpoint.arn, decision.record)
    return decision


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

    settings: FailoverSettings
    aws: Adapters


@cache
def container() -> Container:
    settings = FailoverSettings.from_environment()
    sagemaker, cloudwatch = boto3.client("sagemaker"), boto3.client("cloudwatch")
    return Container(settings=settings, aws=Adapters(
        endpoints=SageMakerEndpoints(sagemaker), alarms=Alarms(cloudwatch), records=Records(sagemaker),
        scaling=Scaling(boto3.client("application-autoscaling")), canary=CanaryMetrics(cloudwatch),
        topic=Topic(boto3.client("sns"), settings.topic_arn)))


@logger.inject_lambda_context
@metrics.log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> list[dict[str, str]]:
    c = container()
    return run(event, config=c.settings.endpoints, aws=c.aws, policy=c.settings.policy, now=datetime.now(UTC))
