"""Lambda entry point: on an alarm state change of a watched endpoint, or on the schedule, decide and shift.

Configuration (environment): FAILOVER_ENDPOINTS, a JSON object {endpoint name: [alarm names]};
ALERTS_TOPIC_ARN; RECOVERY_MINUTES and MIN_DWELL_MINUTES (hysteresis).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from .adapters import Alarms, SageMakerEndpoints, Topic
from .logic import Decision, NoGpuVariant, Policy, announcement, decide

logger = Logger(service="neuronfleet-failover")
NAMESPACE = "NeuronFleet/Failover"
metrics = Metrics(namespace=NAMESPACE, service="neuronfleet-failover")


def watched(event: dict[str, Any], config: dict[str, list[str]]) -> list[str]:
    """Endpoints to evaluate: the one whose alarm changed, or all of them on the schedule."""
    if event.get("source") == "aws.cloudwatch":
        alarm = (event.get("detail") or {}).get("alarmName")
        hits = [name for name, alarms in config.items() if alarm in alarms]
        if not hits:
            logger.warning("alarm is not watched", extra={"alarm": alarm})
        return hits
    return list(config)


def run(event: dict[str, Any], *, config: dict[str, list[str]], endpoints: SageMakerEndpoints, alarms: Alarms,
        topic: Topic, policy: Policy, now: datetime) -> list[dict[str, str]]:
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


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> list[dict[str, str]]:
    policy = Policy(recovery=timedelta(minutes=int(os.environ.get("RECOVERY_MINUTES", "15"))),
                    min_dwell=timedelta(minutes=int(os.environ.get("MIN_DWELL_MINUTES", "10"))))
    return run(event, config=json.loads(os.environ["FAILOVER_ENDPOINTS"]),
               endpoints=SageMakerEndpoints(boto3.client("sagemaker")),
               alarms=Alarms(boto3.client("cloudwatch")),
               topic=Topic(boto3.client("sns"), os.environ["ALERTS_TOPIC_ARN"]),
               policy=policy, now=datetime.now(UTC))
