"""The weekly report takes the pilot judge's latest verdict record as the judge writes it: the record is produced by
the judge's own run and writer (lambdas/judge: handler.run, adapters.Store) on the demo's fixture answers, read back
by the report's pure logic (logic/verdict_records.py), and used for the model's measured GPU/Neuron cost. A missing,
malformed or foreign record is a note, never a failed report. The report's settings carry the records' places."""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from botocore.exceptions import ClientError

from neuronfleet.lambdas.cost.logic.economics import EndpointModel, summary_text
from neuronfleet.lambdas.cost.logic.report_page import render_html
from neuronfleet.lambdas.cost.logic.rows import CostRow, family_of
from neuronfleet.lambdas.cost.logic.verdict_records import NOT_JUDGED, gather, parse_record
from neuronfleet.lambdas.cost.report import build
from neuronfleet.lambdas.judge.adapters import Store, Variants, VerdictMetrics
from neuronfleet.lambdas.judge.handler import run
from neuronfleet_contract.cost import JudgeRecords, ReportConfig
from neuronfleet_contract.environment import InvalidEnvironment
from neuronfleet_contract.judge import JudgeConfig, Verdict, latest_key
from scripts.demo_judge import PROMPTS, FixtureEndpoint

ENDPOINT = "nfpilotinference-chat-d92693d8"
SETTINGS = JudgeConfig(endpoint_name=ENDPOINT, prompts_bucket="team-prompts", prompts_key="chat.jsonl",
                       records_bucket="judge-records", fleet="nf-pilot",
                       usd_per_hour={"neuron": 7.59, "gpu": 13.12})
RECORD = JudgeRecords(endpoint=ENDPOINT, bucket="judge-records", prefix=SETTINGS.records_prefix)


class MemoryS3:
    """The two S3 calls the judge's Store makes, in memory (conditional writes included)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}

    def get_object(self, *, Bucket: str, Key: str) -> dict[str, Any]:
        if (Bucket, Key) not in self.objects:
            raise ClientError({"Error": {"Code": "NoSuchKey", "Message": "none"}}, "GetObject")
        body = self.objects[(Bucket, Key)]
        return {"Body": io.BytesIO(body), "ETag": '"e1"', "ContentLength": len(body)}

    def put_object(self, *, Bucket: str, Key: str, Body: bytes, IfNoneMatch: str | None = None, **_: Any) -> None:
        if IfNoneMatch == "*" and (Bucket, Key) in self.objects:
            raise ClientError({"Error": {"Code": "PreconditionFailed", "Message": "exists"}}, "PutObject")
        self.objects[(Bucket, Key)] = Body


class NoMetrics:
    def put_metric_data(self, **_: Any) -> None:
        pass


def judge_writes_latest(answers: FixtureEndpoint | None = None) -> bytes:
    """The bytes the judge itself writes to latest.json after a run on the demo's fixtures."""
    s3 = MemoryS3()
    s3.objects[("team-prompts", "chat.jsonl")] = "\n".join(
        json.dumps({"prompt": p, "reference": r}) for p, r, _ in PROMPTS).encode()
    stand_in = answers or FixtureEndpoint()
    done = run({"run_id": "r1"}, settings=SETTINGS, variants=Variants(stand_in, ENDPOINT, clock=stand_in.clock),
               endpoint=None, store=Store(s3), metrics=VerdictMetrics(NoMetrics(), SETTINGS.namespace),
               remaining_ms=lambda: 900_000, now=lambda: datetime(2026, 11, 23, 15, tzinfo=UTC), synthetic=True)
    assert done["status"] == "done"
    return s3.objects[("judge-records", latest_key(SETTINGS.records_prefix, ENDPOINT))]


START = date(2026, 10, 24)
CHAT = EndpointModel(endpoint=ENDPOINT, model="chat", neuron_types=("ml.inf2.24xlarge",),
                     gpu_type="ml.g6e.12xlarge", gpu_role="shadow")


def report(**kw: Any) -> dict[str, Any]:
    rows = [CostRow(day=(START + timedelta(days=n)).isoformat(), fleet="nf-pilot", service="sagemaker",
                    instance_type="ml.inf2.24xlarge", family=family_of("ml.inf2.24xlarge") or "?",
                    amount=Decimal("150"), usage_hours=Decimal(24), usage="sagemaker-hosting") for n in range(30)]
    tokens = {(ENDPOINT, "neuron", (START + timedelta(days=n)).isoformat()): Decimal(10**8) for n in range(30)}
    return build(fleet="nf-pilot", rows=rows, start=START, end=START + timedelta(days=30), invocations={},
                 tokens=tokens, prices={}, models=[CHAT], **kw)


def test_the_judges_own_record_is_read_and_its_measured_costs_reach_the_report() -> None:
    """What the story makes of the judge's single-stream figures is story.py's rule; here: the record the judge wrote
    is the model's verdict in the report, with the GPU and Neuron cost per million the judge measured, unchanged."""
    raw = judge_writes_latest()
    verdict = parse_record(raw, RECORD)
    assert isinstance(verdict, Verdict) and verdict.go and verdict.synthetic and verdict.endpoint == ENDPOINT
    assert verdict == Verdict.from_json(json.loads(raw))
    n, g = verdict.variants["neuron"], verdict.variants["gpu"]
    assert n.usd_per_million and g.usd_per_million and g.usd_per_million > n.usd_per_million
    got = report(verdicts=[verdict])
    (shown,) = got["pilot_verdicts"]
    assert (shown["model"], shown["verdict"], shown["run_id"], shown["unit"]) == ("chat", "go", "r1", "tokens")
    assert shown["variants"]["neuron"]["usd_per_million"] == n.usd_per_million
    assert shown["variants"]["gpu"]["usd_per_million"] == g.usd_per_million
    assert f"${n.usd_per_million:,.2f} vs ${g.usd_per_million:,.2f} per million tokens" in shown["line"]
    assert got["judge_records"] == [] and "chat go" in got["story"]


