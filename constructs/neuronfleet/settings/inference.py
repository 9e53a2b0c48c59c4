"""Settings of :class:`neuronfleet.NeuronEndpoint`: the endpoint, its GPU variant, schedules and alarms."""

from __future__ import annotations

import math
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
MAX_VOLUME_SIZE_GIB = 512
"""SageMaker's limit for a production variant's ML storage volume: ``ProductionVariantVolumeSizeInGB``, min 1, max
512 (botocore ``sagemaker/2017-07-24/service-2.json``, read 2026-11-22; tests/unit/test_inference_settings.py checks
it against the installed botocore). Instance types may allow less; SageMaker refuses the field for types with local
NVMe storage."""
MAX_DATA_CAPTURE_RETENTION_DAYS = 3650
"""neuronfleet's own bound on data-capture retention (ten years): prompts and responses are not kept forever."""
ROLLING_MIN_BATCH_SHARE, ROLLING_MAX_BATCH_SHARE = 0.05, 0.5
"""RollingUpdatePolicy.MaximumBatchSize "must be between 5% to 50% of the variant's total instance count" (botocore
``sagemaker/2017-07-24/service-2.json`` RollingUpdatePolicy, read 2026-11-22)."""

Schedule = Annotated[str, AfterValidator(rules.schedule_expression)]


def _instance_type(value: str) -> str:
    if value not in sagemaker_instance_types():
        raise ValueError("a SageMaker ProductionVariantInstanceType, e.g. "
                         + ", ".join(sagemaker_types(AcceleratorFamily.INFERENTIA)))
    return value


