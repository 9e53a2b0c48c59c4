"""The Capacity Block lifecycle of one fleet: what to do before a block ends, and with jobs held for capacity. Pure:
no AWS calls (adapters.py makes them, handler.py runs one pass).

Before a block ends (``policy.decide_before`` ahead of its end), while the cluster's Batch jobs still run:

1. extend it when the policy allows and an extension offer passes every rule (AWS's window and the policy's budget
   and price: ``neuronfleet_contract.capacity_lifecycle.extension_refusals``), announced once, bought once;
2. otherwise, from ``policy.checkpoint_lead`` before the block's instances stop (30 minutes before the end of an
   instance block, 60 assumed for an UltraServer block), tell the jobs to checkpoint by a deadline
   (``DEADLINE_MARGIN`` before the stop) and announce the drain once.

How the jobs are told: AWS Batch has no signal API. ``TerminateJob`` stops a job's containers with SIGTERM and kills
them after the ECS agent's stop timeout (30 seconds by default, botocore 1.44.5 ecs ContainerDefinition stopTimeout;
Batch's ContainerProperties has no stopTimeout to raise it): far too short to write a Trainium checkpoint. So the
function writes a flag, ``s3://<cluster data bucket>/neuronfleet/drain/<cluster>.json`` with the deadline, which a
job polls (the job role already reads the bucket: TrainiumCluster.grant_read); the example job's loop checks it
between steps and checkpoints to /fsx/data/checkpoints (exported to the same bucket). The flag is removed once the
block is extended or gone. Jobs that never read it are stopped by AWS at the block's end, as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from neuronfleet_contract.capacity_alert import TERMINATION
from neuronfleet_contract.capacity_lifecycle import (
    DEADLINE_MARGIN,
    EKS_ACTIVE_STATES,
    EXTENSION_LATEST,
    EXTENSION_PAYMENT_DEADLINE,
    GPU_JOB_DEFINITION_TAG,
    BlockEnd,
    CapacityPolicy,
    ClusterRef,
    ExtensionHistory,
    ExtensionOffer,
    Refusal,
    extension_history,
    extension_refusals,
)
from neuronfleet_contract.tags import FLEET_TAG

CAPACITY_REASON = "CAPACITY:"
"""A RUNNABLE job's statusReason when Batch cannot get the instances (neuronfleet_contract.capacity_alert, AWS Batch
user guide job_stuck_in_runnable_capacity.html): the jobs the fallback considers held for capacity."""
INTERCONNECT_KIND = "interconnect-impaired"
ANNOUNCE_TTL = timedelta(days=7)


@dataclass(frozen=True)
class Block:
    reservation_id: str
    instance_type: str
    count: int
    start: datetime
    end: datetime
    state: str
    kind: str = "instances"
    block_id: str = ""
    fleet_tag: str = ""
    """The reservation's ``neuronfleet:fleet`` tag ("" when untagged)."""

    @property
    def stops_at(self) -> datetime:
        return self.end - TERMINATION[self.kind].lead


def fleets_own(block: Block, cluster: ClusterRef, fleet: str) -> bool:
    """Whether the function may extend ``block``: the fleet file names its reservation (``reservation_id``), or it is
    tagged with the fleet. A block that is only a member of the cluster's resource group is not enough: whoever can
    add a reservation to the group would put another team's block in scope. The role's IAM says the same
    (neuronfleet.capacity.iam.extension_statements), so this only turns an AccessDenied into a clear announcement."""
    return block.reservation_id in cluster.reservation_ids or (bool(fleet) and block.fleet_tag == fleet)


History = ExtensionHistory
history = extension_history


@dataclass(frozen=True)
class Step:
    """What to do about one block now: ``extend`` (look for offers and buy one if the policy allows), ``drain``
    (checkpoint flag + announcement), ``wait`` (a decision is not due, or an extension's payment is pending), or
    ``idle`` (no job runs on it: an idle block is not worth extending or draining)."""

    action: str
    block: Block
    why: str


