"""Thin boto3 adapters for the cost monitors: CloudWatch (spend metrics, usage, utilisation), the report bucket.
Cost Explorer is in cost_explorer.py, the DynamoDB spend ledger in ledger.py; SNS is the shared Topic, the
announcements ledger the shared Ledger."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from ._shared import announcements, namespaces, topic

Topic = topic.Topic
Ledger = announcements.Ledger


class SpendMetrics:
    """PutMetricData, batched; datapoints carry the day they are about."""

    def __init__(self, client: Any, namespace: str) -> None:
        self._client = client
        self.namespace = namespace

    def publish(self, deltas: dict[tuple[str, str, str], Decimal]) -> int:
        data = [{"MetricName": namespaces.SPEND_METRIC, "Unit": "None", "Value": float(value),
                 "Timestamp": datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC),
                 "Dimensions": [{"Name": "Fleet", "Value": fleet}, {"Name": "Family", "Value": family}]}
                for (day, fleet, family), value in sorted(deltas.items()) if value != 0]
        for i in range(0, len(data), 1000):
            self._client.put_metric_data(Namespace=self.namespace, MetricData=data[i:i + 1000])
        return len(data)


class Usage:
    """Work done, from CloudWatch (one GetMetricData call per 500 queries)."""

    def __init__(self, client: Any, tokens_namespace: str) -> None:
        self._client = client
        self._tokens_namespace = tokens_namespace

    def _sums(self, queries: list[dict[str, Any]], start: datetime, end: datetime) -> dict[str, Decimal]:
        out: dict[str, Decimal] = {}
        for i in range(0, len(queries), 500):
            kwargs: dict[str, Any] = {"MetricDataQueries": queries[i:i + 500], "StartTime": start, "EndTime": end}
            while True:
                page = self._client.get_metric_data(**kwargs)
                for result in page.get("MetricDataResults", []):
                    out[result["Id"]] = out.get(result["Id"], Decimal(0)) + sum(
                        (Decimal(str(v)) for v in result.get("Values", [])), Decimal(0))
                if not page.get("NextToken"):
                    break
                kwargs["NextToken"] = page["NextToken"]
        return out

    def invocations(self, endpoints: Sequence[str], start: datetime, end: datetime) -> dict[str, Decimal]:
        queries = [{"Id": f"q{i}_{variant}", "ReturnData": True, "MetricStat": {
            "Metric": {"Namespace": "AWS/SageMaker", "MetricName": "Invocations",
                       "Dimensions": [{"Name": "EndpointName", "Value": name}, {"Name": "VariantName", "Value": variant}]},
            "Period": 86400, "Stat": "Sum"}} for i, name in enumerate(endpoints) for variant in ("neuron", "gpu")]
        sums = self._sums(queries, start, end) if queries else {}
        return {v: sum((n for k, n in sums.items() if k.endswith(f"_{v}")), Decimal(0)) for v in ("neuron", "gpu")}

    def tokens(self, fleet: str, start: datetime, end: datetime) -> dict[str, Decimal]:
        queries = [{"Id": f"t_{variant}", "ReturnData": True, "MetricStat": {
            "Metric": {"Namespace": self._tokens_namespace, "MetricName": namespaces.TOKENS_METRIC,
                       "Dimensions": [{"Name": "Fleet", "Value": fleet}, {"Name": "Variant", "Value": variant}]},
            "Period": 86400, "Stat": "Sum"}} for variant in ("neuron", "gpu")]
        sums = self._sums(queries, start, end)
        return {v: sums.get(f"t_{v}", Decimal(0)) for v in ("neuron", "gpu")}


class ReportStore:
    """The report bucket (S3 PutObject)."""

    def __init__(self, client: Any, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    def put(self, key: str, body: str, content_type: str) -> str:
        """Store ``body`` under ``key``; its s3:// URL."""
        self._client.put_object(Bucket=self._bucket, Key=key, Body=body.encode(), ContentType=content_type)
        return f"s3://{self._bucket}/{key}"


class Signals:
    """NeuronCore utilisation (CloudWatch)."""

    def __init__(self, cloudwatch: Any, namespace: str, metric: str) -> None:
        self._cw, self._namespace, self._metric = cloudwatch, namespace, metric

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
