"""The pilot judge's contract: its tolerances and their sources, what the function is told, and the verdict record
the migration report reads.

Pure: no boto3, no Powertools, no CDK. The construct (``neuronfleet.judge``) builds :class:`JudgeConfig` and
encodes it with ``to_environment`` (values may be CDK tokens); the handler (``judge/handler``) reads it once per
container with ``from_environment``. The report reads :class:`Verdict` records (``Verdict.from_json``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, Self

from . import environment
from .environment import variable
from .namespaces import JUDGE_NAMESPACE
from .variants import GPU_VARIANT, NEURON_VARIANT

Task = Literal["generation", "embeddings"]
Style = Literal["openai", "generated-text", "hf-pipeline"]
TASKS: tuple[Task, ...] = ("generation", "embeddings")
STYLES: tuple[Style, ...] = ("openai", "generated-text", "hf-pipeline")

STYLE_BY_CONTAINER: dict[str, Style] = {
    "vllm-neuronx": "openai", "custom": "openai", "hf-inference-neuronx": "hf-pipeline",
    "tgi-neuronx": "generated-text", "lmi-neuronx": "generated-text"}
"""How each serving container of the kit (``container:``) is asked and answers at ``/invocations``; a container and
its GPU image answer alike. ``openai``: vLLM's OpenAI-compatible server (completions ``{"prompt": ...}`` ->
``choices[0].text``; embeddings ``{"input": ...}`` -> ``data[0].embedding``). ``generated-text``: TGI and DJL LMI
(``{"inputs": ..., "parameters": {...}}`` -> ``[{"generated_text": ...}]``). ``hf-pipeline``: the Hugging Face
inference toolkit (``{"inputs": ...}`` -> the pipeline's output). Example answers: tests/data/judge/README.md; that
vLLM's ``/invocations`` on SageMaker answers in the OpenAI shape is read from vLLM's server, not from an AWS page:
check one answer on a real endpoint (docs/judge.md)."""

# ------------------------------------------------------------------------------------------- tolerances

MIN_TOKEN_AGREEMENT = 0.95
"""Default: the least mean share of positions at which the two variants' greedy outputs hold the same token. Neuron's
autoport guide passes a port "when greedy token match rate reaches 95% or higher" (aws-neuron/aws-neuron-sdk,
tools/neuron-agentic-development/developer_guides/neuron-framework-autoport.rst, commit 81ce03ae261e, read
2026-11-23). Neuron compares against the Hugging Face reference with teacher forcing; the judge compares two served,
free-running outputs, where one early divergence shifts what follows: the same bar is stricter here."""
MIN_EMBEDDING_COSINE = 0.999
"""Default: the least cosine similarity between the two variants' embeddings of each prompt. Neuron's equivalence
guide: "Treat > 0.999 as a pass for a well-ported BF16 model" (aws-neuron/aws-neuron-sdk, tools/neuron-agentic-
development/developer_guides/neuron-framework-equivalence.rst, commit 81ce03ae261e, read 2026-11-23)."""
MAX_TASK_SCORE_DROP = 0.02
"""Default: how far the Neuron variant's task score (share of prompts whose output matches the team's reference) may
fall below the GPU variant's. Neuron leaves task thresholds to the user ("Accuracy scores must meet thresholds defined
by the user", vllm-neuron/docs/model-dev/accuracy-debugging-guide.md, commit 81ce03ae261e): two points is
neuronfleet's own choice, unsourced."""
MAX_LATENCY_P99_RATIO = 1.5
"""Default: the highest Neuron p99 latency as a multiple of the GPU variant's, measured by the judge. neuronfleet's own
choice, unsourced: set it from your service's latency objective."""
MAX_ERROR_RATE = 0.0
"""Default: the highest share of prompts a variant may fail (after retries): none. Only the model's own failures count
(an error it answered, an answer the judge cannot read); a transient error is no answer (:data:`TRANSIENT_ERRORS`)."""
BOUND_SLACK = 1e-9
"""How close a measure may come to its bound and still be on the allowed side: a mean of fractions that is exactly
the bound (token agreement 11/12, 14/15 and 1 is 0.95) may land a rounding step past it in floating point. Each bound
is inclusive: token agreement and embedding cosine "at least", the others "at most"."""


def at_least(value: float, bound: float) -> bool:
    """``value >= bound`` to :data:`BOUND_SLACK` (the bound itself passes)."""
    return value >= bound - BOUND_SLACK


