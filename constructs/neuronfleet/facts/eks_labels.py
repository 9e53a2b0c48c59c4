"""The names a Neuron node carries on EKS and the resources its pods request: the kit's own labels, the Neuron
taint, the labels Neuron's device plugin adds, the extended resources. No aws-cdk-lib import here."""

from __future__ import annotations

NEURON_TAINT_KEY = "aws.amazon.com/neuron"
NEURON_TAINT_VALUE = "true"
NEURON_TAINT_EFFECT = "NoSchedule"
"""Every Neuron node group is tainted ``aws.amazon.com/neuron=true:NoSchedule``: only pods that ask for Neuron land
there. The key is the one the Neuron chart's device plugin and DRA driver tolerate (``key: aws.amazon.com/neuron,
operator: Exists, effect: NoSchedule``: aws-neuron/neuron-helm-charts values.yaml @ 8172e5e1, chart 1.0.0, and @
b77a6f90, 1.9.0, the kit's pin: neuronfleet.facts.eks_pins, tests/data/eks/neuron-helm-chart-1.9.0-values.yaml); the
EFA device plugin does not tolerate it unless told (the kit tells it)."""

LABEL_PREFIX = "neuronfleet/"
NODE_GROUP_LABEL = LABEL_PREFIX + "node-group"
CAPACITY_LABEL = LABEL_PREFIX + "capacity"
"""on-demand, odcr or capacity-block."""
ULTRASERVER_SIZE_LABEL = LABEL_PREFIX + "ultraserver-size"
"""Instances per UltraServer (only on UltraServer node groups): a job selects whole UltraServers by it."""
DEVICES_LABEL = LABEL_PREFIX + "neuron-devices"
"""``device-plugin`` or ``dra``: which of the Neuron chart's two device managers runs on the node (never both)."""
DEVICE_PLUGIN, DRA = "device-plugin", "dra"

ULTRASERVER_SERVER_LABEL = "neuron.amazonaws.com/ultraserver-server-id-{size}"
ULTRASERVER_NODE_LABEL = "neuron.amazonaws.com/ultraserver-node-id-{size}"
ULTRASERVER_MODE_LABEL = "neuron.amazonaws.com/ultraserver-mode"
"""Labels on UltraServer nodes: which UltraServer of ``size`` nodes a node is in and its place there. Neuron's
UltraServer guide names the device plugin (2.30.0.0 or later) as their prerequisite, shows them in ``kubectl get
nodes`` and uses ``ultraserver-server-id-4`` as the topology key of whole 4-node UltraServers (aws-neuron/
aws-neuron-sdk deploy/eks/ultraserver.rst @ 81ce03ae, read 2026-11-23).

On a DRA node group (no device plugin) WHO SETS THEM IS UNCONFIRMED (:data:`ULTRASERVER_LABEL_SOURCE_DRA`)."""

ULTRASERVER_LABEL_SOURCE_DRA = (
    "unconfirmed: Neuron's DRA guide (deploy/eks/dra.rst @ 81ce03ae) says not to install the device plugin, yet its "
    "own UltraServer example (deploy/files/specs/4-node-inference-us.yaml, tests/data/eks) places a LeaderWorkerSet "
    "by exclusive-topology neuron.amazonaws.com/ultraserver-server-id-4, and the chart's DRA ClusterRole may patch "
    "nodes (neuron-helm-charts templates/dra-driver/dra-driver-rbac.yaml @ 7324cd0e); no Neuron text or public "
    "source says the DRA driver sets the label (searched 2026-11-29: aws-neuron repositories, the chart's DRA "
    "DaemonSet @ 97e1b7d3, the SDK docs; the driver's source is not public)")
"""Why the kit cannot promise the UltraServer label on DRA nodes, and so why the check below exists."""

ULTRASERVER_LABEL_CHECK = "kubectl get nodes -l neuronfleet/node-group={group} -L {label}"
"""The one command that shows whether a node group's nodes carry the UltraServer label (an empty column: they do
not). ``neuronfleet eks examples`` prints it for each DRA UltraServer node group (eks.manifests.placement_notes).
Without the label, placement there fails loudly, never silently: a DRA group's Jobs are one UltraServer each and
queued on no Kueue queue (the kit builds none for DRA groups: facts.kueue.TAS_DRA), so only their required pod
affinity at the label places them, and kube-scheduler's filter passes no node without the label, the first pod's
self-affinity included (kubernetes/kubernetes pkg/scheduler/framework/plugins/interpodaffinity/filtering.go
``satisfyPodAffinity`` @ 53f1b9d6 and its later versions: "All topology labels must exist on the node"; the first pod
of a series passes only where "the node has all the requested topologies"): every pod stays Pending. On a
device-plugin group the plugin sets the label (2.30.0.0 or later) and the cluster's placement queue uses it as a
Topology level; Kueue leaves a node without a level's label out of the flavor (kubernetes-sigs/kueue
pkg/util/tas/node.go ``NodeMatchesFlavor`` @ 8eab6877, test pkg/cache/scheduler/tas_nodes_cache_test.go
TestNodesCacheFind "match labels and levels"), so a queued Job waits rather than split."""

KUEUE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
KUEUE_SLICE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
KUEUE_SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
"""Kueue's topology-aware scheduling annotations on a Job's pod template (kubernetes-sigs/kueue apis/kueue/v1beta2/
topology_types.go @ 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb, v0.19.2): required: "requires scheduling all pods on
nodes within the same topology domain corresponding to the topology level indicated by the annotation value";
slice-required: "requires scheduling each PodSet slice on nodes within the topology domain" of that level, with
slice-size "the requested size of a podset slice" (required with it). Read by pkg/controller/jobframework/tas.go
``Build`` and checked by tas_validation.go ``ValidateTASPodSetRequest``."""

NEURON_RESOURCE = "aws.amazon.com/neuron"
NEURONCORE_RESOURCE = "aws.amazon.com/neuroncore"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
"""Extended resources: Neuron devices (chips), NeuronCores, EFA interfaces (aws-neuron-sdk deploy/eks/dra.rst @
81ce03ae: a device-plugin worker asks ``aws.amazon.com/neuron: "16"`` and ``vpc.amazonaws.com/efa: "16"``)."""

NODE_INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
