"""Lambda entry point of the Capacity Block lifecycle: one pass over the fleet's clusters, run on a schedule and on
EC2's Capacity Block events (any of them starts the same idempotent pass).

Per cluster: extend a block whose jobs still run when the policy allows (bought once: an intent lease, and every
source EC2 offers looked at before buying: runtime capacity_block_calls.extension_found; after a purchase whose answer was
lost, no second attempt inside EC2's consistency window, across runs too: the intent carries the attempt's time),
else tell the jobs to checkpoint (S3 flag) and announce the drain; announce an impaired interconnect once (until it
is ok again); move jobs held for capacity past the policy's limit to the GPU pool when they name a GPU job
definition (once), else announce them. Every announcement goes through the announcements outbox (once, whatever the
retries), and never waits on an unrelated write: a drain is announced even when its flag cannot be written (the
message says so), an extension before its intent is marked done.

Each block, the drain flag, the interconnects and the held jobs are handled apart: one's failure (an unreadable
extension offer or history, a lost purchase answer, a refused write) never skips another block's extension or
drain; it is named, and the run raises :class:`announcements.Unfinished` at the end so that Lambda retries it. A
block whose history cannot be read is not extended (nothing is bought on a guess) but drains when due. What the
history shows is announced when seen: an extension payment-pending (under its purchase's key: a run that stopped
between buying and saying so is not left unsaid) and one payment-failed (its fleet-wide budget hold given back).

Per EKS Capacity Block node group (``NODE_GROUPS``, the first function's): DescribeNodegroup, then logic.follow: scale
out to its active blocks (UpdateNodegroupConfig's desiredSize), the same drain flag as a cluster's from the checkpoint
lead (said once), scale in at the flag's deadline (said once); one run at a time per node group (an intent lease), and
nothing decided when its blocks or its scaling cannot be read.

A big fleet runs this handler in several functions, each over its own clusters (``CLUSTERS``), all sharing the
announcements table: the intents, the once-only announcements and the open conditions there are the fleet's, so two
functions whose clusters share a block do not buy or say anything twice; a block's extension budget is read from AWS's
own history of the block, which is the same whichever function reads it; the fleet-wide monthly budget is held in that
table (adapters.FleetBudget: a DynamoDB transaction conditional on the room left) before anything is bought.

The limits are not the function's to rewrite: the capacity policy is read each run from the SSM parameter the stack
writes (its role may only GetParameter that one), never from the environment; a policy it cannot read stops the run
before anything is bought.

Configuration: :class:`neuronfleet_contract.capacity_lifecycle.LifecycleConfig`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, TypeVar

import boto3
from aws_lambda_powertools import Logger
from botocore.config import Config
from botocore.exceptions import ClientError
from neuronfleet_runtime.announcements import Unfinished
from neuronfleet_runtime.capacity_block_calls import NO_SDK_RETRIES, CapacityBlocksApi, Refused

from neuronfleet_contract.capacity_lifecycle import (
    ClusterRef,
    ExtensionOffer,
    LifecycleConfig,
    MalformedOffer,
    NodegroupRef,
    extension_offer,
)

from .adapters import (
    Flag,
    Fleet,
    FleetBudget,
    GpuQueue,
    Intents,
    Ledger,
    Nodegroups,
    Outbox,
    PolicyParameter,
    Topic,
)
from .logic import (
    ANNOUNCE_TTL,
    INTERCONNECT_KIND,
    Block,
    Follow,
    History,
    Move,
    Refuse,
    Scaling,
    Step,
    budget_text,
    choose_extension,
    cost_difference,
    drain_announcement_key,
    drain_deadline,
    drain_text,
    extended_text,
    extension_key,
    fleets_own,
    follow,
    follow_key,
    gpu_job_name,
    held,
    history,
    interconnect_changes,
    interconnect_text,
    move_text,
    not_fleets_text,
    payment_failed_text,
    refuse_text,
    refused_text,
    scaled_text,
    step,
    tell_text,
)

T = TypeVar("T")
SERVICE = "neuronfleet-capacity-lifecycle"
logger = Logger(service=SERVICE)


@dataclass
class Tools:
    settings: LifecycleConfig
    api: CapacityBlocksApi
    fleet: Fleet
    flag: Flag
    intents: Intents
    gpu: GpuQueue | None
    alerts: Topic
    ledger: Ledger
    budget: FleetBudget
    eks: Nodegroups | None = None
    """The EKS node groups' scaling (None: the settings name no node group)."""


