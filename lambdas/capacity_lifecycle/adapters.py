"""Thin boto3 adapters of the lifecycle function: the cluster's blocks (EC2, Resource Groups), its jobs (Batch), the
checkpoint flag (S3), one-at-a-time intents (DynamoDB, the announcements table), the GPU resubmission (Batch)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from neuronfleet_runtime import announcements, reservations, topic
from neuronfleet_runtime.capacity_block_calls import CapacityBlocksApi

from neuronfleet_contract.capacity_lifecycle import (
    FALLBACK_OF_TAG,
    GPU_JOB_DEFINITION_TAG,
    ClusterRef,
    NodegroupRef,
    drain_key,
)
from neuronfleet_contract.tags import FLEET_TAG

from .logic import Block, HeldJob, Scaling

Topic = topic.Topic
Ledger = announcements.Ledger
Outbox = announcements.Outbox
Outcome = announcements.Outcome

LIVE_STATES = ("active", "scheduled")
RUNNING = ("STARTING", "RUNNING")


def _tag(resource: Mapping[str, Any], key: str) -> str:
    return next((str(t.get("Value", "")) for t in resource.get("Tags") or () if t.get("Key") == key), "")


def _utc(v: datetime) -> datetime:
    return v.replace(tzinfo=UTC) if v.tzinfo is None else v.astimezone(UTC)


class Fleet:
    """The fleet's clusters as AWS has them: blocks, running and held jobs."""

    def __init__(self, api: CapacityBlocksApi, batch: Any) -> None:
        self.api, self.batch = api, batch

    def blocks(self, cluster: ClusterRef | NodegroupRef) -> list[Block]:
        ids = set(cluster.reservation_ids)
        if cluster.group_arns:
            ids |= reservations.group_members(self.api.groups, cluster.group_arns)
        found = [r for r in self.api.reservations(sorted(ids))
                 if r.get("ReservationType") == "capacity-block" and r.get("State") in LIVE_STATES]
        block_ids = sorted({str(r["CapacityBlockId"]) for r in found if r.get("CapacityBlockId")})
        ultra = {str(b["CapacityBlockId"]) for b in self.api.blocks(block_ids=block_ids)
                 if b.get("UltraserverType")} if block_ids else set()
        return [Block(reservation_id=str(r["CapacityReservationId"]), instance_type=str(r["InstanceType"]),
                      count=int(r.get("TotalInstanceCount", 0)), start=_utc(r["StartDate"]), end=_utc(r["EndDate"]),
                      state=str(r["State"]), block_id=str(r.get("CapacityBlockId") or ""),
                      kind="ultraserver" if r.get("CapacityBlockId") in ultra else "instances",
                      fleet_tag=_tag(r, FLEET_TAG)) for r in found]

    def running(self, queue: str) -> int:
        n = 0
        for status in RUNNING:
            for page in self.batch.get_paginator("list_jobs").paginate(jobQueue=queue, jobStatus=status):
                n += len(page.get("jobSummaryList", []))
        return n

    def held(self, queue: str) -> list[HeldJob]:
        ids = [j["jobId"] for page in self.batch.get_paginator("list_jobs").paginate(jobQueue=queue,
                                                                                      jobStatus="RUNNABLE")
               for j in page.get("jobSummaryList", [])]
        out = []
        for i in range(0, len(ids), 100):
            for j in self.batch.describe_jobs(jobs=ids[i:i + 100]).get("jobs", []):
                tags = dict(j.get("tags") or {})
                out.append(HeldJob(job_id=j["jobId"], name=j["jobName"], queue=j["jobQueue"],
                                   created=datetime.fromtimestamp(int(j["createdAt"]) / 1000, UTC),
                                   status_reason=str(j.get("statusReason") or ""),
                                   gpu_job_definition=tags.get(GPU_JOB_DEFINITION_TAG) or None,
                                   nodes=int((j.get("nodeProperties") or {}).get("numNodes") or 1), tags=tags))
        return out


