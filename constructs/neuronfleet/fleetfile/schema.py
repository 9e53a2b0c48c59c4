"""Fleet files: the YAML a platform team writes, parsed into the constructs' own settings objects.

This is the only module that knows the file format. ``load_fleet(path)`` returns a :class:`Fleet` or raises
:class:`FleetConfigError` carrying one :class:`Problem` per mistake (field path, value given, what is allowed).
Every rule of a section lives with its settings object (``neuronfleet.settings``), shared with the construct
API; this module adds only what spans sections: the region's AZs and offerings, names after every
transformation (stack names, construct ids), tags, prices, and cross-section conflicts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from datetime import date
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, ValidationError

from ..core import rules
from ..core.problems import FleetConfigError as FleetConfigError  # defined beside InvalidSettings (no pydantic)
from ..core.problems import InvalidSettings, Problem
from ..facts.catalog import CATALOG, InstanceCatalog, Price
from ..facts.neuron import parse_image
from ..facts.prices import sagemaker_types
from ..settings import (
    CostMonitorSettings,
    EndpointSettings,
    GpuPoolSettings,
    Name,
    NetworkSettings,
    TrainiumClusterSettings,
)
from ..settings._base import Bool, Int, Number, Settings, problems_from
from ..settings.capacity import CapacityPolicySettings
from ..settings.cost import cur_export_region
from ..settings.transform import BatchJobSettings
from .eks_section import EksSection, Scheduler, entry_problems

Phase = Literal["evaluation", "pilot", "production"]
Email = Annotated[str, AfterValidator(rules.email)]
TagKey = Annotated[str, AfterValidator(rules.tag_key)]
TagValue = Annotated[str, AfterValidator(rules.tag_value)]


MAX_INFERENCE_STACKS = 64

CUR_EXPORT_PART = "cur-export"
"""The short name of the stack that holds a fleet's CUR 2.0 export when the fleet is outside us-east-1
(``cost_monitors.source: athena``; ``<fleet>-cur-export``, in us-east-1)."""


def partition(name: str, partitions: int) -> int:
    """Which of ``partitions`` stacks holds the entry called ``name``: a hash of the name alone (SHA-256, so the
    same on every machine and Python), so no other entry's arrival, removal or position moves it."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") % partitions


class TrainingClusterEntry(TrainiumClusterSettings):
    name: Name
    scheduler: Scheduler = "batch"
    """``batch`` (AWS Batch, TrainiumCluster) or ``eks`` (Amazon EKS, NeuronEksCluster: docs/eks.md)."""
    eks: EksSection | None = None
    """With ``scheduler: eks``: the cluster's EKS settings and any node groups beyond the entry's own."""


class EndpointEntry(EndpointSettings):
    name: Name
    failover: Bool = True
    """Whether the endpoint failover watches this endpoint (it does when the endpoint has a live GPU variant, with or
    without the GPU pool of ``fallback:``; false leaves a live GPU variant at its weight with no run-time failover)."""


class FallbackEntry(GpuPoolSettings):
    enabled: Bool = False


class CostMonitorEntry(CostMonitorSettings):
    enabled: Bool = True


class PriceOverride(Settings):
    what: ClassVar[str] = "price"
    usd_per_hour: Number = Field(ge=0, le=10_000)
    source: str = Field(min_length=1, max_length=300)
    as_of: Annotated[date, AfterValidator(rules.not_in_future)]


