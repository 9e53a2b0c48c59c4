"""The pool's training queue can borrow every resource its example Job asks for, not only Neuron devices (2026-11-29
mutation review: a lendingLimit written on every resource, the Neuron lend in cpu and memory, passed the suite, whose
model of Kueue's quota reads the Neuron devices only). Kueue admits a workload only if every resource it requests is
covered (site/content/en/docs/tasks/manage/administer_cluster_quotas.md @ v0.19.2), so each resource is run through the
model of Kueue's cohort quota in tests/unit/test_kueue_model.py (resource_node.go: a ClusterQueue keeps nominal less
its lendingLimit, the cohort holds the rest; no lendingLimit lends it all)."""

from __future__ import annotations

import pytest

from neuronfleet.eks.manifests import node_group_quota
from neuronfleet.sharing import manifests
from tests.unit.test_kueue_model import CQ, GROUP, SCHEDULE, Cohort


def _amount(value: int | str) -> int:
    text = str(value)
    return int(text[:-2]) if text.endswith("Gi") else int(text)


def _cohort(resource: str) -> Cohort:
    queues = {}
    for q in (o for o in manifests.kueue_objects(SCHEDULE, GROUP) if o["kind"] == "ClusterQueue"):
        [item] = [r for r in q["spec"]["resourceGroups"][0]["flavors"][0]["resources"] if r["name"] == resource]
        role = q["metadata"]["name"].rsplit("-", 1)[1]
        lending = item.get("lendingLimit")
        queues[role] = CQ(role, _amount(item["nominalQuota"]), item.get("borrowingLimit"),
                          None if lending is None else _amount(lending))
    return Cohort(queues)


@pytest.mark.parametrize("resource", list(node_group_quota(GROUP)))
def test_the_training_queue_can_borrow_what_its_job_asks_for(resource: str) -> None:
    job = manifests.training_job(SCHEDULE, GROUP)[-1]["spec"]
    asked = _amount(job["template"]["spec"]["containers"][0]["resources"]["requests"][resource]) * job["parallelism"]
    assert asked > 0
    assert _cohort(resource).available("training") >= asked
