"""A fleet split between several lifecycle functions (CapacityLifecycle.parts), against moto (SNS, DynamoDB, S3) with
EC2 and Batch stubbed on botocore 1.44.5's shapes, as tests/moto/test_capacity_lifecycle_moto.py does for one.

Each function ("part") runs the same handler over its own clusters and shares the fleet's announcements table. What
is fleet-wide stays so: a block two parts' clusters share (one resource group) is extended once and within its
budget whether the parts run one after the other in the same 10-minute pass, at the same moment, or a run is
retried; nothing is announced twice; and each part asks AWS only about its own clusters (the Stubbers refuse any call
they were not given)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws
from neuronfleet_runtime.announcements import Unfinished
from neuronfleet_runtime.capacity_blocks import CapacityBlocksApi

from neuronfleet.lambdas.capacity_lifecycle.adapters import Flag, Fleet, GpuQueue, Intents, Ledger, Topic
from neuronfleet.lambdas.capacity_lifecycle.handler import Tools, run
from neuronfleet_contract.capacity_lifecycle import CapacityPolicy, ClusterRef, LifecycleSettings
from tests.capacity_fixtures import extension, extension_offering, reservation
from tests.moto_support import alerts_inbox, announcements_table

REGION = "us-east-2"
END = datetime(2026, 11, 30, 12, tzinfo=UTC)
START = END - timedelta(days=2)
DECIDING = END - timedelta(hours=5)     # within decide_before (6 h), before the drain
BUDGET = Decimal(4000)
POLICY = CapacityPolicy(max_upfront_fee_usd=Decimal(10000), max_usd_per_instance_hour=Decimal(25),
                        allow_extension=True, extension_budget_usd=BUDGET)
GPU_QUEUE = "arn:aws:batch:us-east-2:111111111111:job-queue/gpu"


def cluster(name: str, reservation_id: str) -> ClusterRef:
    return ClusterRef(name=name, queue_arn=f"arn:aws:batch:us-east-2:111111111111:job-queue/{name}",
                      instance_type="trn2.48xlarge", drain_bucket="nf-data", reservation_ids=(reservation_id,))


# two clusters of a fleet, in two parts (two functions), drawing from the same block cr-1
PRETRAIN, FINETUNE = cluster("pretrain", "cr-1"), cluster("finetune", "cr-1")


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
        topic, inbox = alerts_inbox(sns, sqs)
        ddb = boto3.client("dynamodb", region_name=REGION)
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="nf-data", CreateBucketConfiguration={"LocationConstraint": REGION})
        yield {"sns": sns, "sqs": sqs, "topic": topic, "inbox": inbox, "ddb": ddb, "table": announcements_table(ddb),
               "s3": s3}


def said(aws: dict[str, Any]) -> list[dict[str, str]]:
    got = aws["sqs"].receive_message(QueueUrl=aws["inbox"], MaxNumberOfMessages=10).get("Messages", [])
    for m in got:
        aws["sqs"].delete_message(QueueUrl=aws["inbox"], ReceiptHandle=m["ReceiptHandle"])
    return [json.loads(m["Body"]) for m in got]


class Part:
    """One lifecycle function of the fleet (its own clients, as each Lambda has), over ``clusters``, one run's
    stubbed EC2 and Batch answers queued in the order the handler asks."""

    def __init__(self, aws: dict[str, Any], *clusters: ClusterRef, intents: type[Intents] = Intents) -> None:
        self.clusters = clusters
        self.ec2 = boto3.client("ec2", region_name=REGION)
        self.batch = boto3.client("batch", region_name=REGION)
        self.e, self.b = Stubber(self.ec2), Stubber(self.batch)
        self.purchases = 0
        settings = LifecycleSettings(fleet="nf-rainier", topic_arn=aws["topic"], ledger_table=aws["table"],
                                     policy=POLICY, clusters=clusters, gpu_queue_arn=GPU_QUEUE,
                                     gpu_instance_type="p5.48xlarge")
        self.api = CapacityBlocksApi(self.ec2, groups=boto3.client("resource-groups", region_name=REGION),
                                     sleep=lambda s: None)
        self.tools = Tools(settings=settings, api=self.api, fleet=Fleet(self.api, self.batch), flag=Flag(aws["s3"]),
                           intents=intents(aws["ddb"], aws["table"]), gpu=GpuQueue(self.batch, GPU_QUEUE),
                           alerts=Topic(aws["sns"], aws["topic"]), ledger=Ledger(aws["ddb"], aws["table"]))

    def blocks(self, rid: str = "cr-1", block_id: str = "cb-block-1") -> Part:
        self.e.add_response("describe_capacity_reservations", {"CapacityReservations": [
            reservation(rid, start=START, end=END, state="active", block_id=block_id)]},
            {"CapacityReservationIds": [rid]})
        self.e.add_response("describe_capacity_blocks", {"CapacityBlocks": [
            {"CapacityBlockId": block_id, "AvailabilityZone": "us-east-2b", "CapacityReservationIds": [rid],
             "StartDate": START, "EndDate": END, "State": "active"}]}, {"CapacityBlockIds": [block_id]})
        return self

    def running(self, c: ClusterRef) -> Part:
        for status in ("STARTING", "RUNNING"):
            jobs = [{"jobId": f"{c.name}-1", "jobName": "train"}] if status == "RUNNING" else []
            self.b.add_response("list_jobs", {"jobSummaryList": jobs}, {"jobQueue": c.queue_arn, "jobStatus": status})
        return self

    def history(self, items: list[dict[str, Any]], rid: str = "cr-1") -> Part:
        self.e.add_response("describe_capacity_block_extension_history", {"CapacityBlockExtensions": items},
                            {"CapacityReservationIds": [rid]})
        return self

    def offers(self, *fees: str) -> Part:
        self.e.add_response("describe_capacity_block_extension_offerings", {"CapacityBlockExtensionOfferings": [
            extension_offering(f"cbe-{i}", block_start=START, block_end=END, fee=fee) for i, fee in enumerate(fees)]},
            {"CapacityReservationId": "cr-1", "CapacityBlockExtensionDurationHours": 24})
        return self

    def purchase(self, offering: str, fee: str) -> Part:
        self.e.add_response("purchase_capacity_block_extension", {"CapacityBlockExtensions": [
            extension("cr-1", offering, start=END, fee=fee)]},
            {"CapacityBlockExtensionOfferingId": offering, "CapacityReservationId": "cr-1"})
        self.purchases += 1
        return self

    def status(self, state: str = "ok", block_id: str = "cb-block-1") -> Part:
        self.e.add_response("describe_capacity_block_status", {"CapacityBlockStatuses": [
            {"CapacityBlockId": block_id, "InterconnectStatus": state, "TotalCapacity": 4,
             "TotalAvailableCapacity": 3 if state == "impaired" else 4,
             "TotalUnavailableCapacity": 1 if state == "impaired" else 0}]}, {"CapacityBlockIds": [block_id]})
        return self

    def go(self, at: datetime) -> dict[str, Any]:
        with self.e, self.b:
            out = run({"detail-type": "Scheduled Event", "source": "aws.events"}, self.tools, now=at)
        self.e.assert_no_pending_responses()   # every answer given was asked for...
        self.b.assert_no_pending_responses()
        return out


def a_pass(part: Part, c: ClusterRef, *, history: list[dict[str, Any]] | None = None,
           then: Callable[[Part], Part] = lambda p: p) -> Part:
    """The calls of one cluster's pass, from its blocks to its interconnect (no held-job fallback in POLICY)."""
    p = part.blocks().running(c)
    if history is not None:
        p.history(history)
    return then(p).status()


