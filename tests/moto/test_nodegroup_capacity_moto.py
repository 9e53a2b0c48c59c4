"""The node-group capacity check against moto (SNS, DynamoDB: the announcements ledger) with EKS's DescribeNodegroup
stubbed on botocore's shapes from aws-cli's own example (tests/data/aws_cli/eks-describe-nodegroup.rst): a node
group that cannot get capacity is announced once however often the check runs, once more when it gets nodes again,
and a throttled or missing node group changes nothing."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from neuronfleet_runtime.announcements import REPEAT_NOTE, Unfinished

from neuronfleet.lambdas.capacity_alert import nodegroup_handler
from neuronfleet.lambdas.capacity_alert.adapters import FleetNodegroups, Ledger, Topic
from neuronfleet.lambdas.capacity_alert.nodegroup_handler import run
from neuronfleet_contract.capacity_alert import gpu_pool
from neuronfleet_contract.nodegroup_capacity import NodegroupAlertConfig
from tests.fault_injection import Clock, Fault, Faulty, client_error, timeout
from tests.moto_support import alerts_inbox, announcements_table
from tests.publisher_examples import cli_outputs, response

REGION = "us-east-2"
NOW = datetime(2026, 11, 23, 16, tzinfo=UTC)
CLUSTER = "my-eks-cluster"
POOL = gpu_pool({"queue_arn": "arn:aws:batch:us-east-2:111111111111:job-queue/gpu", "max_vcpus": 384,
                 "types": [{"instance_type": "p5.48xlarge", "gpus": 8, "gpu_name": "H100", "efa": 32, "vcpus": 192}]})
EC2_CAPACITY = ("Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have "
                "sufficient trn2.48xlarge capacity in the Availability Zone you requested (us-east-2a).")


def described(name: str, *issues: dict[str, Any]) -> dict[str, Any]:
    """aws-cli's example answer for node group ``name`` with ``issues`` (DEGRADED when there are any)."""
    [doc] = cli_outputs("eks-describe-nodegroup")
    doc = copy.deepcopy(doc)
    doc["nodegroup"]["nodegroupName"] = name
    doc["nodegroup"]["health"]["issues"] = list(issues)
    doc["nodegroup"]["status"] = "DEGRADED" if issues else "ACTIVE"
    return response("eks", "DescribeNodegroup", doc)  # type: ignore[no-any-return]


NO_CAPACITY = {"code": "AsgInstanceLaunchFailures", "message": EC2_CAPACITY,
               "resourceIds": ["eks-my-eks-nodegroup-a8c75f2f-df78-a72f-4063-4b69af3de5b1"]}


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
        topic, queue = alerts_inbox(sns, sqs)
        ddb = boto3.client("dynamodb", region_name=REGION)
        yield {"sqs": sqs, "inbox": queue, "alerts": Topic(sns, topic), "topic": topic,
               "ledger": Ledger(ddb, announcements_table(ddb)),
               "eks": boto3.client("eks", region_name=REGION)}


def said(aws: dict[str, Any]) -> list[dict[str, str]]:
    got = aws["sqs"].receive_message(QueueUrl=aws["inbox"], MaxNumberOfMessages=10).get("Messages", [])
    for m in got:
        aws["sqs"].delete_message(QueueUrl=aws["inbox"], ReceiptHandle=m["ReceiptHandle"])
    return [json.loads(m["Body"]) for m in got]


def check(aws: dict[str, Any], answers: dict[str, dict[str, Any] | str], *, now: datetime = NOW) -> dict[str, Any]:
    """One run over the node groups of ``answers`` (a describe answer, or an error code to answer with)."""
    stub = Stubber(aws["eks"])
    for name, answer in answers.items():
        params = {"clusterName": CLUSTER, "nodegroupName": name}
        if isinstance(answer, str):
            stub.add_client_error("describe_nodegroup", service_error_code=answer, service_message="no",
                                  http_status_code=429 if answer == "ThrottlingException" else 404,
                                  expected_params=params)
        else:
            stub.add_response("describe_nodegroup", answer, params)
    with stub:
        out = run(groups=FleetNodegroups(aws["eks"], cluster=CLUSTER, names=list(answers)), pool=POOL,
                  alerts=aws["alerts"], ledger=aws["ledger"], now=now)
        stub.assert_no_pending_responses()
    return out


