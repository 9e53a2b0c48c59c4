"""The Kubernetes objects the kit writes for EKS: chart values, node labels, the FSx volume, the utilisation
publisher, and the examples a user submits (a training Job over whole UltraServers, an inference Deployment).

Pure functions returning plain dicts (no aws-cdk-lib): the construct applies some through the cluster's kubectl
provider, ``write_examples`` writes the others as YAML, and tests/unit/test_eks_manifests.py validates every one
offline against the Kubernetes schemas of the pinned version (``kubernetes-validate``).
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from typing import Any

from ..facts import neuron
from ..facts.catalog import CATALOG
from ..facts.compile_cache import FSX_CACHE_DIR, NEURON_COMPILE_CACHE_URL
from ..facts.eks_labels import (
    CAPACITY_LABEL,
    DEVICE_PLUGIN,
    DEVICES_LABEL,
    DRA,
    EFA_RESOURCE,
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_SIZE,
    NEURON_RESOURCE,
    NEURON_TAINT_EFFECT,
    NEURON_TAINT_KEY,
    NODE_GROUP_LABEL,
    NODE_INSTANCE_TYPE_LABEL,
    ULTRASERVER_LABEL_CHECK,
    ULTRASERVER_SERVER_LABEL,
    ULTRASERVER_SIZE_LABEL,
)
from ..facts.eks_pins import (
    NEURON_DRA_RELEASE,
    NEURON_MONITOR_BINARY,
    NEURON_MONITOR_DIGEST,
    NEURON_MONITOR_IMAGE,
    NPD_NAMESPACE,
)
from ..facts.kueue import KUEUE_API, QUEUE_LABEL
from ..node import HOST_DIR, script_text
from ..settings.eks import NeuronEksClusterSettings, NeuronNodegroupSettings
from .drain import drain_reader

Manifest = dict[str, Any]

TRAINING_NAMESPACE = "neuronfleet-training"
"""Where training runs: its Jobs and pods, its service account, the FSx claim, the node scripts. Its own namespace, so
no Role bound there reaches serving's pods (RBAC Roles and RoleBindings grant within one namespace)."""
SERVING_NAMESPACE = "neuronfleet-serving"
"""Where serving runs: the inference Deployment, its pods and its service account."""
SYSTEM_NAMESPACE = "kube-system"
TRAINING_SERVICE_ACCOUNT = "neuronfleet-training"
"""Training's service account (in :data:`TRAINING_NAMESPACE`): EKS Pod Identity gives it the construct's
``training_role`` (the data bucket, read and write; never a drain flag)."""
SERVING_SERVICE_ACCOUNT = "neuronfleet-serving"
"""Serving's service account (in :data:`SERVING_NAMESPACE`): EKS Pod Identity gives it the construct's
``serving_role`` (its model's bucket and prefix, read only, when granted; never the training bucket)."""
POD_SECURITY_LEVEL = "baseline"
"""The Pod Security Standard both workload namespaces enforce (``pod-security.kubernetes.io/enforce``): no
privileged container, no host network, ports, PID or IPC, no hostPath volume (Kubernetes docs, "Pod Security
Standards", Baseline). The kit's training Job and inference Deployment need none of them; the privileged
utilisation publisher lives in kube-system, which the kit does not label."""
SCRIPTS_CONFIGMAP = "neuronfleet-node-scripts"
"""The node scripts (health gate, launcher) as a ConfigMap, mounted at /opt/neuronfleet as on a Batch host."""
FSX_VOLUME = "fsx"
FSX_CSI_DRIVER = "fsx.csi.aws.com"
"""The FSx for Lustre CSI driver's name (kubernetes-sigs/aws-fsx-csi-driver, examples/kubernetes/static_provisioning
@ 5b227125: ``csi.driver: fsx.csi.aws.com`` with ``volumeHandle`` the file system id and ``volumeAttributes``
``dnsname`` and ``mountname``)."""
NEURON_SCHEDULER = "my-scheduler"
"""The scheduler the Neuron chart's scheduler extension runs beside the default one (``scheduler.customScheduler.
fullnameOverride`` in the chart's values, neuronfleet.facts.eks_pins): pods that take part of a node's NeuronCores name
it."""
UTILISATION = "neuronfleet-utilisation"
ULTRASERVER_JOB_LABEL = "neuronfleet/ultraserver-job"
"""On the pods of a job over whole UltraServers: its name (what keeps other jobs off its UltraServers)."""
RENDEZVOUS_DIR = "/fsx/.neuronfleet/rendezvous"
SHM_GIB = 64


def namespaces() -> list[Manifest]:
    """Training's and serving's namespaces, each enforcing the :data:`POD_SECURITY_LEVEL` Pod Security Standard."""
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {
                "app.kubernetes.io/part-of": "neuronfleet",
                "pod-security.kubernetes.io/enforce": POD_SECURITY_LEVEL}}}
            for name in (TRAINING_NAMESPACE, SERVING_NAMESPACE)]


