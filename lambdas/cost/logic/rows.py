"""Cost rows: one (day, fleet, usage, instance type) with both cost bases, parsed from Cost Explorer pages.

What a row is comes from its usage type, never from its instance type (INSTANCE_TYPE cannot tell SageMaker
hosting from training). Usage types, as AWS bills them (region prefix optional, ``USE2-`` etc.):

- ``BoxUsage:<type>`` (also ``SpotUsage``, ``HostBoxUsage``, ``DedicatedUsage``, ...): EC2 instance usage -> ``ec2``
- ``UnusedBox:<type>``/``UnusedDed:<type>``: the unused hours of an On-Demand Capacity Reservation (shared/dedicated
  tenancy), billed at the On-Demand rate; ``Reservation:<type>``/``DedicatedRes:<type>``: its used hours, at rate 0
  (the instance's own usage carries the cost)                                            -> ``ec2``
- ``CapacityBlockFee:<type>``: a Capacity Block's upfront fee, record type ``Upfront``, service
  "EC2 - Other"                                                                         -> ``capacity-block``
- ``Host:ml.<type>``, ``AsyncInf:ml.<type>``: SageMaker real-time/async hosting            -> ``sagemaker-hosting``
- ``Train:ml.<type>``: SageMaker training                                               -> ``sagemaker-training``
- ``Processing:ml.<type>`` (any ``Processing*``): SageMaker processing                     -> ``sagemaker-processing``
- ``Tsform:ml.<type>`` or ``Transform:ml.<type>``: SageMaker batch transform             -> ``sagemaker-transform``
  (unconfirmed: no AWS source read shows batch transform's usage type; third-party cost guides quote
  ``USE1-Tsform:ml.c5.9xlarge``; the kit counts both until docs/checks.md ``transform-usage-type`` is made, read
  2026-11-29)

Sources (read 2026-11-22): the CapacityBlockFee usage type, "EC2 - Other" and record type Upfront:
grafana/cloudcost-exporter pkg/aws/client/billing.go (getCapacityBlockCosts) and a public billing note
("EC2-Other is dominated by a $996.67 CapacityBlockFee:p5.48xlarge"); SageMaker's ``Host:``/``Train:`` usage
types: AWS Price List offer file usage types such as ``USE1-Host:ml.g6e.2xlarge`` and Cost Explorer filters
quoted in public FinOps guides (``USE1-Train:ml.p3.2xlarge``, ``USE1-Host:ml.m5.large``). EC2's instance usage types
(``region-BoxUsage:instance-type``, ``-SpotUsage:``, ``-HostBoxUsage:``, ``-DedicatedUsage:``, ``-Reservation:``): EC2
user guide, "Understand the codes for Amazon EC2 in billing and usage reports"
(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-billing-usage-reports.html); the Capacity Reservation usage
types UnusedBox, UnusedDed, Reservation and DedicatedRes (rate 0 for the last two): Data Exports user guide,
"Monitoring your On-Demand capacity reservations"
(https://docs.aws.amazon.com/cur/latest/userguide/monitor-ondemand-reservations.html); unused reservation hours are
billed at the On-Demand rate: EC2 user guide, "Capacity Reservation pricing and billing"; all read 2026-11-23.

Rows are told apart by their **whole usage type** (region prefix included): On-Demand, Spot and unused reservation
hours of one instance type, or the same type in two regions, on one day are separate ledger rows, never one key
that keeps the last (:attr:`CostRow.key`).

Capacity Block fees are read on UnblendedCost for both bases (``FEE_METRIC``): an upfront fee may read 0 on
NetAmortizedCost (as Reserved Instance upfront fees do, amortised into usage that a block's $0 instances never
carry), and the kit amortises the fee itself over the block's hours (block_amortisation.py). A refund of a cancelled
block carries the fee's usage type with a negative amount and is netted into the fee's group (grafana/cloudcost-
exporter pkg/aws/client/billing.go at 68b7680f, getCapacityBlockCosts: RECORD_TYPE Upfront and Refund, UnblendedCost,
summed per usage type "so summing nets out cancelled reservations"; read 2026-11-23). Not documented by AWS: see
docs/cost.md ("Capacity Blocks") for the one check on a real account.

Credits, refunds and taxes are kept apart by record type (Cost Explorer RECORD_TYPE): they are rows of usage
``credit``/``refund``/``tax`` with no instance type or family, never netted into a family's spend.

Malformed rows (no amount, an amount that is not a number or outside what CloudWatch accepts
(:data:`METRIC_VALUE_LIMITS`), an accelerator usage type with no instance type, no date, a null or mistyped
``ResultsByTime``, ``Groups``, ``Keys``, ``Metrics`` or ``Estimated``) become BadRows naming the field, the value
and what is allowed, never an exception; rows of other usage (EBS, data transfer, CPU instances) are counted as
ignored; the good rows of the same page are kept. ``Estimated`` is read strictly: the booleans true/false, or the
strings ``"true"``/``"false"`` exactly (JSON's spellings); anything else makes every group of that period bad.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from neuronfleet_contract.cost import Basis
from neuronfleet_contract.tags import FLEET_TAG

UNTAGGED = "(untagged)"

METRIC_VALUE_LIMITS = (Decimal("8.515920e-109"), Decimal("1.174271e+108"))
"""The magnitudes CloudWatch accepts in PutMetricData ``Value`` (0 also): an amount outside them is a bad row, never
stored or published. botocore 1.44.5's cloudwatch model (MetricDatum.Value, PutMetricData) says "Values must be in
the range of -2^360 to 2^360. In addition, special values (for example, NaN, +Infinity, -Infinity) are not
supported"; AWS's earlier text (AWS SDK for .NET PutMetricDataRequest docs,
https://docs.aws.amazon.com/sdkfornet/latest/apidocs/items/TCloudWatchPutMetricDataRequestNET45.html) says "in the
range of 8.515920e-109 to 1.174271e+108 (Base 10) or 2e-360 to 2e360 (Base 2)". Both read 2026-11-23; the kit keeps
the stricter of the two (2^359 < 2^360), so a value either text allows is the only kind it sends."""
UNUSED_RESERVATION_USAGE = ("UnusedBox", "UnusedDed")
"""Usage types of an On-Demand Capacity Reservation's unused hours: billed, but no instance ran (see above)."""
RESERVATION_USAGE = ("Reservation", "DedicatedRes")
"""Usage types of a Capacity Reservation's used hours, at rate 0 (the running instance's usage carries the cost)."""
SERVICES = {"Amazon Elastic Compute Cloud - Compute": "ec2", "EC2 - Other": "ec2", "Amazon SageMaker": "sagemaker"}
"""Cost Explorer SERVICE values asked for; Capacity Block fees are billed under "EC2 - Other"."""

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
                    ("Processing", "sagemaker-processing"), ("Transform", "sagemaker-transform"),
                    ("Tsform", "sagemaker-transform"))
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
    if what.endswith("Usage") or what in UNUSED_RESERVATION_USAGE + RESERVATION_USAGE:
        return "ec2", instance_type
    return None


