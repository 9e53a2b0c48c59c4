"""What the EKS path pins: the Kubernetes version and its kubectl layer, the Helm charts and their versions.

No aws-cdk-lib import here (the settings read it). Every pin carries where it was read and when; a test pins each
(tests/constructs/test_eks_facts.py). A version the kit has not recorded is refused at synth, never passed through: a chart
version nobody read may have other values keys, and Helm ignores unknown keys silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

READ = date(2026, 11, 23)
NEURON_CHART_READ = date(2026, 11, 29)
"""When the Neuron chart's 1.9.0 files, the kube-scheduler skew rule and the node monitoring agent were read."""


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
        "1.9.0": ChartPin(
            chart="neuron-helm-chart", repository="oci://public.ecr.aws/neuron/neuron-helm-chart", version="1.9.0",
            app_version="1.9.0", confirmed=True, as_of=NEURON_CHART_READ,
            source=("aws-neuron/neuron-helm-charts charts/neuron-helm-chart/Chart.yaml (version: 1.9.0) and "
                    "values.yaml @ b77a6f90bb00dc0ee57d21e35e275b05e26b79c1, copied verbatim into tests/data/eks "
                    "(neuron-helm-chart-1.9.0-*.yaml): top-level keys neuronInstances, draDriver (enabled: false), "
                    "devicePlugin (enabled: true, image 2.31.0.0), scheduler (enabled: false; customScheduler kube-"
                    "scheduler v1.31.12-eks-1-31-30), ultraserverOperator, npd (enabled: true, namespaceOverride "
                    "neuron-healthcheck-system); each has nodeSelector and tolerations. The chart's validation: "
                    "README 'Validation Rules' @ 2f5072d7 (1.7.0) and templates/_helpers.tpl @ cea92c38 (1.8.0): the "
                    "DRA driver and the scheduler extension cannot both be enabled (helm fails), the scheduler needs "
                    "the device plugin; from 1.8.0 draDriver.enabled skips the device plugin and the problem detector "
                    "(templates @ a8ac03f1). 1.10.0 is in no stored publisher file (only a third-party copy of its "
                    "values), so the kit does not offer it")),
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

DEFAULT_CHART_VERSIONS = {NEURON_CHART: "1.9.0", EFA_CHART: "v0.5.30", FSX_CSI_CHART: "1.17.0"}

NEURON_CHART_KEYS = ("neuronInstances", "draDriver", "devicePlugin", "scheduler", "ultraserverOperator", "npd")
"""The Neuron chart's top-level values keys at 1.9.0 (values.yaml @ b77a6f90, tests/data/eks): the kit writes only
under these, and only sub-keys that file shows (tests/constructs/test_eks_deploys.py)."""

NEURON_DRA_RELEASE = "neuron-dra"
"""The second release of the Neuron chart, DRA driver only, beside the first (device plugin, and the scheduler extension
and problem detector when asked). One release cannot serve both: the chart fails on the DRA driver with the scheduler
extension, and from 1.8.0 ``draDriver.enabled`` skips the device plugin and the problem detector for the whole
release (see the 1.9.0 pin's source). Release B's values are Neuron's own DRA install line
(``--set devicePlugin.enabled=false --set npd.enabled=false --set draDriver.enabled=true``, aws-neuron/aws-neuron-sdk
deploy/eks/dra.rst @ 81ce03ae261e12925e53437a0f690478e6366155) with the scheduler off."""
DRA_DRIVER_NAMESPACE = "neuron-dra-driver"
"""Where the DRA driver runs (``draDriver.namespaceOverride`` at 1.9.0); the chart creates it itself
(templates/dra-driver/dra-driver-namespace.yaml @ 97e1b7d310f25919df39497daeddb7909e016646, ``if
.Values.draDriver.enabled``)."""
NPD_NAMESPACE = "neuron-healthcheck-system"
"""Where the chart's node problem detector runs (``npd.namespaceOverride`` at 1.9.0). The chart has no Namespace template
for it at 1.0.0 (8172e5e1, rendered offline: tests/unit/test_neuron_chart_render.py), 1.9.0's values have no key to
create one (only a stored variant, c8a2374b, has ``npd.namespace.create``, default false), and Neuron's guide creates
it first (``kubectl create ns neuron-healthcheck-system``, aws-neuron/
aws-neuron-sdk deploy/infrastructure/problem-detector-irsa.rst @ 81ce03ae): the kit creates it when the detector is
on."""
NPD_SERVICE_ACCOUNT = "node-problem-detector"
"""The detector's service account (``npd.serviceAccount.name`` at 1.9.0), the chart creates it."""
NPD_METRICS_NAMESPACE = "NeuronHealthCheck"
"""The CloudWatch namespace the detector publishes to: "Publishes metrics to CloudWatch under the NeuronHealthCheck
namespace" and the IAM policy's ``cloudwatch:namespace`` condition (problem-detector.rst and
problem-detector-irsa.rst @ 81ce03ae)."""