DIGEST_REFERENCE = re.compile(r"^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}$")
"""An image reference pinned by digest: ``<repository>[:<tag>]@sha256:<64 hex>``."""


def monitor_image(image: str | None = None) -> str:
    """The utilisation publisher's image (it runs privileged in the host network): ``image`` when given, which must be
    pinned by digest (a tag can be moved to other content, a digest cannot); else the kit's pin, by digest when
    :data:`neuronfleet.facts.eks_pins.NEURON_MONITOR_DIGEST` is known, else by tag (no digest is published offline: the
    pin says so and docs/checks.md names the check). Raises ValueError naming what was given."""
    if image is None:
        return f"{NEURON_MONITOR_IMAGE}@{NEURON_MONITOR_DIGEST}" if NEURON_MONITOR_DIGEST else NEURON_MONITOR_IMAGE
    if not DIGEST_REFERENCE.match(image):
        raise ValueError(f"monitor_image: got {image!r}; allowed: a reference pinned by digest, "
                         "<repository>[:<tag>]@sha256:<64 lowercase hex> (the publisher runs privileged)")
    return image


def neuron_toleration() -> dict[str, str]:
    return {"key": NEURON_TAINT_KEY, "operator": "Exists", "effect": NEURON_TAINT_EFFECT}


def node_labels(group: NeuronNodegroupSettings) -> dict[str, str]:
    """The kit's labels on a Neuron node group's nodes."""
    labels = {NODE_GROUP_LABEL: group.name, CAPACITY_LABEL: group.capacity.type, DEVICES_LABEL: group.devices}
    if group.spec.ultraserver_size > 1:
        labels[ULTRASERVER_SIZE_LABEL] = str(group.spec.ultraserver_size)
    return labels


# ---------------------------------------------------------------------------------------------------- charts


def neuron_chart_values(settings: NeuronEksClusterSettings) -> dict[str, Any]:
    """Release A of the Neuron chart (:data:`NEURON_RELEASE`): the device plugin on the node groups labelled for it,
    the DRA driver off, the scheduler extension (with the kube-scheduler of the cluster's minor) and the problem
    detector (on the device-plugin node groups) only when asked. Every key is one the pinned chart's values.yaml
    shows (tests/data/eks/neuron-helm-chart-1.9.0-values.yaml)."""
    scheduler: dict[str, Any] = {"enabled": settings.scheduler_extension}
    if settings.scheduler_extension:
        scheduler["customScheduler"] = {"image": {"tag": settings.scheduler_image_tag}}
    npd: dict[str, Any] = {"enabled": settings.problem_detector}
    if settings.problem_detector:
        npd["nodeSelector"] = {DEVICES_LABEL: DEVICE_PLUGIN}
    return {
        "devicePlugin": {"enabled": True, "nodeSelector": {DEVICES_LABEL: DEVICE_PLUGIN}},
        "draDriver": {"enabled": False},
        "scheduler": scheduler,
        "npd": npd,
    }


def neuron_dra_chart_values() -> dict[str, Any]:
    """Release B of the Neuron chart (:data:`neuronfleet.facts.eks_pins.NEURON_DRA_RELEASE`): the DRA driver on the
    node groups labelled ``dra``, and nothing else: Neuron's DRA install line (device plugin and problem detector
    off) with the scheduler extension off, which the chart refuses beside the DRA driver."""
    return {
        "draDriver": {"enabled": True, "nodeSelector": {DEVICES_LABEL: DRA}},
        "devicePlugin": {"enabled": False},
        "scheduler": {"enabled": False},
        "npd": {"enabled": False},
    }


NEURON_RELEASE = "neuron-helm-chart"
"""Release A's name (the chart's own name, as the kit's single release was called)."""


def neuron_chart_releases(settings: NeuronEksClusterSettings) -> dict[str, dict[str, Any]]:
    """Release name -> values, for the releases the cluster needs: A when a node group uses the device plugin, B when
    one uses DRA (never one release with both: the chart fails or skips, see neuronfleet.facts.eks_pins)."""
    releases: dict[str, dict[str, Any]] = {}
    if settings.uses_device_plugin:
        releases[NEURON_RELEASE] = neuron_chart_values(settings)
    if settings.uses_dra:
        releases[NEURON_DRA_RELEASE] = neuron_dra_chart_values()
    return releases


def chart_namespaces(settings: NeuronEksClusterSettings) -> list[Manifest]:
    """The namespaces the kit creates for the charts' objects, before the charts: the problem detector's when it is on
    (the chart has no Namespace template for it). kube-system exists; the DRA driver's the chart creates."""
    if not settings.problem_detector:
        return []
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NPD_NAMESPACE, "labels": {
        "app.kubernetes.io/part-of": "neuronfleet"}}}]


