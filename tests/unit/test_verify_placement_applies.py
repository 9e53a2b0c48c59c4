"""``ultraserver-placement`` applies only to a fleet with a placement queue (found 2026-11-29 in the mutation review:
the check applied to every EKS fleet, so on config/eks.yaml, whose one UltraServer node group is on Neuron's DRA
driver and gets no placement queue, verify asked the user to look for workloads on ``whole-ultraservers-<group>``, a
queue that fleet does not have). The rule is NeuronEksCluster's: an UltraServer node group on the device plugin that
no sharing pool shares (eks.manifests.places_whole_ultraservers; stacks/fleet.py shares the pool's node group)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from neuronfleet import load_fleet
from neuronfleet.verify import applies
from neuronfleet.verify.kubernetes import ULTRASERVER_PLACEMENT

ROOT = Path(__file__).resolve().parents[2]


def _fleet(tmp_path: Path, change: Any) -> Any:
    doc = yaml.safe_load((ROOT / "config" / "eks.yaml").read_text())
    change(doc)
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_fleet(path)


def _eks(tmp_path: Path, change: Any) -> Any:
    return _fleet(tmp_path, lambda doc: change(doc["training_clusters"][0]["eks"]))


def _device_plugin(eks: dict[str, Any]) -> None:
    for group in eks["node_groups"]:
        group.pop("dra", None)
        group.pop("device_plugin", None)


def test_the_eks_fleets_dra_ultraserver_group_has_no_placement_queue() -> None:
    assert ULTRASERVER_PLACEMENT.applies is applies.placement
    assert applies.placement(load_fleet(ROOT / "config" / "eks.yaml")).startswith("no EKS node group has a placement")
    assert applies.placement(load_fleet(ROOT / "config" / "dev.yaml")) != ""   # no EKS at all


def test_a_device_plugin_ultraserver_group_has_one(tmp_path: Path) -> None:
    assert applies.placement(_eks(tmp_path, _device_plugin)) == ""


def test_an_ultraserver_group_a_pool_shares_has_none(tmp_path: Path) -> None:
    """The pool on the entry's own node group, made two UltraServers (8 x trn2u.48xlarge) on the device plugin, the
    DRA UltraServer group left as it is: the pool's queues place the shared group's jobs, no placement queue."""
    def change(doc: dict[str, Any]) -> None:
        entry = doc["training_clusters"][0]
        entry.update(instance_type="trn2u.48xlarge", count=8, allow_unlisted_region=True)
        entry["capacity"] = {"type": "capacity-block", "availability_zone": "us-east-2a", "resource_group_arn":
                             "arn:aws:resource-groups:us-east-2:444444444444:group/nf-eks-pretrain-blocks"}

    fleet = _fleet(tmp_path, change)
    assert fleet.training_clusters[0].eks.sharing is not None
    assert applies.placement(fleet) != ""
    assert applies.placement(_fleet(tmp_path, lambda doc: (change(doc), doc["training_clusters"][0]["eks"].pop(
        "sharing")))) == ""   # the same group unshared gets one