def at_most(value: float, bound: float) -> bool:
    """``value <= bound`` to :data:`BOUND_SLACK` (the bound itself passes)."""
    return value <= bound + BOUND_SLACK
LOGIT_TOLERANCES = {"divergence_difference": 0.001, "atol": 1e-5,
                    "rtol": {"5": 0.01, "50": 0.02, "1000": 0.03, "all": 0.05}}
"""NxD Inference's logit-matching defaults, for reference only: the judge sees served text, not logits, so it cannot
apply them (libraries/nxd-inference/developer_guides/onboarding-models.rst, "Logit Matching", commit 81ce03ae261e,
read 2026-11-23; vLLM-Neuron's DEFAULT_TOLERANCE_MAP has top-5 rtol 0.011, vllm-neuron/docs/design/accuracy/
logit_validation_design.md). Run them offline with the model's weights."""


@dataclass(frozen=True)
class Tolerances:
    """When the judge says go: every measure within its bound."""

    min_token_agreement: float = MIN_TOKEN_AGREEMENT
    min_embedding_cosine: float = MIN_EMBEDDING_COSINE
    max_task_score_drop: float = MAX_TASK_SCORE_DROP
    max_latency_p99_ratio: float = MAX_LATENCY_P99_RATIO
    max_error_rate: float = MAX_ERROR_RATE

    def problems(self) -> list[tuple[str, float, str]]:
        """(field, value, allowed) of every bound out of range."""
        out = []
        for name, value, low, high in (("min_token_agreement", self.min_token_agreement, 0.0, 1.0),
                                       ("min_embedding_cosine", self.min_embedding_cosine, -1.0, 1.0),
                                       ("max_task_score_drop", self.max_task_score_drop, 0.0, 1.0),
                                       ("max_latency_p99_ratio", self.max_latency_p99_ratio, 0.0, math.inf),
                                       ("max_error_rate", self.max_error_rate, 0.0, 1.0)):
            if not (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
                    and low <= value <= high) or (name == "max_latency_p99_ratio" and value <= 0):
                what = "above 0" if high == math.inf else f"from {low:g} to {high:g}"
                out.append((name, value, f"a number {what}"))
        return out

    @classmethod
    def from_json(cls, doc: Any) -> Self:
        if not isinstance(doc, dict):
            raise ValueError("expected an object of tolerances")
        known = {f.name for f in fields(cls)}
        unknown = set(doc) - known
        if unknown:
            raise ValueError(f"unknown tolerances {sorted(unknown)}; known: {sorted(known)}")
        made = cls(**{k: float(v) for k, v in doc.items()})
        bad = made.problems()
        if bad:
            raise ValueError("; ".join(f"{f}: got {v!r}; allowed: {a}" for f, v, a in bad))
        return made


# ------------------------------------------------------------------------------------------- settings

MAX_NEW_TOKENS = 128
"""Default: tokens each variant generates per prompt (greedy)."""
MAX_PROMPTS = 1000
"""The most prompts a prompt set may hold (the judge's state of a run is one S3 object)."""
MAX_PROMPT_SET_BYTES = 5 * 1024 * 1024
"""The largest prompt set the judge reads (5 MiB)."""
MEASURE_ROUNDS = 3
"""How many batches (invocations) ask a prompt whose call failed transiently, each call after botocore's own retries
(``judge/adapters.RETRY_CONFIG``): still failing after the last, the prompt is *unmeasured* and the run ends with no
verdict (never a no-go decided on a transient error)."""
TRANSIENT_ERRORS = frozenset({"ThrottlingException", "Throttling", "ServiceUnavailable", "InternalFailure",
                              "InternalDependencyException", "ModelNotReadyException"})
