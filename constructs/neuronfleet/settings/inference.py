"""Settings of :class:`neuronfleet.NeuronEndpoint`: the endpoint, its GPU variant, schedules and alarms."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, model_validator

from ..core import rules
from ..core.problems import Problem
from ..facts import neuron
from ..facts.catalog import CATALOG, AcceleratorFamily, InstanceSpec, sagemaker_instance_types, sagemaker_types
from ..facts.guardrails import guardrails
from ._base import Bool, Int, Name, Number, PositiveInt, Settings
from .cutover import CutoverSettings
from .judge import PilotJudgeSettings

ServingContainerName = Literal["vllm-neuronx", "hf-inference-neuronx", "tgi-neuronx", "lmi-neuronx", "neuron-vllm",
                               "custom"]
"""Serving containers by name, resolved from ``data/neuron_compat.json`` (``neuronfleet.facts.neuron.serving_images``)."""
ModelTask = Literal["text-generation", "embeddings", "text-classification"]
GpuStandby = Literal["hot", "warm", "cold"]
Invocation = Literal["real-time", "async"]
"""How an endpoint is invoked: ``real-time`` (InvokeEndpoint, the caller waits) or ``async`` (InvokeEndpointAsync:
SageMaker queues the request, writes the answer to S3 and notifies SNS; the endpoint scales to zero instances)."""
ASYNC_AUTOSCALE_DOC = ("SageMaker developer guide, \"Autoscale an asynchronous endpoint\", "
                       "https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-autoscale.html (awsdocs/"
                       "amazon-sagemaker-developer-guide doc_source/async-inference-autoscale.md @ d14094bb), read "
                       "2026-11-29")
"""Where the scale-to-zero mechanics come from: MinCapacity 0, target tracking on ApproximateBacklogSizePerInstance
(Average, dimension EndpointName, example target 5.0) and the step policy on HasBacklogWithoutCapacity."""
DEFAULT_BACKLOG_PER_INSTANCE = 5.0
"""The target of the backlog tracking: AWS's own example value (ASYNC_AUTOSCALE_DOC, TargetValue 5.0)."""
SCALE_FROM_ZERO_COOLDOWN_S = 300
"""The scale-from-zero step policy's Cooldown in AWS's example (ASYNC_AUTOSCALE_DOC)."""
MAX_CONCURRENT_INVOCATIONS = 1000
"""AsyncInferenceClientConfig.MaxConcurrentInvocationsPerInstance: 1-1000 (botocore 1.44.5 sagemaker/2017-07-24
MaxConcurrentInvocationsPerInstance, read 2026-11-29; tests/unit/test_async_endpoint.py pins it)."""
MAX_INSTANCE_POOLS = 5
"""A production variant's ``InstancePools``: 1 to 5 entries, priority 1 to 5 (botocore ``sagemaker/2017-07-24``
InstancePoolList and InstancePoolPriority, read 2026-11-22)."""
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
COMPILE_AT_START_TIMEOUT_S = MAX_TIMEOUT_S
"""The startup health-check timeout of an endpoint that may compile its model at start (allow_non_cached_model):
Neuron compilation takes minutes to an hour for large models (optimum-neuron's cache guide), so it gets SageMaker's
longest wait unless set."""
MIN_PROVISION_TIMEOUT_S, MAX_PROVISION_TIMEOUT_S = 300, 3600
"""ProductionVariant.VariantInstanceProvisionTimeoutInSeconds: 300-3600 (botocore ``sagemaker/2017-07-24``
VariantInstanceProvisionTimeoutInSeconds, 1.44.5, read 2026-11-23)."""
DEFAULT_POOL_PROVISION_TIMEOUT_S = 1800
"""neuronfleet's VariantInstanceProvisionTimeoutInSeconds for a variant with instance pools: the total time SageMaker
spends provisioning across the pools (it moves to the next pool on insufficient capacity) before the creation or
scale-out fails ("Deploy to multiple instance types with instance pools", SageMaker developer guide,
https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-heterogeneous.html, read 2026-11-23). Half an hour:
room to retry scarce Neuron capacity, while an endpoint that waits longer stays Updating (no other update, such as
the failover's, can start on it). SageMaker's own default when the field is unset is not documented there."""
SHAPE_SETTINGS = ("tensor_parallel_degree", "batch_size", "sequence_length")
KIT_SHAPE_DEFAULTS = {"tensor_parallel_degree": 2, "batch_size": 1, "sequence_length": 2048}
"""neuronfleet's shapes for containers that take every shape from it (all but vllm-neuronx, whose server chooses
unset ones itself: see ``shapes_from_container`` in data/neuron_compat.json)."""
ServingLibrary = Literal["nxd-inference", "torch-neuronx", "torchneuron", "vllm-neuron"]
"""The Neuron serving libraries recorded in data/neuron_compat.json ``component_limits`` (neuron.SERVING_LIBRARIES)."""
ROLLING_MIN_BATCH_SHARE, ROLLING_MAX_BATCH_SHARE = (p / 100 for p in guardrails().rolling_batch_percent)
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
    revision: Annotated[str, AfterValidator(rules.huggingface_revision)] | None = None
    """The commit of ``hf_model_id`` to load (see EndpointSettings.revision)."""
    artifact_is_framework_neutral: Bool = False
    """The endpoint's ``model_data_url`` holds plain weights (safetensors), not Neuron-compiled ones: the GPU variant
    may load it too."""
    standby: GpuStandby = "hot"
    """What the GPU standby costs while Neuron serves. ``hot``: a live variant of ``min_instances`` running instances
    (the run-time failover's target). ``warm``: no GPU instance runs; ``instance_type`` becomes the Neuron variant's
    last instance pool (SageMaker provisions it only when no Neuron capacity is left at creation or scale-out), and no
    run-time failover exists for the endpoint. ``cold`` (inference components scaled to zero) is not built."""

    def _problems(self) -> Iterator[Problem]:
        gpus = sagemaker_types(AcceleratorFamily.GPU)
        if self.instance_type not in gpus:
            yield Problem("instance_type", self.instance_type, "a SageMaker GPU type of the catalog: " + ", ".join(gpus))
        if self.standby == "cold":
            yield Problem("standby", "cold", "hot or warm: cold (inference components scaled to zero instances) is not "
                          "built by neuronfleet; warm costs nothing while Neuron serves and covers capacity at "
                          "provisioning, hot keeps running instances for the run-time failover")
        if self.standby == "warm" and self.shadow:
            yield Problem("standby", "warm", "hot for a shadow variant: a shadow copy of the traffic needs running "
                          "instances; warm makes the GPU type an instance pool of the Neuron variant")
        if self.min_instances > self.max_instances:
            yield Problem("min_instances", self.min_instances, f"at most max_instances ({self.max_instances})")
        if self.model_data_url is not None and self.hf_model_id is not None:
            yield Problem("model_data_url", self.model_data_url, "at most one of model_data_url or hf_model_id")
        if self.revision is not None and self.hf_model_id is None:
            yield Problem("revision", self.revision, "unset without hf_model_id: a revision pins the GPU variant's own "
                          "hub model (a GPU variant without one serves the Neuron variant's model at its revision)")
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


