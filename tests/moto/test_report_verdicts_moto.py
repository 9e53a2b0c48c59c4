"""The weekly report reads the pilot judge's verdict as the judge publishes it: its own VerdictMetrics adapter
(lambdas/judge) puts the points into moto's CloudWatch, the report's Work adapter reads them back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import boto3
from moto import mock_aws

from neuronfleet.lambdas.cost.adapters.work import Work
from neuronfleet.lambdas.judge.adapters import VerdictMetrics
from neuronfleet_contract.judge import VERDICT_METRIC
from neuronfleet_contract.namespaces import JUDGE_NAMESPACE

REGION = "us-east-2"
NOW = datetime(2026, 11, 23, tzinfo=UTC)


def test_the_latest_days_verdict_per_endpoint_and_nothing_for_an_unjudged_one(monkeypatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        cw = boto3.client("cloudwatch", region_name=REGION)
        judge = VerdictMetrics(cw, JUDGE_NAMESPACE)
        # chat: go three days ago, then a no-go and a go on the latest day (the day's Minimum: no-go)
        judge.publish(endpoint="chat-ep", at=NOW - timedelta(days=3, hours=-2), values={VERDICT_METRIC: 1.0},
                      fleet="nf-pilot")
        judge.publish(endpoint="chat-ep", at=NOW - timedelta(days=1, hours=-3), values={VERDICT_METRIC: 0.0},
                      fleet="nf-pilot")
        judge.publish(endpoint="chat-ep", at=NOW - timedelta(days=1, hours=-5), values={VERDICT_METRIC: 1.0},
                      fleet="nf-pilot")
        judge.publish(endpoint="embed-ep", at=NOW - timedelta(days=2, hours=-1), values={VERDICT_METRIC: 1.0},
                      fleet="nf-pilot")
        # another fleet's judge of an endpoint of the same name (another account's copy of the fleet file, say)
        # and a judge given no fleet: neither is this fleet's verdict
        judge.publish(endpoint="never-judged", at=NOW - timedelta(days=1), values={VERDICT_METRIC: 0.0},
                      fleet="nf-other")
        judge.publish(endpoint="never-judged", at=NOW - timedelta(days=1), values={VERDICT_METRIC: 0.0})
        got = Work(cw).verdicts("nf-pilot", ["chat-ep", "embed-ep", "never-judged"], NOW - timedelta(days=30), NOW)
    assert got == {"chat-ep": ((NOW - timedelta(days=1)).date().isoformat(), Decimal(0)),
                   "embed-ep": ((NOW - timedelta(days=2)).date().isoformat(), Decimal(1))}