"""InvokeEndpoint's errors that are no answer of the model: SageMaker's 5xx (``InternalFailure`` 500,
``ServiceUnavailable`` 503 "Try your call again", ``InternalDependencyException`` 530), ``ModelNotReadyException``
(429, "Wait and try your request again") and throttling (botocore 1.44.5, sagemaker-runtime/2017-05-13
service-2.json, InvokeEndpoint's errors, read 2026-11-28). Also transient: any other answer with HTTP status 429 or
5xx, a ``ModelError`` whose ``OriginalStatusCode`` (the container's own status) is 429 or 503 (the container asks to
be called later; RFC 9110 15.6.4 and RFC 6585 4), and no answer at all (a timeout, a lost connection). Everything else
(``ModelError`` with another status, ``ValidationError``, an unreadable answer) is the model's answer."""
TRANSIENT_CONTAINER_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class JudgeConfig(environment.Configured):
    """What one judge function is told: the endpoint, its two variants, the prompt set, the records' place, the
    tolerances and each variant's hourly price (for cost per million)."""

    endpoint_name: str = field(metadata=variable("JUDGE_ENDPOINT", allowed="a SageMaker endpoint name"))
    prompts_bucket: str = field(metadata=variable("JUDGE_PROMPTS_BUCKET", allowed="an S3 bucket name"))
    prompts_key: str = field(metadata=variable("JUDGE_PROMPTS_KEY", allowed="the prompt set's S3 key (JSONL)"))
    records_bucket: str = field(metadata=variable("JUDGE_RECORDS_BUCKET", allowed="an S3 bucket name"))
    task: Task = field(default="generation", metadata=variable("JUDGE_TASK", choices=TASKS,
                                                               allowed=" or ".join(TASKS)))
    style: Style = field(default="openai", metadata=variable("JUDGE_STYLE", choices=STYLES,
                                                             allowed=" or ".join(STYLES)))
    records_prefix: str = field(default="judge/", metadata=variable("JUDGE_RECORDS_PREFIX",
                                                                    allowed="an S3 key prefix"))
    tolerances: Tolerances = field(default=Tolerances(), metadata=variable(
        "JUDGE_TOLERANCES", decode=Tolerances.from_json, allowed="a JSON object of tolerances"))
    usd_per_hour: Mapping[str, float] = field(default_factory=dict, metadata=variable(
        "JUDGE_USD_PER_HOUR", decode=lambda d: _prices(d), allowed='a JSON object {"neuron": usd, "gpu": usd}'))
    """Per variant (``neuron``, ``gpu``): what its instances cost per hour at the kit's prices."""
    max_new_tokens: int = field(default=MAX_NEW_TOKENS, metadata=variable("JUDGE_MAX_NEW_TOKENS", minimum=1,
                                                                          unit="tokens"))
    fleet: str = field(default="", metadata=variable("JUDGE_FLEET", allowed="the fleet's name",
                                                     written=lambda j: bool(j.fleet)))
    namespace: str = field(default=JUDGE_NAMESPACE, metadata=variable("JUDGE_NAMESPACE",
                                                                      allowed="a CloudWatch namespace"))
    neuron_variant: str = NEURON_VARIANT
    gpu_variant: str = GPU_VARIANT


def _prices(doc: Any) -> dict[str, float]:
    if not isinstance(doc, dict) or not all(isinstance(v, int | float) and v >= 0 for v in doc.values()):
        raise ValueError("expected an object of variant -> USD per hour (>= 0)")
    return {str(k): float(v) for k, v in doc.items()}


# ------------------------------------------------------------------------------------------- the prompt set

PROMPT_FIELDS = ("prompt", "input", "inputs")
"""The key a prompt line's text may sit under (the first one present wins)."""


