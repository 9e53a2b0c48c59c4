"""The kit's own running cost: a bill of materials of what a construct tree deploys besides accelerator instances,
priced from ``neuronfleet/facts/data/overhead_prices.json`` (each price with its source, date and region).

``bill_of_materials(*scopes)`` walks the L1 resources under each scope (``node.find_all()``) and reads their
properties: NAT gateways and their Elastic IPs (730 hours a month each), interface VPC endpoints (hours x the AZs of
their subnets), FSx for Lustre file systems (GB of StorageCapacity, at the rate of their deployment type, storage
type and PerUnitStorageThroughput), KMS keys, CloudWatch alarms (per alarm metric, standard resolution) and dashboards,
EKS clusters, and Lambda functions on a schedule (EventBridge rules or Scheduler schedules in the same stack: the
schedule's invocations a month, each assumed to run for the function's whole timeout, an upper bound). What is
usage-based (logs, tables, buckets, topics, queues, NAT traffic) or has no confirmed price is listed, counted, with
why, and adds nothing to the total. A value unresolved at synth is counted as "quantity unknown at synth".

Generic: it knows CloudFormation types, not fleets; resource types it does not list either carry no charge of their
own (IAM, security groups, subnets, routes) or are accelerator capacity the report prices from spend.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from aws_cdk import CfnResource, Stack, Token
from constructs import IConstruct

from neuronfleet_contract import overhead as wire

from ..facts.overhead_prices import OverheadPrice, hours_per_month, not_priced, overhead_prices, read_on, unsourced

CENT = Decimal("0.01")


@dataclass(frozen=True)
class OverheadItem:
    """One line of the bill: ``count`` resources, ``quantity`` ``unit`` a month, priced or not (``reason``)."""

    key: str
    what: str
    count: int
    quantity: Decimal | None
    unit: str
    usd_per_unit: Decimal | None = None
    monthly_usd: Decimal | None = None
    """To the cent; None when not priced."""
    source: str = ""
    source_key: str = ""
    as_of: date | None = None
    region: str = ""
    standing: str = ""
    basis: str = ""
    note: str = ""
    reason: str = ""
    """Not priced: the wire format's reason code (neuronfleet_contract.overhead.REASONS); empty when priced."""
    not_priced: str = ""
    """Not priced: why, in a sentence."""
    resources: tuple[str, ...] = field(default=(), repr=False)
    """The construct paths counted."""

    @property
    def priced(self) -> bool:
        return self.monthly_usd is not None


@dataclass(frozen=True)
class OverheadBill:
    """The bill: its items, the total of the priced ones, the fleet's region and when the prices were read."""

    items: tuple[OverheadItem, ...]
    region: str
    read: date

    @property
    def total_monthly_usd(self) -> Decimal:
        return sum((i.monthly_usd for i in self.items if i.monthly_usd is not None), Decimal(0))

    def item(self, key: str) -> OverheadItem | None:
        return next((i for i in self.items if i.key == key), None)

    def to_contract(self, *, unpriced: bool = True) -> wire.OverheadBill:
        """The bill as neuronfleet_contract.overhead carries it; ``unpriced=False`` leaves the lines with no figure
        out (a shorter value, about 480 bytes for prod instead of 880)."""
        return wire.OverheadBill(
            region=self.region, read=self.read,
            priced=tuple(wire.PricedLine(key=i.key, count=i.count, quantity=i.quantity or Decimal(0),
                                         monthly_usd=i.monthly_usd, source_key=i.source_key)
                         for i in self.items if i.monthly_usd is not None),
            unpriced=tuple(wire.UnpricedLine(key=i.key, count=i.count, quantity=i.quantity, reason=i.reason)
                           for i in self.items if i.monthly_usd is None and unpriced))

    def to_environment(self, *, unpriced: bool = True) -> dict[str, str]:
        """``{OVERHEAD_BILL: compact JSON}`` for a function's environment (neuronfleet_contract.overhead.decode)."""
        return {wire.VARIABLE: wire.encode(self.to_contract(unpriced=unpriced))}


class _Unknown(Exception):
    """A value the bill needs is unresolved at synth."""


