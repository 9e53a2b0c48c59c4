"""The tag keys neuronfleet puts on resources (TrainiumCluster, NeuronEndpoint, GpuPool, ... via
``neuronfleet.core.tagging``) and its cost handlers read back. Activate the cost-allocation ones in Billing."""

FLEET_TAG = "neuronfleet:fleet"
"""The fleet a resource belongs to (``tag_fleet``): the cost handlers group spend by it (Cost Explorer group-by, the CUR
``resource_tags`` column) and find the fleet's endpoints and instances by it."""

PHASE_TAG = "neuronfleet:phase"
"""The migration phase of the fleet (evaluation | pilot | production), set with :data:`FLEET_TAG` by ``tag_fleet``."""

FAMILY_TAG = "neuronfleet:accelerator-family"
"""The accelerator family of a resource (trainium | inferentia | gpu), set by ``tag_family``."""

MODEL_TAG = "neuronfleet:model"
"""The name of the model an endpoint serves, as the fleet file gives it (``endpoints[].name``; NeuronEndpoint's
``model_name``): the migration report names the model by it rather than by the generated endpoint name."""

CAPACITY_TAG = "neuronfleet:capacity"
"""The capacity a training instance's launch template targets (``on-demand``, ``odcr``, ``capacity-block``), tagged
on its instances so the waste detector can tell one launched outside its reservation (TrainiumCluster sets it)."""

THROUGHPUT_TAG = "neuronfleet:neuron-per-gpu"
"""On an endpoint with a GPU variant: how many Neuron instances one GPU instance replaces, as the fleet file states it
(``gpu_variant.neuron_instances_per_gpu_instance``; the failover's sizing rule). Set only when the fleet file gives it,
for a hot, shadow or warm GPU variant (a warm one's type is the Neuron variant's last instance pool): the migration
report computes what the same work costs on GPU alone from this capacity figure (cost.logic.story.savings)."""

DEVICES_TAG = "neuronfleet:neuron-devices"
"""On an EKS Neuron node group's instances (NeuronEksCluster tags its launch template): which of Neuron's two device
managers hands out the node's devices, :data:`DEVICE_PLUGIN_DEVICES` or :data:`DRA_DEVICES` (the node's
``neuronfleet/neuron-devices`` label says the same inside the cluster). The waste detector reads it: the kit runs no
utilisation publisher on a DRA node ("Neuron Monitor does not currently support environments using the Neuron DRA
(Dynamic Resource Allocation) Driver", aws-neuron/aws-neuron-sdk deploy/infrastructure/monitoring.rst @ 81ce03ae,
read 2026-11-29), so such a node is reported as not measured, never as silent. Absent on Batch hosts."""

DEVICE_PLUGIN_DEVICES, DRA_DEVICES = "device-plugin", "dra"
"""The values of :data:`DEVICES_TAG`."""