def bought(fee: str = "1920.00", offering: str = "cbe-1") -> dict[str, Any]:
    return extension("cr-1", offering, start=END, fee=fee)


def test_two_parts_in_the_same_pass_extend_a_shared_block_once_within_its_budget(aws):
    a = a_pass(Part(aws, PRETRAIN), PRETRAIN, history=[],
               then=lambda p: p.offers("2400.00", "1920.00").history([]).purchase("cbe-1", "1920.00"))
    out_a = a.go(DECIDING)
    assert "extended by cbe-1 (already: False)" in out_a["clusters"]["pretrain"]
    # the other part, a minute later in the same 10-minute pass: AWS's history has the pending extension
    b = a_pass(Part(aws, FINETUNE), FINETUNE, history=[bought()])
    out_b = b.go(DECIDING + timedelta(minutes=1))
    assert list(out_b["clusters"]) == ["finetune"] and list(out_a["clusters"]) == ["pretrain"]
    assert any("payment is pending" in d for d in out_b["clusters"]["finetune"])
    assert a.purchases + b.purchases == 1   # Stubber: b was given no purchase answer, and asked for none
    assert [n["Subject"] for n in said(aws)] == ["neuronfleet: Capacity Block cr-1 extended"]


def test_two_parts_at_the_same_moment_buy_once(aws):
    """Part B runs its whole pass while part A is buying (A holds the intent; AWS's history is still empty)."""
    b = a_pass(Part(aws, FINETUNE), FINETUNE, history=[], then=lambda p: p.offers("1920.00"))
    outcome: dict[str, Any] = {}
    a = Part(aws, PRETRAIN)
    extend = a.api.extend

    def extend_while_b_runs(reservation_id, offer):
        outcome["b"] = b.go(DECIDING)
        return extend(reservation_id, offer)

    a.api.extend = extend_while_b_runs  # type: ignore[method-assign]
    a_pass(a, PRETRAIN, history=[], then=lambda p: p.offers("1920.00").history([]).purchase("cbe-0", "1920.00"))
    out_a = a.go(DECIDING)
    assert "extension: another run holds it, or it is done" in outcome["b"]["clusters"]["finetune"]
    assert "extended by cbe-0 (already: False)" in out_a["clusters"]["pretrain"]
    assert a.purchases + b.purchases == 1
    assert [n["Subject"] for n in said(aws)] == ["neuronfleet: Capacity Block cr-1 extended"]


