"""The Capacity Block rows of docs/checks.md as checks: offerings, the lifecycle role's rights, the purchase trail.

The judges (``offerings_answered``, ``trail_covers``) are pure and tested on the AWS CLI's example answers
(tests/data/aws_cli; DescribeCapacityBlockOfferings has none: its fixture is built from botocore's shape, said in
its test); ``_run_*`` only read (:mod:`neuronfleet.verify.reads`) and judge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from neuronfleet_contract.tags import FLEET_TAG

from ..facts.catalog import capacity_blocks
from ..preflight.checks import Failed
from . import applies
from .outcomes import Finding, broken, holds
from .registry import Check, Context, unreadable
from .roles import LIFECYCLE_HANDLER, arn_parts, bound_right, deployed, simulate_pair

REFUSED_TYPE = ("InvalidParameterValue", "InvalidParameterCombination", "InvalidParameter")
"""EC2's error codes for a request value it does not take (EC2 API Reference, "Error codes": client errors)."""
OFFER_HOURS = 24
"""The duration searched (the shortest a Capacity Block is sold for, as docs/checks.md's command asks)."""


def block_requests(fleet: Any) -> dict[str, dict[str, Any]]:
    """What to ask EC2 for each type the fleet's Capacity Block clusters name: an UltraServer type (one UltraServer)
    for the types sold as UltraServers (facts/data/capacity_blocks.json), else the instance type (one instance)."""
    sold = capacity_blocks()
    out: dict[str, dict[str, Any]] = {}
    for cluster in fleet.training_clusters:
        if cluster.capacity.type != "capacity-block":
            continue
        ultra = sold.ultraserver_types.get(cluster.instance_type)
        if ultra:
            utype = next(iter(ultra))
            out[f"UltraServer {utype}"] = {"ultraserver_type": utype, "ultraserver_count": 1}
        else:
            out[cluster.instance_type] = {"instance_type": cluster.instance_type, "instance_count": 1}
    return out


def offerings_answered(answers: Mapping[str, Sequence[Mapping[str, Any]] | Failed]) -> Finding:
    """``capacity-block-offerings``: EC2 takes each type the fleet names (``answers``: what was asked -> the
    offerings, or EC2's refusal). Offerings, or an empty answer (none on sale now), hold; a refusal of the value
    (InvalidParameterValue) is broken."""
    if not answers:
        raise ValueError("answers: got none; allowed: one answer per type the fleet's Capacity Block clusters name")
    refused = {k: v for k, v in answers.items() if isinstance(v, Failed) and v.code in REFUSED_TYPE}
    if refused:
        asked, failed = next(iter(refused.items()))
        return broken(f"EC2 refuses {asked} in DescribeCapacityBlockOfferings: {failed}",
                      "a block cannot be bought as the fleet file names it: neuronfleet capacity and the lifecycle "
                      "function ask for this type. Check the type against EC2's Capacity Blocks page, correct "
                      "facts/data/capacity_blocks.json (UltraServer names) or the cluster's instance_type, and report "
                      "it with this line")
    seen = []
    for asked, found in answers.items():
        offers = list(found) if not isinstance(found, Failed) else []
        types = sorted({str(o.get("UltraserverType") or o.get("InstanceType")) for o in offers})
        seen.append(f"{asked}: {len(offers)} offerings for {OFFER_HOURS} h" + (f" ({', '.join(types)})" if types
                                                                                 else " (EC2 answered: none on sale "
                                                                                      "now)"))
    return holds("; ".join(seen))


