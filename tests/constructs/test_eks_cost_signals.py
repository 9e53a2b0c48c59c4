"""Issue 27: spend and waste of EKS nodes carry the same signals as the Batch path's hosts.

On config/eks.yaml's one synth (the session fixture): every Neuron node group's launch template tags its instances
and volumes with the fleet tag the cost collector groups by, the family tag, the capacity tag the off-reservation
signal reads (the Batch path's ``efa_launch_template`` tags, neuronfleet_contract.tags), and the device-manager tag
by which the waste detector tells a DRA node (no publisher there, on purpose: not measured, not silent); and the
utilisation DaemonSet publishes into the namespace, metric and dimension the fleet's waste detector reads (the Batch host's
publisher, neuronfleet_contract.namespaces)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from neuronfleet import CATALOG
from neuronfleet.node import utilisation
from neuronfleet_contract.namespaces import NEURON_CORE_UTILIZATION, NEURON_NAMESPACE
from neuronfleet_contract.tags import CAPACITY_TAG, DEVICES_TAG, FAMILY_TAG, FLEET_TAG

NODE_GROUPS = {"pretrain": "capacity-block", "ultra": "capacity-block", "tune": "odcr", "serve": "on-demand"}
"""config/eks.yaml's Neuron node groups and their capacity (the entry's own group is named after it)."""
DEVICES = {"pretrain": "device-plugin", "ultra": "dra", "tune": "device-plugin", "serve": "device-plugin"}
"""Their Neuron device manager: the waste detector says a ``dra`` node is not measured rather than silent."""


@pytest.fixture(scope="module")
def eks(synth_fleet) -> Any:
    return synth_fleet("eks")


def _resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r["Properties"] for k, r in template["Resources"].items() if r["Type"] == kind}


def test_every_neuron_node_launches_tagged_for_spend_and_waste(eks) -> None:
    template = eks.template_json("train-pretrain")
    templates = _resources(template, "AWS::EC2::LaunchTemplate")
    groups = {p["Labels"]["neuronfleet/node-group"]: p for p in _resources(template, "AWS::EKS::Nodegroup").values()
              if "neuronfleet/node-group" in p.get("Labels", {})}
    assert sorted(groups) == sorted(NODE_GROUPS)
    cluster = eks.stacks["train-pretrain"].cluster
    for name, group in groups.items():
        data = templates[group["LaunchTemplate"]["Id"]["Ref"]]["LaunchTemplateData"]
        specs = {s["ResourceType"]: {t["Key"]: t["Value"] for t in s["Tags"]} for s in data["TagSpecifications"]}
        assert set(specs) >= {"instance", "volume"}, name
        family = CATALOG.get(next(g.instance_type for g in cluster.settings.node_groups if g.name == name)).family
        for kind in ("instance", "volume"):
            tags = specs[kind]
            assert tags[FLEET_TAG] == "nf-eks", (name, kind)
            assert tags[FAMILY_TAG] == family, (name, kind)
            assert tags[CAPACITY_TAG] == NODE_GROUPS[name], (name, kind)
            assert tags[DEVICES_TAG] == DEVICES[name], (name, kind)


def test_utilisation_daemonsets_publish_what_the_waste_detector_reads(eks) -> None:
    manifests = [json.loads(p["Manifest"]) for p in _resources(
        eks.template_json("train-pretrain"), "Custom::AWSCDK-EKS-KubernetesResource").values()
        if isinstance(p["Manifest"], str)]
    daemonsets = {o["metadata"]["name"]: o for m in manifests for o in m if o["kind"] == "DaemonSet"
                  and o["metadata"]["name"].startswith("neuronfleet-utilisation-")}
    # one per node group but those on the DRA driver (ultra): Neuron Monitor does not support DRA (eks.manifests
    # utilisation_publisher; docs/eks.md, the Utilisation row), so the waste detector hears nothing from those nodes
    published = [g.name for g in eks.stacks["train-pretrain"].cluster.settings.node_groups if not g.dra]
    assert sorted(published) == ["pretrain", "serve", "tune"]
    assert sorted(daemonsets) == sorted(f"neuronfleet-utilisation-{g}" for g in published)
    commands = [o["spec"]["template"]["spec"]["containers"][0]["command"][2] for o in daemonsets.values()]
    assert all(f"python3 /tmp/neuronfleet/utilisation.py --namespace {NEURON_NAMESPACE} " in c for c in commands)
    # the publisher's own metric name and dimension (the Batch hosts run the same script)
    assert utilisation.METRIC == NEURON_CORE_UTILIZATION
    point = utilisation.datum("i-0abc", [40.0, 44.0], at=0)
    assert (point["MetricName"], point["Dimensions"]) == (NEURON_CORE_UTILIZATION, [{"Name": "InstanceId",
                                                                                     "Value": "i-0abc"}])
    waste = [p["Environment"]["Variables"] for p in _resources(eks.template_json("cost"), "AWS::Lambda::Function").values()
             if "NEURON_NAMESPACE" in p.get("Environment", {}).get("Variables", {})]
    assert waste, "the eks fleet's waste detector"
    assert all(v["NEURON_NAMESPACE"] == NEURON_NAMESPACE and v["UTILIZATION_METRIC"] == NEURON_CORE_UTILIZATION
               for v in waste)