class Fleet(Settings):
    """One fleet file, validated."""

    what: ClassVar[str] = "fleet"
    name: Name
    phase: Phase
    region: Annotated[str, AfterValidator(rules.region)]
    account: Annotated[str, AfterValidator(rules.account_id)] | None = None
    tags: Mapping[TagKey, TagValue] = Field(default_factory=dict, max_length=45)
    notification_emails: tuple[Email, ...] = ()
    """Subscribed to the fleet's alerts topic (alarms, failover, cost monitors)."""
    network: NetworkSettings
    training_clusters: tuple[TrainingClusterEntry, ...] = ()
    endpoints: tuple[EndpointEntry, ...] = ()
    batch_jobs: tuple[BatchJobSettings, ...] = ()
    """Scheduled SageMaker batch transform jobs on ml.inf2/ml.trn1 (the ``batch`` stack, docs/inference.md): each run
    transforms an S3 prefix of the stack's bucket with an endpoint-like model and stops."""
    fallback: FallbackEntry = FallbackEntry()
    cost_monitors: CostMonitorEntry = CostMonitorEntry()
    prices: Mapping[str, PriceOverride] = Field(default_factory=dict)
    capacity_policy: CapacityPolicySettings | None = None
    """What ``neuronfleet capacity buy|extend`` and the Capacity Block lifecycle function may buy
    (docs/capacity-blocks.md); unset: the command refuses to buy and nothing is extended or moved."""
    inference_stacks: Int = Field(default=1, ge=1, le=MAX_INFERENCE_STACKS)
    """How many stacks the endpoints are spread over, each endpoint by a hash of its name
    (:meth:`inference_partitions`): adding, removing or reordering endpoints never moves an existing one to
    another stack (which would replace it). Choose it before the first deploy: changing it moves endpoints."""

    def _problems(self) -> Iterator[Problem]:
        return _check(self)

    def inference_partitions(self) -> dict[str, tuple[EndpointEntry, ...]]:
        """The endpoints by the short name of the stack that holds them (``inference``, or ``inference-NN`` when
        ``inference_stacks`` > 1), in the fleet file's order within each; stacks with no endpoint are left out."""
        if self.inference_stacks == 1:
            return {"inference": self.endpoints} if self.endpoints else {}
        out: dict[str, list[EndpointEntry]] = {}
        for e in self.endpoints:
            out.setdefault(f"inference-{partition(e.name, self.inference_stacks):02d}", []).append(e)
        return {k: tuple(v) for k, v in sorted(out.items())}

    @property
    def catalog(self) -> InstanceCatalog:
        """The instance catalog with this fleet's price overrides applied."""
        return CATALOG.with_prices(
            {t: Price(usd_per_hour=p.usd_per_hour, source=p.source, as_of=p.as_of, region=self.region)
             for t, p in self.prices.items() if t in CATALOG})

    def stack_name(self, part: str) -> str:
        """The name of one of this fleet's stacks: ``<fleet>-<part>``."""
        return f"{self.name}-{part}"


def construct_id(name: str) -> str:
    """The construct id a fleet-file name becomes (``chat-v2`` -> ``ChatV2``)."""
    return "".join(part.capitalize() for part in name.split("-"))


# ------------------------------------------------------------------------------------ cross-section checks


def _capacity_policy(fleet: Fleet) -> Iterator[Problem]:
    """A job must wait for the GPU fallback less long than Batch lets it wait (``capacity_wait_timeout_s`` cancels
    it), and the fallback needs the GPU pool."""
    policy = fleet.capacity_policy
    if policy is None or policy.fallback_after_minutes is None:
        return
    if not fleet.fallback.enabled:
        yield Problem("capacity_policy.fallback_after_minutes", policy.fallback_after_minutes,
                      "unset unless fallback.enabled is true: held jobs move to the GPU pool")
    for i, c in enumerate(fleet.training_clusters):
        wait = c.capacity_wait_timeout_s
        if wait is not None and policy.fallback_after_minutes * 60 >= wait:
            yield Problem("capacity_policy.fallback_after_minutes", policy.fallback_after_minutes,
                          f"less than training_clusters[{i}].capacity_wait_timeout_s ({wait} s = {wait // 60} min): "
                          "Batch cancels a job held that long, before it could move to the GPU pool")


def _check(fleet: Fleet) -> Iterator[Problem]:
    yield from (p.under("network") for p in fleet.network.region_problems(fleet.region))
    yield from _cluster_problems(fleet)
    yield from _unique("training_clusters", [c.name for c in fleet.training_clusters], str)
    yield from _capacity_policy(fleet)
    yield from _unique("endpoints", [e.name for e in fleet.endpoints], construct_id)
    yield from _unique("batch_jobs", [j.name for j in fleet.batch_jobs], construct_id)
    yield from _hub_problems(fleet)
    yield from _private_image_problems(fleet)
    if fleet.fallback.enabled:
        yield from (p.under("fallback") for p in fleet.fallback.region_problems(fleet.region))
    batch_users = [part for part, used in (("training clusters", fleet.training_clusters),
                                           ("a GPU pool", fleet.fallback.enabled)) if used]
    if batch_users:
        yield from (p.under("network") for p in fleet.network.aws_api_access_problems(" and ".join(batch_users)))
    for t in fleet.prices:
        if t not in CATALOG and t not in sagemaker_types():
            yield Problem(f"prices.{t}", t, "an instance type of the catalog or its SageMaker ml. name: "
                          + ", ".join((*CATALOG.types(), *sagemaker_types())))
    cur = fleet.cost_monitors
    if cur.enabled:
        yield from (p.under("cost_monitors") for p in cur.region_problems(fleet.region))
    export_region = cur_export_region(fleet.region) if cur.enabled and cur.source == "athena" else None
    if export_region and export_region != fleet.region and fleet.account is None:
        yield Problem("account", None, (
            f"the 12-digit id of the (payer) account with cost_monitors.source athena in {fleet.region}: the CUR 2.0 "
            f"export is created in {export_region} in a stack of its own ({fleet.stack_name(CUR_EXPORT_PART)}), "
            "which names the cost stack's bucket by a name CDK derives from the account"))
    parts = ("network", "alerts", "inference", "fallback", "cost", *fleet.inference_partitions(),
             *((CUR_EXPORT_PART,) if export_region else ()), *(("capacity",) if fleet.capacity_policy else ()))
    for part in parts:
        yield from _stack_name(fleet, "name", fleet.name, part)