def _resolve(resource: CfnResource, attribute: str) -> Any:
    value = getattr(resource, attribute, None)
    if value is None or isinstance(value, bool) or (isinstance(value, (str, int, float))
                                                    and not Token.is_unresolved(value)):
        return value  # a literal (a number token is a float that is_unresolved knows): no second round trip
    return Stack.of(resource).resolve(value)


def _unresolved(value: Any) -> bool:
    if isinstance(value, str):
        return Token.is_unresolved(value)
    if isinstance(value, Mapping):
        return any(k == "Ref" or str(k).startswith("Fn::") for k in value)
    return False


def _known(resource: CfnResource, attribute: str, default: Any = None) -> Any:
    value = _resolve(resource, attribute)
    if value is None:
        return default
    if _unresolved(value):
        raise _Unknown(attribute)
    return value


def _get(doc: Any, *names: str) -> Any:
    if isinstance(doc, Mapping):
        for n in names:
            if n in doc:
                return doc[n]
    return None


# ---- schedules ----------------------------------------------------------------------------------------------------

_RATE = re.compile(r"^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$")
_CRON = re.compile(r"^cron\((.+)\)$")
_NAMES = {**{d: i + 1 for i, d in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))},
          **{m: i + 1 for i, m in enumerate(("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT",
                                              "NOV", "DEC"))}}
_FIELDS = ((0, 59), (0, 23), (1, 31), (1, 12), (1, 7))


def _values(text: str, low: int, high: int) -> set[int] | None:
    """The values a cron field names; None for a wildcard ('*' or '?'); raises ValueError when not understood."""
    if text in ("*", "?"):
        return None
    out: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if base == "*":
            first, last = low, high
        elif "-" in base:
            a, b = base.split("-", 1)
            first, last = _NAMES.get(a.upper()) or int(a), _NAMES.get(b.upper()) or int(b)
        else:
            first = _NAMES.get(base.upper()) or int(base)
            last = high if step_text else first
        if not (low <= first <= last <= high) or step < 1:
            raise ValueError(part)
        out.update(range(first, last + 1, step))
    return out


def invocations_per_month(expression: str, hours: Decimal | None = None) -> Decimal | None:
    """How many times an EventBridge schedule expression fires in a month of ``hours`` (730): ``rate(...)`` and
    ``cron(minutes hours day-of-month month day-of-week year)`` with lists, ranges and steps; None when not understood
    (``at(...)``, ``L``, ``W``, ``#``)."""
    month_hours = hours if hours is not None else hours_per_month()
    rate = _RATE.match(expression.strip())
    if rate:
        n, unit = Decimal(rate.group(1)), rate.group(2).rstrip("s")
        if n == 0:
            return None
        per_hour = {"minute": Decimal(60), "hour": Decimal(1), "day": Decimal(1) / 24}[unit]
        return month_hours * per_hour / n
    cron = _CRON.match(expression.strip())
    if not cron:
        return None
    parts = cron.group(1).split()
    if len(parts) != 6:
        return None
    try:
        fields = zip(parts[:5], _FIELDS, strict=True)  # the year (6th) does not change a month's count
        minutes, hours_of_day, dom, months, dow = (_values(p, lo, hi) for p, (lo, hi) in fields)
    except ValueError:
        return None
    days = month_hours / 24
    per_day = Decimal(len(minutes) if minutes is not None else 60) * Decimal(
        len(hours_of_day) if hours_of_day is not None else 24)
    if dom is not None and dow is not None:
        return None  # EventBridge refuses both; do not guess
    if dow is not None:
        days = days * len(dow) / 7
    elif dom is not None:
        days = Decimal(len(dom))  # each named day once a month (a 31st is counted though some months lack it)
    if months is not None:
        days = days * len(months) / 12
    return per_day * days


