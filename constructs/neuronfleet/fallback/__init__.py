"""GpuPool: the GPU fallback pool for training jobs."""
