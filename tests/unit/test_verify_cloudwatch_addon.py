"""``neuronfleet verify``'s ``cloudwatch-addon`` check: the deployed CloudWatch Observability add-on is the version the
kit pins (neuronfleet.facts.eks_observability.CLOUDWATCH_ADDON_PIN), active, and its Neuron metric is published per
cluster. The judge on the AWS CLI's own DescribeAddon example (tests/data/aws_cli/eks-describe-addon.rst, verbatim,
checked against botocore's output shape) and variations of it; the run on a stub of the reads; the adapter's two reads
on botocore's Stubber."""

from __future__ import annotations

import copy
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from neuronfleet.facts import eks_observability as facts
from neuronfleet.preflight.checks import Failed
from neuronfleet.verify import kubernetes
from neuronfleet.verify.kubernetes import addon_pinned
from neuronfleet.verify.reads import Reads as AccountReads
from tests.unit.test_verify_checks import Reads, example, run

PIN = facts.CLOUDWATCH_ADDON_VERSION
CLUSTER = "nf-eks-train-pretrain"
NODE_SERIES = [{"Namespace": "ContainerInsights", "MetricName": "node_neuroncore_utilization",
                "Dimensions": [{"Name": "ClusterName", "Value": CLUSTER}]}]


def described(**changes: Any) -> dict[str, Any]:
    """The CLI example's ``addon`` (vpc-cni v1.16.4-eksbuild.2, ACTIVE), with ``changes``."""
    addon = copy.deepcopy(example("eks-describe-addon", "eks", "DescribeAddon")["addon"])
    addon.update(changes)
    return addon


def pinned(**changes: Any) -> dict[str, Any]:
    return described(addonName=facts.CLOUDWATCH_ADDON, addonVersion=PIN, **changes)


def test_the_pinned_version_active_and_publishing_holds() -> None:
    finding = addon_pinned({CLUSTER: pinned()}, NODE_SERIES, dra=False)
    assert finding.outcome == "holds" and PIN in finding.seen and CLUSTER in finding.seen


def test_another_version_is_broken_naming_both() -> None:
    finding = addon_pinned({CLUSTER: described()}, NODE_SERIES, dra=False)  # the example's own v1.16.4-eksbuild.2
    assert finding.outcome == "broken"
    assert finding.seen == f"{CLUSTER} runs v1.16.4-eksbuild.2, the kit pins {PIN}"
    assert "CLOUDWATCH_ADDON_PIN" in finding.fix and f"cdk deploy puts {PIN} back" in finding.fix


def test_no_addon_on_a_cluster_is_broken() -> None:
    finding = addon_pinned({CLUSTER: pinned(), "other": None}, NODE_SERIES, dra=False)
    assert finding.outcome == "broken" and finding.seen == f"no {facts.CLOUDWATCH_ADDON} add-on on other"


def test_an_unhealthy_addon_is_broken_with_its_issue_codes() -> None:
    sick = pinned(status="DEGRADED", health={"issues": [{"code": "InsufficientNumberOfReplicas", "message": "x"}]})
    finding = addon_pinned({CLUSTER: sick}, NODE_SERIES, dra=False)
    assert finding.outcome == "broken" and finding.seen == f"{CLUSTER}: DEGRADED InsufficientNumberOfReplicas"


@pytest.mark.parametrize("series", [[], [{"Namespace": "ContainerInsights", "MetricName": "node_neuroncore_utilization",
                                          "Dimensions": [{"Name": "ClusterName", "Value": "someone-else"}]}]])
def test_no_neuron_metric_for_the_cluster_is_not_yet(series: list[dict[str, Any]]) -> None:
    finding = addon_pinned({CLUSTER: pinned()}, series, dra=False)
    assert finding.outcome == "not yet" and CLUSTER in finding.seen and "Neuron node" in finding.fix


def test_no_cluster_yet_is_not_yet() -> None:
    assert addon_pinned({}, [], dra=False).outcome == "not yet"


def test_dra_node_groups_leave_the_per_pod_part_to_the_user() -> None:
    finding = addon_pinned({CLUSTER: pinned()}, NODE_SERIES, dra=True)
    assert finding.outcome == "unchecked" and finding.seen.startswith(f"{PIN} on {CLUSTER}")
    assert "pod_neuroncore_utilization" in finding.fix


def test_the_run_reads_each_fleet_clusters_addon_and_the_neuron_metric() -> None:
    reads = Reads(eks_clusters=[CLUSTER], eks_addon=lambda cluster, name: pinned(clusterName=cluster),
                  metrics=NODE_SERIES)
    finding = run("cloudwatch-addon", reads, "eks")  # config/eks.yaml has a DRA node group (ultra)
    assert finding.outcome == "unchecked" and finding.seen.startswith(f"{PIN} on {CLUSTER}")
    assert reads.calls == [("eks_clusters", {}), ("eks_addon", (CLUSTER, facts.CLOUDWATCH_ADDON)),
                           ("metrics", ("ContainerInsights", "node_neuroncore_utilization"))]
    other = run("cloudwatch-addon", Reads(eks_clusters=[CLUSTER], eks_addon=described(), metrics=NODE_SERIES), "eks")
    assert other.outcome == "broken"


def test_an_unreadable_addon_is_unchecked_naming_the_permission() -> None:
    denied = Failed("AccessDeniedException", "not authorized to perform: eks:DescribeAddon")
    finding = run("cloudwatch-addon", Reads(eks_clusters=[CLUSTER], eks_addon=denied), "eks")
    assert finding.outcome == "unchecked" and "eks:DescribeAddon" in finding.fix
    assert kubernetes.CLOUDWATCH_ADDON.run is not None and kubernetes.CLOUDWATCH_ADDON.manual == ""


def _account(client: Any) -> AccountReads:
    return AccountReads("us-east-2", "nf-eks", client=lambda service, region: client)


def test_the_adapter_reads_the_addon_and_none_when_there_is_none() -> None:
    eks = boto3.client("eks", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    answer = example("eks-describe-addon", "eks", "DescribeAddon")
    with Stubber(eks) as stub:
        stub.add_response("describe_addon", answer, {"clusterName": CLUSTER, "addonName": facts.CLOUDWATCH_ADDON})
        stub.add_client_error("describe_addon", "ResourceNotFoundException", "No addon: amazon-cloudwatch-observability",
                              404, expected_params={"clusterName": CLUSTER, "addonName": facts.CLOUDWATCH_ADDON})
        assert _account(eks).eks_addon(CLUSTER, facts.CLOUDWATCH_ADDON) == answer["addon"]
        assert _account(eks).eks_addon(CLUSTER, facts.CLOUDWATCH_ADDON) is None


def test_the_adapter_names_the_fleets_clusters_from_their_arns() -> None:
    tagging = boto3.client("resourcegroupstaggingapi", region_name="us-east-2", aws_access_key_id="x",
                           aws_secret_access_key="x")
    page = {"ResourceTagMappingList": [
        {"ResourceARN": f"arn:aws:eks:us-east-2:444444444444:cluster/{CLUSTER}",
         "Tags": [{"Key": "neuronfleet:fleet", "Value": "nf-eks"}]}]}
    with Stubber(tagging) as stub:
        stub.add_response("get_resources", page, {"TagFilters": [{"Key": "neuronfleet:fleet", "Values": ["nf-eks"]}],
                                                  "ResourceTypeFilters": ["eks:cluster"]})
        assert _account(tagging).eks_clusters() == [CLUSTER]
