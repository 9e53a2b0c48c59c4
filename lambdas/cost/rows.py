"""Cost rows: one (day, fleet, usage, instance type) with both cost bases, parsed from Cost Explorer pages.

What a row is comes from its usage type, never from its instance type (INSTANCE_TYPE cannot tell SageMaker
hosting from training). Usage types, as AWS bills them (region prefix optional, ``USE2-`` etc.):

- ``BoxUsage:<type>`` (also ``SpotUsage``, ``DedicatedUsage``, ...): EC2 instance usage  -> ``ec2``
- ``CapacityBlockFee:<type>``: a Capacity Block's upfront fee, record type ``Upfront``, service
  "EC2 - Other"                                                                         -> ``capacity-block``
- ``Host:ml.<type>``, ``AsyncInf:ml.<type>``: SageMaker real-time/async hosting            -> ``sagemaker-hosting``
- ``Train:ml.<type>``: SageMaker training                                               -> ``sagemaker-training``
- ``Processing:ml.<type>`` (any ``Processing*``): SageMaker processing                     -> ``sagemaker-processing``
- ``Transform:ml.<type>``: SageMaker batch transform                                    -> ``sagemaker-transform``

Sources (read 2026-11-22): the CapacityBlockFee usage type, "EC2 - Other" and record type Upfront:
grafana/cloudcost-exporter pkg/aws/client/billing.go (getCapacityBlockCosts) and a public billing note
("EC2-Other is dominated by a $996.67 CapacityBlockFee:p5.48xlarge"); SageMaker's ``Host:``/``Train:`` usage
types: AWS Price List offer file usage types such as ``USE1-Host:ml.g6e.2xlarge`` and Cost Explorer filters
quoted in public FinOps guides (``USE1-Train:ml.p3.2xlarge``, ``USE1-Host:ml.m5.large``).

Capacity Block fees are read on UnblendedCost for both bases (``FEE_METRIC``): an upfront fee may read 0 on
NetAmortizedCost (as Reserved Instance upfront fees do, amortised into usage that a block's $0 instances never
carry), and the kit amortises the fee itself over the block's hours (capacity_blocks.py). A refund of a cancelled
block carries the fee's usage type with a negative amount and is netted into the fee's group (grafana/cloudcost-
exporter pkg/aws/client/billing.go at 68b7680f, getCapacityBlockCosts: RECORD_TYPE Upfront and Refund, UnblendedCost,
summed per usage type "so summing nets out cancelled reservations"; read 2026-11-23). Not documented by AWS: see
the README's "Capacity Block fees" for the one check on a real account.

Credits, refunds and taxes are kept apart by record type (Cost Explorer RECORD_TYPE): they are rows of usage
``credit``/``refund``/``tax`` with no instance type or family, never netted into a family's spend.

Malformed rows (no amount, an amount that is not a finite number, an accelerator usage type with no instance
type, no date) become BadRows with the reason; rows of other usage (EBS, data transfer, CPU instances) are
counted as ignored; the good rows of the same page are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Literal

FLEET_TAG = "neuronfleet:fleet"
UNTAGGED = "(untagged)"
SERVICES = {"Amazon Elastic Compute Cloud - Compute": "ec2", "EC2 - Other": "ec2", "Amazon SageMaker": "sagemaker"}
"""Cost Explorer SERVICE values asked for; Capacity Block fees are billed under "EC2 - Other"."""

Basis = Literal["net_amortized", "unblended"]
BASES: tuple[Basis, ...] = ("net_amortized", "unblended")
CE_METRIC: dict[Basis, str] = {"net_amortized": "NetAmortizedCost", "unblended": "UnblendedCost"}
"""Both are asked for in the same request; the fleet file picks which the report and metrics use."""

USAGE_RECORD_TYPES = ("Usage", "DiscountedUsage", "SavingsPlanCoveredUsage", "SavingsPlanNegation", "Upfront")
"""Record types read per usage type. SavingsPlanNegation nets SP-covered usage to about $0 in UnblendedCost; in
NetAmortizedCost the covered usage carries the plan's effective cost. Upfront carries Capacity Block fees."""
FEE_METRIC = "UnblendedCost"
"""The metric a Capacity Block fee row is read on, for both bases (see the module docstring)."""
FEE_RECORD_TYPES = ("Upfront", "Refund")
"""Record types of Capacity Block fee rows: the fee and the refund of a cancelled block (cloudcost-exporter)."""
FEE_SERVICE = "EC2 - Other"
"""The Cost Explorer SERVICE of Capacity Block fees (a public billing note, see above): refunds are asked for there
only, so no other refund of accelerator usage reaches the usage rows."""
ADJUSTMENT_RECORD_TYPES = {"Credit": "credit", "Refund": "refund", "Tax": "tax"}
"""Record types read apart, per fleet, never netted into usage."""

