"""Cost monitors, the CUR export and analytics, and the GPU-to-Neuron estimate."""
