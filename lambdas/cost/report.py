"""Weekly unit economics and migration report: ledger + SageMaker invocations + token metrics -> S3, SNS.

Environment: FLEET, LEDGER_TABLE, REPORT_BUCKET, ALERTS_TOPIC_ARN, ENDPOINTS (JSON list of endpoint
names), PRICES (JSON: instance type -> usd_per_hour, source, as_of), PERIOD_DAYS (default 30),
TOKENS_NAMESPACE (default NeuronFleet/Workload: metric Tokens, dimensions Fleet and Variant neuron|gpu).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3
from aws_lambda_powertools import Logger

from .economics import Spend, estimate, render_html, summary_text, unit_economics, verdict
from .ledger import Ledger
from .rows import CostRow

logger = Logger(service="neuronfleet-cost-report")


def build(*, fleet: str, rows: Sequence[CostRow], start: date, end: date, invocations: Mapping[str, Decimal],
          tokens: Mapping[str, Decimal], prices: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    mine = [r for r in rows if r.fleet == fleet]
    spend = Spend.of(mine)
    days = (end - start).days
    return {
        "fleet": fleet,
        "period": {"start": start.isoformat(), "end": end.isoformat(), "days": days},
        "spend_usd": {
            "total": str(sum((r.amount for r in mine), Decimal(0))),
            "by_family": {f: str(spend.family(f)) for f in ("trainium", "inferentia", "gpu")},
            "by_workload_family": {f"{w}/{f}": str(v) for (w, f), v in sorted(spend.by.items())},
        },
        "unit_economics": unit_economics(spend, invocations, tokens),
        "verdict": verdict(spend, days),
        "evaluation_estimate": estimate([r for r in mine if r.family == "gpu"], prices),
        "sources": {"spend": "Cost Explorer unblended cost via the ledger",
                    "inferences": "AWS/SageMaker Invocations (variants neuron and gpu)",
                    "tokens": "NeuronFleet/Workload Tokens published by the workloads",
                    "prices": "instance catalog (each price carries its source and date)"},
    }


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
            "Metric": {"Namespace": self._tokens_namespace, "MetricName": "Tokens",
                       "Dimensions": [{"Name": "Fleet", "Value": fleet}, {"Name": "Variant", "Value": variant}]},
            "Period": 86400, "Stat": "Sum"}} for variant in ("neuron", "gpu")]
        sums = self._sums(queries, start, end)
        return {v: sums.get(f"t_{v}", Decimal(0)) for v in ("neuron", "gpu")}


def publish(report: Mapping[str, Any], *, s3: Any, bucket: str, sns: Any, topic_arn: str) -> dict[str, str]:
    prefix = f"reports/{report['fleet']}/{report['period']['end']}"
    s3.put_object(Bucket=bucket, Key=f"{prefix}/report.json", Body=json.dumps(report, indent=1).encode(),
                  ContentType="application/json")
    s3.put_object(Bucket=bucket, Key=f"{prefix}/report.html", Body=render_html(report).encode(),
                  ContentType="text/html; charset=utf-8")
    sns.publish(TopicArn=topic_arn, Subject=f"neuronfleet: migration report {report['fleet']}"[:100],
                Message=summary_text(report) + f"\n\nFull report: s3://{bucket}/{prefix}/report.html")
    return {"json": f"s3://{bucket}/{prefix}/report.json", "html": f"s3://{bucket}/{prefix}/report.html"}


def run(*, today: date, fleet: str, period_days: int, endpoints: Sequence[str], prices: Mapping[str, Any],
        ledger: Ledger, usage: Usage, s3: Any, bucket: str, sns: Any, topic_arn: str) -> dict[str, Any]:
    start = today - timedelta(days=period_days)
    days = [(start + timedelta(days=i)).isoformat() for i in range(period_days)]
    t0 = datetime.combine(start, datetime.min.time(), UTC)
    t1 = datetime.combine(today, datetime.min.time(), UTC)
    report = build(fleet=fleet, rows=ledger.rows(days), start=start, end=today,
                   invocations=usage.invocations(endpoints, t0, t1), tokens=usage.tokens(fleet, t0, t1), prices=prices)
    report["published"] = publish(report, s3=s3, bucket=bucket, sns=sns, topic_arn=topic_arn)
    return report


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, str]:
    report = run(
        today=datetime.now(UTC).date(), fleet=os.environ["FLEET"],
        period_days=int(os.environ.get("PERIOD_DAYS", "30")), endpoints=json.loads(os.environ.get("ENDPOINTS", "[]")),
        prices=json.loads(os.environ["PRICES"]), ledger=Ledger(boto3.resource("dynamodb").Table(os.environ["LEDGER_TABLE"])),
        usage=Usage(boto3.client("cloudwatch"), os.environ.get("TOKENS_NAMESPACE", "NeuronFleet/Workload")),
        s3=boto3.client("s3"), bucket=os.environ["REPORT_BUCKET"], sns=boto3.client("sns"),
        topic_arn=os.environ["ALERTS_TOPIC_ARN"])
    logger.info("report published", extra={"published": report["published"], "verdict": report["verdict"]})
    return report["published"]
