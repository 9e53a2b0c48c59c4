"""What the fleet runs and holds, for the waste detector and the report: thin boto3 adapters (EC2, SageMaker,
CloudWatch, Resource Groups Tagging), each scoped to the fleet (its ``neuronfleet:fleet`` tag), never the whole
region. The decisions are elsewhere: idle.py (waste), discovery.py (which endpoints, what each one's model is)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from neuronfleet_contract.cost import ENDPOINT_RESOURCE_TYPE
from neuronfleet_contract.namespaces import AWS_SAGEMAKER_METRICS
from neuronfleet_contract.tags import CAPACITY_TAG, DEVICES_TAG, FLEET_TAG

from ..logic.discovery import Discovered, creation_time, endpoint_model, fleet_endpoints, gone, model_tags, throughput_tags
from ..logic.economics import EndpointModel
from ..logic.evaluation import Accelerators
from ..logic.idle import Instance, Reservation, VariantTraffic
from ..logic.rows import family_of


class FleetEndpoints:
    """The fleet's SageMaker endpoints, found at run time: those tagged ``neuronfleet:fleet`` = the fleet
    (Resource Groups Tagging API GetResources, every page), and each one's model from DescribeEndpoint and
    DescribeEndpointConfig. An endpoint whose description cannot be read (deleted between the listing and the
    description) is skipped, with the reason given to ``on_skip``."""

    def __init__(self, *, tagging: Any, sagemaker: Any, fleet: str,
                 on_skip: Callable[[str, str], None] | None = None) -> None:
        self._tagging, self._sm, self.fleet = tagging, sagemaker, fleet
        self._on_skip = on_skip or (lambda name, reason: None)
        self.model_names: dict[str, str] = {}
        """endpoint -> the fleet file's model name (its ``neuronfleet:model`` tag), as the last listing read it."""
        self.throughput: dict[str, Decimal] = {}
        """endpoint -> the fleet file's throughput ratio (its ``neuronfleet:neuron-per-gpu`` tag), as last read."""

    def names(self) -> list[str]:
        pages = self._tagging.get_paginator("get_resources").paginate(
            ResourceTypeFilters=[ENDPOINT_RESOURCE_TYPE], TagFilters=[{"Key": FLEET_TAG, "Values": [self.fleet]}])
        mappings = [m for page in pages for m in page.get("ResourceTagMappingList", [])]
        self.model_names = model_tags(mappings, self.fleet)
        self.throughput = throughput_tags(mappings, self.fleet)
        return fleet_endpoints(mappings, self.fleet)

    def models(self, accelerators: Accelerators, names: Sequence[str] | None = None) -> Discovered:
        models: list[EndpointModel] = []
        skipped: dict[str, str] = {}
        notes: dict[str, tuple[str, ...]] = {}
        for name in self.names() if names is None else names:
            try:
                endpoint = self._sm.describe_endpoint(EndpointName=name)
                config_name = endpoint["EndpointConfigName"]
                config = self._sm.describe_endpoint_config(EndpointConfigName=config_name)
            except self._sm.exceptions.ClientError as exc:
                if not gone(exc.response.get("Error", {})):
                    raise
                skipped[name] = f"not described (deleted since it was listed?): {exc.response['Error']['Message']}"
                self._on_skip(name, skipped[name])
                continue
            model, left_out = endpoint_model(str(endpoint.get("EndpointName") or name), config, accelerators)
            if left_out:
                notes[name] = left_out
            if model is None:
                skipped[name] = f"no variant of {config_name} runs on an accelerator type of the catalog"
                self._on_skip(name, skipped[name])
                continue
            models.append(replace(model, model=self.model_names.get(name, model.model),
                                  created=creation_time(endpoint)))
        return Discovered(models=tuple(models), skipped=skipped, notes=notes,
                          throughput={m.endpoint: self.throughput[m.endpoint] for m in models
                                      if m.endpoint in self.throughput})


class FleetInventory:
    def __init__(self, *, ec2: Any, sagemaker: Any, cloudwatch: Any, tagging: Any, fleet: str, namespace: str,
                 metric: str) -> None:
        self._ec2, self._sm, self._cw = ec2, sagemaker, cloudwatch
        self.fleet, self._namespace, self._metric = fleet, namespace, metric
        self.endpoints = FleetEndpoints(tagging=tagging, sagemaker=sagemaker, fleet=fleet)
        """The fleet's endpoints, found by their tag at run time."""

    def _tag_filter(self) -> dict[str, Any]:
        return {"Name": f"tag:{FLEET_TAG}", "Values": [self.fleet]}

    def running_neuron_instances(self) -> list[Instance]:
        out = []
        for page in self._ec2.get_paginator("describe_instances").paginate(Filters=[
                self._tag_filter(), {"Name": "instance-state-name", "Values": ["running"]}]):
            for reservation in page.get("Reservations", []):
                for i in reservation.get("Instances", []):
                    if family_of(i["InstanceType"]) in ("trainium", "inferentia"):
                        tags = {t.get("Key"): t.get("Value", "") for t in i.get("Tags", [])}
                        out.append(Instance(i["InstanceId"], i["InstanceType"], i["LaunchTime"],
                                            capacity=tags.get(CAPACITY_TAG, ""),
                                            reservation_id=i.get("CapacityReservationId") or "",
                                            lifecycle=i.get("InstanceLifecycle") or "",
                                            devices=tags.get(DEVICES_TAG, "")))
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

    def variants(self, endpoints: Sequence[str], hours: int, now: datetime) -> list[VariantTraffic]:
        described = []
        for name in endpoints:
            try:
                ep = self._sm.describe_endpoint(EndpointName=name)
            except self._sm.exceptions.ClientError as exc:
                if "Could not find" in str(exc) or "ValidationException" in str(exc):
                    continue
                raise
            queue = bool(ep.get("AsyncInferenceConfig"))  # an asynchronous endpoint (idle.VariantTraffic)
            for v in ep.get("ProductionVariants", []):
                described.append((name, v["VariantName"], int(v.get("CurrentInstanceCount") or 0),
                                  float(v.get("CurrentWeight", 1.0)), queue))
        calls: dict[str, float] = {}
        for i in range(0, len(described), 500):
            chunk = described[i:i + 500]
            page = self._cw.get_metric_data(
                StartTime=now - timedelta(hours=hours), EndTime=now,
                MetricDataQueries=[{"Id": f"v{j}", "MetricStat": {"Metric": {
                    "Namespace": AWS_SAGEMAKER_METRICS, "MetricName": "Invocations",
                    "Dimensions": [{"Name": "EndpointName", "Value": e}, {"Name": "VariantName", "Value": v}]},
                    "Period": 3600 * hours, "Stat": "Sum"}} for j, (e, v, *_) in enumerate(chunk)])
            for result in page.get("MetricDataResults", []):
                calls[f"{i}:{result['Id']}"] = sum(float(x) for x in result.get("Values", []))
        return [VariantTraffic(endpoint=e, variant=v, instances=n, weight=w,
                               invocations=calls.get(f"{(k // 500) * 500}:v{k % 500}", 0.0), asynchronous=q)
                for k, (e, v, n, w, q) in enumerate(described)]