def efa_chart_values() -> dict[str, Any]:
    """The EFA device plugin tolerates the Neuron taint: by default it tolerates only CriticalAddonsOnly and never
    lands on a tainted Neuron node, which would then offer no ``vpc.amazonaws.com/efa``."""
    return {"tolerations": [neuron_toleration()]}


def fsx_csi_chart_values() -> dict[str, Any]:
    """Nothing to change: the node plugin tolerates every taint by default (neuronfleet.facts.eks_pins)."""
    return {}


# ------------------------------------------------------------------------------------------- applied by the kit


def fsx_volume(*, file_system_id: str, dns_name: str, mount_name: str, storage_gib: int = 1200) -> list[Manifest]:
    """A static PersistentVolume on the file system and its claim (ReadWriteMany): pods mount it at /fsx, as Batch
    hosts do."""
    return [
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": FSX_VOLUME},
         "spec": {"capacity": {"storage": f"{storage_gib}Gi"}, "volumeMode": "Filesystem",
                  "accessModes": ["ReadWriteMany"], "persistentVolumeReclaimPolicy": "Retain",
                  "storageClassName": "", "mountOptions": ["flock"],
                  "csi": {"driver": FSX_CSI_DRIVER, "volumeHandle": file_system_id,
                          "volumeAttributes": {"dnsname": dns_name, "mountname": mount_name}}}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": FSX_VOLUME, "namespace": TRAINING_NAMESPACE},
         "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": FSX_VOLUME,
                  "resources": {"requests": {"storage": f"{storage_gib}Gi"}}}},
    ]


def _packed(name: str) -> str:
    return base64.b64encode(gzip.compress(script_text(name).encode(), mtime=0)).decode()


UTILISATION_SCRIPTS = ("utilisation.py", "sigv4.py")
"""What the utilisation DaemonSet unpacks side by side (utilisation.py imports its signer from sigv4.py beside it)."""


def utilisation_publisher(groups: tuple[NeuronNodegroupSettings, ...] | list[NeuronNodegroupSettings], *,
                          namespace_metrics: str, region: str, image: str | None = None) -> list[Manifest]:
    """neuron-monitor -> the kit's utilisation.py -> CloudWatch, on every Neuron node: the same metric (namespace,
    name, InstanceId) a Batch host publishes, so the waste detector and the dashboard see EKS nodes unchanged.

    One DaemonSet per node group (each knows its nodes' logical NeuronCores, utilisation.py's fallback when a report
    lacks ``neuron_hardware_info``). The pods run in the host network (IMDS answers them at a hop limit of 1, and
    utilisation.py signs with the node role, which may put metrics only into ``namespace_metrics``), privileged as
    Neuron's own neuron-monitor DaemonSet is, in Neuron's neuron-monitor image. The script travels gzip+base64 in a
    ConfigMap with its SigV4 signer (sigv4.py), unpacked side by side. ``image``: :func:`monitor_image`'s.

    None on DRA node groups: "Neuron Monitor does not currently support environments using the Neuron DRA (Dynamic
    Resource Allocation) Driver" (aws-neuron/aws-neuron-sdk deploy/infrastructure/monitoring.rst @ 81ce03ae, read
    2026-11-29); there a publisher would only fail, and the waste detector would read its nodes as silent. Their
    Neuron metrics come from the CloudWatch Observability add-on, if at all (facts.eks_observability)."""
    groups = [g for g in groups if not g.dra]
    reference = monitor_image(image)
    config = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": UTILISATION, "namespace": SYSTEM_NAMESPACE,
                           "labels": {"app.kubernetes.io/name": UTILISATION}},
              "data": {f"{name}.gz.b64": _packed(name) for name in UTILISATION_SCRIPTS}}
    out: list[Manifest] = [config]
    for group in groups:
        lnc = neuron.support(group.instance_type).lnc_default
        cores = neuron.logical_cores(group.instance_type, lnc)
        labels = {"app.kubernetes.io/name": UTILISATION, NODE_GROUP_LABEL: group.name}
        script = ("set -eu; mkdir -p /tmp/neuronfleet; "
                  + "".join(f"base64 -d /scripts/{name}.gz.b64 | gunzip > /tmp/neuronfleet/{name}; "
                            for name in UTILISATION_SCRIPTS)
                  + f"{NEURON_MONITOR_BINARY} | python3 /tmp/neuronfleet/utilisation.py --namespace {namespace_metrics} "
                  f"--region {region} --cores {cores}")
        out.append({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": f"{UTILISATION}-{group.name}", "namespace": SYSTEM_NAMESPACE, "labels": labels},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet",
                         "automountServiceAccountToken": False,  # it never calls the Kubernetes API
                         "priorityClassName": "system-node-critical",
                         "nodeSelector": {NODE_GROUP_LABEL: group.name},
                         "tolerations": [neuron_toleration()],
                         "containers": [{
                             "name": "publisher", "image": reference,
                             "command": ["/bin/sh", "-c", script], "securityContext": {"privileged": True},
                             "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                                           "limits": {"cpu": "500m", "memory": "256Mi"}},
                             "volumeMounts": [{"name": "scripts", "mountPath": "/scripts", "readOnly": True}]}],
                         "volumes": [{"name": "scripts", "configMap": {"name": UTILISATION}}]}}}})
    return out


