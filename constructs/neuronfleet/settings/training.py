"""Settings of :class:`neuronfleet.TrainiumCluster` and its :class:`Capacity`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, model_validator

from .. import rules
from ..catalog import CATALOG, AcceleratorFamily, InstanceSpec
from ..problems import Problem
from ._base import Bool, Int, PositiveInt, Settings

CapacityType = Literal["on-demand", "odcr", "capacity-block"]


class Capacity(Settings):
    """Where training instances come from. Build with :meth:`on_demand`, :meth:`odcr` or :meth:`capacity_block`.

    ``odcr``: a targeted On-Demand Capacity Reservation; ``capacity-block``: EC2 Capacity Blocks for ML
    (``MarketType: capacity-block``). A reservation is targeted by ``reservation_id`` or, for several, by a
    capacity-reservation ``resource_group_arn``. ``availability_zone`` is the reservation's AZ.
    """

    what: ClassVar[str] = "capacity"
    type: CapacityType = "on-demand"
    reservation_id: Annotated[str, AfterValidator(rules.capacity_reservation_id)] | None = None
    resource_group_arn: Annotated[str, AfterValidator(rules.resource_group_arn)] | None = None
    placement_group: Bool | None = None
    """None: a cluster placement group when it helps (several EFA instances On-Demand); never with a Capacity
    Block. An ODCR used with a placement group must have been created in a cluster placement group."""
    availability_zone: str | None = None
    """The reservation's AZ: the cluster's subnet must be in it."""

    @classmethod
    def on_demand(cls, *, placement_group: bool | None = None) -> Capacity:
        return cls(type="on-demand", placement_group=placement_group)

    @classmethod
    def odcr(cls, *, reservation_id: str | None = None, resource_group_arn: str | None = None,
             availability_zone: str | None = None, placement_group: bool | None = None) -> Capacity:
        return cls(type="odcr", reservation_id=reservation_id, resource_group_arn=resource_group_arn,
                   availability_zone=availability_zone, placement_group=placement_group)

    @classmethod
    def capacity_block(cls, *, reservation_id: str | None = None, resource_group_arn: str | None = None,
                       availability_zone: str | None = None) -> Capacity:
        return cls(type="capacity-block", reservation_id=reservation_id, resource_group_arn=resource_group_arn,
                   availability_zone=availability_zone)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"type": data} if data == "on-demand" else data

    def _problems(self) -> Iterator[Problem]:
        targeted = self.reservation_id is not None or self.resource_group_arn is not None
        if self.type == "on-demand" and targeted:
            yield Problem("type", self.type,
                          "'odcr' or 'capacity-block' when a reservation_id or resource_group_arn is given")
        if self.type != "on-demand" and not targeted:
            yield Problem("reservation_id", None,
                          f"a reservation id (cr-...) or resource_group_arn: a {self.type} must be targeted")
        if self.reservation_id is not None and self.resource_group_arn is not None:
            yield Problem("resource_group_arn", self.resource_group_arn,
                          "either reservation_id or resource_group_arn, not both")
        if self.type == "capacity-block" and self.placement_group:
            yield Problem("placement_group", self.placement_group,
                          "false or unset: a Capacity Block is already co-located, AWS needs no placement group for it")

    def region_problems(self, region: str) -> Iterator[Problem]:
        if self.availability_zone is not None:
            try:
                rules.availability_zone(self.availability_zone, region)
            except ValueError as exc:
                yield Problem("availability_zone", self.availability_zone, str(exc))

    def launch_template_data(self) -> dict[str, Any]:
        """The launch-template properties that put instances on this capacity."""
        if self.type == "on-demand":
            return {}
        target = ({"CapacityReservationId": self.reservation_id} if self.reservation_id
                  else {"CapacityReservationResourceGroupArn": self.resource_group_arn})
        data: dict[str, Any] = {"CapacityReservationSpecification": {"CapacityReservationTarget": target}}
        if self.type == "capacity-block":
            data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
        return data


class AmiSettings(Settings):
    """The machine image: an SSM parameter holding an AMI id, or a pinned AMI id (default: the ECS-optimized
    Neuron AMI, which AWS Batch container instances need)."""

    what: ClassVar[str] = "ami"
    ssm_parameter: Annotated[str, AfterValidator(rules.ssm_parameter_name)] | None = None
    ami_id: Annotated[str, AfterValidator(rules.ami_id)] | None = None

    def _problems(self) -> Iterator[Problem]:
        if self.ssm_parameter is not None and self.ami_id is not None:
            yield Problem("", self.model_dump(exclude_none=True), "either ssm_parameter or ami_id, not both")


TRAINIUM_TYPES = CATALOG.types(AcceleratorFamily.TRAINIUM)


class TrainiumClusterSettings(Settings):
    """What a Trainium training cluster is: type and count, capacity, image, volumes, shared storage, job image."""

    what: ClassVar[str] = "training cluster"
    instance_type: Literal[TRAINIUM_TYPES]  # type: ignore[valid-type]
    count: PositiveInt
    """Instances (for trn2u.48xlarge, a multiple of 4: whole UltraServers)."""
    capacity: Capacity = Capacity()
    allow_unlisted_region: Bool = False
    """Allow a Capacity-Block-only type in a region AWS's offerings data does not list for it."""
    ami: AmiSettings = AmiSettings()
    root_volume_gib: Int = Field(default=512, ge=100, le=16384)
    fsx_storage_gib: Int = Field(default=1200, ge=1200)
    """FSx for Lustre PERSISTENT_2: 1200 or a multiple of 2400."""
    fsx_throughput_mib_per_tib: Literal[125, 250, 500, 1000] = 250
    training_image: Annotated[str, AfterValidator(rules.container_image)] | None = None
    """Container image of the job definition template: an ECR URI, or a Neuron DLC repository:tag."""

    @property
    def spec(self) -> InstanceSpec:
        return CATALOG.get(self.instance_type)

    def _problems(self) -> Iterator[Problem]:
        size = self.spec.ultraserver_size
        if self.count % size:
            below = self.count // size * size
            near = " or ".join(str(n) for n in (below, below + size) if n > 0)
            yield Problem("count", self.count, f"a multiple of {size} ({self.instance_type} comes in whole "
                                               f"UltraServers of {size} instances), e.g. {near}")
        if self.fsx_storage_gib != 1200 and self.fsx_storage_gib % 2400:
            yield Problem("fsx_storage_gib", self.fsx_storage_gib,
                          "1200 or a multiple of 2400 (FSx for Lustre PERSISTENT_2)")

    def region_problems(self, region: str) -> Iterator[Problem]:
        """The type must be offered in ``region`` (AWS's offerings data), and the reservation's AZ be in it."""
        yield from offered_in(region, self.instance_type, "instance_type", allow_unlisted=self.allow_unlisted_region)
        for p in self.capacity.region_problems(region):
            yield p.under("capacity")


def offered_in(region: str, instance_type: str, field: str, *, allow_unlisted: bool = False) -> Iterator[Problem]:
    spec = CATALOG.get(instance_type)
    regions = CATALOG.regions(instance_type)
    if region in regions or (spec.capacity_block_only and allow_unlisted):
        return
    hint = ""
    if spec.capacity_block_only:
        hint = (f"; {instance_type} is sold only through Capacity Blocks and AWS's offerings data may omit "
                "regions: set allow_unlisted_region: true if your block is in " + region)
    yield Problem(field, instance_type, f"a type offered in {region} (AWS's offerings list it in: "
                                        f"{', '.join(sorted(regions)) or 'none'}){hint}")
