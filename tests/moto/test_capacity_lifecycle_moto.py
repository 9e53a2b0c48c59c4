"""The Capacity Block lifecycle function against moto (SNS, DynamoDB, S3) with EC2, Resource Groups and Batch stubbed
on botocore 1.44.5's shapes (moto has no Capacity Blocks, and its Batch runs no jobs): an extension bought once
across retries and overlapping runs, a refused extension and a drain each announced once, the checkpoint flag, an
impaired interconnect announced once, a held job moved to the GPU pool once, a cluster's failure not stopping the
others."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from botocore.stub import Stubber
from neuronfleet_runtime.announcements import Unfinished

from neuronfleet.lambdas.capacity_lifecycle.adapters import Fleet, FleetBudget, Intents
from neuronfleet.lambdas.capacity_lifecycle.handler import run
from neuronfleet_contract.capacity_lifecycle import (
    GPU_JOB_DEFINITION_TAG,
    CapacityPolicy,
    ClusterRef,
    LifecycleConfig,
    drain_key,
)
from neuronfleet_contract.tags import FLEET_TAG
from tests.capacity_fixtures import extension
from tests.lifecycle_stubs import END, GPU_QUEUE, REGION, START, LifecycleRun, lifecycle_aws, said
from tests.publisher_examples import cli_outputs, response_errors

QUEUE = "arn:aws:batch:us-east-2:111111111111:job-queue/pretrain"
CLUSTER = ClusterRef(name="pretrain", queue_arn=QUEUE, instance_type="trn2.48xlarge", drain_bucket="nf-data",
                     reservation_ids=("cr-1",))
POLICY = CapacityPolicy(max_upfront_fee_usd=Decimal(10000), max_usd_per_instance_hour=Decimal(25),
                        availability_zones=("us-east-2b",), allow_extension=True,
                        extension_budget_usd=Decimal(4000), fallback_after=timedelta(minutes=60))
GPU_DEFINITION = "arn:aws:batch:us-east-2:111111111111:job-definition/finetune-cuda:7"
"""The fleet's one GPU job definition (GpuPool.add_job_definition), by revision ARN: what held_job's tag names."""
PRICES = {"trn2.48xlarge": {"usd_per_hour": "35.76", "as_of": "2025-10-01"},
          "p5.48xlarge": {"usd_per_hour": "55.04", "as_of": "2025-10-01"}}


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with lifecycle_aws() as world:
        yield world


class Pass(LifecycleRun):
    """One run's stubbed EC2 and Batch answers, queued in the order the handler asks."""

    def __init__(self, aws: dict[str, Any], policy: CapacityPolicy = POLICY,
                 clusters: tuple[ClusterRef, ...] = (CLUSTER,)) -> None:
        super().__init__(aws, LifecycleConfig(fleet="nf-prod", topic_arn=aws["topic"], ledger_table=aws["table"],
                                              policy=policy, clusters=clusters, gpu_queue_arn=GPU_QUEUE,
                                              gpu_instance_type="p5.48xlarge", prices=PRICES,
                                              gpu_job_definitions=(GPU_DEFINITION,)))

    def blocks(self, end: datetime = END, block_id: str = "cb-block-1") -> Pass:
        self._blocks("cr-1", end, block_id)
        return self

    def running(self, n: int = 1) -> Pass:
        self._running(QUEUE, [f"job-{i}" for i in range(n)])
        return self

    def history(self, items: list[dict[str, Any]]) -> Pass:
        self._history(items, "cr-1")
        return self

    def offers(self, *fees: str) -> Pass:
        self._offers(fees)
        return self

    def status(self, state: str = "ok", block_id: str = "cb-block-1") -> Pass:
        self._status(state, block_id)
        return self

    def held(self, *jobs: dict[str, Any]) -> Pass:
        self.b.add_response("list_jobs", {"jobSummaryList": [{"jobId": j["jobId"], "jobName": j["jobName"]}
                                                             for j in jobs]},
                            {"jobQueue": QUEUE, "jobStatus": "RUNNABLE"})
        if jobs:
            self.b.add_response("describe_jobs", {"jobs": list(jobs)}, {"jobs": [j["jobId"] for j in jobs]})
        return self