class Flag:
    """The cluster's checkpoint flag in its data bucket (see logic)."""

    def __init__(self, s3: Any) -> None:
        self.s3 = s3

    @staticmethod
    def where(cluster: ClusterRef | NodegroupRef) -> str:
        return f"s3://{cluster.drain_bucket}/{drain_key(cluster.name)}"

    def raise_(self, cluster: ClusterRef | NodegroupRef, *, deadline: datetime, reason: str, blocks: Sequence[str]) -> None:
        self.s3.put_object(Bucket=cluster.drain_bucket, Key=drain_key(cluster.name), ContentType="application/json",
                           Body=json.dumps({"deadline": deadline.isoformat(), "reason": reason,
                                            "blocks": list(blocks)}).encode())

    def lower(self, cluster: ClusterRef | NodegroupRef) -> bool:
        """Delete the flag if it is there (the data bucket is versioned: a DeleteObject of no object would still add
        a delete marker every pass). True when one was deleted."""
        try:
            self.s3.head_object(Bucket=cluster.drain_bucket, Key=drain_key(cluster.name))
        except self.s3.exceptions.ClientError as e:
            if int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)) == 404:
                return False
            raise
        self.s3.delete_object(Bucket=cluster.drain_bucket, Key=drain_key(cluster.name))
        return True


class Nodegroups:
    """EKS managed node groups: their scaling (DescribeNodegroup) and a new desired size (UpdateNodegroupConfig,
    ``scalingConfig.desiredSize`` only: min and max stay as the stack set them)."""

    def __init__(self, eks: Any) -> None:
        self.eks = eks

    def scaling(self, group: NodegroupRef) -> Scaling:
        """Raises ValueError naming the member when EKS's answer has no whole ``scalingConfig`` (nothing is decided
        on a guess)."""
        answer = self.eks.describe_nodegroup(clusterName=group.cluster, nodegroupName=group.nodegroup)
        ng = answer.get("nodegroup") or {}
        config = ng.get("scalingConfig") or {}
        values = {}
        for member in ("desiredSize", "minSize", "maxSize"):
            value = config.get(member)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"DescribeNodegroup {group.label}: nodegroup.scalingConfig.{member}: got {value!r}; "
                                 "allowed: a whole number of at least 0")
            values[member] = value
        return Scaling(desired=values["desiredSize"], minimum=values["minSize"], maximum=values["maxSize"],
                       status=str(ng.get("status") or ""))

    def scale(self, group: NodegroupRef, desired: int) -> str:
        """Set the node group's desired size; the update's id."""
        answer = self.eks.update_nodegroup_config(clusterName=group.cluster, nodegroupName=group.nodegroup,
                                                  scalingConfig={"desiredSize": desired})
        return str((answer.get("update") or {}).get("id") or "")


@dataclass(frozen=True)
class Claim:
    """An intent taken: ``attempted_at``, the last purchase attempt a previous holder recorded (None: none)."""

    attempted_at: datetime | None = None


