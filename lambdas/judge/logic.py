"""The pilot judge's pure logic: read a prompt set, ask and read each serving container, measure parity, latency,
throughput and cost, and decide go / no-go. No AWS here (adapters.py holds the calls)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from neuronfleet_contract.judge import (
    MEASURE_ROUNDS,
    Failing,
    Prompt,
    Style,
    Task,
    Tolerances,
    VariantFigures,
    Verdict,
    at_least,
    at_most,
)
from neuronfleet_contract.variants import GPU_VARIANT, NEURON_VARIANT

# The prompt set's format (Prompt, PromptSetError, parse_prompt_set) lives in neuronfleet_contract.judge: the
# `neuronfleet judge prompts` command checks a file with the same parser.

# ------------------------------------------------------------------------------------------- asking and reading


def request(style: Style, task: Task, prompt: Prompt, *, max_new_tokens: int) -> dict[str, Any]:
    """The body of one InvokeEndpoint call: greedy (temperature 0 / no sampling), asking for the model's tokens where
    the server returns them (``logprobs``, TGI's ``details``)."""
    if task == "embeddings":
        return {"input": prompt.text} if style == "openai" else {"inputs": prompt.text}
    if style == "openai":
        return {"prompt": prompt.text, "max_tokens": max_new_tokens, "temperature": 0, "logprobs": 1}
    if style == "generated-text":
        return {"inputs": prompt.text, "parameters": {"max_new_tokens": max_new_tokens, "do_sample": False,
                                                      "details": True}}
    return {"inputs": prompt.text, "parameters": {"max_new_tokens": max_new_tokens, "do_sample": False}}


class AnswerError(ValueError):
    """An answer the judge cannot read (its shape named)."""


@dataclass(frozen=True)
class Answer:
    text: str | None = None
    tokens: tuple[str, ...] | None = None
    """The model's own tokens, when the server returned them."""
    embedding: tuple[float, ...] | None = None
    units: int = 1
    """Output tokens (generation: the server's count, else the tokens or words read) or 1 (embeddings)."""


def _floats(values: Any) -> tuple[float, ...]:
    """A vector, or a nested list of vectors flattened (the HF toolkit's feature extraction answers per token)."""
    out: list[float] = []
    stack = [values]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(reversed(v))
        elif isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            out.append(float(v))
        else:
            raise AnswerError(f"an embedding holds {v!r}, not a number")
    if not out:
        raise AnswerError("an empty embedding")
    return tuple(out)


def parse_answer(style: Style, task: Task, body: bytes) -> Answer:
    """Read one answer's body in its container's shape (see neuronfleet_contract.judge.STYLE_BY_CONTAINER)."""
    try:
        doc = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise AnswerError("the answer is not JSON") from None
    try:
        if task == "embeddings":
            if style == "openai":
                return Answer(embedding=_floats(doc["data"][0]["embedding"]))
            vec = doc["embeddings"] if isinstance(doc, dict) and "embeddings" in doc else doc
            return Answer(embedding=_floats(vec))
        if style == "openai":
            choice = doc["choices"][0]
            text = choice["text"] if "text" in choice else choice["message"]["content"]
            logprobs = choice.get("logprobs") or {}
            tokens = logprobs.get("tokens") if isinstance(logprobs, dict) else None
            count = (doc.get("usage") or {}).get("completion_tokens")
            return _generated(text, tokens, count)
        first = doc[0] if isinstance(doc, list) else doc
        details = first.get("details") or {}
        tokens = [t.get("text", "") for t in details.get("tokens", [])] if isinstance(details, dict) else None
        return _generated(first["generated_text"], tokens or None, details.get("generated_tokens")
                          if isinstance(details, dict) else None)
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise AnswerError(f"not a {style} {task} answer (missing {exc})") from None


def _generated(text: Any, tokens: Any, count: Any) -> Answer:
    if not isinstance(text, str):
        raise AnswerError(f"generated text is {type(text).__name__}, not a string")
    toks = tuple(str(t) for t in tokens) if isinstance(tokens, list) and tokens else None
    units = count if isinstance(count, int) and count > 0 else len(toks or text.split())
    return Answer(text=text, tokens=toks, units=units)


# ------------------------------------------------------------------------------------------- measures


def token_agreement(a: Sequence[str], b: Sequence[str]) -> float:
    """The share of positions at which both outputs hold the same token, over the longer output (two empty outputs
    agree). Greedy decoding: outputs agree position by position until a near-tie flips one argmax."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    return sum(1 for x, y in zip(a, b, strict=False) if x == y) / longest


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        raise AnswerError(f"embeddings of different sizes ({len(a)} and {len(b)})")
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def matches_reference(output: str, reference: str) -> bool:
    """The task score's test: the output contains the reference (case and runs of whitespace ignored)."""
    return _normal(reference) in _normal(output)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (p50, p99) of the latencies; None without any."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


# ------------------------------------------------------------------------------------------- a run


@dataclass(frozen=True)
class Outcome:
    """One variant's answer to one prompt: the answer read, or the error (after the adapter's retries). An error is
    the model's answer (it counts in the variant's error rate) unless ``unmeasured``: a transient error
    (neuronfleet_contract.judge.TRANSIENT_ERRORS), asked again in the next batch up to MEASURE_ROUNDS times."""

    latency_ms: float
    answer: Answer | None = None
    error: str | None = None
    unmeasured: bool = False
    attempts: int = 1
    """Rounds (batches) that asked this prompt of this variant."""

    @property
    def final(self) -> bool:
        """Whether the run asks no more: an answer, the model's error, or unmeasured after the last round."""
        return not self.unmeasured or self.attempts >= MEASURE_ROUNDS

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Outcome:
        a = doc.get("answer")
        answer = None if a is None else Answer(
            text=a.get("text"), tokens=None if a.get("tokens") is None else tuple(a["tokens"]),
            embedding=None if a.get("embedding") is None else tuple(a["embedding"]), units=int(a.get("units", 1)))
        return cls(latency_ms=float(doc["latency_ms"]), answer=answer, error=doc.get("error"),
                   unmeasured=bool(doc.get("unmeasured", False)), attempts=int(doc.get("attempts", 1)))


@dataclass
class RunState:
    """A run in progress, kept between batches (S3, by run id): each prompt's outcome per variant."""

    run_id: str
    outcomes: dict[str, dict[str, Outcome]] = field(default_factory=dict)
    """variant -> prompt id -> outcome."""
    finished_at: str = ""

    def pending(self, prompts: Sequence[Prompt], variants: Sequence[str]) -> list[tuple[Prompt, str]]:
        """What is still to ask: never asked, or unmeasured with rounds left."""
        return [(p, v) for p in prompts for v in variants
                if (o := self.outcomes.get(v, {}).get(p.id)) is None or not o.final]

    def add(self, variant: str, prompt_id: str, outcome: Outcome) -> None:
        """Keep ``outcome``; asked again after an unmeasured round, it counts that round."""
        before = self.outcomes.get(variant, {}).get(prompt_id)
        if before is not None:
            outcome = replace(outcome, attempts=before.attempts + 1)
        self.outcomes.setdefault(variant, {})[prompt_id] = outcome

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "finished_at": self.finished_at,
                "outcomes": {v: {p: o.to_json() for p, o in by.items()} for v, by in self.outcomes.items()}}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> RunState:
        return cls(run_id=doc["run_id"], finished_at=doc.get("finished_at", ""),
                   outcomes={v: {p: Outcome.from_json(o) for p, o in by.items()}
                             for v, by in doc.get("outcomes", {}).items()})


