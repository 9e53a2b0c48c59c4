"""The pilot judge (lambdas/judge): prompt sets, the containers' answers (their own published examples, see
tests/data/judge/README.md), parity measures, and whole runs against a local stand-in of the two variants that
answers from those fixtures (moto serves no models), with S3 and CloudWatch in moto."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from neuronfleet.lambdas.judge.adapters import Store, Variants, VerdictMetrics
from neuronfleet.lambdas.judge.handler import run
from neuronfleet.lambdas.judge.logic import (
    cosine,
    parse_answer,
    percentile,
    request,
    token_agreement,
)
from neuronfleet_contract.judge import (
    JudgeConfig,
    Prompt,
    PromptSetError,
    Tolerances,
    Verdict,
    latest_key,
    parse_prompt_set,
    record_key,
)
from neuronfleet_contract.namespaces import JUDGE_NAMESPACE

DATA = Path(__file__).parents[1] / "data" / "judge"
COMPLETION = json.loads((DATA / "openai_completion.json").read_text())
GENERATED = json.loads((DATA / "hf_toolkit_generated_text.json").read_text())


def embeddings_example() -> dict[str, Any]:
    """OpenAI's published example with its elision line (and the comma it leaves) removed: the only change."""
    text = (DATA / "openai_embeddings.txt").read_text()
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith("....")]
    text = "\n".join(lines).replace("-0.0028842222,\n", "-0.0028842222\n")
    return dict(json.loads(text))


# ------------------------------------------------------------------------------------------- prompt sets


@pytest.mark.parametrize(("raw", "field", "allowed"), [
    (b"", "prompt set", "at least one line"),
    (b"\n  \n", "prompt set", "at least one line"),
    (b'{"prompt": "a"}\nnot json\n', "prompt set line 2", "a JSON object"),
    (b'["a list"]\n', "prompt set line 1", "a JSON object"),
    (b'{"text": "wrong key"}\n', "prompt set line 1.prompt", "a non-empty string"),
    (b'{"prompt": "  "}\n', "prompt set line 1.prompt", "a non-empty string"),
    (b'{"prompt": "a", "id": 1}\n{"prompt": "b", "id": "1"}\n', "prompt set line 2.id", "not used by another"),
    (b'{"prompt": "a", "reference": 4}\n', "prompt set line 1.reference", "a string"),
    (b"\xff\xfe", "prompt set", "UTF-8"),
])
def test_a_bad_prompt_set_is_refused_with_field_value_and_allowed(raw: bytes, field: str, allowed: str) -> None:
    with pytest.raises(PromptSetError) as err:
        parse_prompt_set(raw)
    assert err.value.field == field
    assert allowed in err.value.allowed
    assert "got" in str(err.value) and "allowed" in str(err.value)


def test_a_prompt_set_reads_prompts_references_and_ids() -> None:
    got = parse_prompt_set(b'{"prompt": "2+2?", "reference": "4"}\n\n{"input": "hi", "id": "greet"}\n')
    assert got == (Prompt(id="1", text="2+2?", reference="4"), Prompt(id="greet", text="hi"))


# ------------------------------------------------------------------------------------------- answers


def test_the_openai_completion_example_reads_its_text_and_token_count() -> None:
    answer = parse_answer("openai", "generation", json.dumps(COMPLETION).encode())
    assert answer.text == "\n\nThis is indeed a test"
    assert answer.units == 7  # usage.completion_tokens
    assert answer.tokens is None  # logprobs null: agreement falls back to words


def test_the_openai_embeddings_example_reads_its_vector() -> None:
    answer = parse_answer("openai", "embeddings", json.dumps(embeddings_example()).encode())
    assert answer.embedding == (0.0023064255, -0.009327292, -0.0028842222)


def test_the_hf_toolkit_generated_text_example_reads() -> None:
    answer = parse_answer("generated-text", "generation", json.dumps(GENERATED).encode())
    assert answer.text == "42 is the answer to life, the universe and everything"
    assert answer.units == 10  # words: the example carries no details


