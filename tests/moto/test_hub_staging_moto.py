"""The hub-model copy's handler against moto's S3 and Secrets Manager, with a stand-in hub: a whole copy, a run that
hands over before its timeout and the next that resumes the multipart upload from the parts S3 holds, failures
answered (never left to CloudFormation's timeout) with the token scrubbed, Delete keeping the objects."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from email.message import Message
from typing import Any

import boto3
import pytest
from moto import mock_aws

from neuronfleet.lambdas.hub_staging import logic
from neuronfleet.lambdas.hub_staging.adapters import Hub, Relay, Secrets, Store
from neuronfleet.lambdas.hub_staging.handler import Services, run
from tests.unit.test_hub_staging import SHA, FakeWeb, request

TOKEN = "hf_" + "t0ken" * 6
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
HUB = "https://huggingface.co"
BIG = bytes(range(256)) * (65 * 1024 * 4)  # 65 MiB: two parts of 64 MiB and 1 MiB
FILES = {"config.json": b'{"architectures": ["LlamaForCausalLM"]}', "model-00001-of-00001.safetensors": BIG,
         "original/consolidated.00.pth": b"meta's own format"}


class RangedHub(FakeWeb):
    """The hub's tree and files (Range honoured), LFS files behind a redirect to another host."""

    def __init__(self, status: int = 200) -> None:
        tree = [{"type": "file", "path": p, "size": len(b), "oid": "x"} for p, b in FILES.items()]
        super().__init__({f"{HUB}/api/models/{MODEL}/tree/{SHA}?recursive=true": (status, json.dumps(tree).encode(),
                                                                                  {})})
        self.reads: list[tuple[str, str]] = []

    def __call__(self, req: Any) -> Any:
        if "/resolve/" not in req.full_url:
            return super().__call__(req)
        self.seen.append((req.full_url, dict(req.header_items())))
        path = req.full_url.split(f"/resolve/{SHA}/")[1]
        body, ranged = FILES[path], req.get_header("Range")
        self.reads.append((path, ranged or ""))
        if ranged:
            start, end = (int(x) for x in ranged.removeprefix("bytes=").split("-"))
            body = body[start:end + 1]
        answer = io.BytesIO(body)
        answer.headers = Message()  # type: ignore[attr-defined]
        return answer


class Recorder:
    def __init__(self) -> None:
        self.answers: list[dict[str, Any]] = []
        self.relayed: list[dict[str, Any]] = []

    def respond(self, url: str, body: Any) -> None:
        assert url == "pre-signed-url-for-create-response"
        self.answers.append(dict(body))


class FakeRelay(Relay):
    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder

    def again(self, function_name: str, event: Any) -> None:
        assert function_name == "copier"
        self._recorder.relayed.append(dict(event))


@pytest.fixture
def aws() -> Iterator[tuple[Any, Any]]:
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-2")
        s3.create_bucket(Bucket="nf-models", CreateBucketConfiguration={"LocationConstraint": "us-east-2"})
        sm = boto3.client("secretsmanager", region_name="us-east-2")
        arn = sm.create_secret(Name="nf-pilot/hf-token", SecretString=TOKEN + "\n")["ARN"]
        yield s3, arn


def services(s3: Any, hub: RangedHub, recorder: Recorder) -> Services:
    return Services(secrets=Secrets(boto3.client("secretsmanager", region_name="us-east-2")),
                    store=lambda bucket: Store(s3, bucket), relay=FakeRelay(recorder),
                    hub=lambda token: Hub(token, open_=hub), respond=recorder.respond)


def event(arn: str, **changes: Any) -> dict[str, Any]:
    e = request(**changes)
    e["ResourceProperties"]["SecretArn"] = arn
    return e


def copied(s3: Any) -> dict[str, bytes]:
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="nf-models").get("Contents", [])]
    return {k: s3.get_object(Bucket="nf-models", Key=k)["Body"].read() for k in keys}


PREFIX = f"hub/m/{SHA}/"


def test_a_whole_copy_in_one_run(aws) -> None:
    s3, arn = aws
    hub, rec = RangedHub(), Recorder()
    assert run(event(arn), remaining_ms=lambda: 900_000, function_name="copier",
               services=services(s3, hub, rec)) == "answered SUCCESS"
    assert copied(s3) == {PREFIX + "config.json": FILES["config.json"],
                          PREFIX + "model-00001-of-00001.safetensors": BIG}  # original/ is not copied
    (answer,) = rec.answers
    assert answer["Status"] == "SUCCESS" and answer["PhysicalResourceId"] == f"s3://nf-models/{PREFIX}"
    assert answer["Data"] == {"S3Uri": f"s3://nf-models/{PREFIX}", "Files": 2, "Bytes": len(BIG) + len(FILES["config.json"])}
    assert all(h.get("Authorization") == f"Bearer {TOKEN}" for _, h in hub.seen)  # the secret, stripped
    assert TOKEN not in json.dumps(rec.answers)


