"""``neuronfleet eks examples`` says, before anything is submitted, what placement relies on and nothing confirms:
on a DRA UltraServer node group (config/eks.yaml's ``ultra``) the UltraServer label's source, with the one kubectl
command that shows it (docs/checks.md ``ultraserver-label``); for node groups where the label is the device plugin's,
nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuronfleet.cli.main import main
from neuronfleet.eks import manifests
from neuronfleet.facts.eks_labels import ULTRASERVER_LABEL_CHECK
from neuronfleet.settings import Capacity
from neuronfleet.settings.eks import NeuronEksClusterSettings, NeuronNodegroupSettings

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = "arn:aws:resource-groups:us-east-2:111111111111:group/u"
COMMAND = "kubectl get nodes -l neuronfleet/node-group=ultra -L neuron.amazonaws.com/ultraserver-server-id-4"


def test_the_command_names_the_check_for_the_dra_ultraserver_group(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eks", "examples", "-c", str(ROOT / "config" / "eks.yaml"), "-o", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    [check] = out["checks"]
    assert COMMAND in check and "ultra (DRA)" in check and "never admitted" in check
    assert main(["eks", "examples", "-c", str(ROOT / "config" / "eks.yaml"), "-o", str(tmp_path)]) == 0
    assert "check: node group ultra (DRA)" in capsys.readouterr().out


def test_only_dra_ultraserver_groups_get_the_check() -> None:
    def group(**kw: object) -> NeuronNodegroupSettings:
        return NeuronNodegroupSettings(name="ultra", instance_type="trn2u.48xlarge", count=4,
                                       capacity=Capacity.capacity_block(resource_group_arn=BLOCKS), **kw)

    assert manifests.placement_notes(NeuronEksClusterSettings(node_groups=[group()])) == []  # the device plugin's
    trn1 = NeuronNodegroupSettings(name="t", instance_type="trn1.32xlarge", count=2)
    assert manifests.placement_notes(NeuronEksClusterSettings(node_groups=[trn1])) == []
    [note] = manifests.placement_notes(NeuronEksClusterSettings(node_groups=[group(dra=True, device_plugin=False)]))
    assert ULTRASERVER_LABEL_CHECK.format(group="ultra", label="neuron.amazonaws.com/ultraserver-server-id-4") in note
