"""The names of a serving variant's alarms: NeuronEndpoint names them so, and the failover derives them from the
endpoint's name (so its environment need not carry them)."""

from __future__ import annotations

NEURON_ALARMS = {"latency": "latency-p99", "errors5xx": "errors-5xx", "modelErrors": "model-errors"}
"""The alarms of each serving variant (NeuronEndpoint.alarms keys) -> the suffix of their names."""
GPU_ALARM_INFIX = "gpu-"
"""The GPU variant's alarms: ``<endpoint name>-gpu-<suffix>``; the Neuron variant's keep ``<endpoint name>-<suffix>``."""


def alarm_name(endpoint_name: str, kind: str, *, gpu: bool = False) -> str:
    """The name NeuronEndpoint gives the alarm ``kind`` of an endpoint's Neuron variant, ``<endpoint name>-<suffix>``,
    or of its GPU variant, ``<endpoint name>-gpu-<suffix>`` (at most 63 + 17 characters; CloudWatch allows 255:
    botocore's cloudwatch and sagemaker models, EndpointName and AlarmName, read 2026-11-22, pinned by a test). Names
    set, not generated, so that the failover's environment need not carry them: it derives them from the endpoint's
    name."""
    return f"{endpoint_name}-{GPU_ALARM_INFIX if gpu else ''}{NEURON_ALARMS[kind]}"


def default_alarms(endpoint_name: str, *, gpu: bool = False) -> tuple[str, ...]:
    """Every alarm name of one variant of the endpoint, in :data:`NEURON_ALARMS` order."""
    return tuple(alarm_name(endpoint_name, kind, gpu=gpu) for kind in NEURON_ALARMS)
