"""Settings of :class:`neuronfleet.GpuPool`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from ..core import rules
from ..core.problems import Problem
from ..facts.catalog import BATCH_LAUNCH_TEMPLATE_OVERRIDES, CATALOG, AcceleratorFamily
from ..facts.neuron import parse_image
from ._base import Bool, Int, Name, NonNegativeInt, PositiveInt, Settings
from .batch import DEFAULT_UPDATE_TIMEOUT_MINUTES, AllocationStrategy, UpdateTimeoutMinutes
from .training import offered_in

GPU_TYPES = CATALOG.types(AcceleratorFamily.GPU)
GPU_ECS_AMI_PARAMETER = "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id"
"""The ECS-optimized Amazon Linux 2023 GPU AMI (NVIDIA driver, container toolkit): what Batch GPU hosts need.
By default the pool pins the value recorded for its region (``neuronfleet.facts.catalog.gpu_ecs_amis``)."""


class GpuJobSettings(Settings):
    """One of the fleet's GPU job definitions (:meth:`neuronfleet.GpuPool.add_job_definition`): the CUDA twin of a
    Trainium job, what a job held for Trainium capacity may move to (its ``neuronfleet:gpu-job-definition`` tag names
    ``name``), and the only job definitions the capacity lifecycle may submit to the pool."""

    what: ClassVar[str] = "gpu job definition"
    name: Annotated[str, AfterValidator(rules.resource_name("batch-job-definition"))]
    """The job definition's name in Batch (and what a held job's tag names)."""
    image: Annotated[str, AfterValidator(rules.container_image)]
    """The CUDA image, with a tag or digest: an ECR URI (the job's execution role may pull from that repository
    only), a Deep Learning Container ``repository:tag``, or ``public.ecr.aws/...``."""
    nodes: PositiveInt = 1
    instance_type: str | None = None
    """One of the pool's ``instance_types`` (default: its first)."""
    command: tuple[str, ...] | None = None
    """The container's command (default: the image's)."""

    def _problems(self) -> Iterator[Problem]:
        if "@" not in self.image and not parse_image(self.image).tag:
            yield Problem("image", self.image, "an image with a tag or a digest (repository:tag or @sha256:...): "
                                               "untagged, the job would run whatever 'latest' is at launch")


class GpuPoolSettings(Settings):
    """GPU types in priority order, how large the pool may grow, and which workloads must run on CUDA.

    The pool is one AWS Batch compute environment holding every type (one launch template per type, as
    launch-template overrides), so ``max_vcpus`` is the ceiling of the whole pool.
    """

    what: ClassVar[str] = "gpu pool"
    instance_types: tuple[Literal[GPU_TYPES], ...] = Field(  # type: ignore[valid-type]
        default=("p5.48xlarge", "g6e.48xlarge"), min_length=1)
    """In priority order; how far Batch follows it depends on ``allocation_strategy``."""
    max_vcpus: NonNegativeInt = 384
    """The ceiling of the whole pool, every type together (Batch may exceed it by at most one instance)."""
    cuda_only_workloads: tuple[Name, ...] = ()
    ami_id: Annotated[str, AfterValidator(rules.ami_id)] | None = None
    """Your pinned AMI. Default: the ECS GPU AMI as recorded for the stack's region (data/gpu_ecs_amis.json):
    pinned too, so a redeploy never moves it; scripts/refresh_data.py moves it in a commit you review."""
    follow_latest: Bool = False
    """Resolve ``ami_parameter`` at every deploy instead: a deploy after AWS publishes a new AMI makes new
    launch-template versions, and Batch replaces the pool's instances (running jobs are waited for up to
    ``update_timeout_minutes``)."""
    ami_parameter: Annotated[str, AfterValidator(rules.ssm_parameter_name)] = GPU_ECS_AMI_PARAMETER
    """The SSM parameter ``follow_latest`` resolves."""
    root_volume_gib: Int = Field(default=512, ge=100, le=16384)
    update_timeout_minutes: UpdateTimeoutMinutes = DEFAULT_UPDATE_TIMEOUT_MINUTES
    """How long a redeploy that changes the launch templates waits for running jobs (Batch UpdatePolicy)."""
    allocation_strategy: AllocationStrategy = "BEST_FIT_PROGRESSIVE"
    """``BEST_FIT_PROGRESSIVE``: Batch picks among the types by fit and cost per vCPU, not by list order.
    ``BEST_FIT_PROGRESSIVE_ORDERED``: in list order (see ``neuronfleet.settings.batch.AllocationStrategy``)."""
    job_definitions: tuple[GpuJobSettings, ...] = ()
    """The fleet's GPU job definitions: with none, the capacity lifecycle moves no held job to the pool (it may
    submit only these, by ARN: docs/security.md, "Jobs, queues and the GPU pool")."""

    def _problems(self) -> Iterator[Problem]:
        seen: dict[str, int] = {}
        for i, t in enumerate(self.instance_types):
            if t in seen:
                yield Problem(f"instance_types[{i}]", t, f"a type not already listed (instance_types[{seen[t]}]): "
                                                         "each type gets one launch template in the pool")
            seen.setdefault(t, i)
        if len(seen) > 1 + BATCH_LAUNCH_TEMPLATE_OVERRIDES:
            yield Problem("instance_types", list(self.instance_types),
                          f"at most {1 + BATCH_LAUNCH_TEMPLATE_OVERRIDES} types: the pool is one Batch compute "
                          f"environment (the first type's launch template, and at most "
                          f"{BATCH_LAUNCH_TEMPLATE_OVERRIDES} launch-template overrides for the others)")
        for t in seen:
            spec = CATALOG.get(t)
            if self.max_vcpus < spec.vcpus:
                yield Problem("max_vcpus", self.max_vcpus, f"at least one {t} ({spec.vcpus} vCPUs): below, the pool "
                                                           f"could never launch {t}")
        names: dict[str, int] = {}
        for i, job in enumerate(self.job_definitions):
            if job.name in names:
                yield Problem(f"job_definitions[{i}].name", job.name,
                              f"a name not already used (job_definitions[{names[job.name]}])")
            names.setdefault(job.name, i)
            if job.instance_type is not None and job.instance_type not in seen:
                yield Problem(f"job_definitions[{i}].instance_type", job.instance_type,
                              "one of the pool's instance_types (" + ", ".join(seen) + ")")
        if self.ami_id is not None and self.follow_latest:
            yield Problem("follow_latest", True, "false with ami_id: a pinned AMI does not follow anything")
        elif "ami_parameter" in self.model_fields_set and not self.follow_latest:
            yield Problem("follow_latest", False,
                          "true with ami_parameter (an SSM parameter is resolved again at every deploy, so the AMI "
                          "moves under running jobs), or give ami_id instead to pin it")

    def region_problems(self, region: str) -> Iterator[Problem]:
        for i, t in enumerate(self.instance_types):
            yield from offered_in(region, t, f"instance_types[{i}]")
