"""Jobs that land whole, outside a sharing pool (issue 40): NeuronEksCluster installs Kueue once and gives every
UltraServer node group on the device plugin a placement queue (eks.manifests.placement_objects: its Topology with the
UltraServer level, a flavor of the group, a ClusterQueue owning the group, a LocalQueue in training's namespace),
applied after Kueue and the namespaces; a DRA UltraServer group gets none (Kueue v0.19.2 does not place DRA devices
by topology: facts.kueue.TAS_DRA); a sharing pool uses the same Kueue release, and a pool on a node group the
cluster places is refused unless the cluster was told it is shared. One construct-level stack, synthesised once; the
refusals are raised at construction (no synth)."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template

from neuronfleet import InvalidSettings
from neuronfleet.eks import NeuronEksCluster
from neuronfleet.eks import manifests as eks_manifests
from neuronfleet.facts.kueue import KUEUE_CHART, KUEUE_NAMESPACE, KUEUE_VERSION
from neuronfleet.settings import Capacity
from neuronfleet.settings.eks import NeuronEksClusterSettings, NeuronNodegroupSettings
from neuronfleet.sharing.pool import SharingPool
from neuronfleet_contract.pool_schedule import PoolSchedule
from tests.conftest import ENV, AzStack, network

BLOCKS = "arn:aws:resource-groups:us-east-2:111111111111:group/ultra"
ULTRA = NeuronNodegroupSettings(name="ultra", instance_type="trn2u.48xlarge", count=8, allow_unlisted_region=True,
                                capacity=Capacity.capacity_block(resource_group_arn=BLOCKS,
                                                                 availability_zone="us-east-2b"))
DRA = NeuronNodegroupSettings(name="dra", instance_type="trn2u.48xlarge", count=4, allow_unlisted_region=True,
                              capacity=Capacity.capacity_block(resource_group_arn=BLOCKS, availability_zone="us-east-2b"),
                              device_plugin=False, dra=True)
POOL = NeuronNodegroupSettings(name="pool", instance_type="trn2.48xlarge", count=2,
                               capacity=Capacity.odcr(reservation_id="cr-0123456789abcdef0",
                                                      availability_zone="us-east-2b"))


def schedule(group: NeuronNodegroupSettings) -> PoolSchedule:
    return PoolSchedule.build(pool="rainier", time_zone="UTC", day=["07:00-23:00"],
                              pool_devices=group.count * group.spec.accelerators, replica_devices=4,
                              day_replicas=4, night_floor=1, checkpoint_deadline=30)


def _stack(*groups: NeuronNodegroupSettings, shared: tuple[str, ...] = ()) -> tuple[cdk.Stack, NeuronEksCluster]:
    stack = AzStack(cdk.App(), "S", env=ENV)
    net = network(stack)
    cluster = NeuronEksCluster(stack, "Eks", vpc=net.vpc, vpc_subnets=net.compute_subnets, shared_node_groups=shared,
                               settings=NeuronEksClusterSettings(node_groups=tuple(groups)))
    return stack, cluster


@pytest.fixture(scope="module")
def built() -> tuple[NeuronEksCluster, dict[str, Any]]:
    """A device-plugin UltraServer group (placed), a DRA UltraServer group (not), and a pool on a third group."""
    stack, cluster = _stack(ULTRA, DRA, POOL)
    SharingPool(stack, "Pool", cluster=cluster, node_group="pool", schedule=schedule(POOL),
                topic=sns.Topic(stack, "Alerts"))
    return cluster, dict(Template.from_stack(stack).to_json())


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def test_one_kueue_release_for_the_placement_queues_and_the_pool(built) -> None:
    _, template = built
    charts = [r["Properties"] for r in _of_type(template, "Custom::AWSCDK-EKS-HelmChart").values()
              if r["Properties"]["Chart"] == "kueue"]
    assert len(charts) == 1
    [kueue] = charts
    assert (kueue["Repository"], kueue["Version"], kueue["Namespace"], kueue["CreateNamespace"], kueue["Wait"]) == (
        KUEUE_CHART, KUEUE_VERSION, KUEUE_NAMESPACE, True, True)
    assert "Values" not in kueue   # Kueue's own controller configuration: no DeviceClass mapping, no queue-less Jobs


def test_the_placement_queue_is_the_device_plugin_ultraserver_groups_only(built) -> None:
    cluster, template = built
    assert cluster.placement_queues == {"ultra": eks_manifests.placement_name(ULTRA)}
    texts = [json.dumps(r["Properties"]["Manifest"])
             for r in _of_type(template, "Custom::AWSCDK-EKS-KubernetesResource").values()]
    assert len([t for t in texts if "ClusterQueue" in t]) == 2   # the placement queue's, the pool's
    [text] = [t for t in texts if "whole-ultraservers-" in t]
    for kind in ("Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue"):
        assert text.count(f'\\"kind\\": \\"{kind}\\"') + text.count(f'\\"kind\\":\\"{kind}\\"') == 1, kind
    assert "whole-ultraservers-ultra" in text and "whole-ultraservers-dra" not in text


def _logical_id(construct: Any) -> str:
    """The logical id of a KubernetesManifest's or HelmChart's custom resource."""
    resource = construct.node.default_child
    while not isinstance(resource, cdk.CfnElement):
        resource = resource.node.default_child
    return cdk.Stack.of(construct).get_logical_id(resource)


def test_the_placement_queue_applies_after_kueue_and_the_namespaces(built) -> None:
    cluster, template = built
    assert cluster.placement is not None and cluster.kueue is not None
    depends = set(template["Resources"][_logical_id(cluster.placement)].get("DependsOn", []))
    assert {_logical_id(cluster.kueue), _logical_id(cluster.namespaces)} <= depends


def test_a_dra_only_cluster_installs_no_kueue() -> None:
    _, cluster = _stack(DRA)
    assert cluster.kueue is None and cluster.placement is None and cluster.placement_queues == {}


def _pool(group: NeuronNodegroupSettings, shared: tuple[str, ...] = ()) -> tuple[SharingPool, NeuronEksCluster]:
    stack, cluster = _stack(group, shared=shared)
    return SharingPool(stack, "Pool", cluster=cluster, node_group=group.name, schedule=schedule(group),
                       topic=sns.Topic(stack, "Alerts")), cluster


@pytest.mark.parametrize(("group", "allowed"), [
    (ULTRA, "a node group the cluster shares: pass shared_node_groups=['ultra'] to NeuronEksCluster"),
    (DRA, "a node group on the device plugin: 'dra' hands out its devices by DRA"),
])
def test_a_pool_is_refused_on_a_placed_group_and_on_a_dra_group(group: NeuronNodegroupSettings, allowed: str) -> None:
    with pytest.raises(InvalidSettings) as caught:
        _pool(group)
    [problem] = caught.value.problems
    assert problem.path == "node_group" and problem.value == group.name and allowed in problem.allowed


@pytest.mark.parametrize("group", [DRA, DRA.model_copy(update={"capacity": Capacity.on_demand()})],
                         ids=["dra", "on-demand"])
def test_the_construct_and_the_fleet_file_refuse_a_group_in_the_same_words(group: NeuronNodegroupSettings) -> None:
    """The same mistake through SharingPool's node_group and through the fleet file's eks.sharing."""
    from neuronfleet.settings.sharing import SharingSettings

    with pytest.raises(InvalidSettings) as construct:
        _pool(group)
    sharing = SharingSettings(time_zone="UTC", day=("07:00-23:00",), replica_devices=4, day_replicas=8, night_floor=4,
                              checkpoint_deadline_minutes=30, node_group=group.name)
    with pytest.raises(InvalidSettings) as fleet_file:
        sharing.pool_schedule(NeuronEksClusterSettings(node_groups=(group,)), "p")
    assert [(p.path, p.value, p.allowed) for p in construct.value.problems] == [
        (p.path, p.value, p.allowed) for p in fleet_file.value.problems]


def test_a_pool_on_a_shared_ultraserver_group_uses_the_clusters_kueue() -> None:
    pool, cluster = _pool(ULTRA, shared=("ultra",))
    assert cluster.placement is None and cluster.placement_queues == {}
    assert pool.kueue is cluster.kueue   # the cluster's release, installed by the pool's call


def test_an_unknown_shared_node_group_is_refused() -> None:
    with pytest.raises(InvalidSettings) as caught:
        _stack(ULTRA, shared=("nope",))
    [problem] = caught.value.problems
    assert problem.path == "shared_node_groups" and problem.value == ["nope"] and "'ultra'" in problem.allowed


def test_the_reference_stack_shares_the_pools_group_and_watches_the_placement_queues() -> None:
    """stacks/eks_stack.EksTrainingStack: the pool's node group (an UltraServer group on the device plugin) is told to
    the cluster as shared, so the pool builds; another such group gets its placement queue, and the pending alarm
    watches both training ClusterQueues (no synth: the constructs' own attributes)."""
    from neuronfleet.settings.sharing import SharingSettings
    from neuronfleet.settings.training import TrainiumClusterSettings
    from stacks.eks_stack import EksTrainingStack

    app = cdk.App()
    base = AzStack(app, "Net", env=ENV)
    net = network(base, nat_gateways=1)
    pooled = ULTRA.model_copy(update={"name": "pooled"})
    settings = NeuronEksClusterSettings(node_groups=(pooled, ULTRA))
    storage = TrainiumClusterSettings(instance_type="trn2u.48xlarge", count=8, capacity=ULTRA.capacity,
                                      allow_unlisted_region=True)
    sharing = SharingSettings(time_zone="UTC", day=("07:00-23:00",), replica_devices=4, day_replicas=8, night_floor=1,
                              checkpoint_deadline_minutes=30)
    stack = EksTrainingStack(app, "Train", network=net, cluster=settings, storage=storage, sharing=sharing,
                             alerts_topic=sns.Topic(base, "Alerts"), env=ENV)
    assert stack.pool is not None and stack.pool.kueue is stack.cluster.kueue
    assert stack.cluster.placement_queues == {"ultra": "whole-ultraservers-ultra"}
    assert stack.job_alarms is not None
    assert sorted(stack.job_alarms.pending_alarms) == sorted([stack.pool.names["training_queue"],
                                                              "whole-ultraservers-ultra"])
