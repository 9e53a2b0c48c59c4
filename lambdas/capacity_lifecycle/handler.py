"""Lambda entry point of the Capacity Block lifecycle: one pass over the fleet's clusters, run on a schedule and on
EC2's Capacity Block events (any of them starts the same idempotent pass).

Per cluster: extend a block whose jobs still run when the policy allows (bought once: an intent lease, and the
block's extension history looked at before buying), else tell the jobs to checkpoint (S3 flag) and announce the
drain; announce an impaired interconnect once (until it is ok again); move jobs held for capacity past the policy's
limit to the GPU pool when they name a GPU job definition (once), else announce them. Every announcement goes
through the announcements outbox (once, whatever the retries). A failure in one cluster does not stop the others:
it is named, and the run raises :class:`announcements.Unfinished` at the end so that Lambda retries it. An extension
the history shows payment-pending is announced once too (under its purchase's key): a run that stopped between buying
and saying so is not left unsaid.

A big fleet runs this handler in several functions, each over its own clusters (``CLUSTERS``), all sharing the
announcements table: the intents, the once-only announcements and the open conditions there are the fleet's, so two
functions whose clusters share a block do not buy or say anything twice; a block's extension budget is read from AWS's
own history of the block, which is the same whichever function reads it; the fleet-wide monthly budget is held in that
table (adapters.FleetBudget: a DynamoDB transaction conditional on the room left) before anything is bought.

The limits are not the function's to rewrite: the capacity policy is read each run from the SSM parameter the stack
writes (its role may only GetParameter that one), never from the environment; a policy it cannot read stops the run
before anything is bought.

Configuration: :class:`neuronfleet_contract.capacity_lifecycle.LifecycleSettings`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from botocore.config import Config
from botocore.exceptions import ClientError
from neuronfleet_runtime.announcements import Unfinished
from neuronfleet_runtime.capacity_blocks import NO_SDK_RETRIES, CapacityBlocksApi, Refused

from neuronfleet_contract.capacity_lifecycle import ClusterRef, LifecycleSettings, MalformedOffer, extension_offer

from .adapters import Flag, Fleet, FleetBudget, GpuQueue, Intents, Ledger, Outbox, PolicyParameter, Topic
from .logic import (
    ANNOUNCE_TTL,
    INTERCONNECT_KIND,
    Block,
    History,
    Move,
    Tell,
    budget_text,
    choose_extension,
    cost_difference,
    drain_deadline,
    drain_key,
    drain_text,
    extended_text,
    extension_key,
    fleets_own,
    gpu_job_name,
    held,
    history,
    interconnect_changes,
    interconnect_text,
    move_text,
    not_fleets_text,
    refused_text,
    step,
    tell_text,
)

SERVICE = "neuronfleet-capacity-lifecycle"
logger = Logger(service=SERVICE)


@dataclass
class Tools:
    settings: LifecycleSettings
    api: CapacityBlocksApi
    fleet: Fleet
    flag: Flag
    intents: Intents
    gpu: GpuQueue | None
    alerts: Topic
    ledger: Ledger
    budget: FleetBudget


def run(event: Any, t: Tools, *, now: datetime, deadline: float | None = None) -> dict[str, Any]:
    """One pass (see the module). Returns what it did per cluster; raises Unfinished when something is left."""
    if not isinstance(event, Mapping):
        logger.error("malformed event refused", extra={"event": repr(event)[:200]})
        return {"refused": f"event: got {type(event).__name__}; allowed: a JSON object (an EventBridge event)"}
    box = t.ledger.outbox(t.alerts, deadline=deadline)
    box.complete()
    problems: list[str] = []
    done: dict[str, list[str]] = {}
    for cluster in t.settings.clusters:
        try:
            done[cluster.name] = _cluster(cluster, t, box, now)
        except Exception as e:  # one cluster's failure never stops the others
            logger.exception("cluster pass failed", extra={"cluster": cluster.name})
            problems.append(f"{cluster.name}: {type(e).__name__}: {e}")
    logger.info("lifecycle pass", extra={"done": done, "announced": box.sent, "problems": problems})
    box.finish()
    if problems:
        raise Unfinished(problems)
    return {"clusters": done, "announced": box.sent}


def _cluster(cluster: ClusterRef, t: Tools, box: Outbox, now: datetime) -> list[str]:
    policy = t.settings.policy
    did: list[str] = []
    blocks = t.fleet.blocks(cluster)
    running = t.fleet.running(cluster.queue_arn) if blocks else 0
    draining: list[tuple[Block, str]] = []
    for b in blocks:
        due = running and now >= b.end - policy.decide_before
        items = t.api.extension_history(b.reservation_id) if due else []
        past = history(items) if due else History()
        if past.pending:
            _pending(cluster, b, items, box)
        s = step(b, running_jobs=running, past=past, policy=policy, now=now)
        did.append(f"{b.reservation_id}: {s.action} ({s.why})")
        if s.action == "extend" and not fleets_own(b, cluster, t.settings.fleet):
            box.once(extension_key(b) + "#not-the-fleets", expires=b.end + timedelta(days=1),
                     say=not_fleets_text(cluster.name, b, t.settings.fleet))
            did.append(f"{b.reservation_id}: not extended: not the fleet's (untagged, unnamed)")
        elif s.action == "extend":
            did.append(_extend(cluster, b, past, t, box, now))
        elif s.action == "drain":
            draining.append((b, s.why))
    if draining:
        ends = [b for b, _ in draining]
        deadline = drain_deadline(ends)
        t.flag.raise_(cluster, deadline=deadline, reason="; ".join(w for _, w in draining),
                      blocks=[b.reservation_id for b in ends])
        box.once(drain_key(cluster.name, ends), expires=max(b.end for b in ends) + timedelta(days=1),
                 say=drain_text(cluster.name, ends, deadline, Flag.where(cluster), draining[0][1]))
        did.append(f"drain by {deadline.isoformat()}")
    else:  # no block of the cluster drains: no flag (a block extended, or ended; S3's DeleteObject of none is fine)
        t.flag.lower(cluster)
    _interconnect(blocks, t, box, now)
    did += _held(cluster, t, box, now)
    return did


def _extend(cluster: ClusterRef, b: Block, past: History, t: Tools, box: Outbox, now: datetime) -> str:
    policy = t.settings.policy
    key = extension_key(b)
    offers = t.api.extension_offers(b.reservation_id, policy.extension_hours)
    choice = choose_extension(offers, b, past, policy, now=now)
    if choice.offer is None:
        box.once(key + "#refused", expires=b.end + timedelta(days=1),
                 say=refused_text(cluster.name, b, choice, offers=len(offers)))
        return f"no extension: {len(offers)} offer(s), none within the policy"
    x = choice.offer
    hold_key = f"{key}#{x.offering_id}"
    hold = t.budget.hold(hold_key, x.upfront_fee, policy.fleet_budget, now=now)
    if not hold.held:   # the fleet-wide budget (all blocks, all the fleet's functions) has no room: said once
        box.once(f"{key}#fleet-budget#{hold.month}", expires=b.end + timedelta(days=1),
                 say=budget_text(cluster.name, b, x, hold))
        return (f"no extension: fleet_extension_budget_usd: ${hold.spent} held this month + ${x.upfront_fee}; "
                f"allowed: at most ${hold.limit}")
    if not t.intents.take(key, expires=b.end + timedelta(days=2)):
        if not hold.again:   # another run is buying (or bought) this block's extension: ours is not spent
            t.budget.release(hold_key, x.upfront_fee, now=now)
        return "extension: another run holds it, or it is done"
    try:
        bought = t.api.extend(b.reservation_id, choice.offer)
    except Refused as e:  # AWS said no (an offer gone, a limit): said once, never retried; the drain follows
        t.budget.release(hold_key, x.upfront_fee, now=now)   # certainly unspent: the budget gets it back
        t.intents.done(key, note=f"refused: {e}")
        box.once(key + "#refused-by-aws", expires=b.end + timedelta(days=1), say=(
            f"neuronfleet: Capacity Block {b.reservation_id} extension refused"[:100],
            f"Cluster {cluster.name}: AWS refused extension {choice.offer.offering_id} of {b.reservation_id}: {e}. "
            f"The jobs are told to checkpoint before the instances stop at {b.stops_at.isoformat()}."))
        return f"extension refused by AWS: {e}"
    t.intents.done(key, note=f"{choice.offer.offering_id} already={bought.already}")
    box.once(key, expires=b.end + timedelta(days=2),
             say=extended_text(cluster.name, b, choice.offer, already=bought.already))
    return f"extended by {choice.offer.offering_id} (already: {bought.already})"


def _pending(cluster: ClusterRef, b: Block, items: Sequence[Mapping[str, Any]], box: Outbox) -> None:
    """An extension of ``b`` payment-pending is announced once, under the key its purchase announces with: so the
    buyer's own announcement makes this one a no-op, and an extension whose buyer stopped between buying and saying
    so (a crash or a timeout, a DynamoDB failure; the retry then only sees the pending payment and waits) is still
    announced, by the retry or by another function whose cluster shares the block."""
    for item in items:
        if item.get("CapacityBlockExtensionStatus") != "payment-pending":
            continue
        try:
            x = extension_offer(item)   # a history item has the offering's members (botocore CapacityBlockExtension)
        except MalformedOffer:
            logger.warning("pending extension unreadable", extra={"item": repr(item)[:300]})
            continue
        box.once(extension_key(b), expires=b.end + timedelta(days=2),
                 say=extended_text(cluster.name, b, x, already=True))
        return


def _interconnect(blocks: list[Block], t: Tools, box: Outbox, now: datetime) -> None:
    ids = sorted({b.block_id for b in blocks if b.block_id})
    if not ids:
        return
    impaired, ok = interconnect_changes(t.api.status(ids))
    for s in impaired:
        bid = str(s["CapacityBlockId"])
        box.start(INTERCONNECT_KIND, bid, expires=now + ANNOUNCE_TTL, say=interconnect_text(bid, s))
    if ok:
        box.end_all(INTERCONNECT_KIND, ok, expires=now + ANNOUNCE_TTL,
                    say=lambda xs: ("neuronfleet: Capacity Block interconnect ok again",
                                    f"The accelerator interconnect is ok again on: {', '.join(xs)}."))


def _held(cluster: ClusterRef, t: Tools, box: Outbox, now: datetime) -> list[str]:
    policy, s = t.settings.policy, t.settings
    if policy.fallback_after is None:
        return []
    did = []
    for item in held(t.fleet.held(cluster.queue_arn), policy, now=now):
        job = item.job
        if isinstance(item, Tell) or t.gpu is None:
            box.once(f"held#{job.job_id}", expires=now + ANNOUNCE_TTL, say=tell_text(job, item.held_for))
            did.append(f"{job.job_id}: held, announced")
            continue
        assert isinstance(item, Move)
        key = f"fallback#{job.job_id}"
        if not t.intents.take(key, expires=now + ANNOUNCE_TTL):
            continue
        name = gpu_job_name(job)
        try:
            gpu_id = t.gpu.existing(name) or t.gpu.submit(job, name)
        except ClientError as e:
            if not 400 <= int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)) < 500:
                raise  # AWS's fault or throttling: the intent's lease passes and a later run tries again
            t.intents.done(key, note=f"refused: {e}")  # a job definition that does not exist, say: once
            box.once(key, expires=now + ANNOUNCE_TTL, say=(
                f"neuronfleet: job {job.name} could not move to the GPU pool"[:100],
                f"Job {job.name} ({job.job_id}) is held for Trainium capacity and names GPU job definition "
                f"{job.gpu_job_definition}, but Batch refused the resubmission: {e}. It stays where it is."))
            did.append(f"{job.job_id}: resubmission refused")
            continue
        cancelled = t.gpu.cancel(job, f"neuronfleet: moved to the GPU pool as {gpu_id}")
        t.intents.done(key, note=gpu_id)
        box.once(key, expires=now + ANNOUNCE_TTL, say=move_text(
            job, item.held_for, gpu_id, s.gpu_queue_arn,
            cost_difference(job, cluster.instance_type, s.gpu_instance_type, s.prices), cancelled=cancelled))
        did.append(f"{job.job_id}: moved to the GPU pool as {gpu_id}")
    return did


@cache
def clients() -> dict[str, Any]:
    """The container's clients, built once."""
    return {"ec2": boto3.client("ec2"), "purchases": boto3.client("ec2", config=Config(**NO_SDK_RETRIES)),
            "resource-groups": boto3.client("resource-groups"), "batch": boto3.client("batch"),
            "dynamodb": boto3.client("dynamodb"), "s3": boto3.client("s3"), "sns": boto3.client("sns"),
            "ssm": boto3.client("ssm")}


def tools() -> Tools:
    """This run's tools: the settings read again each run, the capacity policy from its SSM parameter (never the
    environment): a policy the stack changed is in force at the next run, and one nobody can read stops the run
    before anything is bought."""
    c = clients()
    s = LifecycleSettings.from_environment(read_parameter=PolicyParameter(c["ssm"]).read)
    api = CapacityBlocksApi(c["ec2"], purchases=c["purchases"], groups=c["resource-groups"])
    dynamodb = c["dynamodb"]
    return Tools(settings=s, api=api, fleet=Fleet(api, c["batch"]), flag=Flag(c["s3"]),
                 intents=Intents(dynamodb, s.ledger_table),
                 gpu=GpuQueue(c["batch"], s.gpu_queue_arn) if s.gpu_queue_arn else None,
                 alerts=Topic(c["sns"], s.topic_arn), ledger=Ledger(dynamodb, s.ledger_table),
                 budget=FleetBudget(dynamodb, s.ledger_table))


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return run(event, tools(), now=datetime.now(UTC),
               deadline=time.time() + context.get_remaining_time_in_millis() / 1000)