class Intents:
    """One run at a time per intent (an extension, a resubmission): a lease in the announcements table (kind
    ``intent``). ``take`` is False while another run holds it or once it is done; a crashed run's lease passes, and
    the next run looks on AWS for what it may have done before acting (the callers do)."""

    KIND = "intent"

    def __init__(self, client: Any, table: str, *, clock: Callable[[], float] = time.time,
                 lease: timedelta = timedelta(minutes=15)) -> None:
        self.client, self.table, self.clock, self.lease = client, table, clock, lease

    def take(self, subject: str, *, expires: datetime) -> bool:
        return self.claim(subject, expires=expires) is not None

    def claim(self, subject: str, *, expires: datetime) -> Claim | None:
        """Take the intent (None while another run holds it, or once it is done), with what the run before this one
        recorded: the time of its last purchase attempt, whose outcome may be unknown (:meth:`attempt`)."""
        now = self.clock()
        try:
            answer = self.client.put_item(
                TableName=self.table,
                Item={"kind": {"S": self.KIND}, "subject": {"S": subject}, "state": {"S": "taken"},
                      "lease_until": {"N": repr(now + self.lease.total_seconds())},
                      "expires": {"N": str(int(expires.timestamp()))}},
                ConditionExpression="attribute_not_exists(#k) OR (#st = :taken AND lease_until < :now)",
                ExpressionAttributeNames={"#k": "kind", "#st": "state"},
                ExpressionAttributeValues={":taken": {"S": "taken"}, ":now": {"N": repr(now)}},
                ReturnValues="ALL_OLD")
        except self.client.exceptions.ConditionalCheckFailedException:
            return None
        old = (answer or {}).get("Attributes") or {}
        at = old.get("attempted_at", {}).get("N")
        return Claim(attempted_at=datetime.fromtimestamp(float(at), UTC) if at else None)

    def attempt(self, subject: str, at: datetime) -> None:
        """Record a purchase attempt of the intent, before it is made (carried over to whoever takes the intent
        next, so that no run buys again inside EC2's consistency window of it). Raises when DynamoDB refuses: then
        the attempt is not made."""
        self.client.update_item(TableName=self.table, Key={"kind": {"S": self.KIND}, "subject": {"S": subject}},
                                UpdateExpression="SET attempted_at = :at",
                                ExpressionAttributeValues={":at": {"N": repr(at.timestamp())}})

    def release(self, subject: str) -> None:
        """Hand back an intent this run took and did nothing with: the next run may take it at once."""
        self.client.update_item(TableName=self.table, Key={"kind": {"S": self.KIND}, "subject": {"S": subject}},
                                UpdateExpression="SET lease_until = :zero", ConditionExpression="#st = :taken",
                                ExpressionAttributeNames={"#st": "state"},
                                ExpressionAttributeValues={":zero": {"N": "0"}, ":taken": {"S": "taken"}})

    def done(self, subject: str, *, note: str) -> None:
        self.client.update_item(TableName=self.table, Key={"kind": {"S": self.KIND}, "subject": {"S": subject}},
                                UpdateExpression="SET #st = :done, note = :note REMOVE lease_until",
                                ExpressionAttributeNames={"#st": "state"},
                                ExpressionAttributeValues={":done": {"S": "done"}, ":note": {"S": note[:1000]}})


class PolicyParameter:
    """The capacity policy's SSM parameter, read each run (the role may only GetParameter it)."""

    def __init__(self, ssm: Any) -> None:
        self.ssm = ssm

    def read(self, name: str) -> str:
        return str(self.ssm.get_parameter(Name=name)["Parameter"]["Value"])


@dataclass(frozen=True)
class Hold:
    """What the fleet-wide budget said to one extension: ``held`` (the fee is counted: buy), or not, with what the
    fleet's extensions already hold this month."""

    held: bool
    spent: Decimal
    limit: Decimal
    month: str
    again: bool = False
    """The same extension was held before (a retried or overlapping run): counted once."""


