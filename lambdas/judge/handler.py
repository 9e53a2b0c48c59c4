"""Lambda entry point of the pilot judge: one invocation judges one batch of a run; the run's last batch writes the
verdict.

Configuration: :class:`neuronfleet_contract.judge.JudgeConfig` (read once per container). Event: ``{}`` or an
EventBridge scheduled event (the run id is derived: the endpoint's configuration name and the prompt set's ETag, so
the same deployment on the same prompt set is one run), or ``{"run_id": "..."}`` to name a run.

Why a Lambda per batch and not Step Functions: a run's state (each prompt's answer per variant) is one S3 object
keyed by run id, so each invocation takes up where the last stopped and stops itself before Lambda's 15-minute limit
(two InvokeEndpoint calls per prompt, each up to SageMaker's 60 s); the schedule (or a re-invocation with the same
run id) carries the next batch. Reserved concurrency 1 keeps batches of one run from overlapping. A prompt set of
thousands that must finish within one Lambda lifetime, or fan out in parallel, is Step Functions' Distributed Map's
job (docs/judge.md says when).

Publication, idempotent by the run's key, in this order (a retry after any failure completes every step): the metric
at the run's own timestamp (a retry re-sends the identical point), then ``runs/<run id>.json`` (a conditional write:
a record already there is the run's and is kept), then ``latest.json`` unless it already holds this run or a newer one
(:meth:`adapters.Store.put_latest`). A run whose record exists publishes no metric again (the record is written only
after it) and completes ``latest.json``.

Refused, with field, value and what is allowed (no traceback): an empty, malformed or missing prompt set, a malformed
run id. A refusal publishes ``NoVerdict`` (its alarm tells the fleet's topic) and touches nothing else: no state, no
record, no ``Verdict`` point (the verdict alarm keeps its state). A run whose prompts stay unmeasured (transient errors
in every round) ends with no verdict: its record and ``latest.json`` say ``unmeasured``, ``NoVerdict`` is published,
no ``Verdict`` point.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import cache
from typing import Any

from botocore.exceptions import ClientError

from neuronfleet_contract.judge import (
    MEASURE_METRICS,
    NO_VERDICT_METRIC,
    VERDICT_METRIC,
    JudgeConfig,
    PromptSetError,
    Verdict,
    latest_key,
    parse_prompt_set,
    record_key,
)

from .adapters import CALL_WORST_CASE_S, Endpoint, Store, Variants, VerdictMetrics
from .logic import RunState, judge, request

SERVICE = "neuronfleet-judge"
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
RUN_ID_RULE = "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
MARGIN_MS = (CALL_WORST_CASE_S + 10) * 1000
"""Time kept free at the end of an invocation: one call with all its retries (adapters.CALL_WORST_CASE_S, 480 s) and a
save must fit in what is left, else the batch stops and saves (the 150 s kept before fitted one call, not its
retries)."""
SAVE_EVERY = 10
"""Outcomes between two saves of the run's state (a run cut short loses at most these)."""


def state_key(settings: JudgeConfig, run_id: str) -> str:
    return f"{settings.records_prefix}{settings.endpoint_name}/state/{run_id}.json"