def _schedules(resources: list[tuple[CfnResource, str]]) -> dict[str, list[str]]:
    """Schedule expressions by the path of the function they invoke (rules and schedules that are not disabled)."""
    functions: dict[tuple[str, str], str] = {}
    for r, kind in resources:
        if kind == "AWS::Lambda::Function":
            functions[(Stack.of(r).node.path, Stack.of(r).resolve(r.logical_id))] = r.node.path
    out: dict[str, list[str]] = {}
    for r, kind in resources:
        if kind == "AWS::Events::Rule":
            expression, state = _resolve(r, "schedule_expression"), _resolve(r, "state")
            targets = _resolve(r, "targets") or []
        elif kind == "AWS::Scheduler::Schedule":
            expression, state = _resolve(r, "schedule_expression"), _resolve(r, "state")
            targets = [_resolve(r, "target")]
        else:
            continue
        if not isinstance(expression, str) or _unresolved(expression) or state in ("DISABLED",):
            continue
        for target in targets if isinstance(targets, list) else []:
            arn = _get(target, "arn", "Arn")
            att = _get(arn, "Fn::GetAtt")
            if isinstance(att, list) and len(att) == 2 and att[1] == "Arn":
                path = functions.get((Stack.of(r).node.path, att[0]))
                if path:
                    out.setdefault(path, []).append(expression)
    return out


# ---- the walk -----------------------------------------------------------------------------------------------------

@dataclass
class _Tally:
    count: int = 0
    quantity: Decimal = Decimal(0)
    unknown: int = 0
    paths: list[str] = field(default_factory=list)
    unknown_paths: list[str] = field(default_factory=list)

    def add(self, path: str, quantity: Decimal) -> None:
        self.count += 1
        self.quantity += quantity
        self.paths.append(path)

    def miss(self, path: str) -> None:
        self.unknown += 1
        self.unknown_paths.append(path)


_TYPES: dict[type, str] = {}
"""CloudFormation type by L1 class: each generated L1 class is one type, read once (a jsii round trip each)."""


def _type_of(r: CfnResource) -> str:
    cls = type(r)
    if cls is CfnResource:  # a generic L1 (CfnResource(type=...)): its own type
        return r.cfn_resource_type
    if cls not in _TYPES:
        _TYPES[cls] = r.cfn_resource_type
    return _TYPES[cls]


def _l1s(scopes: Iterable[IConstruct]) -> list[tuple[CfnResource, str]]:
    """Every L1 resource under ``scopes`` once, with its CloudFormation type. Python-side checks only where they are
    exact (an L1 is a CfnResource instance; jsii hands back the same object for the same construct): at Rainier scale
    the jsii round trips per construct made the bill 7.8 s of synth (2026-11-28)."""
    seen: dict[int, tuple[CfnResource, str]] = {}
    for scope in scopes:
        for c in scope.node.find_all():
            if isinstance(c, CfnResource) and id(c) not in seen:
                seen[id(c)] = (c, _type_of(c))
    return list(seen.values())


def _alarm_metrics(alarm: CfnResource) -> Decimal | None:
    """The alarm metrics one alarm is billed for (1, or each MetricStat of a metric-math alarm); None when it is
    high resolution (Period under 60 s: not priced)."""
    metrics = _known(alarm, "metrics")
    if metrics:
        stats = [m for m in metrics if _get(m, "metricStat", "MetricStat") is not None]
        periods = [_get(_get(m, "metricStat", "MetricStat"), "period", "Period") for m in stats]
        if any(isinstance(p, int) and p < 60 for p in periods):
            return None
        return Decimal(len(stats))
    period = _known(alarm, "period")
    if isinstance(period, int) and period < 60:
        return None
    return Decimal(1)