class AsyncInferenceSettings(Settings):
    """An asynchronous endpoint's queue, scaling and alarms (``invocation: async``)."""

    what: ClassVar[str] = "async_inference"
    target_backlog_per_instance: Number = Field(default=DEFAULT_BACKLOG_PER_INSTANCE, gt=0)
    """Target tracking on ``ApproximateBacklogSizePerInstance`` (queued requests per instance): instances are added
    above it and removed below it, down to zero when the queue is empty."""
    max_concurrent_invocations_per_instance: Int | None = Field(default=None, ge=1, le=MAX_CONCURRENT_INVOCATIONS)
    """Requests SageMaker's client sends one instance at once (AsyncInferenceClientConfig); unset: SageMaker chooses."""
    scale_from_zero_cooldown_s: Int = Field(default=SCALE_FROM_ZERO_COOLDOWN_S, ge=0, le=3600)
    """The scale-from-zero step policy's cooldown (AWS's example: 300)."""
    oldest_request_alarm_s: PositiveInt = 1800
    """Alarm when the oldest queued request is older than this (``ApproximateAgeOfOldestRequest``, seconds): the
    queue is not drained (no capacity, a stuck model)."""
    invocation_failures_per_5min: PositiveInt = 1
    """Alarm at this many failed invocations in 5 minutes (``InvocationFailures``: each one's request is answered in
    the failure location and on the error topic)."""


