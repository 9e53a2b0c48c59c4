"""``cloudwatch-addon`` at its edges, each a hand-made bug the check's own tests let through (2026-11-29 mutation
review): a version that differs in its EKS build only, every DescribeAddon status but ACTIVE (botocore 1.44.5's eks
``AddonStatus`` enum, as installed), and a fleet whose DRA node group is the entry's own (``eks.dra: true``), not one of
``eks.node_groups``; ListMetrics refused; no cluster yet."""

from __future__ import annotations

from pathlib import Path

import botocore.session
import pytest
import yaml

from neuronfleet import load_fleet
from neuronfleet.facts import eks_observability as facts
from neuronfleet.preflight.checks import Failed
from neuronfleet.verify import kubernetes
from neuronfleet.verify.kubernetes import addon_pinned
from tests.unit.test_verify_checks import Reads, run
from tests.unit.test_verify_cloudwatch_addon import CLUSTER, NODE_SERIES, PIN, described, pinned

ROOT = Path(__file__).resolve().parents[2]


def test_another_eks_build_of_the_same_release_is_another_version() -> None:
    """EKS add-on versions are ``v<release>-eksbuild.<n>`` (the AWS CLI example's v1.16.4-eksbuild.2): a build other
    than the pinned one is not the pin."""
    release, build = PIN.rsplit(".", 1)
    other = f"{release}.{int(build) + 1}"
    addon = described(addonName=facts.CLOUDWATCH_ADDON, addonVersion=other)
    finding = addon_pinned({CLUSTER: addon}, NODE_SERIES, dra=False)
    assert finding.outcome == "broken" and finding.seen == f"{CLUSTER} runs {other}, the kit pins {PIN}"


def _statuses() -> list[str]:
    model = botocore.session.get_session().get_service_model("eks")
    return list(model.shape_for("AddonStatus").enum)


def test_the_statuses_are_botocores() -> None:
    assert _statuses() == ["CREATING", "ACTIVE", "CREATE_FAILED", "UPDATING", "DELETING", "DELETE_FAILED",
                           "DEGRADED", "UPDATE_FAILED"]


@pytest.mark.parametrize("status", [s for s in _statuses() if s != "ACTIVE"])
def test_every_status_but_active_is_broken(status: str) -> None:
    """An add-on still CREATING or UPDATING (or being deleted) is not the pinned add-on at work yet: never holds."""
    finding = addon_pinned({CLUSTER: pinned(status=status, health={"issues": []})}, NODE_SERIES, dra=False)
    assert finding.outcome == "broken" and finding.seen.startswith(f"{CLUSTER}: {status}")


def test_the_entrys_own_dra_node_group_leaves_the_per_pod_part_to_the_user(tmp_path: Path) -> None:
    """config/eks.yaml with its DRA node group moved to the entry itself (``eks.dra: true``; the other node groups on
    the device plugin, no pool): the fleet still has DRA nodes, so the check cannot hold on node metrics alone."""
    doc = yaml.safe_load((ROOT / "config" / "eks.yaml").read_text())
    eks = doc["training_clusters"][0]["eks"]
    eks.pop("sharing")
    for group in eks["node_groups"]:
        group.pop("dra", None)
        group.pop("device_plugin", None)
    eks["dra"] = True
    path = tmp_path / "entry-dra.yaml"
    path.write_text(yaml.safe_dump(doc))
    fleet = load_fleet(path)
    assert not any(g.dra for c in fleet.training_clusters if c.eks for g in c.eks.node_groups)
    assert kubernetes._uses_dra(fleet)


def test_unreadable_metrics_are_unchecked_naming_the_permission() -> None:
    """ListMetrics refused: the check cannot say whether the Neuron metric is published (never "not yet, run it
    again": that would send the user to wait for a metric verify may not read)."""
    denied = Failed("AccessDenied", "not authorized to perform: cloudwatch:ListMetrics")
    finding = run("cloudwatch-addon", Reads(eks_clusters=[CLUSTER], eks_addon=pinned(), metrics=denied), "eks")
    assert finding.outcome == "unchecked" and "cloudwatch:ListMetrics" in finding.fix


def test_no_cluster_reads_no_metrics() -> None:
    reads = Reads(eks_clusters=[])
    assert run("cloudwatch-addon", reads, "eks").outcome == "not yet"
    assert reads.calls == [("eks_clusters", {})]
