"""Weekly unit economics and migration report: ledger + SageMaker invocations + token metrics -> S3, SNS.

Configuration: :class:`~.settings.ReportSettings` (read once per container). Tokens are read from its
``tokens_namespace`` (``WORKLOAD_NAMESPACE`` by default: metric Tokens, dimensions Fleet and Variant neuron|gpu).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from ._shared import namespaces
from .adapters import ReportStore, Topic, Usage
from .economics import Spend, estimate, render_html, summary_text, unit_economics, verdict
from .ledger import Ledger
from .rows import CostRow
from .settings import ReportSettings

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
                    "tokens": f"{namespaces.WORKLOAD_NAMESPACE} {namespaces.TOKENS_METRIC} published by the workloads",
                    "prices": "instance catalog (each price carries its source and date)"},
    }


def publish(report: Mapping[str, Any], *, store: ReportStore, topic: Topic) -> dict[str, str]:
    prefix = f"reports/{report['fleet']}/{report['period']['end']}"
    out = {"json": store.put(f"{prefix}/report.json", json.dumps(report, indent=1), "application/json"),
           "html": store.put(f"{prefix}/report.html", render_html(report), "text/html; charset=utf-8")}
    topic.announce(f"neuronfleet: migration report {report['fleet']}",
                   summary_text(report) + f"\n\nFull report: {out['html']}")
    return out


def run(*, today: date, fleet: str, period_days: int, endpoints: Sequence[str], prices: Mapping[str, Any],
        ledger: Ledger, usage: Usage, s3: Any, bucket: str, sns: Any, topic_arn: str) -> dict[str, Any]:
    start = today - timedelta(days=period_days)
    days = [(start + timedelta(days=i)).isoformat() for i in range(period_days)]
    t0 = datetime.combine(start, datetime.min.time(), UTC)
    t1 = datetime.combine(today, datetime.min.time(), UTC)
    report = build(fleet=fleet, rows=ledger.rows(days), start=start, end=today,
                   invocations=usage.invocations(endpoints, t0, t1), tokens=usage.tokens(fleet, t0, t1), prices=prices)
    report["published"] = publish(report, store=ReportStore(s3, bucket), topic=Topic(sns, topic_arn))
    return report


@dataclass(frozen=True)
class Container:
    """What one Lambda container builds once: its settings, clients and adapters."""

    settings: ReportSettings
    ledger: Ledger
    usage: Usage
    s3: Any
    sns: Any


@cache
def container() -> Container:
    settings = ReportSettings.from_environment()
    return Container(settings=settings, ledger=Ledger(boto3.resource("dynamodb").Table(settings.ledger_table)),
                     usage=Usage(boto3.client("cloudwatch"), settings.tokens_namespace), s3=boto3.client("s3"),
                     sns=boto3.client("sns"))


@logger.inject_lambda_context
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, str]:
    c = container()
    s = c.settings
    report = run(today=datetime.now(UTC).date(), fleet=s.fleet, period_days=s.period_days, endpoints=s.endpoints,
                 prices=s.prices, ledger=c.ledger, usage=c.usage, s3=c.s3, bucket=s.report_bucket, sns=c.sns,
                 topic_arn=s.topic_arn)
    logger.info("report published", extra={"published": report["published"], "verdict": report["verdict"]})
    return report["published"]