PATIENCE = timedelta(seconds=30)
"""How long one run waits for EC2 to show a purchase whose answer was lost (looks at 0, 2, 6, 14 and 30 s). Not
found by then: the run stops that block with Unclear (no second attempt inside EC2's consistency window); the intent
keeps its lease and the attempt's time, and the run that takes it next confirms again before buying."""
SAME_MOMENT = timedelta(seconds=60)
"""An extension in the history starting within this of the block's end is an extension of that end."""


def run(event: Any, t: Tools, *, now: datetime, deadline: float | None = None,
        patience: timedelta = PATIENCE) -> dict[str, Any]:
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
            done[cluster.name] = _cluster(cluster, t, box, now, patience, problems)
        except Exception as e:  # one cluster's failure never stops the others
            logger.exception("cluster pass failed", extra={"cluster": cluster.name})
            problems.append(f"{cluster.name}: {type(e).__name__}: {e}")
    followed: dict[str, list[str]] = {}
    for group in t.settings.node_groups:
        try:
            followed[group.label] = _follow(group, t, box, now, problems)
        except Exception as e:  # its blocks or its scaling unreadable: nothing decided about it (the run says so)
            logger.exception("node group pass failed", extra={"node_group": group.label})
            problems.append(f"{group.label}: {type(e).__name__}: {e}")
    logger.info("lifecycle pass", extra={"done": done, "node_groups": followed, "announced": box.sent,
                                         "problems": problems})
    box.finish()
    if problems:
        raise Unfinished(problems)
    return {"clusters": done, "announced": box.sent, **({"node_groups": followed} if t.settings.node_groups else {})}


def _apart(problems: list[str], where: str, work: Callable[[], T]) -> T | None:
    """``work()``; a failure is logged and noted in ``problems`` (the run ends Unfinished, so Lambda retries it and
    the function's error alarm sees it) and never stops the work beside it: each block, the drain flag, the drain's
    announcement, the interconnects and the held jobs are handled apart."""
    try:
        return work()
    except Exception as e:
        logger.exception("lifecycle step failed", extra={"where": where})
        problems.append(f"{where}: {type(e).__name__}: {e}")
        return None


def _cluster(cluster: ClusterRef, t: Tools, box: Outbox, now: datetime, patience: timedelta,
             problems: list[str]) -> list[str]:
    did: list[str] = []
    blocks = t.fleet.blocks(cluster)   # unreadable: nothing about the cluster can be decided (the run says so)
    running = t.fleet.running(cluster.queue_arn) if blocks else 0
    draining: list[tuple[Block, str]] = []
    for b in blocks:   # every block on its own: one's failure never skips another's extension or drain
        def one(b: Block = b) -> Step:
            return _block(cluster, b, running, t, box, now, patience, did, problems)

        s = _apart(problems, f"{cluster.name}: {b.reservation_id}", one)
        if s is not None and s.action == "drain":
            draining.append((b, s.why))
    if draining:
        ends = [b for b, _ in draining]
        deadline = drain_deadline(ends)
        # the flag and the announcement apart: a refused write never holds back "checkpoint now" (it says so)
        flag_error = ""
        try:
            t.flag.raise_(cluster, deadline=deadline, reason="; ".join(w for _, w in draining),
                          blocks=[b.reservation_id for b in ends])
        except Exception as e:
            logger.exception("drain flag not written", extra={"cluster": cluster.name})
            flag_error = f"{type(e).__name__}: {e}"
            problems.append(f"{cluster.name}: drain flag: {flag_error}")
        box.once(drain_announcement_key(cluster.name, ends), expires=max(b.end for b in ends) + timedelta(days=1),
                 say=drain_text(cluster.name, ends, deadline, Flag.where(cluster), draining[0][1],
                                flag_error=flag_error))
        did.append(f"drain by {deadline.isoformat()}" + (f" (flag not written: {flag_error})" if flag_error else ""))
    else:  # no block of the cluster drains: no flag (a block extended, or ended; S3's DeleteObject of none is fine)
        _apart(problems, f"{cluster.name}: lowering the drain flag", lambda: t.flag.lower(cluster))
    _apart(problems, f"{cluster.name}: interconnect", lambda: _interconnect(blocks, t, box, now))
    did += _apart(problems, f"{cluster.name}: held jobs", lambda: _held(cluster, t, box, now)) or []
    return did


