"""Fleet files: the YAML a platform team writes, parsed into typed, immutable objects.

This is the only module that knows the file format. ``load_fleet(path)`` returns a :class:`Fleet` or
raises :class:`FleetConfigError` carrying one :class:`Problem` per mistake, each naming the field path,
the value given and what is allowed. Structure and types are checked by pydantic; the facts about
hardware and regions (instance types, whole UltraServers, regional offerings) by :func:`_check`.
"""

from __future__ import annotations

import ipaddress
import json
import re
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .catalog import CATALOG, AcceleratorFamily, InstanceCatalog, Price

Phase = Literal["evaluation", "pilot", "production"]
CapacityType = Literal["on-demand", "odcr", "capacity-block"]
ServingContainer = Literal["lmi-neuronx", "tgi-neuronx", "vllm-neuronx", "custom"]

LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
                      2922, 3288, 3653)
"""CloudWatch Logs retention periods, in days."""

Name = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,30}$")]
"""Lower-case letters, digits and dashes, starting with a letter, at most 31 characters."""



class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NetworkConfig(_Model):
    """The VPC. ``training_az`` is the one AZ of the reserved capacity (Capacity Blocks are single-AZ)."""

    cidr: str = "10.40.0.0/16"
    availability_zones: tuple[str, ...] = Field(min_length=2, max_length=6)
    training_az: str
    nat_gateways: int = Field(default=1, ge=0, le=6)
    interface_endpoints: bool = True
    flow_logs_retention_days: int = 30


class CapacityConfig(_Model):
    """Where training instances come from.

    ``on-demand``; ``odcr`` (a targeted On-Demand Capacity Reservation); ``capacity-block`` (EC2
    Capacity Blocks for ML: ``MarketType: capacity-block``). Reservations are targeted by
    ``reservation_id`` or, for several blocks, by a capacity-reservation ``resource_group_arn``.
    """

    type: CapacityType = "on-demand"
    reservation_id: str | None = Field(default=None, pattern=r"^cr-[0-9a-f]{8,17}$")
    resource_group_arn: str | None = Field(
        default=None, pattern=r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/[A-Za-z0-9_.-]+$"
    )
    placement_group: bool | None = None
    """None: a cluster placement group when it helps (several EFA instances On-Demand); never with a
    Capacity Block. An ODCR used with a placement group must have been created in a cluster placement group."""
    availability_zone: str | None = None
    """The reservation's AZ (default: network.training_az, which must then be it)."""


class AmiConfig(_Model):
    """The machine image: an SSM parameter holding an AMI id (the Neuron DLAMI), or a pinned AMI id."""

    ssm_parameter: str | None = Field(default=None, pattern=r"^/[A-Za-z0-9_.\-/]+$")
    ami_id: str | None = Field(default=None, pattern=r"^ami-[0-9a-f]{8,17}$")


class TrainingClusterConfig(_Model):
    name: Name
    instance_type: str
    count: int = Field(ge=1)
    """Instances (for trn2u.48xlarge, a multiple of 4: whole UltraServers)."""
    capacity: CapacityConfig = CapacityConfig()
    allow_unlisted_region: bool = False
    """Allow a Capacity-Block-only type in a region AWS's offerings data does not list for it."""
    ami: AmiConfig = AmiConfig()
    """Default: the ECS-optimized Neuron AMI (AWS Batch runs the instances)."""
    root_volume_gib: int = Field(default=512, ge=100, le=16384)
    fsx_storage_gib: int = Field(default=1200, ge=1200)
    """FSx for Lustre PERSISTENT_2: 1200 or a multiple of 2400."""
    fsx_throughput_mib_per_tib: Literal[125, 250, 500, 1000] = 250
    training_image: str | None = None
    """Container image of the job definition template: an ECR URI, or a Neuron DLC name:tag."""


class GpuVariantConfig(_Model):
    instance_type: str
    initial_weight: float = Field(default=0.0, ge=0.0)
    initial_instance_count: int = Field(default=1, ge=1)
    shadow: bool = False
    """A shadow variant gets a copy of the traffic; its responses are not returned (pilot comparisons)."""
    image_uri: str | None = None


class ScheduledScalingConfig(_Model):
    name: Name
    schedule: str = Field(pattern=r"^(cron|rate|at)\(.+\)$")
    """Application Auto Scaling expression, e.g. cron(0 8 ? * MON-FRI *) (UTC)."""
    min_instances: int = Field(ge=1)
    max_instances: int = Field(ge=1)


