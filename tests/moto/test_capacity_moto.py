"""The capacity-alert handler against moto (SNS, DynamoDB) with EC2's capacity reservations stubbed against
botocore's service model (moto has no Capacity Blocks): each announcement is made once, timed from when a block's
instances stop, and only for the fleet's own resources."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from neuronfleet_runtime.announcements import LEASE_MARGIN, REPEAT_NOTE, Unfinished

from neuronfleet.lambdas.capacity_alert import handler as capacity_handler
from neuronfleet.lambdas.capacity_alert.adapters import FleetBlocks, Ledger, Topic
from neuronfleet.lambdas.capacity_alert.handler import run
from neuronfleet_contract.capacity_alert import CapacityAlertConfig, gpu_pool
from tests.fault_injection import Clock, LambdaStopped, StoppingTopic
from tests.moto_support import alerts_inbox, announcements_table
from tests.publisher_examples import event

REGION = "us-east-2"
END = datetime(2026, 11, 30, 12, tzinfo=UTC)
QUEUE = "arn:aws:batch:us-east-2:111111111111:job-queue/Pretrain-JobQueue"
POOL = gpu_pool({"queue_arn": "arn:aws:batch:us-east-2:111111111111:job-queue/gpu", "max_vcpus": 384,
                 "cuda_only_workloads": ["custom-cuda-kernels"],
                 "types": [{"instance_type": "p5.48xlarge", "gpus": 8, "gpu_name": "H100", "efa": 32, "vcpus": 192},
                           {"instance_type": "g6e.48xlarge", "gpus": 8, "gpu_name": "L40S", "efa": 4, "vcpus": 192}]})


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
        topic, queue = alerts_inbox(sns, sqs)
        ddb = boto3.client("dynamodb", region_name=REGION)
        yield {"sns": sns, "sqs": sqs, "topic": topic, "inbox": queue, "ledger": Ledger(ddb, announcements_table(ddb))}


def said(aws: dict[str, Any]) -> list[dict[str, str]]:
    got = aws["sqs"].receive_message(QueueUrl=aws["inbox"], MaxNumberOfMessages=10).get("Messages", [])
    for m in got:
        aws["sqs"].delete_message(QueueUrl=aws["inbox"], ReceiptHandle=m["ReceiptHandle"])
    return [json.loads(m["Body"]) for m in got]


def reservation(rid: str, instance_type: str, count: int, end: datetime = END) -> dict[str, Any]:
    return {"CapacityReservationId": rid, "InstanceType": instance_type, "TotalInstanceCount": count,
            "ReservationType": "capacity-block", "State": "active", "EndDate": end}


class Fleet:
    """The fleet's blocks: FleetBlocks on an EC2 client stubbed with DescribeCapacityReservations answers."""

    def __init__(self, *reservations: dict[str, Any], groups: dict[str, list[str]] | None = None) -> None:
        self.reservations = list(reservations)
        self.groups = groups or {}
        self.ec2 = boto3.client("ec2", region_name=REGION)
        self.rg = boto3.client("resource-groups", region_name=REGION)

    def blocks(self, describes: int = 1) -> tuple[FleetBlocks, Stubber, Stubber]:
        ec2, rg = Stubber(self.ec2), Stubber(self.rg)
        for _ in range(describes):
            for group, members in self.groups.items():
                rg.add_response("list_group_resources", {"Resources": [{"Identifier": {
                    "ResourceArn": f"arn:aws:ec2:{REGION}:111111111111:capacity-reservation/{m}",
                    "ResourceType": "AWS::EC2::CapacityReservation"}} for m in members]}, {"Group": group})
        ids = sorted({r["CapacityReservationId"] for r in self.reservations}
                     | {m for members in self.groups.values() for m in members})
        for _ in range(describes):
            ec2.add_response("describe_capacity_reservations", {"CapacityReservations": self.reservations},
                             {"CapacityReservationIds": ids})
        blocks = FleetBlocks(self.ec2, self.rg, reservation_ids=[] if self.groups else ids,
                             resource_group_arns=list(self.groups), ultraserver_types=["trn2u.48xlarge"])
        return blocks, ec2, rg