def _figures(outcomes: Mapping[str, Outcome], usd_per_hour: float | None) -> VariantFigures:
    """Latency and throughput of the answers read; errors are the model's own (an unmeasured call is neither)."""
    ok = [o for o in outcomes.values() if o.answer is not None]
    latencies = [o.latency_ms for o in ok]
    seconds = sum(latencies) / 1000
    units = sum(o.answer.units for o in ok if o.answer is not None)
    rate = units / seconds if seconds > 0 and units else None
    usd = usd_per_hour / (rate * 3600) * 1e6 if rate and usd_per_hour is not None else None
    errors = sum(1 for o in outcomes.values() if o.answer is None and not o.unmeasured)
    return VariantFigures(invocations=len(outcomes), errors=errors, p50_ms=percentile(latencies, 50),
                          p99_ms=percentile(latencies, 99), units_per_second=rate, usd_per_million=usd)


def judge(*, endpoint: str, run_id: str, task: Task, prompts: Sequence[Prompt], state: RunState,
          tolerances: Tolerances, usd_per_hour: Mapping[str, float], fleet: str = "", synthetic: bool = False,
          neuron: str = NEURON_VARIANT, gpu: str = GPU_VARIANT) -> Verdict:
    """The verdict of a finished run: every measure against its tolerance, the failing ones named.

    Errors: a prompt either variant failed is left out of parity; each variant's error rate (the model's own errors)
    is a measure of its own. Parity on no prompt at all (every prompt failed somewhere) fails as ``answered prompts``
    0. A prompt left unmeasured by transient errors (on either variant) means no verdict at all: no go and no no-go
    is decided without it (the figures measured are kept, nothing is judged).

    Bounds are inclusive (``at_least``/``at_most``): token agreement exactly at its minimum passes, as does a p99
    ratio (Neuron's p99 over GPU's: above 1, Neuron is slower) exactly at its maximum."""
    n_out, g_out = state.outcomes.get(neuron, {}), state.outcomes.get(gpu, {})
    figures = {neuron: _figures(n_out, usd_per_hour.get(neuron)), gpu: _figures(g_out, usd_per_hour.get(gpu))}
    common = {"endpoint": endpoint, "run_id": run_id, "task": task, "variants": figures, "prompts": len(prompts),
              "unit": "tokens" if task == "generation" else "inferences", "fleet": fleet,
              "finished_at": state.finished_at, "synthetic": synthetic}
    unmeasured = [p.id for p in prompts if any((o := outs.get(p.id)) is None or o.unmeasured
                                               for outs in (n_out, g_out))]
    if unmeasured:
        reasons = sorted({o.error or "not asked" for outs in (n_out, g_out) for o in outs.values() if o.unmeasured})
        return Verdict(go=False, failing=(), measures={}, unmeasured=tuple(unmeasured),
                       reasons=tuple(r[:160] for r in reasons[:3]), **common)  # type: ignore[arg-type]
    failing: list[Failing] = []
    measures: dict[str, float] = {}
    _judge_error_rates(prompts, ((neuron, n_out), (gpu, g_out)), tolerances, measures, failing)
    both = [(p, n, g) for p in prompts if (n := n_out[p.id]).answer is not None and (g := g_out[p.id]).answer
            is not None]
    token_unit = "tokens"
    if not both:
        failing.append(Failing("answered prompts", 0, 1))
    elif task == "embeddings":
        _judge_embeddings(both, tolerances, neuron, measures, failing)
    else:
        token_unit = _judge_generation(both, tolerances, neuron, measures, failing)
    n_p99, g_p99 = figures[neuron].p99_ms, figures[gpu].p99_ms
    if n_p99 is not None and g_p99:
        ratio = latency_ratio(n_p99, g_p99)
        measures["latency_p99_ratio"] = ratio
        if not at_most(ratio, tolerances.max_latency_p99_ratio):
            failing.append(Failing("p99 latency ratio", ratio, tolerances.max_latency_p99_ratio, neuron))
    return Verdict(go=not failing, failing=tuple(failing), measures=measures, token_unit=token_unit,
                   **common)  # type: ignore[arg-type]


