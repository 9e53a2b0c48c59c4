"""Thin boto3 adapters for the judge: SageMaker Runtime (each variant by TargetVariant), SageMaker (the endpoint's
configuration, for the run id), S3 (prompt set, run state, records) and CloudWatch (the verdict metric)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from neuronfleet_contract.judge import (
    TRANSIENT_CONTAINER_STATUSES,
    TRANSIENT_ERRORS,
    verdict_dimensions,
)

from .logic import AnswerError, Outcome, RunState, parse_answer

RETRY_ATTEMPTS = 5
RETRY_CONFIG = {"mode": "standard", "total_max_attempts": RETRY_ATTEMPTS}
"""botocore's standard retry mode: throttling and transient errors (ThrottlingException, 5xx, ServiceUnavailable)
are retried with backoff, 5 attempts in all (``total_max_attempts`` counts the first call; the ``max_attempts`` used
before counts retries only, so its 5 meant 6 calls: botocore 1.44.5 config.py, read 2026-11-28). What still fails
transiently is an *unmeasured* outcome (asked again in the next batch), never the model's answer, never a crash."""
LATEST_ATTEMPTS = 3
"""Tries of the conditional write of ``latest.json`` when another run wrote it in between."""
INVOKE_READ_TIMEOUT_S = 70
"""InvokeEndpoint's answer may take up to 60 s (SageMaker's real-time invocation limit); the client waits a little
longer (botocore's default read timeout is 60 s)."""
INVOKE_CONNECT_TIMEOUT_S = 10
"""Connecting to the runtime endpoint (botocore's default is 60 s)."""
MAX_BACKOFF_S = 20
"""botocore's standard mode waits at most 20 s between attempts (botocore 1.44.5 retries/standard.py,
``_MAX_BACKOFF``, read 2026-11-28)."""
CALL_WORST_CASE_S = (RETRY_ATTEMPTS * (INVOKE_CONNECT_TIMEOUT_S + INVOKE_READ_TIMEOUT_S)
                     + (RETRY_ATTEMPTS - 1) * MAX_BACKOFF_S)
"""The longest one ``ask`` can take with its retries: 480 s."""
CONTENT_TYPE = "application/json"


class Variants:
    """InvokeEndpoint on one named variant (``TargetVariant``), timed on the client."""

    def __init__(self, client: Any, endpoint: str, *, clock: Callable[[], float] = time.perf_counter) -> None:
        self._client, self._endpoint, self._clock = client, endpoint, clock

    def ask(self, variant: str, body: Mapping[str, Any], *, style: Any, task: Any) -> Outcome:
        start = self._clock()
        try:
            answer = self._client.invoke_endpoint(EndpointName=self._endpoint, TargetVariant=variant,
                                                  ContentType=CONTENT_TYPE, Accept=CONTENT_TYPE,
                                                  Body=json.dumps(body).encode())
            raw = answer["Body"].read()
        except ClientError as exc:
            err = exc.response.get("Error", {})
            return Outcome(latency_ms=(self._clock() - start) * 1000, unmeasured=transient(exc),
                           error=f"{err.get('Code', 'ClientError')}: {err.get('Message', '')}"[:500])
        except BotoCoreError as exc:  # no answer at all (a timeout, a lost connection): nothing the model said
            return Outcome(latency_ms=(self._clock() - start) * 1000, error=f"{type(exc).__name__}: {exc}"[:500],
                           unmeasured=True)
        latency = (self._clock() - start) * 1000
        try:
            return Outcome(latency_ms=latency, answer=parse_answer(style, task, raw))
        except AnswerError as exc:
            return Outcome(latency_ms=latency, error=f"unreadable answer: {exc}")


def transient(exc: ClientError) -> bool:
    """Whether InvokeEndpoint's error is no answer of the model (neuronfleet_contract.judge.TRANSIENT_ERRORS)."""
    response = exc.response
    code = str(response.get("Error", {}).get("Code", ""))
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code in TRANSIENT_ERRORS:
        return True
    if code == "ModelError":
        return response.get("OriginalStatusCode") in TRANSIENT_CONTAINER_STATUSES
    return isinstance(status, int) and (status == 429 or status >= 500)