def scan(aws: dict[str, Any], fleet: Fleet, at: datetime) -> list[str]:
    blocks, ec2, rg = fleet.blocks()
    with ec2, rg:
        out = run({"detail-type": "Scheduled Event", "source": "aws.events"}, pool=POOL,
                  alerts=Topic(aws["sns"], aws["topic"]), ledger=aws["ledger"], blocks=blocks, now=at)
    return out["announced"]


def test_instance_block_warned_24h_and_2h_before_termination_starts_each_once(aws) -> None:
    fleet = Fleet(reservation("cr-0inst", "trn2.48xlarge", 4))
    stops = END - timedelta(minutes=30)  # AWS terminates instance-block instances from 30 minutes before the end
    assert scan(aws, fleet, stops - timedelta(hours=24, minutes=1)) == []
    assert scan(aws, fleet, stops - timedelta(hours=24)) == ["neuronfleet: Capacity Block cr-0inst stops in under 24h"]
    (note,) = said(aws)
    assert "AWS terminates its instances from 2026-11-30T11:30:00+00:00 (30min before the end)" in note["Message"]
    assert "[assumed" not in note["Message"]
    for minutes in (1, 14, 15, 30, 600):  # every later scan before the next point: nothing, however often it runs
        assert scan(aws, fleet, stops - timedelta(hours=24) + timedelta(minutes=minutes)) == []
    assert scan(aws, fleet, stops - timedelta(hours=2)) == ["neuronfleet: Capacity Block cr-0inst stops in under 2h"]
    assert scan(aws, fleet, stops - timedelta(minutes=90)) == []
    assert scan(aws, fleet, stops + timedelta(minutes=1)) == ["neuronfleet: Capacity Block cr-0inst is stopping now"]
    assert scan(aws, fleet, stops + timedelta(minutes=16)) == []
    assert len(said(aws)) == 2


def test_ultraserver_block_warned_from_its_earlier_stop_and_says_the_time_is_assumed(aws) -> None:
    fleet = Fleet(reservation("cr-0ultra", "trn2u.48xlarge", 4))
    stops = END - timedelta(minutes=60)
    assert scan(aws, fleet, stops - timedelta(hours=2, minutes=1)) == [
        "neuronfleet: Capacity Block cr-0ultra stops in under 24h"]
    said(aws)
    assert scan(aws, fleet, stops - timedelta(hours=2)) == ["neuronfleet: Capacity Block cr-0ultra stops in under 2h"]
    (note,) = said(aws)
    assert "stop its instances (UltraServer block) by 2026-11-30T11:00:00+00:00 (1h before the end)" in note["Message"]
    assert "[assumed: EC2 user guide gives 60 minutes for P6e-GB200" in note["Message"]


def test_a_late_first_scan_gives_the_most_urgent_warning_only(aws) -> None:
    fleet = Fleet(reservation("cr-0late", "trn2.48xlarge", 2))
    stops = END - timedelta(minutes=30)
    assert scan(aws, fleet, stops - timedelta(minutes=45)) == ["neuronfleet: Capacity Block cr-0late stops in under 2h"]
    assert scan(aws, fleet, stops - timedelta(minutes=30)) == []


def block_event(rid: str, kind: str = "Capacity Block Expiration Warning") -> dict[str, Any]:
    """EC2's documented example (tests/data/events), its placeholders filled in and its name set to ``kind``."""
    out = event("capacity-block-reservation-expiration-warning")
    out |= {"detail_type": kind, "resources": [f"arn:aws:ec2:{REGION}:111111111111:capacity-reservation/{rid}"]}
    out["detail"] |= {"capacity-reservation-id": rid, "end-date": END.isoformat()}
    return out


def deliver(aws: dict[str, Any], fleet: Fleet, event: dict[str, Any], describes: int = 1) -> dict[str, Any]:
    blocks, ec2, rg = fleet.blocks(describes)
    with ec2, rg:
        return run(event, pool=POOL, alerts=Topic(aws["sns"], aws["topic"]), ledger=aws["ledger"], blocks=blocks,
                   now=END - timedelta(minutes=40))


