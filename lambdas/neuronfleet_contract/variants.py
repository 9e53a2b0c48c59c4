"""The names of an endpoint's serving variants: NeuronEndpoint names its production variants so, the failover shifts
traffic between them, the migration report and the ``Variant`` metric dimension use the same words."""

NEURON_VARIANT = "neuron"
"""The variant on Inferentia/Trainium (ml.inf2.*, ml.trn*)."""

GPU_VARIANT = "gpu"
"""The GPU variant: a standby for the failover, or a baseline for the comparison."""

VARIANTS = (NEURON_VARIANT, GPU_VARIANT)
