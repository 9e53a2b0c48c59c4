"""Thin boto3 adapters for the failover: SageMaker, Application Auto Scaling, CloudWatch, DynamoDB, SNS."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from neuronfleet_runtime import topic

from neuronfleet_contract.namespaces import AWS_SAGEMAKER_METRICS

from .logic import AlarmState, EndpointState, Evidence, Intent, Record, VariantStatus

Topic = topic.Topic
SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
"""Application Auto Scaling's dimension for a SageMaker variant's instance count (botocore
application-autoscaling/2016-02-06/service-2.json, ScalableDimension; read 2026-11-22)."""


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


class SageMakerEndpoints:
    def __init__(self, client: Any) -> None:
        self._client = client

    def get(self, name: str) -> EndpointState:
        """DescribeEndpoint: per ProductionVariantSummary, DesiredWeight/CurrentWeight, Current/DesiredInstanceCount
        and VariantStatus (present while SageMaker is Creating, Updating, Deleting, ActivatingTraffic or Baking the
        variant) (botocore sagemaker/2017-07-24/service-2.json, ProductionVariantSummary, read 2026-11-22)."""
        desc = self._client.describe_endpoint(EndpointName=name)
        variants = {}
        for v in desc.get("ProductionVariants", []):
            weight = v.get("DesiredWeight", v.get("CurrentWeight"))
            current = _count(v.get("CurrentInstanceCount"))
            variants[v["VariantName"]] = VariantStatus(
                name=v["VariantName"], weight=float(weight or 0.0), current_instances=current,
                desired_instances=_count(v.get("DesiredInstanceCount", current)),
                busy=bool(v.get("VariantStatus")))
        return EndpointState(name=name, status=desc["EndpointStatus"], variants=variants,
                             last_modified=desc["LastModifiedTime"], arn=desc.get("EndpointArn", ""))

    def set_weights(self, name: str, weights: Mapping[str, float]) -> None:
        self._client.update_endpoint_weights_and_capacities(
            EndpointName=name,
            DesiredWeightsAndCapacities=[{"VariantName": v, "DesiredWeight": w} for v, w in sorted(weights.items())])

    def set_instances(self, name: str, variant: str, count: int) -> None:
        """DesiredInstanceCount of one variant (SageMaker changes one variant's capacity per request)."""
        self._client.update_endpoint_weights_and_capacities(
            EndpointName=name, DesiredWeightsAndCapacities=[{"VariantName": variant, "DesiredInstanceCount": count}])


@dataclass(frozen=True)
class Stored:
    """An endpoint's state item as read."""

    record: Record = field(default_factory=Record)
    version: int = 0
    """0: no item yet."""
    intent: Intent | None = None
    """The step recorded and not yet published (the outbox)."""
    lease_until: datetime | None = None
    """The run that recorded (or took over) ``intent`` may still be working on it until then."""


class States:
    """The failover's state, one DynamoDB item per endpoint (key ``endpoint``): its :class:`Record`, the step it owes
    (:class:`Intent`) and a ``version`` that every write raises. Every write is conditional on the version read, so of
    two runs that read the same item one write wins and the other run leaves the endpoint alone (a lease); the
    intent's ``lease`` says until when its run may still be working on it (its Lambda time left)."""

    def __init__(self, client: Any, table: str) -> None:
        self._client = client
        self._table = table

    def get(self, endpoint: str) -> Stored:
        item = self._client.get_item(TableName=self._table, Key={"endpoint": {"S": endpoint}},
                                     ConsistentRead=True).get("Item")
        if not item:
            return Stored()
        intent = Intent.from_json(item["intent"]["S"]) if "intent" in item else None
        lease = datetime.fromisoformat(item["lease"]["S"]) if "lease" in item else None
        return Stored(record=Record.decode(item.get("record", {}).get("S")), version=int(item["version"]["N"]),
                      intent=intent, lease_until=lease)

    def write(self, endpoint: str, version: int, record: Record, intent: Intent | None = None,
              lease_until: datetime | None = None) -> bool:
        """Replace the item read at ``version`` (0: none) by one at ``version + 1``; False if another run wrote it
        since (nothing written)."""
        item = {"endpoint": {"S": endpoint}, "version": {"N": str(version + 1)}, "record": {"S": record.encode()}}
        if intent is not None:
            item["intent"] = {"S": intent.to_json()}
            item["lease"] = {"S": (lease_until or datetime.min.replace(tzinfo=UTC)).isoformat()}
        condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(#v)"} if version == 0 else {
            "ConditionExpression": "#v = :v", "ExpressionAttributeValues": {":v": {"N": str(version)}}}
        try:
            self._client.put_item(TableName=self._table, Item=item, ExpressionAttributeNames={"#v": "version"},
                                  **condition)
        except self._client.exceptions.ConditionalCheckFailedException:
            return False
        return True


class Scaling:
    """A variant's Application Auto Scaling bounds, when it is registered as a scalable target."""

    def __init__(self, client: Any) -> None:
        self._client = client

    @staticmethod
    def resource_id(endpoint: str, variant: str) -> str:
        return f"endpoint/{endpoint}/variant/{variant}"

    def bounds(self, endpoint: str, variant: str) -> tuple[int, int] | None:
        """The scalable target's (MinCapacity, MaxCapacity); None if the variant is not registered."""
        found = self._client.describe_scalable_targets(
            ServiceNamespace="sagemaker", ResourceIds=[self.resource_id(endpoint, variant)],
            ScalableDimension=SCALABLE_DIMENSION).get("ScalableTargets", [])
        return (int(found[0]["MinCapacity"]), int(found[0]["MaxCapacity"])) if found else None

    def registered(self, endpoint: str, variant: str) -> bool:
        return self.bounds(endpoint, variant) is not None

    def set_bounds(self, endpoint: str, variant: str, floor: int, ceiling: int) -> bool:
        """Update the scalable target's MinCapacity/MaxCapacity; False (nothing done) if it is not registered."""
        if not self.registered(endpoint, variant):
            return False
        self._client.register_scalable_target(
            ServiceNamespace="sagemaker", ResourceId=self.resource_id(endpoint, variant),
            ScalableDimension=SCALABLE_DIMENSION, MinCapacity=floor, MaxCapacity=ceiling)
        return True


class Alarms:
    def __init__(self, client: Any) -> None:
        self._client = client

    def get(self, names: Sequence[str]) -> list[AlarmState]:
        found = []
        for page in self._client.get_paginator("describe_alarms").paginate(AlarmNames=list(names)):
            found += [AlarmState(name=a["AlarmName"], state=a["StateValue"], updated=a["StateUpdatedTimestamp"])
                      for a in page.get("MetricAlarms", [])]
        return found


class CanaryMetrics:
    """The Neuron variant's own invocations, errors and p99 latency over a window (one GetMetricData call)."""

    COUNTS = (("invocations", "Invocations"), ("errors5xx", "Invocation5XXErrors"),
              ("modelerrors", "InvocationModelErrors"))
    LATENCY = ("latency", "ModelLatency")

    def __init__(self, client: Any, *, latency_statistic: str = "p99") -> None:
        self._client = client
        self._latency_statistic = latency_statistic
        """p99 as the latency alarm reads it (moto's GetMetricData computes no percentiles: its tests pass
        Maximum, a stricter reading)."""

    def read(self, endpoint: str, variant: str, start: datetime, end: datetime) -> Evidence:
        period = max(60, int((end - start).total_seconds()) // 60 * 60)
        dims = [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": variant}]
        queries = [{"Id": qid, "ReturnData": True, "MetricStat": {
            "Metric": {"Namespace": AWS_SAGEMAKER_METRICS, "MetricName": metric, "Dimensions": dims},
            "Period": period, "Stat": stat}} for qid, metric, stat in (
                *((qid, metric, "Sum") for qid, metric in self.COUNTS), (*self.LATENCY, self._latency_statistic))]
        values: dict[str, list[float]] = {}
        for page in self._client.get_paginator("get_metric_data").paginate(
                MetricDataQueries=queries, StartTime=start, EndTime=end):
            for result in page.get("MetricDataResults", []):
                values.setdefault(result["Id"], []).extend(result.get("Values", []))
        latency = values.get("latency")
        return Evidence(invocations=sum(values.get("invocations", [])), errors_5xx=sum(values.get("errors5xx", [])),
                        model_errors=sum(values.get("modelerrors", [])),
                        latency_p99_ms=max(latency) / 1000.0 if latency else None)  # ModelLatency is in microseconds