def _cluster_problems(fleet: Fleet) -> Iterator[Problem]:
    """Each training cluster against the region, its capacity's AZ, its stack name and its scheduler's section."""
    for i, c in enumerate(fleet.training_clusters):
        at = f"training_clusters[{i}]"
        yield from (p.under(at) for p in c.region_problems(fleet.region))
        yield from (p.under(at) for p in fleet.network.capacity_az_problems(c.capacity.availability_zone))
        yield from _stack_name(fleet, f"{at}.name", c.name, f"train-{c.name}")
        if c.scheduler == "eks":
            yield from (p.under(at) for p in entry_problems(c, c.name, c.eks, fleet.network.training_az,
                                                             region=fleet.region, network=fleet.network))
        elif c.eks is not None:
            yield Problem(f"{at}.eks", "(a section)", "nothing with scheduler: batch (set scheduler: eks to use it)")


def _hub_problems(fleet: Fleet) -> Iterator[Problem]:
    """A model from the hub needs a way out of the endpoint's subnets."""
    for i, e in enumerate(fleet.endpoints):
        gpu = e.gpu_variant
        for at, hub in ((f"endpoints[{i}].hf_model_id", e.hf_model_id),
                        (f"endpoints[{i}].gpu_variant.hf_model_id", gpu.hf_model_id if gpu else None)):
            if hub and not fleet.network.has_egress:
                yield Problem(at, hub, "unset when network.nat_gateways is 0: the endpoint's subnets cannot reach "
                              "the model hub; package the model to S3 (model_data_url) or give the network a NAT "
                              "gateway")
    for i, j in enumerate(fleet.batch_jobs):
        if j.model.hf_model_id and not fleet.network.has_egress:
            yield Problem(f"batch_jobs[{i}].model.hf_model_id", j.model.hf_model_id, "unset when network.nat_gateways "
                          "is 0: the job's subnets cannot reach the model hub; package the model to S3 "
                          "(model.model_data_url) or give the network a NAT gateway")


def _private_image_problems(fleet: Fleet) -> Iterator[Problem]:
    """Without a NAT gateway a training image comes from the region's private ECR (or is an AWS DLC)."""
    if fleet.network.has_egress:
        return
    for i, c in enumerate(fleet.training_clusters):
        ref = parse_image(c.image)
        if not (ref.dlc or (ref.ecr_account_region or ("", ""))[1] == fleet.region):
            yield Problem(f"training_clusters[{i}].training_image", c.training_image, (
                f"an image in an ECR repository of {fleet.region} (or an AWS DLC) when network.nat_gateways is 0: "
                f"{c.image}" + (" (the default for " + c.instance_type + ")" if c.training_image is None else "")
                + " is pulled from outside the region's private ECR, which isolated subnets reach only through "
                "the ECR interface endpoints; copy it into your ECR, or give the network a NAT gateway"))


def _stack_name(fleet: Fleet, field: str, value: str, part: str) -> Iterator[Problem]:
    try:
        rules.check_resource_name("cloudformation-stack", fleet.stack_name(part))
    except ValueError as exc:
        yield Problem(field, value, f"a name whose stack name {fleet.stack_name(part)!r} is {exc}")


def _unique(at: str, names: list[str], key: Any) -> Iterator[Problem]:
    seen: dict[str, str] = {}
    for i, n in enumerate(names):
        k = key(n)
        if k in seen:
            same = "a name not used by another entry" if seen[k] == n else \
                f"a name that does not become the same construct id ({k}) as {seen[k]!r}"
            yield Problem(f"{at}[{i}].name", n, same)
        seen.setdefault(k, n)


# --------------------------------------------------------------------------------------------- loading


def load_fleet(path: str | Path) -> Fleet:
    """Read and validate a fleet file; raise :class:`FleetConfigError` listing every problem."""
    from .yamlsafe import YamlProblem, load_yaml_file

    try:
        raw = load_yaml_file(path)
    except YamlProblem as exc:
        raise FleetConfigError(str(path), [exc.problem]) from None
    return parse_fleet(raw, source=str(path))


def parse_fleet(raw: Any, *, source: str = "<fleet>") -> Fleet:
    """Validate a fleet already read into plain data."""
    if not isinstance(raw, dict):
        raise FleetConfigError(source, [Problem("(top level)", raw, "a mapping of fleet settings")])
    try:
        return Fleet.model_validate(raw)
    except ValidationError as exc:
        raise FleetConfigError(source, problems_from(exc, Fleet)) from None
    except InvalidSettings as exc:
        raise FleetConfigError(source, exc.problems) from None