USAGES = ("ec2", "capacity-block", "sagemaker-hosting", "sagemaker-training", "sagemaker-processing",
          "sagemaker-transform", "credit", "refund", "tax")
WORKLOAD = {"ec2": "training", "capacity-block": "training", "sagemaker-hosting": "inference",
            "sagemaker-transform": "inference", "sagemaker-training": "training",
            "sagemaker-processing": "processing"}
"""What each usage is, for the report: inference and training are each what they claim."""

_FAMILIES = (
    (re.compile(r"^(ml\.)?trn\d+[a-z]*\."), "trainium"),
    (re.compile(r"^(ml\.)?inf\d+[a-z]*\."), "inferentia"),
    (re.compile(r"^(ml\.)?(p\d+[a-z]*(-[a-z]+\d+)?|g\d+[a-z]*)\."), "gpu"),  # p6-b200., p6e-gb200.
)
_SAGEMAKER_KINDS = (("Host", "sagemaker-hosting"), ("AsyncInf", "sagemaker-hosting"), ("Train", "sagemaker-training"),
                    ("Processing", "sagemaker-processing"), ("Transform", "sagemaker-transform"))
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_USAGE_TYPE = re.compile(r"^(?:(?P<region>[A-Z]{2,4}\d?)-)?(?P<what>[A-Za-z_-]+?):(?P<type>[a-z0-9.\-]+)$")


@lru_cache(maxsize=4096)
def family_of(instance_type: str) -> str | None:
    """trainium | inferentia | gpu for accelerator instance types (EC2 or ``ml.`` SageMaker names), else None."""
    for pattern, family in _FAMILIES:
        if pattern.match(instance_type):
            return family
    return None


@lru_cache(maxsize=4096)
def usage_of(usage_type: str) -> tuple[str, str] | None:
    """(usage, instance type) of a billed usage type, or None when it is not accelerator instance time."""
    m = _USAGE_TYPE.match(usage_type)
    if not m or family_of(m["type"]) is None:
        return None
    what, instance_type = m["what"], m["type"]
    if instance_type.startswith("ml."):
        for prefix, usage in _SAGEMAKER_KINDS:
            if what.startswith(prefix):
                return usage, instance_type
        return None
    if what == "CapacityBlockFee":
        return "capacity-block", instance_type
    if what.endswith("Usage") or what in ("UnusedBox", "Reservation"):
        return "ec2", instance_type
    return None


@dataclass(frozen=True, slots=True)
class CostRow:
    day: str
    fleet: str
    service: str
    instance_type: str
    family: str
    amount: Decimal
    """Net amortized cost (USD)."""
    usage_hours: Decimal
    usage: str = "ec2"
    unblended: Decimal | None = None
    """Unblended cost (USD); None: same as ``amount``."""
    estimated: bool = False
    """Cost Explorer marks the day Estimated (it may still change)."""
    source_day: str = ""
    """The Cost Explorer day this row derives from (a Capacity Block fee's day for its amortised days)."""
    detail: str = ""
    """What else identifies the row (a Capacity Block's id)."""

    @property
    def key(self) -> tuple[str, str]:
        extra = f"#{self.detail}" if self.detail else ""
        return (f"DAY#{self.day}",
                f"FLEET#{self.fleet}#USAGE#{self.usage}#SVC#{self.service}#TYPE#{self.instance_type}{extra}")

    @property
    def workload(self) -> str:
        return WORKLOAD.get(self.usage, "adjustment")

    def cost(self, basis: Basis = "net_amortized") -> Decimal:
        if basis == "unblended" and self.unblended is not None:
            return self.unblended
        return self.amount

    def on(self, basis: Basis) -> CostRow:
        """This row with ``amount`` on ``basis``."""
        return self if basis == "net_amortized" else replace(self, amount=self.cost(basis))


@dataclass(frozen=True)
class BadRow:
    day: str
    keys: tuple[str, ...]
    reason: str


@dataclass
class Parsed:
    rows: list[CostRow]
    bad: list[BadRow]
    ignored: int = 0
    days: set[str] | None = None
    """Every day the pages cover (a day with no groups included: its rows were retracted)."""