def _follow(group: NodegroupRef, t: Tools, box: Outbox, now: datetime, problems: list[str]) -> list[str]:
    """One Capacity Block node group (logic.follow): its blocks and its scaling read first (either unreadable: nothing
    is decided about it); then the drain flag and its announcement (before a scale-in: the jobs are told first), then
    the scaling, apart: a refused flag never holds back the scale-in that beats EC2's stop, nor the reverse."""
    if t.eks is None:
        raise RuntimeError("the function has no EKS client (Tools.eks) for its node groups")
    blocks = t.fleet.blocks(group)
    scaling = t.eks.scaling(group)
    f = follow(blocks, scaling, count=group.count, size=group.ultraserver_size, policy=t.settings.policy, now=now)
    did = [f"scale {f.direction} to {f.desired} ({f.why})" if f.direction else f"no scaling ({f.why})"]
    if f.draining:
        deadline = drain_deadline(f.draining)
        flag_error = ""
        try:
            t.flag.raise_(group, deadline=deadline, reason="the block ends (EKS node group " + group.label + ")",
                          blocks=[b.reservation_id for b in f.draining])
        except Exception as e:
            logger.exception("drain flag not written", extra={"node_group": group.label})
            flag_error = f"{type(e).__name__}: {e}"
            problems.append(f"{group.label}: drain flag: {flag_error}")
        box.once(drain_announcement_key(group.label, f.draining),
                 expires=max(b.end for b in f.draining) + timedelta(days=1),
                 say=drain_text(group.label, f.draining, deadline, Flag.where(group), "the block ends",
                                flag_error=flag_error))
        did.append(f"drain by {deadline.isoformat()}" + (f" (flag not written: {flag_error})" if flag_error else ""))
    elif not f.keep_flag:
        _apart(problems, f"{group.label}: lowering the drain flag", lambda: t.flag.lower(group))
    if f.desired is not None:
        did += _apart(problems, f"{group.label}: scale {f.direction} to {f.desired}",
                      lambda: _scale(group, f, scaling, t, box, now)) or []
    return did


def _scale(group: NodegroupRef, f: Follow, scaling: Scaling, t: Tools, box: Outbox, now: datetime) -> list[str]:
    """UpdateNodegroupConfig to ``f.desired``, one run at a time per node group (an intent's lease, handed back once
    the call is answered or refused: the next pass compares again), announced once per scaling and blocks."""
    assert t.eks is not None and f.desired is not None
    lease = f"scale#{group.label}"
    if not t.intents.take(lease, expires=now + timedelta(days=1)):
        return [f"scale {f.direction}: another run is scaling it"]
    try:
        update = t.eks.scale(group, f.desired)
    finally:
        t.intents.release(lease)
    key = follow_key(group.label, f.direction, f.cause)
    box.once(key, expires=max(b.end for b in f.cause) + timedelta(days=1),
             say=scaled_text(group.label, f, scaling.desired, f.cause, flag=Flag.where(group)))
    return [f"scaled {f.direction} {scaling.desired} -> {f.desired} (update {update})"]


def _block(cluster: ClusterRef, b: Block, running: int, t: Tools, box: Outbox, now: datetime, patience: timedelta,
           did: list[str], problems: list[str]) -> Step:
    """What to do about block ``b`` now, done (extend, or say why not); a drain is left to the cluster."""
    policy = t.settings.policy
    past = History()
    if running and now >= b.end - policy.decide_before:
        items = _apart(problems, f"{cluster.name}: {b.reservation_id}: extension history",
                       lambda: t.api.extension_history(b.reservation_id))
        if items is None:   # unknown whether an extension is pending or paid: drain when due, never buy on a guess
            s = step(b, running_jobs=running, past=past, policy=policy, now=now)
            if s.action == "extend":
                s = Step("wait", b, "its extension history is unreadable: nothing is bought on a guess")
            did.append(f"{b.reservation_id}: {s.action} ({s.why})")
            return s
        past = history(items)
        _payments(cluster, b, items, t, box, now, problems)
    s = step(b, running_jobs=running, past=past, policy=policy, now=now)
    did.append(f"{b.reservation_id}: {s.action} ({s.why})")
    if s.action == "extend" and not fleets_own(b, cluster, t.settings.fleet):
        box.once(extension_key(b) + "#not-the-fleets", expires=b.end + timedelta(days=1),
                 say=not_fleets_text(cluster.name, b, t.settings.fleet))
        did.append(f"{b.reservation_id}: not extended: not the fleet's (untagged, unnamed)")
    elif s.action == "extend":
        did.append(_extend(cluster, b, past, t, box, now, patience))
    return s