def test_no_capacity_is_announced_once_per_episode(aws) -> None:
    out = check(aws, {"ultra": described("ultra", NO_CAPACITY), "tune": described("tune")})
    [msg] = said(aws)
    assert msg["Subject"] == "neuronfleet: no Neuron capacity for node group ultra"
    assert "InsufficientInstanceCapacity" in msg["Message"] and "p5.48xlarge" in msg["Message"]
    assert len(out["announced"]) == 1 and not out["not_checked"]
    for minutes in (5, 10):  # the schedule runs again: nothing new
        out = check(aws, {"ultra": described("ultra", NO_CAPACITY), "tune": described("tune")},
                    now=NOW + timedelta(minutes=minutes))
        assert out["announced"] == [] and said(aws) == []
    check(aws, {"ultra": described("ultra"), "tune": described("tune")}, now=NOW + timedelta(minutes=15))
    [back] = said(aws)
    assert back["Subject"] == "neuronfleet: node group ultra gets nodes again"
    check(aws, {"ultra": described("ultra"), "tune": described("tune")}, now=NOW + timedelta(minutes=20))
    assert said(aws) == []
    check(aws, {"ultra": described("ultra", NO_CAPACITY)}, now=NOW + timedelta(minutes=25))  # a new episode
    assert [m["Subject"] for m in said(aws)] == ["neuronfleet: no Neuron capacity for node group ultra"]


def test_throttled_or_missing_group_changes_nothing(aws) -> None:
    check(aws, {"ultra": described("ultra", NO_CAPACITY)})
    assert len(said(aws)) == 1
    out = check(aws, {"ultra": "ThrottlingException", "tune": described("tune", NO_CAPACITY)},
                now=NOW + timedelta(minutes=5))
    assert out["not_checked"] == ["ultra: ThrottlingException: no"]
    assert [m["Subject"] for m in said(aws)] == ["neuronfleet: no Neuron capacity for node group tune"]
    out = check(aws, {"ultra": "ResourceNotFoundException"}, now=NOW + timedelta(minutes=10))
    assert out["not_checked"] and said(aws) == []  # the open condition was not closed by a failed look
    check(aws, {"ultra": described("ultra", NO_CAPACITY)}, now=NOW + timedelta(minutes=15))
    assert said(aws) == []  # still the same episode


def test_a_healthy_fleet_says_nothing(aws) -> None:
    out = check(aws, {"ultra": described("ultra"), "tune": described("tune")})
    assert out == {"announced": [], "pending": [], "set_aside": [], "skipped": [], "not_checked": [],
                   "unreadable": []} and said(aws) == []


