"""A replaced node announced once (issue 40, "an announcement when a node is replaced"): the node-group poll reads each
Neuron node group's Auto Scaling activities and announces a termination followed by a launch (node auto repair's
Replace, an EC2 health check, an operator) once, with AWS's cause; a termination with no launch after it (a scale-in)
is not announced. Parsed on the publishers' own examples (botocore 1.44.5's DescribeScalingActivities example, as
installed; the EC2 Auto Scaling user guide's health-check example, tests/data/eks), run against moto's SNS and
DynamoDB (the announcements ledger) with a fault at each AWS call."""

from __future__ import annotations

import contextlib
import copy
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from neuronfleet_runtime.announcements import Unfinished

from neuronfleet.eks.capacity_alerts import REPLACEMENT_READ
from neuronfleet.lambdas.capacity_alert.adapters import FleetNodegroups, Ledger, Topic
from neuronfleet.lambdas.capacity_alert.logic import CONDITION_TTL
from neuronfleet.lambdas.capacity_alert.nodegroup_handler import run
from neuronfleet.lambdas.capacity_alert.nodegroups import (
    LOOKBACK,
    REPLACEMENT_WINDOW,
    Activity,
    Unreadable,
    replaced,
    scaling_activities,
)
from tests.fault_injection import Clock, Fault, Faulty, client_error, timeout
from tests.moto import test_nodegroup_capacity_moto as nodegroup_moto
from tests.publisher_examples import cli_outputs, response

DATA = Path(__file__).resolve().parents[1] / "data" / "eks"
CLUSTER = "my-eks-cluster"
aws = nodegroup_moto.aws
"""moto's SNS (an inbox queue behind the topic) and DynamoDB (the ledger): the node-group alerts' own fixture."""
said = nodegroup_moto.said
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
T0 = 1_795_000_000.0


def guide_activities() -> list[dict[str, Any]]:
    """The EC2 Auto Scaling user guide's example answer (a health-check termination), its `...` line dropped."""
    text = (DATA / "autoscaling-health-check-activities.json.txt").read_text()
    doc = json.loads(re.sub(r",\n\.\.\.\n", "\n", text))
    return response("autoscaling", "DescribeScalingActivities", doc)["Activities"]


def botocore_activities() -> list[dict[str, Any]]:
    """botocore's own example answer (a launch), checked against its output shape."""
    examples = botocore.session.get_session().get_service_model("autoscaling")  # the installed botocore 1.44.5
    loader = botocore.session.get_session().get_component("data_loader")
    doc = loader.load_service_model("autoscaling", "examples-1", examples.api_version)
    [example] = doc["examples"]["DescribeScalingActivities"]
    return response("autoscaling", "DescribeScalingActivities", example["output"])["Activities"]


def terminated(instance: str, at: datetime, *, status: str = "Successful", activity: str = "t") -> dict[str, Any]:
    """The guide's termination, of ``instance`` at ``at``."""
    [doc] = copy.deepcopy(guide_activities())
    doc.update(ActivityId=f"{activity}-{instance}", Description=f"Terminating EC2 instance: {instance}",
               StartTime=at, StatusCode=status)
    return doc


def launched(instance: str, at: datetime, *, status: str = "Successful") -> dict[str, Any]:
    """botocore's launch, of ``instance`` at ``at``."""
    [doc] = copy.deepcopy(botocore_activities())
    doc.update(ActivityId=f"l-{instance}", Description=f"Launching a new EC2 instance: {instance}", StartTime=at,
               StatusCode=status)
    return doc


# ------------------------------------------------------------------------------------------- the facts


def test_the_publishers_examples_read_as_a_termination_and_a_launch() -> None:
    [t] = scaling_activities(guide_activities())
    assert (t.instance, t.termination, t.launch, t.status) == ("i-04925c838b6438f14", True, False, "Successful")
    assert t.cause == "At 2021-04-01T21:48:35Z an instance was taken out of service in response to a user health-check."
    [launch] = scaling_activities(botocore_activities())
    assert (launch.instance, launch.launch, launch.termination) == ("i-4ba0837f", True, False)
    assert launch.start.tzinfo is not None