def held_job(job_id: str = "a1b2c3d4-0000-1111-2222-333344445555", *, gpu: bool = True,
             since: datetime = END - timedelta(hours=10), tag: str = "finetune-cuda:7") -> dict[str, Any]:
    return {"jobArn": f"arn:aws:batch:us-east-2:111111111111:job/{job_id}", "jobName": "finetune", "jobId": job_id,
            "jobQueue": QUEUE, "status": "RUNNABLE", "createdAt": int(since.timestamp() * 1000), "startedAt": 0,
            "statusReason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity requested",
            "jobDefinition": "arn:aws:batch:us-east-2:111111111111:job-definition/finetune-trn:3",
            "nodeProperties": {"numNodes": 2, "mainNode": 0, "nodeRangeProperties": []},
            "tags": {GPU_JOB_DEFINITION_TAG: tag} if gpu else {}}


def test_an_extension_is_bought_and_announced_once_across_retries(aws):
    at = END - timedelta(hours=5)
    p = Pass(aws).blocks().running().history([]).offers("2400.00", "1920.00")
    p.looks()
    p.e.add_response("purchase_capacity_block_extension", {"CapacityBlockExtensions": [
        extension("cr-1", "cbe-1", start=END)]},
        {"CapacityBlockExtensionOfferingId": "cbe-1", "CapacityReservationId": "cr-1"})
    out = p.status().held().go(at)
    assert "extended by cbe-1 (already: False)" in out["clusters"]["pretrain"]
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: Capacity Block cr-1 extended" and "$1920.00 USD" in note["Message"]
    # the retry (EventBridge, or the next scan): the history shows the pending extension: nothing bought or said
    again = Pass(aws).blocks().running().history([extension("cr-1", "cbe-1", start=END)]).status().held().go(at)
    assert any("payment is pending" in d for d in again["clusters"]["pretrain"]) and said(aws) == []


def test_a_lost_purchase_answer_is_found_in_the_history_and_not_bought_again(aws):
    p = Pass(aws).blocks().running().history([]).offers("1920.00").looks()
    p.e.add_client_error("purchase_capacity_block_extension", service_error_code="InternalError",
                         http_status_code=500)
    p.looks([extension("cr-1", "cbe-0", start=END)])
    out = p.status().held().go(END - timedelta(hours=5))
    assert "extended by cbe-0 (already: False)" in out["clusters"]["pretrain"]
    assert [n["Subject"] for n in said(aws)] == ["neuronfleet: Capacity Block cr-1 extended"]


def test_an_overlapping_run_holding_the_intent_buys_nothing(aws):
    from neuronfleet.lambdas.capacity_lifecycle.logic import Block, extension_key

    key = extension_key(Block("cr-1", "trn2.48xlarge", 4, START, END, "active", block_id="cb-block-1"))
    assert Intents(aws["ddb"], aws["table"]).take(key, expires=END + timedelta(days=1))
    out = Pass(aws).blocks().running().history([]).offers("1920.00").status().held().go(END - timedelta(hours=5))
    assert "extension: another run holds it, or it is done" in out["clusters"]["pretrain"] and said(aws) == []
    assert FleetBudget(aws["ddb"], aws["table"]).spent("2026-11") == 0   # its budget hold given back


GROUP = "arn:aws:resource-groups:us-east-2:111111111111:group/nf-prod-blocks"
GROUPED = ClusterRef(name="pretrain", queue_arn=QUEUE, instance_type="trn2.48xlarge", drain_bucket="nf-data",
                     group_arns=(GROUP,))


def _grouped(aws: dict[str, Any], tags: dict[str, str]) -> tuple[Pass, Stubber]:
    """A pass over a cluster whose blocks come from its resource group only: cr-1 is a member, tagged ``tags``."""
    p = Pass(aws, clusters=(GROUPED,))
    rg = Stubber(p.rg)
    rg.add_response("list_group_resources", {"Resources": [{"Identifier": {
        "ResourceArn": "arn:aws:ec2:us-east-2:111111111111:capacity-reservation/cr-1",
        "ResourceType": "AWS::EC2::CapacityReservation"}}]}, {"Group": GROUP})
    p._blocks("cr-1", END, "cb-block-1", tags=tags)
    return p.running().history([]), rg