def test_a_run_near_its_timeout_hands_over_and_the_next_finishes(aws) -> None:
    s3, arn = aws
    hub, rec = RangedHub(), Recorder()
    clock = iter([900_000, 900_000])  # config.json and the big file's start; then less than the margin
    first = event(arn)
    assert run(first, remaining_ms=lambda: next(clock, logic.STOP_MARGIN_MS - 1), function_name="copier",
               services=services(s3, hub, rec)) == "handed over"
    assert rec.answers == [] and rec.relayed == [{**first, logic.RUN_KEY: 2}]
    assert [u["Key"] for u in s3.list_multipart_uploads(Bucket="nf-models")["Uploads"]] == [
        PREFIX + "model-00001-of-00001.safetensors"]  # started, no part sent: the next run finds it
    hub.reads.clear()
    assert run(rec.relayed[0], remaining_ms=lambda: 900_000, function_name="copier",
               services=services(s3, hub, rec)) == "answered SUCCESS"
    assert [p for p, _ in hub.reads] == ["model-00001-of-00001.safetensors"] * 2  # config.json not read again
    assert copied(s3)[PREFIX + "model-00001-of-00001.safetensors"] == BIG
    assert "Uploads" not in s3.list_multipart_uploads(Bucket="nf-models")
    assert [a["Status"] for a in rec.answers] == ["SUCCESS"]


def test_a_resumed_upload_reads_only_the_parts_s3_lacks(aws) -> None:
    s3, arn = aws
    key = PREFIX + "model-00001-of-00001.safetensors"
    upload_id = s3.create_multipart_upload(Bucket="nf-models", Key=key)["UploadId"]
    s3.upload_part(Bucket="nf-models", Key=key, UploadId=upload_id, PartNumber=1, Body=BIG[:logic.PART_SIZE])
    hub, rec = RangedHub(), Recorder()
    assert run(event(arn, NeuronFleetRun=2), remaining_ms=lambda: 900_000, function_name="copier",
               services=services(s3, hub, rec)) == "answered SUCCESS"
    assert sorted(hub.reads) == [("config.json", ""),
                                 ("model-00001-of-00001.safetensors", f"bytes={logic.PART_SIZE}-{len(BIG) - 1}")]
    assert copied(s3)[key] == BIG


def test_the_last_run_that_cannot_finish_answers_failed(aws) -> None:
    s3, arn = aws
    rec = Recorder()
    assert run(event(arn, NeuronFleetRun=logic.MAX_RUNS), remaining_ms=lambda: 1_000, function_name="copier",
               services=services(s3, RangedHub(), rec)) == "answered FAILED"
    (answer,) = rec.answers
    assert answer["Status"] == "FAILED" and f"not copied within {logic.MAX_RUNS} runs" in answer["Reason"]
    assert rec.relayed == []


def test_a_refused_token_is_answered_failed_without_the_token(aws) -> None:
    s3, arn = aws
    rec = Recorder()
    assert run(event(arn), remaining_ms=lambda: 900_000, function_name="copier",
               services=services(s3, RangedHub(status=401), rec)) == "answered FAILED"
    (answer,) = rec.answers
    assert "HTTP 401 the token is refused" in answer["Reason"] and MODEL in answer["Reason"]
    assert TOKEN not in json.dumps(answer)


def test_a_bad_request_is_answered_and_delete_keeps_the_copy(aws) -> None:
    s3, arn = aws
    s3.put_object(Bucket="nf-models", Key=PREFIX + "config.json", Body=b"{}")
    rec = Recorder()
    bad = event(arn)
    bad["ResourceProperties"]["Revision"] = "main"
    assert run(bad, remaining_ms=lambda: 900_000, function_name="copier",
               services=services(s3, RangedHub(), rec)) == "refused"
    assert rec.answers[0]["Status"] == "FAILED" and "Revision: got 'main'" in rec.answers[0]["Reason"]
    gone = event(arn, RequestType="Delete", PhysicalResourceId=f"s3://nf-models/{PREFIX}")
    gone["ResourceProperties"]["SecretArn"] = "arn:aws:secretsmanager:us-east-2:222222222222:secret:deleted-Ab12Cd"
    assert run(gone, remaining_ms=lambda: 900_000, function_name="copier",
               services=services(s3, RangedHub(), rec)) == "answered SUCCESS"  # no secret read on Delete
    assert rec.answers[1]["PhysicalResourceId"] == f"s3://nf-models/{PREFIX}"
    assert PREFIX + "config.json" in copied(s3)