def run(event: Mapping[str, Any], *, settings: JudgeConfig, variants: Variants, endpoint: Endpoint | None,
        store: Store, metrics: VerdictMetrics, remaining_ms: Callable[[], int],
        now: Callable[[], datetime] = lambda: datetime.now(UTC), synthetic: bool = False) -> dict[str, Any]:
    """One batch of a run (see the module's docstring). Returns the status: ``refused`` (with field, value,
    allowed), ``incomplete`` (answers so far), or ``done`` (the verdict, ``go``/``no-go``/``unmeasured``, and its
    one-line sentence)."""
    s = settings
    source = f"s3://{s.prompts_bucket}/{s.prompts_key}"
    try:
        raw, etag = store.prompt_set(s.prompts_bucket, s.prompts_key)
        prompts = parse_prompt_set(raw, source=source)
    except PromptSetError as exc:
        return _refused(exc.field, exc.value, exc.allowed, str(exc), settings=s, metrics=metrics, now=now)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
            raise  # throttled, refused access, S3 down: the invocation fails (the function's error alarm)
        allowed = "an existing object (upload the prompt set there)"
        return _refused(source, "no such object", allowed, f"{source}: got no such object; allowed: {allowed}",
                        settings=s, metrics=metrics, now=now)
    run_id = event.get("run_id") if isinstance(event, Mapping) else None
    if run_id is None:
        config = endpoint.config_name(s.endpoint_name) if endpoint is not None else "local"
        run_id = derived_run_id(config, etag)
    elif not isinstance(run_id, str) or not RUN_ID.match(run_id):
        return _refused("run_id", str(run_id)[:200], RUN_ID_RULE, f"run_id: got {run_id!r}; allowed: {RUN_ID_RULE}",
                        settings=s, metrics=metrics, now=now)
    done = store.load(s.records_bucket, record_key(s.records_prefix, s.endpoint_name, run_id))
    if done is not None:  # published before this record was written: complete latest.json, publish nothing again
        verdict = Verdict.from_json(done)
        store.put_latest(s.records_bucket, latest_key(s.records_prefix, s.endpoint_name), done)
        return {"status": "done", "repeated": True, "run_id": run_id, "verdict": verdict.outcome,
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
    left = state.pending(prompts, (s.neuron_variant, s.gpu_variant))
    if left:
        store.save_state(s.records_bucket, key, state)
        unmeasured = sum(1 for p, v in left if p.id in state.outcomes.get(v, {}))
        return {"status": "incomplete", "run_id": run_id, "answered": 2 * len(prompts) - len(left),
                "of": 2 * len(prompts)} | ({"to_ask_again": unmeasured} if unmeasured else {})
    if not state.finished_at:
        state.finished_at = now().isoformat(timespec="seconds")
        store.save_state(s.records_bucket, key, state)
    verdict = judge(endpoint=s.endpoint_name, run_id=run_id, task=s.task, prompts=prompts, state=state,
                    tolerances=s.tolerances, usd_per_hour=s.usd_per_hour, fleet=s.fleet, synthetic=synthetic)
    if verdict.unmeasured:  # no verdict: the verdict alarm keeps its state, the no-verdict alarm says why
        values = {NO_VERDICT_METRIC: 1.0}
    else:
        values = {VERDICT_METRIC: 1.0 if verdict.go else 0.0}
        values |= {name: verdict.measures[m] for m, name in MEASURE_METRICS.items() if m in verdict.measures}
    metrics.publish(endpoint=s.endpoint_name, at=datetime.fromisoformat(state.finished_at),
                    values=values, fleet=s.fleet)
    doc = verdict.to_json()
    record = record_key(s.records_prefix, s.endpoint_name, run_id)
    if not store.put_once(s.records_bucket, record, doc):  # an earlier try wrote it (its answer lost): it stands
        doc = store.load(s.records_bucket, record) or doc
    store.put_latest(s.records_bucket, latest_key(s.records_prefix, s.endpoint_name), doc)
    return {"status": "done", "run_id": run_id, "verdict": doc["verdict"], "line": Verdict.from_json(doc).line()}


def derived_run_id(config: str, etag: str) -> str:
    """The run id of a scheduled run: the deployment (the endpoint's configuration name) and the prompt set's version
    (its ETag): a new deployment or a changed prompt set is a new run."""
    return f"{config}-{etag[:12] or 'noetag'}"[-128:].lstrip("-._")


def _refused(field: str, value: Any, allowed: str, message: str, *, settings: JudgeConfig, metrics: VerdictMetrics,
             now: Callable[[], datetime]) -> dict[str, Any]:
    """A run that refuses its input: ``NoVerdict`` published (its alarm tells the topic), nothing else touched."""
    metrics.publish(endpoint=settings.endpoint_name, at=now(), values={NO_VERDICT_METRIC: 1.0}, fleet=settings.fleet)
    return {"status": "refused", "field": field, "value": str(value)[:200], "allowed": allowed, "message": message}


@cache
def _wired() -> tuple[JudgeConfig, Variants, Endpoint, Store, VerdictMetrics]:
    import boto3
    from botocore.config import Config

    from .adapters import INVOKE_CONNECT_TIMEOUT_S, INVOKE_READ_TIMEOUT_S, RETRY_CONFIG

    settings = JudgeConfig.from_environment()
    config = Config(retries=RETRY_CONFIG)
    runtime = boto3.client("sagemaker-runtime", config=Config(retries=RETRY_CONFIG, read_timeout=INVOKE_READ_TIMEOUT_S,
                                                               connect_timeout=INVOKE_CONNECT_TIMEOUT_S))
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