def test_a_group_member_not_tagged_with_the_fleet_is_not_extended_and_said_once(aws):
    """Finding 1: whoever can add a reservation to the fleet's group must not put another team's block in scope."""
    for minutes in (0, 10):
        p, rg = _grouped(aws, {FLEET_TAG: "nf-other"})
        with rg:   # no extension offers asked for, nothing bought (the Stubbers refuse any call not queued)
            out = p.status().held().go(END - timedelta(hours=5, minutes=minutes))
        assert "cr-1: not extended: not the fleet's (untagged, unnamed)" in out["clusters"]["pretrain"]
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: Capacity Block cr-1 not extended: not the fleet's"
    assert "neither named in the fleet file (reservation_id) nor tagged neuronfleet:fleet=nf-prod (its tag: " \
           "nf-other)" in note["Message"]


def test_a_group_member_tagged_with_the_fleet_is_extended(aws):
    p, rg = _grouped(aws, {FLEET_TAG: "nf-prod"})
    p.offers("1920.00").looks()
    p.e.add_response("purchase_capacity_block_extension", {"CapacityBlockExtensions": [
        extension("cr-1", "cbe-0", start=END)]},
        {"CapacityBlockExtensionOfferingId": "cbe-0", "CapacityReservationId": "cr-1"})
    with rg:
        out = p.status().held().go(END - timedelta(hours=5))
    assert "extended by cbe-0 (already: False)" in out["clusters"]["pretrain"]


def test_a_refused_extension_is_announced_once_then_the_drain_once_with_its_flag(aws):
    at = END - timedelta(hours=5)
    Pass(aws).blocks().running().history([]).offers("9000.00").status().held().go(at)
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: Capacity Block cr-1 not extended"
    assert "extension_budget_usd: the offer's fee $9000.00" in note["Message"] and "at most $4000" in note["Message"]
    Pass(aws).blocks().running().history([]).offers("9000.00").status().held().go(at + timedelta(minutes=15))
    assert said(aws) == []
    drain_at = END - timedelta(minutes=70)      # 45 min before the stop (END - 30 min)
    for minutes in (0, 15):
        Pass(aws).blocks().running().history([]).status().held().go(drain_at + timedelta(minutes=minutes))
    (drain,) = said(aws)
    assert drain["Subject"] == "neuronfleet: checkpoint now, pretrain drains"
    flag = json.loads(aws["s3"].get_object(Bucket="nf-data", Key=drain_key("pretrain"))["Body"].read())
    assert flag["deadline"] == "2026-11-30T11:20:00+00:00" and flag["blocks"] == ["cr-1"]
    assert "s3://nf-data/neuronfleet/drain/pretrain.json" in drain["Message"]
    # once the block has ended (or was extended) the flag is lowered: the next block's jobs do not see it
    Pass(aws).blocks(end=END + timedelta(days=1)).running().status().held().go(END + timedelta(minutes=5))
    assert aws["s3"].list_objects_v2(Bucket="nf-data").get("KeyCount") == 0


def test_no_flag_no_delete_so_no_delete_marker_in_the_versioned_data_bucket(aws):
    """botocore 1.44.5 s3 DeleteObject: 'If bucket versioning is enabled, the operation inserts a delete marker'
    (the cluster's data bucket is versioned). moto adds none for a missing key, so the test counts the calls."""
    import re

    import botocore.session

    doc = botocore.session.get_session().get_service_model("s3").operation_model("DeleteObject").documentation
    assert "If bucket versioning is enabled, the operation inserts a delete marker" in re.sub(r"\s+", " ", doc)
    deletes: list[str] = []
    aws["s3"].meta.events.register("provide-client-params.s3.DeleteObject",
                                   lambda params, **_: deletes.append(params["Key"]))
    for minutes in (0, 10):   # no block drains and no flag: nothing deleted
        Pass(aws).blocks().running().status().held().go(END - timedelta(days=1, minutes=minutes))
    assert deletes == []
    drain_at = END - timedelta(minutes=70)
    Pass(aws).blocks().running().history([]).status().held().go(drain_at)
    Pass(aws).blocks(end=END + timedelta(days=1)).running().status().held().go(END + timedelta(minutes=5))
    assert deletes == [drain_key("pretrain")]   # the flag raised, then lowered once