class Context:
    function_name, memory_limit_in_mb, aws_request_id = "nodegroups", 256, "req-1"
    invoked_function_arn = f"arn:aws:lambda:{REGION}:111111111111:function:nodegroups"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def test_the_deployed_handler_reads_its_environment_and_describes_moto_node_groups(aws, monkeypatch) -> None:
    """The handler as deployed (settings from the environment, its own clients) on moto's EKS: a healthy node group
    says nothing, one that is gone is named as not checked, nothing is announced."""
    eks = aws["eks"]
    eks.create_cluster(name=CLUSTER, roleArn="arn:aws:iam::111111111111:role/eks",
                       resourcesVpcConfig={"subnetIds": ["subnet-1"]})
    eks.create_nodegroup(clusterName=CLUSTER, nodegroupName="ultra", subnets=["subnet-1"],
                         nodeRole="arn:aws:iam::111111111111:role/node", capacityType="CAPACITY_BLOCK",
                         scalingConfig={"minSize": 0, "maxSize": 4, "desiredSize": 4})
    settings = NodegroupAlertConfig(cluster_name=CLUSTER, node_groups=("ultra", "gone"),
                                    topic_arn=aws["topic"], ledger_table=aws["ledger"].table, pool=POOL)
    for name, value in settings.to_environment().items():
        monkeypatch.setenv(name, value)
    nodegroup_handler.container.cache_clear()
    nodegroup_handler.metrics.clear_metrics()
    try:
        out = nodegroup_handler.handler({"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}},
                                        Context())
    finally:
        nodegroup_handler.container.cache_clear()
    assert out["announced"] == [] and said(aws) == []
    [gone] = out["not_checked"]
    assert gone.startswith("gone: ResourceNotFoundException")


def test_an_unreadable_description_changes_nothing(aws) -> None:
    check(aws, {"ultra": described("ultra", NO_CAPACITY)})
    assert len(said(aws)) == 1
    broken = described("ultra")
    del broken["nodegroup"]["clusterName"]  # optional in botocore's shape: the Stubber accepts it
    out = check(aws, {"ultra": broken}, now=NOW + timedelta(minutes=5))
    assert out["not_checked"] == ["ultra: unreadable"]
    [told] = said(aws)  # not taken as "healthy again": reported as unreadable, naming the member
    assert told["Subject"] == "neuronfleet: node group ultra cannot be read"
    assert "clusterName: got nothing (the field is required); allowed: a non-blank string" in told["Message"]


# ------------------------------------------------------------------ descriptions of another shape, faults, overlaps


class FakeEks:
    """DescribeNodegroup answering whatever it is given (botocore's parser never would: a newer or broken API),
    or raising it."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def describe_nodegroup(self, *, clusterName: str, nodegroupName: str) -> Any:
        answer = self.answers[nodegroupName]
        if isinstance(answer, BaseException):
            raise answer
        return answer


def shaped(change: Any) -> dict[str, Any]:
    doc = copy.deepcopy(described("ultra"))
    change(doc["nodegroup"])
    return doc


MALFORMED = {
    "health-a-list": (shaped(lambda n: n.update(health=["DEGRADED"])), "health: got ['DEGRADED']; allowed: an object"),
    "issue-a-string": (shaped(lambda n: n["health"].update(issues=["AsgInstanceLaunchFailures"])),
                       "health.issues[0]: got 'AsgInstanceLaunchFailures'; allowed: an object"),
    "desired-a-string": (shaped(lambda n: n["scalingConfig"].update(desiredSize="4")),
                         "scalingConfig.desiredSize: got '4'; allowed: a whole number of nodes"),
    "asg-not-a-list": (shaped(lambda n: n["resources"].update(autoScalingGroups={"name": "x"})),
                       "resources.autoScalingGroups: got {'name': 'x'}; allowed: a list of objects"),
    "no-nodegroup": ({"ResponseMetadata": {}}, "nodegroup: got nothing (the field is required)"),
    "nodegroup-a-string": ({"nodegroup": "ultra"}, "nodegroup: got 'ultra'; allowed: an object"),
    "message-a-number": (shaped(lambda n: n["health"].update(issues=[NO_CAPACITY | {"message": 503}])),
                         "health.issues[0].message: got 503; allowed: a string"),
}


def run_fake(aws: dict[str, Any], answers: dict[str, Any], *, now: datetime = NOW, ledger: Ledger | None = None,
             alerts: Any = None, deadline: float | None = None) -> dict[str, Any]:
    return run(groups=FleetNodegroups(FakeEks(answers), cluster=CLUSTER, names=list(answers)), pool=POOL,
               alerts=alerts or aws["alerts"], ledger=ledger or aws["ledger"], now=now, deadline=deadline)


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_description_of_another_shape_is_reported_once_and_the_others_are_still_checked(aws, case) -> None:
    bad, problem = MALFORMED[case]
    nodegroup_handler.metrics.clear_metrics()
    out = run_fake(aws, {"ultra": bad, "tune": described("tune", NO_CAPACITY)})
    told = {m["Subject"]: m["Message"] for m in said(aws)}
    assert set(told) == {"neuronfleet: node group ultra cannot be read",
                         "neuronfleet: no Neuron capacity for node group tune"}  # the group after it still checked
    assert problem in told["neuronfleet: node group ultra cannot be read"]
    assert out["not_checked"] == ["ultra: unreadable"] and len(out["unreadable"]) == 1
    assert nodegroup_handler.metrics.metric_set["UnreadableNodegroups"]["Value"] == [1.0]
    for minutes in (5, 10):  # still malformed: counted each run, reported once
        nodegroup_handler.metrics.clear_metrics()
        out = run_fake(aws, {"ultra": bad, "tune": described("tune", NO_CAPACITY)},
                       now=NOW + timedelta(minutes=minutes))
        assert said(aws) == [] and nodegroup_handler.metrics.metric_set["UnreadableNodegroups"]["Value"] == [1.0]
    nodegroup_handler.metrics.clear_metrics()
    run_fake(aws, {"ultra": described("ultra"), "tune": described("tune", NO_CAPACITY)},
             now=NOW + timedelta(minutes=15))
    assert [m["Subject"] for m in said(aws)] == ["neuronfleet: node group ultra can be read again"]
    assert "UnreadableNodegroups" not in nodegroup_handler.metrics.metric_set
    nodegroup_handler.metrics.clear_metrics()


def test_a_fault_in_one_node_groups_handling_never_skips_the_next(aws, monkeypatch) -> None:
    """Whatever fails for one node group (here: the logic itself), the next is checked and the run fails loudly
    afterwards."""
    from neuronfleet_runtime.announcements import Unfinished

    from neuronfleet.lambdas.capacity_alert import nodegroup_handler as h

    real = h.actions

    def actions(group: Any, **kw: Any) -> Any:
        if group.name == "ultra":
            raise ZeroDivisionError("a bug")
        return real(group, **kw)

    monkeypatch.setattr(h, "actions", actions)
    with pytest.raises(Unfinished, match="checking node group ultra: ZeroDivisionError: a bug"):
        run_fake(aws, {"ultra": described("ultra", NO_CAPACITY), "tune": described("tune", NO_CAPACITY)})
    assert [m["Subject"] for m in said(aws)] == ["neuronfleet: no Neuron capacity for node group tune"]


T0 = 1_795_000_000.0


def faulted_ledger(aws: dict[str, Any], faults: dict[tuple[str, int], Any], clock: Any) -> Ledger:
    return Ledger(Faulty(aws["ledger"].client, faults), aws["ledger"].table, clock=clock, sleep=lambda _: None)


def ddb_fault(aws: dict[str, Any], code: str, op: str) -> Exception:
    return client_error(code, op, client=aws["ledger"].client)


GROUPS = {"ultra": described("ultra", NO_CAPACITY), "tune": described("tune", NO_CAPACITY)}
SUBJECTS = ["neuronfleet: no Neuron capacity for node group tune", "neuronfleet: no Neuron capacity for node group ultra"]


@pytest.mark.parametrize(("op", "n", "after"), [
    ("query", 1, False),                 # reading the outbox
    ("transact_write_items", 1, False),  # recording ultra's condition and message: refused
    ("transact_write_items", 1, True),   # ... took effect, its answer lost
    ("transact_write_items", 2, False),  # tune's: refused
    ("update_item", 1, False),           # the sent mark of ultra's message: refused (tried again at the end)
    ("update_item", 2, True),            # the sent mark of tune's message: took effect, answer lost
], ids=lambda v: str(v))
def test_a_dynamodb_fault_at_each_call_then_a_retry_announces_each_condition_once(aws, op, n, after) -> None:
    clock = Clock(T0)
    code = {"query": "Query", "transact_write_items": "TransactWriteItems", "update_item": "UpdateItem"}[op]
    error = timeout() if after else ddb_fault(aws, "ProvisionedThroughputExceededException", code)
    with contextlib.suppress(Unfinished):
        run_fake(aws, GROUPS, ledger=faulted_ledger(aws, {(op, n): Fault(error, after=after)}, clock),
                 deadline=T0 + 60)
    clock.now = T0 + 60  # the Lambda's retry, a minute later
    run_fake(aws, GROUPS, ledger=Ledger(aws["ledger"].client, aws["ledger"].table, clock=clock, sleep=lambda _: None),
             now=NOW + timedelta(minutes=1), deadline=T0 + 120)
    clock.now = T0 + 300  # the next scheduled run, past every lease
    run_fake(aws, GROUPS, ledger=Ledger(aws["ledger"].client, aws["ledger"].table, clock=clock, sleep=lambda _: None),
             now=NOW + timedelta(minutes=5), deadline=T0 + 360)
    assert sorted(m["Subject"] for m in said(aws)) == SUBJECTS  # each once, nothing repeated


@pytest.mark.parametrize(("error", "after"), [
    (client_error("Throttled", "Publish", status=400), False),     # SNS refused: certainly not sent
    (client_error("InternalError", "Publish", status=500), True),  # SNS took it, its answer lost
])
def test_an_sns_fault_then_a_retry_announces_once_or_once_again_saying_so(aws, error, after) -> None:
    clock = Clock(T0)
    ledger = Ledger(aws["ledger"].client, aws["ledger"].table, clock=clock, sleep=lambda _: None)
    sns = Faulty(aws["alerts"]._client, {("publish", 1): Fault(error, after=after)})
    with pytest.raises(Unfinished, match="publishing"):
        run_fake(aws, GROUPS, ledger=ledger, alerts=Topic(sns, aws["topic"]), deadline=T0 + 60)
    clock.now = T0 + 60
    run_fake(aws, GROUPS, ledger=ledger, now=NOW + timedelta(minutes=1), deadline=T0 + 120)
    got = said(aws)
    assert sorted({m["Subject"] for m in got}) == SUBJECTS
    repeats = [m for m in got if m["Message"].endswith(REPEAT_NOTE)]
    assert len(got) == 2 + after and len(repeats) == after  # the documented window: one repeat, saying so


def test_two_overlapping_runs_announce_each_condition_once(aws) -> None:
    """Run B runs whole while run A records ultra's condition; neither announces anything twice."""
    seen: dict[str, Any] = {}

    def run_b() -> None:
        seen["b"] = run_fake(aws, GROUPS)

    a_ledger = Ledger(Faulty(aws["ledger"].client, before={("transact_write_items", 1): run_b}),
                      aws["ledger"].table)
    a = run_fake(aws, GROUPS, ledger=a_ledger)
    assert sorted(m["Subject"] for m in said(aws)) == SUBJECTS
    assert sorted(a["announced"] + seen["b"]["announced"]) == sorted(SUBJECTS)


def test_an_unpublishable_message_is_set_aside_and_no_later_run_fails(aws) -> None:
    """A message SNS refuses as such (here a GPU pool description too large for the topic: only a direct invoke
    could give one) is set aside, said once by a notice, counted; later runs publish the rest and succeed."""
    big = described("ultra", NO_CAPACITY | {"message": EC2_CAPACITY + " " + "x" * (256 * 1024)})
    nodegroup_handler.metrics.clear_metrics()
    out = run_fake(aws, {"ultra": big, "tune": described("tune", NO_CAPACITY)})
    assert out["set_aside"] == ["neuronfleet: no Neuron capacity for node group ultra"]
    assert nodegroup_handler.metrics.metric_set["UnpublishableAnnouncements"]["Value"] == [1.0]
    assert sorted(m["Subject"] for m in said(aws)) == [
        "neuronfleet: an announcement could not be published", "neuronfleet: no Neuron capacity for node group tune"]
    for minutes in (5, 10):
        nodegroup_handler.metrics.clear_metrics()
        later = run_fake(aws, {"ultra": big, "tune": described("tune")}, now=NOW + timedelta(minutes=minutes))
        assert later["set_aside"] == [] and "UnpublishableAnnouncements" not in nodegroup_handler.metrics.metric_set
    assert [m["Subject"] for m in said(aws)] == ["neuronfleet: node group tune gets nodes again"]
    nodegroup_handler.metrics.clear_metrics()
