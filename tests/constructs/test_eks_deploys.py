"""A fleet that deploys and nodes that repair (issue 40), on construct-level stacks: the Neuron chart as one release per
device manager (never the DRA driver beside the device plugin or the scheduler extension in one release), every key
the kit writes one the pinned chart's own values.yaml shows, the scheduler extension off unless asked and then on the
cluster's minor, the problem detector off by default (on: its namespace created before the chart and a Pod Identity
role bound to ``NeuronHealthCheck``), node auto repair on every node group and the node monitoring agent add-on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk.assertions import Template

from neuronfleet import InvalidSettings
from neuronfleet.eks import NeuronEksCluster
from neuronfleet.eks.manifests import (
    NEURON_RELEASE,
    chart_namespaces,
    neuron_chart_releases,
    neuron_chart_values,
    neuron_dra_chart_values,
)
from neuronfleet.facts import eks_pins as pins
from neuronfleet.facts.eks_labels import DEVICES_LABEL
from neuronfleet.settings.eks import NeuronEksClusterSettings
from tests.conftest import ENV, AzStack, network, properties

DATA = Path(__file__).resolve().parents[1] / "data" / "eks"
BLOCKS = "arn:aws:resource-groups:us-east-2:444444444444:group/nf-eks-trn2u-blocks"
PLUGIN_GROUP = {"name": "tune", "instance_type": "trn1.32xlarge", "count": 1}
DRA_GROUP = {"name": "ultra", "instance_type": "trn2u.48xlarge", "count": 4, "dra": True, "device_plugin": False,
             "allow_unlisted_region": True, "availability_zones": ["us-east-2a"],
             "capacity": {"type": "capacity-block", "resource_group_arn": BLOCKS, "availability_zone": "us-east-2a"}}
TAG = "v1.36.2-eks-1-36-9"


def _settings(*groups: dict[str, Any], **fields: Any) -> NeuronEksClusterSettings:
    return NeuronEksClusterSettings(node_groups=list(groups), **fields)  # type: ignore[arg-type]


def _build(settings: NeuronEksClusterSettings) -> tuple[NeuronEksCluster, Template]:
    app = cdk.App()
    stack = AzStack(app, "S", env=ENV)
    net = network(stack)
    cluster = NeuronEksCluster(stack, "Eks", vpc=net.vpc, settings=settings, vpc_subnets=net.compute_subnets)
    return cluster, Template.from_stack(stack)


@pytest.fixture(scope="module")
def mixed() -> tuple[NeuronEksCluster, Template]:
    """A device-plugin group and a DRA UltraServer group, the problem detector on."""
    return _build(_settings(PLUGIN_GROUP, DRA_GROUP, problem_detector=True))


def _neuron_releases(template: Template) -> dict[str, dict[str, Any]]:
    return {p["Release"]: json.loads(p["Values"]) for p in properties(template, "Custom::AWSCDK-EKS-HelmChart").values()
            if p["Chart"] == "neuron-helm-chart"}


def _published() -> dict[str, Any]:
    return yaml.safe_load((DATA / "neuron-helm-chart-1.9.0-values.yaml").read_text())


def _paths(values: Any, at: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every leaf path of ``values`` (a dict's keys, down to a value that is not a dict)."""
    if not isinstance(values, dict) or not values:
        return {at}
    return {p for k, v in values.items() for p in _paths(v, (*at, k))}


def _shown(published: dict[str, Any], path: tuple[str, ...]) -> bool:
    """``path`` is a key the publisher's values.yaml shows (a leaf under an empty map, such as ``nodeSelector: {}``,
    counts: that map is where the chart reads the user's entries)."""
    node: Any = published
    for key in path:
        if not isinstance(node, dict):
            return False
        if key not in node:
            return node == {}
        node = node[key]
    return True


# ---------------------------------------------------------------------------------------------- the chart pin


def test_the_pinned_neuron_chart_is_the_publishers_1_9_0() -> None:
    chart = yaml.safe_load((DATA / "neuron-helm-chart-1.9.0-Chart.yaml").read_text())
    pin = pins.CHARTS[pins.NEURON_CHART][pins.DEFAULT_CHART_VERSIONS[pins.NEURON_CHART]]
    assert (chart["name"], chart["version"], chart["appVersion"]) == (pin.chart, pin.version, pin.app_version)
    assert pin.confirmed is True and "b77a6f90bb00dc0ee57d21e35e275b05e26b79c1" in pin.source
    assert pin.as_of.isoformat() == "2026-11-29"
    assert set(pins.CHARTS[pins.NEURON_CHART]) == {"1.9.0"}  # 1.10.0: no publisher file, not offered
    published = _published()
    assert tuple(published) == pins.NEURON_CHART_KEYS
    # the facts the kit's values lean on, as the publisher's file gives them
    assert published["draDriver"]["enabled"] is False and published["devicePlugin"]["enabled"] is True
    assert published["scheduler"]["enabled"] is False and published["npd"]["enabled"] is True
    assert published["npd"]["namespaceOverride"] == pins.NPD_NAMESPACE
    assert published["npd"]["serviceAccount"]["name"] == pins.NPD_SERVICE_ACCOUNT
    assert published["draDriver"]["namespaceOverride"] == pins.DRA_DRIVER_NAMESPACE
    assert published["devicePlugin"]["namespaceOverride"] == "kube-system"
    assert published["scheduler"]["customScheduler"]["image"]["repository"] == pins.KUBE_SCHEDULER_IMAGE
    assert published["scheduler"]["customScheduler"]["image"]["tag"] == "v1.31.12-eks-1-31-30"
    assert published["npd"]["nodeRecovery"]["enabled"] is False  # monitor only: the kit never turns it on