def step(block: Block, *, running_jobs: int, past: History, policy: CapacityPolicy, now: datetime) -> Step:
    if now >= block.end:
        return Step("idle", block, "the block has ended")
    if running_jobs == 0:
        return Step("idle", block, "no job of the cluster runs")
    if now < block.end - policy.decide_before:
        return Step("wait", block, f"decides from {(block.end - policy.decide_before).isoformat()}")
    drain_from = block.stops_at - policy.checkpoint_lead
    if now >= drain_from:
        return Step("drain", block, "pending extension not paid in time" if past.pending else "no extension")
    if past.pending:
        return Step("wait", block, "an extension's payment is pending (it fails 35 minutes before the end if unpaid)")
    if policy.allow_extension and block.end - now >= EXTENSION_LATEST.value:
        return Step("extend", block, "jobs still run and the policy allows an extension")
    return Step("wait", block, f"drains from {drain_from.isoformat()}"
                + ("" if policy.allow_extension else " (extensions not allowed by the policy)"))


@dataclass(frozen=True)
class Choice:
    offer: ExtensionOffer | None
    refused: Mapping[str, Sequence[Refusal]] = field(default_factory=dict)


def choose_extension(offers: Sequence[ExtensionOffer], block: Block, past: History, policy: CapacityPolicy, *,
                     now: datetime) -> Choice:
    """The cheapest extension offer every rule allows, or None with each offer's refusals."""
    end = BlockEnd(block.reservation_id, block.start, block.end, block.state, past.pending, past.spent_usd)
    refused = {x.offering_id: extension_refusals(x, end, policy, now=now) for x in offers}
    ok = sorted((x for x in offers if not refused[x.offering_id]), key=lambda x: (x.upfront_fee, x.offering_id))
    return Choice(ok[0] if ok else None, {k: v for k, v in refused.items() if v})


def drain_deadline(blocks: Sequence[Block]) -> datetime:
    return min(b.stops_at for b in blocks) - DEADLINE_MARGIN


# ------------------------------------------------------------------------------------------------ what is said