class EndpointAlarmsConfig(_Model):
    latency_p99_ms: int = Field(default=5000, ge=1)
    errors_5xx_per_5min: int = Field(default=5, ge=1)
    model_errors_per_5min: int = Field(default=5, ge=1)


class EndpointConfig(_Model):
    name: Name
    instance_type: str
    container: ServingContainer = "lmi-neuronx"
    image_uri: str | None = None
    model_data_url: str | None = Field(default=None, pattern=r"^s3://[a-z0-9.\-]{3,63}/.+$")
    hf_model_id: str | None = None
    tensor_parallel_degree: int = Field(default=2, ge=1)
    batch_size: int = Field(default=1, ge=1)
    sequence_length: int = Field(default=2048, ge=1)
    min_instances: int = Field(default=1, ge=1)
    max_instances: int = Field(default=2, ge=1)
    target_invocations_per_instance: float = Field(default=20, gt=0)
    scale_in_cooldown_s: int = Field(default=600, ge=0, le=3600)
    scale_out_cooldown_s: int = Field(default=120, ge=0, le=3600)
    scheduled_scaling: tuple[ScheduledScalingConfig, ...] = ()
    volume_size_gib: int = Field(default=64, ge=1, le=512)
    startup_health_check_timeout_s: int = Field(default=1800, ge=600, le=3600)
    """Neuron models load (and may compile) for minutes: 600 s at least."""
    model_download_timeout_s: int = Field(default=1800, ge=600, le=3600)
    alarms: EndpointAlarmsConfig = EndpointAlarmsConfig()
    data_capture_percent: int | None = Field(default=None, ge=1, le=100)
    gpu_variant: GpuVariantConfig | None = None


class FallbackConfig(_Model):
    enabled: bool = False
    instance_types: tuple[str, ...] = ("p5.48xlarge", "g6e.48xlarge")
    """GPU types in priority order."""
    max_vcpus: int = Field(default=384, ge=0)
    cuda_only_workloads: tuple[str, ...] = ()


class CostMonitorConfig(_Model):
    enabled: bool = True
    monthly_budget_usd: float | None = Field(default=None, gt=0)
    idle_utilisation_percent: float = Field(default=20.0, ge=0, le=100)
    idle_hours: int = Field(default=6, ge=1, le=72)


class PriceOverride(_Model):
    usd_per_hour: float = Field(ge=0)
    source: str = Field(min_length=1)
    as_of: date


