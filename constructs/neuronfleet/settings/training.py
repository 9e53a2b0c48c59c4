"""Settings of :class:`neuronfleet.TrainiumCluster` and its :class:`Capacity`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, model_validator

from neuronfleet_contract.capacity_alert import TERMINATION

from ..core import rules
from ..core.problems import Problem
from ..facts import neuron
from ..facts.catalog import CATALOG, AcceleratorFamily, InstanceSpec, capacity_blocks
from ._base import Bool, Int, PositiveInt, Settings
from .batch import DEFAULT_UPDATE_TIMEOUT_MINUTES, UpdateTimeoutMinutes

CapacityType = Literal["on-demand", "odcr", "capacity-block"]

FSX_NO_BACKUPS_WITH_S3_LINK = (
    "0: FSx for Lustre takes no automatic or user-initiated backups of a file system linked to an S3 data "
    "repository, and the cluster links /fsx/data to its versioned data bucket (the durable copy of checkpoints; "
    "restore from S3 object versions)")
"""Why a training cluster takes no FSx backups. Sources (read 2026-11-23): FSx for Lustre user guide, "Working with
backups" (https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-backups-fsx.html: backups "of persistent file
systems that are not linked to an Amazon S3 durable data repository") and "Using data repositories" ("File system
backups aren't supported on file systems that are linked an Amazon S3 data repository"); botocore 1.44.5's fsx model,
CreateBackup: "not linked to a data repository" (tests/unit/test_cur_mnp_facts.py pins it)."""


BATCH_MIN_TIMEOUT_S = 60
"""AWS Batch's shortest job timeout: "The minimum value for the timeout is 60 seconds" (botocore 1.44.5 batch model,
JobTimeout ``attemptDurationSeconds``, which adds: "For multi-node parallel (MNP) jobs, the timeout applies to the
whole job, not to the individual nodes"; pinned by tests/unit/test_isolation_facts.py)."""
CAPACITY_BLOCK_HOURS = (24, 182 * 24)
"""The shortest and the longest Capacity Block: "You must specify the duration in 1-day increments up 14 days, and in
7-day increments up to 182 days" (botocore 1.44.5 ec2 model, DescribeCapacityBlockOfferings ``CapacityDurationHours``;
pinned by tests/unit/test_isolation_facts.py)."""
MAX_JOB_TIMEOUT_S = CAPACITY_BLOCK_HOURS[1] * 3600
"""The longest job timeout the kit takes (182 days, the longest Capacity Block): Batch documents no maximum."""
DEFAULT_JOB_TIMEOUT_S = 7 * 24 * 3600
"""A job attempt's timeout On-Demand and on an ODCR: a week. The kit's choice, not AWS's: long enough for a
pretraining run that checkpoints, short enough that a hung job stops billing within a week."""


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
    """The machine image. Pinned unless you opt in to following AWS's updates:

    - default: the ECS-optimized Amazon Linux 2023 Neuron AMI (what AWS Batch container instances need) *as
      recorded* in ``neuronfleet/facts/data/neuron_ecs_amis.json`` for the stack's region (AWS's SSM public parameter,
      read offline; ``scripts/refresh_data.py`` moves it, in a commit you can review);
    - ``ami_id``: your pinned AMI (bump it on purpose);
    - ``follow_latest: true``: the SSM parameter (``ssm_parameter`` or the ECS Neuron one) is resolved at every
      deploy, so a deploy after AWS publishes a new AMI makes a new launch-template version and Batch replaces
      the instances (after waiting for running jobs, as the compute environment's update policy allows).
    """

    what: ClassVar[str] = "ami"
    ssm_parameter: Annotated[str, AfterValidator(rules.ssm_parameter_name)] | None = None
    ami_id: Annotated[str, AfterValidator(rules.ami_id)] | None = None
    follow_latest: Bool = False

    def _problems(self) -> Iterator[Problem]:
        if self.ssm_parameter is not None and self.ami_id is not None:
            yield Problem("", self.model_dump(exclude_none=True, exclude_defaults=True),
                          "either ssm_parameter or ami_id, not both")
        elif self.ami_id is not None and self.follow_latest:
            yield Problem("follow_latest", True, "false with ami_id: a pinned AMI does not follow anything")
        elif self.ssm_parameter is not None and not self.follow_latest:
            yield Problem("follow_latest", False,
                          "true with ssm_parameter (an SSM parameter is resolved again at every deploy, so the AMI "
                          "moves under running clusters), or give ami_id instead to pin it")

    @classmethod
    def pinned(cls, ami_id: str) -> AmiSettings:
        return cls(ami_id=ami_id)

    @classmethod
    def latest(cls, ssm_parameter: str | None = None) -> AmiSettings:
        return cls(ssm_parameter=ssm_parameter, follow_latest=True)


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
    fsx_backup_retention_days: Int = Field(default=0, ge=0, le=90)
    """FSx for Lustre automatic daily backups: 0, the only value the cluster takes (see
    :data:`FSX_NO_BACKUPS_WITH_S3_LINK`): its file system is linked to the data bucket, and FSx for Lustre backs up
    no file system linked to an S3 data repository. Checkpoints' durable copy is the versioned bucket."""
    training_image: Annotated[str, AfterValidator(rules.container_image)] | None = None
    """Container image of the job definition: a Neuron DLC (``repository:tag``, or its full reference) or an ECR
    URI. Default: the newest recorded training image for the type's family (:func:`neuronfleet.facts.neuron.
    default_training_image`; Trn2: the TorchNeuron DLC). Its Neuron SDK is read from a DLC tag; a custom image needs
    ``training_image_sdk``. Its Neuron runtime library must run on the AMI's Neuron driver (checked at synth for the
    recorded and the followed ECS Neuron AMI; at job start by the health gate)."""
    training_image_sdk: Annotated[str, AfterValidator(neuron.sdk_version)] | None = None
    """The Neuron SDK a custom image carries (e.g. ``2.31.0``), when its tag does not say: it decides the runtime
    library the image is taken to carry (that release's, data/neuron_compat.json ``driver_runtime.releases``)."""
    logical_nc_config: Literal[1, 2] | None = None
    """Logical NeuronCore configuration (LNC), Trn2 only: 2 (Neuron's default: trn2.48xlarge presents 64 logical
    NeuronCores) or 1 (128). Unset: the type's default; types without LNC (Trn1) must leave it unset."""
    job_nodes: PositiveInt | None = None
    """Nodes of the job definition's multi-node job (default: ``count``). On UltraServer types whole UltraServers."""
    max_job_nodes: PositiveInt = rules.BATCH_MNP_MAX_NODES
    """The most nodes AWS Batch runs in one multi-node parallel job in your account: 1,000 by AWS's guide
    (:data:`neuronfleet.core.rules.BATCH_MNP_MAX_NODES`); set it once AWS has raised that limit for you."""
    retry_attempts: Int = Field(default=3, ge=1, le=10)
    """Batch attempts of a job (1 to 10, RetryStrategy ``attempts``); only host and hardware failures retry."""
    capacity_wait_timeout_s: Int | None = Field(default=3600, ge=600, le=86400)
    """A job held RUNNABLE at the head of the queue for lack of instance capacity
    (``CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY``) is cancelled after this many seconds (Batch
    ``jobStateTimeLimitActions``: 600 to 86,400); null keeps it waiting."""
    update_timeout_minutes: UpdateTimeoutMinutes = DEFAULT_UPDATE_TIMEOUT_MINUTES
    """How long a redeploy that changes the launch template waits for a running job before Batch replaces its
    instances (compute environment UpdatePolicy ``jobExecutionTimeoutMinutes``, see ``settings/batch.py``)."""
    job_timeout_s: Int | None = Field(default=None, ge=BATCH_MIN_TIMEOUT_S, le=MAX_JOB_TIMEOUT_S)
    """Seconds after which Batch ends a job attempt (the job definition's ``attemptDurationSeconds``, for the whole
    multi-node job; a timed-out job is not retried), so a hung job cannot hold its capacity. Unset: on a Capacity Block
    the shortest block less the time before its end that its instances stop (24 h - 30 min, UltraServer blocks
    24 h - 60 min): a run started when its block starts ends before any block could end it; otherwise a week
    (:data:`DEFAULT_JOB_TIMEOUT_S`). The kit does not know a block's end at synth: to end a run before *its* block
    ends, submit with ``--timeout attemptDurationSeconds=N`` (a submitted timeout overrides the job definition's)."""

    @property
    def termination_lead_s(self) -> int:
        """Seconds before a Capacity Block's end that its instances stop (the capacity alerts' figure)."""
        kind = "ultraserver" if self.spec.ultraserver_size > 1 else "instances"
        return int(TERMINATION[kind].lead.total_seconds())

    @property
    def attempt_duration_s(self) -> int:
        """The job definition's timeout: ``job_timeout_s``, or the default for the cluster's capacity."""
        if self.job_timeout_s is not None:
            return self.job_timeout_s
        if self.capacity.type == "capacity-block":
            return CAPACITY_BLOCK_HOURS[0] * 3600 - self.termination_lead_s
        return DEFAULT_JOB_TIMEOUT_S

    @property
    def spec(self) -> InstanceSpec:
        return CATALOG.get(self.instance_type)

    @property
    def image(self) -> str:
        return self.training_image or neuron.default_training_image(self.instance_type).reference

    @property
    def image_sdk(self) -> str | None:
        return neuron.parse_image(self.image).sdk or self.training_image_sdk

    @property
    def lnc(self) -> int | None:
        """The effective logical NeuronCore configuration (None: the type has none)."""
        return self.logical_nc_config or neuron.support(self.instance_type).lnc_default

    @property
    def logical_cores(self) -> int:
        """NeuronCores one node presents to the job (torchrun's processes per node)."""
        return neuron.logical_cores(self.instance_type, self.lnc)

    @property
    def nodes(self) -> int:
        return self.job_nodes or self.count

    @property
    def ultraservers(self) -> int:
        """Whole UltraServers of the cluster (0 for types that are not UltraServer instances)."""
        size = self.spec.ultraserver_size
        return self.count // size if size > 1 else 0

    def _problems(self) -> Iterator[Problem]:
        size = self.spec.ultraserver_size
        if self.count % size:
            below = self.count // size * size
            near = " or ".join(str(n) for n in (below, below + size) if n > 0)
            yield Problem("count", self.count, f"a multiple of {size} ({self.instance_type} comes in whole "
                                               f"UltraServers of {size} instances), e.g. {near}")
        if self.count > rules.ECS_MAX_INSTANCES_PER_CLUSTER:
            yield Problem("count", self.count, (
                f"at most {rules.ECS_MAX_INSTANCES_PER_CLUSTER:,}: a cluster's instances register in one ECS cluster "
                "(its Batch compute environment's), which takes no more; split it into several clusters"))
        if self.job_nodes is not None and self.job_nodes > self.count:
            yield Problem("job_nodes", self.job_nodes, f"at most count ({self.count})")
        elif self.nodes > self.max_job_nodes:
            field, value = ("job_nodes", self.job_nodes) if self.job_nodes is not None else ("count", self.count)
            yield Problem(field, value, (
                f"a job of at most {self.max_job_nodes:,} nodes (AWS Batch's limit on nodes per multi-node parallel "
                f"job{' by its guide' if self.max_job_nodes == rules.BATCH_MNP_MAX_NODES else ', as max_job_nodes says'}"
                "): set job_nodes to at most that (jobs then use part of the cluster), or max_job_nodes to the limit "
                "AWS has raised for your account"))
        elif self.job_nodes is not None and self.job_nodes % size:
            yield Problem("job_nodes", self.job_nodes,
                          f"a multiple of {size}: a job on {self.instance_type} takes whole UltraServers (a job that "
                          "splits one shares its NeuronLink domain with another job, and the launcher refuses it)")
        if self.fsx_backup_retention_days:
            yield Problem("fsx_backup_retention_days", self.fsx_backup_retention_days, FSX_NO_BACKUPS_WITH_S3_LINK)
        if self.fsx_storage_gib != 1200 and self.fsx_storage_gib % 2400:
            yield Problem("fsx_storage_gib", self.fsx_storage_gib,
                          "1200 or a multiple of 2400 (FSx for Lustre PERSISTENT_2)")
        fam = neuron.support(self.instance_type)
        if self.logical_nc_config is not None and self.logical_nc_config not in fam.lnc_allowed:
            yield Problem("logical_nc_config", self.logical_nc_config,
                          f"unset: {self.instance_type} has no logical NeuronCore configuration (LNC applies only to "
                          "Trn2 and Trn3)" if not fam.lnc_allowed else f"one of {list(fam.lnc_allowed)}")
        yield from neuron.image_problems(self.instance_type, self.image, self.training_image_sdk)
        if self.spec.capacity_block_only and self.capacity.type != "capacity-block":
            yield Problem("capacity.type", self.capacity.type,
                          f"'capacity-block': {self.instance_type} is sold only as UltraServer Capacity Blocks")
        elif (size > 1 and self.capacity.type == "capacity-block" and self.capacity.reservation_id
              and self.count != size):
            yield Problem("capacity.reservation_id", self.capacity.reservation_id,
                          f"a resource_group_arn holding all {self.count // size or 1} UltraServer Capacity Blocks: "
                          f"one UltraServer Capacity Block is one UltraServer ({size} instances), so a reservation_id "
                          f"targets {size}, not {self.count}")
        yield from self._capacity_block_problems()
        longest = CAPACITY_BLOCK_HOURS[1] * 3600 - self.termination_lead_s
        if self.capacity.type == "capacity-block" and self.job_timeout_s is not None and self.job_timeout_s > longest:
            yield Problem("job_timeout_s", self.job_timeout_s, (
                f"at most {longest:,} on a Capacity Block (the longest block, {CAPACITY_BLOCK_HOURS[1] // 24} days, "
                f"less the {self.termination_lead_s // 60} minutes before its end that its instances stop): a longer "
                "timeout never ends a run before its block does"))

    def _capacity_block_problems(self) -> Iterator[Problem]:
        """Capacity Blocks only for the types EC2 sells them for, and no more instances than one block holds behind
        one reservation id (data/capacity_blocks.json)."""
        if self.capacity.type != "capacity-block":
            return
        blocks = capacity_blocks()
        if not blocks.sold_for(self.instance_type):
            sold = [t for t in blocks.types() if t in TRAINIUM_TYPES]
            yield Problem("capacity.type", self.capacity.type, (
                f"'on-demand' or 'odcr' for {self.instance_type}: EC2 Capacity Blocks for ML are not sold for it; "
                f"of the training types they are sold for {', '.join(sold)}"))
        elif (self.instance_type in blocks.instance_types and self.capacity.reservation_id
              and self.count > blocks.max_instances_per_block):
            yield Problem("capacity.reservation_id", self.capacity.reservation_id, (
                f"a resource_group_arn holding several Capacity Blocks: one instance Capacity Block holds at most "
                f"{blocks.max_instances_per_block} instances, so a reservation_id cannot target {self.count}"))

    def region_problems(self, region: str) -> Iterator[Problem]:
        """The type must be offered in ``region`` (AWS's offerings data), the reservation's AZ be in it, and the
        image's Neuron runtime library run on the driver of the AMI the cluster gets there."""
        yield from offered_in(region, self.instance_type, "instance_type", allow_unlisted=self.allow_unlisted_region)
        for p in self.capacity.region_problems(region):
            yield p.under("capacity")
        yield from neuron.driver_problems(self.instance_type, self.image, self.training_image_sdk, self.ami_driver(region))

    def ami_driver(self, region: str | None) -> neuron.DriverWindow | None:
        """The Neuron driver window of the cluster's AMI in ``region`` (None: the user's own AMI, not known)."""
        return neuron.ami_driver(region, follow_latest=self.ami.follow_latest,
                                 pinned_id=self.ami.ami_id is not None or self.ami.ssm_parameter is not None)


def reservations(capacities: Iterable[Capacity]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The reservation ids and capacity-reservation resource-group ARNs these capacities target, sorted, once each:
    what a fleet's capacity alerts watch and its cost collector attributes Capacity Block fees by."""
    capacities = list(capacities)
    return (tuple(sorted({c.reservation_id for c in capacities if c.reservation_id})),
            tuple(sorted({c.resource_group_arn for c in capacities if c.resource_group_arn})))


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