def test_aws_warning_event_announced_once_with_the_gpu_pool_and_not_for_another_fleet(aws) -> None:
    fleet = Fleet(reservation("cr-0mine", "trn2.48xlarge", 4))
    first = deliver(aws, fleet, block_event("cr-0mine"))
    again = deliver(aws, fleet, block_event("cr-0mine", "Capacity Block Reservation Expiration Warning"))
    assert first["announced"] == ["neuronfleet: Capacity Block cr-0mine ending"] and again["announced"] == []
    (note,) = said(aws)
    assert "AWS's expiration warning. Capacity Block cr-0mine (4 x trn2.48xlarge)" in note["Message"]
    assert "up to 384 vCPUs in all (2 x p5.48xlarge at most)" in note["Message"]
    other = deliver(aws, fleet, block_event("cr-0theirs"), describes=0)
    assert other["announced"] == [] and "'cr-0theirs' is not one of this fleet's" in other["skipped"][0]
    assert said(aws) == []


def test_blocks_bought_through_a_resource_group_are_the_fleets(aws) -> None:
    group = "arn:aws:resource-groups:us-east-2:111111111111:group/pretrain-blocks"
    fleet = Fleet(reservation("cr-0grp", "trn2u.48xlarge", 4), groups={group: ["cr-0grp"]})
    blocks, ec2, rg = fleet.blocks()
    with ec2, rg:
        (block,) = blocks.blocks()
    assert (block.reservation_id, block.kind, block.count) == ("cr-0grp", "ultraserver", 4)


def job_event(kind: str, status: str, queue: str = QUEUE, reason: str = "") -> dict[str, Any]:
    """AWS Batch's documented example of ``kind`` (tests/data/events), its values set to this fleet's."""
    out = event("batch-job-queue-blocked" if kind == "Batch Job Queue Blocked" else "batch-job-state-change")
    assert out["detail-type"] == kind
    out["resources"] = [f"arn:aws:batch:{REGION}:111111111111:job/j-1", queue]
    out["detail"] |= {"jobName": "pretrain", "jobId": "j-1", "jobQueue": queue, "status": status}
    if reason:
        out["detail"]["statusReason"] = reason
    return out


def test_a_blocked_queue_is_announced_when_it_blocks_and_when_it_moves_again(aws) -> None:
    fleet = Fleet()
    blocked = job_event("Batch Job Queue Blocked", "RUNNABLE", reason=(
        "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity requested for instance type "
        "[trn2.48xlarge]"))
    assert deliver(aws, fleet, blocked, 0)["announced"] == ["neuronfleet: Trainium queue blocked (Pretrain-JobQueue)"]
    assert deliver(aws, fleet, blocked, 0)["announced"] == []  # Batch raises it per blocking job; said once
    (note,) = said(aws)
    assert "RUNNABLE: CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY" in note["Message"]
    assert "The GPU fallback queue can take CUDA-ready jobs instead" in note["Message"]
    assert deliver(aws, fleet, job_event("Batch Job State Change", "SUCCEEDED"), 0)["announced"] == []
    moving = job_event("Batch Job State Change", "RUNNING")
    assert deliver(aws, fleet, moving, 0)["announced"] == ["neuronfleet: Trainium queue unblocked (Pretrain-JobQueue)"]
    assert deliver(aws, fleet, moving, 0)["announced"] == []
    assert [m["Subject"] for m in said(aws)] == ["neuronfleet: Trainium queue unblocked (Pretrain-JobQueue)"]


def launch_event(kind: str, message: str = "") -> dict[str, Any]:
    """EC2 Auto Scaling's documented "EC2 Instance Launch Unsuccessful" example (tests/data/events), values set;
    a successful launch's event differs in its name, StatusCode and StatusMessage."""
    out = event("autoscaling-launch-unsuccessful") | {"detail-type": kind}
    out["detail"] |= {"StatusCode": "Failed" if "Unsuccessful" in kind else "InProgress",
                      "AutoScalingGroupName": "ComputeEnvironment-abc-asg-1234", "StatusMessage": message,
                      "EC2InstanceId": "i-0123"}
    return out