class PromptSetError(ValueError):
    """A prompt set the judge refuses: ``field`` (a line and key), the value found, what is allowed."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field, self.value, self.allowed = field, value, allowed
        shown = repr(value)
        super().__init__(f"{field}: got {shown if len(shown) <= 120 else shown[:117] + '...'}; allowed: {allowed}")


@dataclass(frozen=True)
class Prompt:
    id: str
    text: str
    reference: str | None = None
    """The answer the team expects (generation only): the task score counts outputs that contain it."""


def parse_prompt_set(raw: bytes, *, source: str = "prompt set") -> tuple[Prompt, ...]:
    """JSON Lines: one object a line, ``{"prompt": "...", "reference": "...", "id": "..."}`` (``reference`` and
    ``id`` optional; ``input``/``inputs`` accepted for ``prompt``). Blank lines are skipped. Refused with the line
    and key: an empty set, a line that is not a JSON object, a missing or empty prompt, a repeated id, more than
    MAX_PROMPTS prompts or MAX_PROMPT_SET_BYTES bytes."""
    if len(raw) > MAX_PROMPT_SET_BYTES:
        raise PromptSetError(source, f"{len(raw)} bytes", f"at most {MAX_PROMPT_SET_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptSetError(source, f"byte {exc.start}", "UTF-8 text (JSON Lines)") from None
    prompts: list[Prompt] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        at = f"{source} line {number}"
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            raise PromptSetError(at, line, 'a JSON object, e.g. {"prompt": "...", "reference": "..."}') from None
        if not isinstance(doc, dict):
            raise PromptSetError(at, doc, 'a JSON object, e.g. {"prompt": "...", "reference": "..."}')
        key = next((k for k in PROMPT_FIELDS if k in doc), "prompt")
        value = doc.get(key)
        if not isinstance(value, str) or not value.strip():
            raise PromptSetError(f"{at}.{key}", value, "a non-empty string (the prompt's text)")
        reference = doc.get("reference")
        if reference is not None and not isinstance(reference, str):
            raise PromptSetError(f"{at}.reference", reference, "a string, or no reference")
        pid = doc.get("id", str(number))
        if not isinstance(pid, str | int) or isinstance(pid, bool) or str(pid) in seen:
            raise PromptSetError(f"{at}.id", pid, "a string or number not used by another line")
        seen.add(str(pid))
        prompts.append(Prompt(id=str(pid), text=value, reference=reference))
        if len(prompts) > MAX_PROMPTS:
            raise PromptSetError(source, f"more than {MAX_PROMPTS} prompts", f"at most {MAX_PROMPTS} prompts")
    if not prompts:
        raise PromptSetError(source, "no prompts", 'at least one line {"prompt": "..."}')
    return tuple(prompts)


# ------------------------------------------------------------------------------------------- the verdict

VERDICT_METRIC = "Verdict"
"""In :data:`JUDGE_NAMESPACE`: 1 for go, 0 for no-go, one datapoint per judged run (timestamped at the run's end, so
a retried run re-sends the same point), dimensions :func:`verdict_dimensions` (``Fleet`` and ``Endpoint``, as the
other per-endpoint metrics of the kit; ``Endpoint`` alone for a judge given no fleet). The judge's alarm (and through
it the endpoint's cutover) reads its Minimum, the weekly report the latest day's."""
NO_VERDICT_METRIC = "NoVerdict"
"""In :data:`JUDGE_NAMESPACE`, same dimensions as :data:`VERDICT_METRIC`: 1 for each invocation that refused its
input (a malformed or missing prompt set, a malformed run id) and for each run that ended unmeasured. Neither
publishes a ``Verdict`` point, so the verdict alarm keeps its state; :func:`judge_no_verdict_alarm_name` alarms on
this one into the fleet's topic."""
MEASURE_METRICS = {"token_agreement": "TokenAgreement", "embedding_cosine": "EmbeddingCosine",
                   "task_score_drop": "TaskScoreDrop", "latency_p99_ratio": "LatencyP99Ratio"}
"""The measures the judge publishes beside the verdict (same dimension)."""
RECORD_SCHEMA = "neuronfleet.judge.verdict/1"


def verdict_dimensions(endpoint: str, fleet: str = "") -> dict[str, str]:
    """The dimensions of the judge's metrics (name -> value): ``Fleet`` (when the judge has one) and ``Endpoint``. One
    home for the judge that publishes, its alarm and the report that read."""
    return ({"Fleet": fleet} if fleet else {}) | {"Endpoint": endpoint}


JUDGE_ALARM_SUFFIX = "judge-verdict"


def judge_alarm_name(endpoint_name: str) -> str:
    """The name of the judge's verdict alarm of an endpoint, ``<endpoint name>-judge-verdict``: set, not generated, so
    that NeuronEndpoint can list it among its auto-rollback alarms before the judge (which needs the endpoint's name)
    exists."""
    return f"{endpoint_name}-{JUDGE_ALARM_SUFFIX}"


def judge_no_verdict_alarm_name(endpoint_name: str) -> str:
    """``<endpoint name>-judge-no-verdict``: in ALARM while the judge refuses its input or ends runs unmeasured."""
    return f"{endpoint_name}-judge-no-verdict"


def record_key(prefix: str, endpoint: str, run_id: str) -> str:
    """Where a run's verdict record lives: ``<prefix><endpoint>/runs/<run id>.json``."""
    return f"{prefix}{endpoint}/runs/{run_id}.json"


def latest_key(prefix: str, endpoint: str) -> str:
    """The endpoint's latest verdict (a copy of the newest run's record): what the report reads."""
    return f"{prefix}{endpoint}/latest.json"


@dataclass(frozen=True)
class Failing:
    """A measure out of its bound: its name, the value measured, the bound, the variant it concerns."""

    measure: str
    value: float
    limit: float
    variant: str = ""

    def sentence(self) -> str:
        who = f" ({self.variant})" if self.variant else ""
        return f"{self.measure}{who} {self.value:.4g} against a limit of {self.limit:.4g}"


