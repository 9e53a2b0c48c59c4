"""The node-group capacity check against moto (SNS, DynamoDB: the announcements ledger) with EKS's DescribeNodegroup
stubbed on botocore's shapes from aws-cli's own example (tests/data/aws_cli/eks-describe-nodegroup.rst): a node
group that cannot get capacity is announced once however often the check runs, once more when it gets nodes again,
and a throttled or missing node group changes nothing."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from neuronfleet.lambdas.capacity_alert import nodegroup_handler
from neuronfleet.lambdas.capacity_alert.adapters import FleetNodegroups, Ledger, Topic
from neuronfleet.lambdas.capacity_alert.nodegroup_handler import run
from neuronfleet_contract.capacity_alert import gpu_pool
from neuronfleet_contract.nodegroup_capacity import NodegroupAlertSettings
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
    assert out == {"announced": [], "pending": [], "skipped": [], "not_checked": []} and said(aws) == []


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
    settings = NodegroupAlertSettings(cluster_name=CLUSTER, node_groups=("ultra", "gone"),
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
    assert out["not_checked"] == ["ultra: unreadable"] and said(aws) == []  # not taken as "healthy again"