@pytest.mark.parametrize("fields", [{}, {"problem_detector": True}, {"scheduler_extension": True,
                                                                    "kube_scheduler_tag": TAG}])
def test_every_key_the_kit_writes_is_one_the_publishers_values_show(fields: dict[str, Any]) -> None:
    published = _published()
    for values in neuron_chart_releases(_settings(PLUGIN_GROUP, DRA_GROUP, **fields)).values():
        for path in _paths(values):
            assert _shown(published, path), path
    # and the check itself refuses a key the file does not show (a misspelt one, which Helm would ignore silently)
    assert not _shown(published, ("draDriver", "enable"))
    assert not _shown(published, ("scheduler", "customScheduler", "image", "version"))


# ---------------------------------------------------------------------------------------------- two releases


def test_two_releases_never_the_dra_driver_with_the_plugin_or_the_scheduler(mixed) -> None:
    _, template = mixed
    releases = _neuron_releases(template)
    assert sorted(releases) == sorted([NEURON_RELEASE, pins.NEURON_DRA_RELEASE])
    for values in releases.values():
        # the chart's validateConfig (_helpers.tpl @ cea92c38): DRA and the scheduler fail; from 1.8.0 DRA skips the
        # device plugin and the problem detector for the whole release
        if values["draDriver"]["enabled"]:
            assert not values["devicePlugin"]["enabled"] and not values["scheduler"]["enabled"]
            assert not values["npd"]["enabled"]
    plugin, dra = releases[NEURON_RELEASE], releases[pins.NEURON_DRA_RELEASE]
    assert plugin["devicePlugin"] == {"enabled": True, "nodeSelector": {DEVICES_LABEL: "device-plugin"}}
    assert dra == {"draDriver": {"enabled": True, "nodeSelector": {DEVICES_LABEL: "dra"}},
                   "devicePlugin": {"enabled": False}, "scheduler": {"enabled": False}, "npd": {"enabled": False}}
    # each release on its own node groups: the selectors are the labels the node groups carry
    labels = {p["Labels"]["neuronfleet/node-group"]: p["Labels"][DEVICES_LABEL]
              for p in properties(template, "AWS::EKS::Nodegroup").values() if "Labels" in p}
    assert labels == {"tune": "device-plugin", "ultra": "dra"}
    assert all(p["Namespace"] == "kube-system" for p in properties(template, "Custom::AWSCDK-EKS-HelmChart").values())


def test_a_cluster_of_one_kind_has_one_release() -> None:
    assert list(neuron_chart_releases(_settings(PLUGIN_GROUP))) == [NEURON_RELEASE]
    assert list(neuron_chart_releases(_settings(DRA_GROUP))) == [pins.NEURON_DRA_RELEASE]
    assert neuron_dra_chart_values()["scheduler"] == {"enabled": False}


# ------------------------------------------------------------------------------------ the scheduler extension


def test_scheduler_extension_off_by_default_and_on_the_clusters_minor_when_asked() -> None:
    assert neuron_chart_values(_settings(PLUGIN_GROUP))["scheduler"] == {"enabled": False}
    values = neuron_chart_values(_settings(PLUGIN_GROUP, scheduler_extension=True, kube_scheduler_tag=TAG))
    assert values["scheduler"] == {"enabled": True, "customScheduler": {"image": {"tag": TAG}}}


@pytest.mark.parametrize(("groups", "fields", "path", "words"), [
    ((PLUGIN_GROUP,), {"scheduler_extension": True}, "scheduler_extension", "no eks-distro kube-scheduler tag"),
    ((PLUGIN_GROUP,), {"scheduler_extension": True, "kube_scheduler_tag": "v1.31.12-eks-1-31-30"},
     "kube_scheduler_tag", "minor 1.36"),
    ((PLUGIN_GROUP,), {"kube_scheduler_tag": TAG}, "kube_scheduler_tag", "scheduler_extension is false"),
    ((DRA_GROUP,), {"scheduler_extension": True, "kube_scheduler_tag": TAG}, "scheduler_extension",
     "needs Neuron's device plugin"),
])
def test_scheduler_extension_refused_without_a_tag_of_the_minor_or_a_device_plugin(
        groups: tuple[dict[str, Any], ...], fields: dict[str, Any], path: str, words: str) -> None:
    with pytest.raises(InvalidSettings) as err:
        _settings(*groups, **fields)
    assert [p.path for p in err.value.problems] == [path]
    assert words in err.value.problems[0].allowed


