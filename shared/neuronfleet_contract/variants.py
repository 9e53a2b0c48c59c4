"""The names of an endpoint's serving variants: NeuronEndpoint names its production variants so, the failover shifts
traffic between them, the migration report and the ``Variant`` metric dimension use the same words."""

NEURON_VARIANT = "neuron"
"""The variant on Inferentia/Trainium (ml.inf2.*, ml.trn*)."""

GPU_VARIANT = "gpu"
"""The GPU variant: a standby for the failover, or a baseline for the comparison."""

VARIANTS = (NEURON_VARIANT, GPU_VARIANT)

GPU_POOL_SHARE = f"{GPU_VARIANT}-pool"
"""Not a variant: the key under which the migration report books an endpoint's share of the GPU pool's instances
(an endpoint whose GPU standby is a pool of types rather than one variant)."""
