"""Every add-on pinned (issue 40): the ``eks-pod-identity-agent`` add-on aws-cdk-lib makes itself, without a version,
for the cluster's Pod Identity associations carries the kit's pin (neuronfleet.facts.eks_pins.POD_IDENTITY_AGENT,
unconfirmed for Kubernetes 1.36: docs/checks.md ``eks-pod-identity-agent``), and the cluster refuses to build when
aws-cdk-lib no longer gives an add-on resource to pin. One construct-level stack, no fleet."""

from __future__ import annotations

from datetime import date
from typing import cast

import aws_cdk as cdk
import pytest
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.assertions import Template

from neuronfleet.eks import NeuronEksCluster
from neuronfleet.facts import eks_pins as pins
from neuronfleet.settings.eks import NeuronEksClusterSettings
from neuronfleet.verify.kubernetes import CHECKS
from tests.conftest import ENV, AzStack, network, properties

GROUP = {"name": "tune", "instance_type": "trn1.32xlarge", "count": 1}


def _cluster(stack: cdk.Stack) -> NeuronEksCluster:
    net = network(stack)
    settings = NeuronEksClusterSettings(node_groups=[GROUP])  # type: ignore[arg-type]
    return NeuronEksCluster(stack, "Eks", vpc=net.vpc, settings=settings, vpc_subnets=net.compute_subnets)


@pytest.fixture(scope="module")
def built() -> tuple[NeuronEksCluster, Template]:
    stack = AzStack(cdk.App(), "S", env=ENV)
    cluster = _cluster(stack)
    return cluster, Template.from_stack(stack)


def test_the_pin_its_version_and_its_sources() -> None:
    pin = pins.POD_IDENTITY_AGENT
    assert (pin.name, pin.version) == ("eks-pod-identity-agent", "v1.4.0-eksbuild.1")
    # a loud pin: seen on 1.36 by third parties, listed by no publisher file
    assert pin.confirmed is False and pin.as_of == date(2026, 11, 29)
    for source in ("ministryofjustice/modernisation-platform-environments",
                   "0a0278d907aa941c0774c2d01baabe552b6b5a1e", "eks_cluster_version 1.36",
                   "global-capacity-orchestrator-on-aws", "aws/aws-cdk#32580", "aws/containers-roadmap#2410",
                   "aws/eks-pod-identity-agent @ d4dc0f3fedd795b26ac88755238867a2110c7460",
                   "aws eks describe-addon-versions --addon-name eks-pod-identity-agent --kubernetes-version 1.36"):
        assert source in pin.source, source
    assert pins.DEFAULT_KUBERNETES_VERSION == "1.36"  # the version the sources saw it on


def test_the_synthesised_agent_add_on_carries_the_pin(built) -> None:
    cluster, template = built
    agents = {k: p for k, p in properties(template, "AWS::EKS::Addon").items()
              if p["AddonName"] == pins.POD_IDENTITY_AGENT.name}
    # one agent for the whole cluster (every Pod Identity service account reuses aws-cdk-lib's), pinned
    assert [p.get("AddonVersion") for p in agents.values()] == [pins.POD_IDENTITY_AGENT.version]
    [(logical_id, _)] = agents.items()
    assert cluster.pod_identity_agent.node.path == "S/Eks/Cluster/EksPodIdentityAgentAddon"
    assert template.to_json()["Resources"][logical_id]["Type"] == "AWS::EKS::Addon"
    # it serves the cluster's associations: training's and serving's at least
    namespaces = {p["Namespace"] for p in properties(template, "AWS::EKS::PodIdentityAssociation").values()}
    assert {"neuronfleet-training", "neuronfleet-serving"} <= namespaces


def _other_add_on(cluster: eks.Cluster) -> eks.Addon:
    return eks.Addon(cluster, "Other", cluster=cast(eks.ICluster, cluster), addon_name="vpc-cni")


@pytest.mark.parametrize("agent", [lambda cluster: None, _other_add_on], ids=["no add-on", "another add-on"])
def test_refused_when_aws_cdk_lib_gives_no_agent_add_on_resource(monkeypatch, agent) -> None:
    monkeypatch.setattr(eks.Cluster, "eks_pod_identity_agent", property(agent))
    stack = AzStack(cdk.App(), "S", env=ENV)
    with pytest.raises(RuntimeError, match=r"cannot pin the eks-pod-identity-agent add-on to v1\.4\.0-eksbuild\.1"):
        _cluster(stack)


def test_verify_lists_the_check_with_its_command() -> None:
    [check] = [c for c in CHECKS if c.id == "eks-pod-identity-agent"]
    assert pins.POD_IDENTITY_AGENT.version in check.fact and check.run is None and check.manual
    assert check.by_hand == ("aws eks describe-addon-versions --addon-name eks-pod-identity-agent --kubernetes-version "
                             "1.36 --query 'addons[].addonVersions[].addonVersion'")