def runs_instances(usage_type: str) -> bool:
    """Whether a row's usage type is time an instance ran (not a reservation's unused or $0 bookkeeping hours);
    a row from before usage types were kept (empty) counts as run time."""
    m = _USAGE_TYPE.match(usage_type)
    return not m or m["what"] not in UNUSED_RESERVATION_USAGE + RESERVATION_USAGE


def publishable(value: Decimal) -> bool:
    """Whether CloudWatch accepts ``value`` (:data:`METRIC_VALUE_LIMITS`)."""
    lo, hi = METRIC_VALUE_LIMITS
    return value.is_finite() and (value == 0 or lo <= abs(value) <= hi)


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
    usage_type: str = ""
    """The billed usage type (``USE2-BoxUsage:p5.48xlarge``) or record type (``Credit``) the row was read from."""

    @property
    def key(self) -> tuple[str, str]:
        """(pk, sk) in the ledger: one per day, fleet, usage, service, instance type, billed usage type (so On-Demand,
        Spot, unused reservation hours and other regions of one type and day stay apart) and detail (a block)."""
        extra = (f"#UT#{self.usage_type}" if self.usage_type else "") + (f"#{self.detail}" if self.detail else "")
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


def parse(page: Any, *, adjustments: bool = False) -> Parsed:
    """Rows of one page; every shape error is a BadRow naming the field, the value and what is allowed."""
    out = Parsed(rows=[], bad=[], days=set())
    if not isinstance(page, Mapping):
        out.bad.append(BadRow(day="", keys=(), reason=f"page: got {_shown(page)}; allowed: a GetCostAndUsage response"))
        return out
    periods = page.get("ResultsByTime", [])
    if not isinstance(periods, list):
        out.bad.append(BadRow(day="", keys=(), reason=f"ResultsByTime: got {_shown(periods)}; allowed: a list of "
                                                       "periods"))
        return out
    for i, period in enumerate(periods):
        where = f"ResultsByTime[{i}]"
        if not isinstance(period, Mapping):
            out.bad.append(BadRow(day="", keys=(), reason=f"{where}: got {_shown(period)}; allowed: an object"))
            continue
        time_period = period.get("TimePeriod")
        raw_day = time_period.get("Start", "") if isinstance(time_period, Mapping) else time_period
        day = raw_day if isinstance(raw_day, str) else ""
        if _DAY.fullmatch(day) is None:
            out.bad.append(BadRow(day="", keys=(), reason=f"{where}.TimePeriod.Start: got {_shown(raw_day)}; "
                                                          "allowed: a date YYYY-MM-DD"))
            continue
        if out.days is not None:
            out.days.add(day)
        groups = period.get("Groups", [])
        if not isinstance(groups, list):
            out.bad.append(BadRow(day=day, keys=(), reason=f"{where}.Groups: got {_shown(groups)}; allowed: a list "
                                                           "of groups"))
            continue
        estimated, problem = _boolean(period.get("Estimated", False), f"{where}.Estimated")
        for group in groups:
            keys = _keys_of(group)
            if problem:
                out.bad.append(BadRow(day=day, keys=keys, reason=problem))
                continue
            row, why = _row(day, group, estimated, adjustments)
            if row is not None:
                out.rows.append(row)
            elif why:
                out.bad.append(BadRow(day=day, keys=keys, reason=why))
            else:
                out.ignored += 1
    return out