@pytest.mark.parametrize(("message", "subject"), [
    ("We currently do not have sufficient trn2.48xlarge capacity in the Availability Zone you requested "
     "(us-east-2b). Our system will be working on provisioning additional capacity.",
     "neuronfleet: no Trainium capacity to launch"),
    ("InsufficientInstanceCapacity: none", "neuronfleet: no Trainium capacity to launch"),
    ("The requested configuration is currently not supported. Launching EC2 instance failed.",
     "neuronfleet: Trainium instances fail to launch"),
])
def test_launch_failures_said_once_until_a_launch_succeeds(aws, message, subject) -> None:
    fleet = Fleet()
    assert deliver(aws, fleet, launch_event("EC2 Instance Launch Unsuccessful", message), 0)["announced"] == [subject]
    assert deliver(aws, fleet, launch_event("EC2 Instance Launch Unsuccessful", message), 0)["announced"] == []
    (note,) = said(aws)
    assert ("The GPU fallback queue" in note["Message"]) == ("capacity to launch" in subject)
    assert deliver(aws, fleet, launch_event("EC2 Instance Launch Successful"), 0)["announced"] == [
        "neuronfleet: Trainium instances launching again"]


def test_an_announcement_that_fails_to_publish_is_made_by_the_retry(aws) -> None:
    fleet = Fleet(reservation("cr-0retry", "trn2.48xlarge", 1))
    blocks, ec2, rg = fleet.blocks(2)
    event = block_event("cr-0retry")
    with ec2, rg:
        with pytest.raises(Unfinished, match=r"publishing 'neuronfleet: Capacity Block cr-0retry ending'.*NotFound"):
            run(event, pool=POOL, alerts=Topic(aws["sns"], aws["topic"] + "-gone"), ledger=aws["ledger"],
                blocks=blocks, now=END)
        again = run(event, pool=POOL, alerts=Topic(aws["sns"], aws["topic"]), ledger=aws["ledger"], blocks=blocks,
                    now=END)
    assert again["announced"] == ["neuronfleet: Capacity Block cr-0retry ending"]  # from the record, the first's
    assert again["skipped"] == ["already said: neuronfleet: Capacity Block cr-0retry ending"]
    (note,) = said(aws)
    assert "AWS's expiration warning. Capacity Block cr-0retry" in note["Message"] and REPEAT_NOTE not in note["Message"]


def test_a_scan_that_stops_after_its_first_publish_loses_nothing_and_repeats_only_that_one_saying_so(aws) -> None:
    """Two blocks cross a warning point; the Lambda stops right after SNS took the first warning. The retry (within
    the stopped run's lease) announces the second only; the first is published again once, after the lease, with
    the note: the documented window."""
    fleet = Fleet(reservation("cr-0a", "trn2.48xlarge", 1), reservation("cr-0b", "trn2.48xlarge", 1))
    at = END - timedelta(minutes=30) - timedelta(hours=2)
    clock = Clock(1_795_000_000.0)
    ledger = Ledger(aws["ledger"].client, aws["ledger"].table, clock=clock)
    topic = Topic(aws["sns"], aws["topic"])
    for deadline, stopping in ((clock.now + 60, True), (clock.now + 61, False), (None, False)):
        blocks, ec2, rg = fleet.blocks()
        with ec2, rg:
            if stopping:
                with pytest.raises(LambdaStopped):
                    run({"detail-type": "Scheduled Event"}, pool=POOL, alerts=StoppingTopic(topic), ledger=ledger,
                        blocks=blocks, now=at, deadline=deadline)
                first = said(aws)
            elif deadline:
                retry = run({"detail-type": "Scheduled Event"}, pool=POOL, alerts=topic, ledger=ledger, blocks=blocks,
                            now=at, deadline=deadline)
                second = said(aws)
                clock.now += 60 + LEASE_MARGIN + 1
            else:
                later = run({"detail-type": "Scheduled Event"}, pool=POOL, alerts=topic, ledger=ledger, blocks=blocks,
                            now=at + timedelta(minutes=15))
                third = said(aws)
    assert [m["Subject"] for m in first] == ["neuronfleet: Capacity Block cr-0a stops in under 2h"]
    assert retry["announced"] == ["neuronfleet: Capacity Block cr-0b stops in under 2h"]
    assert [m["Subject"] for m in second] == retry["announced"]
    assert later["announced"] == ["neuronfleet: Capacity Block cr-0a stops in under 2h"]
    (repeat,) = third
    assert repeat["Message"] == first[0]["Message"] + REPEAT_NOTE


def test_unknown_event_is_ignored_not_crashed(aws) -> None:
    out = deliver(aws, Fleet(), {"detail-type": "Something Else"}, 0)
    assert out["announced"] == [] and "detail-type 'Something Else' is not a capacity event" in out["skipped"][0]
    assert said(aws) == []


