"""The EKS path's facts, each against its source: aws-cdk-lib 2.275.0's aws_eks_v2 as installed, the kubectl layer
package, botocore 1.44.5's eks model, and the chart publishers' own files (tests/data/eks, copied verbatim)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import re
from pathlib import Path

import botocore.session
import pytest
import yaml
from aws_cdk import aws_eks_v2 as eks

from neuronfleet.eks.manifests import NEURON_SCHEDULER, efa_chart_values, fsx_csi_chart_values, neuron_chart_values
from neuronfleet.facts import eks_labels as labels
from neuronfleet.facts import eks_pins as pins
from neuronfleet.settings.eks import NeuronEksClusterSettings

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "eks"


def _blob(path: Path) -> str:
    body = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()


def _load(name: str) -> dict:
    return yaml.safe_load((DATA / name).read_text())


@pytest.fixture(scope="module")
def eks_model():
    return botocore.session.get_session().get_service_model("eks")


def _tree(path: Path) -> str:
    """The git tree id of a directory (files mode 100644, subdirectories 40000), as ``git rev-parse <commit>:<dir>``."""
    entries = []
    for child in path.iterdir():
        if child.is_dir():
            entries.append((child.name + "/", b"40000 " + child.name.encode() + b"\0" + bytes.fromhex(_tree(child))))
        else:
            entries.append((child.name, b"100644 " + child.name.encode() + b"\0" + bytes.fromhex(_blob(child))))
    body = b"".join(e for _, e in sorted(entries))
    return hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()


def test_copies_are_verbatim() -> None:
    rows = re.findall(r"^\| `([^`]+)` \| .* \| ([0-9a-f]{40}) \|$", (DATA / "README.md").read_text(), re.M)
    assert len(rows) == len([p for p in DATA.iterdir() if p.name != "README.md"]) == 21
    for name, blob in rows:
        assert (_tree if (DATA / name).is_dir() else _blob)(DATA / name) == blob, name


# ------------------------------------------------------------------------------------- Kubernetes and kubectl


def test_pinned_version_is_the_newest_aws_eks_v2_names() -> None:
    versions = sorted(tuple(int(x) for x in m[1:].split("_")) for m in dir(eks.KubernetesVersion) if m.startswith("V1_"))
    newest = ".".join(map(str, versions[-1]))
    assert newest == pins.DEFAULT_KUBERNETES_VERSION == "1.36"
    for version in pins.KUBECTL_LAYERS:
        assert getattr(eks.KubernetesVersion, "V" + version.replace(".", "_")).version == version


@pytest.mark.parametrize("version", sorted(pins.KUBECTL_LAYERS))
def test_kubectl_layer_is_installed_and_pinned(version: str) -> None:
    pin = pins.KUBECTL_LAYERS[version]
    assert importlib.metadata.version(pin.package) == pin.package_version
    assert pin.package.endswith("v" + version.split(".")[1])  # v36 serves 1.36
    assert hasattr(importlib.import_module(pin.module), pin.class_name)
    assert f"{pin.package}=={pin.package_version}\n" in (ROOT / "requirements.txt").read_text()
    assert re.search(rf'"{re.escape(pin.package)}>=[0-9.]+,<\d+"', (ROOT / "pyproject.toml").read_text())


def test_kubernetes_validate_is_pinned_and_serves_the_version() -> None:
    import kubernetes_validate

    assert "kubernetes-validate==" + importlib.metadata.version("kubernetes-validate") in (
        ROOT / "requirements-dev.txt").read_text()
    schemas = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    assert (schemas / f"v{pins.DEFAULT_KUBERNETES_VERSION}.0-local").is_dir()  # offline: the schemas ship in the wheel


# ----------------------------------------------------------------------------------------- botocore's eks model


def test_nodegroup_capacity_and_ami_types(eks_model) -> None:
    capacity = eks_model.shape_for("CapacityTypes").enum
    assert {"ON_DEMAND", "CAPACITY_BLOCK"} <= set(capacity)
    assert {"AL2023_x86_64_NEURON", "AL2023_x86_64_STANDARD"} <= set(eks_model.shape_for("AMITypes").enum)
    # (the strings aws-cdk-lib writes for its enum members are pinned on the template: tests/constructs/test_eks.py)


def test_launch_template_rules(eks_model) -> None:
    members = eks_model.operation_model("CreateNodegroup").input_shape.members
    # instance type, disk and remote access go into the launch template, never beside it
    assert "don't directly specify <code>instanceTypes</code>, <code>diskSize</code>, or <code>remoteAccess</code>" \
        in members["launchTemplate"].documentation
    # subnets come from the node group: a launch template that names one fails the deployment
    assert "don't specify <code> <a" in members["subnets"].documentation
    assert "SubnetId</a> </code> in your launch template" in members["subnets"].documentation
    # a custom AMI in the template excludes amiType: the kit's templates name no AMI
    assert "uses a custom AMI, then don't specify <code>amiType</code>" in members["amiType"].documentation


def test_taints_and_labels_fit_the_model(eks_model) -> None:
    taint = eks_model.shape_for("Taint").members
    assert "NO_SCHEDULE" in taint["effect"].enum
    assert len(labels.NEURON_TAINT_KEY) <= taint["key"].metadata["max"]
    key_max = eks_model.shape_for("labelKey").metadata["max"]
    for key in (labels.NODE_GROUP_LABEL, labels.CAPACITY_LABEL, labels.ULTRASERVER_SIZE_LABEL, labels.DEVICES_LABEL):
        assert len(key) <= key_max
    assert eks.TaintEffect.NO_SCHEDULE.value == "NO_SCHEDULE"


def test_system_instance_type_is_an_ec2_type() -> None:
    ec2 = botocore.session.get_session().get_service_model("ec2")
    default = NeuronEksClusterSettings.model_fields["system_instance_type"].default
    assert default in ec2.shape_for("InstanceType").enum


def test_pod_identity_in_aws_eks_v2() -> None:
    assert {m.name for m in eks.IdentityType} >= {"POD_IDENTITY"}


# ---------------------------------------------------------------------------------------------------- charts


def test_every_chart_version_has_a_dated_source() -> None:
    assert set(pins.CHARTS) == set(pins.DEFAULT_CHART_VERSIONS) and len(pins.CHARTS) >= 3, pins.CHARTS
    for chart, versions in pins.CHARTS.items():
        assert pins.DEFAULT_CHART_VERSIONS[chart] in versions
        for version, pin in versions.items():
            assert pin.version == version and pin.source
            assert pin.as_of.isoformat() == ("2026-11-29" if chart == pins.NEURON_CHART else "2026-11-23")


def test_efa_chart_pin_and_its_default_tolerations() -> None:
    chart = _load("efa-device-plugin-Chart.yaml")
    pin = pins.CHARTS[pins.EFA_CHART][pins.DEFAULT_CHART_VERSIONS[pins.EFA_CHART]]
    assert (chart["name"], chart["version"], chart["appVersion"]) == (pin.chart, pin.version, pin.app_version)
    values = _load("efa-device-plugin-values.yaml")
    assert values["tolerations"] == []  # nothing but the template's own CriticalAddonsOnly
    template = (DATA / "efa-device-plugin-daemonset.yaml").read_text()
    assert "- key: CriticalAddonsOnly\n          operator: Exists\n        {{- with .Values.tolerations }}" in template
    assert list(pins.EFA_PLUGIN_DEFAULT_TOLERATIONS) == [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    # so the kit adds the Neuron taint, under the chart's own key
    assert set(efa_chart_values()) <= set(values)
    assert efa_chart_values()["tolerations"] == [
        {"key": labels.NEURON_TAINT_KEY, "operator": "Exists", "effect": labels.NEURON_TAINT_EFFECT}]
    # and the plugin's node affinity takes every EFA Trainium type the kit runs
    assert {"trn1.32xlarge", "trn1n.32xlarge", "trn2.3xlarge", "trn2.48xlarge", "trn2u.48xlarge"} <= set(
        values["supportedInstanceLabels"]["values"])


def test_fsx_chart_pin_tolerates_every_taint() -> None:
    chart = _load("fsx-csi-driver-Chart.yaml")
    pin = pins.CHARTS[pins.FSX_CSI_CHART][pins.DEFAULT_CHART_VERSIONS[pins.FSX_CSI_CHART]]
    assert (chart["name"], chart["version"], chart["appVersion"]) == (pin.chart, pin.version, pin.app_version)
    assert _load("fsx-csi-driver-values.yaml")["node"]["tolerateAllTaints"] is pins.FSX_CSI_TOLERATES_ALL_TAINTS
    assert fsx_csi_chart_values() == {}


def test_neuron_chart_keys_against_the_published_values() -> None:
    """The keys the kit writes exist in AWS's own values at 1.0.0 too (the tree rendered offline:
    tests/constructs/test_neuron_chart_render.py), except ``draDriver``, which 1.0.0 does not have (Helm ignores it there);
    against 1.9.0, the pinned version, every key: tests/constructs/test_eks_deploys.py."""
    published = _load("neuron-helm-chart-1.0.0-values.yaml")
    assert _load("neuron-helm-chart-1.0.0-Chart.yaml")["version"] == "1.0.0"
    tolerations = published["devicePlugin"]["tolerations"]
    assert {"key": labels.NEURON_TAINT_KEY, "operator": "Exists", "effect": labels.NEURON_TAINT_EFFECT} in tolerations
    assert published["scheduler"]["customScheduler"]["fullnameOverride"] == NEURON_SCHEDULER
    assert _load("neuron-helm-chart-1.9.0-values.yaml")["scheduler"]["customScheduler"]["fullnameOverride"] == (
        NEURON_SCHEDULER)
    settings = NeuronEksClusterSettings(node_groups=[{"name": "a", "instance_type": "trn1.32xlarge", "count": 1}])
    written = neuron_chart_values(settings)
    assert set(written) <= set(pins.NEURON_CHART_KEYS)
    for key in set(written) - {"draDriver"}:
        assert key in published
        for sub in written[key]:
            assert sub in published[key] or sub == "enabled", (key, sub)
    assert "draDriver" not in published


def test_neuron_monitor_image_is_neurons_own() -> None:
    daemonset = _load("k8s-neuron-monitor-daemonset.yml")
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == pins.NEURON_MONITOR_IMAGE
    assert container["securityContext"] == {"privileged": True}
    assert pins.NEURON_MONITOR_BINARY + ".conf" in container["args"]
