"""The report's adapter for the pilot judges' latest records, on moto's S3: the judge's own run writes latest.json
into its records bucket, the report reads it; a judge that never finished a run reads "not judged yet"; a malformed
record, a refusal (AccessDenied) and a throttled read are notes, never a failed report."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws

from neuronfleet.lambdas.cost.adapters.judge_records import JudgeRecordStore
from neuronfleet.lambdas.cost.logic.verdict_records import NOT_JUDGED
from neuronfleet.lambdas.judge.adapters import Store, Variants, VerdictMetrics
from neuronfleet.lambdas.judge.handler import run
from neuronfleet_contract.cost import JudgeRecords
from neuronfleet_contract.judge import JudgeConfig
from scripts.demo_judge import PROMPTS, FixtureEndpoint

REGION = "us-east-2"


def judged(s3: Any, cw: Any, endpoint: str) -> JudgeRecords:
    """Run the judge of ``endpoint`` on the demo's fixtures into moto: its own writer puts latest.json."""
    settings = JudgeConfig(endpoint_name=endpoint, prompts_bucket="team-prompts", prompts_key=f"{endpoint}.jsonl",
                           records_bucket="judge-records", usd_per_hour={"neuron": 7.59, "gpu": 13.12})
    s3.put_object(Bucket="team-prompts", Key=settings.prompts_key,
                  Body="\n".join(json.dumps({"prompt": p, "reference": r}) for p, r, _ in PROMPTS).encode())
    stand_in = FixtureEndpoint()
    done = run({"run_id": "r1"}, settings=settings, variants=Variants(stand_in, endpoint, clock=stand_in.clock),
               endpoint=None, store=Store(s3), metrics=VerdictMetrics(cw, settings.namespace),
               remaining_ms=lambda: 900_000, synthetic=True)
    assert done["status"] == "done"
    return JudgeRecords(endpoint=endpoint, bucket="judge-records", prefix=settings.records_prefix)


@pytest.fixture
def aws(monkeypatch) -> Any:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        for b in ("team-prompts", "judge-records"):
            s3.create_bucket(Bucket=b, CreateBucketConfiguration={"LocationConstraint": REGION})
        yield s3, boto3.client("cloudwatch", region_name=REGION)


def test_judged_endpoints_give_their_verdicts_and_an_unjudged_one_a_note(aws: Any) -> None:
    s3, cw = aws
    chat, embed = judged(s3, cw, "chat-ep"), judged(s3, cw, "embed-ep")
    never = JudgeRecords(endpoint="never-ep", bucket="judge-records")
    read = JudgeRecordStore(s3).latest([chat, never, embed])
    assert [v.endpoint for v in read.verdicts] == ["chat-ep", "embed-ep"]
    assert all(v.go and v.synthetic and v.run_id == "r1" for v in read.verdicts)
    assert read.notes == {"never-ep": NOT_JUDGED}


def test_a_malformed_record_is_a_note(aws: Any) -> None:
    s3, cw = aws
    chat = judged(s3, cw, "chat-ep")
    s3.put_object(Bucket=chat.bucket, Key=chat.key, Body=b'{"schema": "neuronfleet.judge.verdict/1", "endpoint": ')
    read = JudgeRecordStore(s3).latest([chat])
    assert read.verdicts == () and "is not JSON" in read.notes["chat-ep"]


def test_a_record_in_a_bucket_that_is_gone_is_a_note(aws: Any) -> None:
    s3, _ = aws
    read = JudgeRecordStore(s3).latest([JudgeRecords(endpoint="chat-ep", bucket="deleted-records")])
    assert read.verdicts == () and "could not be read (NoSuchBucket)" in read.notes["chat-ep"]


def _denied(operation: str) -> dict[str, Any]:
    return {"service_error_code": "AccessDenied", "service_message": "Access Denied", "http_status_code": 403}


RECORD = JudgeRecords(endpoint="chat-ep", bucket="judge-records")


def test_access_denied_on_a_key_that_is_not_there_is_not_judged_yet() -> None:
    """Without s3:ListBucket S3 answers a missing key 403: the listing of that one key (which the grant allows)
    settles it."""
    s3 = boto3.client("s3", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(s3) as stub:
        stub.add_client_error("get_object", **_denied("GetObject"),
                              expected_params={"Bucket": RECORD.bucket, "Key": RECORD.key})
        stub.add_response("list_objects_v2", {"KeyCount": 0, "Name": RECORD.bucket, "Prefix": RECORD.key},
                          expected_params={"Bucket": RECORD.bucket, "Prefix": RECORD.key, "MaxKeys": 1})
        read = JudgeRecordStore(s3).latest([RECORD])
    assert read.notes == {"chat-ep": NOT_JUDGED}


@pytest.mark.parametrize("listing", ["shows the key", "refused too"])
def test_access_denied_on_a_record_that_exists_is_a_note_naming_the_grant(listing: str) -> None:
    s3 = boto3.client("s3", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(s3) as stub:
        stub.add_client_error("get_object", **_denied("GetObject"))
        if listing == "shows the key":
            stub.add_response("list_objects_v2", {"KeyCount": 1, "Contents": [{"Key": RECORD.key, "Size": 900}]})
        else:
            stub.add_client_error("list_objects_v2", **_denied("ListObjectsV2"))
        read = JudgeRecordStore(s3).latest([RECORD])
    note = read.notes["chat-ep"]
    assert read.verdicts == () and "may not read" in note and "(AccessDenied)" in note
    assert "PilotJudge.grant_read_latest" in note


def test_a_throttled_read_is_a_note_and_the_next_record_is_still_read(aws: Any) -> None:
    s3, cw = aws
    chat = judged(s3, cw, "chat-ep")
    calls = {"n": 0}
    real = s3.get_object

    def flaky(**kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ClientError({"Error": {"Code": "SlowDown", "Message": "Reduce your request rate."}}, "GetObject")
        return real(**kw)

    s3.get_object = flaky  # type: ignore[method-assign]
    read = JudgeRecordStore(s3).latest([JudgeRecords(endpoint="embed-ep", bucket="judge-records"), chat])
    assert [v.endpoint for v in read.verdicts] == ["chat-ep"]
    assert "could not be read (SlowDown)" in read.notes["embed-ep"]
