"""What the fleet runs and holds, for the waste detector: thin boto3 adapters (EC2, SageMaker, CloudWatch), each
scoped to the fleet (its ``neuronfleet:fleet`` tag, its own endpoints), never the whole region."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from .idle import Instance, Reservation, Variant
from .rows import FLEET_TAG, family_of


class FleetInventory:
    def __init__(self, *, ec2: Any, sagemaker: Any, cloudwatch: Any, fleet: str, namespace: str, metric: str) -> None:
        self._ec2, self._sm, self._cw = ec2, sagemaker, cloudwatch
        self.fleet, self._namespace, self._metric = fleet, namespace, metric

    def _tag_filter(self) -> dict[str, Any]:
        return {"Name": f"tag:{FLEET_TAG}", "Values": [self.fleet]}

    def running_neuron_instances(self) -> list[Instance]:
        out = []
        for page in self._ec2.get_paginator("describe_instances").paginate(Filters=[
                self._tag_filter(), {"Name": "instance-state-name", "Values": ["running"]}]):
            for reservation in page.get("Reservations", []):
                for i in reservation.get("Instances", []):
                    if family_of(i["InstanceType"]) in ("trainium", "inferentia"):
                        out.append(Instance(i["InstanceId"], i["InstanceType"], i["LaunchTime"]))
        return out

    def hourly_utilisation(self, instance_ids: Sequence[str], hours: int, now: datetime) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        ids = list(instance_ids)
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            page = self._cw.get_metric_data(
                StartTime=now - timedelta(hours=hours), EndTime=now, ScanBy="TimestampAscending",
                MetricDataQueries=[{"Id": f"u{j}", "MetricStat": {"Metric": {
                    "Namespace": self._namespace, "MetricName": self._metric,
                    "Dimensions": [{"Name": "InstanceId", "Value": inst}]}, "Period": 3600, "Stat": "Average"}}
                    for j, inst in enumerate(chunk)])
            for result in page.get("MetricDataResults", []):
                out[chunk[int(result["Id"][1:])]] = [float(v) for v in result.get("Values", [])]
        return out

    def reservations(self, reservation_ids: Sequence[str] = ()) -> list[Reservation]:
        """Active capacity reservations tagged with the fleet, and those named in ``reservation_ids``."""
        found: dict[str, dict[str, Any]] = {}
        pages: list[dict[str, Any]] = [{"Filters": [self._tag_filter(), {"Name": "state", "Values": ["active"]}]}]
        if reservation_ids:
            pages.append({"CapacityReservationIds": list(reservation_ids)})
        for kwargs in pages:
            for page in self._ec2.get_paginator("describe_capacity_reservations").paginate(**kwargs):
                for r in page.get("CapacityReservations", []):
                    if r.get("State") == "active":
                        found[r["CapacityReservationId"]] = r
        return [Reservation(reservation_id=k, instance_type=r.get("InstanceType", ""),
                            total=int(r.get("TotalInstanceCount", 0)), available=int(r.get("AvailableInstanceCount", 0)),
                            kind=r.get("ReservationType", "default"), end=r.get("EndDate"))
                for k, r in sorted(found.items())]

    def variants(self, endpoints: Sequence[str], hours: int, now: datetime) -> list[Variant]:
        described = []
        for name in endpoints:
            try:
                ep = self._sm.describe_endpoint(EndpointName=name)
            except self._sm.exceptions.ClientError as exc:
                if "Could not find" in str(exc) or "ValidationException" in str(exc):
                    continue
                raise
            for v in ep.get("ProductionVariants", []):
                described.append((name, v["VariantName"], int(v.get("CurrentInstanceCount") or 0),
                                  float(v.get("CurrentWeight", 1.0))))
        calls: dict[str, float] = {}
        for i in range(0, len(described), 500):
            chunk = described[i:i + 500]
            page = self._cw.get_metric_data(
                StartTime=now - timedelta(hours=hours), EndTime=now,
                MetricDataQueries=[{"Id": f"v{j}", "MetricStat": {"Metric": {
                    "Namespace": "AWS/SageMaker", "MetricName": "Invocations",
                    "Dimensions": [{"Name": "EndpointName", "Value": e}, {"Name": "VariantName", "Value": v}]},
                    "Period": 3600 * hours, "Stat": "Sum"}} for j, (e, v, _, _) in enumerate(chunk)])
            for result in page.get("MetricDataResults", []):
                calls[f"{i}:{result['Id']}"] = sum(float(x) for x in result.get("Values", []))
        return [Variant(endpoint=e, variant=v, instances=n, weight=w, invocations=calls.get(f"{(k // 500) * 500}:v{k % 500}",
                                                                                              0.0))
                for k, (e, v, n, w) in enumerate(described)]
