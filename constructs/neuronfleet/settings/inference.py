"""Settings of :class:`neuronfleet.NeuronEndpoint`: the endpoint, its GPU variant, schedules and alarms."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from .. import rules
from ..catalog import CATALOG, AcceleratorFamily, InstanceSpec, sagemaker_instance_types, sagemaker_types
from ..problems import Problem
from ._base import Bool, Int, Name, Number, PositiveInt, Settings

ServingContainerName = Literal["lmi-neuronx", "tgi-neuronx", "vllm-neuronx", "custom"]
MIN_NEURON_TIMEOUT_S = 600
"""Neuron models load (and may compile on first start) for minutes: timeouts below 600 s fail startup."""
MAX_TIMEOUT_S = 3600
"""SageMaker's limit for ContainerStartupHealthCheckTimeoutInSeconds and ModelDataDownloadTimeoutInSeconds."""

Schedule = Annotated[str, AfterValidator(rules.schedule_expression)]


def _instance_type(value: str) -> str:
    if value not in sagemaker_instance_types():
        raise ValueError("a SageMaker ProductionVariantInstanceType, e.g. "
                         + ", ".join(sagemaker_types(AcceleratorFamily.INFERENTIA)))
    return value


class GpuVariant(Settings):
    """The endpoint's second variant, on GPU: live (weighted; the failover target) or shadow (a copy of the
    traffic, whose responses are not returned: pilot comparisons)."""

    what: ClassVar[str] = "gpu_variant"
    instance_type: str
    initial_weight: Number = Field(default=0.0, ge=0.0)
    initial_instance_count: PositiveInt = 1
    shadow: Bool = False
    image_uri: Annotated[str, AfterValidator(rules.container_image)] | None = None

    def _problems(self) -> Iterator[Problem]:
        gpus = sagemaker_types(AcceleratorFamily.GPU)
        if self.instance_type not in gpus:
            yield Problem("instance_type", self.instance_type, "a SageMaker GPU type of the catalog: " + ", ".join(gpus))

    @property
    def spec(self) -> InstanceSpec:
        return CATALOG.get(self.instance_type.removeprefix("ml."))


class ScheduledScaling(Settings):
    """A scheduled change of the Neuron variant's bounds, e.g. more capacity in the day (UTC)."""

    what: ClassVar[str] = "scheduled_scaling"
    name: Name
    schedule: Schedule
    """An Application Auto Scaling expression: ``cron(0 8 ? * MON-FRI *)``, ``rate(1 day)``, ``at(...)``."""
    min_instances: PositiveInt
    max_instances: PositiveInt

    def _problems(self) -> Iterator[Problem]:
        if self.min_instances > self.max_instances:
            yield Problem("min_instances", self.min_instances, f"at most max_instances ({self.max_instances})")


class EndpointAlarms(Settings):
    """Alarm thresholds on the Neuron variant."""

    what: ClassVar[str] = "alarms"
    latency_p99_ms: PositiveInt = 5000
    errors_5xx_per_5min: PositiveInt = 5
    model_errors_per_5min: PositiveInt = 5


class EndpointSettings(Settings):
    """What a Neuron endpoint serves and how it scales."""

    what: ClassVar[str] = "endpoint"
    instance_type: Annotated[str, AfterValidator(_instance_type)]
    container: ServingContainerName = "lmi-neuronx"
    image_uri: Annotated[str, AfterValidator(rules.container_image)] | None = None
    model_data_url: Annotated[str, AfterValidator(rules.s3_uri)] | None = None
    hf_model_id: Annotated[str, AfterValidator(rules.huggingface_model_id)] | None = None
    tensor_parallel_degree: PositiveInt = 2
    batch_size: PositiveInt = 1
    sequence_length: PositiveInt = 2048
    min_instances: PositiveInt = 1
    max_instances: PositiveInt = 2
    target_invocations_per_instance: Number = Field(default=20, gt=0)
    scale_in_cooldown_s: Int = Field(default=600, ge=0, le=3600)
    scale_out_cooldown_s: Int = Field(default=120, ge=0, le=3600)
    scheduled_scaling: tuple[ScheduledScaling, ...] = ()
    volume_size_gib: Int = Field(default=64, ge=1, le=512)
    startup_health_check_timeout_s: Int = Field(default=1800, ge=MIN_NEURON_TIMEOUT_S, le=MAX_TIMEOUT_S)
    model_download_timeout_s: Int = Field(default=1800, ge=MIN_NEURON_TIMEOUT_S, le=MAX_TIMEOUT_S)
    alarms: EndpointAlarms = EndpointAlarms()
    data_capture_percent: Int | None = Field(default=None, ge=1, le=100)
    gpu_variant: GpuVariant | None = None

    @property
    def spec(self) -> InstanceSpec:
        return CATALOG.get(self.instance_type.removeprefix("ml."))

    def _problems(self) -> Iterator[Problem]:
        inf2 = sagemaker_types(AcceleratorFamily.INFERENTIA)
        if self.instance_type not in inf2:
            yield Problem("instance_type", self.instance_type, "an Inferentia2 type: " + ", ".join(inf2))
        else:
            cores = self.spec.neuron_cores
            if cores % self.tensor_parallel_degree:
                yield Problem("tensor_parallel_degree", self.tensor_parallel_degree,
                              f"a divisor of the {cores} NeuronCores of {self.instance_type}: "
                              + ", ".join(str(d) for d in range(1, cores + 1) if cores % d == 0))
        if self.min_instances > self.max_instances:
            yield Problem("min_instances", self.min_instances, f"at most max_instances ({self.max_instances})")
        if (self.container == "custom") != (self.image_uri is not None):
            yield Problem("image_uri", self.image_uri, "an image URI exactly when container is 'custom'")
        if (self.model_data_url is None) == (self.hf_model_id is None):
            yield Problem("model_data_url", self.model_data_url,
                          "exactly one of model_data_url (s3://...) or hf_model_id")
        seen: set[str] = set()
        for j, action in enumerate(self.scheduled_scaling):
            if action.name in seen:
                yield Problem(f"scheduled_scaling[{j}].name", action.name, "a name not used by another action")
            seen.add(action.name)
