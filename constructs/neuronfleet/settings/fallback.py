"""Settings of :class:`neuronfleet.GpuPool`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from .. import rules
from ..catalog import BATCH_LAUNCH_TEMPLATE_OVERRIDES, CATALOG, AcceleratorFamily
from ..problems import Problem
from ._base import Int, Name, NonNegativeInt, Settings
from .batch import DEFAULT_UPDATE_TIMEOUT_MINUTES, AllocationStrategy, UpdateTimeoutMinutes
from .training import offered_in

GPU_TYPES = CATALOG.types(AcceleratorFamily.GPU)
GPU_ECS_AMI_PARAMETER = "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id"
"""The ECS-optimized Amazon Linux 2023 GPU AMI (NVIDIA driver, container toolkit): what Batch GPU hosts need.
Read from SSM at every deploy unless the pool pins ``ami_id``."""


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
    ami_parameter: Annotated[str, AfterValidator(rules.ssm_parameter_name)] = GPU_ECS_AMI_PARAMETER
    """SSM parameter holding the AMI id, re-read at every deploy (a new AMI then replaces idle instances and
    waits ``update_timeout_minutes`` for running jobs)."""
    ami_id: Annotated[str, AfterValidator(rules.ami_id)] | None = None
    """A pinned AMI (in place of ``ami_parameter``): redeploys change nothing until you bump it on purpose."""
    root_volume_gib: Int = Field(default=512, ge=100, le=16384)
    update_timeout_minutes: UpdateTimeoutMinutes = DEFAULT_UPDATE_TIMEOUT_MINUTES
    """How long a redeploy that changes the launch templates waits for running jobs (Batch UpdatePolicy)."""
    allocation_strategy: AllocationStrategy = "BEST_FIT_PROGRESSIVE"
    """``BEST_FIT_PROGRESSIVE``: Batch picks among the types by fit and cost per vCPU, not by list order.
    ``BEST_FIT_PROGRESSIVE_ORDERED``: in list order (see ``neuronfleet.settings.batch.AllocationStrategy``)."""

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
        if self.ami_id is not None and "ami_parameter" in self.model_fields_set:
            yield Problem("ami_id", self.ami_id, "unset when ami_parameter is given: either a pinned AMI or an "
                                                 "SSM parameter, not both")

    def region_problems(self, region: str) -> Iterator[Problem]:
        for i, t in enumerate(self.instance_types):
            yield from offered_in(region, t, f"instance_types[{i}]")
