"""Thin boto3 adapters for the failover: SageMaker, CloudWatch alarms, SNS."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._shared import topic
from .logic import AlarmState, EndpointState

Topic = topic.Topic


class SageMakerEndpoints:
    def __init__(self, client: Any) -> None:
        self._client = client

    def get(self, name: str) -> EndpointState:
        desc = self._client.describe_endpoint(EndpointName=name)
        weights = {v["VariantName"]: float(v.get("DesiredWeight", v.get("CurrentWeight", 0.0)))
                   for v in desc.get("ProductionVariants", [])}
        return EndpointState(name=name, status=desc["EndpointStatus"], weights=weights,
                             last_modified=desc["LastModifiedTime"])

    def set_weights(self, name: str, weights: Mapping[str, float]) -> None:
        self._client.update_endpoint_weights_and_capacities(
            EndpointName=name,
            DesiredWeightsAndCapacities=[{"VariantName": v, "DesiredWeight": w} for v, w in sorted(weights.items())])


class Alarms:
    def __init__(self, client: Any) -> None:
        self._client = client

    def get(self, names: Sequence[str]) -> list[AlarmState]:
        found = []
        for page in self._client.get_paginator("describe_alarms").paginate(AlarmNames=list(names)):
            found += [AlarmState(name=a["AlarmName"], state=a["StateValue"], updated=a["StateUpdatedTimestamp"])
                      for a in page.get("MetricAlarms", [])]
        return found
