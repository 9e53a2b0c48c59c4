"""The names a Neuron node carries on EKS and the resources its pods request: the kit's own labels, the Neuron
taint, the labels Neuron's device plugin adds, the extended resources. No aws-cdk-lib import here."""

from __future__ import annotations

NEURON_TAINT_KEY = "aws.amazon.com/neuron"
NEURON_TAINT_VALUE = "true"
NEURON_TAINT_EFFECT = "NoSchedule"
"""Every Neuron node group is tainted ``aws.amazon.com/neuron=true:NoSchedule``: only pods that ask for Neuron land
there. The key is the one the Neuron chart's device plugin and DRA driver tolerate (``key: aws.amazon.com/neuron,
operator: Exists, effect: NoSchedule``: aws-neuron/neuron-helm-charts values.yaml @ 8172e5e1 and the 1.10.0 values
quoted in neuronfleet.facts.eks_pins); the EFA device plugin does not tolerate it unless told (the kit tells it)."""

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
"""Labels Neuron's device plugin (2.30.0.0 or later) puts on UltraServer nodes: which UltraServer of ``size`` nodes
a node is in and its place there; Neuron's MPI guide uses ``ultraserver-server-id-4`` as the topology key of whole
4-node UltraServers (aws-neuron/aws-neuron-sdk deploy/eks/ultraserver.rst @ 81ce03ae, read 2026-11-23)."""

NEURON_RESOURCE = "aws.amazon.com/neuron"
NEURONCORE_RESOURCE = "aws.amazon.com/neuroncore"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
"""Extended resources: Neuron devices (chips), NeuronCores, EFA interfaces (aws-neuron-sdk deploy/eks/dra.rst @
81ce03ae: a device-plugin worker asks ``aws.amazon.com/neuron: "16"`` and ``vpc.amazonaws.com/efa: "16"``)."""

NODE_INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