def bill_of_materials(*scopes: IConstruct, region: str | None = None,
                      prices: Mapping[str, OverheadPrice] | None = None) -> OverheadBill:
    """Price what ``scopes`` deploy besides accelerator instances (see the module's docstring).

    ``region``: the fleet's region (default: the first scope's stack's, when resolved); a price read for another
    region says so in its item's ``note``. ``prices``: unit prices by key (default: the data file's).
    """
    if not scopes:
        raise ValueError("bill_of_materials needs at least one scope (a stack, a stage or the app)")
    table = dict(overhead_prices() if prices is None else prices)
    hours = hours_per_month()
    fleet_region = region or _region_of(scopes[0])
    resources = _l1s(scopes)
    schedules = _schedules(resources)
    priced: dict[str, _Tally] = {}
    fsx: dict[str, _Tally] = {}
    skipped: dict[str, _Tally] = {}
    reasons: dict[str, str] = {}

    def put(key: str, r: CfnResource, quantity: Decimal) -> None:
        priced.setdefault(key, _Tally()).add(r.node.path, quantity)

    def skip(key: str, r: CfnResource, reason: str, quantity: Decimal | None = None) -> None:
        tally = skipped.setdefault(key, _Tally())
        tally.add(r.node.path, quantity or Decimal(0))
        reasons[key] = reason

    def unknown(key: str, r: CfnResource) -> None:
        priced.setdefault(key, _Tally()).miss(r.node.path)

    listed = not_priced()
    # a resource billed by the hour or the month whatever it is configured to do: its price keys and quantities
    flat = {"AWS::EC2::NatGateway": (("nat-gateway-hour", hours), ("nat-gateway-gb", Decimal(0))),
            "AWS::EC2::EIP": (("public-ipv4-hour", hours),), "AWS::KMS::Key": (("kms-key-month", Decimal(1)),),
            "AWS::CloudWatch::Dashboard": (("dashboard-month", Decimal(1)),),
            "AWS::EKS::Cluster": (("eks-cluster-hour", hours),)}
    for r, kind in resources:
        try:
            if kind in flat:
                for key, quantity in flat[kind]:
                    put(key, r, quantity)
            elif kind == "AWS::EC2::VPCEndpoint":
                _vpc_endpoint(r, hours, listed, put, skip)
            elif kind == "AWS::FSx::FileSystem":
                _file_system(r, fsx, skip)
            elif kind == "AWS::CloudWatch::Alarm":
                _alarm(r, put, skip)
            elif kind == "AWS::Lambda::Function":
                _function(r, schedules.get(r.node.path, []), hours, put, skip, unknown)
            elif kind in listed:
                skip(kind, r, listed[kind][0])
        except _Unknown:
            key = {"AWS::EC2::VPCEndpoint": "interface-endpoint-az-hour", "AWS::FSx::FileSystem": "fsx-lustre",
                   "AWS::CloudWatch::Alarm": "alarm-metric-month"}.get(kind, kind)
            unknown(key, r)

    items = _items(priced, fsx, skipped, reasons, table, fleet_region, listed)
    return OverheadBill(items=tuple(sorted(items, key=lambda i: (not i.priced, i.key))), region=fleet_region,
                        read=read_on())


def _items(priced: dict[str, _Tally], fsx: dict[str, _Tally], skipped: dict[str, _Tally], reasons: dict[str, str],
           table: Mapping[str, OverheadPrice], fleet_region: str, listed: Any) -> list[OverheadItem]:
    """The bill's items: each priced key at its price, each FSx for Lustre configuration at its own (or skipped for
    want of one), each skipped key with its reason."""
    items: list[OverheadItem] = []
    for key, tally in priced.items():
        items.extend(_priced_items(key, tally, table.get(key), fleet_region))
    missing = unsourced()
    for key, tally in fsx.items():
        price = table.get(key)
        if price is not None:
            items.extend(_priced_items(key, tally, price, fleet_region))
        else:
            items.append(_skipped(key, tally, "unsourced" if key in missing else "unpriced",
                                  missing.get(key, "no price for this FSx for Lustre configuration in the data file"),
                                  "GB-month"))
    for key, tally in skipped.items():
        reason = reasons[key]
        why = listed[key][1] if key in listed else wire.REASONS[reason]
        items.append(_skipped(key, tally, reason, why, ""))
    return items


def _vpc_endpoint(r: CfnResource, hours: Decimal, listed: Any, put: Any, skip: Any) -> None:
    """An interface endpoint is billed per AZ (subnet) hour; a gateway endpoint is free; another kind is unpriced."""
    kind_of = _known(r, "vpc_endpoint_type", "Gateway")
    if kind_of == "Interface":
        subnets = _known(r, "subnet_ids")
        if not isinstance(subnets, list) or not subnets:
            raise _Unknown("subnet_ids")
        put("interface-endpoint-az-hour", r, hours * len(subnets))
    elif kind_of == "Gateway":
        skip("AWS::EC2::VPCEndpoint:Gateway", r, listed["AWS::EC2::VPCEndpoint:Gateway"][0])
    else:
        skip(f"AWS::EC2::VPCEndpoint:{kind_of}", r, "unpriced")