# ----------------------------------------------------------------------------------------------- the examples


def node_scripts() -> Manifest:
    """The health gate and the launcher as a ConfigMap (the same files a Batch host gets)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": SCRIPTS_CONFIGMAP, "namespace": TRAINING_NAMESPACE},
            "data": {name: script_text(name) for name in ("health_gate.py", "launch.py")}}


DRA_DEVICE_CLASS = "neuron.aws.com"
"""The Neuron DRA driver's device class and opaque-config driver name (aws-neuron-sdk deploy/files/specs
all-devices.yaml and 4-node-inference-us.yaml @ 81ce03ae, copied in tests/data/eks)."""


def neuron_claim_template(group: NeuronNodegroupSettings, name: str) -> Manifest:
    """A ResourceClaimTemplate for a DRA node group, after Neuron's own examples: on UltraServer types one
    ``neuron_node`` per pod with ``UltraServerConfig`` in whole-UltraServer mode (4-node-inference-us.yaml); else every
    Neuron device of the instance type (all-devices.yaml)."""
    size = group.spec.ultraserver_size
    if size > 1:
        request = {"name": "neurons", "exactly": {
            "deviceClassName": DRA_DEVICE_CLASS,
            "selectors": [{"cel": {"expression": "device.attributes['neuron.aws.com'].resourceType == 'neuron_node'"}}],
            "allocationMode": "ExactCount", "count": 1}}
        config = [{"requests": ["neurons"], "opaque": {"driver": DRA_DEVICE_CLASS, "parameters": {
            "apiVersion": "neuron.aws.com/v1", "kind": "UltraServerConfig", "ultraserverMode": size}}}]
        devices: dict[str, Any] = {"requests": [request], "config": config}
    else:
        devices = {"requests": [{"name": "neurons", "exactly": {
            "deviceClassName": DRA_DEVICE_CLASS,
            "selectors": [{"cel": {"expression":
                                   f"device.attributes['neuron.aws.com'].instanceType == '{group.instance_type}'"}}],
            "allocationMode": "All"}}]}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": TRAINING_NAMESPACE}, "spec": {"spec": {"devices": devices}}}


HEADROOM = 0.9
"""The share of a node's vCPUs and memory a whole-node training pod requests (requests = limits: Guaranteed QoS).
An ASSUMPTION, not a measurement: the node's allocatable is its capacity less the kubelet's and the system's
reservations, and the DaemonSets (Neuron device plugin, EFA plugin, CNI, kube-proxy, the FSx CSI node, the kit's
utilisation exporter) request some of it too; Kueue's topology-aware scheduling subtracts all of them, so a pod
that asked for the whole capacity would never fit. 10 % is left for them; measure `kubectl describe node` on a
real node (Allocatable less the DaemonSets' requests) and lower it if they need more."""
BACKOFF_PER_INDEX = 2
"""Retries of a failed index (a real crash) before the index fails (JobSpec.backoffLimitPerIndex, Indexed Jobs
only, restartPolicy Never; Kubernetes 1.36 OpenAPI). The kit's choice."""
IGNORE_DISRUPTION = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
"""A pod that failed because it was disrupted (a drain's eviction, a node lost, a preemption by kube-scheduler)
counts toward no backoff limit and is replaced (Kubernetes 1.36 OpenAPI PodFailurePolicyRule: Ignore 'the counter
towards the .backoffLimit is not incremented and a replacement pod is created'; kubernetes/kubernetes
pkg/controller/job/pod_failure_policy_test.go TestMatchPodFailurePolicy "ignore rule matched for pod conditions").
Kueue's eviction suspends the Job instead, which counts nothing either (docs/sharing.md)."""


def whole_node_cpu_memory(group: NeuronNodegroupSettings, share: float = 1.0) -> dict[str, str]:
    """cpu and memory for a pod on ``share`` of one of ``group``'s nodes, within :data:`HEADROOM` of its capacity."""
    spec = group.spec
    return {"cpu": str(max(int(spec.vcpus * HEADROOM * share), 1)),
            "memory": f"{max(int(spec.memory_gib * HEADROOM * share), 1)}Gi"}


def ultraserver_placement(size: int, nodes: int, name: str, labels: dict[str, str]
                          ) -> tuple[dict[str, Any], dict[str, str]]:
    """(the pod's affinity, its Kueue topology annotations) for a job of ``nodes`` pods, one per node, on a node
    group of UltraServers of ``size`` nodes (``size`` 1: no UltraServer).

    - One pod per node: required anti-affinity on the pods' own labels at ``kubernetes.io/hostname``.
    - No UltraServer shared with another UltraServer job: required anti-affinity on the other jobs' name label at
      Neuron's ``ultraserver-server-id-<size>`` (Neuron's UltraServer guide, deploy/eks/ultraserver.rst @ 81ce03ae:
      both its forms).
    - A job of exactly one UltraServer: REQUIRED affinity to its own pods at that label, as Neuron's guide does for
      its 2- and 4-node jobs; a job of several: PREFERRED (weight 100), as the guide's 16-node job does (a required
      affinity to the job's own pods at the server level would need every pod in one UltraServer).
    - Kueue (when the Job is queued on a flavor whose Topology has the UltraServer level, sharing.manifests): one
      UltraServer, ``podset-required-topology: <label>``, all pods in one UltraServer domain; several,
      ``podset-slice-required-topology: <label>`` and ``podset-slice-size: <size>``, each slice of ``size`` pods in
      one UltraServer domain (kubernetes-sigs/kueue @ 8eab6877: tas.go ``Build``; tas_flavor_snapshot.go ``levelKey``:
      a slice-only request is placed from the Topology's highest level; tests pkg/cache/scheduler/tas_cache_test.go
      TestFindTopologyAssignments "block required; too many Pods to fit requested; BestFit" and "no topology for
      podset; rack required for slices; multiple blocks; BestFit", modelled in tests/unit/test_ultraserver_placement.py).
      Kueue then admits the Job only where whole UltraServers are free, and never half of one."""
    one_per_node = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": "kubernetes.io/hostname"}
    apart: list[dict[str, Any]] = [one_per_node]
    affinity: dict[str, Any] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": apart}}
    if size <= 1:
        return affinity, {}
    server = ULTRASERVER_SERVER_LABEL.format(size=size)
    apart.append({"labelSelector": {"matchExpressions": [
        {"key": ULTRASERVER_JOB_LABEL, "operator": "Exists"},
        {"key": ULTRASERVER_JOB_LABEL, "operator": "NotIn", "values": [name]}]}, "topologyKey": server})
    together = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": server}
    if nodes == size:
        affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [together]}
        return affinity, {KUEUE_REQUIRED_TOPOLOGY: server}
    affinity["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": together}]}
    return affinity, {KUEUE_SLICE_REQUIRED_TOPOLOGY: server, KUEUE_SLICE_SIZE: str(size)}


