"""What a fleet file asks of the account: instance types per AZ, vCPUs per On-Demand quota, SageMaker endpoint
instances, reservations, images and AMIs. Pure: reads the fleet file's settings and the kit's recorded facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..facts.catalog import CATALOG, gpu_ecs_amis
from ..facts.neuron import default_training_image, ecs_neuron_ami_record, ecs_neuron_amis

if TYPE_CHECKING:  # an annotation only: verify imports this module, and --help should build no pydantic model
    from ..fleetfile.schema import Fleet


@dataclass(frozen=True)
class InstanceNeed:
    purpose: str
    instance_type: str
    count: int
    """Instances at most (a GPU pool: as many as its max_vcpus allows)."""
    azs: tuple[str, ...]
    """Where it must be offered: one AZ for a training cluster, the fleet's AZs for a pool."""
    capacity: str
    """on-demand | odcr | capacity-block | pool."""

    @property
    def vcpus(self) -> int:
        return self.count * CATALOG.get(self.instance_type).vcpus if self.instance_type in CATALOG else 0


@dataclass(frozen=True)
class ReservationNeed:
    purpose: str
    kind: str
    """odcr | capacity-block."""
    instance_type: str
    count: int
    az: str
    reservation_id: str | None
    resource_group_arn: str | None


@dataclass(frozen=True)
class EndpointNeed:
    purpose: str
    instance_type: str
    """A SageMaker type (``ml.``)."""
    instances: int


@dataclass(frozen=True)
class ImageNeed:
    purpose: str
    reference: str
    """A full image URI, or ``repository:tag`` of an AWS Deep Learning Container (its registry is per region)."""


@dataclass(frozen=True)
class AmiNeed:
    purpose: str
    parameter: str | None = None
    """An SSM parameter resolved at deploy (follow_latest)."""
    ami_id: str | None = None
    """A pinned AMI, or the one the kit recorded for the region."""


@dataclass
class FleetNeeds:
    region: str
    instances: list[InstanceNeed] = field(default_factory=list)
    reservations: list[ReservationNeed] = field(default_factory=list)
    endpoints: list[EndpointNeed] = field(default_factory=list)
    images: list[ImageNeed] = field(default_factory=list)
    amis: list[AmiNeed] = field(default_factory=list)


def needs_of(fleet: Fleet) -> FleetNeeds:
    out = FleetNeeds(region=fleet.region)
    neuron_parameter = str(ecs_neuron_ami_record()["parameter"])
    for c in fleet.training_clusters:
        purpose = f"training cluster {c.name}"
        az = c.capacity.availability_zone or fleet.network.training_az
        out.instances.append(InstanceNeed(purpose, c.instance_type, c.count, (az,), c.capacity.type))
        if c.capacity.type in ("odcr", "capacity-block"):
            out.reservations.append(ReservationNeed(purpose, c.capacity.type, c.instance_type, c.count, az,
                                                    c.capacity.reservation_id, c.capacity.resource_group_arn))
        out.images.append(ImageNeed(purpose, c.training_image or default_training_image(c.instance_type).reference))
        if c.ami.ami_id:
            out.amis.append(AmiNeed(purpose, ami_id=c.ami.ami_id))
        elif c.ami.follow_latest:
            out.amis.append(AmiNeed(purpose, parameter=c.ami.ssm_parameter or neuron_parameter))
        else:
            out.amis.append(AmiNeed(f"{purpose} (the kit's recorded ECS Neuron AMI)",
                                    ami_id=ecs_neuron_amis().get(fleet.region)))
    pool = fleet.fallback
    if pool.enabled:
        for t in pool.instance_types:
            per = CATALOG.get(t).vcpus if t in CATALOG else 0
            out.instances.append(InstanceNeed("GPU fallback pool", t, pool.max_vcpus // per if per else 0,
                                              tuple(fleet.network.availability_zones), "pool"))
        if pool.ami_id:
            out.amis.append(AmiNeed("GPU fallback pool", ami_id=pool.ami_id))
        elif pool.follow_latest:
            out.amis.append(AmiNeed("GPU fallback pool", parameter=pool.ami_parameter))
        else:
            out.amis.append(AmiNeed("GPU fallback pool (the kit's recorded ECS GPU AMI)",
                                    ami_id=gpu_ecs_amis().get(fleet.region)))
    for e in fleet.endpoints:
        purpose = f"endpoint {e.name}"
        types = {e.instance_type: e.max_instances}
        for t in e.instance_pools:
            types.setdefault(t, e.max_instances)
        gpu = e.gpu_variant
        if gpu is not None:
            types[gpu.instance_type] = max(types.get(gpu.instance_type, 0), gpu.max_instances)
        out.endpoints += [EndpointNeed(purpose, t, n) for t, n in types.items()]
        if e.image_uri:
            out.images.append(ImageNeed(purpose, e.image_uri))
        elif e.serving is not None:
            out.images.append(ImageNeed(purpose, e.serving.image))
        if gpu is not None and (gpu.image_uri or (e.serving and e.serving.gpu)):
            out.images.append(ImageNeed(f"{purpose} GPU variant", gpu.image_uri or e.serving.gpu.image))  # type: ignore[union-attr]
    return out