class GpuVariant(Settings):
    """The endpoint's second variant, on GPU: live (weighted; the failover target, autoscaled between
    ``min_instances`` and ``max_instances``) or shadow (a copy of the traffic, whose responses are not returned:
    pilot comparisons).

    It serves a model a GPU container can load: its own ``model_data_url`` or ``hf_model_id``. Without one it
    serves the Neuron variant's model: a hub id (plain weights every server loads), or an S3 artifact only when
    ``artifact_is_framework_neutral`` says it holds plain weights rather than Neuron-compiled ones.
    """

    what: ClassVar[str] = "gpu_variant"
    instance_type: str
    initial_weight: Number = Field(default=0.0, ge=0.0)
    min_instances: PositiveInt = 1
    """Instances at creation and the autoscaling floor: the standby that runs while Neuron serves."""
    max_instances: PositiveInt = 1
    """The autoscaling ceiling: enough to carry the Neuron variant's ``max_instances`` (see below)."""
    neuron_instances_per_gpu_instance: Number = Field(default=1.0, gt=0)
    """How many Neuron instances of this endpoint one GPU instance replaces (GPU:Neuron throughput, from your pilot).
    The failover raises the GPU variant to ``ceil(Neuron instances / this)`` before it moves traffic."""
    target_invocations_per_instance: Number | None = Field(default=None, gt=0)
    """Target tracking of the GPU variant; default: the Neuron target times ``neuron_instances_per_gpu_instance``."""
    shadow: Bool = False
    image_uri: Annotated[str, AfterValidator(rules.container_image)] | None = None
    model_data_url: Annotated[str, AfterValidator(rules.s3_uri)] | None = None
    hf_model_id: Annotated[str, AfterValidator(rules.huggingface_model_id)] | None = None
    artifact_is_framework_neutral: Bool = False
    """The endpoint's ``model_data_url`` holds plain weights (safetensors), not Neuron-compiled ones: the GPU variant
    may load it too."""

    def _problems(self) -> Iterator[Problem]:
        gpus = sagemaker_types(AcceleratorFamily.GPU)
        if self.instance_type not in gpus:
            yield Problem("instance_type", self.instance_type, "a SageMaker GPU type of the catalog: " + ", ".join(gpus))
        if self.min_instances > self.max_instances:
            yield Problem("min_instances", self.min_instances, f"at most max_instances ({self.max_instances})")
        if self.model_data_url is not None and self.hf_model_id is not None:
            yield Problem("model_data_url", self.model_data_url, "at most one of model_data_url or hf_model_id")
        if self.artifact_is_framework_neutral and (self.model_data_url or self.hf_model_id):
            yield Problem("artifact_is_framework_neutral", True,
                          "false when the GPU variant has its own model (model_data_url or hf_model_id)")

    @property
    def spec(self) -> InstanceSpec:
        return CATALOG.get(self.instance_type.removeprefix("ml."))

    @property
    def own_model(self) -> bool:
        return self.model_data_url is not None or self.hf_model_id is not None

    def instances_for(self, neuron_instances: int) -> int:
        """GPU instances that carry the load of ``neuron_instances`` Neuron instances (the failover's rule)."""
        return math.ceil(neuron_instances / self.neuron_instances_per_gpu_instance - 1e-9)


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
    volume_size_gib: Int = Field(default=64, ge=1, le=MAX_VOLUME_SIZE_GIB)
    model_size_gib: PositiveInt | None = None
    """The unpacked model's size. When given, the volume must hold it: twice over for an S3 artifact (the archive
    and its unpacked copy are both on the volume while SageMaker unpacks it), once for a hub download."""
    startup_health_check_timeout_s: Int = Field(default=1800, ge=MIN_NEURON_TIMEOUT_S, le=MAX_TIMEOUT_S)
    model_download_timeout_s: Int = Field(default=1800, ge=MIN_NEURON_TIMEOUT_S, le=MAX_TIMEOUT_S)
    alarms: EndpointAlarms = EndpointAlarms()
    data_capture_percent: Int | None = Field(default=None, ge=1, le=100)
    data_capture_retention_days: Int = Field(default=30, ge=1, le=MAX_DATA_CAPTURE_RETENTION_DAYS)
    """Captured prompts and responses expire after this many days (an S3 lifecycle rule on the endpoint's prefix;
    noncurrent versions too)."""
    data_capture_versioning: Bool = False
    """Version the capture bucket (a bucket shared by several endpoints is versioned if any of them asks)."""
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
        yield from self._volume_problems()
        yield from self._gpu_problems()
        seen: set[str] = set()
        for j, action in enumerate(self.scheduled_scaling):
            if action.name in seen:
                yield Problem(f"scheduled_scaling[{j}].name", action.name, "a name not used by another action")
            seen.add(action.name)

    def _volume_problems(self) -> Iterator[Problem]:
        if self.model_size_gib is None:
            return
        copies = 2 if self.model_data_url else 1
        if self.volume_size_gib < copies * self.model_size_gib:
            how = "the archive and its unpacked copy" if copies == 2 else "the downloaded model"
            yield Problem("volume_size_gib", self.volume_size_gib,
                          f"at least {copies * self.model_size_gib} GiB for {how} (model_size_gib "
                          f"{self.model_size_gib}) and at most {MAX_VOLUME_SIZE_GIB}")

    def _gpu_problems(self) -> Iterator[Problem]:
        gpu = self.gpu_variant
        if gpu is None:
            return
        if self.model_data_url and not gpu.own_model and not gpu.artifact_is_framework_neutral:
            yield Problem("gpu_variant.model_data_url", None,
                          f"a model the GPU container can load: model_data_url (s3://...) or hf_model_id of its own; "
                          f"{self.model_data_url} is the Neuron variant's artifact, which holds Neuron-compiled "
                          "weights a CUDA container cannot load (set gpu_variant.artifact_is_framework_neutral: true "
                          "if it holds plain weights)")
        if self.container == "custom" and gpu.image_uri is None:
            yield Problem("gpu_variant.image_uri", None,
                          "a GPU image: with container 'custom' the Neuron image_uri cannot serve on GPU")
        if not gpu.shadow:
            need = gpu.instances_for(self.max_instances)
            if gpu.max_instances < need:
                yield Problem("gpu_variant.max_instances", gpu.max_instances,
                              f"at least {need}: the Neuron variant's max_instances ({self.max_instances}) divided "
                              f"by neuron_instances_per_gpu_instance ({gpu.neuron_instances_per_gpu_instance:g}), "
                              "rounded up, so the GPU variant can carry its whole load")

    @property
    def rolling_batch_instances(self) -> int | None:
        """Instances per step of a rolling update, or None when SageMaker cannot roll this endpoint.

        Rolling deployments exclude multi-variant endpoints ("Exclusions", SageMaker developer guide,
        https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-exclusions.html, read 2026-11-22),
        and a step must be 5% to 50% of the variant's instances: one batch size must fit every count between
        ``min_instances`` and ``max_instances``. Otherwise SageMaker's default applies (blue/green: a second fleet).
        """
        if self.gpu_variant is not None:
            return None
        batch = max(1, math.ceil(ROLLING_MIN_BATCH_SHARE * self.max_instances))
        return batch if batch <= ROLLING_MAX_BATCH_SHARE * self.min_instances else None
