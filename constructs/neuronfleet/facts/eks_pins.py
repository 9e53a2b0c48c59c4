"""What the EKS path pins: the Kubernetes version and its kubectl layer, the Helm charts and their versions.

No aws-cdk-lib import here (the settings read it). Every pin carries where it was read and when; a test pins each
(tests/constructs/test_eks_facts.py). A version the kit has not recorded is refused at synth, never passed through: a chart
version nobody read may have other values keys, and Helm ignores unknown keys silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

READ = date(2026, 11, 23)


@dataclass(frozen=True, kw_only=True)
class KubectlLayer:
    """The Lambda layer (kubectl and helm) the cluster's kubectl provider runs with, for one Kubernetes minor."""

    kubernetes_version: str
    package: str
    """The PyPI distribution (requirements.txt pins it; pyproject.toml gives its range)."""
    package_version: str
    module: str
    """The Python module and the class inside it."""
    class_name: str
    source: str
    as_of: date = READ


KUBECTL_LAYERS: dict[str, KubectlLayer] = {
    "1.36": KubectlLayer(
        kubernetes_version="1.36", package="aws-cdk-lambda-layer-kubectl-v36", package_version="2.0.1",
        module="aws_cdk.lambda_layer_kubectl_v36", class_name="KubectlV36Layer",
        source=("PyPI aws-cdk-lambda-layer-kubectl-v36 2.0.1 (\"A Lambda Layer that contains kubectl v1.36\"), "
                "installed and imported; aws-cdk-lib 2.275.0 aws_eks_v2.KubernetesVersion's newest member is "
                "V1_36 (v37 of the layer exists on PyPI, but aws-cdk-lib names no 1.37); Amazon EKS user guide, "
                "\"Understand the Kubernetes version lifecycle on EKS\" (docs.aws.amazon.com/eks/latest/userguide/"
                "kubernetes-versions.md, localized copies), names 1.36 as the current minor")),
}
"""Kubernetes minor -> its pinned kubectl layer. The kit serves only these: a cluster's ``kubernetes_version`` must be
a key. To add one: pin the layer package in requirements.txt and pyproject.toml, add it here, run the EKS tests."""

DEFAULT_KUBERNETES_VERSION = "1.36"


@dataclass(frozen=True, kw_only=True)
class ChartPin:
    """One Helm chart at one version the kit has read the values of."""

    chart: str
    repository: str
    """A Helm repository URL, or an ``oci://`` reference (then ``chart`` is its last part)."""
    version: str
    app_version: str
    source: str
    confirmed: bool
    """True when the version and its values were read from the publisher's own repository; False when only a
    third-party copy says so (the docs page and the note name the check to make)."""
    as_of: date = READ


NEURON_CHART = "neuron"
EFA_CHART = "efa-device-plugin"
FSX_CSI_CHART = "fsx-csi-driver"

CHARTS: dict[str, dict[str, ChartPin]] = {
    NEURON_CHART: {
        "1.10.0": ChartPin(
            chart="neuron-helm-chart", repository="oci://public.ecr.aws/neuron/neuron-helm-chart", version="1.10.0",
            app_version="2.32.0.0 (device plugin and scheduler extension images)", confirmed=False,
            source=("`helm show values oci://public.ecr.aws/neuron/neuron-helm-chart --version 1.10.0` (digest "
                    "sha256:ed5d8f73b7a05d3a1edf17b2bfaf277ea995ad1c65b115fa8ba2c7b4dc649346) as a public blog post "
                    "quotes it (last modified 2026-09-12): top-level keys neuronInstances, draDriver (enabled: false), "
                    "devicePlugin (enabled: true), scheduler (enabled: false), ultraserverOperator, npd (enabled: "
                    "true); each has nodeSelector and tolerations. AWS's own repository aws-neuron/neuron-helm-charts "
                    "is stored here only at 8172e5e1 (2024-09-17, chart 1.0.0, no draDriver key); the install command "
                    "and the draDriver.enabled key are AWS's: aws-neuron/aws-neuron-sdk deploy/eks/helm-chart.rst and "
                    "deploy/eks/dra.rst @ 81ce03ae (2026-08-21)")),
    },
    EFA_CHART: {
        "v0.5.30": ChartPin(
            chart="aws-efa-k8s-device-plugin", repository="https://aws.github.io/eks-charts", version="v0.5.30",
            app_version="v0.5.20", confirmed=True,
            source=("aws/eks-charts stable/aws-efa-k8s-device-plugin/Chart.yaml, values.yaml and templates/"
                    "daemonset.yaml @ 5239609242f3430be50fb0b714a24d3ef2b47983 (2026-08-03): the DaemonSet tolerates "
                    "only CriticalAddonsOnly and appends .Values.tolerations (default []); supportedInstanceLabels "
                    "lists trn1.32xlarge, trn1n.32xlarge, trn2.3xlarge, trn2.48xlarge, trn2u.48xlarge")),
    },
    FSX_CSI_CHART: {
        "1.17.0": ChartPin(
            chart="aws-fsx-csi-driver", repository="https://kubernetes-sigs.github.io/aws-fsx-csi-driver",
            version="1.17.0", app_version="1.9.0", confirmed=True,
            source=("kubernetes-sigs/aws-fsx-csi-driver charts/aws-fsx-csi-driver/Chart.yaml and values.yaml @ "
                    "5b227125add708cd0b87c76abe1a4c074e71dfc5 (2026-04-21): node.tolerateAllTaints defaults to true "
                    "(the node plugin lands on tainted Neuron nodes), controller.serviceAccount.name "
                    "fsx-csi-controller-sa")),
    },
}
"""Chart -> version -> pin. A version not listed is refused at synth (``settings.eks.ChartVersions``)."""

