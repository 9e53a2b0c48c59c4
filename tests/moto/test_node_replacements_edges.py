"""Replaced nodes announced once, at the edges the suite let through (2026-11-29 mutation review): a Capacity Block
node group scaled in at one block's end and out at the next block's start is not replacing a node; a node group with
more than one Auto Scaling group (DescribeNodegroup ``resources.autoScalingGroups`` is a list) is read whole; and the
ledger's claim of a replacement outlives every poll that can still read its activity (else DynamoDB's TTL could drop
the claim and the next poll announce it again). On the publishers' examples and moto, as
tests/moto/test_node_replacements.py."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import botocore.session
import pytest

from neuronfleet.lambdas.capacity_alert.adapters import FleetNodegroups
from neuronfleet.lambdas.capacity_alert.nodegroup_handler import run
from neuronfleet.lambdas.capacity_alert.nodegroups import (
    LOOKBACK,
    REPLACED_KIND,
    Unreadable,
    nodegroup,
    replaced,
    replacement_say,
    scaling_activities,
)
from tests.moto import test_node_replacements as replacements
from tests.moto.test_node_replacements import CLUSTER, NOW, REPAIRED, SUBJECT, FakeAutoscaling, launched, terminated

aws = replacements.aws
said = replacements.said


def test_a_scale_in_at_one_blocks_end_and_out_at_the_next_blocks_start_is_no_replacement() -> None:
    """A Capacity Block node group follows its blocks: scaled in before one block ends, out when the next one starts
    (whole hours later: blocks start at 11:30 UTC). A termination and a launch two hours apart replace nothing."""
    ended = NOW - timedelta(hours=3)
    assert replaced(scaling_activities([terminated("i-0old", ended),
                                        launched("i-0next", ended + timedelta(hours=2))]), now=NOW) == []


class TwoGroupsEks:
    """DescribeNodegroup (the aws-cli example) naming two Auto Scaling groups for the node group."""

    def describe_nodegroup(self, *, clusterName: str, nodegroupName: str) -> Any:
        doc = replacements.described(nodegroupName)
        doc["nodegroup"]["resources"]["autoScalingGroups"] = [{"name": f"eks-{nodegroupName}-a"},
                                                             {"name": f"eks-{nodegroupName}-b"}]
        return doc


def test_every_auto_scaling_group_of_the_node_group_is_read(aws) -> None:
    """The first group quiet, the second with the replacement: it is announced."""
    scaling = FakeAutoscaling({"eks-ultra-a": [], "eks-ultra-b": REPAIRED})
    out = run(groups=FleetNodegroups(TwoGroupsEks(), cluster=CLUSTER, names=["ultra"], autoscaling=scaling),
              pool=None, alerts=aws["alerts"], ledger=aws["ledger"], now=NOW)
    assert scaling.asked == ["eks-ultra-a", "eks-ultra-b"]
    assert out["announced"] == [SUBJECT] and [m["Subject"] for m in said(aws)] == [SUBJECT]


def _claims(aws: dict[str, Any]) -> dict[str, datetime]:
    ledger = aws["ledger"]
    items = ledger.client.scan(TableName=ledger.table)["Items"]
    return {i["subject"]["S"]: datetime.fromtimestamp(int(i["expires"]["N"]), tz=NOW.tzinfo)
            for i in items if i["kind"]["S"] == REPLACED_KIND}


def test_the_claim_outlives_every_poll_that_can_read_its_activity(aws) -> None:
    """The termination is read by every poll until LOOKBACK after it: its claim expires (DynamoDB TTL) no sooner."""
    replacements.poll(aws, {"eks-ultra-asg": REPAIRED, "eks-tune-asg": []})
    termination = REPAIRED[1]
    [(subject, expires)] = _claims(aws).items()
    assert subject == f"{CLUSTER}/ultra/{termination['ActivityId']}"
    assert expires >= termination["StartTime"] + LOOKBACK


def test_the_read_asks_for_the_largest_page() -> None:
    """One page of DescribeScalingActivities, as large as AWS allows (botocore 1.44.5's MaxRecords documentation:
    "The default value is 100 and the maximum value is 100"): a smaller one would miss a termination behind newer
    activities."""
    model = botocore.session.get_session().get_service_model("autoscaling")
    doc = model.operation_model("DescribeScalingActivities").input_shape.members["MaxRecords"].documentation
    assert "the maximum value is <code>100</code>" in doc
    scaling = Recording()
    assert FleetNodegroups(None, cluster=CLUSTER, names=[], autoscaling=scaling).activities("eks-ultra-asg").error is None
    assert scaling.asked == [{"AutoScalingGroupName": "eks-ultra-asg", "MaxRecords": 100}]


class Recording:
    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def describe_scaling_activities(self, **kwargs: Any) -> Any:
        self.asked.append(kwargs)
        return {"Activities": []}


def test_a_failed_launch_is_said_with_awss_status_message() -> None:
    """The failed launch's StatusMessage (botocore: "a friendly, more verbose description of the activity status") is
    what the announcement quotes."""
    t = NOW - timedelta(minutes=20)
    failed = launched("i-x", t + timedelta(minutes=1), status="Failed")
    failed.update(Description="Launching a new EC2 instance.  Status Reason: capacity",
                  StatusMessage="We currently do not have sufficient trn2u.48xlarge capacity")
    pairs = replaced(scaling_activities([terminated("i-bad", t), failed]), now=NOW)
    _, text = replacement_say(nodegroup(replacements.described("ultra")["nodegroup"]), pairs)([f"{CLUSTER}/ultra/t-i-bad"])
    assert "failed: We currently do not have sufficient trn2u.48xlarge capacity" in text


def test_a_start_time_without_its_zone_is_named() -> None:
    """botocore gives every timestamp with its zone; one without would not compare with the poll's clock: named."""
    naive = dict(terminated("i-bad", NOW - timedelta(minutes=20)))
    naive["StartTime"] = naive["StartTime"].replace(tzinfo=None)
    with pytest.raises(Unreadable, match=r"Activities\[0\]\.StartTime"):
        scaling_activities([naive])