class FailingDone(Intents):
    """DynamoDB refuses to mark the intent done (after botocore's retries): the run stops after buying."""

    def done(self, subject: str, *, note: str) -> None:
        raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"},
                           "ResponseMetadata": {"HTTPStatusCode": 400}}, "UpdateItem")


def test_a_run_retried_after_buying_buys_nothing_more_and_the_extension_is_announced_once(aws):
    a = a_pass(Part(aws, PRETRAIN, intents=FailingDone), PRETRAIN, history=[],
               then=lambda p: p.offers("1920.00").history([]).purchase("cbe-0", "1920.00"))
    with pytest.raises(Unfinished, match="pretrain: ClientError"):
        a.go(DECIDING)
    assert said(aws) == []   # it stopped between buying and saying so
    # Lambda's retry of the same part, then the other part sharing the block, then the next pass: each sees the
    # pending extension; the first of them says it was bought, once; nobody buys again
    retries = [a_pass(Part(aws, PRETRAIN), PRETRAIN, history=[bought(offering="cbe-0")]),
               a_pass(Part(aws, FINETUNE), FINETUNE, history=[bought(offering="cbe-0")]),
               a_pass(Part(aws, PRETRAIN), PRETRAIN, history=[bought(offering="cbe-0")])]
    for minutes, part in zip((1, 2, 10), retries, strict=True):
        part.go(DECIDING + timedelta(minutes=minutes))
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: Capacity Block cr-1 extended"
    assert "Extension cbe-0 was already bought" in note["Message"] and "$1920.00 USD" in note["Message"]
    assert a.purchases + sum(p.purchases for p in retries) == 1


def test_a_block_whose_budget_is_spent_is_refused_by_every_part_and_announced_once(aws):
    spent = [bought(fee="3000.00", offering="cbe-old") | {"CapacityBlockExtensionStatus": "payment-succeeded"}]
    outs = [a_pass(Part(aws, c), c, history=spent, then=lambda p: p.offers("1920.00")).go(DECIDING + timedelta(
        minutes=i)) for i, c in enumerate((PRETRAIN, FINETUNE))]
    assert all(any("none within the policy" in d for d in o["clusters"][n]) for o, n in zip(
        outs, ("pretrain", "finetune"), strict=True))
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: Capacity Block cr-1 not extended"
    assert f"($4920.00 with this block's earlier extensions); allowed: at most ${BUDGET} per block" in note["Message"]


def test_an_impaired_interconnect_two_parts_see_is_announced_once(aws):
    for i, c in enumerate((PRETRAIN, FINETUNE, PRETRAIN, FINETUNE)):
        Part(aws, c).blocks().running(c).status("impaired").go(END - timedelta(days=1, minutes=-i))
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: Capacity Block cb-block-1 interconnect impaired"


def test_each_part_drains_its_own_clusters_once_whatever_starts_it(aws):
    """Two parts, one cluster each on its own block: each run twice (the schedule and EC2's warning event)."""
    own = {"pretrain": cluster("pretrain", "cr-1"), "finetune": cluster("finetune", "cr-2")}
    drain_at = END - timedelta(minutes=70)
    for minutes in (0, 1):
        for name, block in (("pretrain", "cb-1"), ("finetune", "cb-2")):
            c = own[name]
            p = Part(aws, c).blocks(c.reservation_ids[0], block).running(c).history([], rid=c.reservation_ids[0])
            out = p.status(block_id=block).go(drain_at + timedelta(minutes=minutes))
            assert list(out["clusters"]) == [name]
    assert sorted(n["Subject"] for n in said(aws)) == ["neuronfleet: checkpoint now, finetune drains",
                                                       "neuronfleet: checkpoint now, pretrain drains"]
    keys = sorted(o["Key"] for o in aws["s3"].list_objects_v2(Bucket="nf-data")["Contents"])
    assert keys == ["neuronfleet/drain/finetune.json", "neuronfleet/drain/pretrain.json"]
