"""The Capacity Block lifecycle function's world for its moto tests (tests/moto/test_capacity_lifecycle_moto.py, one
function; tests/moto/test_capacity_lifecycle_parts_moto.py, a fleet split between functions): SNS, SQS, DynamoDB
and S3 from moto, EC2 and Batch stubbed on botocore 1.44.5's shapes and queued in the order the handler asks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, Self

import boto3
from botocore.stub import Stubber
from moto import mock_aws
from neuronfleet_runtime.capacity_block_calls import CapacityBlocksApi

from neuronfleet.lambdas.capacity_lifecycle.adapters import Flag, Fleet, FleetBudget, GpuQueue, Intents, Ledger, Topic
from neuronfleet.lambdas.capacity_lifecycle.handler import Tools, run
from neuronfleet_contract.capacity_lifecycle import LifecycleConfig
from tests.capacity_fixtures import extension_offering, reservation
from tests.moto_support import alerts_inbox, announcements_table

REGION = "us-east-2"
END = datetime(2026, 11, 30, 12, tzinfo=UTC)
START = END - timedelta(days=2)
GPU_QUEUE = "arn:aws:batch:us-east-2:111111111111:job-queue/gpu"
DRAIN_BUCKET = "nf-data"


@contextmanager
def lifecycle_aws() -> Iterator[dict[str, Any]]:
    """moto's SNS topic with an SQS inbox, the announcements table and the drain flag's bucket (set
    AWS_DEFAULT_REGION to REGION first)."""
    with mock_aws():
        sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
        topic, inbox = alerts_inbox(sns, sqs)
        ddb = boto3.client("dynamodb", region_name=REGION)
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=DRAIN_BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        yield {"sns": sns, "sqs": sqs, "topic": topic, "inbox": inbox, "ddb": ddb, "table": announcements_table(ddb),
               "s3": s3}


def said(aws: dict[str, Any]) -> list[dict[str, str]]:
    """The announcements the topic delivered since the last call (taken off the inbox)."""
    got = aws["sqs"].receive_message(QueueUrl=aws["inbox"], MaxNumberOfMessages=10).get("Messages", [])
    for m in got:
        aws["sqs"].delete_message(QueueUrl=aws["inbox"], ReceiptHandle=m["ReceiptHandle"])
    return [json.loads(m["Body"]) for m in got]


class LifecycleRun:
    """One run of one lifecycle function (its own clients, as each Lambda has) with ``settings``: the stubbed EC2 and
    Batch answers the subclasses queue, then :meth:`go`."""

    def __init__(self, aws: dict[str, Any], settings: LifecycleConfig, *, intents: type[Intents] = Intents) -> None:
        self.aws = aws
        self.ec2 = boto3.client("ec2", region_name=REGION)
        self.rg = boto3.client("resource-groups", region_name=REGION)
        self.batch = boto3.client("batch", region_name=REGION)
        self.e, self.b = Stubber(self.ec2), Stubber(self.batch)
        self.api = CapacityBlocksApi(self.ec2, groups=self.rg, sleep=lambda s: None)
        self.tools = Tools(settings=settings, api=self.api, fleet=Fleet(self.api, self.batch), flag=Flag(aws["s3"]),
                           intents=intents(aws["ddb"], aws["table"]), gpu=GpuQueue(self.batch, GPU_QUEUE),
                           alerts=Topic(aws["sns"], aws["topic"]), ledger=Ledger(aws["ddb"], aws["table"]),
                           budget=FleetBudget(aws["ddb"], aws["table"]))

    def _blocks(self, rid: str, end: datetime, block_id: str, tags: dict[str, str] | None = None) -> None:
        self.last_block = (rid, end, block_id)
        self.e.add_response("describe_capacity_reservations", {"CapacityReservations": [
            reservation(rid, start=START, end=end, state="active", block_id=block_id, tags=tags)]},
            {"CapacityReservationIds": [rid]})
        self.e.add_response("describe_capacity_blocks", {"CapacityBlocks": [
            {"CapacityBlockId": block_id, "AvailabilityZone": "us-east-2b", "CapacityReservationIds": [rid],
             "StartDate": START, "EndDate": end, "State": "active"}]}, {"CapacityBlockIds": [block_id]})

    def looks(self, history: list[dict[str, Any]] | None = None) -> Self:
        """One look for a purchase of an extension of the last block queued, in every source EC2 offers (the
        extension history, then the reservation's and the block's end dates: capacity_blocks.extension_found), as
        before a purchase or after a lost answer; by default none shows it (each answers the block's own end)."""
        rid, end, block_id = self.last_block
        self._history(history or [], rid)
        if not history:
            self._blocks(rid, end, block_id)
        return self

    def _history(self, items: list[dict[str, Any]], rid: str) -> None:
        self.e.add_response("describe_capacity_block_extension_history", {"CapacityBlockExtensions": items},
                            {"CapacityReservationIds": [rid]})

    def _offers(self, fees: tuple[str, ...], rid: str = "cr-1") -> None:
        self.e.add_response("describe_capacity_block_extension_offerings", {"CapacityBlockExtensionOfferings": [
            extension_offering(f"cbe-{i}", block_start=START, block_end=END, fee=fee) for i, fee in enumerate(fees)]},
            {"CapacityReservationId": rid, "CapacityBlockExtensionDurationHours": 24})

    def _status(self, state: str, block_id: str) -> None:
        self.e.add_response("describe_capacity_block_status", {"CapacityBlockStatuses": [
            {"CapacityBlockId": block_id, "InterconnectStatus": state, "TotalCapacity": 4,
             "TotalAvailableCapacity": 3 if state == "impaired" else 4,
             "TotalUnavailableCapacity": 1 if state == "impaired" else 0}]}, {"CapacityBlockIds": [block_id]})

    def _running(self, queue: str, job_ids: list[str]) -> None:
        for status in ("STARTING", "RUNNING"):
            jobs = [{"jobId": j, "jobName": "train"} for j in job_ids] if status == "RUNNING" else []
            self.b.add_response("list_jobs", {"jobSummaryList": jobs}, {"jobQueue": queue, "jobStatus": status})

    def go(self, at: datetime, *, patience: timedelta = timedelta(0)) -> dict[str, Any]:
        """The run at ``at`` (EC2's clock too); ``patience``: how long it waits for a lost purchase to show (0: one
        look, as the Lambda's first look)."""
        self.api.clock = lambda: at
        with self.e, self.b:
            out = run({"detail-type": "Scheduled Event", "source": "aws.events"}, self.tools, now=at,
                      patience=patience)
        self.e.assert_no_pending_responses()   # every answer given was asked for...
        self.b.assert_no_pending_responses()
        return out
