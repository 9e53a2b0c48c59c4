"""Whole-UltraServer placement at two edges the suite let through (2026-11-29 mutation review):

- a Job given a LocalQueue keeps it, on a device-plugin UltraServer node group too: the example Job of a sharing pool's
  UltraServer group (eks.manifests.examples ``queues``; NeuronEksCluster gives a shared group no placement queue, so
  ``whole-ultraservers-<group>`` would not exist there) is queued on the pool's training queue;
- the placement ClusterQueue preempts nothing: a multi-UltraServer job admitted there is never evicted by a later
  one (Kueue's ``preemption.withinClusterQueue``: Never, LowerPriority or LowerOrNewerEqualPriority, Kueue's CRD
  at v0.19.2, tests/data/kueue; the kit's docstring: "no cohort, no preemption").
"""

from __future__ import annotations

from pathlib import Path

import yaml

from neuronfleet.eks import manifests as eks_manifests
from neuronfleet.facts.kueue import QUEUE_LABEL
from neuronfleet.settings.eks import NeuronEksClusterSettings
from tests.unit.test_ultraserver_placement import ultra

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