DEFAULT_CHART_VERSIONS = {NEURON_CHART: "1.10.0", EFA_CHART: "v0.5.30", FSX_CSI_CHART: "1.17.0"}

NEURON_CHART_KEYS = ("neuronInstances", "draDriver", "devicePlugin", "scheduler", "ultraserverOperator", "npd")
"""The Neuron chart's top-level values keys at 1.10.0 (see its pin's source): the kit writes only under these."""

DRA_MIN_KUBERNETES = (1, 34)
DRA_INSTANCE_TYPES = ("trn2.48xlarge", "trn2u.48xlarge")
"""Neuron's DRA driver: "Please use K8s control plane 1.34+", "Trn2.48xlarge launched with K8s version 1.34.2+", and
its UltraServer section covers trn2u.48xlarge; "Do not install the Neuron device plugin on the cluster!" (aws-neuron/
aws-neuron-sdk deploy/eks/dra.rst @ 81ce03ae261e12925e53437a0f690478e6366155, read 2026-11-23). The kit lets DRA and
the device plugin share a cluster only on different node groups, each kept to its own by a node selector."""

EFA_PLUGIN_DEFAULT_TOLERATIONS = ({"key": "CriticalAddonsOnly", "operator": "Exists"},)
"""What the EFA device plugin's DaemonSet tolerates with no values given (see the EFA chart's pin)."""

FSX_CSI_TOLERATES_ALL_TAINTS = True
"""The FSx for Lustre CSI node plugin's default ``node.tolerateAllTaints`` (see the FSx chart's pin)."""

NEURON_MONITOR_IMAGE = "public.ecr.aws/neuron/neuron-monitor:1.3.0"
NEURON_MONITOR_DIGEST: str | None = None
"""The digest of :data:`NEURON_MONITOR_IMAGE`, unknown: the kit runs that image privileged in the host network (the
utilisation publisher), so a digest would be the right pin, but no stored source publishes one (read 2026-11-28:
Neuron's own DaemonSet, aws-neuron/aws-neuron-sdk src/k8/k8s-neuron-monitor-daemonset.yml, names the tag only; so
does every copy of ``neuron-monitor:1.3.0`` found in public repositories; aws-neuron/neuron-helm-charts pins its
images by tag (update-image-tags.sh @ 3419bfe7 writes tags only); aws-neuron/aws-neuron-eks-samples @ cecff9eb
(2026-02-26) names neither the image nor any digest). The reference stays the tag until
docs/checks.md's check ("the neuron-monitor image's digest") is made on a machine that can reach public.ecr.aws: then
set this, or pass ``monitor_image=<repository>:<tag>@sha256:<digest>`` to NeuronEksCluster, which takes a digest
reference only."""
NEURON_MONITOR_BINARY = "/opt/aws/neuron/bin/neuron-monitor"
"""Neuron's own neuron-monitor DaemonSet for Kubernetes runs this image, privileged, with its configuration at
/opt/aws/neuron/bin/neuron-monitor.conf (aws-neuron/aws-neuron-sdk src/k8/k8s-neuron-monitor-daemonset.yml @
2ae3525e66c5051f75efe7ef5905e421aa5dc19c, 2025-04-04). That the image also has python3 (the kit's publisher runs
beside neuron-monitor in it) is not published: unconfirmed, the DaemonSet logs an error and exits if not."""