@dataclass(frozen=True)
class VariantFigures:
    """What the judge measured on one variant (latency client-side around InvokeEndpoint)."""

    invocations: int
    errors: int
    p50_ms: float | None
    p99_ms: float | None
    units_per_second: float | None
    """Output tokens (generation) or inferences (embeddings) per second, one request at a time."""
    usd_per_million: float | None
    """At the kit's hourly price and :attr:`units_per_second`: a ceiling (a batched server does more per hour)."""


@dataclass(frozen=True)
class Verdict:
    """One judged run, as the report reads it (``latest.json``; schema ``neuronfleet.judge.verdict/1``).

    ``go`` is True when every measure is within its tolerance; ``failing`` names those that are not. ``unit`` says
    what cost per million counts (``tokens`` or ``inferences``); ``token_unit`` whether agreement compared the
    model's own tokens (``tokens``) or whitespace-separated words (``words``, when the answers carry no tokens)."""

    endpoint: str
    run_id: str
    task: Task
    go: bool
    failing: tuple[Failing, ...]
    measures: Mapping[str, float]
    variants: Mapping[str, VariantFigures]
    prompts: int
    unit: str
    token_unit: str = "tokens"
    fleet: str = ""
    finished_at: str = ""
    synthetic: bool = False
    """True when the answers came from fixtures (the demo), not from an endpoint."""
    unmeasured: tuple[str, ...] = ()
    """Prompt ids that no call could measure (a transient error in every round, :data:`MEASURE_ROUNDS`): then there
    is no verdict (``go`` False, ``failing`` empty, ``verdict`` ``unmeasured``), whatever the other prompts showed."""
    reasons: tuple[str, ...] = ()
    """The transient errors of the unmeasured prompts (distinct, a few)."""

    @property
    def outcome(self) -> str:
        """``go``, ``no-go`` or ``unmeasured`` (no verdict)."""
        return "unmeasured" if self.unmeasured else "go" if self.go else "no-go"

    def line(self) -> str:
        """One sentence a person understands."""
        n = self.variants.get(NEURON_VARIANT)
        g = self.variants.get(GPU_VARIANT)
        cost = ""
        if n and g and n.usd_per_million and g.usd_per_million:
            cost = (f"; single-stream (one request at a time, {self.prompts} prompts, list prices): "
                    f"${n.usd_per_million:,.2f} vs ${g.usd_per_million:,.2f} per million {self.unit} (Neuron vs GPU), "
                    "a latency figure, not what a batched fleet pays")
        label = " [synthetic: fixture answers]" if self.synthetic else ""
        if self.unmeasured:
            why = f" ({'; '.join(self.reasons)})" if self.reasons else ""
            return (f"{self.endpoint}: NO VERDICT: {len(self.unmeasured)} of {self.prompts} prompts unmeasured after "
                    f"{MEASURE_ROUNDS} rounds of retries{why}; no go, no no-go: the verdict alarm keeps its state. "
                    f"Judge again with a new run id{label}")
        if self.go:
            key = "token_agreement" if self.task == "generation" else "embedding_cosine"
            return (f"{self.endpoint}: GO: Neuron matches GPU on {self.prompts} prompts ({key.replace('_', ' ')} "
                    f"{self.measures.get(key, float('nan')):.3f}){cost}{label}")
        return (f"{self.endpoint}: NO-GO: " + "; ".join(f.sentence() for f in self.failing)
                + f" ({self.prompts} prompts){cost}{label}")

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["failing"] = [asdict(f) for f in self.failing]
        doc["schema"] = RECORD_SCHEMA
        doc["unmeasured"] = list(self.unmeasured)
        doc["reasons"] = list(self.reasons)
        doc["verdict"] = self.outcome
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Self:
        if doc.get("schema") != RECORD_SCHEMA:
            raise ValueError(f"schema: got {doc.get('schema')!r}; allowed: {RECORD_SCHEMA}")
        return cls(endpoint=doc["endpoint"], run_id=doc["run_id"], task=doc["task"], go=bool(doc["go"]),
                   failing=tuple(Failing(**f) for f in doc["failing"]), measures=dict(doc["measures"]),
                   variants={k: VariantFigures(**v) for k, v in doc["variants"].items()}, prompts=int(doc["prompts"]),
                   unit=doc["unit"], token_unit=doc.get("token_unit", "tokens"), fleet=doc.get("fleet", ""),
                   finished_at=doc.get("finished_at", ""), synthetic=bool(doc.get("synthetic", False)),
                   unmeasured=tuple(str(p) for p in doc.get("unmeasured", ())),
                   reasons=tuple(str(r) for r in doc.get("reasons", ())))
