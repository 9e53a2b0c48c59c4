"""EKS node-group capacity alerts: the facts against botocore 1.44.5's eks model, the pure logic on aws-cli's own
describe-nodegroup example (tests/data/aws_cli/eks-describe-nodegroup.rst, copied verbatim) and variations of it,
and the function's settings."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import botocore.session
import pytest

from neuronfleet.lambdas.capacity_alert.logic import End, Start
from neuronfleet.lambdas.capacity_alert.nodegroups import actions, nodegroup, subject
from neuronfleet_contract.capacity_alert import gpu_pool
from neuronfleet_contract.environment import InvalidEnvironment
from neuronfleet_contract.nodegroup_capacity import CONDITION_KIND, LAUNCH_ISSUES, NodegroupAlertConfig
from tests.publisher_examples import cli_outputs, response

NOW = datetime(2026, 11, 23, 16, tzinfo=UTC)
POOL = gpu_pool({"queue_arn": "arn:aws:batch:us-east-2:111111111111:job-queue/gpu", "max_vcpus": 384,
                 "types": [{"instance_type": "p5.48xlarge", "gpus": 8, "gpu_name": "H100", "efa": 32, "vcpus": 192}]})
EC2_CAPACITY = ("Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have "
                "sufficient trn2.48xlarge capacity in the Availability Zone you requested (us-east-2a).")
"""EC2's capacity refusal as Auto Scaling quotes it (the words the Batch path's launch alerts match)."""


def eks_model() -> Any:
    return botocore.session.get_session().get_service_model("eks")


def example() -> dict[str, Any]:
    """aws-cli's describe-nodegroup output, checked against botocore's DescribeNodegroup output shape."""
    [out] = cli_outputs("eks-describe-nodegroup")
    return response("eks", "DescribeNodegroup", out)  # type: ignore[no-any-return]


def with_issues(*issues: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(example())
    doc["nodegroup"]["health"]["issues"] = list(issues)
    doc["nodegroup"]["status"] = "DEGRADED"
    return response("eks", "DescribeNodegroup", doc)  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------------------------------- facts


def test_describe_nodegroup_names_the_asg_and_the_health_issues() -> None:
    out = eks_model().operation_model("DescribeNodegroup").output_shape.members["nodegroup"]
    assert out.members["resources"].members["autoScalingGroups"].member.members["name"].type_name == "string"
    issue = out.members["health"].members["issues"].member
    assert list(issue.members) == ["code", "message", "resourceIds"]
    assert set(eks_model().operation_model("DescribeNodegroup").input_shape.members) == {"clusterName",
                                                                                          "nodegroupName"}


def test_launch_issue_codes_are_in_botocores_enum_and_none_names_capacity() -> None:
    codes = eks_model().shape_for("NodegroupIssueCode").enum
    assert set(LAUNCH_ISSUES) <= set(codes)
    # no code of its own for EC2's capacity: it shows in AsgInstanceLaunchFailures' message
    assert not [c for c in codes if "capacity" in c.lower() or "insufficientinstance" in c.lower()]
    doc = eks_model().shape_for("Issue").members["code"].documentation
    assert "<b>AsgInstanceLaunchFailures</b>: Your Auto Scaling group is experiencing failures" in doc


def test_the_aws_cli_example_is_a_healthy_group_ending_nothing() -> None:
    group = nodegroup(example()["nodegroup"])
    assert group.auto_scaling_groups == ("eks-my-eks-nodegroup-a8c75f2f-df78-a72f-4063-4b69af3de5b1",)
    assert (group.cluster, group.name, group.status, group.desired) == ("my-eks-cluster", "my-eks-nodegroup",
                                                                        "ACTIVE", 1)
    [end] = actions(group, pool=POOL, now=NOW)
    assert isinstance(end, End) and end.kind == CONDITION_KIND and end.subject == "my-eks-cluster/my-eks-nodegroup"


# ------------------------------------------------------------------------------------------------------- logic


def test_a_capacity_refusal_is_announced_with_the_gpu_pool() -> None:
    doc = with_issues({"code": "AsgInstanceLaunchFailures", "message": EC2_CAPACITY,
                       "resourceIds": ["eks-my-eks-nodegroup-a8c75f2f-df78-a72f-4063-4b69af3de5b1"]})
    [start] = actions(nodegroup(doc["nodegroup"]), pool=POOL, now=NOW)
    assert isinstance(start, Start) and start.subject == subject(nodegroup(doc["nodegroup"]))
    assert start.say.subject == "neuronfleet: no Neuron capacity for node group my-eks-nodegroup"
    assert "InsufficientInstanceCapacity" in start.say.message
    assert "eks-my-eks-nodegroup-a8c75f2f" in start.say.message
    assert "The GPU fallback queue can take CUDA-ready jobs instead" in start.say.message
    assert "p5.48xlarge: 8 x H100" in start.say.message


def test_without_a_pool_the_message_says_so() -> None:
    doc = with_issues({"code": "AsgInstanceLaunchFailures", "message": EC2_CAPACITY})
    [start] = actions(nodegroup(doc["nodegroup"]), pool=None, now=NOW)
    assert "No GPU fallback pool" in start.say.message


@pytest.mark.parametrize("code", ["InstanceLimitExceeded", "InsufficientFreeAddresses", "NodeCreationFailure"])
def test_other_launch_issues_are_announced_without_the_pool(code: str) -> None:
    doc = with_issues({"code": code, "message": "as AWS says it"})
    [start] = actions(nodegroup(doc["nodegroup"]), pool=POOL, now=NOW)
    assert isinstance(start, Start)
    assert start.say.subject == "neuronfleet: node group my-eks-nodegroup cannot get nodes"
    assert code in start.say.message and "GPU fallback" not in start.say.message


def test_a_configuration_issue_is_not_a_launch_condition() -> None:
    doc = with_issues({"code": "Ec2LaunchTemplateVersionMismatch", "message": "m"})
    [end] = actions(nodegroup(doc["nodegroup"]), pool=POOL, now=NOW)
    assert isinstance(end, End) and "Ec2LaunchTemplateVersionMismatch" in end.say.message


# ---------------------------------------------------------------------------------------------------- settings


def test_settings_round_trip_and_refusals() -> None:
    s = NodegroupAlertConfig(cluster_name="c", node_groups=("a", "b"), topic_arn="arn:t", ledger_table="t",
                             pool=POOL)
    assert NodegroupAlertConfig.from_environment(s.to_environment()) == s
    bare = NodegroupAlertConfig(cluster_name="c", node_groups=("a",), topic_arn="arn:t", ledger_table="t")
    assert "GPU_POOL" not in bare.to_environment()
    assert NodegroupAlertConfig.from_environment(bare.to_environment()).pool is None
    with pytest.raises(InvalidEnvironment) as e:
        NodegroupAlertConfig.from_environment({**bare.to_environment(), "EKS_NODE_GROUPS": "[]"})
    assert e.value.variable == "EKS_NODE_GROUPS"