_ZERO = Decimal(0)
_BOOLEANS = {True: True, False: False, "true": True, "false": False}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _keys_of(group: Any) -> tuple[str, ...]:
    keys = group.get("Keys") if isinstance(group, Mapping) else None
    return tuple(str(k) for k in keys) if isinstance(keys, list) else ()


def _boolean(value: Any, where: str) -> tuple[bool, str]:
    """A boolean read strictly: true/false, or exactly the strings "true"/"false" (JSON's spellings)."""
    if isinstance(value, bool | str) and value in _BOOLEANS:
        return _BOOLEANS[value], ""
    return False, f"{where}: got {_shown(value)}; allowed: true or false"


def _decimal(metrics: Mapping[str, Any], name: str, *, required: bool, unit: str = "USD"
             ) -> tuple[Decimal | None, str]:
    entry = metrics.get(name)
    if entry is not None and not isinstance(entry, Mapping):
        return None, f"Metrics.{name}: got {_shown(entry)}; allowed: an object with Amount and Unit"
    raw = entry.get("Amount") if entry is not None else None
    if raw is None:  # a metric asked for and answered without its Amount is bad, never $0
        return (None, f"Metrics.{name}.Amount: got nothing; allowed: a decimal number of {unit}") \
            if required or entry is not None else (_ZERO, "")
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        return None, f"Metrics.{name}.Amount: got {_shown(raw)}; allowed: a decimal number of {unit}"
    try:
        value = Decimal(raw if isinstance(raw, str) else str(raw))
    except InvalidOperation:
        return None, f"Metrics.{name}.Amount: got {_shown(raw)}; allowed: a decimal number of {unit}"
    if not value.is_finite():
        return None, f"Metrics.{name}.Amount: got {_shown(raw)}; allowed: a finite decimal number"
    if unit == "USD" and not publishable(value):
        lo, hi = METRIC_VALUE_LIMITS
        return None, (f"Metrics.{name}.Amount: got {_shown(raw)}; allowed: 0 or a magnitude from {lo} to {hi} "
                      "(what CloudWatch's PutMetricData accepts)")
    return value, ""


def _row(day: str, group: Any, estimated: bool, adjustments: bool) -> tuple[CostRow | None, str]:
    what = "record type" if adjustments else "usage type"
    if not isinstance(group, Mapping):
        return None, f"Groups[]: got {_shown(group)}; allowed: an object with Keys and Metrics"
    keys = group.get("Keys")
    if not isinstance(keys, list) or len(keys) != 2 or not all(isinstance(k, str) for k in keys):
        return None, f"Keys: got {_shown(keys)}; allowed: [{what}, '{FLEET_TAG}$<fleet>'] (two strings)"
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
    metrics = group.get("Metrics")
    if metrics is None:
        metrics = {}
    if not isinstance(metrics, Mapping):
        return None, f"Metrics: got {_shown(metrics)}; allowed: an object keyed by metric name"
    # a Capacity Block fee: FEE_METRIC (the fee net of its refunds) for both bases, whatever NetAmortizedCost says
    amortized, problem = _decimal(metrics, "NetAmortizedCost", required=False) if "NetAmortizedCost" in metrics \
        and usage != "capacity-block" else _decimal(metrics, FEE_METRIC, required=True)
    if amortized is None:
        return None, problem
    unblended, problem = _decimal(metrics, "UnblendedCost", required=True)
    if unblended is None:
        return None, problem
    hours, problem = _decimal(metrics, "UsageQuantity", required=False, unit="hours")
    if hours is None:
        return None, problem
    fleet = tag.split("$", 1)[1] if "$" in tag else ""
    return CostRow(day=day, fleet=fleet or UNTAGGED, service=service, instance_type=instance_type, family=family,
                   amount=amortized, unblended=unblended, usage_hours=hours if usage != "capacity-block" else Decimal(0),
                   usage=usage, estimated=estimated, source_day=day, usage_type=first), ""


def totals(rows: Iterable[CostRow], basis: Basis = "net_amortized") -> dict[tuple[str, str, str], Decimal]:
    """Spend per (day, fleet, family) on ``basis``; adjustments (no family) are not a family's spend."""
    out: dict[tuple[str, str, str], Decimal] = {}
    for r in rows:
        if not r.family:
            continue
        key = (r.day, r.fleet, r.family)
        out[key] = out.get(key, Decimal(0)) + r.cost(basis)
    return out
