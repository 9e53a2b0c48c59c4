"""Settings of :class:`neuronfleet.inference.batch_transform.NeuronBatchTransform`: a SageMaker batch transform job on
Inferentia2 or Trainium that a schedule starts over an S3 prefix of the fleet's bucket (``batch_jobs:`` in the fleet
file). The model is an endpoint's (``model:``, the same containers, checks and environment as
:class:`~neuronfleet.settings.EndpointSettings`); only its model fields are read."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal
from zoneinfo import available_timezones

from pydantic import AfterValidator, Field, create_model

from ..core import rules
from ..core.problems import InvalidSettings, Problem
from ._base import Int, PositiveInt, Settings
from .inference import EndpointSettings

TRANSFORM_SOURCE = ("botocore 1.44.5 sagemaker/2017-07-24/service-2.json (TransformInstanceType, TransformJobName, "
                    "TransformInstanceCount, InvocationsTimeoutInSeconds, InvocationsMaxRetries, SplitType, "
                    "BatchStrategy, MaxPayloadInMB), read 2026-11-29; tests/unit/test_batch_transform_settings.py "
                    "pins each against the installed botocore")
NEURON_TRANSFORM_TYPES: tuple[str, ...] = (
    "ml.inf2.xlarge", "ml.inf2.8xlarge", "ml.inf2.24xlarge", "ml.inf2.48xlarge", "ml.trn1.2xlarge", "ml.trn1.32xlarge")
"""The Inferentia2 and Trainium members of botocore's TransformInstanceType enum (TRANSFORM_SOURCE): ml.inf2 and
ml.trn1 only. No ml.trn1n and no ml.trn2 type is listed for batch transform (they are for endpoints and training)."""
MAX_TRANSFORM_INSTANCES = 100
"""TransformResources.InstanceCount: "The default value is 1, and the maximum is 100" (SageMaker API reference,
TransformResources, https://docs.aws.amazon.com/sagemaker/latest/dg/API_TransformResources.html, read 2026-11-29;
botocore's TransformInstanceCount has min 1 and no max)."""
INVOCATIONS_TIMEOUT_S = (1, 3600)
"""ModelClientConfig.InvocationsTimeoutInSeconds: 1-3600 (TRANSFORM_SOURCE)."""
INVOCATIONS_MAX_RETRIES = (0, 3)
"""ModelClientConfig.InvocationsMaxRetries: 0-3 (TRANSFORM_SOURCE)."""
JOB_NAME_MAX = 63
JOB_NAME_PATTERN = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
"""TransformJobName: 1-63 characters, pattern ``[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`` (TRANSFORM_SOURCE)."""
EXECUTION_ID_ROOM = 36
"""Characters a run's job name keeps for EventBridge Scheduler's ``<aws.scheduler.execution-id>``: AWS's example value
is 16 characters (``d32c5kddcf5bb8c3``), its length is not documented, so the kit keeps a UUID's 36."""
PREFIX_MAX = JOB_NAME_MAX - 1 - EXECUTION_ID_ROOM
"""The longest job name prefix: 63 less the hyphen and the execution id's room (26)."""
SplitType = Literal["None", "Line", "RecordIO", "TFRecord"]
BatchStrategy = Literal["SingleRecord", "MultiRecord"]
_KEY_PREFIX = re.compile(r"[A-Za-z0-9!_.*'()/-]+/")
_MODEL_FIELDS = ("container", "image_uri", "image_sdk", "image_library", "task", "logical_nc_config", "model_data_url",
                 "model_bucket_account", "hf_model_id", "revision", "tensor_parallel_degree",
                 "batch_size", "sequence_length", "allow_non_cached_model", "model_size_gib", "volume_size_gib")
"""The endpoint fields a batch job's model has: the model's, none of an endpoint's own (scaling, variants, alarms)."""
if TYPE_CHECKING:  # what a type checker sees: the same fields, read the same way
    BatchModel = EndpointSettings
else:  # one home for each rule: the endpoint's own field definitions, only the model's
    class _ModelSettings(Settings):
        what: ClassVar[str] = "model"

    BatchModel = create_model(
        "BatchModel", __base__=_ModelSettings,
        __doc__="A batch job's model: an endpoint's model fields (neuronfleet.settings.EndpointSettings).",
        **{name: (EndpointSettings.model_fields[name].annotation, EndpointSettings.model_fields[name])
           for name in _MODEL_FIELDS})


def _transform_type(value: str) -> str:
    if value not in NEURON_TRANSFORM_TYPES:
        raise ValueError("an Inferentia2 or Trainium type that SageMaker batch transform takes (botocore "
                         "TransformInstanceType): " + ", ".join(NEURON_TRANSFORM_TYPES))
    return value


def _job_prefix(value: str) -> str:
    if len(value) > PREFIX_MAX or not JOB_NAME_PATTERN.fullmatch(value):
        raise ValueError(f"letters, digits and hyphens, starting and ending with a letter or digit, at most {PREFIX_MAX}"
                         f" characters (each run's job name is <name>-<execution id>, at most {JOB_NAME_MAX})")
    return value


def _key_prefix(value: str) -> str:
    if value.startswith("/") or not _KEY_PREFIX.fullmatch(value):
        raise ValueError("an S3 key prefix in the fleet's bucket ending with '/', without a leading '/' (e.g. "
                         "batch/nightly/input/)")
    return value


def _timezone(value: str) -> str:
    if value not in available_timezones():
        raise ValueError("an IANA time zone name (ScheduleExpressionTimezone), e.g. UTC, Europe/Paris")
    return value


class BatchJobSettings(Settings):
    """A scheduled SageMaker batch transform job on Neuron."""

    what: ClassVar[str] = "batch_job"
    name: Annotated[str, AfterValidator(_job_prefix)]
    """The job's name: each run is the transform job ``<name>-<execution id>``; the cost reports call the model by it
    unless ``model_name`` says otherwise."""
    instance_type: Annotated[str, AfterValidator(_transform_type)]
    """An ml.inf2 or ml.trn1 type (botocore's TransformInstanceType; no ml.trn2 type is listed for batch transform)."""
    instance_count: Int = Field(default=1, ge=1, le=MAX_TRANSFORM_INSTANCES)
    schedule: Annotated[str, AfterValidator(rules.schedule_expression)]
    """When a run starts (EventBridge Scheduler: ``cron(...)``, ``rate(...)`` or ``at(...)``)."""
    schedule_timezone: Annotated[str, AfterValidator(_timezone)] | None = None
    """The schedule's time zone (ScheduleExpressionTimezone; UTC when unset)."""
    input_prefix: Annotated[str, AfterValidator(_key_prefix)]
    """What each run transforms: every object under this prefix of the fleet's bucket (S3Prefix)."""
    output_prefix: Annotated[str, AfterValidator(_key_prefix)] | None = None
    """Where each run writes (``<prefix><job name>/``); default ``batch/<name>/output/``."""
    content_type: str = Field(default="application/json", min_length=1, max_length=256)
    """The MIME type SageMaker sends each record with (TransformInput.ContentType)."""
    split_type: SplitType = "Line"
    """How SageMaker splits an input object into records (one JSON request per line by default)."""
    batch_strategy: BatchStrategy = "SingleRecord"
    """One record per request (what a generation server's /invocations takes), or as many as fit MaxPayloadInMB."""
    max_payload_mb: Int = Field(default=6, ge=0, le=100)
    """MaxPayloadInMB (SageMaker: at most 100; 6 is its default)."""
    max_concurrent_transforms: PositiveInt = 1
    """Requests in flight per instance (MaxConcurrentTransforms)."""
    invocations_timeout_s: Int = Field(default=INVOCATIONS_TIMEOUT_S[1], ge=INVOCATIONS_TIMEOUT_S[0],
                                       le=INVOCATIONS_TIMEOUT_S[1])
    """How long SageMaker waits for one request's answer (a generation of long outputs takes minutes)."""
    invocations_max_retries: Int = Field(default=1, ge=INVOCATIONS_MAX_RETRIES[0], le=INVOCATIONS_MAX_RETRIES[1])
    model: BatchModel
    """The model, with an endpoint's model fields (container, model_data_url or hf_model_id + revision, shapes, task,
    allow_non_cached_model, ...), checked by every Neuron rule of endpoints for the job's instance type."""
    model_name: Annotated[str, AfterValidator(rules.tag_value)] | None = None
    """What the migration report calls the model (tag ``neuronfleet:model``); default ``name``."""

    @cached_property
    def endpoint_model(self) -> EndpointSettings:
        """The model as an endpoint's settings on the job's instance type (what the serving container's environment,
        image and execution policy are built from)."""
        return EndpointSettings(instance_type=self.instance_type, **self.model.model_dump(exclude_unset=True))

    @property
    def report_name(self) -> str:
        return self.model_name or self.name

    @property
    def output_key_prefix(self) -> str:
        return self.output_prefix or f"batch/{self.name}/output/"

    def _problems(self) -> Iterator[Problem]:
        try:  # every Neuron check of an endpoint, for the job's instance type
            self.endpoint_model  # noqa: B018
        except InvalidSettings as exc:
            yield from (p.under("model") for p in exc.problems)
        if self.output_key_prefix.startswith(self.input_prefix) or self.input_prefix.startswith(self.output_key_prefix):
            yield Problem("output_prefix", self.output_key_prefix,
                          f"a prefix apart from input_prefix ({self.input_prefix}): a run would read its own output")