def trail_covers(trails: Sequence[Mapping[str, Any]], statuses: Mapping[str, Mapping[str, Any] | Failed],
                 region: str) -> Finding:
    """``purchase-trail``: a trail covering ``region`` (multi-region, or homed there) is logging (GetTrailStatus
    ``IsLogging``): EventBridge receives CloudTrail's API-call events only then."""
    covering = [t for t in trails if t.get("IsMultiRegionTrail") or t.get("HomeRegion") == region]
    if not covering:
        return broken(f"no CloudTrail trail covers {region} ({len(trails)} trails, none multi-region or homed "
                      "there)", "EventBridge receives no PurchaseCapacityBlock call: no purchase is announced. Create "
                      "a multi-region trail (aws cloudtrail create-trail --is-multi-region-trail ... then "
                      "start-logging), or ask the organisation's admins for an organisation trail")
    logging = [t for t in covering if _logging(statuses.get(str(t.get("TrailARN"))))]
    if not logging:
        names = ", ".join(str(t.get("Name")) for t in covering)
        return broken(f"trails covering {region} ({names}) are not logging",
                      "EventBridge receives no API call while no trail logs: no purchase is announced. aws "
                      "cloudtrail start-logging --name <trail>")
    return holds(f"{logging[0].get('Name')} logs {region}'s API calls (the records' members: by hand after the "
                 "first purchase, aws cloudtrail lookup-events --lookup-attributes AttributeKey=EventName,"
                 "AttributeValue=PurchaseCapacityBlockExtension --max-results 1)")


def _logging(status: Mapping[str, Any] | Failed | None) -> bool:
    return isinstance(status, Mapping) and status.get("IsLogging") is True


# ------------------------------------------------------------------------------------------------ the checks







def _run_offerings(context: Context) -> Finding:
    answers: dict[str, list[dict[str, Any]] | Failed] = {}
    for asked, args in block_requests(context.fleet).items():
        found = context.reads.block_offerings(hours=OFFER_HOURS, **args)
        if isinstance(found, Failed) and found.code not in REFUSED_TYPE:
            return unreadable(found, BLOCK_OFFERINGS)
        answers[asked] = found
    return offerings_answered(answers)


OTHER = "-not-this-fleet"
"""Appended to the fleet's name for the tag value the role must not be allowed on."""
PLACEHOLDER_RESERVATION = "cr-00000000000000000"
"""The reservation simulated: the simulator does not read a resource's tags (they come in the context entries), so
a well-formed id of the account stands for any of the fleet's tagged blocks."""


def _run_extension_right(context: Context) -> Finding:
    found = deployed(context.reads, LIFECYCLE_HANDLER, context.fleet.stack_name("capacity"), LIFECYCLE_EXTENSION_RIGHT)
    if isinstance(found, Finding):
        return found
    key = f"aws:ResourceTag/{FLEET_TAG}"
    finding = holds("no lifecycle function")
    for function in found:
        role = str(function["Role"])
        partition, account = arn_parts(role)
        reservation = f"arn:{partition}:ec2:{context.fleet.region}:{account}:capacity-reservation/" \
                      f"{PLACEHOLDER_RESERVATION}"
        pair = simulate_pair(context.reads, role, ["ec2:PurchaseCapacityBlockExtension"], reservation,
                             {key: context.fleet.name}, {key: context.fleet.name + OTHER})
        if isinstance(pair, Failed):
            return unreadable(pair, LIFECYCLE_EXTENSION_RIGHT)
        allowed, refused = pair
        finding = bound_right(allowed, refused, role=role, right="capacity/iam.py's extension_statements",
                              breaks="the lifecycle function cannot extend the fleet's tagged blocks (AccessDenied "
                                     "in its log, the drain follows)",
                              widens="the lifecycle role may extend a block that is not the fleet's")
        if finding.outcome != "holds":
            return finding
    return finding


def _run_trail(context: Context) -> Finding:
    trails = context.reads.trails()
    if isinstance(trails, Failed):
        return unreadable(trails, PURCHASE_TRAIL)
    statuses: dict[str, dict[str, Any] | Failed] = {}
    for trail in trails:
        if trail.get("IsMultiRegionTrail") or trail.get("HomeRegion") == context.fleet.region:
            status = context.reads.trail_status(str(trail["TrailARN"]))
            if isinstance(status, Failed) and status.cause != "not found":
                return unreadable(status, PURCHASE_TRAIL)
            statuses[str(trail["TrailARN"])] = status
    return trail_covers(trails, statuses, context.fleet.region)