def _without(doc: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != key}


def malformed_events() -> list[Any]:
    """Each a publisher's example (tests/data/events) broken in one way: (event, the refusal's start)."""
    blocked, state = event("batch-job-queue-blocked"), event("batch-job-state-change")
    warning = block_event("cr-0mine")
    launch = launch_event("EC2 Instance Launch Unsuccessful", "InsufficientInstanceCapacity")
    ending = "detail of a 'Capacity Block Expiration Warning' event"
    return [
        pytest.param(blocked | {"detail": json.dumps(blocked["detail"])},
                     "detail of a 'Batch Job Queue Blocked' event: got '{\"jobArn\"", id="detail-a-string"),
        pytest.param(warning | {"detail": [warning["detail"]]}, f"{ending}: got [{{'capacity-reservation-id'",
                     id="detail-a-list"),
        pytest.param(launch | {"detail": None}, "detail of a 'EC2 Instance Launch Unsuccessful' event: got None "
                     "(NoneType); allowed: a JSON object with AutoScalingGroupName", id="detail-null"),
        pytest.param(_without(state, "detail"), "detail of a 'Batch Job State Change' event: got nothing",
                     id="detail-missing"),
        pytest.param(blocked | {"detail": _without(blocked["detail"], "jobQueue")},
                     "detail.jobQueue of a 'Batch Job Queue Blocked' event: got nothing; allowed: a non-blank string",
                     id="key-missing"),
        pytest.param(warning | {"detail": warning["detail"] | {"capacity-reservation-id": 12345}},
                     "detail.capacity-reservation-id of a 'Capacity Block Expiration Warning' event: got 12345 (int)",
                     id="id-a-number"),
        pytest.param(launch | {"detail": launch["detail"] | {"AutoScalingGroupName": " "}},
                     "detail.AutoScalingGroupName of a 'EC2 Instance Launch Unsuccessful' event: got ' ' (str)",
                     id="group-blank"),
        pytest.param(launch | {"detail": launch["detail"] | {"StatusMessage": {"text": "no capacity"}}},
                     "detail.StatusMessage of a 'EC2 Instance Launch Unsuccessful' event: got {'text': 'no capacity'} "
                     "(dict); allowed: a string or null", id="message-an-object"),
        pytest.param(state | {"detail": state["detail"] | {"status": ["RUNNING"]}},
                     "detail.status of a 'Batch Job State Change' event: got ['RUNNING'] (list)", id="status-a-list"),
        pytest.param(blocked | {"detail-type": ["Batch Job Queue Blocked"]},
                     "detail-type: got ['Batch Job Queue Blocked'] (list); allowed: a non-blank string", id="name-a-list"),
        pytest.param(_without(_without(warning, "detail_type"), "detail-type"), "detail_type: got nothing",
                     id="name-missing"),
        pytest.param(event("scheduled-event") | {"detail": ""}, "detail of a 'Scheduled Event' event: got '' (str)",
                     id="schedule-detail-a-string"),
        pytest.param(json.dumps(blocked), "event: got '{", id="event-a-string"),
        pytest.param([blocked], "event: got [{", id="event-a-list"),
    ]


@pytest.mark.parametrize(("bad", "reason"), malformed_events())
def test_a_malformed_event_is_refused_with_the_field_never_a_crash_and_nothing_changes(aws, bad, reason) -> None:
    blocks, ec2, rg = Fleet(reservation("cr-0mine", "trn2.48xlarge", 1)).blocks(0)  # no AWS call allowed
    with ec2, rg:
        out = run(bad, pool=POOL, alerts=Topic(aws["sns"], aws["topic"]), ledger=aws["ledger"], blocks=blocks, now=END)
    assert out["refused"].startswith(reason), out["refused"]
    assert out["announced"] == [] and said(aws) == []
    assert aws["ledger"].client.scan(TableName=aws["ledger"].table)["Items"] == []


def test_the_publishers_examples_are_not_refused(aws) -> None:
    for name in ("batch-job-queue-blocked", "batch-job-state-change", "autoscaling-launch-unsuccessful",
                 "ec2-capacity-reservation-scheduled", "scheduled-event"):
        blocks, ec2, rg = Fleet().blocks(0)
        with ec2, rg:
            out = run(event(name), pool=POOL, alerts=Topic(aws["sns"], aws["topic"]), ledger=aws["ledger"],
                      blocks=blocks, now=END)
        assert "refused" not in out, (name, out)