def test_no_running_job_no_extension_no_drain(aws):
    p = Pass(aws).blocks().running(0).status().held()
    out = p.go(END - timedelta(minutes=60))
    assert out["clusters"]["pretrain"] == ["cr-1: idle (no job of the cluster runs)"] and said(aws) == []


def test_an_impaired_interconnect_is_announced_once_until_it_recovers(aws):
    at = END - timedelta(days=1)
    for _ in range(2):
        Pass(aws).blocks().running().status("impaired").held().go(at)
    (note,) = said(aws)
    assert "interconnect impaired" in note["Subject"] and "1 of 4 unavailable" in note["Message"]
    Pass(aws).blocks().running().status("ok").held().go(at)
    assert [n["Subject"] for n in said(aws)] == ["neuronfleet: Capacity Block interconnect ok again"]


def test_a_held_job_naming_a_gpu_definition_moves_once_with_the_cost_difference(aws):
    at = END - timedelta(days=1)
    job = held_job(since=at - timedelta(minutes=61))
    p = Pass(aws).blocks().running().status().held(job)
    name = "finetune-gpu-a1b2c3d400001111"
    p.b.add_response("list_jobs", {"jobSummaryList": []},
                     {"jobQueue": GPU_QUEUE, "filters": [{"name": "JOB_NAME", "values": [name]}]})
    p.b.add_response("submit_job", {"jobArn": "arn:aws:batch:us-east-2:111111111111:job/gpu-1", "jobName": name,
                                    "jobId": "gpu-1"},
                     {"jobName": name, "jobQueue": GPU_QUEUE, "jobDefinition": GPU_DEFINITION,
                      "tags": {"neuronfleet:fallback-of": job["jobId"]}, "propagateTags": True})
    p.b.add_client_error("cancel_job", service_error_code="ClientException", http_status_code=400)
    p.go(at)
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: job finetune moved to the GPU pool"
    assert "2 x p5.48xlarge at $55.04/h = $110.08/h instead of 2 x trn2.48xlarge at $35.76/h = $71.52/h: " \
           "+$38.56/h" in note["Message"]
    assert "could NOT be cancelled" in note["Message"]
    # still RUNNABLE on the next pass (the cancel failed): not submitted again, not announced again
    Pass(aws).blocks().running().status().held(job).go(at + timedelta(minutes=15))
    assert said(aws) == []


def test_a_held_job_naming_a_definition_outside_the_fleets_is_announced_once_and_never_submitted(aws):
    """Finding 3: the tag names a job definition of the account that is not one of the fleet's (another team's, one
    with a stronger job role, another revision): no SubmitJob, no CancelJob (the Stubber has no answer queued for
    either: a call would fail the run), one announcement across passes."""
    at = END - timedelta(days=1)
    for tag in ("admin-role-job:1", "finetune-cuda:6"):
        job = held_job(f"job-{tag[-1]}", since=at - timedelta(minutes=61), tag=tag)
        for minutes in (0, 10):
            out = Pass(aws).blocks().running().status().held(job).go(at + timedelta(minutes=minutes))
            assert f"{job['jobId']}: its GPU job definition is not the fleet's, announced" in \
                out["clusters"]["pretrain"]
        (note,) = said(aws)
        assert note["Subject"] == "neuronfleet: job finetune not moved: its GPU job definition is not the fleet's"
        assert f"names {tag}, which is not one of the fleet's GPU job definitions ({GPU_DEFINITION})" in \
            note["Message"]


