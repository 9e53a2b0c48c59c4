"""The pilot judge under faults (issue 37): a refused input fails loudly and touches nothing guarded, a transient
error is asked again and, if it persists, leaves the prompt unmeasured (no verdict, never a no-go), publication is
idempotent by the run's key (a retry after a failure at any AWS call completes every step), overlapping runs agree,
and the measures' edges (p99 ratio's direction, token agreement at its bound, the run id's prompt-set version, the
runtime client's retries). What is asserted is what a user sees: the verdict metric's points, ``latest.json``, the
run's answer; moto's S3 and CloudWatch, faults injected with tests/fault_injection.py."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from neuronfleet.lambdas.judge.adapters import Store, Variants, VerdictMetrics
from neuronfleet.lambdas.judge.handler import run
from neuronfleet.lambdas.judge.logic import Answer, Outcome, RunState, judge
from neuronfleet_contract.judge import (
    MEASURE_ROUNDS,
    JudgeConfig,
    Prompt,
    Tolerances,
    Verdict,
    latest_key,
    record_key,
)
from neuronfleet_contract.namespaces import JUDGE_NAMESPACE
from tests.fault_injection import Fault, Faulty, client_error, timeout
from tests.unit.test_judge import (
    ANSWERS,
    SETTINGS,
    FixtureVariants,
    agreeing,
    aws,  # noqa: F401  (the fixture)
    completion,
    prompt_set,
)

T1 = datetime(2026, 11, 23, 15, 0, tzinfo=UTC)
DAY = (datetime(2026, 11, 23, tzinfo=UTC), datetime(2026, 11, 24, tzinfo=UTC))


def points(cw: Any, metric: str = "Verdict") -> list[float]:
    """Every datapoint of ``metric`` of the endpoint that day (a repeated point counts twice)."""
    got = cw.get_metric_statistics(
        Namespace=JUDGE_NAMESPACE, MetricName=metric, StartTime=DAY[0], EndTime=DAY[1], Period=60,
        Statistics=["Minimum", "Maximum", "SampleCount"],
        Dimensions=[{"Name": "Fleet", "Value": "nf-pilot"}, {"Name": "Endpoint", "Value": "nf-pilot-chat"}])
    out: list[float] = []
    for p in got["Datapoints"]:
        assert p["Minimum"] == p["Maximum"], p  # one value per minute in these tests
        out += [p["Minimum"]] * int(p["SampleCount"])
    return out


def latest_doc(s3: Any) -> dict[str, Any] | None:
    try:
        body = s3.get_object(Bucket="judge-records", Key=latest_key("judge/", "nf-pilot-chat"))["Body"].read()
    except ClientError:
        return None
    return dict(json.loads(body))


def drifting() -> dict[str, dict[str, bytes | str]]:
    """Neuron diverges on one prompt: a no-go on token agreement."""
    answers = agreeing()
    drift = ["Paris", ",", " of", " course", "!"]
    answers["neuron"]["Capital of France?"] = completion("".join(drift), drift)
    return answers


def batch(s3: Any, cw: Any, stand_in: Any, *, event: dict[str, Any] | None = None, at: datetime = T1,
          settings: JudgeConfig = SETTINGS, endpoint: Any = None, clock: Callable[[], float] | None = None,
          ) -> dict[str, Any]:
    """One invocation of the judge over (possibly faulty) clients; the prompt set must be in place."""
    ticks = iter(range(0, 10**9, 50))
    variants = Variants(stand_in, settings.endpoint_name, clock=clock or (lambda: next(ticks) / 1000))
    return run({"run_id": "r1"} if event is None else event, settings=settings, variants=variants,
               endpoint=endpoint, store=Store(s3), metrics=VerdictMetrics(cw, settings.namespace),
               remaining_ms=lambda: 900_000, now=lambda: at)


def put_prompts(s3: Any, raw: bytes | None = None) -> None:
    s3.put_object(Bucket=SETTINGS.prompts_bucket, Key=SETTINGS.prompts_key, Body=prompt_set() if raw is None else raw)


# ------------------------------------------------------------------------------------------- refused input


@pytest.mark.parametrize(("raw", "event", "field"), [
    (b"{oops\n", None, "s3://team-prompts/sets/chat.jsonl line 1"),
    (b"", None, "s3://team-prompts/sets/chat.jsonl"),
    (None, {"run_id": "../../etc"}, "run_id"),
    (b"missing", None, "s3://team-prompts/sets/chat.jsonl"),
])
def test_a_refused_input_fails_loudly_and_leaves_the_verdict_and_records_alone(aws, raw, event, field) -> None:  # noqa: F811
    s3, cw = aws
    put_prompts(s3)
    assert batch(s3, cw, FixtureVariants(agreeing()), event={"run_id": "r0"})["verdict"] == "go"
    before = latest_doc(s3)
    if raw == b"missing":
        s3.delete_object(Bucket=SETTINGS.prompts_bucket, Key=SETTINGS.prompts_key)
    else:
        put_prompts(s3, raw)
    stand_in = FixtureVariants(agreeing())
    result = batch(s3, cw, stand_in, event=event or {"run_id": "r1"}, at=T1 + timedelta(hours=1))
    assert result["status"] == "refused" and result["field"] == field and result["allowed"]
    assert points(cw, "NoVerdict") == [1.0]  # the no-verdict alarm's metric: into the fleet's topic
    assert points(cw) == [1.0]  # the earlier run's point alone: the verdict alarm keeps its state
    assert latest_doc(s3) == before and stand_in.calls == []
    listed = s3.list_objects_v2(Bucket="judge-records")["Contents"]
    assert not any("/r1" in o["Key"] for o in listed)  # no state, no record of the refused run


# ------------------------------------------------------------------------------------------- transient errors


class Flaky(FixtureVariants):
    """The stand-in whose ``failures[(variant, prompt)]`` first calls fail with an error (a code, or a ClientError)."""

    def __init__(self, answers: dict[str, dict[str, bytes | str]], failures: dict[tuple[str, str], int],
                 error: Any = "ThrottlingException") -> None:
        super().__init__(answers)
        self.failures, self.error = dict(failures), error

    def invoke_endpoint(self, **kw: Any) -> dict[str, Any]:
        text = json.loads(kw["Body"]).get("prompt")
        key = (kw["TargetVariant"], text)
        if self.failures.get(key, 0) > 0:
            self.failures[key] -= 1
            self.calls.append(key)
            if isinstance(self.error, BaseException):
                raise self.error
            raise ClientError({"Error": {"Code": self.error, "Message": "injected"},
                               "ResponseMetadata": {"HTTPStatusCode": 400}}, "InvokeEndpoint")
        return super().invoke_endpoint(**kw)


def model_error(original_status: int) -> ClientError:
    """SageMaker's ModelError as botocore raises it (424, with the container's own status)."""
    return ClientError({"Error": {"Code": "ModelError", "Message": "Received server error from model"},
                        "OriginalStatusCode": original_status, "OriginalMessage": "busy",
                        "ResponseMetadata": {"HTTPStatusCode": 424}}, "InvokeEndpoint")


@pytest.mark.parametrize("error", ["ThrottlingException", "ServiceUnavailable", "InternalFailure",
                                   "ModelNotReadyException", model_error(503), timeout("runtime.sagemaker")],
                         ids=["throttled", "503", "500", "not-ready", "container-503", "timeout"])
def test_one_transient_error_is_asked_again_never_stored_as_the_models_answer(aws, error) -> None:  # noqa: F811
    s3, cw = aws
    put_prompts(s3)
    stand_in = Flaky(agreeing(), {("gpu", "Say this is a test"): 1}, error)
    first = batch(s3, cw, stand_in)
    assert first["status"] == "incomplete" and first["to_ask_again"] == 1
    assert points(cw) == [] and latest_doc(s3) is None  # no verdict decided on it
    second = batch(s3, cw, stand_in, at=T1 + timedelta(hours=1))
    assert second["verdict"] == "go" and points(cw) == [1.0]
    assert stand_in.calls.count(("gpu", "Say this is a test")) == 2  # asked again, once
    doc = latest_doc(s3)
    assert doc is not None and doc["variants"]["gpu"]["errors"] == 0 and doc["unmeasured"] == []


def test_a_persistent_transient_error_ends_the_run_unmeasured_no_verdict_no_rollback(aws) -> None:  # noqa: F811
    s3, cw = aws
    put_prompts(s3)
    assert batch(s3, cw, FixtureVariants(agreeing()), event={"run_id": "r0"})["verdict"] == "go"
    stand_in = Flaky(agreeing(), {("gpu", "Say this is a test"): 99})
    results = [batch(s3, cw, stand_in, at=T1 + timedelta(hours=h)) for h in range(1, MEASURE_ROUNDS + 1)]
    assert [r["status"] for r in results] == ["incomplete"] * (MEASURE_ROUNDS - 1) + ["done"]
    done = results[-1]
    assert done["verdict"] == "unmeasured"
    assert "NO VERDICT: 1 of 3 prompts unmeasured" in done["line"] and "ThrottlingException" in done["line"]
    assert "verdict alarm keeps its state" in done["line"]
    assert points(cw) == [1.0]  # r0's GO alone: no 0 point, so no rollback decided on throttling
    assert points(cw, "NoVerdict") == [1.0]
    doc = latest_doc(s3)  # the report no longer shows r0's GO as this deployment's
    assert doc is not None and doc["run_id"] == "r1" and doc["verdict"] == "unmeasured" and not doc["go"]
    assert doc["failing"] == [] and doc["unmeasured"] == ["3"]
    assert Verdict.from_json(doc).outcome == "unmeasured"
    assert stand_in.calls.count(("gpu", "Say this is a test")) == MEASURE_ROUNDS  # bounded
    again = batch(s3, cw, stand_in, at=T1 + timedelta(hours=9))
    assert again["repeated"] and stand_in.calls.count(("gpu", "Say this is a test")) == MEASURE_ROUNDS


@pytest.mark.parametrize(("error", "counted"), [(model_error(500), "ModelError"), ("ValidationError", "ValidationError")])
def test_the_models_own_error_is_its_answer_a_no_go(aws, error, counted) -> None:  # noqa: F811
    s3, cw = aws
    put_prompts(s3)
    result = batch(s3, cw, Flaky(agreeing(), {("gpu", "Say this is a test"): 1}, error))
    assert result["verdict"] == "no-go" and "error rate (gpu)" in result["line"]
    assert points(cw) == [0.0]


def test_the_runtime_client_retries_throttling_and_5xx_before_an_outcome(monkeypatch) -> None:
    """The deployed wiring (handler._wired): the SageMaker runtime client answers after two 503s and a throttle at
    the HTTP level (botocore's standard retries, 5 attempts); a sixth failure would be its outcome."""
    import urllib3
    from botocore.awsrequest import AWSResponse

    from neuronfleet.lambdas.judge import handler as entry

    for k, v in (SETTINGS.to_environment() | {"AWS_DEFAULT_REGION": "us-east-2", "AWS_ACCESS_KEY_ID": "x",
                                               "AWS_SECRET_ACCESS_KEY": "x"}).items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr("botocore.endpoint.time.sleep", lambda s: None)
    entry._wired.cache_clear()
    try:
        variants = entry._wired()[1]
    finally:
        entry._wired.cache_clear()
    client = variants._client
    answers = [(503, b'{"message": "down"}', "ServiceUnavailable"), (400, b'{"message": "slow"}',
                                                                      "ThrottlingException"),
               (503, b'{"message": "down"}', "ServiceUnavailable"),
               (200, completion("The answer is 4.", ANSWERS["What is 2+2?"]), "")]
    sent: list[int] = []

    def reply(request: Any, **_: Any) -> AWSResponse:
        status, body, code = answers[min(len(sent), len(answers) - 1)]
        sent.append(status)
        headers = {"Content-Type": "application/json"} | ({"x-amzn-ErrorType": code} if code else {})
        raw = urllib3.HTTPResponse(body=io.BytesIO(body), status=status, headers=headers, preload_content=False)
        return AWSResponse(request.url, status, headers, raw)

    client.meta.events.register("before-send.sagemaker-runtime.InvokeEndpoint", reply)
    outcome = variants.ask("gpu", {"prompt": "What is 2+2?"}, style="openai", task="generation")
    assert sent == [503, 400, 503, 200]
    assert outcome.answer is not None and outcome.answer.text == "The answer is 4." and not outcome.unmeasured
    answers[:] = [(503, b'{"message": "down"}', "ServiceUnavailable")]
    sent.clear()
    outcome = variants.ask("gpu", {"prompt": "What is 2+2?"}, style="openai", task="generation")
    assert sent == [503] * 5 and outcome.unmeasured and outcome.answer is None  # bounded: 5 attempts


# ------------------------------------------------------------------------------------------- publication


S3_CALLS = [
    ("get_object", 1, False),  # the prompt set
    ("get_object", 2, False),  # the run's record (none yet)
    ("get_object", 3, False),  # the run's state
    ("put_object", 1, False), ("put_object", 1, True),  # the state with its finish time
    ("put_object", 2, False), ("put_object", 2, True),  # the record (If-None-Match)
    ("get_object", 4, False),  # latest.json read
    ("put_object", 3, False), ("put_object", 3, True),  # latest.json (conditional)
]


@pytest.mark.parametrize(("operation", "n", "after"), S3_CALLS,
                         ids=[f"{o}#{n}{'-answer-lost' if a else ''}" for o, n, a in S3_CALLS])
def test_a_failure_at_each_s3_call_then_a_retry_publishes_the_verdict_once(aws, operation, n, after) -> None:  # noqa: F811
    """r0 was GO; this deployment's run r1 is a NO-GO. Whatever S3 call of r1 fails (before it took effect, or
    after, its answer lost), Lambda's retry ends with latest.json saying r1's NO-GO and one 0 point: never r0's GO
    left standing; r1's point is the run's own (its timestamp, its value), re-sent at most by the retry of a run that
    failed after publishing it (CloudWatch's Minimum, what the alarm reads, is the same)."""
    s3, cw = aws
    put_prompts(s3)
    assert batch(s3, cw, FixtureVariants(agreeing()), event={"run_id": "r0"})["verdict"] == "go"
    error = timeout("s3") if after else client_error("SlowDown", operation, status=503)
    faulty = Faulty(s3, {(operation, n): Fault(error, after=after)})
    with pytest.raises(type(error)):
        batch(faulty, cw, FixtureVariants(drifting()), at=T1 + timedelta(hours=1))
    retry = batch(s3, cw, FixtureVariants(drifting()), at=T1 + timedelta(hours=1, minutes=1))
    assert retry["verdict"] == "no-go"
    doc = latest_doc(s3)
    assert doc is not None and (doc["run_id"], doc["verdict"]) == ("r1", "no-go")
    got = points(cw)
    assert got.count(1.0) == 1 and set(got) == {0.0, 1.0}  # r0's 1, r1's 0 (in one minute: one timestamp)
    record = json.loads(s3.get_object(Bucket="judge-records", Key=record_key("judge/", "nf-pilot-chat", "r1"))
                        ["Body"].read())
    assert record == doc


@pytest.mark.parametrize("after", [False, True], ids=["refused", "answer-lost"])
def test_a_failed_metric_then_a_retry_publishes_the_verdict(aws, after) -> None:  # noqa: F811
    s3, cw = aws
    put_prompts(s3)
    error = timeout("monitoring") if after else client_error("Throttling", "PutMetricData", status=400)
    faulty = Faulty(cw, {("put_metric_data", 1): Fault(error, after=after)})
    with pytest.raises(type(error)):
        batch(s3, faulty, FixtureVariants(drifting()))
    assert latest_doc(s3) is None  # nothing recorded before the metric is out
    assert batch(s3, cw, FixtureVariants(drifting()), at=T1 + timedelta(minutes=1))["verdict"] == "no-go"
    assert set(points(cw)) == {0.0}  # the same point (the run's own timestamp), once or re-sent
    assert latest_doc(s3)["verdict"] == "no-go"  # type: ignore[index]


def test_overlapping_runs_of_one_run_id_agree_and_write_latest_once(aws) -> None:  # noqa: F811
    """B runs entirely while A is between its metric and its record: A finds B's record and keeps it."""
    s3, cw = aws
    put_prompts(s3)
    inner: list[dict[str, Any]] = []
    a = Faulty(s3, before={("put_object", 2): lambda: inner.append(batch(s3, cw, FixtureVariants(drifting())))})
    outer = batch(a, cw, FixtureVariants(drifting()))
    assert inner[0]["verdict"] == outer["verdict"] == "no-go" and inner[0]["line"] == outer["line"]
    assert set(points(cw)) == {0.0} and latest_doc(s3)["run_id"] == "r1"  # type: ignore[index]


def test_an_old_runs_retry_never_hides_a_newer_verdict(aws) -> None:  # noqa: F811
    """r1 (NO-GO) lost its latest.json write; r2 (a later run, GO) published; r1's retry then leaves r2's standing."""
    s3, cw = aws
    put_prompts(s3)
    faulty = Faulty(s3, {("put_object", 3): Fault(client_error("SlowDown", "PutObject", status=503))})
    with pytest.raises(ClientError):
        batch(faulty, cw, FixtureVariants(drifting()))
    assert batch(s3, cw, FixtureVariants(agreeing()), event={"run_id": "r2"},
                 at=T1 + timedelta(hours=1))["verdict"] == "go"
    retry = batch(s3, cw, FixtureVariants(drifting()), at=T1 + timedelta(hours=2))
    assert retry["repeated"] and retry["verdict"] == "no-go"
    assert latest_doc(s3)["run_id"] == "r2"  # type: ignore[index]


def test_a_verdict_read_back_from_an_earlier_record_version_still_reads() -> None:
    doc = Verdict(endpoint="e", run_id="r", task="generation", go=True, failing=(), measures={}, variants={},
                  prompts=1, unit="tokens").to_json()
    for new in ("unmeasured", "reasons"):
        doc.pop(new)
    assert Verdict.from_json(doc).outcome == "go"


# ------------------------------------------------------------------------------------------- measures at their edges


class Timed(FixtureVariants):
    """The stand-in whose calls take ``ms[variant]`` on the client's clock."""

    def __init__(self, answers: dict[str, dict[str, bytes | str]], ms: dict[str, float]) -> None:
        super().__init__(answers)
        self.ms, self.now = ms, 0.0

    def clock(self) -> float:
        return self.now

    def invoke_endpoint(self, **kw: Any) -> dict[str, Any]:
        self.now += self.ms[kw["TargetVariant"]] / 1000
        return super().invoke_endpoint(**kw)


@pytest.mark.parametrize(("ms", "verdict", "ratio"), [
    ({"neuron": 400.0, "gpu": 200.0}, "no-go", 2.0),  # Neuron twice as slow
    ({"neuron": 200.0, "gpu": 400.0}, "go", 0.5),  # Neuron twice as fast
    ({"neuron": 300.0, "gpu": 200.0}, "go", 1.5),  # exactly the bound: allowed
])
def test_the_p99_ratio_is_neurons_over_gpus(aws, ms, verdict, ratio) -> None:  # noqa: F811
    s3, cw = aws
    put_prompts(s3)
    stand_in = Timed(agreeing(), ms)
    result = batch(s3, cw, stand_in, clock=stand_in.clock)
    doc = latest_doc(s3)
    assert result["verdict"] == verdict and doc is not None
    assert doc["measures"]["latency_p99_ratio"] == pytest.approx(ratio)
    if verdict == "no-go":
        assert "p99 latency ratio (neuron) 2 against a limit of 1.5" in result["line"]


def _agreement_run(agreements: list[tuple[int, int]]) -> Verdict:
    """A run whose prompts agree on ``k`` of ``n`` tokens each."""
    prompts = [Prompt(id=str(i), text=f"p{i}") for i in range(len(agreements))]
    state = RunState(run_id="r")
    for p, (k, n) in zip(prompts, agreements, strict=True):
        gpu = tuple(f"t{j}" for j in range(n))
        neuron = gpu[:k] + tuple(f"x{j}" for j in range(k, n))
        state.add("gpu", p.id, Outcome(latency_ms=10, answer=Answer(text="", tokens=gpu, units=n)))
        state.add("neuron", p.id, Outcome(latency_ms=10, answer=Answer(text="", tokens=neuron, units=n)))
    return judge(endpoint="e", run_id="r", task="generation", prompts=prompts, state=state, tolerances=Tolerances(),
                 usd_per_hour={})


@pytest.mark.parametrize(("agreements", "go"), [
    ([(19, 20)], True),  # 0.95: exactly the bound, "at least 0.95"
    ([(12, 12), (11, 12), (14, 15)], True),  # a mean of exactly 0.95 that floating point would put below
    ([(18, 19)], False),  # 0.947: just below
    ([(20, 20), (17, 19)], False),  # mean 0.947
])
def test_token_agreement_at_its_bound_passes_and_just_below_fails(agreements, go) -> None:
    v = _agreement_run(agreements)
    assert v.go is go, v.measures
    assert [f.measure for f in v.failing] == ([] if go else ["token agreement"])


def test_a_changed_prompt_set_is_a_new_run_not_the_old_verdict(aws) -> None:  # noqa: F811
    """The scheduled run's id is the deployment and the prompt set's version: the same deployment, a new set with a
    prompt on which Neuron drifts, gets its own verdict."""
    s3, cw = aws

    class Deployed:
        @staticmethod
        def config_name(name: str) -> str:
            return "nf-pilot-chat-config-1"

    put_prompts(s3)
    first = batch(s3, cw, FixtureVariants(drifting()), event={}, endpoint=Deployed())
    assert first["verdict"] == "no-go"
    put_prompts(s3, prompt_set([("What is 2+2?", "4"), ("Say this is a test", None)]))  # the drifting one gone
    second = batch(s3, cw, FixtureVariants(drifting()), event={}, endpoint=Deployed(), at=T1 + timedelta(hours=1))
    assert "repeated" not in second and second["verdict"] == "go" and second["run_id"] != first["run_id"]
    assert latest_doc(s3)["prompts"] == 2  # type: ignore[index]


def test_the_transient_errors_are_botocores_invoke_endpoint_errors_of_status_429_and_5xx() -> None:
    """neuronfleet_contract.judge.TRANSIENT_ERRORS against the installed botocore's sagemaker-runtime model: every
    InvokeEndpoint error answered with 429 or 5xx is transient, the others (ModelError 424, ValidationError 400) are
    the model's answer; and the backoff bound the batch margin counts."""
    import botocore.session
    from botocore.retries.standard import ExponentialBackoff

    from neuronfleet.lambdas.judge.adapters import MAX_BACKOFF_S
    from neuronfleet_contract.judge import TRANSIENT_ERRORS

    op = botocore.session.get_session().get_service_model("sagemaker-runtime").operation_model("InvokeEndpoint")
    status = {e.name: e.metadata["error"]["httpStatusCode"] for e in op.error_shapes}
    assert status == {"InternalFailure": 500, "ServiceUnavailable": 503, "ValidationError": 400, "ModelError": 424,
                      "InternalDependencyException": 530, "ModelNotReadyException": 429}
    assert {n for n, code in status.items() if code == 429 or code >= 500} <= TRANSIENT_ERRORS
    assert not {"ModelError", "ValidationError"} & TRANSIENT_ERRORS
    assert ExponentialBackoff._MAX_BACKOFF == MAX_BACKOFF_S