_Answered = Sequence[tuple[Prompt, Outcome, Outcome]]
"""The prompts both variants answered: (prompt, Neuron's outcome, GPU's outcome)."""


def _judge_error_rates(prompts: Sequence[Prompt], variants: Sequence[tuple[str, Mapping[str, Outcome]]],
                       tolerances: Tolerances, measures: dict[str, float], failing: list[Failing]) -> None:
    """Each variant's error rate (the model's own errors) against its maximum."""
    total = len(prompts)
    for variant, outs in variants:
        rate = sum(1 for p in prompts if outs[p.id].answer is None) / total
        measures[f"error_rate_{variant}"] = rate
        if not at_most(rate, tolerances.max_error_rate):
            failing.append(Failing("error rate", rate, tolerances.max_error_rate, variant))


def _judge_embeddings(both: _Answered, tolerances: Tolerances, neuron: str, measures: dict[str, float],
                      failing: list[Failing]) -> None:
    """The lowest cosine of the two variants' embeddings (-1 when they cannot be compared) against its minimum."""
    try:
        low = min(cosine(n.answer.embedding or (), g.answer.embedding or ())  # type: ignore[union-attr]
                  for _, n, g in both)
    except AnswerError:
        low = -1.0
    measures["embedding_cosine"] = low
    if not at_least(low, tolerances.min_embedding_cosine):
        failing.append(Failing("embedding cosine", low, tolerances.min_embedding_cosine, neuron))


def _judge_generation(both: _Answered, tolerances: Tolerances, neuron: str, measures: dict[str, float],
                      failing: list[Failing]) -> str:
    """Token agreement (words when a variant gives no tokens) and, over the prompts with a reference, the task
    score drop; returns the unit agreement was counted in."""
    token_unit = "tokens"
    agreements = []
    for _, n, g in both:
        na, ga = n.answer, g.answer
        assert na is not None and ga is not None
        if na.tokens is not None and ga.tokens is not None:
            agreements.append(token_agreement(na.tokens, ga.tokens))
        else:
            token_unit = "words"
            agreements.append(token_agreement((na.text or "").split(), (ga.text or "").split()))
    agreement = math.fsum(agreements) / len(agreements)
    measures["token_agreement"] = agreement
    if not at_least(agreement, tolerances.min_token_agreement):
        failing.append(Failing("token agreement", agreement, tolerances.min_token_agreement, neuron))
    graded = [(p, n, g) for p, n, g in both if p.reference is not None]
    if graded:
        def score(outputs: Sequence[Outcome]) -> float:
            return sum(1 for (p, _, _), o in zip(graded, outputs, strict=True)
                       if o.answer is not None and matches_reference(o.answer.text or "", p.reference or "")
                       ) / len(graded)
        n_score, g_score = score([n for _, n, _ in graded]), score([g for _, _, g in graded])
        measures.update(task_score_neuron=n_score, task_score_gpu=g_score, task_score_drop=g_score - n_score)
        if not at_most(g_score - n_score, tolerances.max_task_score_drop):
            failing.append(Failing("task score drop", g_score - n_score, tolerances.max_task_score_drop, neuron))
    return token_unit


def latency_ratio(neuron_p99_ms: float, gpu_p99_ms: float) -> float:
    """Neuron's p99 as a multiple of GPU's: 2.0 when Neuron takes twice as long (the bound is a maximum)."""
    return neuron_p99_ms / gpu_p99_ms