HOSTNAME_LABEL = "kubernetes.io/hostname"
"""The node level of a Kueue Topology (Kueue's CRD at v0.19.2 allows it as the last level only)."""
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""The label the API server sets on every namespace to its name (Kubernetes docs, "Well-Known Labels, Annotations
and Taints": kubernetes.io/metadata.name): a ClusterQueue's namespaceSelector admits one namespace by it."""


def topology_levels(group: NeuronNodegroupSettings) -> list[str]:
    """The node labels of a node group's Kueue Topology, highest first: the node (``kubernetes.io/hostname``), under
    Neuron's ``ultraserver-server-id-<size>`` on an UltraServer node group, so that a training Job's topology
    annotations (:func:`ultraserver_placement`) place whole UltraServers.

    Kueue's Topology CRD at v0.19.2 (tests/data/kueue/kueue.x-k8s.io_topologies.yaml): 1 to 16 unique levels, and
    "the kubernetes.io/hostname label can only be used at the lowest level of topology". A node lacking a level's
    label is not in the flavor (Kueue pkg/util/tas/node.go ``NodeMatchesFlavor``): if the UltraServer label is
    missing (DRA node groups: facts.eks_labels.ULTRASERVER_LABEL_SOURCE_DRA), nothing is admitted on those nodes,
    loudly, rather than a job placed across UltraServers."""
    size = group.spec.ultraserver_size
    return [*([ULTRASERVER_SERVER_LABEL.format(size=size)] if size > 1 else []), HOSTNAME_LABEL]


def node_group_quota(group: NeuronNodegroupSettings) -> dict[str, int | str]:
    """A node group's whole capacity as Kueue quota: its Neuron devices, vCPUs, memory and EFA interfaces, every
    resource the kit's pods request there (Kueue admits a workload only if every resource it requests is covered:
    site/content/en/docs/tasks/manage/administer_cluster_quotas.md @ v0.19.2, 'By default, administrators must specify
    all resources required by workloads in the ClusterQueue's .spec.resourceGroups[*]')."""
    spec = group.spec
    out: dict[str, int | str] = {NEURON_RESOURCE: group.count * spec.accelerators,
                                 "cpu": group.count * spec.vcpus, "memory": f"{group.count * spec.memory_gib}Gi"}
    if spec.efa_interfaces:
        out[EFA_RESOURCE] = group.count * spec.efa_interfaces
    return out


def places_whole_ultraservers(group: NeuronNodegroupSettings) -> bool:
    """Whether NeuronEksCluster gives ``group`` a placement queue (:func:`placement_objects`): an UltraServer node
    group whose devices come from the device plugin. Not a DRA one: Kueue v0.19.2's topology-aware scheduling does
    not count DRA devices and its DRA support needs a DeviceClass mapping the kit does not set (facts.kueue.TAS_DRA);
    a DRA UltraServer Job is one UltraServer, placed whole by required pod affinity (:func:`ultraserver_placement`)."""
    return group.spec.ultraserver_size > 1 and not group.dra


def placement_name(group: NeuronNodegroupSettings) -> str:
    """The name of a node group's placement Topology, ResourceFlavor, ClusterQueue and LocalQueue (each kind its own
    namespace of names)."""
    return f"whole-ultraservers-{group.name}"


def placement_objects(group: NeuronNodegroupSettings) -> list[Manifest]:
    """Kueue's objects that admit training on ``group`` only on whole free UltraServers, outside a sharing pool: a
    Topology (:func:`topology_levels`: the UltraServer, then the node), a ResourceFlavor of the node group on it, a
    ClusterQueue owning the node group's whole capacity (:func:`node_group_quota`; no cohort, no preemption) that
    admits training's namespace only, and its LocalQueue there (:func:`placement_name`).

    A Job queued there with the annotations of :func:`ultraserver_placement` is admitted only where each of its
    slices of ``size`` pods fits in one UltraServer, and holds no quota until then (Kueue v0.19.2: tas.go ``Build``;
    tas_flavor_snapshot.go; tests pkg/cache/scheduler/tas_cache_test.go TestFindTopologyAssignments, modelled in
    tests/unit/test_ultraserver_placement.py); counting the pods Kueue does not manage (pkg/controller/tas/
    non_tas_usage_controller.go), so a node another pod holds part of is not a free node."""
    name = placement_name(group)
    quota = node_group_quota(group)
    return [
        {"apiVersion": KUEUE_API, "kind": "Topology", "metadata": {"name": name},
         "spec": {"levels": [{"nodeLabel": label} for label in topology_levels(group)]}},
        {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": name},
         "spec": {"nodeLabels": {NODE_GROUP_LABEL: group.name}, "topologyName": name,
                  "tolerations": [neuron_toleration()]}},
        {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": name},
         "spec": {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: TRAINING_NAMESPACE}},
                  "resourceGroups": [{"coveredResources": list(quota), "flavors": [{"name": name, "resources": [
                      {"name": resource, "nominalQuota": amount} for resource, amount in quota.items()]}]}],
                  "preemption": {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"}}},
        {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": TRAINING_NAMESPACE},
         "spec": {"clusterQueue": name}},
    ]


def training_job(group: NeuronNodegroupSettings, *, name: str = "train", image: str | None = None,
                 nodes: int | None = None, script: str = "/fsx/data/code/train.py",
                 queue: str | None = None) -> list[Manifest]:
    """An indexed Job of ``nodes`` pods (default: the node group's ``count``), one per node, each asking for all of
    its node's Neuron devices (device plugin, or a DRA claim: :func:`neuron_claim_template`) and EFA interfaces, and
    a headless Service that gives each pod a stable name.

    The rank order is ``launch.py``'s (the Batch path's): each pod publishes its UltraServer identity on /fsx and
    every pod sorts the same records (UltraServer, node within it); the pod's completion index stands in for AWS
    Batch's node index. On UltraServer node groups the pods go to whole UltraServers: ``nodes`` must be a multiple
    of the UltraServer size and the pods' required anti-affinity puts one per node (:func:`ultraserver_placement`
    for the rest: Neuron's affinity forms, and Kueue's topology-aware annotations for a queued Job).

    ``queue``: the Kueue LocalQueue (in training's namespace) the Job is queued on, by its
    ``kueue.x-k8s.io/queue-name`` label; default on a device-plugin UltraServer node group, the group's own
    (:func:`placement_name`, which NeuronEksCluster creates), so Kueue admits it only on whole free UltraServers; on
    other node groups none. A Job of several UltraServers is refused when nothing would place it whole: on a DRA node
    group (Kueue v0.19.2 does not place DRA devices by topology: facts.kueue.TAS_DRA), or unqueued."""
    spec = group.spec
    size = spec.ultraserver_size
    nodes = nodes or group.count
    if nodes % size:
        raise ValueError(f"nodes: got {nodes}; allowed: a multiple of {size} (whole UltraServers of {group.instance_type})")
    if queue is None and places_whole_ultraservers(group):
        queue = placement_name(group)
    if size > 1 and nodes > size and (group.dra or queue is None):
        why = (f"node group {group.name} hands out its devices by DRA, which Kueue v0.19.2's topology-aware scheduling "
               "does not place (facts.kueue.TAS_DRA): only a one-UltraServer Job lands whole there, by required "
               "pod affinity" if group.dra else "no Kueue queue is named to admit it on whole UltraServers")
        raise ValueError(f"nodes: got {nodes}; allowed: {size} (one UltraServer of {group.instance_type}): {why} "
                         "(docs/eks.md, 'Jobs that land whole')")
    image = image or neuron.default_training_image(group.instance_type).reference
    lnc = neuron.support(group.instance_type).lnc_default
    cores = neuron.logical_cores(group.instance_type, lnc)
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "neuronfleet"}
    # Neuron devices from the device plugin, or (DRA node groups) from a claim; EFA from its device plugin either way
    devices = ({} if group.dra else {NEURON_RESOURCE: str(spec.accelerators)}) | (
        {EFA_RESOURCE: str(spec.efa_interfaces)} if spec.efa_interfaces else {})
    claim = f"{name}-neurons"
    env = [
        {"name": "AWS_BATCH_JOB_NUM_NODES", "value": str(nodes)},
        {"name": "AWS_BATCH_JOB_NODE_INDEX", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
        {"name": "AWS_BATCH_JOB_ID", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.labels['batch.kubernetes.io/controller-uid']"}}},
        {"name": "NEURONFLEET_NODE_ADDRESS", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS", "value": f"{name}-0.{name}"},
        {"name": "NEURONFLEET_NPROC_PER_NODE", "value": str(cores)},
        {"name": "NEURONFLEET_EXPECT_NEURON_DEVICES", "value": str(spec.accelerators)},
        {"name": "NEURONFLEET_EXPECT_EFA_DEVICES", "value": str(spec.efa_interfaces)},
        {"name": "NEURONFLEET_ULTRASERVER_SIZE", "value": str(size)},
        {"name": "NEURONFLEET_RENDEZVOUS_DIR", "value": RENDEZVOUS_DIR},
        {"name": "CHECKPOINT_DIR", "value": "/fsx/data/checkpoints"},
        {"name": "DATA_DIR", "value": "/fsx/data"},
        {"name": NEURON_COMPILE_CACHE_URL, "value": FSX_CACHE_DIR},  # shared by every pod and run (facts.compile_cache)
        *([{"name": "FI_PROVIDER", "value": "efa"}, {"name": "FI_EFA_USE_DEVICE_RDMA", "value": "1"}]
          if spec.efa_interfaces else []),
        *([{"name": "NEURON_LOGICAL_NC_CONFIG", "value": str(lnc)}] if lnc else []),
    ]
    flag_env, flag_mounts = drain_reader(group, volume="fsx")   # a Capacity Block group: the lifecycle's drain flag
    env += flag_env
    if size > 1:
        labels[ULTRASERVER_JOB_LABEL] = name
    affinity, annotations = ultraserver_placement(size, nodes, name, labels)
    pod = {
        "metadata": {"labels": labels, **({"annotations": annotations} if annotations else {})},
        "spec": {
            "subdomain": name, "restartPolicy": "Never", "serviceAccountName": TRAINING_SERVICE_ACCOUNT,
            "nodeSelector": {NODE_GROUP_LABEL: group.name, NODE_INSTANCE_TYPE_LABEL: group.instance_type},
            "tolerations": [neuron_toleration()], "affinity": affinity,
            "containers": [{
                "name": "train", "image": image,
                "command": ["python3", f"{HOST_DIR}/launch.py", "--", script],
                "env": env,
                "resources": {"requests": devices | whole_node_cpu_memory(group),
                              "limits": devices | whole_node_cpu_memory(group),
                              **({"claims": [{"name": "neurons"}]} if group.dra else {})},
                "volumeMounts": [{"name": "fsx", "mountPath": "/fsx"}, *flag_mounts,
                                 {"name": "scripts", "mountPath": HOST_DIR, "readOnly": True},
                                 {"name": "shm", "mountPath": "/dev/shm"}]}],
            "volumes": [{"name": "fsx", "persistentVolumeClaim": {"claimName": FSX_VOLUME}},
                        {"name": "scripts", "configMap": {"name": SCRIPTS_CONFIGMAP, "defaultMode": 0o755}},
                        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{SHM_GIB}Gi"}}],
            **({"resourceClaims": [{"name": "neurons", "resourceClaimTemplateName": claim}]} if group.dra else {})}}
    return [*([neuron_claim_template(group, claim)] if group.dra else []),
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": name, "namespace": TRAINING_NAMESPACE, "labels": labels},
         "spec": {"clusterIP": "None", "selector": labels, "publishNotReadyAddresses": True}},
        {"apiVersion": "batch/v1", "kind": "Job",
         "metadata": {"name": name, "namespace": TRAINING_NAMESPACE,
                      "labels": labels | ({QUEUE_LABEL: queue} if queue else {})},  # the Job's only: Kueue reads it
         "spec": {"completionMode": "Indexed", "completions": nodes, "parallelism": nodes,
                  "backoffLimitPerIndex": BACKOFF_PER_INDEX, "podFailurePolicy": {"rules": [IGNORE_DISRUPTION]},
                  "template": pod}},
    ]


def inference_deployment(group: NeuronNodegroupSettings, *, name: str = "serve", image: str, replicas: int = 1,
                         neuron_cores: int | None = None, scheduler_extension: bool = True) -> Manifest:
    """A Deployment serving on the node group's devices: whole Neuron devices, or ``neuron_cores`` NeuronCores
    (``aws.amazon.com/neuroncore``) placed by the Neuron scheduler extension so they are contiguous; cpu and memory
    its share of the node's (:func:`whole_node_cpu_memory`), requests equal to limits (Guaranteed QoS)."""
    share = neuron_cores / CATALOG.get(group.instance_type).neuron_cores if neuron_cores else 1.0
    resource = ({"aws.amazon.com/neuroncore": str(neuron_cores)} if neuron_cores
                else {NEURON_RESOURCE: str(group.spec.accelerators)}) | whole_node_cpu_memory(group, share)
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "neuronfleet"}
    spec: dict[str, Any] = {
        "serviceAccountName": SERVING_SERVICE_ACCOUNT,
        "nodeSelector": {NODE_GROUP_LABEL: group.name}, "tolerations": [neuron_toleration()],
        "containers": [{"name": "serve", "image": image, "ports": [{"containerPort": 8080, "name": "http"}],
                        "resources": {"requests": resource, "limits": resource},
                        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10,
                                           "failureThreshold": 360}}]}
    if neuron_cores and scheduler_extension:
        spec["schedulerName"] = NEURON_SCHEDULER
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": SERVING_NAMESPACE, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def examples(settings: NeuronEksClusterSettings, *, inference_image: str,
             queues: dict[str, str] | None = None) -> dict[str, list[Manifest]]:
    """File name -> the objects in it: the node scripts, a training Job on the first UltraServer node group (else the
    first Trainium one), and an inference Deployment on the first Inferentia node group (else the first one).

    The training Job takes the whole node group, queued on its placement queue (:func:`training_job`); on a DRA
    UltraServer node group it takes one UltraServer (the most that lands whole there). ``queues``: node group -> the
    LocalQueue its Job is queued on instead (a sharing pool's training queue: the cluster makes no placement queue
    for a pool's node group)."""
    trn = next((g for g in settings.node_groups if g.spec.ultraserver_size > 1),
               next((g for g in settings.node_groups if g.instance_type.startswith("trn")), settings.node_groups[0]))
    inf = next((g for g in settings.node_groups if g.instance_type.startswith("inf")), settings.node_groups[0])
    nodes = trn.spec.ultraserver_size if trn.dra and trn.spec.ultraserver_size > 1 else trn.count
    job = training_job(trn, nodes=nodes, queue=(queues or {}).get(trn.name))
    return {"node-scripts.yaml": [node_scripts()], "training-job.yaml": job,
            "inference.yaml": [inference_deployment(inf, image=inference_image, neuron_cores=2,
                                                    scheduler_extension=settings.scheduler_extension)]}


def placement_notes(settings: NeuronEksClusterSettings) -> list[str]:
    """What a user must know before submitting on the UltraServer node groups, one line each: on a DRA node group the
    UltraServer label's source is unconfirmed (facts.eks_labels.ULTRASERVER_LABEL_SOURCE_DRA), so check it once;
    without it, placement on it fails loudly (nothing scheduled), never a silent split."""
    notes = []
    for g in settings.node_groups:
        size = g.spec.ultraserver_size
        if size > 1 and g.dra:
            label = ULTRASERVER_SERVER_LABEL.format(size=size)
            notes.append(
                f"node group {g.name} (DRA): who sets {label} on its nodes is unconfirmed; before the first job run "
                f"`{ULTRASERVER_LABEL_CHECK.format(group=g.name, label=label)}`: an empty column means its Jobs (one "
                "UltraServer each, not queued on Kueue) are never admitted to a node: their pods stay Pending on the "
                "required affinity (docs/checks.md ultraserver-label)")
    return notes


def write_examples(settings: NeuronEksClusterSettings, directory: str | Path, *, inference_image: str) -> list[Path]:
    """Write :func:`examples` as multi-document YAML files into ``directory``."""
    import yaml

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for file, objects in examples(settings, inference_image=inference_image).items():
        path = out / file
        plain = [json.loads(json.dumps(o)) for o in objects]  # no shared dicts: no YAML anchors in the files
        path.write_text(yaml.safe_dump_all(plain, sort_keys=False))
        written.append(path)
    return written