class FleetBudget:
    """The fleet-wide extension budget, per calendar month (UTC), in the announcements table the fleet's lifecycle
    functions share: an item ``kind = budget``, ``subject = extensions#<YYYY-MM>`` whose ``spent`` is raised by a
    DynamoDB transaction that also writes the extension's hold (``kind = budget-hold``, ``subject =
    <YYYY-MM>#<extension key>#<offering>``), conditional on the hold being new and on ``spent + fee <= limit``
    (``spent <= limit - fee``: DynamoDB conditions compare, they do not add). Two overlapping runs cannot both spend
    the last of the budget, and a retried run counts its extension once.

    A hold stays when the purchase's outcome is unknown or it was bought (the money may be spent); it is released
    (one transaction: the hold deleted, ``spent`` lowered) only when AWS refused the purchase. A run that stops
    between holding and buying leaves its hold counted until the month ends: the budget errs towards spending
    less."""

    KIND, HOLD = "budget", "budget-hold"

    def __init__(self, client: Any, table: str) -> None:
        self.client, self.table = client, table

    @staticmethod
    def month(now: datetime) -> str:
        return now.astimezone(UTC).strftime("%Y-%m")

    def _total_key(self, month: str) -> dict[str, Any]:
        return {"kind": {"S": self.KIND}, "subject": {"S": f"extensions#{month}"}}

    def spent(self, month: str) -> Decimal:
        """What the month's holds add up to (a consistent Query: the role has Query, not GetItem, on the table)."""
        items = self.client.query(
            TableName=self.table, ConsistentRead=True, KeyConditionExpression="#k = :k AND #s = :s",
            ExpressionAttributeNames={"#k": "kind", "#s": "subject"},
            ExpressionAttributeValues={":k": {"S": self.KIND}, ":s": {"S": f"extensions#{month}"}}).get("Items", [])
        return Decimal(items[0]["spent"]["N"]) if items and "spent" in items[0] else Decimal(0)

    def hold(self, key: str, fee: Decimal, limit: Decimal, *, now: datetime) -> Hold:
        month = self.month(now)
        if fee > limit:
            return Hold(False, self.spent(month), limit, month)
        expires = {"N": str(int((now + timedelta(days=400)).timestamp()))}
        try:
            self.client.transact_write_items(TransactItems=[
                {"Put": {"TableName": self.table, "ConditionExpression": "attribute_not_exists(#k)",
                         "ExpressionAttributeNames": {"#k": "kind"},
                         "Item": {"kind": {"S": self.HOLD}, "subject": {"S": f"{month}#{key}"},
                                  "fee": {"N": str(fee)}, "expires": expires}}},
                {"Update": {"TableName": self.table, "Key": self._total_key(month),
                            "UpdateExpression": "SET spent = if_not_exists(spent, :zero) + :fee, #lim = :limit, "
                                                "expires = :expires",
                            "ConditionExpression": "attribute_not_exists(spent) OR spent <= :room",
                            "ExpressionAttributeNames": {"#lim": "limit"},
                            "ExpressionAttributeValues": {":zero": {"N": "0"}, ":fee": {"N": str(fee)},
                                                          ":limit": {"N": str(limit)}, ":expires": expires,
                                                          ":room": {"N": str(limit - fee)}}}}])
        except self.client.exceptions.TransactionCanceledException as e:
            reasons = [r.get("Code") for r in e.response.get("CancellationReasons") or []]
            if reasons[:1] == ["ConditionalCheckFailed"]:
                return Hold(True, self.spent(month), limit, month, again=True)
            if reasons[1:2] == ["ConditionalCheckFailed"]:
                return Hold(False, self.spent(month), limit, month)
            raise
        return Hold(True, self.spent(month), limit, month)

    def release(self, key: str, fee: Decimal, *, now: datetime) -> None:
        """Give back a hold AWS's refusal showed unspent (once: the hold must still be there)."""
        month = self.month(now)
        try:
            self.client.transact_write_items(TransactItems=[
                {"Delete": {"TableName": self.table, "Key": {"kind": {"S": self.HOLD}, "subject": {"S": f"{month}#{key}"}},
                            "ConditionExpression": "attribute_exists(#k)", "ExpressionAttributeNames": {"#k": "kind"}}},
                {"Update": {"TableName": self.table, "Key": self._total_key(month),
                            "UpdateExpression": "SET spent = spent - :fee",
                            "ExpressionAttributeValues": {":fee": {"N": str(fee)}}}}])
        except self.client.exceptions.TransactionCanceledException as e:
            if [r.get("Code") for r in e.response.get("CancellationReasons") or []][:1] != ["ConditionalCheckFailed"]:
                raise


class GpuQueue:
    """Resubmission to the GPU pool's queue, found by name before submitting (Batch's SubmitJob has no client
    token: botocore 1.44.5 batch SubmitJob)."""

    def __init__(self, batch: Any, queue_arn: str) -> None:
        self.batch, self.queue = batch, queue_arn

    def existing(self, name: str) -> str | None:
        pages = self.batch.get_paginator("list_jobs").paginate(
            jobQueue=self.queue, filters=[{"name": "JOB_NAME", "values": [name]}])
        for page in pages:
            for j in page.get("jobSummaryList", []):
                if j.get("jobName") == name:
                    return str(j["jobId"])
        return None

    def submit(self, job: HeldJob, name: str, definition: str) -> str:
        """``job`` again on the GPU queue as ``name``, with ``definition``: one of the fleet's GPU job definitions, by
        its revision ARN (logic.fleet_definition), never the tag's text."""
        answer = self.batch.submit_job(jobName=name, jobQueue=self.queue, jobDefinition=definition,
                                       tags={FALLBACK_OF_TAG: job.job_id}, propagateTags=True)
        return str(answer["jobId"])

    def cancel(self, job: HeldJob, reason: str) -> bool:
        try:
            self.batch.cancel_job(jobId=job.job_id, reason=reason[:255])
        except Exception:
            return False
        return True


def tags_of(items: Mapping[str, str] | None) -> dict[str, str]:
    return dict(items or {})
