"""Lambda entry point: on an alarm state change of a watched endpoint, or on the schedule, decide and shift.

Configuration: :class:`~.settings.FailoverSettings` (read once per container). Metrics: ``FAILOVER_NAMESPACE``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
from .adapters import Alarms, SageMakerEndpoints, Topic
from .logic import Decision, NoGpuVariant, Policy, announcement, decide
from .settings import FailoverSettings

SERVICE = "neuronfleet-failover"
NAMESPACE = namespaces.FAILOVER_NAMESPACE
logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)


def watched(event: Mapping[str, Any], config: Mapping[str, Sequence[str]]) -> list[str]:
    """Endpoints to evaluate: the one whose alarm changed, or all of them on the schedule."""
    if event.get("source") == "aws.cloudwatch":
        alarm = (event.get("detail") or {}).get("alarmName")
        hits = [name for name, alarms in config.items() if alarm in alarms]
        if not hits:
            logger.warning("alarm is not watched", extra={"alarm": alarm})
        return hits
    return list(config)


def run(event: Mapping[str, Any], *, config: Mapping[str, Sequence[str]], endpoints: SageMakerEndpoints,
        alarms: Alarms, topic: Topic, policy: Policy, now: datetime) -> list[dict[str, str]]:
    results = []
    for name in watched(event, config):
        try:
            decision = decide(endpoints.get(name), alarms.get(config[name]), now, policy)
        except NoGpuVariant as exc:
            logger.error(str(exc), extra={"endpoint": name})
            metrics.add_metric(name="FailoverErrors", unit=MetricUnit.Count, value=1)
            results.append({"endpoint": name, "action": "error", "reason": str(exc)})
            continue
        if decision.shifts:
            _shift(decision, endpoints, topic)
        else:
            logger.info("holding", extra={"endpoint": name, "reason": decision.reason})
        results.append({"endpoint": name, "action": decision.action, "reason": decision.reason})
    return results


def _shift(decision: Decision, endpoints: SageMakerEndpoints, topic: Topic) -> None:
    endpoints.set_weights(decision.endpoint, decision.weights)
    logger.info("traffic shifted", extra={"endpoint": decision.endpoint, "action": decision.action,
                                          "weights": dict(decision.weights), "reason": decision.reason})
    name = "TrafficShiftsToGpu" if decision.action == "to_gpu" else "TrafficShiftsToNeuron"
    with single_metric(name=name, unit=MetricUnit.Count, value=1, namespace=NAMESPACE) as metric:
        metric.add_dimension(name="Endpoint", value=decision.endpoint)
    topic.announce(*announcement(decision))


@dataclass(frozen=True)
class Container:
    """What one Lambda container builds once: its settings and its adapters."""

    settings: FailoverSettings
    endpoints: SageMakerEndpoints
    alarms: Alarms
    topic: Topic


@cache
def container() -> Container:
    settings = FailoverSettings.from_environment()
    return Container(settings=settings, endpoints=SageMakerEndpoints(boto3.client("sagemaker")),
                     alarms=Alarms(boto3.client("cloudwatch")), topic=Topic(boto3.client("sns"), settings.topic_arn))


@logger.inject_lambda_context
@metrics.log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> list[dict[str, str]]:
    c = container()
    return run(event, config=c.settings.endpoints, endpoints=c.endpoints, alarms=c.alarms, topic=c.topic,
               policy=c.settings.policy, now=datetime.now(UTC))