def test_a_held_job_without_a_gpu_definition_is_only_announced_once_and_a_young_one_not_at_all(aws):
    at = END - timedelta(days=1)
    old, young = held_job("old-1", gpu=False, since=at - timedelta(hours=2)), held_job("young-1", since=at)
    for _ in range(2):
        Pass(aws).blocks().running().status().held(old, young).go(at)
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: job finetune held for Trainium capacity"
    assert "names no GPU job definition" in note["Message"]


def test_one_clusters_failure_does_not_stop_the_others_and_the_run_is_retried(aws):
    broken = ClusterRef(name="broken", queue_arn=QUEUE, instance_type="trn2.48xlarge", drain_bucket="nf-data",
                        reservation_ids=("cr-9",))
    p = Pass(aws, clusters=(broken, CLUSTER))
    p.e.add_client_error("describe_capacity_reservations", service_error_code="UnauthorizedOperation",
                         http_status_code=403)
    p.blocks().running().status("impaired").held()
    with pytest.raises(Unfinished, match="broken: ClientError"):
        p.go(END - timedelta(days=1))
    assert [n["Subject"] for n in said(aws)] == ["neuronfleet: Capacity Block cb-block-1 interconnect impaired"]


def test_a_malformed_event_is_refused_without_acting(aws):
    out = run(["not", "an", "event"], Pass(aws).tools, now=END)
    assert out["refused"].startswith("event: got list")


def test_batchs_own_describe_jobs_example_reads_as_a_job_not_held_for_capacity():
    """aws-cli's example (tests/data/aws_cli/batch-describe-jobs.rst) has no startedAt, which botocore calls
    required, no statusReason and no tags: the adapter needs none of them."""
    (answer,) = cli_outputs("batch-describe-jobs")
    assert response_errors("batch", "DescribeJobs", answer) == [
        "DescribeJobsResponse.jobs[0].startedAt: required by JobDetail, missing"]

    class Batch:
        def get_paginator(self, name):
            class P:
                def paginate(self, **kw):
                    return [{"jobSummaryList": [{"jobId": answer["jobs"][0]["jobId"], "jobName": "example"}]}]
            return P()

        def describe_jobs(self, jobs):
            return answer

    (job,) = Fleet(None, Batch()).held(QUEUE)  # type: ignore[arg-type]
    assert job.status_reason == "" and job.gpu_job_definition is None and job.nodes == 1
    assert job.created == datetime(2016, 11, 30, 5, 23, 7, 803000, tzinfo=UTC)
    assert held_jobs_for_capacity([job]) == []


def held_jobs_for_capacity(jobs):
    from neuronfleet.lambdas.capacity_lifecycle.logic import held

    return held(jobs, POLICY, now=END)


def test_an_extension_aws_refuses_is_announced_once_and_not_tried_again(aws):
    at = END - timedelta(hours=5)
    p = Pass(aws).blocks().running().history([]).offers("1920.00").looks()
    p.e.add_client_error("purchase_capacity_block_extension", service_error_code="InvalidParameterValue",
                         service_message="The offering is no longer available", http_status_code=400)
    out = p.status().held().go(at)
    assert any(d.startswith("extension refused by AWS") for d in out["clusters"]["pretrain"])
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: Capacity Block cr-1 extension refused"
    assert "no longer available" in note["Message"]
    again = Pass(aws).blocks().running().history([]).offers("1920.00").status().held().go(at + timedelta(minutes=10))
    assert "extension: another run holds it, or it is done" in again["clusters"]["pretrain"] and said(aws) == []


def test_a_resubmission_batch_refuses_is_announced_once(aws):
    at = END - timedelta(days=1)
    job = held_job(since=at - timedelta(minutes=61))
    p = Pass(aws).blocks().running().status().held(job)
    p.b.add_response("list_jobs", {"jobSummaryList": []}, None)
    p.b.add_client_error("submit_job", service_error_code="ClientException",
                         service_message="JobDefinition finetune-cuda:7 not found", http_status_code=400)
    p.go(at)
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: job finetune could not move to the GPU pool" and "not found" in note["Message"]
    Pass(aws).blocks().running().status().held(job).go(at + timedelta(minutes=10))
    assert said(aws) == []
