"""Lambda entry point for Trainium capacity events (EventBridge). Environment: GPU_POOL (JSON), ALERTS_TOPIC_ARN."""

from __future__ import annotations

import json
import os
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from .logic import GpuPool, GpuType, UnknownEvent, alert

logger = Logger(service="neuronfleet-capacity")
metrics = Metrics(namespace="NeuronFleet/Failover", service="neuronfleet-capacity")


def load_pool(raw: str) -> GpuPool:
    doc = json.loads(raw)
    return GpuPool(queue_arn=doc["queue_arn"], types=[GpuType(**t) for t in doc["types"]],
                   max_vcpus=int(doc["max_vcpus"]), cuda_only_workloads=doc.get("cuda_only_workloads", []))


def run(event: dict[str, Any], *, pool: GpuPool, sns: Any, topic_arn: str) -> dict[str, str]:
    try:
        message = alert(event, pool)
    except UnknownEvent as exc:
        logger.warning(str(exc))
        metrics.add_metric(name="UnknownCapacityEvents", unit=MetricUnit.Count, value=1)
        return {"action": "ignored", "reason": str(exc)}
    sns.publish(TopicArn=topic_arn, Subject=message.subject, Message=message.message)
    logger.info("capacity event announced", extra={"subject": message.subject})
    metrics.add_metric(name="CapacityEvents", unit=MetricUnit.Count, value=1)
    return {"action": "announced", "subject": message.subject}


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, str]:
    return run(event, pool=load_pool(os.environ["GPU_POOL"]), sns=boto3.client("sns"),
               topic_arn=os.environ["ALERTS_TOPIC_ARN"])
