"""Work done per model and day, from CloudWatch: SageMaker ``Invocations`` per endpoint and variant, and the
workloads' ``Tokens`` (``namespaces.WORKLOAD_NAMESPACE``, dimensions Fleet, Endpoint, Variant). One GetMetricData call per
500 queries; daily sums keyed (endpoint, variant, day) so the report can tell standby days from failover days."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from neuronfleet_contract import namespaces
from neuronfleet_contract.judge import VERDICT_METRIC, verdict_dimensions
from neuronfleet_contract.variants import VARIANTS

from ..logic.paging import PageGuard

MAX_PAGES = 100
"""GetMetricData pages per call at most (100,800 datapoints a page: botocore 1.44.5 cloudwatch model, MaxDatapoints
default): 500 daily series of a 30-day report fit in one; a repeated NextToken stops the report loudly."""


class Work:
    def __init__(self, client: Any, tokens_namespace: str = namespaces.WORKLOAD_NAMESPACE) -> None:
        self._client = client
        self.client = client
        """The CloudWatch client (the report publishes its unit costs with it)."""
        self._tokens_namespace = tokens_namespace

    def _daily(self, queries: list[tuple[tuple[str, str], dict[str, Any]]], start: datetime, end: datetime,
               stat: str = "Sum") -> dict[tuple[str, str, str], Decimal]:
        out: dict[tuple[str, str, str], Decimal] = {}
        for i in range(0, len(queries), 500):
            chunk = queries[i:i + 500]
            kwargs: dict[str, Any] = {"StartTime": start, "EndTime": end, "MetricDataQueries": [
                {"Id": f"q{j}", "ReturnData": True, "MetricStat": {"Metric": metric, "Period": 86400, "Stat": stat}}
                for j, (_, metric) in enumerate(chunk)]}
            guard = PageGuard("CloudWatch GetMetricData", cap=MAX_PAGES)
            while True:
                page = self._client.get_metric_data(**kwargs)
                guard.page()
                for result in page.get("MetricDataResults", []):
                    endpoint, variant = chunk[int(result["Id"][1:])][0]
                    for ts, value in zip(result.get("Timestamps", []), result.get("Values", []), strict=False):
                        key = (endpoint, variant, ts.date().isoformat())
                        value = Decimal(str(value))
                        out[key] = (out.get(key, Decimal(0)) + value if stat == "Sum"
                                    else min(out.get(key, value), value))
                if not page.get("NextToken"):
                    break
                kwargs["NextToken"] = guard.follow(page["NextToken"])
        return out

    def invocations(self, endpoints: Sequence[str], start: datetime, end: datetime) -> dict[tuple[str, str, str], Decimal]:
        return self._daily([((e, v), {"Namespace": namespaces.AWS_SAGEMAKER_METRICS, "MetricName": "Invocations",
                                      "Dimensions": [{"Name": "EndpointName", "Value": e},
                                                     {"Name": "VariantName", "Value": v}]})
            for e in endpoints for v in VARIANTS], start, end)

    def tokens(self, fleet: str, endpoints: Sequence[str], start: datetime, end: datetime
               ) -> dict[tuple[str, str, str], Decimal]:
        return self._daily([((e, v), {"Namespace": self._tokens_namespace, "MetricName": namespaces.TOKENS_METRIC,
                                      "Dimensions": [{"Name": "Fleet", "Value": fleet}, {"Name": "Endpoint", "Value": e},
                                                     {"Name": "Variant", "Value": v}]})
                            for e in endpoints for v in VARIANTS], start, end)

    def verdicts(self, fleet: str, endpoints: Sequence[str], start: datetime, end: datetime
                 ) -> dict[str, tuple[str, Decimal]]:
        """Per endpoint, the pilot judge's latest verdict in the period as its ``Verdict`` metric says it
        (``JUDGE_NAMESPACE``, dimensions Fleet and Endpoint, as the fleet's judges publish it and their alarms read it:
        1 go, 0 no-go): (day, the day's Minimum). Endpoints the judge never judged are absent."""
        daily = self._daily([((e, ""), {"Namespace": namespaces.JUDGE_NAMESPACE, "MetricName": VERDICT_METRIC,
                                        "Dimensions": [{"Name": k, "Value": v}
                                                       for k, v in verdict_dimensions(e, fleet).items()]})
                             for e in endpoints], start, end, stat="Minimum")
        latest: dict[str, tuple[str, Decimal]] = {}
        for (endpoint, _, day), value in sorted(daily.items()):
            latest[endpoint] = (day, value)
        return latest


class UnitCostMetrics:
    """The report's unit costs as metrics (``ECONOMICS_NAMESPACE``): the dashboard draws the report's own figures."""

    def __init__(self, client: Any, namespace: str = namespaces.ECONOMICS_NAMESPACE) -> None:
        self._client = client
        self.namespace = namespace

    @staticmethod
    def data(fleet: str, unit_costs: Sequence[tuple[str, str, str, Decimal]], at: datetime) -> list[dict[str, Any]]:
        """(endpoint, variant, unit, USD per million at full precision) -> PutMetricData entries."""
        return [{"MetricName": namespaces.COST_PER_MILLION_METRICS[unit], "Unit": "None", "Value": float(value),
                 "Timestamp": at, "Dimensions": [{"Name": "Fleet", "Value": fleet}, {"Name": "Endpoint", "Value": e},
                                                 {"Name": "Variant", "Value": v}]}
                for e, v, unit, value in unit_costs]

    def publish(self, fleet: str, unit_costs: Sequence[tuple[str, str, str, Decimal]], at: datetime) -> int:
        data = self.data(fleet, unit_costs, at)
        for i in range(0, len(data), 1000):
            self._client.put_metric_data(Namespace=self.namespace, MetricData=data[i:i + 1000])
        return len(data)