def _extend(cluster: ClusterRef, b: Block, past: History, t: Tools, box: Outbox, now: datetime,
            patience: timedelta) -> str:
    policy = t.settings.policy
    key = extension_key(b)
    offers = t.api.extension_offers(b.reservation_id, policy.extension_hours)
    choice = choose_extension(offers, b, past, policy, now=now)
    if choice.offer is None:
        box.once(key + "#refused", expires=b.end + timedelta(days=1),
                 say=refused_text(cluster.name, b, choice, offers=len(offers)))
        return f"no extension: {len(offers)} offer(s), none within the policy"
    x = choice.offer
    # the intent first, then the budget: of two overlapping runs only the one holding the intent holds a fee, so
    # the other never gives back a hold the buyer counts on
    claim = t.intents.claim(key, expires=b.end + timedelta(days=2))
    if claim is None:
        return "extension: another run holds it, or it is done"
    hold_key = f"{key}#{x.offering_id}"
    hold = t.budget.hold(hold_key, x.upfront_fee, policy.fleet_budget, now=now)
    if not hold.held:   # the fleet-wide budget (all blocks, all the fleet's functions) has no room: said once
        box.once(f"{key}#fleet-budget#{hold.month}", expires=b.end + timedelta(days=1),
                 say=budget_text(cluster.name, b, x, hold))
        t.intents.release(key)   # nothing bought: a later run looks again (the budget may have room by then)
        return (f"no extension: fleet_extension_budget_usd: ${hold.spent} held this month + ${x.upfront_fee}; "
                f"allowed: at most ${hold.limit}")
    try:   # Unclear (a lost answer EC2 shows nowhere yet) goes up: the intent and the hold stay, the next run confirms
        bought = t.api.extend(b.reservation_id, x, earlier=claim.attempted_at, patience=patience,
                              on_attempt=lambda at: t.intents.attempt(key, at))
    except Refused as e:  # AWS said no (an offer gone, a limit): said once, never retried; the drain follows
        t.budget.release(hold_key, x.upfront_fee, now=now)   # certainly unspent: the budget gets it back
        t.intents.done(key, note=f"refused: {e}")
        box.once(key + "#refused-by-aws", expires=b.end + timedelta(days=1), say=(
            f"neuronfleet: Capacity Block {b.reservation_id} extension refused"[:100],
            f"Cluster {cluster.name}: AWS refused extension {x.offering_id} of {b.reservation_id}: {e}. "
            f"The jobs are told to checkpoint before the instances stop at {b.stops_at.isoformat()}."))
        return f"extension refused by AWS: {e}"
    # announced before the intent is marked done: a refused write never holds back what was bought
    box.once(key, expires=b.end + timedelta(days=2), say=extended_text(cluster.name, b, x, already=bought.already))
    t.intents.done(key, note=f"{x.offering_id} already={bought.already}")
    return f"extended by {x.offering_id} (already: {bought.already})"