# --------------------------------------------------------------------------------------- the problem detector


def test_problem_detector_off_by_default_and_no_namespace_made() -> None:
    settings = _settings(PLUGIN_GROUP)
    assert neuron_chart_values(settings)["npd"] == {"enabled": False} and chart_namespaces(settings) == []
    cluster, template = _build(settings)
    assert cluster.problem_detector_role is None
    assert not properties(template, "AWS::EKS::PodIdentityAssociation").keys() & {"ProblemDetectorPodIdentity"}
    assert all(a["Namespace"] != pins.NPD_NAMESPACE
               for a in properties(template, "AWS::EKS::PodIdentityAssociation").values())


def test_problem_detector_namespace_and_role_come_before_the_chart(mixed) -> None:
    _, template = mixed
    resources = template.to_json()["Resources"]
    [chart_id] = [k for k, r in resources.items() if r["Type"] == "Custom::AWSCDK-EKS-HelmChart"
                  and r["Properties"]["Release"] == NEURON_RELEASE]
    [(ns_id, ns)] = [(k, r) for k, r in resources.items() if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
                     and pins.NPD_NAMESPACE in json.dumps(r["Properties"]["Manifest"])]
    [namespace] = json.loads(ns["Properties"]["Manifest"])
    assert (namespace["kind"], namespace["metadata"]["name"]) == ("Namespace", pins.NPD_NAMESPACE)
    [(assoc_id, assoc)] = [(k, r) for k, r in resources.items() if r["Type"] == "AWS::EKS::PodIdentityAssociation"
                           and r["Properties"]["Namespace"] == pins.NPD_NAMESPACE]
    assert assoc["Properties"]["ServiceAccount"] == pins.NPD_SERVICE_ACCOUNT
    assert {ns_id, assoc_id} <= set(resources[chart_id]["DependsOn"])
    assert ns_id in assoc.get("DependsOn", [])
    # the detector runs on the device-plugin node groups only (the DRA release has none)
    assert _neuron_releases(template)[NEURON_RELEASE]["npd"] == {
        "enabled": True, "nodeSelector": {DEVICES_LABEL: "device-plugin"}}
    # its role: worn only by its service account in its namespace, metrics into NeuronHealthCheck only
    role = resources[assoc["Properties"]["RoleArn"]["Fn::GetAtt"][0]]["Properties"]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(trust["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    assert trust["Condition"] == {"StringEquals": {"aws:RequestTag/kubernetes-namespace": pins.NPD_NAMESPACE,
                                                   "aws:RequestTag/kubernetes-service-account": "node-problem-detector"}}
    role_id = assoc["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    statements = [s for p in properties(template, "AWS::IAM::Policy").values()
                  if {"Ref": role_id} in p["Roles"] for s in p["PolicyDocument"]["Statement"]]
    assert statements == [{"Action": "cloudwatch:PutMetricData", "Effect": "Allow", "Resource": "*",
                           "Condition": {"StringEquals": {"cloudwatch:namespace": "NeuronHealthCheck"}}}]


# ------------------------------------------------------------------------------------------ nodes that repair


def test_auto_repair_on_every_node_group_and_the_monitoring_agent_pinned(mixed) -> None:
    _, template = mixed
    groups = properties(template, "AWS::EKS::Nodegroup")
    assert len(groups) == 3  # the system group, tune, ultra
    assert all(p.get("NodeRepairConfig") == {"Enabled": True} for p in groups.values()), groups
    addons = [p for p in properties(template, "AWS::EKS::Addon").values()
              if p["AddonName"] == "eks-node-monitoring-agent"]
    assert [a["AddonVersion"] for a in addons] == [pins.NODE_MONITORING_AGENT.version]
    # a loud pin: unconfirmed, and it says where to check
    assert pins.NODE_MONITORING_AGENT.confirmed is False
    assert "describe-addon-versions" in pins.NODE_MONITORING_AGENT.source
    # the version is one a source shows on Kubernetes 1.36, named with its commit
    assert pins.NODE_MONITORING_AGENT.version == "v1.7.0-eksbuild.1"
    assert ("0a0278d907aa941c0774c2d01baabe552b6b5a1e (2026-08-21): eks_cluster_version 1.36 and eks_node_monitoring_agent "
            f"{pins.NODE_MONITORING_AGENT.version}") in pins.NODE_MONITORING_AGENT.source