def test_a_no_go_record_is_shown_and_claims_no_saving() -> None:
    drifting = FixtureEndpoint()
    for prompt, _, _ in PROMPTS:  # every Neuron answer differs from the GPU's in its last words
        drifting.answers["neuron"][prompt] = drifting.answers["gpu"]["What is 12 times 12?"]
    verdict = parse_record(judge_writes_latest(drifting), RECORD)
    assert isinstance(verdict, Verdict) and not verdict.go
    got = report(verdicts=[verdict])
    assert got["savings"] == [] and "chat no-go" in got["story"]
    assert "no-go: " in render_html(got)


@pytest.mark.parametrize(("mangle", "says"), [
    (lambda raw: raw[: len(raw) // 2], "is not JSON"),
    (lambda raw: b"[1, 2]", "is not a JSON object"),
    (lambda raw: json.dumps(json.loads(raw) | {"schema": "neuronfleet.judge.verdict/0"}).encode(),
     "schema: got 'neuronfleet.judge.verdict/0'"),
    (lambda raw: json.dumps({k: v for k, v in json.loads(raw).items() if k != "variants"}).encode(),
     "missing field 'variants'"),
    (lambda raw: json.dumps(json.loads(raw) | {"endpoint": "another-endpoint"}).encode(),
     "is about endpoint 'another-endpoint'"),
    (lambda raw: json.dumps(json.loads(raw) | {"failing": [{"measure": 1}]}).encode(), "not a verdict record"),
])
def test_a_malformed_record_is_a_note_and_the_report_is_still_made(mangle: Any, says: str) -> None:
    note = parse_record(mangle(judge_writes_latest()), RECORD)
    assert isinstance(note, str) and says in note and f"s3://judge-records/{RECORD.key}" in note
    read = gather([(RECORD, note)])
    got = report(verdicts=read.verdicts, judge_notes=read.notes)
    assert got["savings"] == [] and got["judge_records"] == [{"endpoint": ENDPOINT, "model": "chat", "note": note}]
    assert f"Pilot judge of chat: {note}" in summary_text(got)


def test_the_notes_are_escaped_on_the_page() -> None:
    got = report(judge_notes={ENDPOINT: "<script>x</script> " + NOT_JUDGED})
    page = render_html(got)
    assert "Pilot judges&#x27; records" in page or "Pilot judges' records" in page
    assert "<script>x" not in page and "&lt;script&gt;x" in page and NOT_JUDGED in page


def test_the_reports_settings_carry_each_judges_record_grouped_by_bucket() -> None:
    judges = [JudgeRecords("ep-a", "bucket-1"), JudgeRecords("ep-b", "bucket-1"), JudgeRecords("ep-c", "bucket-2")]
    settings = ReportConfig(fleet="f", ledger_table="t", report_bucket="b", topic_arn="arn:aws:sns:us-east-2:1:t",
                            prices={}, judges=judges)
    env = settings.to_environment()
    assert json.loads(env["JUDGE_RECORDS"]) == [["bucket-1", "judge/", ["ep-a", "ep-b"]],
                                                ["bucket-2", "judge/", ["ep-c"]]]
    back = ReportConfig.from_environment(env)
    assert back.judges == tuple(judges) and back.judges[0].key == "judge/ep-a/latest.json"
    without = ReportConfig(fleet="f", ledger_table="t", report_bucket="b", topic_arn="arn:aws:sns:us-east-2:1:t",
                           prices={}).to_environment()
    assert "JUDGE_RECORDS" not in without and ReportConfig.from_environment(without).judges == ()


@pytest.mark.parametrize("value", ['{"bucket": "ep"}', '[["bucket", "judge/"]]', '[["", "judge/", ["ep"]]]',
                                   '[["bucket", "judge/", [""]]]', "not json"])
def test_malformed_judge_records_in_the_environment_are_refused_naming_the_variable(value: str) -> None:
    env = ReportConfig(fleet="f", ledger_table="t", report_bucket="b", topic_arn="arn:aws:sns:us-east-2:1:t",
                       prices={}).to_environment() | {"JUDGE_RECORDS": value}
    with pytest.raises(InvalidEnvironment, match="JUDGE_RECORDS") as err:
        ReportConfig.from_environment(env)
    assert "[[records bucket, key prefix, [endpoint name, ...]], ...]" in str(err.value)


def test_each_judge_costs_the_reports_environment_what_the_docs_say() -> None:
    """docs/cost.md: about 120 bytes per judge with a bucket of its own (the bucket name a reference, estimated at 64
    characters as the limit check does; a 30-character endpoint name, the reference app's)."""
    from neuronfleet.core.rules import TOKEN_ESTIMATE_CHARS

    def size(judges: int) -> int:
        records = [JudgeRecords(f"nfpilotinference-m{i:03d}-d92693d8", f"{i:x<{TOKEN_ESTIMATE_CHARS}}")
                   for i in range(judges)]
        env = ReportConfig(fleet="f", ledger_table="t", report_bucket="b", topic_arn="arn:aws:sns:us-east-2:1:t",
                           prices={}, judges=records).to_environment()
        return sum(len(k) + len(v) for k, v in env.items())

    per_judge = (size(10) - size(0) - len("JUDGE_RECORDS") - 2) / 10
    assert 110 <= per_judge <= 125, per_judge