BLOCK_OFFERINGS = Check(
    "capacity-block-offerings", "Capacity Blocks are sold for trn2.3xlarge, and u-trn2x64 is EC2's UltraServer type "
    "name", "aws ec2 describe-capacity-block-offerings --instance-type trn2.3xlarge --instance-count 1 "
    "--capacity-duration-hours 24 (and --ultraserver-type u-trn2x64 --ultraserver-count 1)", run=_run_offerings,
    permission="ec2:DescribeCapacityBlockOfferings", applies=applies.blocks)
ULTRASERVER_BLOCK = Check(
    "ultraserver-block", "a Trn2 UltraServer block's instances stop 60 min before its end; 182 days bound a block with "
    "its extensions; PurchaseCapacityBlock's tags apply to capacity-reservation",
    "describe-capacity-blocks and the expiration warning of a real UltraServer block; purchase-capacity-block "
    "--dry-run --tag-specifications ... (docs/capacity-blocks.md)", manual="it needs a real UltraServer block and a "
    "dry-run purchase", applies=applies.ultraserver_blocks)
EXTENSION_VISIBLE = Check(
    "extension-visible", "EC2 shows a Capacity Block extension in its describes within 5 minutes",
    "after an extension: time how long aws ec2 describe-capacity-block-extension-history --capacity-reservation-ids "
    "<id> and aws ec2 describe-capacity-reservations --capacity-reservation-ids <id> --query "
    "'CapacityReservations[].EndDate' take to show it", manual="it times an extension (a purchase)",
    applies=applies.extensions)
LIFECYCLE_EXTENSION_RIGHT = Check(
    "lifecycle-extension-right", "the lifecycle role's extension right is bound by aws:ResourceTag/neuronfleet:fleet",
    "aws iam simulate-principal-policy --policy-source-arn <role> --action-names ec2:PurchaseCapacityBlockExtension "
    "--resource-arns <reservation arn> --context-entries ContextKeyName=aws:ResourceTag/neuronfleet:fleet,"
    "ContextKeyValues=<fleet>,ContextKeyType=string", run=_run_extension_right,
    permission="tag:GetResources, lambda:ListFunctions, iam:SimulatePrincipalPolicy", applies=applies.extension_by_tag)
PURCHASE_TRAIL = Check(
    "purchase-trail", "a logging trail feeds EventBridge the purchase calls, and their records carry the offering, "
    "reservation and fee members", "aws cloudtrail describe-trails lists a logging trail covering the region; after "
    "the first extension, aws cloudtrail lookup-events --lookup-attributes AttributeKey=EventName,"
    "AttributeValue=PurchaseCapacityBlockExtension --max-results 1", run=_run_trail,
    permission="cloudtrail:DescribeTrails, cloudtrail:GetTrailStatus", applies=applies.lifecycle)



def _eks_blocks(fleet: Any) -> str:
    """'' when an EKS cluster of the fleet has a node group on Capacity Blocks (its entry's own, or one of its
    ``eks.node_groups``), which the lifecycle scales."""
    for c in fleet.training_clusters:
        if c.scheduler == "eks" and (c.capacity.type == "capacity-block" or any(
                g.capacity.type == "capacity-block" for g in (c.eks.node_groups if c.eks else ()))):
            return ""
    return "the fleet has no EKS node group on Capacity Blocks"


EKS_BLOCK_SCALING = Check(
    "eks-capacity-block-scaling", "a Capacity Block node group scaled by the lifecycle's UpdateNodegroupConfig (the "
    "role's right on the node group's ARN) launches into its active block, is cordoned and drained when scaled in "
    "before the end, EKS's own scheduled scale-down action stays, and the pods' drain flags' directory is read-only",
    "aws eks describe-nodegroup --cluster-name <ClusterName> --nodegroup-name <name> --query "
    "'nodegroup.scalingConfig' on the block's first pass; after the deadline, aws eks list-updates and aws "
    "autoscaling describe-scheduled-actions (docs/eks.md)", manual="it needs a Capacity Block to start and end",
    applies=_eks_blocks)

CHECKS: tuple[Check, ...] = (BLOCK_OFFERINGS, ULTRASERVER_BLOCK, EXTENSION_VISIBLE, LIFECYCLE_EXTENSION_RIGHT,
                             PURCHASE_TRAIL, EKS_BLOCK_SCALING)