def _t(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M UTC")


def extension_key(block: Block) -> str:
    """One extension decision per block and end date: an extended block has a new end and a new key."""
    return f"extend#{block.reservation_id}#{block.end.isoformat()}"


def extended_text(cluster: str, block: Block, x: ExtensionOffer, *, already: bool) -> tuple[str, str]:
    return (f"neuronfleet: Capacity Block {block.reservation_id} extended"[:100],
            f"Cluster {cluster}: jobs still run on Capacity Block {block.reservation_id} ({block.count} x "
            f"{block.instance_type}), which ended at {_t(block.end)}. Extension {x.offering_id} "
            f"{'was already bought' if already else 'bought'}: {x.hours:g} h to {_t(x.end)}, upfront fee "
            f"${x.upfront_fee} {x.currency} (${x.usd_per_instance_hour} per instance-hour). AWS bills it up front; it "
            f"stays payment-pending until paid, and fails if unpaid {int(EXTENSION_PAYMENT_DEADLINE.value.seconds // 60)}"
            " minutes before the old end: then the jobs are told to checkpoint as before.")


def not_fleets_text(cluster: str, block: Block, fleet: str) -> tuple[str, str]:
    return (f"neuronfleet: Capacity Block {block.reservation_id} not extended: not the fleet's"[:100],
            f"Cluster {cluster}: jobs still run on Capacity Block {block.reservation_id}, which ends at "
            f"{_t(block.end)}, but its reservation is neither named in the fleet file (reservation_id) nor tagged "
            f"{FLEET_TAG}={fleet} (its tag: {block.fleet_tag or 'none'}): it only belongs to the cluster's resource "
            "group, so the lifecycle does not extend it (nor may its role). Tag it with the fleet if it is the "
            "fleet's, or extend it yourself (neuronfleet capacity extend). The jobs are told to checkpoint before the "
            f"instances stop at {_t(block.stops_at)}.")


def budget_text(cluster: str, block: Block, x: ExtensionOffer, hold: Any) -> tuple[str, str]:
    return (f"neuronfleet: Capacity Block {block.reservation_id} not extended: fleet budget"[:100],
            f"Cluster {cluster}: jobs still run on Capacity Block {block.reservation_id}, which ends at "
            f"{_t(block.end)}. Extension {x.offering_id} (${x.upfront_fee} {x.currency}) is within the block's own "
            f"limits, but the fleet's extensions of {hold.month} already hold ${hold.spent}: with it they would pass "
            f"fleet_extension_budget_usd, at most ${hold.limit} a month for all the fleet's blocks. Raise it in the "
            "capacity policy (the stack writes it) or extend by hand (neuronfleet capacity extend). The jobs are told "
            f"to checkpoint before the instances stop at {_t(block.stops_at)}.")


def refused_text(cluster: str, block: Block, choice: Choice, *, offers: int) -> tuple[str, str]:
    lines = [f"Cluster {cluster}: jobs still run on Capacity Block {block.reservation_id}, which ends at "
             f"{_t(block.end)}; no extension is bought ({offers} offer(s) from EC2)."]
    for oid, reasons in choice.refused.items():
        lines.append(f"- {oid}: " + "; ".join(map(str, reasons)))
    lines.append(f"The jobs are told to checkpoint before the instances stop at {_t(block.stops_at)}.")
    return (f"neuronfleet: Capacity Block {block.reservation_id} not extended"[:100], "\n".join(lines))


def drain_announcement_key(cluster: str, blocks: Sequence[Block]) -> str:
    """The announcement ledger's key of the drain notice for ``cluster``'s blocks ending first (not the S3 key of the
    checkpoint flag: that is neuronfleet_contract.capacity_lifecycle.drain_key)."""
    return f"drain#{cluster}#{min(b.end for b in blocks).isoformat()}"


def drain_text(cluster: str, blocks: Sequence[Block], deadline: datetime, flag: str, why: str, *,
               flag_error: str = "") -> tuple[str, str]:
    names = ", ".join(f"{b.reservation_id} ({b.count} x {b.instance_type}, stops {_t(b.stops_at)})" for b in blocks)
    told = (f"The jobs were told to checkpoint by {_t(deadline)}: the flag {flag} holds the deadline. Jobs that do "
            "not read it stop when AWS stops the instances.") if not flag_error else (
        f"Checkpoint the jobs by {_t(deadline)}: the flag {flag} that tells them could NOT be written ({flag_error}); "
        "the function writes it again at its next run, so jobs that poll it may hear late or not at all. Jobs not "
        "checkpointed stop when AWS stops the instances.")
    return (f"neuronfleet: checkpoint now, {cluster} drains"[:100],
            f"Cluster {cluster}: its Capacity Block(s) {names} end ({why}). {told}")


def payment_failed_text(cluster: str, block: Block, x: ExtensionOffer, policy: CapacityPolicy) -> tuple[str, str]:
    drain_from = block.stops_at - policy.checkpoint_lead
    return (f"neuronfleet: Capacity Block {block.reservation_id} extension payment failed"[:100],
            f"Cluster {cluster}: the payment of extension {x.offering_id} of Capacity Block {block.reservation_id} "
            f"({x.hours:g} h, upfront fee ${x.upfront_fee} {x.currency}) failed (payment-failed in its extension "
            f"history): nothing was bought and no fee is due for it. The block still ends at {_t(block.end)}; its "
            f"instances stop at {_t(block.stops_at)}. Unless the block is extended again (neuronfleet capacity extend), "
            f"the jobs are told to checkpoint from {_t(drain_from)}.")


def interconnect_text(block_id: str, status: Mapping[str, Any]) -> tuple[str, str]:
    return (f"neuronfleet: Capacity Block {block_id} interconnect {status.get('InterconnectStatus')}"[:100],
            f"DescribeCapacityBlockStatus says the accelerator interconnect of Capacity Block {block_id} is "
            f"{status.get('InterconnectStatus')} ({status.get('TotalUnavailableCapacity', '?')} of "
            f"{status.get('TotalCapacity', '?')} unavailable). Collective jobs across it may hang or slow: check the "
            "job's progress and the instances' status checks. Announced again only after it recovers.")


def interconnect_changes(statuses: Iterable[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], list[str]]:
    """(statuses impaired now, block ids ok now): start and end of the lasting condition. ``insufficient-data``
    changes nothing."""
    impaired, ok = [], []
    for s in statuses:
        if s.get("InterconnectStatus") == "impaired":
            impaired.append(s)
        elif s.get("InterconnectStatus") == "ok":
            ok.append(str(s.get("CapacityBlockId")))
    return impaired, ok


# ------------------------------------------------------------------------------------------------ held jobs


@dataclass(frozen=True)
class HeldJob:
    job_id: str
    name: str
    queue: str
    created: datetime
    status_reason: str
    gpu_job_definition: str | None
    nodes: int = 1
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Move:
    """Resubmit ``job`` to the GPU queue with ``definition``: the fleet's GPU job definition its tag names, by its
    revision ARN (what the role may submit)."""

    job: HeldJob
    held_for: timedelta
    definition: str = ""


@dataclass(frozen=True)
class Tell:
    """Only announce: ``job`` has no GPU job definition."""

    job: HeldJob
    held_for: timedelta


@dataclass(frozen=True)
class Refuse:
    """Only announce: ``job``'s tag names a job definition that is not one of the fleet's GPU job definitions (the
    role may not submit it either: announced here rather than met as AccessDenied)."""

    job: HeldJob
    held_for: timedelta


_DEFINITION_ARN = re.compile(
    r"arn:(?P<partition>[^:]+):batch:(?P<region>[^:]+):(?P<account>\d{12}):job-definition/(?P<name>[^:/]+)"
    r"(?::(?P<revision>\d+))?")


def fleet_definition(named: str, fleet: Sequence[str]) -> str | None:
    """The fleet's GPU job definition (a revision ARN of ``fleet``) that a job's tag ``named`` names, or None.

    SubmitJob takes a name, ``name:revision`` or an ARN with or without the revision, and without one uses the latest
    active revision (botocore 1.44.5 batch SubmitJob jobDefinition). The role may submit only the revisions the stack
    registered (IAM matches the request's ARN, which carries the revision: Batch user guide, "Resource: Restrict to
    job definition prefix on job submission", read 2026-11-28), so the function always submits one of ``fleet`` by
    its full ARN: a name (or an ARN without revision) means the fleet's revision of that name, never a newer one
    someone else registered; a revision must be the fleet's; an ARN must be the fleet's, account and region
    included."""
    named = named.strip()
    ours = {}
    for arn in fleet:
        m = _DEFINITION_ARN.fullmatch(arn)
        if m and m.group("revision"):
            ours[arn] = m
    if named in ours:
        return named
    asked = _DEFINITION_ARN.fullmatch(named)
    if asked:
        if asked.group("revision"):
            return None   # an ARN with a revision: only an exact match (above)
        same = [arn for arn, m in ours.items()
                if m.group("partition", "region", "account", "name") ==
                asked.group("partition", "region", "account", "name")]
    elif named.startswith("arn:"):
        return None
    else:
        name, _, revision = named.partition(":")
        same = [arn for arn, m in ours.items()
                if m.group("name") == name and (not revision or m.group("revision") == revision)]
    return same[0] if len(same) == 1 else None


def held(jobs: Iterable[HeldJob], policy: CapacityPolicy, *, now: datetime,
         definitions: Sequence[str] = ()) -> list[Move | Tell | Refuse]:
    """Jobs held for Trainium capacity longer than ``policy.fallback_after`` (none when it is unset): a move for those
    whose tag names one of ``definitions`` (the fleet's GPU job definitions, revision ARNs), a refusal for those whose
    tag names another, a word for those without the tag."""
    if policy.fallback_after is None:
        return []
    out: list[Move | Tell | Refuse] = []
    for j in jobs:
        waited = now - j.created
        if not j.status_reason.startswith(CAPACITY_REASON) or waited < policy.fallback_after:
            continue
        if not j.gpu_job_definition:
            out.append(Tell(j, waited))
            continue
        ours = fleet_definition(j.gpu_job_definition, definitions)
        out.append(Move(j, waited, ours) if ours else Refuse(j, waited))
    return out


def gpu_job_name(job: HeldJob) -> str:
    """The GPU job's name: the same for every retry (the adapter looks for it before submitting); Batch allows 128
    letters, digits, hyphens and underscores (botocore 1.44.5 batch SubmitJob jobName)."""
    return f"{job.name[:90]}-gpu-{job.job_id.replace('-', '')[:16]}"


def cost_difference(job: HeldJob, trainium_type: str, gpu_type: str,
                    prices: Mapping[str, Mapping[str, str]]) -> str:
    """The hourly On-Demand difference from the kit's price table (the GPU job runs as many nodes as the Trainium
    job asked for: an assumption the message states)."""
    t, g = prices.get(trainium_type), prices.get(gpu_type)
    if not t or not g:
        missing = [x for x, p in ((trainium_type, t), (gpu_type, g)) if not p]
        return f"cost difference unknown: the kit's price table has no {', '.join(missing)}"
    tp, gp = Decimal(t["usd_per_hour"]) * job.nodes, Decimal(g["usd_per_hour"]) * job.nodes
    diff = gp - tp
    return (f"{job.nodes} x {gpu_type} at ${Decimal(g['usd_per_hour'])}/h = ${gp}/h instead of {job.nodes} x "
            f"{trainium_type} at ${Decimal(t['usd_per_hour'])}/h = ${tp}/h: {'+' if diff >= 0 else '-'}${abs(diff)}/h "
            f"On-Demand (kit price table, as of {g.get('as_of', '?')}; a Trainium Capacity Block is paid up front "
            "whether used or not)")


def move_text(job: HeldJob, waited: timedelta, gpu_job_id: str, gpu_queue: str, cost: str, *,
              cancelled: bool, definition: str = "") -> tuple[str, str]:
    return (f"neuronfleet: job {job.name} moved to the GPU pool"[:100],
            f"Job {job.name} ({job.job_id}) was held for Trainium capacity on {job.queue} for "
            f"{int(waited.total_seconds() // 60)} min ({job.status_reason}). It was resubmitted once to the GPU pool's "
            f"queue "
            f"{gpu_queue} as {gpu_job_id} with the fleet's GPU job definition {definition} (its tag: "
            f"{job.gpu_job_definition}). "
            + ("The Trainium job was cancelled. " if cancelled else
               "The Trainium job could NOT be cancelled: cancel it, or it runs twice. ") + f"Cost: {cost}.")


def tell_text(job: HeldJob, waited: timedelta) -> tuple[str, str]:
    return (f"neuronfleet: job {job.name} held for Trainium capacity"[:100],
            f"Job {job.name} ({job.job_id}) has been held for Trainium capacity on {job.queue} for "
            f"{int(waited.total_seconds() // 60)} min ({job.status_reason}). It names no GPU job definition (tag "
            "neuronfleet:gpu-job-definition), so it stays where it is.")


def refuse_text(job: HeldJob, waited: timedelta, fleet: Sequence[str]) -> tuple[str, str]:
    """A held job whose tag names a job definition outside the fleet's: said once, never submitted."""
    ours = ", ".join(fleet) if fleet else "none (the GPU pool has no job definition: GpuPool.add_job_definition)"
    return (f"neuronfleet: job {job.name} not moved: its GPU job definition is not the fleet's"[:100],
            f"Job {job.name} ({job.job_id}) has been held for Trainium capacity on {job.queue} for "
            f"{int(waited.total_seconds() // 60)} min ({job.status_reason}). Its tag {GPU_JOB_DEFINITION_TAG} names "
            f"{job.gpu_job_definition}, which is not one of the fleet's GPU job definitions ({ours}), so it is not "
            "submitted to the GPU pool (the job would run with that definition's job role): it stays where it is. "
            "Tag it with one of the fleet's, by name, name:revision or ARN.")


# ------------------------------------------------------------------------------------------------ EKS node groups
# A Capacity Block node group follows its blocks (neuronfleet_contract.capacity_lifecycle.NodegroupRef): scaled out to
# its active blocks' instances when a pass finds them active (the block's "Capacity Block Delivered" event runs a
# pass at once), told to checkpoint through the same flag the Batch path writes from the checkpoint lead before the
# instances stop, and scaled in at the flag's deadline (DEADLINE_MARGIN before the stop), before EC2 stops the
# instances: EKS's own scale-down at the end less 40 minutes comes after an UltraServer block's instances stop
# (contract EKS_SCALEDOWN). Scaling in at the flag's deadline, not when the flag is raised: a managed node group's
# scale-in evicts the pods at once (contract EKS_DRAINS_ON_SCALE_IN), which would leave the jobs no time to checkpoint.


@dataclass(frozen=True)
class Scaling:
    """A node group's scaling as DescribeNodegroup answers it (``nodegroup.scalingConfig`` and ``status``)."""

    desired: int
    minimum: int
    maximum: int
    status: str


@dataclass(frozen=True)
class Follow:
    """What one pass does about one node group: ``desired`` (UpdateNodegroupConfig's desiredSize; None: leave it),
    ``direction`` (``out`` or ``in``), ``draining`` (the blocks whose drain is on: the flag is raised with their
    deadline and announced once; empty: the flag is lowered, unless ``keep_flag``), and ``why``."""

    desired: int | None
    direction: str
    draining: tuple[Block, ...]
    why: str
    keep_flag: bool = False
    cause: tuple[Block, ...] = ()
    """The blocks the scaling is for: the active ones scaled out to, or those whose deadline passed."""
    """A drain is on but the node group has no nodes: the flag is neither raised nor lowered (none is announced)."""


def checkpoint_deadline(block: Block) -> datetime:
    """When a block's jobs must have checkpointed, and when its node group is scaled in."""
    return block.stops_at - DEADLINE_MARGIN


def whole(n: int, size: int) -> int:
    """``n`` nodes rounded down to whole UltraServers of ``size``."""
    return n // size * size


def follow(blocks: Sequence[Block], scaling: Scaling, *, count: int, size: int, policy: CapacityPolicy,
           now: datetime) -> Follow:
    """What to do about a Capacity Block node group now (see the section's comment). ``count``: its most nodes;
    ``size``: its UltraServer size (1: none). Scales out to the active blocks' instances whose drain has not started
    (at most ``count`` and the group's maxSize, whole UltraServers) when the group has fewer; scales in to them when a
    block's checkpoint deadline has passed and the group has more; never while the group is not ACTIVE or DEGRADED
    (an update would be refused: the next pass acts). The flag is raised (and the drain said) only while the group
    has nodes; with none it is left as it is, so a group scaled in keeps its flag until the block ends."""
    live = [b for b in blocks if b.state == "active" and b.start <= now < b.end]
    draining = tuple(b for b in live if now >= b.stops_at - policy.checkpoint_lead)
    keep = [b for b in live if b not in draining]   # a draining block's nodes are never added: they would be told
    ending = [b for b in live if now >= checkpoint_deadline(b)]   # to checkpoint as they join
    target = whole(min(count, scaling.maximum, sum(b.count for b in keep)), size)
    has_nodes = scaling.desired > 0
    shown = draining if has_nodes else ()
    if scaling.desired < target:
        direction, cause = "out", tuple(keep)
        why = "block(s) " + ", ".join(b.reservation_id for b in keep) + " active"
    elif ending and scaling.desired > target:
        direction, cause = "in", tuple(ending)
        why = ("checkpoint deadline of " + ", ".join(b.reservation_id for b in ending) + " passed ("
               + min(checkpoint_deadline(b) for b in ending).isoformat() + ")")
    else:
        return Follow(None, "", shown, "at its blocks' size" if live else "no active block",
                      keep_flag=bool(draining) and not has_nodes)
    if scaling.status not in EKS_ACTIVE_STATES:
        return Follow(None, "", shown, f"scale {direction} to {target} waits: the node group is {scaling.status}",
                      keep_flag=bool(draining) and not has_nodes)
    return Follow(target, direction, shown, why, keep_flag=bool(draining) and not has_nodes, cause=cause)


def follow_key(label: str, direction: str, blocks: Sequence[Block]) -> str:
    """The ledger's key of one scaling of a node group (``label``: ``<cluster>/<name>``) for ``blocks``: said once."""
    return f"follow#{label}#{direction}#" + ",".join(sorted(f"{b.reservation_id}@{b.end.isoformat()}" for b in blocks))


def scaled_text(label: str, f: Follow, before: int, blocks: Sequence[Block], *, flag: str) -> tuple[str, str]:
    if f.direction == "out":
        return (f"neuronfleet: node group {label} scaled out to {f.desired}"[:100],
                f"EKS node group {label}: its Capacity Block(s) are active ({f.why}); desired size {before} -> "
                f"{f.desired} (UpdateNodegroupConfig). The nodes join as the block's instances launch; they are "
                f"told to checkpoint (the flag {flag}) from the checkpoint lead before the instances stop, and the "
                "group is scaled in at the checkpoint deadline.")
    ends = ", ".join(f"{b.reservation_id} (stops {_t(b.stops_at)})" for b in blocks)
    return (f"neuronfleet: node group {label} scaled in to {f.desired}"[:100],
            f"EKS node group {label}: {f.why}; desired size {before} -> {f.desired} (UpdateNodegroupConfig): EKS "
            f"cordons and drains the nodes it removes before EC2 stops the instances of {ends}. A job that has not "
            f"checkpointed by now (the flag {flag}) loses the work since its last checkpoint.")
