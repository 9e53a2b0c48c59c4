"""Kueue's chart rendered offline as NeuronEksCluster installs it (issue 40: "every chart's rendered objects checked
offline where the chart's source can be had"): ``helm template`` with the helm 4.2.3 of the pinned kubectl layer
(the ``helm`` fixture of tests/constructs/test_neuron_chart_render.py: taken from the installed package, nothing
downloaded) on the chart tree vendored whole at the pinned 0.19.2 (tests/data/eks/kueue-0.19.2, its git tree id in
tests/data/eks/README.md, recomputed by tests/constructs/test_eks_facts.py), release ``kueue`` in ``kueue-system``
with no values (the kit passes none: ``NeuronEksCluster.install_kueue``, which SharingPool uses too).

What it proves: every object the chart renders validates against the Kubernetes 1.36 schemas (strict), and every
namespaced one lands in ``kueue-system`` (which the release creates: tests/constructs/test_eks_namespaces.py) or in
``kube-system`` (the visibility server's auth-reader RoleBinding, which Kueue's values say "is always created in the
kube-system namespace"); its CRDs serve the API the kit writes its queues in; the metrics Service the kit's scraper
reads is there. What it does not: the chart the registry serves names the released controller image
(``registry.k8s.io/kueue/kueue:v0.19.2``, set at packaging: ``facts.kueue.KUEUE_IMAGE``, held here to the release's
packaging script), this tree the staging one; the objects are the same otherwise (tests/data/eks/README.md)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from neuronfleet.facts.eks_observability import KUEUE_METRICS_PORT, KUEUE_METRICS_SERVICE
from neuronfleet.facts.eks_pins import DEFAULT_KUBERNETES_VERSION
from neuronfleet.facts.kueue import KUEUE_API, KUEUE_IMAGE, KUEUE_NAMESPACE, KUEUE_VERSION
from tests.constructs.test_neuron_chart_render import helm  # noqa: F401  (the fixture: the layer's helm)

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
TREE = DATA / "eks" / f"kueue-{KUEUE_VERSION}"
RELEASE = "kueue"
NOT_NAMESPACED = {"APIService", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                  "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
"""Cluster-scoped kinds the chart renders (its webhook configurations carry a namespace the API server ignores)."""
QUEUE_KINDS = {"Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
"""The Kueue kinds the kit writes (eks.manifests.placement_objects, sharing.manifests.kueue_objects)."""


@pytest.fixture(scope="module")
def rendered(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:  # noqa: F811
    home = tmp_path_factory.mktemp("kueue-helm")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "HELM_CACHE_HOME": str(home / "cache"),
           "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data")}
    done = subprocess.run([str(helm), "template", RELEASE, str(TREE), "--namespace", KUEUE_NAMESPACE,
                           "--kube-version", f"{DEFAULT_KUBERNETES_VERSION}.0"],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def landing(obj: dict[str, Any]) -> str | None:
    """The namespace a rendered object lands in (helm leaves none on some: the release's), None if cluster-scoped."""
    if obj["kind"] in NOT_NAMESPACED:
        return None
    return str(obj["metadata"].get("namespace") or KUEUE_NAMESPACE)


def misplaced(objects: list[dict[str, Any]], existing: set[str]) -> list[tuple[str, str, str]]:
    return [(o["kind"], o["metadata"]["name"], ns) for o in objects
            if (ns := landing(o)) is not None and ns not in existing]


def test_the_tree_is_the_pinned_release() -> None:
    chart = yaml.safe_load((TREE / "Chart.yaml").read_text())
    assert (chart["name"], chart["version"], chart["appVersion"]) == ("kueue", KUEUE_VERSION, f"v{KUEUE_VERSION}")


def test_every_object_validates_against_kubernetes_1_36(rendered: list[dict[str, Any]]) -> None:
    for obj in rendered:
        kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)
    assert {"Deployment", "CustomResourceDefinition", "Service"} <= {o["kind"] for o in rendered}


def test_every_object_lands_in_kueues_namespace_or_kube_system(rendered: list[dict[str, Any]]) -> None:
    assert misplaced(rendered, {KUEUE_NAMESPACE, "kube-system"}) == []
    # the one object outside Kueue's own namespace
    assert [(k, n) for k, n, ns in misplaced(rendered, {KUEUE_NAMESPACE})] == [
        ("RoleBinding", "kueue-visibility-server-auth-reader")]
    # the check is live: without the release's namespace, Kueue's controller is named
    assert ("Deployment", "kueue-controller-manager", KUEUE_NAMESPACE) in misplaced(rendered, {"kube-system"})


def test_its_crds_serve_the_api_the_kit_writes(rendered: list[dict[str, Any]]) -> None:
    group, version = KUEUE_API.split("/")
    served = {c["spec"]["names"]["kind"]: {v["name"] for v in c["spec"]["versions"] if v["served"]}
              for c in rendered if c["kind"] == "CustomResourceDefinition" and c["spec"]["group"] == group}
    assert set(served) >= QUEUE_KINDS and all(version in served[k] for k in QUEUE_KINDS)


def test_the_metrics_service_the_scraper_reads_is_there(rendered: list[dict[str, Any]]) -> None:
    [service] = [o for o in rendered if o["kind"] == "Service" and o["metadata"]["name"] == KUEUE_METRICS_SERVICE]
    assert landing(service) == KUEUE_NAMESPACE
    assert KUEUE_METRICS_PORT in {p["name"] for p in service["spec"]["ports"]}


def test_the_registrys_chart_runs_the_released_controller_image(rendered: list[dict[str, Any]]) -> None:
    """KUEUE_IMAGE is what the release's packaging writes into the chart for the pinned tag, at the values path the
    controller's Deployment reads (the tree itself names the staging image there)."""
    script = (DATA / "kueue" / "helm-chart-package.sh").read_text()
    registry = re.search(r'^readonly k8s_registry="([^"]+)"$', script, re.M)
    promoted = re.search(r"^readonly promoted_version_regex='([^']+)'$", script, re.M)
    assert registry and promoted and re.match(promoted.group(1), f"v{KUEUE_VERSION}")
    assert ('.controllerManager.manager.image.repository = \\"${IMAGE_REGISTRY}/kueue\\" | '
            '.controllerManager.manager.image.tag = \\"${GIT_TAG}\\"') in script
    assert f"{registry.group(1)}/kueue:v{KUEUE_VERSION}" == KUEUE_IMAGE
    values = yaml.safe_load((TREE / "values.yaml").read_text())["controllerManager"]["manager"]["image"]
    [manager] = [o for o in rendered if o["kind"] == "Deployment"]
    images = {c["image"] for c in manager["spec"]["template"]["spec"]["containers"]}
    assert images == {f"{values['repository']}:{values['tag']}"} and KUEUE_IMAGE not in images
