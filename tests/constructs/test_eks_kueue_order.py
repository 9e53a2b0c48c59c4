"""Kueue's release waits for the system node group (2026-11-29 mutation review: the suite let its dependency go).
NeuronEksCluster installs Kueue with ``wait=True``: Helm waits for its controller to be ready, and the controller can
run only on the untainted system nodes (every Neuron node group is tainted, and a Capacity Block group starts at 0), so
the release must be applied after that node group exists. One construct-level stack (tests/cdk_support AzStack)."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from neuronfleet.eks import NeuronEksCluster
from neuronfleet.settings.eks import NeuronEksClusterSettings
from tests.conftest import ENV, AzStack, network
from tests.constructs.test_eks_placement import ULTRA


def _logical_id(construct: Any) -> str:
    resource = construct.node.default_child
    while not isinstance(resource, cdk.CfnElement):
        resource = resource.node.default_child
    return cdk.Stack.of(construct).get_logical_id(resource)


def test_kueue_applies_after_the_system_node_group() -> None:
    stack = AzStack(cdk.App(), "S", env=ENV)
    net = network(stack)
    cluster = NeuronEksCluster(stack, "Eks", vpc=net.vpc, vpc_subnets=net.compute_subnets,
                               settings=NeuronEksClusterSettings(node_groups=(ULTRA,)))
    assert cluster.kueue is not None   # the placement queue of the device-plugin UltraServer group installs it
    template = Template.from_stack(stack).to_json()
    depends = set(template["Resources"][_logical_id(cluster.kueue)].get("DependsOn", []))
    assert _logical_id(cluster.system_node_group) in depends