def _payments(cluster: ClusterRef, b: Block, items: Sequence[Mapping[str, Any]], t: Tools, box: Outbox,
              now: datetime, problems: list[str]) -> None:
    """What the block's extension history says of the extensions from its current end, announced when seen.

    payment-pending: announced once, under the key its purchase announces with: so the buyer's own announcement
    makes this one a no-op, and an extension whose buyer stopped between buying and saying so (a crash or a timeout,
    a DynamoDB failure) is still announced, by the retry or by another function whose cluster shares the block.

    payment-failed: announced once when first seen (not at the drain): nothing was bought, the block ends at its
    old end, and the drain follows; the fleet-wide budget's hold of it is given back (it cost nothing)."""
    pending = False
    for item in items:
        status = item.get("CapacityBlockExtensionStatus")
        if status not in ("payment-pending", "payment-failed"):
            continue
        try:
            x = extension_offer(item)   # a history item has the offering's members (botocore CapacityBlockExtension)
        except MalformedOffer:
            logger.warning("extension in the history unreadable", extra={"item": repr(item)[:300]})
            continue
        if abs(x.start - b.end) >= SAME_MOMENT:
            continue   # an extension of an earlier end (bought, or failed and said then)
        if status == "payment-pending" and not pending:
            pending = True
            box.once(extension_key(b), expires=b.end + timedelta(days=2),
                     say=extended_text(cluster.name, b, x, already=True))
        elif status == "payment-failed":
            box.once(f"{extension_key(b)}#payment-failed#{x.offering_id}", expires=b.end + timedelta(days=2),
                     say=payment_failed_text(cluster.name, b, x, t.settings.policy))
            at = item.get("CapacityBlockExtensionPurchaseDate")
            bought_at = at if isinstance(at, datetime) else now   # the month its hold was taken in

            def give_back(x: ExtensionOffer = x, bought_at: datetime = bought_at) -> None:
                t.budget.release(f"{extension_key(b)}#{x.offering_id}", x.upfront_fee, now=bought_at)

            _apart(problems, f"{cluster.name}: {b.reservation_id}: giving back the budget of {x.offering_id}",
                   give_back)


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
    for item in held(t.fleet.held(cluster.queue_arn), policy, now=now, definitions=s.gpu_job_definitions):
        job = item.job
        if isinstance(item, Refuse) and t.gpu is not None:   # not the fleet's: said once, never submitted
            box.once(f"outside#{job.job_id}", expires=now + ANNOUNCE_TTL,
                     say=refuse_text(job, item.held_for, s.gpu_job_definitions))
            did.append(f"{job.job_id}: its GPU job definition is not the fleet's, announced")
            continue
        if not isinstance(item, Move) or t.gpu is None:
            box.once(f"held#{job.job_id}", expires=now + ANNOUNCE_TTL, say=tell_text(job, item.held_for))
            did.append(f"{job.job_id}: held, announced")
            continue
        key = f"fallback#{job.job_id}"
        if not t.intents.take(key, expires=now + ANNOUNCE_TTL):
            continue
        name = gpu_job_name(job)
        try:
            gpu_id = t.gpu.existing(name) or t.gpu.submit(job, name, item.definition)
        except ClientError as e:
            if not 400 <= int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)) < 500:
                raise  # AWS's fault or throttling: the intent's lease passes and a later run tries again
            t.intents.done(key, note=f"refused: {e}")  # a job definition that does not exist, say: once
            box.once(key, expires=now + ANNOUNCE_TTL, say=(
                f"neuronfleet: job {job.name} could not move to the GPU pool"[:100],
                f"Job {job.name} ({job.job_id}) is held for Trainium capacity and names GPU job definition "
                f"{job.gpu_job_definition} (the fleet's {item.definition}), but Batch refused the resubmission: {e}. "
                "It stays where it is."))
            did.append(f"{job.job_id}: resubmission refused")
            continue
        cancelled = t.gpu.cancel(job, f"neuronfleet: moved to the GPU pool as {gpu_id}")
        t.intents.done(key, note=gpu_id)
        box.once(key, expires=now + ANNOUNCE_TTL, say=move_text(
            job, item.held_for, gpu_id, s.gpu_queue_arn,
            cost_difference(job, cluster.instance_type, s.gpu_instance_type, s.prices), cancelled=cancelled,
            definition=item.definition))
        did.append(f"{job.job_id}: moved to the GPU pool as {gpu_id}")
    return did


@cache
def clients() -> dict[str, Any]:
    """The container's clients, built once."""
    return {"ec2": boto3.client("ec2"), "purchases": boto3.client("ec2", config=Config(**NO_SDK_RETRIES)),
            "resource-groups": boto3.client("resource-groups"), "batch": boto3.client("batch"),
            "dynamodb": boto3.client("dynamodb"), "s3": boto3.client("s3"), "sns": boto3.client("sns"),
            "ssm": boto3.client("ssm"), "eks": boto3.client("eks")}


def tools() -> Tools:
    """This run's tools: the settings read again each run, the capacity policy from its SSM parameter (never the
    environment): a policy the stack changed is in force at the next run, and one nobody can read stops the run
    before anything is bought."""
    c = clients()
    s = LifecycleConfig.from_environment(read_parameter=PolicyParameter(c["ssm"]).read)
    api = CapacityBlocksApi(c["ec2"], purchases=c["purchases"], groups=c["resource-groups"])
    dynamodb = c["dynamodb"]
    return Tools(settings=s, api=api, fleet=Fleet(api, c["batch"]), flag=Flag(c["s3"]),
                 intents=Intents(dynamodb, s.ledger_table),
                 gpu=GpuQueue(c["batch"], s.gpu_queue_arn) if s.gpu_queue_arn else None,
                 alerts=Topic(c["sns"], s.topic_arn), ledger=Ledger(dynamodb, s.ledger_table),
                 budget=FleetBudget(dynamodb, s.ledger_table),
                 eks=Nodegroups(c["eks"]) if s.node_groups else None)


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return run(event, tools(), now=datetime.now(UTC),
               deadline=time.time() + context.get_remaining_time_in_millis() / 1000)