def test_the_read_needs_no_resource_and_the_window_is_inside_the_claims_life() -> None:
    row = (DATA / "list_amazonec2autoscaling-describe-scaling-activities-row.html").read_text()
    cells = [re.sub(r"\s+", " ", c).strip() for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
    assert "DescribeScalingActivities" in cells[0] and cells[2] == "List" and cells[3] == ""  # no resource type
    assert REPLACEMENT_READ == "autoscaling:DescribeScalingActivities"
    assert LOOKBACK < CONDITION_TTL  # an expired claim's activity is never read again


# ---------------------------------------------------------------------------------------------- the logic


def test_a_termination_then_a_launch_is_a_replacement() -> None:
    t = NOW - timedelta(minutes=20)
    [(term, launch)] = replaced(scaling_activities([launched("i-new", t + timedelta(minutes=2)),
                                                    terminated("i-bad", t)]), now=NOW)
    assert (term.instance, launch.instance) == ("i-bad", "i-new")


@pytest.mark.parametrize("activities", [
    [terminated("i-bad", NOW - timedelta(minutes=20))],  # a scale-in: no launch after it
    [terminated("i-bad", NOW - timedelta(minutes=50)),
     launched("i-new", NOW - timedelta(minutes=50) + REPLACEMENT_WINDOW + timedelta(minutes=1))],  # too late
    [launched("i-new", NOW - timedelta(minutes=30)), terminated("i-bad", NOW - timedelta(minutes=20))],  # before
    [terminated("i-bad", NOW - LOOKBACK - timedelta(minutes=5)), launched("i-new", NOW - LOOKBACK)],  # too old
    [terminated("i-bad", NOW - timedelta(minutes=5), status="InProgress"),
     launched("i-new", NOW - timedelta(minutes=4))],  # not terminated yet: next run
], ids=["scale-in", "launch-too-late", "launch-before", "older-than-a-day", "in-progress"])
def test_what_is_not_a_replacement(activities: list[dict[str, Any]]) -> None:
    assert replaced(scaling_activities(activities), now=NOW) == []


def test_one_launch_replaces_one_node() -> None:
    t = NOW - timedelta(minutes=20)
    pairs = replaced(scaling_activities([terminated("i-a", t), terminated("i-b", t + timedelta(seconds=5)),
                                         launched("i-new", t + timedelta(minutes=1))]), now=NOW)
    assert [(a.instance, b.instance) for a, b in pairs] == [("i-a", "i-new")]


@pytest.mark.parametrize(("change", "problem"), [
    (lambda a: a.pop("StartTime"), "Activities[0].StartTime: got nothing"),
    (lambda a: a.update(StartTime="2026-11-29T11:40:00Z"), "Activities[0].StartTime: got '2026-11-29T11:40:00Z'"),
    (lambda a: a.update(ActivityId=7), "Activities[0].ActivityId: got 7"),
    (lambda a: a.pop("StatusCode"), "Activities[0].StatusCode: got nothing"),
])
def test_an_activity_of_another_shape_is_named(change: Any, problem: str) -> None:
    doc = terminated("i-bad", NOW)
    change(doc)
    with pytest.raises(Unreadable, match=re.escape(problem)):
        scaling_activities([doc])
    with pytest.raises(Unreadable, match="Activities: got 'x'"):
        scaling_activities("x")


def test_a_failed_replacement_launch_is_said_so() -> None:
    t = NOW - timedelta(minutes=20)
    failed = launched("i-x", t + timedelta(minutes=1), status="Failed")
    failed.update(Description="Launching a new EC2 instance.  Status Reason: We currently do not have sufficient "
                              "trn2u.48xlarge capacity", StatusMessage="We currently do not have sufficient capacity")
    [(_, launch)] = replaced(scaling_activities([terminated("i-bad", t), failed]), now=NOW)
    assert launch.status == "Failed" and launch.instance == "(no instance)"


# ------------------------------------------------------------------------------------ the poll, on moto


def described(name: str) -> dict[str, Any]:
    """aws-cli's describe-nodegroup example for node group ``name``, with an Auto Scaling group of its own."""
    [doc] = cli_outputs("eks-describe-nodegroup")
    doc = copy.deepcopy(doc)
    doc["nodegroup"]["nodegroupName"] = name
    doc["nodegroup"]["resources"]["autoScalingGroups"] = [{"name": f"eks-{name}-asg"}]
    return response("eks", "DescribeNodegroup", doc)


class FakeEks:
    def describe_nodegroup(self, *, clusterName: str, nodegroupName: str) -> Any:
        return described(nodegroupName)


class FakeAutoscaling:
    """DescribeScalingActivities answering each group's activities (or raising what it is given)."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers: dict[str, Any] = answers
        self.asked: list[str] = []

    def describe_scaling_activities(self, *, AutoScalingGroupName: str, MaxRecords: int) -> Any:
        self.asked.append(AutoScalingGroupName)
        answer = self.answers[AutoScalingGroupName]
        if isinstance(answer, BaseException):
            raise answer
        return {"Activities": answer}


REPAIRED = [launched("i-0new", NOW - timedelta(minutes=9)), terminated("i-0bad", NOW - timedelta(minutes=10))]
ACTIVITIES = {"eks-ultra-asg": REPAIRED, "eks-tune-asg": [terminated("i-0gone", NOW - timedelta(minutes=30))]}


def poll(aws: dict[str, Any], answers: dict[str, Any] | None = None, *, now: datetime = NOW,
         ledger: Ledger | None = None, alerts: Any = None, deadline: float | None = None) -> dict[str, Any]:
    scaling = FakeAutoscaling(ACTIVITIES if answers is None else answers)
    return run(groups=FleetNodegroups(FakeEks(), cluster=CLUSTER, names=["ultra", "tune"], autoscaling=scaling),
               pool=None, alerts=alerts or aws["alerts"], ledger=ledger or aws["ledger"], now=now, deadline=deadline)


SUBJECT = "neuronfleet: node group ultra replaced i-0bad"


def test_a_replaced_node_is_announced_once_with_awss_cause(aws) -> None:
    out = poll(aws)
    [msg] = said(aws)  # tune's node left with no launch after it (a scale-in): nothing
    assert msg["Subject"] == SUBJECT and out["announced"] == [SUBJECT]
    assert "i-0bad terminated at" in msg["Message"] and "in response to a user health-check" in msg["Message"]
    assert "replacement launch at" in msg["Message"] and "i-0new (Successful)" in msg["Message"]
    for minutes in (5, 10, 60 * 23):  # the poll runs again (the activity stays in the answer a day): nothing new
        assert poll(aws, now=NOW + timedelta(minutes=minutes))["announced"] == [] and said(aws) == []


def test_a_node_group_without_an_autoscaling_client_is_not_looked_at(aws) -> None:
    out = run(groups=FleetNodegroups(FakeEks(), cluster=CLUSTER, names=["ultra"]), pool=None, alerts=aws["alerts"],
              ledger=aws["ledger"], now=NOW)
    assert out["announced"] == [] and said(aws) == []


@pytest.mark.parametrize("error", [
    client_error("Throttling", "DescribeScalingActivities", status=400),
    client_error("AccessDenied", "DescribeScalingActivities", status=403),
    timeout("autoscaling"),
], ids=["throttled", "denied", "timeout"])
def test_activities_that_cannot_be_read_wait_for_the_next_run(aws, error) -> None:
    out = poll(aws, {"eks-ultra-asg": error, "eks-tune-asg": []})
    assert said(aws) == [] and out["not_checked"][0].startswith("ultra: replacements: ")
    poll(aws, now=NOW + timedelta(minutes=5))
    assert [m["Subject"] for m in said(aws)] == [SUBJECT]


def test_unreadable_activities_are_named_and_the_capacity_check_still_runs(aws) -> None:
    bad = [dict(REPAIRED[1], StartTime="yesterday")]
    out = poll(aws, {"eks-ultra-asg": bad, "eks-tune-asg": []})
    assert out["not_checked"] == ["ultra: replacements: unreadable"]
    assert "StartTime: got 'yesterday'" in out["unreadable"][0] and said(aws) == []


@pytest.mark.parametrize(("op", "n", "after"), [
    ("query", 1, False),                 # reading the outbox
    ("transact_write_items", 1, False),  # recording the replacement and its message: refused
    ("transact_write_items", 1, True),   # ... took effect, its answer lost
    ("update_item", 1, False),           # the sent mark: refused (tried again at the end)
    ("update_item", 1, True),            # the sent mark took effect, its answer lost
], ids=lambda v: str(v))
def test_a_dynamodb_fault_at_each_call_then_a_retry_announces_once(aws, op, n, after) -> None:
    clock = Clock(T0)
    code = {"query": "Query", "transact_write_items": "TransactWriteItems", "update_item": "UpdateItem"}[op]
    error = timeout() if after else client_error("ProvisionedThroughputExceededException", code,
                                                 client=aws["ledger"].client)
    faulty = Ledger(Faulty(aws["ledger"].client, {(op, n): Fault(error, after=after)}), aws["ledger"].table,
                    clock=clock, sleep=lambda _: None)
    with contextlib.suppress(Unfinished):
        poll(aws, ledger=faulty, deadline=T0 + 60)
    for minutes, at in ((1, T0 + 60), (5, T0 + 300)):  # the Lambda's retry, then the next scheduled run
        clock.now = at
        poll(aws, ledger=Ledger(aws["ledger"].client, aws["ledger"].table, clock=clock, sleep=lambda _: None),
             now=NOW + timedelta(minutes=minutes), deadline=at + 60)
    assert [m["Subject"] for m in said(aws)] == [SUBJECT]


@pytest.mark.parametrize(("error", "after"), [
    (client_error("Throttled", "Publish", status=400), False),     # SNS refused: certainly not sent
    (client_error("InternalError", "Publish", status=500), True),  # SNS took it, its answer lost
])
def test_an_sns_fault_then_a_retry_announces_once_or_once_again_saying_so(aws, error, after) -> None:
    clock = Clock(T0)
    ledger = Ledger(aws["ledger"].client, aws["ledger"].table, clock=clock, sleep=lambda _: None)
    sns = Faulty(aws["alerts"]._client, {("publish", 1): Fault(error, after=after)})
    with pytest.raises(Unfinished, match="publishing"):
        poll(aws, ledger=ledger, alerts=Topic(sns, aws["topic"]), deadline=T0 + 60)
    clock.now = T0 + 60
    poll(aws, ledger=ledger, now=NOW + timedelta(minutes=1), deadline=T0 + 120)
    got = said(aws)
    assert {m["Subject"] for m in got} == {SUBJECT} and len(got) == 1 + after


def test_two_overlapping_runs_announce_the_replacement_once(aws) -> None:
    seen: dict[str, Any] = {}

    def run_b() -> None:
        seen["b"] = poll(aws)

    a = poll(aws, ledger=Ledger(Faulty(aws["ledger"].client, before={("transact_write_items", 1): run_b}),
                                aws["ledger"].table))
    assert [m["Subject"] for m in said(aws)] == [SUBJECT]
    assert a["announced"] + seen["b"]["announced"] == [SUBJECT]


def test_the_activity_type_reads_its_instance() -> None:
    a = Activity("x", "Terminating EC2 instance: i-0abc", "c", "Successful", NOW)
    assert a.instance == "i-0abc" and a.termination