class Context:
    function_name, memory_limit_in_mb, aws_request_id = "capacity", 256, "req-1"
    invoked_function_arn = f"arn:aws:lambda:{REGION}:111111111111:function:capacity"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def test_the_deployed_handler_logs_and_counts_a_malformed_event_in_its_namespace(aws, monkeypatch, capsys,
                                                                                 caplog) -> None:
    settings = CapacityAlertConfig(pool=POOL, topic_arn=aws["topic"], ledger_table=aws["ledger"].table)
    for name, value in settings.to_environment().items():
        monkeypatch.setenv(name, value)
    capacity_handler.container.cache_clear()
    capacity_handler.metrics.clear_metrics()  # what direct run() calls of other tests added, never flushed
    try:
        bad = event("batch-job-queue-blocked")
        out = capacity_handler.handler(bad | {"detail": "RUNNABLE"}, Context())
    finally:
        capacity_handler.container.cache_clear()
    assert out["refused"].startswith("detail of a 'Batch Job Queue Blocked' event: got 'RUNNABLE' (str)")
    (refusal,) = [r for r in caplog.records if r.getMessage() == "malformed event refused"]
    assert refusal.levelname == "ERROR" and refusal.reason == out["refused"]  # type: ignore[attr-defined]
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    (emf,) = [line for line in lines if "_aws" in line]  # Powertools' embedded metric format, on stdout
    (directive,) = emf["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "NeuronFleet/Capacity" and emf["service"] == "neuronfleet-capacity"
    assert [m["Name"] for m in directive["Metrics"]] == [capacity_handler.MALFORMED_METRIC] == ["MalformedEvents"]
    assert emf["MalformedEvents"] == [1.0]


def test_a_direct_invoke_too_large_for_sns_is_set_aside_and_never_fails_a_later_run(aws) -> None:
    """Only a direct invoke can carry a message over the topic's limit (here a 300 KiB statusReason): SNS refuses it,
    the outbox sets it aside (kept, said once by a short notice, counted), and every later run, the Lambda's
    retries of the same event included, succeeds and announces what it has to."""
    huge = event("batch-job-queue-blocked")
    huge["detail"]["statusReason"] = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - " + "x" * (300 * 1024)
    blocks, _, _ = Fleet().blocks(describes=0)
    capacity_handler.metrics.clear_metrics()
    out = run(huge, pool=POOL, alerts=Topic(aws["sns"], aws["topic"]), ledger=aws["ledger"], blocks=blocks,
              now=END - timedelta(days=3))
    subject = out["set_aside"][0]
    assert subject.startswith("neuronfleet: Trainium queue blocked") and out["pending"] == []
    assert capacity_handler.metrics.metric_set["UnpublishableAnnouncements"]["Value"] == [1.0]
    (notice,) = said(aws)
    assert notice["Subject"] == "neuronfleet: an announcement could not be published"
    assert "InvalidParameter" in notice["Message"] and "set aside" in notice["Message"]
    capacity_handler.metrics.clear_metrics()
    again = run(huge, pool=POOL, alerts=Topic(aws["sns"], aws["topic"]), ledger=aws["ledger"], blocks=blocks,
                now=END - timedelta(days=3) + timedelta(minutes=1))  # the Lambda's retry of the same event
    assert again["set_aside"] == [] and again["skipped"] == [f"already said: {subject}"] and said(aws) == []
    fleet = Fleet(reservation("cr-0inst", "trn2.48xlarge", 4))
    stops = END - timedelta(minutes=30)
    for hours in (24, 2):  # later scheduled runs: nothing held back, nothing failing
        assert scan(aws, fleet, stops - timedelta(hours=hours)) == [
            f"neuronfleet: Capacity Block cr-0inst stops in under {hours}h"]
    assert [m["Subject"] for m in said(aws)] == ["neuronfleet: Capacity Block cr-0inst stops in under 24h",
                                                 "neuronfleet: Capacity Block cr-0inst stops in under 2h"]
    capacity_handler.metrics.clear_metrics()