def parse_page(page: Mapping[str, Any], *, adjustments: bool = False) -> tuple[list[CostRow], list[BadRow]]:
    """Rows of one GetCostAndUsage page (grouped by USAGE_TYPE, or RECORD_TYPE when ``adjustments``, and the
    fleet tag)."""
    parsed = parse(page, adjustments=adjustments)
    return parsed.rows, parsed.bad


def parse(page: Mapping[str, Any], *, adjustments: bool = False) -> Parsed:
    out = Parsed(rows=[], bad=[], days=set())
    for period in page.get("ResultsByTime", []):
        day = str((period.get("TimePeriod") or {}).get("Start", ""))
        estimated = bool(period.get("Estimated", False))
        day_ok = _DAY.fullmatch(day) is not None
        if day_ok and out.days is not None:
            out.days.add(day)
        for group in period.get("Groups", []):
            row, problem = _row(day, group, estimated, adjustments) if day_ok else (
                None, f"TimePeriod.Start: got {day!r}; allowed: a date YYYY-MM-DD")
            if row is not None:
                out.rows.append(row)
            elif problem:
                out.bad.append(BadRow(day=day, keys=tuple(group.get("Keys", [])), reason=problem))
            else:
                out.ignored += 1
    return out


_ZERO = Decimal(0)


def _decimal(metrics: Mapping[str, Any], name: str, *, required: bool) -> tuple[Decimal | None, str]:
    entry = metrics.get(name)
    raw = entry.get("Amount") if entry else None
    if raw is None:
        return (None, f"Metrics.{name}.Amount: got nothing; allowed: a decimal number of USD") if required else \
            (_ZERO, "")
    try:
        value = Decimal(raw if type(raw) is str else str(raw))
    except InvalidOperation:
        return None, f"Metrics.{name}.Amount: got {raw!r}; allowed: a decimal number of USD"
    if not value.is_finite():
        return None, f"Metrics.{name}.Amount: got {raw!r}; allowed: a finite decimal number"
    return value, ""


def _row(day: str, group: Mapping[str, Any], estimated: bool, adjustments: bool) -> tuple[CostRow | None, str]:
    keys = list(group.get("Keys", []))
    what = "record type" if adjustments else "usage type"
    if len(keys) != 2:
        return None, f"Keys: got {keys!r}; allowed: [{what}, '{FLEET_TAG}$<fleet>']"
    first, tag = keys
    if adjustments:
        usage = ADJUSTMENT_RECORD_TYPES.get(first)
        if usage is None:
            return None, f"record type: got {first!r}; allowed: " + ", ".join(ADJUSTMENT_RECORD_TYPES)
        instance_type, family, service = "", "", "account"
    else:
        parsed = usage_of(first)
        if parsed is None:
            if re.search(r"(trn|inf|p|g)\d+[a-z]*\.", first) and ":" not in first:
                return None, f"usage type: got {first!r}; allowed: '<usage>:<instance type>'"
            return None, ""  # not accelerator instance time: ignored, not bad
        usage, instance_type = parsed
        family = family_of(instance_type) or ""
        service = "sagemaker" if instance_type.startswith("ml.") else "ec2"
    metrics = group.get("Metrics") or {}
    # a Capacity Block fee: FEE_METRIC (the fee net of its refunds) for both bases, whatever NetAmortizedCost says
    amortized, problem = _decimal(metrics, "NetAmortizedCost", required=False) if "NetAmortizedCost" in metrics \
        and usage != "capacity-block" else _decimal(metrics, FEE_METRIC, required=True)
    if amortized is None:
        return None, problem
    unblended, problem = _decimal(metrics, "UnblendedCost", required=True)
    if unblended is None:
        return None, problem
    hours, problem = _decimal(metrics, "UsageQuantity", required=False)
    if hours is None:
        return None, problem.replace("USD", "hours")
    fleet = tag.split("$", 1)[1] if "$" in tag else ""
    return CostRow(day=day, fleet=fleet or UNTAGGED, service=service, instance_type=instance_type, family=family,
                   amount=amortized, unblended=unblended, usage_hours=hours if usage != "capacity-block" else Decimal(0),
                   usage=usage, estimated=estimated, source_day=day), ""


def totals(rows: Iterable[CostRow], basis: Basis = "net_amortized") -> dict[tuple[str, str, str], Decimal]:
    """Spend per (day, fleet, family) on ``basis``; adjustments (no family) are not a family's spend."""
    out: dict[tuple[str, str, str], Decimal] = {}
    for r in rows:
        if not r.family:
            continue
        key = (r.day, r.fleet, r.family)
        out[key] = out.get(key, Decimal(0)) + r.cost(basis)
    return out
