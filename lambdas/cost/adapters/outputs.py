"""Thin boto3 adapters for the cost monitors: CloudWatch spend metrics and the report bucket. Elsewhere:
Cost Explorer in cost_explorer.py, the spend ledger in ledger.py, the fleet's instances, utilisation,
reservations and endpoints in inventory.py; SNS is the shared Topic, the announcements ledger the shared Ledger."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from neuronfleet_runtime import announcements, topic

from neuronfleet_contract import namespaces

from ..logic.rows import METRIC_VALUE_LIMITS, publishable

Topic = topic.Topic
Ledger = announcements.Ledger


class SpendMetrics:
    """PutMetricData, batched; datapoints carry the day they are about (noon UTC). A value CloudWatch does not
    accept (rows.METRIC_VALUE_LIMITS) is refused here, before anything of the batch is sent."""

    def __init__(self, client: Any, namespace: str) -> None:
        self._client = client
        self.namespace = namespace

    def publish(self, deltas: dict[tuple[str, str, str], Decimal]) -> int:
        wrong = {k: v for k, v in deltas.items() if not publishable(v)}
        if wrong:
            raise ValueError(f"Spend values: got {wrong!r}; allowed: 0 or magnitudes from {METRIC_VALUE_LIMITS[0]} to "
                             f"{METRIC_VALUE_LIMITS[1]} (CloudWatch PutMetricData)")
        data = [{"MetricName": namespaces.SPEND_METRIC, "Unit": "None", "Value": float(value),
                 "Timestamp": datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC),
                 "Dimensions": [{"Name": "Fleet", "Value": fleet}, {"Name": "Family", "Value": family}]}
                for (day, fleet, family), value in sorted(deltas.items()) if value != 0]
        for i in range(0, len(data), 1000):
            self._client.put_metric_data(Namespace=self.namespace, MetricData=data[i:i + 1000])
        return len(data)


class ReportStore:
    """The report bucket (S3 PutObject)."""

    def __init__(self, client: Any, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    def put(self, key: str, body: str, content_type: str) -> str:
        """Store ``body`` under ``key``; its s3:// URL."""
        self._client.put_object(Bucket=self._bucket, Key=key, Body=body.encode(), ContentType=content_type)
        return f"s3://{self._bucket}/{key}"