def _file_system(r: CfnResource, fsx: dict[str, _Tally], skip: Any) -> None:
    """An FSx for Lustre file system's GB, tallied under its deployment type, storage type and throughput."""
    system = _known(r, "file_system_type")
    if system != "LUSTRE":
        skip(f"AWS::FSx::FileSystem:{system}", r, "unpriced")
        return
    config = _known(r, "lustre_configuration") or {}
    deployment = _get(config, "deploymentType", "DeploymentType")
    throughput = _get(config, "perUnitStorageThroughput", "PerUnitStorageThroughput")
    storage = _known(r, "storage_type", "SSD")
    capacity = _known(r, "storage_capacity")
    if capacity is None or any(_unresolved(v) for v in (deployment, throughput) if v is not None):
        raise _Unknown("storage_capacity")
    fsx.setdefault(f"fsx-lustre:{deployment}:{storage}:{throughput}", _Tally()).add(r.node.path, Decimal(capacity))


def _alarm(r: CfnResource, put: Any, skip: Any) -> None:
    metrics = _alarm_metrics(r)
    if metrics is None:
        skip("AWS::CloudWatch::Alarm:high-resolution", r, "unpriced")
    else:
        put("alarm-metric-month", r, metrics)


def _function(r: CfnResource, expressions: list[str], hours: Decimal, put: Any, skip: Any, unknown: Any) -> None:
    if not expressions:
        skip("AWS::Lambda::Function", r, "events")
        return
    architectures = _known(r, "architectures") or ["x86_64"]
    if architectures != ["x86_64"]:
        skip("AWS::Lambda::Function:arm64", r, "unpriced")
        return
    runs = [invocations_per_month(e, hours) for e in expressions]
    if any(n is None for n in runs):
        unknown("lambda-request", r)
        return
    memory = Decimal(_known(r, "memory_size", 128))
    timeout = Decimal(_known(r, "timeout", 3))
    invocations = sum((n for n in runs if n is not None), Decimal(0))
    put("lambda-request", r, invocations)
    put("lambda-gb-second", r, invocations * timeout * memory / 1024)


def _region_of(scope: IConstruct) -> str:
    try:
        region = Stack.of(scope).region
    except Exception:  # jsii's error: an App or a Stage is in no stack, the caller names the region
        return "unknown"
    return "unknown" if Token.is_unresolved(region) else region


def _priced_items(key: str, tally: _Tally, price: OverheadPrice | None, region: str) -> list[OverheadItem]:
    out: list[OverheadItem] = []
    what = wire.LABELS.get(key, key)
    if tally.count:
        if price is None:
            out.append(_skipped(key, tally, "unpriced", wire.REASONS["unpriced"], ""))
        else:
            monthly = (tally.quantity * price.usd).quantize(CENT)
            note = "" if price.region in (region,) or price.region.startswith(("all", "not named")) else (
                f"read for {price.region}; the fleet runs in {region}, where the price may differ")
            out.append(OverheadItem(key=key, what=what, count=tally.count, quantity=tally.quantity, unit=price.unit,
                                    usd_per_unit=price.usd, monthly_usd=monthly, source=price.source,
                                    source_key=price.source_key, as_of=price.as_of, region=price.region,
                                    standing=price.standing, basis=price.basis, note=note,
                                    resources=tuple(tally.paths)))
    if tally.unknown:
        out.append(OverheadItem(key=f"{key}:unknown", what=f"{what}: quantity unknown at synth", count=tally.unknown,
                                quantity=None, unit=price.unit if price else "", reason="unknown",
                                not_priced=wire.REASONS["unknown"], resources=tuple(tally.unknown_paths)))
    return out


def _skipped(key: str, tally: _Tally, reason: str, why: str, unit: str) -> OverheadItem:
    quantity = tally.quantity if tally.quantity else None
    return OverheadItem(key=key, what=wire.LABELS.get(key, key), count=tally.count, quantity=quantity, unit=unit,
                        reason=reason, not_priced=why, resources=tuple(tally.paths))
