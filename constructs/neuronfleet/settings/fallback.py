"""Settings of :class:`neuronfleet.GpuPool`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from .. import rules
from ..catalog import CATALOG, AcceleratorFamily
from ..problems import Problem
from ._base import Int, Name, NonNegativeInt, Settings
from .training import offered_in

GPU_TYPES = CATALOG.types(AcceleratorFamily.GPU)
GPU_ECS_AMI_PARAMETER = "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id"
"""The ECS-optimized Amazon Linux 2023 GPU AMI (NVIDIA driver, container toolkit): what Batch GPU hosts need."""


class GpuPoolSettings(Settings):
    """GPU types in priority order, how large the pool may grow, and which workloads must run on CUDA."""

    what: ClassVar[str] = "gpu pool"
    instance_types: tuple[Literal[GPU_TYPES], ...] = Field(  # type: ignore[valid-type]
        default=("p5.48xlarge", "g6e.48xlarge"), min_length=1)
    max_vcpus: NonNegativeInt = 384
    cuda_only_workloads: tuple[Name, ...] = ()
    ami_parameter: Annotated[str, AfterValidator(rules.ssm_parameter_name)] = GPU_ECS_AMI_PARAMETER
    root_volume_gib: Int = Field(default=512, ge=100, le=16384)

    def _problems(self) -> Iterator[Problem]:
        first = CATALOG.get(self.instance_types[0])
        if self.max_vcpus < first.vcpus:
            yield Problem("max_vcpus", self.max_vcpus, f"at least one {first.instance_type} ({first.vcpus} vCPUs): "
                                                       "below, the pool could never launch its first choice")

    def region_problems(self, region: str) -> Iterator[Problem]:
        for i, t in enumerate(self.instance_types):
            yield from offered_in(region, t, f"instance_types[{i}]")