KUBE_SCHEDULER_IMAGE = "public.ecr.aws/eks-distro/kubernetes/kube-scheduler"
"""The scheduler extension's kube-scheduler (``scheduler.customScheduler.image.repository`` at 1.9.0)."""
KUBE_SCHEDULER_TAGS: dict[str, str] = {}
"""Kubernetes minor -> an eks-distro kube-scheduler tag of that minor, read from a publisher: none yet. The chart's own
tag at 1.6.0-1.9.0 is ``v1.31.12-eks-1-31-30`` (values.yaml @ 3419bfe7 and b77a6f90), and "kube-scheduler ... must not
be newer than the kube-apiserver ... may be up to one minor version older" (kubernetes/website content/en/releases/
version-skew-policy.md): a 1.36 control plane takes 1.36 or 1.35 only. No stored eks-distro file names a 1.36 tag, so
the scheduler extension is refused unless ``kube_scheduler_tag`` gives one (docs/checks.md, ``eks-kube-scheduler``)."""


@dataclass(frozen=True, kw_only=True)
class AddonPin:
    """One EKS add-on at one version."""

    name: str
    version: str
    source: str
    confirmed: bool
    """False when no publisher file names this version as an add-on version (docs/checks.md names the check)."""
    as_of: date = READ


NODE_MONITORING_AGENT_READ = date(2026, 11, 29)
"""When the version of :data:`NODE_MONITORING_AGENT` was read."""
NODE_MONITORING_AGENT = AddonPin(
    name="eks-node-monitoring-agent", version="v1.7.0-eksbuild.1", confirmed=False, as_of=NODE_MONITORING_AGENT_READ,
    source=("the add-on's name: the Amazon EKS user guide, \"add the monitoring agent as an Amazon EKS add-on\" "
            "(awsdocs/amazon-eks-user-guide latest/ug/nodes/node-health.adoc) and the agent's chart "
            "(aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent/values.yaml @ "
            "d016b88d37b3a3ec8070703eb4d9da45a92652da: nameOverride eks-node-monitoring-agent, nodeAgent.image.tag "
            "v1.5.1-eksbuild.1, tolerations [{operator: Exists}]). The add-on VERSION, seen on Kubernetes 1.36 clusters "
            "by a third party: ministryofjustice/modernisation-platform-environments terraform/environments/"
            "analytical-platform-compute/cluster/environment-configuration.tf @ 0a0278d907aa941c0774c2d01baabe552b6b5a1e "
            "(2026-08-21): eks_cluster_version 1.36 and eks_node_monitoring_agent v1.7.0-eksbuild.1 in development, test "
            "and production (the chart's image tag, v1.5.1-eksbuild.1, was pinned until 2026-11-29: no file shows it for "
            "1.36). No publisher file lists the add-on's versions for Kubernetes 1.36 (check: aws eks "
            "describe-addon-versions --addon-name eks-node-monitoring-agent --kubernetes-version 1.36; docs/checks.md "
            "eks-node-monitoring-agent). It reports the four Neuron hardware errors (NeuronDMAError, "
            "NeuronHBMUncorrectableError, NeuronNCUncorrectableError, NeuronSRAMUncorrectableError) as "
            "AcceleratedHardwareReady, repair action Replace (latest/ug/nodes/node-health-nma.adoc @ "
            "ab6e88192b471f3a74a8184644a1ddc679bb5fb6), after 10 minutes (node-repair.adoc @ ff522de1)"))
