"""Whole-UltraServer placement at four edges the suite let through (2026-11-29 mutation review):

- a Job given a LocalQueue keeps it, on a device-plugin UltraServer node group too: the example Job of a sharing pool's
  UltraServer group (eks.manifests.examples ``queues``; NeuronEksCluster gives a shared group no placement queue, so
  ``whole-ultraservers-<group>`` would not exist there) is queued on the pool's training queue;
- the placement ClusterQueue preempts nothing: a multi-UltraServer job admitted there is never evicted by a later
  one (Kueue's ``preemption.withinClusterQueue``: Never, LowerPriority or LowerOrNewerEqualPriority, Kueue's CRD
  at v0.19.2, tests/data/kueue; the kit's docstring: "no cohort, no preemption");
- two UltraServer node groups of one instance type get placement objects of their own;
- part of an UltraServer (fewer nodes than one) is refused, as more than one but not whole ones are.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from neuronfleet.eks import manifests as eks_manifests
from neuronfleet.facts.eks_labels import NODE_GROUP_LABEL
from neuronfleet.facts.kueue import QUEUE_LABEL
from neuronfleet.settings.eks import NeuronEksClusterSettings
from tests.unit.test_ultraserver_placement import TRAINING_NS, admission_chain, ultra

KUEUE = Path(__file__).resolve().parents[1] / "data" / "kueue"


def test_the_example_job_of_a_pools_group_is_queued_on_the_pools_queue() -> None:
    group = ultra(12)
    settings = NeuronEksClusterSettings(node_groups=(group,))
    files = eks_manifests.examples(settings, inference_image="example.com/serve@sha256:" + "0" * 64,
                                   queues={group.name: "rainier-training"})
    [job] = [o for o in files["training-job.yaml"] if o["kind"] == "Job"]
    assert job["metadata"]["labels"][QUEUE_LABEL] == "rainier-training"


def _preemption_enum() -> list[str]:
    crd = yaml.safe_load((KUEUE / "kueue.x-k8s.io_clusterqueues.yaml").read_text())
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta2"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    return list(spec["preemption"]["properties"]["withinClusterQueue"]["enum"])


def test_the_placement_queue_preempts_nothing() -> None:
    assert _preemption_enum() == ["Never", "LowerPriority", "LowerOrNewerEqualPriority"]
    [cq] = [o for o in eks_manifests.placement_objects(ultra(12)) if o["kind"] == "ClusterQueue"]
    assert cq["spec"]["preemption"] == {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"}


def test_two_ultraserver_groups_of_one_type_get_queues_of_their_own() -> None:
    """Two device-plugin trn2u.48xlarge groups: no object of one replaces the other's (names are per group), and each
    group's Job reaches a flavor of its own nodes (the model of Kueue's admission, test_ultraserver_placement)."""
    a, b = (ultra(8).model_copy(update={"name": name}) for name in ("ultra-a", "ultra-b"))
    objects = [*eks_manifests.placement_objects(a), *eks_manifests.placement_objects(b)]
    names = [(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects]
    assert len(set(names)) == len(names) == 8
    for group in (a, b):
        reason, flavor = admission_chain(eks_manifests.training_job(group, nodes=8)[-1], objects, TRAINING_NS)
        assert reason == "" and flavor["spec"]["nodeLabels"] == {NODE_GROUP_LABEL: group.name}


def test_part_of_an_ultraserver_is_refused() -> None:
    """Two nodes of a 4-node UltraServer would share it with another job: refused as six nodes are."""
    with pytest.raises(ValueError, match=r"nodes: got 2; allowed: a multiple of 4"):
        eks_manifests.training_job(ultra(4), nodes=2)