class Fleet(_Model):
    """One fleet file, validated."""

    name: Name
    phase: Phase
    region: str = Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")
    account: str | None = Field(default=None, pattern=r"^\d{12}$")
    tags: Mapping[str, str] = Field(default_factory=dict)
    notification_emails: tuple[Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")], ...] = ()
    """Subscribed to the fleet's alerts topic (alarms, failover, cost monitors)."""
    network: NetworkConfig
    training_clusters: tuple[TrainingClusterConfig, ...] = ()
    endpoints: tuple[EndpointConfig, ...] = ()
    fallback: FallbackConfig = FallbackConfig()
    cost_monitors: CostMonitorConfig = CostMonitorConfig()
    prices: Mapping[str, PriceOverride] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _facts(self) -> Self:
        problems = list(_check(self))
        if problems:
            raise _Problems(problems)
        return self

    @property
    def catalog(self) -> InstanceCatalog:
        """The instance catalog with this fleet's price overrides applied."""
        return CATALOG.with_prices(
            {t: Price(usd_per_hour=p.usd_per_hour, source=p.source, as_of=p.as_of, region=self.region)
             for t, p in self.prices.items()}
        )


# ---------------------------------------------------------------------------------------------- errors


@dataclass(frozen=True)
class Problem:
    path: str
    value: Any
    allowed: str

    def __str__(self) -> str:
        return f"{self.path}: got {_show(self.value)}; allowed: {self.allowed}"


class FleetConfigError(ValueError):
    """A fleet file that cannot be used; ``problems`` lists every mistake found."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: {len(problems)} problem(s) in the fleet file:\n{lines}")


class _Problems(ValueError):
    """Raised inside validation to carry semantic problems out through pydantic."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(map(str, problems)))
        self.problems = problems


_MISSING = object()


def _show(value: Any) -> str:
    if value is _MISSING:
        return "nothing (the field is required)"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


# ------------------------------------------------------------------------------------- semantic checks


def _check(fleet: Fleet) -> Iterator[Problem]:
    cat = CATALOG
    net = fleet.network
    yield from _check_network(fleet)

    for i, c in enumerate(fleet.training_clusters):
        at = f"training_clusters[{i}]"
        trainium = cat.types(AcceleratorFamily.TRAINIUM)
        if c.instance_type not in trainium:
            yield Problem(f"{at}.instance_type", c.instance_type, ", ".join(trainium))
            continue
        spec = cat.get(c.instance_type)
        if c.count % spec.ultraserver_size:
            yield Problem(
                f"{at}.count", c.count,
                f"a multiple of {spec.ultraserver_size} ({c.instance_type} comes in whole UltraServers of "
                f"{spec.ultraserver_size} instances), e.g. {_near_multiples(c.count, spec.ultraserver_size)}",
            )
        yield from _check_offered(fleet.region, at, c.instance_type, c.allow_unlisted_region)
        yield from _check_capacity(f"{at}.capacity", c.capacity, net.training_az)
        if c.fsx_storage_gib != 1200 and c.fsx_storage_gib % 2400:
            yield Problem(f"{at}.fsx_storage_gib", c.fsx_storage_gib,
                          "1200 or a multiple of 2400 (FSx for Lustre PERSISTENT_2)")
        if c.capacity.availability_zone and c.capacity.availability_zone != net.training_az:
            yield Problem(f"{at}.capacity.availability_zone", c.capacity.availability_zone,
                          f"network.training_az ({net.training_az}): the training subnet must be in the "
                          "reservation's AZ; set network.training_az to the AZ of your reservation")
        if (c.ami.ssm_parameter is None) == (c.ami.ami_id is None) and (c.ami.ssm_parameter or c.ami.ami_id):
            yield Problem(f"{at}.ami", c.ami.model_dump(exclude_none=True),
                          "either ssm_parameter or ami_id, not both")
    yield from _unique("training_clusters", [c.name for c in fleet.training_clusters])

    sm_types = sagemaker_instance_types()
    for i, e in enumerate(fleet.endpoints):
        at = f"endpoints[{i}]"
        if e.instance_type not in sm_types:
            yield Problem(f"{at}.instance_type", e.instance_type,
                          "a SageMaker ProductionVariantInstanceType, e.g. " + ", ".join(_ml(AcceleratorFamily.INFERENTIA)))
        elif e.instance_type.removeprefix("ml.") not in cat.types(AcceleratorFamily.INFERENTIA):
            yield Problem(f"{at}.instance_type", e.instance_type,
                          "an Inferentia2 type: " + ", ".join(_ml(AcceleratorFamily.INFERENTIA)))
        else:
            cores = cat.get(e.instance_type.removeprefix("ml.")).neuron_cores
            if e.tensor_parallel_degree > cores or cores % e.tensor_parallel_degree:
                yield Problem(f"{at}.tensor_parallel_degree", e.tensor_parallel_degree,
                              f"a divisor of the {cores} NeuronCores of {e.instance_type}: "
                              + ", ".join(str(d) for d in range(1, cores + 1) if cores % d == 0))
        if e.min_instances > e.max_instances:
            yield Problem(f"{at}.min_instances", e.min_instances,
                          f"at most max_instances ({e.max_instances})")
        if (e.container == "custom") != (e.image_uri is not None):
            yield Problem(f"{at}.image_uri", e.image_uri,
                          "an image URI exactly when container is 'custom'")
        if (e.model_data_url is None) == (e.hf_model_id is None):
            yield Problem(f"{at}.model_data_url", e.model_data_url,
                          "exactly one of model_data_url (s3://...) or hf_model_id")
        if e.gpu_variant and e.gpu_variant.instance_type not in _ml(AcceleratorFamily.GPU):
            yield Problem(f"{at}.gpu_variant.instance_type", e.gpu_variant.instance_type,
                          "a SageMaker GPU type of the catalog: " + ", ".join(_ml(AcceleratorFamily.GPU)))
        for j, action in enumerate(e.scheduled_scaling):
            if action.min_instances > action.max_instances:
                yield Problem(f"{at}.scheduled_scaling[{j}].min_instances", action.min_instances,
                              f"at most max_instances ({action.max_instances})")
    yield from _unique("endpoints", [e.name for e in fleet.endpoints])

    gpus = cat.types(AcceleratorFamily.GPU)
    for i, t in enumerate(fleet.fallback.instance_types):
        if t not in gpus:
            yield Problem(f"fallback.instance_types[{i}]", t, ", ".join(gpus))
        elif fleet.fallback.enabled:
            yield from _check_offered(fleet.region, "fallback", t, False, f"fallback.instance_types[{i}]")

    for t in fleet.prices:
        if t not in cat:
            yield Problem(f"prices.{t}", t, "an instance type of the catalog: " + ", ".join(cat.types()))


def _check_network(fleet: Fleet) -> Iterator[Problem]:
    net = fleet.network
    try:
        cidr = ipaddress.IPv4Network(net.cidr)
        if not 16 <= cidr.prefixlen <= 20:
            yield Problem("network.cidr", net.cidr, "an IPv4 CIDR from /16 to /20")
    except ValueError:
        yield Problem("network.cidr", net.cidr, "an IPv4 CIDR such as 10.40.0.0/16")
    for i, az in enumerate(net.availability_zones):
        if not re.fullmatch(re.escape(fleet.region) + r"[a-z]", az):
            yield Problem(f"network.availability_zones[{i}]", az, f"an AZ of {fleet.region}, e.g. {fleet.region}a")
    if len(set(net.availability_zones)) != len(net.availability_zones):
        yield Problem("network.availability_zones", list(net.availability_zones), "distinct AZs")
    if net.training_az not in net.availability_zones:
        yield Problem("network.training_az", net.training_az,
                      "one of network.availability_zones: " + ", ".join(net.availability_zones))
    if net.nat_gateways > len(net.availability_zones):
        yield Problem("network.nat_gateways", net.nat_gateways,
                      f"0 to {len(net.availability_zones)} (one per AZ at most)")
    if net.flow_logs_retention_days not in LOG_RETENTION_DAYS:
        yield Problem("network.flow_logs_retention_days", net.flow_logs_retention_days,
                      "a CloudWatch Logs retention: " + ", ".join(map(str, LOG_RETENTION_DAYS)))


def _check_offered(region: str, at: str, instance_type: str, allow_unlisted: bool,
                   path: str | None = None) -> Iterator[Problem]:
    spec = CATALOG.get(instance_type)
    regions = CATALOG.regions(instance_type)
    if region in regions:
        return
    if spec.capacity_block_only and allow_unlisted:
        return
    hint = ""
    if spec.capacity_block_only:
        hint = (f"; {instance_type} is sold only through Capacity Blocks and AWS's offerings data may omit "
                f"regions: set {at}.allow_unlisted_region: true if your block is in {region}")
    yield Problem(path or f"{at}.instance_type", instance_type,
                  f"a type offered in {region} (AWS's offerings list it in: {', '.join(sorted(regions)) or 'none'}){hint}")


def _check_capacity(at: str, cap: CapacityConfig, training_az: str) -> Iterator[Problem]:
    targeted = cap.reservation_id is not None or cap.resource_group_arn is not None
    if cap.type == "on-demand" and targeted:
        yield Problem(f"{at}.type", cap.type,
                      "'odcr' or 'capacity-block' when a reservation_id or resource_group_arn is given")
    if cap.type != "on-demand" and not targeted:
        yield Problem(f"{at}.reservation_id", None,
                      f"a reservation id (cr-...) or resource_group_arn: a {cap.type} must be targeted")
    if cap.reservation_id is not None and cap.resource_group_arn is not None:
        yield Problem(f"{at}.resource_group_arn", cap.resource_group_arn,
                      "either reservation_id or resource_group_arn, not both")
    if cap.type == "capacity-block" and cap.placement_group:
        yield Problem(f"{at}.placement_group", cap.placement_group,
                      "false or unset: a Capacity Block is already co-located, AWS needs no placement group for it")


def _near_multiples(count: int, size: int) -> str:
    below = count // size * size
    return " or ".join(str(n) for n in (below, below + size) if n > 0)


def _unique(at: str, names: list[str]) -> Iterator[Problem]:
    seen: set[str] = set()
    for i, n in enumerate(names):
        if n in seen:
            yield Problem(f"{at}[{i}].name", n, "a name not used by another entry")
        seen.add(n)


def _ml(family: AcceleratorFamily) -> list[str]:
    sm = sagemaker_instance_types()
    return [f"ml.{t}" for t in CATALOG.types(family) if f"ml.{t}" in sm]


@cache
def sagemaker_instance_types() -> frozenset[str]:
    """Every valid ProductionVariantInstanceType, from botocore's SageMaker service model.

    Read from data/sagemaker_instance_types.json (scripts/refresh_data.py; a test checks it against the
    installed botocore), since loading botocore's SageMaker model costs over a second of synth time.
    """
    raw = resources.files("neuronfleet.data").joinpath("sagemaker_instance_types.json").read_text()
    return frozenset(json.loads(raw)["instance_types"])


# --------------------------------------------------------------------------------------------- loading


def load_fleet(path: str | Path) -> Fleet:
    """Read and validate a fleet file; raise :class:`FleetConfigError` listing every problem."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise FleetConfigError(str(path), [Problem("(file)", str(path), f"a readable file ({exc.strerror})")]) from None
    except yaml.YAMLError as exc:
        raise FleetConfigError(str(path), [Problem("(file)", str(exc).splitlines()[0], "valid YAML")]) from None
    return parse_fleet(raw, source=str(path))


def parse_fleet(raw: Any, *, source: str = "<fleet>") -> Fleet:
    if not isinstance(raw, dict):
        raise FleetConfigError(source, [Problem("(top level)", raw, "a mapping of fleet settings")])
    try:
        return Fleet.model_validate(raw)
    except ValidationError as exc:
        raise FleetConfigError(source, _problems(exc, raw)) from None


def _problems(exc: ValidationError, raw: Any) -> list[Problem]:
    out: list[Problem] = []
    for err in exc.errors(include_url=False):
        ctx = err.get("ctx") or {}
        if isinstance(ctx.get("error"), _Problems):
            out.extend(ctx["error"].problems)
            continue
        loc = tuple(err["loc"])
        kind = err["type"]
        if kind == "missing":
            out.append(Problem(_path(loc), _MISSING, _describe(loc)))
        elif kind == "extra_forbidden":
            known = _fields_at(loc[:-1])
            out.append(Problem(_path(loc), err.get("input"),
                               f"no key {loc[-1]!r} here; known keys: " + (", ".join(known) or "none")))
        else:
            out.append(Problem(_path(loc), err.get("input"), _allowed_from(err, loc)))
    return out


_KINDS = {
    "int_parsing": "a whole number", "int_type": "a whole number", "int_from_float": "a whole number",
    "float_parsing": "a number", "float_type": "a number", "bool_parsing": "true or false",
    "bool_type": "true or false", "string_type": "text", "tuple_type": "a list", "list_type": "a list",
    "dict_type": "a mapping", "model_type": "a mapping of settings", "model_attributes_type": "a mapping of settings",
    "date_from_datetime_parsing": "a date (YYYY-MM-DD)", "date_parsing": "a date (YYYY-MM-DD)",
    "date_type": "a date (YYYY-MM-DD)",
}


def _allowed_from(err: Any, loc: tuple[int | str, ...]) -> str:
    ctx = err.get("ctx") or {}
    kind = err["type"]
    if kind in _KINDS:
        return _KINDS[kind]
    bounds = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}
    if kind in bounds:
        return f"a number {bounds[kind]} {next(iter(ctx.values()))}"
    if kind == "too_short":
        return f"at least {ctx.get('min_length')} entries"
    if kind == "too_long":
        return f"at most {ctx.get('max_length')} entries"
    if kind == "literal_error":
        return str(ctx.get("expected"))
    if kind == "string_pattern_mismatch":
        return f"text matching {ctx.get('pattern')}" + _doc_hint(loc)
    return err["msg"].removeprefix("Value error, ").replace("Input should be", "a value that is") + _doc_hint(loc)


def _doc_hint(loc: tuple[int | str, ...]) -> str:
    ann = _annotation_at(loc)
    return " (lower-case letters, digits and dashes, starting with a letter, at most 31 characters)" \
        if ann is Name else ""


def _describe(loc: tuple[int | str, ...]) -> str:
    ann = _annotation_at(loc)
    name = getattr(ann, "__name__", None) or str(ann)
    return f"a value of type {name}" + _doc_hint(loc)


def _unwrap(ann: Any) -> Any:
    """Follow Optional/tuple/Mapping to the model class inside, if any."""
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        for a in typing.get_args(ann):
            if a is not type(None):
                return _unwrap(a)
    if origin is tuple:
        return _unwrap(typing.get_args(ann)[0])
    if origin in (Mapping, dict):
        return _unwrap(typing.get_args(ann)[1])
    return ann


def _annotation_at(loc: tuple[int | str, ...]) -> Any:
    ann: Any = Fleet
    for part in loc:
        model = _unwrap(ann)
        if isinstance(part, int):
            continue
        if isinstance(model, type) and issubclass(model, BaseModel) and part in model.model_fields:
            ann = model.model_fields[part].annotation
            meta = model.model_fields[part].metadata
            if ann is str and any(getattr(m, "pattern", None) == r"^[a-z][a-z0-9-]{0,30}$" for m in meta):
                ann = Name
        elif typing.get_origin(ann) in (Mapping, dict):
            ann = typing.get_args(ann)[1]
        else:
            return None
    return ann


def _fields_at(loc: tuple[int | str, ...]) -> list[str]:
    model = _unwrap(_annotation_at(loc))
    if isinstance(model, type) and issubclass(model, BaseModel):
        return list(model.model_fields)
    return []
