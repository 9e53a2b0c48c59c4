"""Lambda entry point of ``Custom::HubModelCopy``: copies one revision of a Hugging Face Hub model into the fleet's
model bucket, reading the hub token from Secrets Manager at run time, so that no SageMaker model, task or function
definition ever holds it (docs/security.md, "Secrets: the Hugging Face token").

CloudFormation invokes it asynchronously and waits for the answer PUT to the request's ResponseURL. Create and
Update copy what S3 does not hold yet (a file at its size is kept; a multipart upload an earlier run left is resumed
from the parts S3 holds) and answer SUCCESS with ``Data.S3Uri``; Delete answers SUCCESS and leaves the objects (the
bucket's own removal policy decides). A run that nears its timeout hands over to a new run of itself (at most
``logic.MAX_RUNS``); every error is answered FAILED with its reason (the token scrubbed), never left to time out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from .adapters import Hub, Relay, Secrets, Store, respond
from .logic import (
    MAX_RUNS,
    RUN_KEY,
    BadRequest,
    HubFile,
    Request,
    Work,
    out_of_time,
    parse_request,
    plan,
    progress,
    response,
    scrub,
    selected,
    tree_files,
)

logger = Logger(service="hub-model-copy")
WORKERS = 4
"""Parts read and written at once (each holds one part in memory: 4 x 64 MiB, the function has 2048 MB)."""


@dataclass(frozen=True)
class Services:
    secrets: Secrets
    store: Callable[[str], Store]
    relay: Relay
    hub: Callable[[str], Hub]
    respond: Callable[[str, Mapping[str, Any]], None]


@cache
def _services() -> Services:
    s3 = boto3.client("s3")
    return Services(secrets=Secrets(boto3.client("secretsmanager")), store=lambda bucket: Store(s3, bucket),
                    relay=Relay(boto3.client("lambda")), hub=lambda token: Hub(token), respond=respond)


def handler(event: dict[str, Any], context: LambdaContext) -> None:
    run(event, remaining_ms=context.get_remaining_time_in_millis, function_name=context.function_name,
        services=_services())


def run(event: Mapping[str, Any], *, remaining_ms: Callable[[], int], function_name: str,
        services: Services) -> str:
    """One run; returns what it did (``answered SUCCESS``, ``answered FAILED``, ``handed over``, ``refused``)."""
    try:
        req = parse_request(event)
    except BadRequest as e:
        url = event.get("ResponseURL") if isinstance(event, Mapping) else None
        logger.error("request refused", extra={"reason": str(e)})
        if isinstance(url, str) and url:  # answer, so that the stack does not wait for an hour
            bare = Request(kind="Create", request_id=str(event.get("RequestId", "")), stack_id=str(event.get(
                "StackId", "")), logical_id=str(event.get("LogicalResourceId", "")), response_url=url,
                physical_id=event.get("PhysicalResourceId") or None, model_id="", revision="", secret_arn="",
                bucket="", prefix="")
            services.respond(url, response(bare, "FAILED", reason=str(e)))
        return "refused"
    if req.kind == "Delete":
        services.respond(req.response_url, response(req, "SUCCESS"))
        return "answered SUCCESS"
    token: str | None = None
    try:
        token = services.secrets.token(req.secret_arn)
        outcome = _copy(req, services.hub(token), services.store(req.bucket), remaining_ms)
        if outcome is None:
            if req.run >= MAX_RUNS:
                raise RuntimeError(f"not copied within {MAX_RUNS} runs")
            services.relay.again(function_name, {**event, RUN_KEY: req.run + 1})
            logger.info("handed over", extra={"run": req.run + 1})
            return "handed over"
        files, total = outcome
        services.respond(req.response_url, response(req, "SUCCESS", data={
            "S3Uri": req.s3_uri, "Files": files, "Bytes": total}))
        logger.info("copied", extra={"s3_uri": req.s3_uri, "files": files, "bytes": total})
        return "answered SUCCESS"
    except Exception as e:  # every failure is answered: CloudFormation would otherwise wait for its timeout
        reason = scrub(f"{req.model_id}@{req.revision} into {req.s3_uri}: {type(e).__name__}: {e}", token)
        logger.error("copy failed", extra={"reason": reason})
        services.respond(req.response_url, response(req, "FAILED", reason=reason))
        return "answered FAILED"


def _copy(req: Request, hub: Hub, store: Store, remaining_ms: Callable[[], int]) -> tuple[int, int] | None:
    """Copy what is left; (files, bytes) when all is in S3, None when the run must hand over."""
    files = selected(tree_files(hub.tree(req.model_id, req.revision)))
    if not files:
        raise ValueError(f"{req.model_id}@{req.revision} holds no model file")
    work = plan(files, req.prefix, store.objects(req.prefix), store.uploads(req.prefix))
    done, total = progress(files, work)
    logger.info("to copy", extra={"files": len(work), "bytes_done": done, "bytes_total": total, "run": req.run})
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for item in work:
            if out_of_time(remaining_ms()):
                return None
            if not _copy_file(req, item, hub, store, pool, remaining_ms):
                return None
    return len(files), total


def _copy_file(req: Request, item: Work, hub: Hub, store: Store, pool: ThreadPoolExecutor,
               remaining_ms: Callable[[], int]) -> bool:
    file: HubFile = item.file
    if item.single:
        store.put(item.key, hub.read(req.model_id, req.revision, file.path))
        return True
    upload = item.upload or store.start(item.key)

    def one(part: Any) -> tuple[int, str]:
        body = hub.read(req.model_id, req.revision, file.path, part.start, part.end)
        return part.number, store.put_part(item.key, upload, part.number, body)

    missing = list(item.missing)
    while missing:
        if out_of_time(remaining_ms()):
            return False
        batch, missing = missing[:WORKERS], missing[WORKERS:]
        for number, etag in pool.map(one, batch):
            upload.done[number] = etag
    store.complete(item.key, upload)
    return True
