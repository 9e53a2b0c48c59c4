"""Hourly waste detector: idle NeuronCores on paid capacity, and Capacity Blocks ending soon.

Environment: ALERTS_TOPIC_ARN, NEURON_NAMESPACE (default NeuronFleet/Neuron), UTILIZATION_METRIC
(default NeuronCoreUtilization, dimension InstanceId), IDLE_PERCENT (20), IDLE_HOURS (6).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from aws_lambda_powertools import Logger

logger = Logger(service="neuronfleet-waste")

WARN_BEFORE = (timedelta(hours=24), timedelta(hours=1))
TERMINATION_LEAD = timedelta(minutes=30)
"""Instances on a Capacity Block are terminated from 30 minutes before the block ends."""


@dataclass(frozen=True)
class Block:
    reservation_id: str
    instance_type: str
    count: int
    end: datetime


def idle_instances(hourly: Mapping[str, Sequence[float]], *, threshold: float, hours: int) -> list[tuple[str, float]]:
    """Instances whose every one of the last ``hours`` hourly averages is below ``threshold`` percent.
    An instance with fewer datapoints than ``hours`` is not judged (no evidence either way)."""
    out = []
    for instance, values in sorted(hourly.items()):
        recent = list(values)[-hours:]
        if len(recent) == hours and max(recent) < threshold:
            out.append((instance, round(sum(recent) / hours, 1)))
    return out


def ending_blocks(blocks: Sequence[Block], now: datetime, every: timedelta = timedelta(hours=1)) -> list[tuple[Block, str]]:
    """Blocks crossing a warning point (24 h, 1 h before the end) within this run's window (``every``),
    so an hourly schedule warns once per point."""
    out = []
    for block in blocks:
        left = block.end - now
        for lead in WARN_BEFORE:
            if lead - every < left <= lead:
                out.append((block, f"{int(lead.total_seconds() // 3600)}h"))
    return out


def messages(idle: Sequence[tuple[str, float]], ending: Sequence[tuple[Block, str]], *, threshold: float,
             hours: int) -> list[tuple[str, str]]:
    out = []
    if idle:
        lines = [f"- {i}: {avg}% average NeuronCore utilisation" for i, avg in idle]
        out.append((f"neuronfleet: {len(idle)} idle Neuron instance(s)",
                    f"NeuronCore utilisation below {threshold}% for the last {hours} hours on paid capacity:\n"
                    + "\n".join(lines)))
    for block, point in ending:
        stop = block.end - TERMINATION_LEAD
        out.append((f"neuronfleet: Capacity Block {block.reservation_id} ends in {point}",
                    f"Capacity Block {block.reservation_id} ({block.count} x {block.instance_type}) ends at "
                    f"{block.end.isoformat()}. Its instances are terminated from {stop.isoformat()} (30 minutes "
                    "before the end): checkpoint and drain before then."))
    return out


class Signals:
    def __init__(self, cloudwatch: Any, ec2: Any, namespace: str, metric: str) -> None:
        self._cw, self._ec2, self._namespace, self._metric = cloudwatch, ec2, namespace, metric

    def hourly_utilisation(self, hours: int, now: datetime) -> dict[str, list[float]]:
        instances = []
        for page in self._cw.get_paginator("list_metrics").paginate(Namespace=self._namespace, MetricName=self._metric):
            for m in page.get("Metrics", []):
                dims = {d["Name"]: d["Value"] for d in m.get("Dimensions", [])}
                if "InstanceId" in dims:
                    instances.append(dims["InstanceId"])
        out: dict[str, list[float]] = {}
        for i in range(0, len(instances), 500):
            chunk = instances[i:i + 500]
            page = self._cw.get_metric_data(StartTime=now - timedelta(hours=hours), EndTime=now, ScanBy="TimestampAscending",
                                            MetricDataQueries=[{"Id": f"u{j}", "MetricStat": {"Metric": {
                                                "Namespace": self._namespace, "MetricName": self._metric,
                                                "Dimensions": [{"Name": "InstanceId", "Value": inst}]},
                                                "Period": 3600, "Stat": "Average"}} for j, inst in enumerate(chunk)])
            for result in page.get("MetricDataResults", []):
                out[chunk[int(result["Id"][1:])]] = [float(v) for v in result.get("Values", [])]
        return out

    def capacity_blocks(self) -> list[Block]:
        blocks = []
        for page in self._ec2.get_paginator("describe_capacity_reservations").paginate(
                Filters=[{"Name": "state", "Values": ["active"]}]):
            for r in page.get("CapacityReservations", []):
                if r.get("ReservationType") == "capacity-block" and r.get("EndDate"):
                    blocks.append(Block(r["CapacityReservationId"], r["InstanceType"], int(r["TotalInstanceCount"]),
                                        r["EndDate"]))
        return blocks


def run(*, now: datetime, signals: Signals, sns: Any, topic_arn: str, threshold: float, hours: int) -> list[str]:
    idle = idle_instances(signals.hourly_utilisation(hours, now), threshold=threshold, hours=hours)
    ending = ending_blocks(signals.capacity_blocks(), now)
    sent = []
    for subject, message in messages(idle, ending, threshold=threshold, hours=hours):
        sns.publish(TopicArn=topic_arn, Subject=subject[:100], Message=message)
        sent.append(subject)
    return sent


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> list[str]:
    sent = run(now=datetime.now(UTC), signals=Signals(
        boto3.client("cloudwatch"), boto3.client("ec2"), os.environ.get("NEURON_NAMESPACE", "NeuronFleet/Neuron"),
        os.environ.get("UTILIZATION_METRIC", "NeuronCoreUtilization")), sns=boto3.client("sns"),
        topic_arn=os.environ["ALERTS_TOPIC_ARN"], threshold=float(os.environ.get("IDLE_PERCENT", "20")),
        hours=int(os.environ.get("IDLE_HOURS", "6")))
    logger.info("waste check", extra={"announced": sent})
    return sent