"""The EKS node monitoring agent add-on, which managed node group auto repair reads (UNCONFIRMED version)."""

POD_IDENTITY_AGENT_READ = date(2026, 11, 29)
"""When the sources of :data:`POD_IDENTITY_AGENT` were read."""
POD_IDENTITY_AGENT = AddonPin(
    name="eks-pod-identity-agent", version="v1.4.0-eksbuild.1", confirmed=False, as_of=POD_IDENTITY_AGENT_READ,
    source=("the add-on aws-cdk-lib 2.275.0 makes itself: aws_eks_v2.Cluster.eks_pod_identity_agent (construct "
            "EksPodIdentityAgentAddon, no version; every service account with identity_type POD_IDENTITY creates it: "
            "lib/aws-eks-v2/lib/service-account.js), so EKS would install its default build for the cluster's version "
            "on the deploy day (aws/aws-cdk#32580, comment of 2026-07-21: its version cannot be set). The version, "
            "seen on Kubernetes 1.36 clusters: ministryofjustice/modernisation-platform-environments terraform/"
            "environments/analytical-platform-compute/cluster/environment-configuration.tf @ "
            "0a0278d907aa941c0774c2d01baabe552b6b5a1e (2026-08-21): eks_cluster_version 1.36 and "
            "eks_pod_identity_agent v1.4.0-eksbuild.1 in development, test and production (commit 9ad7383d, "
            "2026-08-13, 'updated eks_pod_identity_agent addons on dev to latest' on the 1.36 dev cluster, from "
            "v1.3.10-eksbuild.3; cf79d896 and d653029f, pull requests #18205 and #18214, merged: test and production "
            "1.35 -> 1.36 with the add-on v1.3.10-eksbuild.2 -> v1.4.0-eksbuild.1); AWS's sample aws-solutions-library-"
            "samples/global-capacity-orchestrator-on-aws pins EKS_ADDON_POD_IDENTITY_AGENT = v1.4.0-eksbuild.1 "
            "(gco/stacks/constants.py @ 0e509ca6, 'The dependency scanner checks aws eks describe-addon-versions "
            "monthly') with kubernetes_version 1.36 (cdk.json @ 00a46567: two stored commits, not one); the older "
            "builds v1.3.10-eksbuild.2 and .3 ran on 1.36 too (two third-party Terraform files, stored ids 61669881540 "
            "and 59681873803). ASSUMED: no publisher file lists the add-on's versions per Kubernetes version (the "
            "agent's repository, aws/eks-pod-identity-agent @ d4dc0f3fedd795b26ac88755238867a2110c7460, tags "
            "v0.1.x and its chart 1.2.0 runs image v0.1.20: neither names an add-on version; an EKS product manager "
            "answers 'use EKS addon DescribeAddonVersions API', aws/containers-roadmap#2410, 2024-10-09). The check: "
            "aws eks describe-addon-versions --addon-name eks-pod-identity-agent --kubernetes-version 1.36 "
            "(docs/checks.md eks-pod-identity-agent)"))
"""The EKS Pod Identity agent add-on at ``v1.4.0-eksbuild.1``, pinned so a deploy does not take whatever EKS defaults to
that day (UNCONFIRMED for Kubernetes 1.36: seen there by third parties, listed by no publisher file). The cluster's
Pod Identity associations (training's, serving's, the CloudWatch agent's, the detector's) need the agent on every node;
NeuronEksCluster pins aws-cdk-lib's own add-on to it (eks/cluster.py)."""

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
