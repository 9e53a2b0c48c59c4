"""Lambda entry point of the pilot judge: one invocation judges one batch of a run; the run's last batch writes the
verdict.

Configuration: :class:`neuronfleet_contract.judge.JudgeSettings` (read once per container). Event: ``{}`` or an
EventBridge scheduled event (the run id is derived: the endpoint's configuration name and the prompt set's ETag, so
the same deployment on the same prompt set is one run), or ``{"run_id": "..."}`` to name a run.

Why a Lambda per batch and not Step Functions: a run's state (each prompt's answer per variant) is one S3 object
keyed by run id, so each invocation takes up where the last stopped and stops itself before Lambda's 15-minute limit
(two InvokeEndpoint calls per prompt, each up to SageMaker's 60 s); the schedule (or a re-invocation with the same
run id) carries the next batch. Reserved concurrency 1 keeps batches of one run from overlapping. A prompt set of
thousands that must finish within one Lambda lifetime, or fan out in parallel, is Step Functions' Distributed Map's
job (docs/judge.md says when).

Exactly once: a finished run's verdict is published at the run's own timestamp (a retry re-sends the identical point)
and then written to ``runs/<run id>.json`` with a conditional write; a run whose record exists answers it again and
publishes nothing. Refused, with field, value and what is allowed (no traceback): an empty or malformed prompt set, a
malformed run id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import cache
from typing import Any

from neuronfleet_contract.judge import (
    MEASURE_METRICS,
    VERDICT_METRIC,
    JudgeSettings,
    PromptSetError,
    Verdict,
    latest_key,
    parse_prompt_set,
    record_key,
)

from .adapters import Endpoint, Store, Variants, VerdictMetrics
from .logic import RunState, judge, request

SERVICE = "neuronfleet-judge"
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
RUN_ID_RULE = "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
MARGIN_MS = 2 * 75_000
"""Time kept free at the end of an invocation: the two calls of one prompt (up to 60 s each, plus the client's
margin) must fit in what is left, else the batch stops and saves."""
SAVE_EVERY = 10
"""Outcomes between two saves of the run's state (a run cut short loses at most these)."""


def state_key(settings: JudgeSettings, run_id: str) -> str:
    return f"{settings.records_prefix}{settings.endpoint_name}/state/{run_id}.json"


def run(event: Mapping[str, Any], *, settings: JudgeSettings, variants: Variants, endpoint: Endpoint | None,
        store: Store, metrics: VerdictMetrics, remaining_ms: Callable[[], int],
        now: Callable[[], datetime] = lambda: datetime.now(UTC), synthetic: bool = False) -> dict[str, Any]:
    """One batch of a run (see the module's docstring). Returns the status: ``refused`` (with field, value,
    allowed), ``incomplete`` (answers so far), or ``done`` (the verdict and its one-line sentence)."""
    s = settings
    try:
        raw, etag = store.prompt_set(s.prompts_bucket, s.prompts_key)
        prompts = parse_prompt_set(raw, source=f"s3://{s.prompts_bucket}/{s.prompts_key}")
    except PromptSetError as exc:
        return {"status": "refused", "field": exc.field, "value": str(exc.value)[:200], "allowed": exc.allowed,
                "message": str(exc)}
    run_id = event.get("run_id") if isinstance(event, Mapping) else None
    if run_id is None:
        config = endpoint.config_name(s.endpoint_name) if endpoint is not None else "local"
        run_id = f"{config}-{etag[:12] or 'noetag'}"[-128:].lstrip("-._")
    elif not isinstance(run_id, str) or not RUN_ID.match(run_id):
        return {"status": "refused", "field": "run_id", "value": str(run_id)[:200], "allowed": RUN_ID_RULE,
                "message": f"run_id: got {run_id!r}; allowed: {RUN_ID_RULE}"}
    done = store.load(s.records_bucket, record_key(s.records_prefix, s.endpoint_name, run_id))
    if done is not None:
        verdict = Verdict.from_json(done)
        return {"status": "done", "repeated": True, "run_id": run_id, "verdict": done["verdict"],
                "line": verdict.line()}
    key = state_key(s, run_id)
    saved = store.load(s.records_bucket, key)
    state = RunState.from_json(saved) if saved else RunState(run_id=run_id)
    pending = state.pending(prompts, (s.neuron_variant, s.gpu_variant))
    unsaved = 0
    for prompt, variant in pending:
        if remaining_ms() < MARGIN_MS:
            break
        body = request(s.style, s.task, prompt, max_new_tokens=s.max_new_tokens)
        state.add(variant, prompt.id, variants.ask(variant, body, style=s.style, task=s.task))
        unsaved += 1
        if unsaved >= SAVE_EVERY:
            store.save_state(s.records_bucket, key, state)
            unsaved = 0
    left = len(state.pending(prompts, (s.neuron_variant, s.gpu_variant)))
    if left:
        store.save_state(s.records_bucket, key, state)
        return {"status": "incomplete", "run_id": run_id, "answered": 2 * len(prompts) - left,
                "of": 2 * len(prompts)}
    if not state.finished_at:
        state.finished_at = now().isoformat(timespec="seconds")
        store.save_state(s.records_bucket, key, state)
    verdict = judge(endpoint=s.endpoint_name, run_id=run_id, task=s.task, prompts=prompts, state=state,
                    tolerances=s.tolerances, usd_per_hour=s.usd_per_hour, fleet=s.fleet, synthetic=synthetic)
    values = {VERDICT_METRIC: 1.0 if verdict.go else 0.0}
    values |= {name: verdict.measures[m] for m, name in MEASURE_METRICS.items() if m in verdict.measures}
    metrics.publish(endpoint=s.endpoint_name, at=datetime.fromisoformat(state.finished_at),
                    values=values, fleet=s.fleet)
    doc = verdict.to_json()
    if store.put_once(s.records_bucket, record_key(s.records_prefix, s.endpoint_name, run_id), doc):
        store.put(s.records_bucket, latest_key(s.records_prefix, s.endpoint_name), doc)
    return {"status": "done", "run_id": run_id, "verdict": doc["verdict"], "line": verdict.line()}


@cache
def _wired() -> tuple[JudgeSettings, Variants, Endpoint, Store, VerdictMetrics]:
    import boto3
    from botocore.config import Config

    from .adapters import INVOKE_READ_TIMEOUT_S, RETRY_CONFIG

    settings = JudgeSettings.from_environment()
    config = Config(retries=RETRY_CONFIG)
    runtime = boto3.client("sagemaker-runtime", config=Config(retries=RETRY_CONFIG,
                                                               read_timeout=INVOKE_READ_TIMEOUT_S))
    return (settings, Variants(runtime, settings.endpoint_name), Endpoint(boto3.client("sagemaker", config=config)),
            Store(boto3.client("s3", config=config)),
            VerdictMetrics(boto3.client("cloudwatch", config=config), settings.namespace))


def handler(event: Any, context: Any) -> dict[str, Any]:
    from aws_lambda_powertools import Logger

    logger = Logger(service=SERVICE)
    settings, variants, endpoint, store, metrics = _wired()
    result = run(event if isinstance(event, Mapping) else {}, settings=settings, variants=variants,
                 endpoint=endpoint, store=store, metrics=metrics, remaining_ms=context.get_remaining_time_in_millis)
    (logger.warning if result["status"] == "refused" else logger.info)(result.get("line") or result.get("message")
                                                                       or result["status"], extra=result)
    return result