class Endpoint:
    def __init__(self, client: Any) -> None:
        self._client = client

    def config_name(self, name: str) -> str:
        """DescribeEndpoint's EndpointConfigName: a cutover changes it, so it names the deployment judged."""
        return str(self._client.describe_endpoint(EndpointName=name)["EndpointConfigName"])


class Store:
    """The judge's S3 objects: the prompt set (read-only), run states and verdict records (its own prefix)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def prompt_set(self, bucket: str, key: str) -> tuple[bytes, str]:
        """The prompt set's bytes and ETag (the ETag names its version in the run id)."""
        got = self._client.get_object(Bucket=bucket, Key=key)
        return got["Body"].read(), str(got.get("ETag", "")).strip('"')

    def load(self, bucket: str, key: str) -> dict[str, Any] | None:
        try:
            return dict(json.loads(self._client.get_object(Bucket=bucket, Key=key)["Body"].read()))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise

    def save_state(self, bucket: str, key: str, state: RunState) -> None:
        self._client.put_object(Bucket=bucket, Key=key, Body=json.dumps(state.to_json()).encode(),
                                ContentType=CONTENT_TYPE)

    def put_once(self, bucket: str, key: str, doc: Mapping[str, Any]) -> bool:
        """Write ``doc`` unless the key exists (S3 conditional write, ``If-None-Match: *``): False when it did."""
        try:
            self._client.put_object(Bucket=bucket, Key=key, Body=json.dumps(doc, indent=1).encode(),
                                    ContentType=CONTENT_TYPE, IfNoneMatch="*")
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
                return False
            raise

    def put(self, bucket: str, key: str, doc: Mapping[str, Any]) -> None:
        self._client.put_object(Bucket=bucket, Key=key, Body=json.dumps(doc, indent=1).encode(),
                                ContentType=CONTENT_TYPE)

    def put_latest(self, bucket: str, key: str, doc: Mapping[str, Any]) -> bool:
        """Make ``latest.json`` hold ``doc`` unless it holds it already or a newer run's record (later
        ``finished_at``, then run id): idempotent by the run's key, so a retry completes it and an old run's retry
        never hides a newer verdict. Conditional on what was read (``If-None-Match: *`` / ``If-Match: <ETag>``):
        another run's write in between is read again. True when written."""
        mine = _order(doc)
        for _ in range(LATEST_ATTEMPTS):
            try:
                got = self._client.get_object(Bucket=bucket, Key=key)
                current, etag = json.loads(got["Body"].read()), str(got.get("ETag", ""))
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
                    raise
                current, etag = None, ""
            if isinstance(current, dict) and current.get("run_id") == doc.get("run_id") and \
                    current.get("verdict") == doc.get("verdict"):
                return False
            if isinstance(current, dict) and _order(current) > mine:
                return False
            condition = {"IfMatch": etag} if current is not None else {"IfNoneMatch": "*"}
            try:
                self._client.put_object(Bucket=bucket, Key=key, Body=json.dumps(doc, indent=1).encode(),
                                        ContentType=CONTENT_TYPE, **condition)
                return True
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("PreconditionFailed", "412",
                                                                      "ConditionalRequestConflict"):
                    raise
        raise RuntimeError(f"s3://{bucket}/{key}: changed by other runs {LATEST_ATTEMPTS} times while this run "
                           "wrote it; the next invocation completes it")


def _order(doc: Any) -> tuple[str, str]:
    """A record's place among the endpoint's runs: when it finished, then its run id."""
    if not isinstance(doc, Mapping):
        return ("", "")
    return (str(doc.get("finished_at", "")), str(doc.get("run_id", "")))


class VerdictMetrics:
    def __init__(self, client: Any, namespace: str) -> None:
        self._client, self._namespace = client, namespace

    def publish(self, *, endpoint: str, at: datetime, values: Mapping[str, float], fleet: str = "") -> None:
        """One datapoint per value at the run's own timestamp: a retried run sends the same points again. Dimensions:
        ``verdict_dimensions`` (Fleet when given, Endpoint)."""
        dims = [{"Name": k, "Value": v} for k, v in verdict_dimensions(endpoint, fleet).items()]
        self._client.put_metric_data(Namespace=self._namespace, MetricData=[
            {"MetricName": name, "Dimensions": dims, "Timestamp": at, "Value": float(v), "Unit": "None"}
            for name, v in values.items()])