@pytest.mark.parametrize(("style", "task", "body"), [
    ("openai", "generation", b"not json"), ("openai", "generation", b'{"choices": []}'),
    ("openai", "embeddings", b'{"data": [{"embedding": ["x"]}]}'), ("generated-text", "generation", b"[{}]"),
])
def test_an_unreadable_answer_is_an_error_not_a_crash(style: Any, task: Any, body: bytes) -> None:
    from neuronfleet.lambdas.judge.logic import AnswerError
    with pytest.raises(AnswerError):
        parse_answer(style, task, body)


def test_requests_are_greedy_in_each_containers_shape() -> None:
    p = Prompt(id="1", text="hi")
    assert request("openai", "generation", p, max_new_tokens=5) == {
        "prompt": "hi", "max_tokens": 5, "temperature": 0, "logprobs": 1}
    assert request("generated-text", "generation", p, max_new_tokens=5)["parameters"]["do_sample"] is False
    assert request("openai", "embeddings", p, max_new_tokens=5) == {"input": "hi"}


def test_measures() -> None:
    assert token_agreement(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert token_agreement(["a", "b", "c", "d"], ["a", "x", "c"]) == 0.5
    assert token_agreement([], []) == 1.0
    assert cosine([1.0, 0.0], [1.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 1.0]) == pytest.approx(0.0)
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0
    assert percentile(list(map(float, range(1, 101))), 99) == 99.0
    assert percentile([], 50) is None


# ------------------------------------------------------------------------------------------- the stand-in


class FixtureVariants:
    """sagemaker-runtime's InvokeEndpoint for the two variants, answering from fixtures: ``answers[variant]`` maps a
    prompt's text to the answer body, or to an error code raised as SageMaker raises it (a ClientError)."""

    def __init__(self, answers: dict[str, dict[str, bytes | str]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str]] = []

    def invoke_endpoint(self, **kw: Any) -> dict[str, Any]:
        body = json.loads(kw["Body"])
        text = body.get("prompt") or body.get("inputs") or body.get("input")
        self.calls.append((kw["TargetVariant"], text))
        got = self.answers[kw["TargetVariant"]][text]
        if isinstance(got, str):
            raise ClientError({"Error": {"Code": got, "Message": f"{got} from the stand-in"}}, "InvokeEndpoint")
        return {"Body": io.BytesIO(got), "ContentType": "application/json"}


def completion(text: str, tokens: list[str] | None = None) -> bytes:
    """The published completion example with its text (and, where given, its tokens as logprobs) changed."""
    doc = copy.deepcopy(COMPLETION)
    doc["choices"][0]["text"] = text
    if tokens is not None:
        doc["choices"][0]["logprobs"] = {"tokens": tokens}
        doc["usage"]["completion_tokens"] = len(tokens)
    return json.dumps(doc).encode()


def embedding(vector: list[float]) -> bytes:
    doc = embeddings_example()
    doc["data"][0]["embedding"] = vector
    return json.dumps(doc).encode()


PROMPTS = [("What is 2+2?", "4"), ("Capital of France?", "Paris"), ("Say this is a test", None)]
ANSWERS = {"What is 2+2?": ["The", " answer", " is", " 4", "."], "Capital of France?": ["Paris", " is", " the",
           " capital", "."], "Say this is a test": ["\n\n", "This", " is", " indeed", " a", " test"]}


def prompt_set(prompts: list[tuple[str, str | None]] = PROMPTS) -> bytes:
    return "\n".join(json.dumps({"prompt": p} | ({"reference": r} if r else {})) for p, r in prompts).encode()


def agreeing() -> dict[str, dict[str, bytes | str]]:
    same = {p: completion("".join(t), t) for p, t in ANSWERS.items()}
    return {"neuron": dict(same), "gpu": dict(same)}


@pytest.fixture
def aws() -> Any:
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-2")
        for b in ("team-prompts", "judge-records"):
            s3.create_bucket(Bucket=b, CreateBucketConfiguration={"LocationConstraint": "us-east-2"})
        yield s3, boto3.client("cloudwatch", region_name="us-east-2")


SETTINGS = JudgeConfig(endpoint_name="nf-pilot-chat", prompts_bucket="team-prompts", prompts_key="sets/chat.jsonl",
                       records_bucket="judge-records", fleet="nf-pilot",
                       usd_per_hour={"neuron": 7.59, "gpu": 13.12})


def judge_run(aws: Any, answers: dict[str, dict[str, bytes | str]], *, raw: bytes | None = None,
              settings: JudgeConfig = SETTINGS, event: dict[str, Any] | None = None,
              remaining: Callable[[], int] = lambda: 900_000, stand_in: FixtureVariants | None = None,
              ) -> dict[str, Any]:
    s3, cw = aws
    s3.put_object(Bucket=settings.prompts_bucket, Key=settings.prompts_key, Body=prompt_set() if raw is None else raw)
    ticks = iter(range(0, 10**9, 50))  # every call "takes" 50 ms on the client's clock
    variants = Variants(stand_in or FixtureVariants(answers), settings.endpoint_name, clock=lambda: next(ticks) / 1000)
    return run(event or {"run_id": "r1"}, settings=settings, variants=variants, endpoint=None, store=Store(s3),
               metrics=VerdictMetrics(cw, settings.namespace), remaining_ms=remaining,
               now=lambda: datetime(2026, 11, 23, 15, 0, tzinfo=UTC))


def verdict_points(cw: Any) -> list[float]:
    got = cw.get_metric_statistics(
        Namespace=JUDGE_NAMESPACE, MetricName="Verdict", StartTime=datetime(2026, 11, 23, tzinfo=UTC),
        EndTime=datetime(2026, 11, 24, tzinfo=UTC), Period=86400, Statistics=["Minimum", "SampleCount"],
        Dimensions=[{"Name": "Fleet", "Value": "nf-pilot"}, {"Name": "Endpoint", "Value": "nf-pilot-chat"}])
    return [p["Minimum"] for p in got["Datapoints"] for _ in range(int(p["SampleCount"]))]


def latest(aws: Any) -> Verdict:
    body = aws[0].get_object(Bucket="judge-records", Key=latest_key("judge/", "nf-pilot-chat"))["Body"].read()
    return Verdict.from_json(json.loads(body))


# ------------------------------------------------------------------------------------------- whole runs


def test_variants_that_agree_get_a_go_in_the_record_and_the_metric(aws: Any) -> None:
    result = judge_run(aws, agreeing())
    assert result["status"] == "done" and result["verdict"] == "go"
    v = latest(aws)
    assert v.go and v.failing == () and v.measures["token_agreement"] == 1.0 and v.token_unit == "tokens"
    assert v.measures["task_score_neuron"] == 1.0 and v.measures["task_score_drop"] == 0.0
    assert v.variants["neuron"].p50_ms == pytest.approx(50.0) and v.variants["neuron"].errors == 0
    # 16 tokens in 3 x 50 ms on each variant: cost per million tokens from the hourly price
    rate = 16 / 0.15
    assert v.variants["gpu"].units_per_second == pytest.approx(rate)
    assert v.variants["neuron"].usd_per_million == pytest.approx(7.59 / (rate * 3600) * 1e6)
    assert result["line"].startswith("nf-pilot-chat: GO: Neuron matches GPU on 3 prompts")
    assert verdict_points(aws[1]) == [1.0]


def test_neuron_drifting_past_the_tolerance_is_a_no_go_naming_token_agreement(aws: Any) -> None:
    answers = agreeing()
    drift = ["Paris", ",", " of", " course", "!"]  # diverges after the first token: 1 of 5 positions agree
    answers["neuron"]["Capital of France?"] = completion("".join(drift), drift)
    result = judge_run(aws, answers)
    v = latest(aws)
    assert result["verdict"] == "no-go" and not v.go
    assert [f.measure for f in v.failing] == ["token agreement"]
    assert v.measures["token_agreement"] == pytest.approx((1 + 0.2 + 1) / 3)
    assert v.failing[0].limit == 0.95 and v.failing[0].variant == "neuron"
    assert "NO-GO: token agreement (neuron) 0.7333 against a limit of 0.95" in result["line"]
    assert verdict_points(aws[1]) == [0.0]


def test_a_wrong_answer_against_the_reference_fails_the_task_score(aws: Any) -> None:
    answers = agreeing()
    wrong = ["The", " answer", " is", " 5", "."]
    answers["neuron"]["What is 2+2?"] = completion("".join(wrong), wrong)
    tolerant = JudgeConfig(**{**SETTINGS.__dict__, "tolerances": Tolerances(min_token_agreement=0.5)})
    judge_run(aws, answers, settings=tolerant)
    v = latest(aws)
    assert [f.measure for f in v.failing] == ["task score drop"]
    assert v.measures["task_score_neuron"] == 0.5 and v.measures["task_score_gpu"] == 1.0


@pytest.mark.parametrize("code", ["ModelError", "ValidationError"])
def test_one_variant_erroring_is_a_no_go_naming_its_error_rate(aws: Any, code: str) -> None:
    """The model's own error (a throttle or a 5xx is no answer: tests/unit/test_judge_faults.py)."""
    answers = agreeing()
    answers["gpu"]["Say this is a test"] = code
    result = judge_run(aws, answers)
    v = latest(aws)
    assert result["verdict"] == "no-go"
    assert [(f.measure, f.variant) for f in v.failing] == [("error rate", "gpu")]
    assert v.variants["gpu"].errors == 1 and v.variants["neuron"].errors == 0
    assert v.measures["token_agreement"] == 1.0  # parity on the two prompts both answered


def test_a_variant_failing_every_prompt_leaves_no_parity(aws: Any) -> None:
    answers = agreeing()
    answers["neuron"] = dict.fromkeys(answers["neuron"], "ModelError")
    judge_run(aws, answers)
    assert {f.measure for f in latest(aws).failing} == {"error rate", "answered prompts"}


def test_a_retried_run_answers_its_verdict_again_and_publishes_once(aws: Any) -> None:
    first = judge_run(aws, agreeing())
    stand_in = FixtureVariants(agreeing())
    again = judge_run(aws, agreeing(), stand_in=stand_in)
    assert again["repeated"] is True and again["line"] == first["line"]
    assert stand_in.calls == []  # nothing asked twice
    assert verdict_points(aws[1]) == [1.0]


def test_a_run_cut_short_continues_where_it_stopped(aws: Any) -> None:
    budget = iter([900_000, 900_000, 900_000] + [0] * 100)  # three calls fit in the first invocation
    stand_in = FixtureVariants(agreeing())
    first = judge_run(aws, agreeing(), remaining=lambda: next(budget), stand_in=stand_in)
    assert first == {"status": "incomplete", "run_id": "r1", "answered": 3, "of": 6}
    second = judge_run(aws, agreeing(), stand_in=stand_in)
    assert second["verdict"] == "go"
    assert len(stand_in.calls) == 6 and len(set(stand_in.calls)) == 6  # each prompt asked once per variant


@pytest.mark.parametrize(("raw", "field"), [(b"", "s3://team-prompts/sets/chat.jsonl"),
                                            (b"{oops\n", "s3://team-prompts/sets/chat.jsonl line 1")])
def test_an_empty_or_malformed_prompt_set_is_refused_and_nothing_is_asked(aws: Any, raw: bytes, field: str) -> None:
    stand_in = FixtureVariants(agreeing())
    result = judge_run(aws, agreeing(), raw=raw, stand_in=stand_in)
    assert result["status"] == "refused" and result["field"] == field and result["allowed"]
    assert stand_in.calls == [] and verdict_points(aws[1]) == []


def test_a_malformed_run_id_is_refused(aws: Any) -> None:
    result = judge_run(aws, agreeing(), event={"run_id": "../../etc"})
    assert result["status"] == "refused" and result["field"] == "run_id"


def test_embeddings_are_judged_by_cosine(aws: Any) -> None:
    s = JudgeConfig(**{**SETTINGS.__dict__, "task": "embeddings"})
    base = embeddings_example()["data"][0]["embedding"]
    same = {p: embedding(base) for p, _ in PROMPTS}
    drifted = dict(same) | {"Say this is a test": embedding([base[0], base[1] * 3, base[2]])}
    assert judge_run(aws, {"neuron": same, "gpu": same}, settings=s)["verdict"] == "go"
    result = judge_run(aws, {"neuron": drifted, "gpu": same}, settings=s, event={"run_id": "r2"})
    v = latest(aws)
    assert result["verdict"] == "no-go" and [f.measure for f in v.failing] == ["embedding cosine"]
    assert v.unit == "inferences" and v.measures["embedding_cosine"] < 0.999


def test_the_record_is_what_the_report_reads(aws: Any) -> None:
    judge_run(aws, agreeing())
    doc = json.loads(aws[0].get_object(Bucket="judge-records", Key=record_key("judge/", "nf-pilot-chat", "r1"))
                     ["Body"].read())
    assert doc["schema"] == "neuronfleet.judge.verdict/1" and doc["verdict"] == "go"
    assert Verdict.from_json(doc).to_json() == doc


def test_settings_round_trip_through_the_environment() -> None:
    s = JudgeConfig(**{**SETTINGS.__dict__, "tolerances": Tolerances(min_token_agreement=0.9)})
    assert JudgeConfig.from_environment(s.to_environment()) == s


@pytest.mark.parametrize(("name", "value"), [("min_token_agreement", -0.1), ("min_token_agreement", 1.5),
                                             ("max_latency_p99_ratio", 0.0), ("max_error_rate", -1.0)])
def test_tolerances_out_of_range_are_named(name: str, value: float) -> None:
    bad = Tolerances(**{name: value}).problems()
    assert [b[0] for b in bad] == [name] and bad[0][1] == value


def test_the_pilot_demo_judges_the_deployed_configuration_on_fixtures(aws: Any) -> None:
    """scripts/demo_judge.py (ENV=pilot make demo): the deployed function's environment, moto's S3 and CloudWatch."""
    from scripts.demo_judge import judge_on_fixtures

    s3, cw = aws

    class Server:
        region = "us-east-2"

        def client(self, name: str) -> Any:
            return {"s3": s3, "cloudwatch": cw, "lambda": Lambda()}[name]

    class Lambda:
        def list_functions(self) -> dict[str, Any]:
            return {"Functions": [{"Handler": "cost.report.handler"},
                                  {"Handler": "judge.handler.handler",
                                   "Environment": {"Variables": SETTINGS.to_environment()}}]}

    (verdict,) = judge_on_fixtures(Server())
    assert verdict.go and verdict.synthetic and verdict.prompts == 6
    assert 0.95 <= verdict.measures["token_agreement"] < 1.0  # the fixture's one near-tie token
    assert verdict.line().endswith("[synthetic: fixture answers]") and "\n" not in verdict.line()


NEURON_SDK = DATA / "neuron_sdk"
"""The three aws-neuron/aws-neuron-sdk guides the defaults cite, copied verbatim at commit 81ce03ae261e
(tests/data/judge/README.md): the defaults are read again from them on every run."""


def test_the_neuron_sdk_copies_are_verbatim() -> None:
    import hashlib
    import re

    rows = re.findall(r"^\| `neuron_sdk/([^`]+)` \| [^|]+ \| [^|]+ \| ([0-9a-f]{40}) \|$", (DATA / "README.md").read_text(),
                      re.M)
    assert sorted(name for name, _ in rows) == sorted(p.name for p in NEURON_SDK.iterdir())
    for name, blob in rows:
        body = (NEURON_SDK / name).read_bytes()
        assert hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest() == blob, name


def test_the_defaults_are_neurons_published_values() -> None:
    from neuronfleet_contract import judge as contract

    assert (contract.MIN_TOKEN_AGREEMENT, contract.MIN_EMBEDDING_COSINE) == (0.95, 0.999)
    assert contract.LOGIT_TOLERANCES["divergence_difference"] == 0.001
    assert contract.LOGIT_TOLERANCES["rtol"] == {"5": 0.01, "50": 0.02, "1000": 0.03, "all": 0.05}

    def show(path: str) -> str:
        return (NEURON_SDK / path.rsplit("/", 1)[-1]).read_text()

    guides = "tools/neuron-agentic-development/developer_guides/"
    assert "greedy token match rate reaches 95% or higher" in show(guides + "neuron-framework-autoport.rst")
    assert "Treat **> 0.999 as a pass**" in show(guides + "neuron-framework-equivalence.rst")
    logits = show("libraries/nxd-inference/developer_guides/onboarding-models.rst")
    assert "Divergence difference tolerance: ``0.001``" in logits and "Top k = None: ``0.05``" in logits