class EndpointSettings(Settings):
    """What a Neuron endpoint serves and how it scales."""

    what: ClassVar[str] = "endpoint"
    instance_type: Annotated[str, AfterValidator(_instance_type)]
    """An Inferentia2 or Trainium SageMaker type (``ml.inf2.*``, ``ml.trn1.*``, ``ml.trn1n.32xlarge``,
    ``ml.trn2.48xlarge``): the first instance pool when ``instance_pools`` adds more."""
    container: ServingContainerName = "vllm-neuronx"
    image_uri: Annotated[str, AfterValidator(rules.container_image)] | None = None
    image_sdk: Annotated[str, AfterValidator(neuron.sdk_version)] | None = None
    """The Neuron SDK a custom image carries, when its tag does not say (``...-sdk2.26.1-...``)."""
    image_library: ServingLibrary | None = None
    """The Neuron library a custom image serves with: ``nxd-inference`` (Inf2/Trn1 up to SDK 2.28, Trn2 up to 2.31),
    ``torch-neuronx`` (up to 2.31), ``torchneuron`` or ``vllm-neuron`` (Trn2 only). Unset: the image's SDK must fit
    at least one of them on every Neuron pool."""
    task: ModelTask | None = None
    """What the model does; when given, the container must serve it (TGI and LMI serve text generation only)."""
    logical_nc_config: Literal[1, 2] | None = None
    """Trn2 only: the logical NeuronCore configuration (default 2: a trn2.48xlarge presents 64 logical cores; 1: 128)."""
    instance_pools: tuple[Annotated[str, AfterValidator(_instance_type)], ...] = ()
    """More instance types for the Neuron variant, in priority order after ``instance_type``: SageMaker provisions the
    next one when the one before has no capacity (InstancePools). A GPU type serves the GPU variant's model."""
    model_data_url: Annotated[str, AfterValidator(rules.s3_uri)] | None = None
    model_bucket_account: Annotated[str, AfterValidator(rules.account_id)] | None = None
    """The account that owns the buckets of ``model_data_url`` and ``gpu_variant.model_data_url`` (12 digits; default:
    the stack's account): the execution role reads them only while they belong to it (``s3:ResourceAccount``;
    docs/security.md, "Bucket reads"). Set it for a model bucket of another account."""
    hf_model_id: Annotated[str, AfterValidator(rules.huggingface_model_id)] | None = None
    revision: Annotated[str, AfterValidator(rules.huggingface_revision)] | None = None
    """The commit of ``hf_model_id`` every instance loads (40 hex digits). Unset, each instance start (creation,
    scale-out, replacement) downloads whatever the default branch holds then: synth warns. With vllm-neuronx, the pin
    reaches vLLM (weights, tokenizer); optimum-neuron's ``serve`` reads the model's config for its cache lookup from
    the default branch."""
    hf_token_secret_arn: Annotated[str, AfterValidator(rules.secret_arn)] | None = None
    """A Secrets Manager secret holding a Hugging Face token (its SecretString), for gated hub models. The token never
    reaches a SageMaker model: with a named container each gated hub model is copied once into the endpoint's model
    bucket by a function that reads the secret at run time (HubModelCopy), then served from there (ModelDataSource,
    uncompressed, with network isolation); the copy is of one commit, so each hub model needs its ``revision``. A
    custom image gets the ARN (HF_TOKEN_SECRET_ARN) and its execution role may read that one secret
    (docs/security.md, "Secrets: the Hugging Face token")."""
    tensor_parallel_degree: PositiveInt | None = None
    """NeuronCores the model is sharded over. Unset: vllm-neuronx lets the server choose (a compiled artifact's own, or
    the largest cached configuration that fits); other containers get 2."""
    batch_size: PositiveInt | None = None
    """Unset: vllm-neuronx lets the server choose (as above; 1 when it compiles); other containers get 1."""
    sequence_length: PositiveInt | None = None
    """Unset: vllm-neuronx lets the server choose (as above; 2048 when it compiles); other containers get 2048."""
    allow_non_cached_model: Bool | None = None
    """vllm-neuronx with a hub model: required. ``false``: the server only loads a model whose exact (instance, batch,
    sequence length, TP, dtype) is in optimum-neuron's public cache and otherwise stops at start ("No cached version
    found"; check with ``optimum-cli neuron cache lookup <model>``). ``true``: it compiles at every instance start when
    the cache has no match, which takes minutes to an hour and must end within the startup health-check timeout
    (default then 3600 s, SageMaker's most)."""
    instance_provision_timeout_s: Int | None = Field(default=None, ge=MIN_PROVISION_TIMEOUT_S,
                                                     le=MAX_PROVISION_TIMEOUT_S)
    """VariantInstanceProvisionTimeoutInSeconds of the Neuron variant: default 1800 with instance pools (see
    DEFAULT_POOL_PROVISION_TIMEOUT_S), unset otherwise."""
    invocation: Invocation = "real-time"
    """``real-time`` or ``async`` (SageMaker asynchronous inference: a queue, answers in S3, SNS notifications,
    scaling to zero instances; ``async_inference`` holds its settings)."""
    async_inference: AsyncInferenceSettings | None = None
    """The queue's scaling and alarms with ``invocation: async`` (defaults when unset)."""
    min_instances: Int = Field(default=1, ge=0)
    """The autoscaling floor: at least 1 for a real-time endpoint; 0 (the default) for an asynchronous one, which
    scales to zero instances when its queue is empty."""
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
    cutover: CutoverSettings | None = None
    """How an update moves traffic (SageMaker's deployment guardrails) and which hardware serves (``serve_on``). Unset:
    rolling where SageMaker can roll the endpoint, else its default (blue/green, all at once)."""
    judge: PilotJudgeSettings | None = None
    """The pilot judge: compares the Neuron and the GPU variant's answers to the team's prompt set (needs a running
    GPU variant beside the Neuron one)."""

    @model_validator(mode="before")
    @classmethod
    def _compile_at_start_timeout(cls, data: Any) -> Any:
        """An endpoint that may compile at start waits SageMaker's longest for its health check unless told."""
        if isinstance(data, dict) and data.get("allow_non_cached_model") is True \
                and "startup_health_check_timeout_s" not in data:
            return {**data, "startup_health_check_timeout_s": COMPILE_AT_START_TIMEOUT_S}
        return data

    @model_validator(mode="before")
    @classmethod
    def _async_defaults(cls, data: Any) -> Any:
        """An asynchronous endpoint scales to zero unless told otherwise, with the default queue settings."""
        if isinstance(data, dict) and data.get("invocation") == "async":
            return {"min_instances": 0, "async_inference": AsyncInferenceSettings(), **data}
        return data

    @property
    def is_async(self) -> bool:
        return self.invocation == "async"

    @property
    def async_settings(self) -> AsyncInferenceSettings:
        """The asynchronous settings (their defaults when unset)."""
        return self.async_inference or AsyncInferenceSettings()

    @property
    def spec(self) -> InstanceSpec:
        return CATALOG.get(self.instance_type.removeprefix("ml."))

    @property
    def shapes(self) -> dict[str, int]:
        """The shapes passed to the server: the declared ones; for containers other than vllm-neuronx, neuronfleet's
        defaults (KIT_SHAPE_DEFAULTS) fill in the rest."""
        declared = {k: v for k in SHAPE_SETTINGS if (v := getattr(self, k)) is not None}
        serving = self.serving
        return declared if serving is not None and serving.shapes_from_container else KIT_SHAPE_DEFAULTS | declared

    @property
    def compiled_artifact(self) -> bool:
        """vllm-neuronx serving an S3 artifact: a compiled model whose neuron_config.json the server checks."""
        serving = self.serving
        return serving is not None and serving.shapes_from_container and self.model_data_url is not None

    @property
    def provision_timeout_s(self) -> int | None:
        """VariantInstanceProvisionTimeoutInSeconds of the Neuron variant (None: not passed)."""
        if self.instance_provision_timeout_s is not None:
            return self.instance_provision_timeout_s
        return DEFAULT_POOL_PROVISION_TIMEOUT_S if len(self.pools) > 1 else None

    @property
    def hub_models(self) -> tuple[tuple[str, str, str | None], ...]:
        """(field, hub model id, revision) of every model of the endpoint that downloads from the hub."""
        out: list[tuple[str, str, str | None]] = []
        if self.hf_model_id:
            out.append(("hf_model_id", self.hf_model_id, self.revision))
        gpu = self.gpu_variant
        if gpu is not None and gpu.hf_model_id:
            out.append(("gpu_variant.hf_model_id", gpu.hf_model_id, gpu.revision))
        elif gpu is not None and not gpu.own_model and self.hf_model_id:
            out.append(("gpu_variant", self.hf_model_id, self.revision))
        return tuple(out)

    @property
    def stages_hub_models(self) -> bool:
        """Whether the endpoint's hub models are copied into S3 once and served from there (HubModelCopy): a named
        container with ``hf_token_secret_arn``, so that no SageMaker model holds the token."""
        return self.hf_token_secret_arn is not None and self.serving is not None

    def _staging_problems(self) -> Iterator[Problem]:
        serving = self.serving
        if self.hf_model_id and serving is not None and "allow_non_cached_model" in serving.settings:
            yield Problem("hf_token_secret_arn", self.hf_token_secret_arn,
                          f"unset for a {self.container} hub model on Neuron (hf_model_id {self.hf_model_id}): the "
                          "kit copies a gated model into S3 so that the token never reaches the SageMaker model, and "
                          "optimum-neuron's serve looks its compiled-model cache up from the hub id, which the kit has "
                          "not confirmed for a local copy. Compile the model (optimum-cli neuron export) and serve it "
                          "with model_data_url; a gated GPU variant model (gpu_variant.hf_model_id) may keep the token")
        for field, model, revision in self.hub_models:
            if revision is None:
                name = "gpu_variant.revision" if field == "gpu_variant.hf_model_id" else "revision"
                yield Problem(name, None, f"a commit of {model} (40 hex digits) with hf_token_secret_arn: the gated "
                              "model is copied once into S3 at that commit and served from there")

    @property
    def lnc(self) -> int | None:
        """The logical NeuronCore configuration the endpoint runs (Trn2: 2 unless set; other families: none)."""
        return self.logical_nc_config or neuron.support(self.instance_type.removeprefix("ml.")).lnc_default

    def logical_cores(self, instance_type: str | None = None) -> int:
        """NeuronCores a Neuron type presents to the server at this endpoint's LNC (inf2.48xlarge: 24; trn2.48xlarge:
        64 at LNC 2, 128 at LNC 1; trn1.32xlarge: 32)."""
        t = (instance_type or self.instance_type).removeprefix("ml.")
        lnc = self.logical_nc_config or neuron.support(t).lnc_default
        return neuron.logical_cores(t, lnc)

    @property
    def serving(self) -> neuron.ServingImage | None:
        """The named container's record (None for ``custom``)."""
        return None if self.container == "custom" else neuron.serving_image(self.container)

    @property
    def custom_image_sdk(self) -> str | None:
        """A custom image's SDK: ``image_sdk``, or read from its tag (``...sdk2.26.1...``)."""
        if self.image_sdk or not self.image_uri:
            return self.image_sdk
        tag = neuron.parse_image(self.image_uri).tag or ""
        m = re.search(r"sdk(\d+\.\d+\.\d+)", tag)
        return m.group(1) if m else None

    @property
    def neuron_pools(self) -> tuple[str, ...]:
        """Every Neuron type of the Neuron variant, in priority order."""
        neuron_types = sagemaker_types(AcceleratorFamily.INFERENTIA) + sagemaker_types(AcceleratorFamily.TRAINIUM)
        return tuple(t for t in (self.instance_type, *self.instance_pools) if t in neuron_types)

    @property
    def gpu_pools(self) -> tuple[str, ...]:
        """GPU types of the Neuron variant's pools (``instance_pools`` and a warm GPU standby), in priority order."""
        gpus = sagemaker_types(AcceleratorFamily.GPU)
        warm = (self.gpu_variant.instance_type,) if self.gpu_variant and self.gpu_variant.standby == "warm" else ()
        return tuple(t for t in (*self.instance_pools, *warm) if t in gpus)

    @property
    def pools(self) -> tuple[str, ...]:
        """The Neuron variant's instance pools in priority order; a single type means no InstancePools."""
        if self.serves_on_gpu and self.gpu_variant is not None:
            return (self.gpu_variant.instance_type,)
        warm = (self.gpu_variant.instance_type,) if self.gpu_variant and self.gpu_variant.standby == "warm" else ()
        return (self.instance_type, *self.instance_pools, *warm)

    @property
    def live_gpu_variant(self) -> GpuVariant | None:
        """The GPU variant that runs instances (hot, live or shadow); None for none or a warm standby."""
        gpu = self.gpu_variant
        return gpu if gpu is not None and gpu.standby == "hot" and not self.serves_on_gpu else None

    @property
    def serves_on_gpu(self) -> bool:
        """The cutover's ``serve_on: gpu``: the serving variant runs the GPU variant's model on its instance type."""
        return self.cutover is not None and self.cutover.serve_on == "gpu"

    def _problems(self) -> Iterator[Problem]:
        served = sagemaker_types(AcceleratorFamily.INFERENTIA) + sagemaker_types(AcceleratorFamily.TRAINIUM)
        if self.instance_type not in served:
            yield Problem("instance_type", self.instance_type, "an Inferentia2 or Trainium type: " + ", ".join(served))
            return
        yield from self._lnc_problems()
        yield from self._pool_problems(served)
        for i, t in enumerate(self.neuron_pools):
            field = "instance_type" if i == 0 else f"instance_pools[{self.instance_pools.index(t)}]"
            cores = self.logical_cores(t)
            tp = self.shapes.get("tensor_parallel_degree")
            if self._sets("tensor_parallel_degree") and tp is not None and cores % tp:
                lnc = f" at logical_nc_config {self.lnc}" if neuron.support(t.removeprefix("ml.")).lnc_default else ""
                yield Problem("tensor_parallel_degree" if i == 0 else field, tp if i == 0 else t,
                              f"a divisor of the {cores} NeuronCores of {t}{lnc}: "
                              + ", ".join(str(d) for d in range(1, cores + 1) if cores % d == 0))
            yield from (p.under(field) if i else p for p in neuron.serving_image_problems(
                t.removeprefix("ml."), self.container, image_sdk=self.custom_image_sdk,
                image_library=self.image_library))
        yield from self._container_problems()
        yield from self._model_problems()
        if self.min_instances > self.max_instances:
            yield Problem("min_instances", self.min_instances, f"at most max_instances ({self.max_instances})")
        if (self.container == "custom") != (self.image_uri is not None):
            yield Problem("image_uri", self.image_uri, "an image URI exactly when container is 'custom'")
        if (self.model_data_url is None) == (self.hf_model_id is None):
            yield Problem("model_data_url", self.model_data_url,
                          "exactly one of model_data_url (s3://...) or hf_model_id")
        yield from self._volume_problems()
        yield from self._gpu_problems()
        yield from self._cutover_problems()
        yield from self._invocation_problems()
        seen: set[str] = set()
        for j, action in enumerate(self.scheduled_scaling):
            if action.name in seen:
                yield Problem(f"scheduled_scaling[{j}].name", action.name, "a name not used by another action")
            seen.add(action.name)

    def _sets(self, setting: str) -> bool:
        """Whether the container reads ``setting`` (custom images get every setting under neutral names)."""
        serving = self.serving
        return serving is None or setting in serving.settings

    def _lnc_problems(self) -> Iterator[Problem]:
        fam = neuron.support(self.instance_type.removeprefix("ml."))
        if self.logical_nc_config is not None and self.logical_nc_config not in fam.lnc_allowed:
            yield Problem("logical_nc_config", self.logical_nc_config,
                          f"unset: {self.instance_type} has no logical NeuronCore configuration (LNC applies to Trn2)"
                          if not fam.lnc_allowed else "one of " + ", ".join(map(str, fam.lnc_allowed)))

    def _pool_problems(self, served: list[str]) -> Iterator[Problem]:
        pools = self.pools
        if len(pools) > MAX_INSTANCE_POOLS:
            yield Problem("instance_pools", list(self.instance_pools),
                          f"at most {MAX_INSTANCE_POOLS - 1 - (len(pools) - 1 - len(self.instance_pools))} types: "
                          f"SageMaker takes at most {MAX_INSTANCE_POOLS} instance pools per variant, instance_type "
                          "first" + (" and the warm GPU standby last" if len(pools) > 1 + len(self.instance_pools) else ""))
        seen: set[str] = set()
        for i, t in enumerate(pools):
            if t in seen:
                at = f"instance_pools[{i - 1}]" if i <= len(self.instance_pools) else "gpu_variant.instance_type"
                yield Problem(at, t, "a type not already in the endpoint's instance pools ("
                              + ", ".join(dict.fromkeys(pools)) + "): each pool is one instance type")
            seen.add(t)
        gpus = sagemaker_types(AcceleratorFamily.GPU)
        for i, t in enumerate(self.instance_pools):
            if t not in served and t not in gpus:
                yield Problem(f"instance_pools[{i}]", t, "a Neuron or GPU SageMaker type of the catalog: "
                              + ", ".join(served + gpus))
            elif t in gpus and self.gpu_variant is None:
                yield Problem(f"instance_pools[{i}]", t, "a Neuron type, or a gpu_variant to give GPU pools a model "
                              "a GPU container can load (its model_data_url, hf_model_id or image_uri)")

    def _container_problems(self) -> Iterator[Problem]:
        serving = self.serving
        if serving is None:
            return
        if self.task is not None and self.task not in serving.tasks:
            can = [s.name for s in neuron.serving_images().values() if self.task in s.tasks and s.status == "current"]
            yield Problem("container", self.container,
                          f"a container that serves {self.task} (task): {', '.join(can)}; {self.container} serves "
                          + ", ".join(serving.tasks))
        if self.tensor_parallel_degree is not None and not self._sets("tensor_parallel_degree") \
                and self.tensor_parallel_degree != 1:
            yield Problem("tensor_parallel_degree", self.tensor_parallel_degree,
                          f"unset: {self.container} has no tensor-parallel setting (it runs the model on one "
                          "NeuronCore)")

    def _model_problems(self) -> Iterator[Problem]:
        """The serving contract of the model: compiled shapes declared, the cache choice made, pins and tokens
        where the container reads them."""
        serving = self.serving
        if self.image_library is not None and self.container != "custom":
            yield Problem("image_library", self.image_library, f"unset: {self.container} serves with "
                          f"{serving.library if serving else '?'} (recorded in data/neuron_compat.json); "
                          "image_library describes a custom image")
        if self.compiled_artifact:
            yield from self._compiled_artifact_problems()
        elif serving is not None and "allow_non_cached_model" in serving.settings and self.hf_model_id:
            if self.allow_non_cached_model is None:
                yield Problem("allow_non_cached_model", None,
                              "true or false for a vllm-neuronx hub model. false: the endpoint starts only if "
                              f"optimum-neuron's public cache holds {self.hf_model_id} for this instance, "
                              "batch_size, sequence_length and tensor_parallel_degree (check with `optimum-cli neuron "
                              "cache lookup " + self.hf_model_id + "`), else it stops with 'No cached version found'; "
                              "true: without a cached match it compiles at each instance start (minutes to an hour, "
                              f"within startup_health_check_timeout_s, default then {COMPILE_AT_START_TIMEOUT_S})")
        elif self.allow_non_cached_model is not None:
            yield Problem("allow_non_cached_model", self.allow_non_cached_model,
                          "unset: only vllm-neuronx with a hub model (hf_model_id) reads it")
        yield from self._hub_problems()

    def _compiled_artifact_problems(self) -> Iterator[Problem]:
        """A compiled model from S3 (model_data_url): its three shapes declared, no cache choice, one compile target
        for every Neuron pool."""
        serving = self.serving
        for k in SHAPE_SETTINGS:
            if getattr(self, k) is None:
                yield Problem(k, None, f"the {k} {self.model_data_url} was compiled with (its neuron_config.json): "
                              "vllm-neuronx's server refuses a model_data_url whose shapes differ from the ones "
                              "passed, so declare all three (tensor_parallel_degree, batch_size, sequence_length)")
        if self.allow_non_cached_model is not None:
            yield Problem("allow_non_cached_model", self.allow_non_cached_model,
                          "unset with model_data_url: vllm-neuronx serves an S3 artifact as a compiled model (its "
                          "neuron_config.json); to compile plain weights at start, serve them from the hub "
                          "(hf_model_id) with allow_non_cached_model: true")
        assert serving is not None
        targets = {t: serving.compile_targets.get(neuron.family(t.removeprefix("ml."))) for t in self.neuron_pools}
        first = targets[self.instance_type]
        for t, target in targets.items():
            if t != self.instance_type and target != first:
                yield Problem(f"instance_pools[{self.instance_pools.index(t)}]", t,
                              f"a Neuron type whose compile target is {first}, as for {self.instance_type}: a "
                              f"compiled model runs only on the target it was compiled for, and {t} is {target} "
                              "(optimum-neuron: inf2, trn1 and trn1n share trn1; trn2 is trn2)")

    def _hub_problems(self) -> Iterator[Problem]:
        """A hub model's pin (revision) and token, where the container reads them."""
        if self.revision is not None and self.hf_model_id is None:
            yield Problem("revision", self.revision, "unset without hf_model_id: a revision pins a hub model")
        if self.revision is not None and not self._sets("revision"):
            yield Problem("revision", self.revision, f"unset: {self.container} has no revision setting in the "
                          "sources read; pin the model by serving a copy from S3 (model_data_url)")
        gpu_hub = self.gpu_variant is not None and bool(self.gpu_variant.hf_model_id)
        if self.hf_token_secret_arn is not None:
            if not self.hf_model_id and not gpu_hub:
                yield Problem("hf_token_secret_arn", self.hf_token_secret_arn,
                              "unset without a hub model (hf_model_id here or in gpu_variant): the token is for "
                              "downloading gated models from the Hugging Face Hub")
            elif self.hf_model_id and not self._sets("hf_token"):
                yield Problem("hf_token_secret_arn", self.hf_token_secret_arn,
                              f"unset: {self.container} reads no Hugging Face token variable in the sources read; "
                              "use vllm-neuronx, hf-inference-neuronx or a custom image")
            elif self.stages_hub_models:
                yield from self._staging_problems()

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
        serving = self.serving
        if serving is not None and serving.gpu is None:
            yield Problem("gpu_variant", gpu.instance_type, f"a gpu_variant only with a container that has a GPU image; "
                          f"{self.container} records none")
        elif serving is not None and serving.gpu is not None and self.task is not None \
                and self.task not in serving.gpu.tasks and gpu.image_uri is None:
            yield Problem("gpu_variant.image_uri", None, f"a GPU image that serves {self.task}: {serving.gpu.image} "
                          f"(the GPU image of {self.container}) serves " + ", ".join(serving.gpu.tasks))
        if serving is not None and serving.gpu is not None and gpu.image_uri is None:
            pinned = gpu.revision if gpu.hf_model_id else (None if gpu.own_model else self.revision)
            if pinned and "revision" not in serving.gpu.settings:
                yield Problem("gpu_variant.revision" if gpu.hf_model_id else "revision", pinned,
                              f"unset: the GPU image of {self.container} ({serving.gpu.image}) has no revision "
                              "setting in the sources read")
        if not gpu.shadow and gpu.standby == "hot":
            need = gpu.instances_for(self.max_instances)
            if gpu.max_instances < need:
                yield Problem("gpu_variant.max_instances", gpu.max_instances,
                              f"at least {need}: the Neuron variant's max_instances ({self.max_instances}) divided "
                              f"by neuron_instances_per_gpu_instance ({gpu.neuron_instances_per_gpu_instance:g}), "
                              "rounded up, so the GPU variant can carry its whole load")

    def _invocation_problems(self) -> Iterator[Problem]:
        """What an asynchronous endpoint cannot have, and what only it can. The GPU fallback of an asynchronous
        endpoint: none at run time. Its requests wait in SageMaker's queue while no instance serves them (scaled to
        zero, or no Neuron capacity at scale-out), so moving traffic to a running GPU variant buys nothing a queue
        does not already give, and a hot GPU variant would bill every hour an endpoint that scales to zero is
        meant to save; a failed request is answered in the failure location and on the error topic, and the
        backlog-age alarm says when the queue is not drained. A GPU instance pool (warm standby) would make sense at
        scale-out from zero, but SageMaker documents instance pools for real-time endpoints only (``Deploy to
        multiple instance types with instance pools``): the kit does not build it until that is confirmed."""
        if not self.is_async:
            if self.async_inference is not None:
                yield Problem("async_inference", "set", "unset with invocation real-time: it configures an "
                              "asynchronous endpoint (invocation: async)")
            if self.min_instances < 1:
                yield Problem("min_instances", self.min_instances, "at least 1 for invocation real-time: only an "
                              "asynchronous endpoint (invocation: async) scales to zero instances (" +
                              ASYNC_AUTOSCALE_DOC + ")")
            return
        gpu = self.gpu_variant
        if gpu is not None:
            yield Problem("gpu_variant", gpu.instance_type,
                          "unset for invocation async: requests wait in SageMaker's queue while no instance serves "
                          "them, so a run-time failover to a running GPU variant (hot) buys nothing the queue does "
                          "not give and bills every hour the endpoint is meant to save; a shadow copy or the judge "
                          "needs real-time answers; a GPU instance pool (warm) is documented for real-time endpoints "
                          "only. Serve the GPU model as a real-time endpoint of its own if the pilot needs it")
        if self.instance_pools:
            yield Problem("instance_pools", list(self.instance_pools),
                          "empty for invocation async: SageMaker documents instance pools (InstancePools) for "
                          "real-time endpoints only (developer guide, \"Deploy to multiple instance types with "
                          "instance pools\"); an asynchronous endpoint runs one instance type")
        if self.judge is not None:
            yield Problem("judge", self.judge.prompts, "unset for invocation async: the judge invokes both variants "
                          "with InvokeEndpoint, which an asynchronous endpoint refuses (\"the endpoint can only "
                          "receive asynchronous invocations\", SageMaker developer guide, Asynchronous inference)")
        if "target_invocations_per_instance" in self.model_fields_set:
            yield Problem("target_invocations_per_instance", self.target_invocations_per_instance,
                          "unset for invocation async: SageMaker publishes no InvocationsPerInstance for an "
                          "asynchronous endpoint; it scales on async_inference.target_backlog_per_instance "
                          "(ApproximateBacklogSizePerInstance)")
        if self.data_capture_percent is not None:
            yield Problem("data_capture_percent", self.data_capture_percent,
                          "unset for invocation async: the request and its answer are already objects in S3 (the "
                          "caller's input location and the endpoint's output location)")

    def _cutover_problems(self) -> Iterator[Problem]:
        c, gpu = self.cutover, self.gpu_variant
        if c is not None and c.traffic == "rolling" and (self.live_gpu_variant is not None or len(self.pools) > 1):
            yield Problem("cutover.traffic", "rolling", "canary, linear or all_at_once: SageMaker's rolling deployments "
                          "exclude multi-variant endpoints (" + guardrails().sources["exclusions"] + "), and this "
                          "endpoint has " + ("a running GPU variant" if self.live_gpu_variant else "instance pools"))
        if c is not None and c.serve_on == "gpu":
            if gpu is None:
                yield Problem("cutover.serve_on", "gpu", "neuron, or a gpu_variant to serve on (its instance_type and "
                              "model)")
            elif gpu.shadow or gpu.standby != "hot":
                yield Problem("cutover.serve_on", "gpu", "neuron, or a gpu_variant with standby hot and shadow false: "
                              "on GPU the serving variant runs the GPU variant's model and there is no second variant")
            if self.instance_pools:
                yield Problem("instance_pools", list(self.instance_pools), "empty while cutover.serve_on is gpu (the "
                              "serving variant runs on gpu_variant.instance_type alone)")
            if self.judge is not None:
                yield Problem("judge", self.judge.prompts, "unset while cutover.serve_on is gpu: the judge compares a "
                              "Neuron and a GPU variant running side by side")
        elif self.judge is not None and self.live_gpu_variant is None:
            yield Problem("judge", self.judge.prompts, "a gpu_variant with standby hot beside the Neuron variant: the "
                          "judge sends each prompt to both (InvokeEndpoint TargetVariant)")

    @property
    def rolling_batch_instances(self) -> int | None:
        """Instances per step of a rolling update, or None when SageMaker cannot roll this endpoint.

        Rolling deployments exclude multi-variant endpoints ("Exclusions", SageMaker developer guide,
        https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-exclusions.html, read 2026-11-22),
        and a step must be 5% to 50% of the variant's instances: one batch size must fit every count between
        ``min_instances`` and ``max_instances``. Otherwise SageMaker's default applies (blue/green: a second fleet).
        """
        if self.live_gpu_variant is not None or len(self.pools) > 1:
            return None  # instance pools: whether SageMaker rolls them is not documented in the sources read
        batch = max(1, math.ceil(ROLLING_MIN_BATCH_SHARE * self.max_instances))
        return batch if batch <= ROLLING_MAX_BATCH_SHARE * self.min_instances else None
