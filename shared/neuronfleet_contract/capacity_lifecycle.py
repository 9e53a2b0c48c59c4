"""Capacity Blocks for ML, end to end: the lifecycle rules (facts, with sources), the fleet's capacity policy, the
offers EC2 answers, and the policy's verdict on an offer or an extension. What the ``neuronfleet capacity`` command
and the lifecycle function (lambdas/capacity_lifecycle) both apply, so one home for each rule.

Pure: no boto3, no CDK. Every refusal names the rule, the offer's value and the limit (:class:`Refusal`).

The facts were read on 2026-11-23; tests/unit/test_capacity_lifecycle.py pins each one against botocore 1.44.5's
ec2 model (the documentation strings of its shapes) where botocore carries it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, Self

from . import environment
from .capacity_alert import TERMINATION
from .environment import variable

READ = "2026-11-23"
EXTEND_GUIDE = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-extend.html"


@dataclass(frozen=True)
class Fact:
    value: Any
    source: str
    read: str = READ
    confirmed: bool = True


EXTENSION_EARLIEST = Fact(timedelta(days=56), (
    f"EC2 user guide, Extend Capacity Blocks ({EXTEND_GUIDE}): 'You can request to extend the duration of your "
    "Capacity Block up to a minimum of 1 hour or a maximum of 56 days before it expires.' (the German translation "
    "reads 57 days; the English page is authoritative)"))
"""The earliest an extension can be requested: 56 days before the block's end."""
EXTENSION_LATEST = Fact(timedelta(hours=1), EXTENSION_EARLIEST.source)
"""The latest an extension can be requested: 1 hour before the block's end."""
EXTENSION_PAYMENT_DEADLINE = Fact(timedelta(minutes=35), (
    f"EC2 user guide, Extend Capacity Blocks, Billing ({EXTEND_GUIDE}): 'If your payment can't be processed within 12 "
    "hours, or up to 35 minutes before the Capacity Block is scheduled to end (whichever comes first), your "
    "extension is not successful and the status changes to payment-failed.'"))
"""An extension still ``payment-pending`` 35 minutes before the end fails: the block ends at its old end date."""
EXTENSION_PAYMENT_WINDOW = Fact(timedelta(hours=12), EXTENSION_PAYMENT_DEADLINE.source + (
    "; botocore 1.44.5 ec2 CapacityBlockExtension.CapacityBlockExtensionStatus: 'If your payment can't be processed "
    "within 12 hours, the Capacity Block extension is failed.'"))
MAX_BLOCK_DAYS = Fact(182, (
    f"EC2 user guide, Extend Capacity Blocks ({EXTEND_GUIDE}): 'You can extend your Capacity Block by 1-day "
    "increments up to 14 days, and 7-day increments up to 182 days (26 weeks) total.'; botocore 1.44.5 ec2 "
    "DescribeCapacityBlockOfferings CapacityDurationHours: '1-day increments up 14 days, and in 7-day increments up "
    "to 182 days'. Whether 'total' bounds the block (purchase + extensions) or each extension is not said: the kit "
    "takes the stricter reading and keeps a block within 182 days in all"), confirmed=False)
DURATION_STEPS = Fact(((24, 14 * 24), (7 * 24, 182 * 24)), MAX_BLOCK_DAYS.source)
"""(step hours, up to hours): whole days up to 14 days, whole weeks up to 182 days: a block's and an extension's."""
EXTENDABLE_STATES = Fact(("active", "scheduled"), (
    f"EC2 user guide, Extend Capacity Blocks ({EXTEND_GUIDE}): 'To extend a Capacity Block, it must have a status of "
    "active or scheduled, and have no extensions that are payment-pending.'"))
EXTENSION_NOT_GUARANTEED = Fact(True, (
    f"EC2 user guide, Extend Capacity Blocks ({EXTEND_GUIDE}): 'Capacity Blocks can only be extended if there is "
    "sufficient capacity available to support them, which is not guaranteed.'"))
INSTANCES_STOP = Fact(TERMINATION["instances"].lead, TERMINATION["instances"].source)
"""An instance block's instances are terminated from 30 minutes before its end (neuronfleet_contract.capacity_alert)."""
ULTRASERVER_STOP = Fact(TERMINATION["ultraserver"].lead, TERMINATION["ultraserver"].source,
                        confirmed=TERMINATION["ultraserver"].confirmed)
WARNING_EVENT = Fact(timedelta(minutes=40), (
    "EC2 user guide, Monitor Capacity Blocks using EventBridge (capacity-blocks-monitor.html, read 2026-11-22): the "
    "expiration warning event comes forty minutes before the end ('any instances running in the reservation will "
    "begin to terminate in 10 minutes'); neuronfleet_contract.capacity_alert.CAPACITY_BLOCK_ENDING names it"))
ONE_RESERVATION_PER_SEGMENT = Fact(True, (
    "botocore 1.44.5 ec2 PurchaseCapacityBlockResult.CapacityReservations: 'The Capacity Reservations created as a "
    "result of the Capacity Block purchase. When a Capacity Block offering contains multiple segments, a separate "
    "Capacity Reservation is created for each segment.'; CapacityBlockOffering.CapacityBlockOfferingSegments: 'Each "
    "segment describes a distinct block of capacity with its own Availability Zone, instance type, schedule, and "
    "pricing.'"))
ULTRASERVER_OFFERS = Fact(True, (
    "botocore 1.44.5 ec2 DescribeCapacityBlockOfferings UltraserverType ('The EC2 UltraServer type of the Capacity "
    "Block offerings') and UltraserverCount; CapacityBlockOffering.UltraserverType/UltraserverCount; UltraServer "
    "blocks go into capacity-reservation resource groups (resource-groups GroupResources: 'You can only use this "
    "operation with ... AWS::EC2::CapacityReservationPool' groups)"))
NO_CLIENT_TOKEN = Fact(("PurchaseCapacityBlock", "PurchaseCapacityBlockExtension"), (
    "botocore 1.44.5 ec2 model: neither request shape has a ClientToken member (PurchaseCapacityBlockRequest: DryRun, "
    "TagSpecifications, CapacityBlockOfferingId, InstancePlatform; PurchaseCapacityBlockExtensionRequest: "
    "CapacityBlockExtensionOfferingId, CapacityReservationId, DryRun). So a retried purchase is not idempotent on "
    "AWS's side: the kit makes it so (a tag per offering, the extension history) and never lets the SDK retry one"))
MAX_INSTANCES_PER_BLOCK = Fact(64, (
    "botocore 1.44.5 ec2 DescribeCapacityBlockOfferings InstanceCount: 'Each Capacity Block can have up to 64 "
    "instances, and you can have up to 256 instances across Capacity Blocks.' (neuronfleet facts/data/"
    "capacity_blocks.json holds the same with its sources)"))

EXTENSION_MOVES_END = Fact(True, (
    f"EC2 user guide, Extend Capacity Blocks ({EXTEND_GUIDE}, read 2026-11-28): 'When you extend your Capacity "
    "Block, its end date will be updated so that your instances can continue to run without disruption.' and 'Your "
    "Capacity Reservation ID will remain the same after extending the block'. So an extension shows in three places: "
    "the block's extension history, its reservation's EndDate and the block's EndDate (when each moves, at purchase "
    "or once paid, is not said: the kit takes any of them as the sign that an extension was bought)"), read="2026-11-28")
EC2_CONSISTENCY_WINDOW = Fact(timedelta(minutes=5), (
    "EC2 Developer Guide, Eventual consistency in the Amazon EC2 API (https://docs.aws.amazon.com/ec2/latest/"
    "devguide/eventual-consistency.html, read 2026-11-28): 'Run the Describe command repeatedly, starting with a "
    "couple of seconds of wait time, and increasing gradually up to a few minutes of wait time.' AWS states no bound; "
    "the page's Chinese edition reads up to five minutes. The kit takes 5 minutes: after a purchase whose answer was "
    "lost, no second attempt before it has passed and every source was read again (docs/checks.md)"),
    read="2026-11-28", confirmed=False)
"""How long a purchase may stay invisible to EC2's describes (the extension history, the reservation, the block)."""

PLATFORM = "Linux/UNIX"
"""PurchaseCapacityBlock's InstancePlatform (required; botocore's enum): the kit's AMIs are Linux."""
CURRENCY = "USD"
"""The policy's limits are in US dollars: an offer in another currency is refused, never converted."""


# ---------------------------------------------------------------------------------------------------------- offers


@dataclass(frozen=True)
class Segment:
    instance_type: str
    availability_zone: str
    instance_count: int
    start: datetime
    end: datetime
    upfront_fee: Decimal


@dataclass(frozen=True)
class Offer:
    """A Capacity Block offering (botocore 1.44.5 ec2 ``CapacityBlockOffering``)."""

    offering_id: str
    instance_type: str
    availability_zone: str
    instance_count: int
    start: datetime
    end: datetime
    upfront_fee: Decimal
    currency: str
    ultraserver_type: str | None = None
    ultraserver_count: int | None = None
    segments: tuple[Segment, ...] = ()

    @property
    def hours(self) -> Decimal:
        return Decimal(int((self.end - self.start).total_seconds())) / 3600

    @property
    def instance_hours(self) -> Decimal:
        return self.hours * self.instance_count

    @property
    def usd_per_instance_hour(self) -> Decimal:
        ih = self.instance_hours
        return (self.upfront_fee / ih).quantize(Decimal("0.0001")) if ih else self.upfront_fee

    @property
    def availability_zones(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([self.availability_zone, *(s.availability_zone for s in self.segments)]))

    @property
    def ultraserver(self) -> bool:
        return bool(self.ultraserver_type)


@dataclass(frozen=True)
class ExtensionOffer:
    """A Capacity Block extension offering (botocore 1.44.5 ec2 ``CapacityBlockExtensionOffering``)."""

    offering_id: str
    instance_type: str
    instance_count: int
    availability_zone: str
    block_start: datetime
    start: datetime
    end: datetime
    upfront_fee: Decimal
    currency: str

    @property
    def hours(self) -> Decimal:
        return Decimal(int((self.end - self.start).total_seconds())) / 3600

    @property
    def usd_per_instance_hour(self) -> Decimal:
        ih = self.hours * self.instance_count
        return (self.upfront_fee / ih).quantize(Decimal("0.0001")) if ih else self.upfront_fee


class MalformedOffer(ValueError):
    """EC2 answered an offer the kit cannot read (names the member, the value and what is allowed)."""


def _utc(value: Any, member: str) -> datetime:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise MalformedOffer(f"{member}: got {value!r}; allowed: a timestamp") from None
    if not isinstance(value, datetime):
        raise MalformedOffer(f"{member}: got {value!r}; allowed: a timestamp")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _fee(value: Any, member: str) -> Decimal:
    try:
        fee = Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise MalformedOffer(f"{member}: got {value!r}; allowed: a decimal amount (botocore: a string)") from None
    if not fee.is_finite() or fee < 0:
        raise MalformedOffer(f"{member}: got {value!r}; allowed: a finite amount of at least 0")
    return fee


def _req(doc: Mapping[str, Any], member: str, what: str) -> Any:
    if member not in doc or doc[member] in (None, ""):
        raise MalformedOffer(f"{what}.{member}: got nothing; allowed: a value (the kit needs it)")
    return doc[member]


def offer(doc: Mapping[str, Any]) -> Offer:
    """An offer from a ``CapacityBlockOffering`` (as boto3 parses it); MalformedOffer naming the member."""
    what = "CapacityBlockOffering"
    segments = tuple(Segment(instance_type=str(_req(s, "InstanceType", what + "Segment")),
                             availability_zone=str(_req(s, "AvailabilityZone", what + "Segment")),
                             instance_count=int(_req(s, "InstanceCount", what + "Segment")),
                             start=_utc(_req(s, "StartDate", what + "Segment"), "StartDate"),
                             end=_utc(_req(s, "EndDate", what + "Segment"), "EndDate"),
                             upfront_fee=_fee(s.get("UpfrontFee", "0"), "UpfrontFee"))
                     for s in doc.get("CapacityBlockOfferingSegments") or ())
    return Offer(offering_id=str(_req(doc, "CapacityBlockOfferingId", what)),
                 instance_type=str(_req(doc, "InstanceType", what)),
                 availability_zone=str(_req(doc, "AvailabilityZone", what)),
                 instance_count=int(_req(doc, "InstanceCount", what)),
                 start=_utc(_req(doc, "StartDate", what), "StartDate"), end=_utc(_req(doc, "EndDate", what), "EndDate"),
                 upfront_fee=_fee(_req(doc, "UpfrontFee", what), "UpfrontFee"),
                 currency=str(doc.get("CurrencyCode") or ""), ultraserver_type=doc.get("UltraserverType") or None,
                 ultraserver_count=doc.get("UltraserverCount"), segments=segments)


def extension_offer(doc: Mapping[str, Any]) -> ExtensionOffer:
    """An extension offer from a ``CapacityBlockExtensionOffering``; MalformedOffer naming the member."""
    what = "CapacityBlockExtensionOffering"
    return ExtensionOffer(
        offering_id=str(_req(doc, "CapacityBlockExtensionOfferingId", what)),
        instance_type=str(doc.get("InstanceType") or ""), instance_count=int(doc.get("InstanceCount") or 0),
        availability_zone=str(doc.get("AvailabilityZone") or ""),
        block_start=_utc(doc.get("StartDate") or _req(doc, "CapacityBlockExtensionStartDate", what), "StartDate"),
        start=_utc(_req(doc, "CapacityBlockExtensionStartDate", what), "CapacityBlockExtensionStartDate"),
        end=_utc(_req(doc, "CapacityBlockExtensionEndDate", what), "CapacityBlockExtensionEndDate"),
        upfront_fee=_fee(_req(doc, "UpfrontFee", what), "UpfrontFee"), currency=str(doc.get("CurrencyCode") or ""))


SortKey = Literal["price", "fee", "start", "duration", "az", "count"]
SORT_KEYS: dict[str, Callable[[Offer], Any]] = {
    "price": lambda o: (o.usd_per_instance_hour, o.start),
    "fee": lambda o: (o.upfront_fee, o.start),
    "start": lambda o: (o.start, o.usd_per_instance_hour),
    "duration": lambda o: (-o.hours, o.usd_per_instance_hour),
    "az": lambda o: (o.availability_zone, o.usd_per_instance_hour),
    "count": lambda o: (-(o.ultraserver_count or o.instance_count), o.usd_per_instance_hour),
}
"""``neuronfleet capacity search --sort``: cheapest per instance-hour first by default; longest first for duration,
largest first for count; ties by price, then by offering id."""


def sort_offers(offers: Iterable[Offer], key: str = "price") -> list[Offer]:
    if key not in SORT_KEYS:
        raise ValueError(f"sort: got {key!r}; allowed: {', '.join(SORT_KEYS)}")
    by = SORT_KEYS[key]
    return sorted(offers, key=lambda o: (by(o), o.offering_id))


# ---------------------------------------------------------------------------------------------------------- policy


EXTENSION_BUDGET_USD = Decimal(0)
"""Default: no extension budget (nothing is extended until the fleet file gives one)."""
EXTENSION_HOURS = 24
"""Default: how long one extension asks for (hours)."""
DECIDE_BEFORE_MINUTES = 360
"""Default: how long before a block's end the lifecycle function decides, extend or drain (minutes)."""
CHECKPOINT_LEAD_MINUTES = 45
"""Default: how long before the block's instances stop the jobs are told to checkpoint (minutes)."""


def _window(value: Any) -> datetime:
    return _utc(value, "start window")


@dataclass(frozen=True)
class CapacityPolicy(environment.Configured):
    """What the fleet lets the kit buy (built from the fleet file's ``capacity_policy``: neuronfleet.settings.
    CapacityPolicySettings, which holds the rules on its fields; the defaults are here). Its document (the SSM
    parameter's value: :meth:`to_json`) is written and read by the contract's codec, each field's key declared."""

    max_upfront_fee_usd: Decimal = field(metadata=variable("max_upfront_fee_usd"))
    max_usd_per_instance_hour: Decimal = field(metadata=variable("max_usd_per_instance_hour"))
    availability_zones: tuple[str, ...] = field(default=(), metadata=variable("availability_zones"))
    """The AZs of the fleet's training subnets: an offer elsewhere cannot be used (an instance can't launch in a
    subnet of another AZ than its Capacity Block's: EC2 user guide, capacity-blocks-launch.html). Empty: any."""
    start_after: datetime | None = field(default=None, metadata=variable("start_after", decode=_window))
    start_before: datetime | None = field(default=None, metadata=variable("start_before", decode=_window))
    allow_extension: bool = field(default=False, metadata=variable("allow_extension"))
    extension_budget_usd: Decimal = field(default=EXTENSION_BUDGET_USD, metadata=variable("extension_budget_usd"))
    """The most the lifecycle function spends on extensions of one block, all its extensions together."""
    extension_hours: int = field(default=EXTENSION_HOURS, metadata=variable("extension_hours"))
    """How long one extension asks for (whole days up to 14 days, whole weeks after: DURATION_STEPS)."""
    decide_before: timedelta = field(default=timedelta(minutes=DECIDE_BEFORE_MINUTES), metadata=variable(
        "decide_before_minutes", unit="minutes"))
    """How long before a block's end the lifecycle function decides: extend, or drain."""
    checkpoint_lead: timedelta = field(default=timedelta(minutes=CHECKPOINT_LEAD_MINUTES), metadata=variable(
        "checkpoint_lead_minutes", unit="minutes"))
    """How long before the block's instances stop the jobs are told to checkpoint (their deadline is
    :data:`DEADLINE_MARGIN` before the stop)."""
    fallback_after: timedelta | None = field(default=None, metadata=variable("fallback_after_minutes",
                                                                             unit="minutes"))
    """A job held for Trainium capacity longer than this goes to the GPU pool, if it names a GPU job definition."""
    fleet_extension_budget_usd: Decimal | None = field(default=None, metadata=variable("fleet_extension_budget_usd"))
    """The most all the fleet's lifecycle functions together spend on extensions in one calendar month (UTC), across
    every block: a fleet-wide total, kept atomically in the announcements table (lambdas/capacity_lifecycle
    adapters.FleetBudget). Unset: :attr:`extension_budget_usd`, so by default the whole fleet spends no more on
    extensions in a month than one block may."""

    @property
    def fleet_budget(self) -> Decimal:
        """The fleet-wide monthly extension budget in force (:attr:`fleet_extension_budget_usd`, by default the
        per-block :attr:`extension_budget_usd`)."""
        return self.extension_budget_usd if self.fleet_extension_budget_usd is None \
            else self.fleet_extension_budget_usd

    def to_json(self) -> str:
        """The policy document the stack writes to its SSM parameter (:data:`POLICY_PARAMETER`), compact JSON."""
        return json.dumps(self.to_document(), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str, *, where: str) -> Self:
        """The policy from its document; :class:`PolicyUnreadable` naming ``where`` it was read from."""
        try:
            doc = json.loads(text)
            if not isinstance(doc, dict):
                raise TypeError(f"got a JSON {type(doc).__name__}")
            return cls.from_document(doc)
        except (ValueError, TypeError, KeyError, ArithmeticError) as e:
            raise PolicyUnreadable(f"{where}: got {text[:200]!r} ({type(e).__name__}: {e}); allowed: a JSON object "
                                   "as CapacityPolicy.to_json() writes it (max_upfront_fee_usd and "
                                   "max_usd_per_instance_hour at least)") from None


class PolicyUnreadable(ValueError):
    """The capacity policy's document could not be read: nothing is extended (the message names where and why)."""


POLICY_PARAMETER = "CAPACITY_POLICY_PARAMETER"
"""The lifecycle function's variable naming the SSM parameter its policy is read from, each run. The policy itself is
never in the function's environment: ``lambda:UpdateFunctionConfiguration`` would rewrite it. The role may only
``ssm:GetParameter`` that one parameter (by ARN), so a rewritten name reads nothing."""


def policy_parameter_name(fleet: str) -> str:
    """Where the stack writes the fleet's capacity policy (SSM Parameter Store, a String parameter)."""
    return f"/neuronfleet/{fleet}/capacity-policy"


DEADLINE_MARGIN = timedelta(minutes=10)
"""The jobs' checkpoint deadline is this long before the block's instances stop: time for the checkpoint's last
write to reach S3 (the cluster's /fsx/data exports to its bucket) before the instance goes."""


@dataclass(frozen=True)
class Refusal:
    """Why the policy refuses: the rule, the offer's value, the limit."""

    rule: str
    value: str
    limit: str

    def __str__(self) -> str:
        return f"{self.rule}: the offer's {self.value}; allowed: {self.limit}"


def duration_refusal(hours: int, *, what: str = "duration") -> Refusal | None:
    """Whole days up to 14 days, whole weeks up to 182 days (DURATION_STEPS)."""
    for step, upto in DURATION_STEPS.value:
        if hours <= upto and hours >= step and hours % step == 0:
            return None
    return Refusal(what, f"{hours} h", "whole days (24 h steps) up to 336 h, whole weeks (168 h steps) up to 4368 h")


def offer_refusals(o: Offer, policy: CapacityPolicy, *, now: datetime) -> list[Refusal]:
    """Every policy rule the offer breaks (empty: the policy allows it)."""
    out = []
    if o.currency and o.currency != CURRENCY:
        out.append(Refusal("currency", f"currency {o.currency}", f"{CURRENCY} (the policy's limits are in USD)"))
    if o.upfront_fee > policy.max_upfront_fee_usd:
        out.append(Refusal("max_upfront_fee_usd", f"upfront fee ${o.upfront_fee}",
                           f"at most ${policy.max_upfront_fee_usd}"))
    if o.usd_per_instance_hour > policy.max_usd_per_instance_hour:
        out.append(Refusal("max_usd_per_instance_hour", f"${o.usd_per_instance_hour} per instance-hour",
                           f"at most ${policy.max_usd_per_instance_hour}"))
    outside = [z for z in o.availability_zones if policy.availability_zones and z not in policy.availability_zones]
    if outside:
        out.append(Refusal("availability_zones", f"AZ {', '.join(outside)}",
                           f"the fleet's training AZs: {', '.join(policy.availability_zones)}"))
    if policy.start_after and o.start < policy.start_after:
        out.append(Refusal("start_after", f"start {o.start.isoformat()}", f"from {policy.start_after.isoformat()}"))
    if policy.start_before and o.start > policy.start_before:
        out.append(Refusal("start_before", f"start {o.start.isoformat()}", f"by {policy.start_before.isoformat()}"))
    if o.start < now:
        out.append(Refusal("start", f"start {o.start.isoformat()}", f"after now ({now.isoformat()})"))
    return out


@dataclass(frozen=True)
class BlockEnd:
    """What the lifecycle function knows of a block it may extend."""

    reservation_id: str
    start: datetime
    end: datetime
    state: str
    extensions_pending: bool = False
    extension_spent_usd: Decimal = Decimal(0)
    """What the block's extensions cost so far (payment-pending and payment-succeeded, from the history)."""


@dataclass(frozen=True)
class ExtensionHistory:
    """A block's extensions, as DescribeCapacityBlockExtensionHistory gives them."""

    pending: bool = False
    spent_usd: Decimal = Decimal(0)


def extension_history(items: Iterable[Mapping[str, Any]]) -> ExtensionHistory:
    """Whether an extension is payment-pending, and what the pending or paid ones cost (a failed payment costs
    nothing)."""
    items = list(items)
    live = [i for i in items if i.get("CapacityBlockExtensionStatus") in ("payment-pending", "payment-succeeded")]
    return ExtensionHistory(
        pending=any(i.get("CapacityBlockExtensionStatus") == "payment-pending" for i in items),
        spent_usd=sum((Decimal(str(i.get("UpfrontFee") or "0")) for i in live), Decimal(0)))


def extension_refusals(x: ExtensionOffer, block: BlockEnd, policy: CapacityPolicy, *, now: datetime) -> list[Refusal]:
    """Every rule (AWS's and the policy's) an extension of ``block`` by ``x`` would break (empty: buy it)."""
    out = []
    if not policy.allow_extension:
        out.append(Refusal("allow_extension", "extension", "allow_extension: true in the fleet's capacity_policy"))
    if block.state not in EXTENDABLE_STATES.value:
        out.append(Refusal("extendable state", f"block state {block.state}",
                           " or ".join(EXTENDABLE_STATES.value) + " (EC2 user guide)"))
    if block.extensions_pending:
        out.append(Refusal("no pending extension", "an extension payment-pending",
                           "none payment-pending (EC2 user guide)"))
    left = block.end - now
    if left > EXTENSION_EARLIEST.value or left < EXTENSION_LATEST.value:
        out.append(Refusal("extension window", f"{_span(left)} before the end",
                           "between 56 days and 1 hour before the end (EC2 user guide)"))
    total = (x.end - block.start).total_seconds() / 86400
    if total > MAX_BLOCK_DAYS.value:
        out.append(Refusal("182 days in all", f"{total:g} days from the block's start to the extension's end",
                           f"at most {MAX_BLOCK_DAYS.value} days"))
    if x.currency and x.currency != CURRENCY:
        out.append(Refusal("currency", f"currency {x.currency}", CURRENCY))
    spend = block.extension_spent_usd + x.upfront_fee
    if spend > policy.extension_budget_usd:
        out.append(Refusal("extension_budget_usd", f"fee ${x.upfront_fee} (${spend} with this block's earlier "
                           "extensions)", f"at most ${policy.extension_budget_usd} per block"))
    if x.usd_per_instance_hour > policy.max_usd_per_instance_hour:
        out.append(Refusal("max_usd_per_instance_hour", f"${x.usd_per_instance_hour} per instance-hour",
                           f"at most ${policy.max_usd_per_instance_hour}"))
    return out


def _span(d: timedelta) -> str:
    minutes = int(d.total_seconds() // 60)
    if abs(minutes) >= 2 * 24 * 60:
        return f"{minutes // (24 * 60)} days"
    return f"{minutes // 60} h {minutes % 60} min" if abs(minutes) >= 60 else f"{minutes} min"


# ---------------------------------------------------------------------------------------------------------- tags

PURCHASE_TAG = "neuronfleet:capacity-offering"
"""Tagged (with the fleet tag) on the reservations a purchase creates: the offering id bought. A retried ``buy`` of
the same offering finds it (DescribeCapacityReservations, filter ``tag:<key>``) and buys nothing (NO_CLIENT_TOKEN)."""
FEE_TAG = "neuronfleet:upfront-fee-usd"
"""Tagged at purchase on a block's reservations: the whole offer's upfront fee (USD), on every reservation of it (a
multi-segment offer makes one per segment: count it once per :data:`PURCHASE_TAG`). DescribeCapacityBlocks and
DescribeCapacityReservations carry no fee (botocore 1.44.5), so this tag and the extension history (whose items carry
UpfrontFee) are the record of what was bought, before Cost Explorer books it (lambdas/cost/logic/block_fees.py
reconciles the two)."""
GPU_JOB_DEFINITION_TAG = "neuronfleet:gpu-job-definition"
"""A Batch job tag naming the job definition (name, name:revision or ARN) that runs the same work on the GPU pool.
Batch's SubmitJob cannot change a job's image (botocore 1.44.5 batch ContainerOverrides has no image member), so
"declaring a GPU image" is declaring a job definition that carries it. Only one of the fleet's GPU job definitions
(:attr:`LifecycleConfig.gpu_job_definitions`, the pool's own, by revision ARN) is ever submitted: a tag naming any
other is refused and announced (whoever may tag a Trainium job does not choose which role the GPU job runs with)."""
FALLBACK_OF_TAG = "neuronfleet:fallback-of"
"""Tagged on a GPU job the lifecycle function submitted: the Trainium job it replaces."""



# ---------------------------------------------------------------------------------------------------------- function


@dataclass(frozen=True)
class ClusterRef:
    """One training cluster the lifecycle function looks after."""

    name: str
    queue_arn: str
    """Its Batch job queue: RUNNING jobs keep its blocks worth extending; RUNNABLE jobs held for capacity may move."""
    instance_type: str
    drain_bucket: str
    """The cluster's data bucket: the checkpoint flag is written at :func:`drain_key` in it (the jobs can read it)."""
    reservation_ids: tuple[str, ...] = ()
    group_arns: tuple[str, ...] = ()


EKS_GUIDE = ("Amazon EKS user guide, Create a managed node group with Capacity Blocks for ML (awsdocs/amazon-eks-user-"
             "guide latest/ug/ml/capacity-blocks-mng.adoc @ f60041409f8255b59682a2ca39382a2278e0e38b, read 2026-11-29)")
EKS_SCALE_UP = Fact("eks update-nodegroup-config", (
    f"{EKS_GUIDE}: 'If you set desiredSize to 0 at create time, then you have several options to scale up the node "
    "group when the reservation becomes active', the second being 'update the node group desired and minimum size "
    "using eks update-nodegroup-config'; and 'When upgrading managed node groups with Capacity Blocks, make sure that "
    "the desired size of the node group is set to 0'"), read="2026-11-29")
"""How a Capacity Block node group created at 0 scales out when its block is active (what the lifecycle calls)."""
EKS_SCALEDOWN = Fact(timedelta(minutes=40), (
    f"{EKS_GUIDE}: 'Amazon EKS uses a scheduled scaling policy to scale down the node group size to 0. This scheduled "
    "scaling will be set with name titled Amazon EKS Node Group Capacity Scaledown Before Reservation End. We "
    "recommend not editing or deleting this action.' and 'Amazon EC2 starts shutting down the instances 30 minutes "
    "before reservation end time. As a result, Amazon EKS will setup a scheduled scale down on the node group 40 "
    "minutes prior to their reservation end.' The guide says nothing of UltraServer blocks, whose instances EC2 starts "
    "terminating 60 minutes before the end (ULTRASERVER_STOP): EKS's own scale-down comes 20 minutes after that"),
    read="2026-11-29")
"""When EKS's own scheduled action scales a Capacity Block node group to 0: the kit leaves it alone and drains
earlier (the checkpoint lead before the instances stop)."""
EKS_DRAINS_ON_SCALE_IN = Fact(True, (
    "Amazon EKS user guide, Managed node groups (latest/ug/nodes/managed-node-groups.adoc, read 2026-11-29): 'Node "
    "updates and terminations automatically drain nodes to ensure that your applications stay available'; the "
    "update-behavior page's scale-down phase cordons and drains the node before the Auto Scaling group terminates it. "
    "How long EKS waits on a pod that does not leave on a scale-in is not stated (docs/checks.md "
    "eks-capacity-block-scaling)"), read="2026-11-29", confirmed=False)
"""A managed node group's scale-in cordons and drains the nodes it removes: the lifecycle does not cordon itself."""
EKS_ACTIVE_STATES = ("ACTIVE", "DEGRADED")
"""Node group states in which the lifecycle calls UpdateNodegroupConfig (botocore 1.44.5 eks NodegroupStatus:
CREATING, ACTIVE, UPDATING, DELETING, CREATE_FAILED, DELETE_FAILED, DEGRADED): in the others an update is refused
(ResourceInUseException) or pointless; the pass waits for the next run."""


@dataclass(frozen=True)
class NodegroupRef:
    """One EKS managed node group on Capacity Blocks that the lifecycle function makes follow its blocks: scaled out
    to its blocks' instances (at most ``count``, whole UltraServers) while they are active, told to checkpoint
    (:func:`drain_key` of ``name`` in ``drain_bucket``) from the checkpoint lead before the instances stop, scaled in
    at the checkpoint deadline."""

    name: str
    """The node group's name in the fleet file: its drain flag is ``drain_key(name)`` in :attr:`drain_bucket`."""
    cluster: str
    """The EKS cluster's name (DescribeNodegroup/UpdateNodegroupConfig ``clusterName``)."""
    nodegroup: str
    """The node group's name in EKS (``nodegroupName``)."""
    instance_type: str
    count: int
    """The most nodes (the node group's maxSize): the lifecycle never asks for more."""
    drain_bucket: str
    """The data bucket the EKS cluster's training pods read (through FSx for Lustre, as a Batch job does)."""
    ultraserver_size: int = 1
    """Instances per UltraServer (1: none): the desired size is always whole UltraServers."""
    reservation_ids: tuple[str, ...] = ()
    group_arns: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``<cluster>/<name>``: the node group in announcements and the ledger's keys (a Batch cluster of the same
        name is another thing)."""
        return f"{self.cluster}/{self.name}"


def drain_key(cluster: str) -> str:
    """Where a cluster's checkpoint flag lives in its data bucket: a JSON object ``{"deadline": ISO 8601, "reason",
    "blocks"}`` while a drain is on; absent otherwise. A job polls it (GetObject; the job role reads the bucket)."""
    return f"neuronfleet/drain/{cluster}.json"


@dataclass(frozen=True)
class LifecycleConfig:
    """One lifecycle function's settings: ``clusters`` are the ones it looks after (a fleet too big for one function's
    environment is split between several: neuronfleet.capacity.lifecycle.split_clusters); the rest is the fleet's,
    the same in each, and so is the announcements table, which keeps what is bought or said once, once across them."""

    fleet: str = field(metadata=variable("FLEET", allowed="the fleet's name"))
    topic_arn: str = field(metadata=variable("ALERTS_TOPIC_ARN", allowed="the ARN of the fleet's SNS topic"))
    ledger_table: str = field(metadata=variable("ANNOUNCEMENTS_TABLE", allowed="the name of the announcements table"))
    policy: CapacityPolicy
    """Read from the SSM parameter :attr:`policy_parameter` names, never from the environment."""
    clusters: tuple[ClusterRef, ...] = field(metadata=variable("CLUSTERS", decode=lambda d: _clusters(d), allowed=(
        'a non-empty JSON list of {"name", "queue_arn", "instance_type", "drain_bucket", "reservation_ids", '
        '"group_arns"}, names distinct ([] only beside a NODE_GROUPS that names a node group)')))
    gpu_queue_arn: str = field(default="", metadata=variable(
        "GPU_QUEUE_ARN", allowed="the GPU pool's job queue ARN", written=lambda s: str(s.gpu_queue_arn) != ""))
    gpu_instance_type: str = field(default="", metadata=variable(
        "GPU_INSTANCE_TYPE", allowed="an instance type", written=lambda s: s.gpu_instance_type != ""))
    """The GPU pool's first instance type (its priority order): what a moved job is priced at."""
    prices: Mapping[str, Mapping[str, str]] = field(default_factory=dict, metadata=variable(
        "PRICES", encode=lambda p: _carried_prices(p), decode=dict,
        allowed="a JSON object: instance type -> {usd_per_hour, as_of}"))
    """The kit's price table (neuronfleet.facts.prices.price_table): the fallback's cost difference."""
    policy_parameter: str = field(default="", metadata=variable(
        POLICY_PARAMETER, allowed="the name of the SSM parameter holding the capacity policy"))
    """The SSM parameter holding :attr:`policy` (:func:`policy_parameter_name`): the environment carries its name,
    never the policy."""
    gpu_job_definitions: tuple[str, ...] = field(default=(), metadata=variable(
        "GPU_JOB_DEFINITIONS", written=lambda s: bool(s.gpu_job_definitions),
        allowed="a JSON list of the fleet's GPU job definition ARNs (with their revision)"))
    """The fleet's GPU job definitions, by revision ARN (``arn:...:job-definition/<name>:<revision>``: what
    CloudFormation's Ref of an AWS::Batch::JobDefinition returns): the only ones the function submits to the GPU queue,
    and the only ones its role may submit (neuronfleet.fallback.gpu_pool.GpuPool.grant_submit_jobs)."""

    node_groups: tuple[NodegroupRef, ...] = field(default=(), metadata=variable(
        "NODE_GROUPS", decode=lambda d: _node_groups(d), written=lambda s: bool(s.node_groups), allowed=(
            'a JSON list of {"name", "cluster", "nodegroup", "instance_type", "count", "drain_bucket", '
            '"ultraserver_size", "reservation_ids", "group_arns"}, (cluster, name) distinct')))
    """The EKS Capacity Block node groups this function makes follow their blocks (in the first function of a split
    fleet only: neuronfleet.capacity.lifecycle)."""

    def __post_init__(self) -> None:
        if not self.clusters and not self.node_groups:   # named as the environment carries it: CLUSTERS
            raise environment.InvalidEnvironment("CLUSTERS", "[]", (
                "a non-empty JSON list, or [] beside a NODE_GROUPS that names an EKS Capacity Block node group: the "
                "function looks after at least one"))

    def to_environment(self, *, to_json: Callable[[Any], str] = json.dumps) -> dict[str, str]:
        """The function's environment (the contract's codec), once the policy has its parameter."""
        if not self.policy_parameter:
            raise ValueError("policy_parameter: got nothing; allowed: the SSM parameter the stack writes the capacity "
                             "policy to (policy_parameter_name(fleet)): the policy never travels in the environment")
        return environment.to_environment(self, to_json=to_json)

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None, *,
                         read_parameter: Callable[[str], str]) -> Self:
        """The settings from the environment, the policy from the SSM parameter it names (``read_parameter(name)``
        returns the parameter's value: the handler's SSM GetParameter; :class:`PolicyUnreadable` when it is not a
        policy)."""
        source = os.environ if env is None else env
        parameter = environment.read(cls, "policy_parameter", source)
        policy = CapacityPolicy.from_json(read_parameter(parameter), where=f"SSM parameter {parameter}")
        return environment.from_environment(cls, source, policy=policy)


def _carried_prices(prices: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, str]]:
    return {k: {"usd_per_hour": v["usd_per_hour"], "as_of": v.get("as_of", "")} for k, v in prices.items()}


def _texts(doc: Mapping[str, Any], i: int, members: Iterable[str]) -> dict[str, str]:
    """The members of the ``i``-th object, each a non-blank string (ValueError naming the first that is not)."""
    texts = {}
    for member in members:
        if not isinstance(doc.get(member), str) or not doc[member].strip():
            raise ValueError(f"[{i}].{member}: got {doc.get(member)!r}, not a non-blank string")
        texts[member] = doc[member]
    return texts


def _clusters(doc: Any) -> tuple[ClusterRef, ...]:
    if not isinstance(doc, list):
        raise ValueError("expected a non-empty list (or [] beside NODE_GROUPS): the clusters this function looks "
                         "after")
    out = []
    for i, c in enumerate(doc):
        if not isinstance(c, dict):
            raise ValueError(f"[{i}] is not an object")
        texts = _texts(c, i, ("name", "queue_arn", "instance_type", "drain_bucket"))
        out.append(ClusterRef(**texts, reservation_ids=environment.strings(c.get("reservation_ids", [])),
                              group_arns=environment.strings(c.get("group_arns", []))))
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise ValueError(f"cluster names {sorted({n for n in names if names.count(n) > 1})} repeat: each "
                         "cluster is looked after once")
    return tuple(out)


def _node_groups(doc: Any) -> tuple[NodegroupRef, ...]:
    if not isinstance(doc, list):
        raise ValueError("expected a list: the EKS node groups this function makes follow their blocks")
    out = []
    for i, g in enumerate(doc):
        if not isinstance(g, dict):
            raise ValueError(f"[{i}] is not an object")
        texts = _texts(g, i, ("name", "cluster", "nodegroup", "instance_type", "drain_bucket"))
        numbers = {}
        for member, default in (("count", None), ("ultraserver_size", 1)):
            value = g.get(member, default)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"[{i}].{member}: got {value!r}, not a whole number of at least 1")
            numbers[member] = value
        if numbers["count"] % numbers["ultraserver_size"]:
            raise ValueError(f"[{i}].count: got {numbers['count']}, not whole UltraServers of "
                             f"{numbers['ultraserver_size']}")
        out.append(NodegroupRef(
            name=texts["name"], cluster=texts["cluster"], nodegroup=texts["nodegroup"],
            instance_type=texts["instance_type"], drain_bucket=texts["drain_bucket"], count=numbers["count"],
            ultraserver_size=numbers["ultraserver_size"],
            reservation_ids=environment.strings(g.get("reservation_ids", [])),
            group_arns=environment.strings(g.get("group_arns", []))))
    labels = [g.label for g in out]
    if len(set(labels)) != len(labels):
        raise ValueError(f"node groups {sorted({n for n in labels if labels.count(n) > 1})} repeat: each node group "
                         "is looked after once")
    return tuple(out)


# ---------------------------------------------------------------------------------------------------------- purchases

PURCHASE_EVENTS = ("PurchaseCapacityBlock", "PurchaseCapacityBlockExtension")
"""The CloudTrail event names of the two Capacity Block purchases (the API operations' names: CloudTrail records an
API call under its operation's name, CloudTrail user guide "CloudTrail record contents", eventName)."""
CLOUDTRAIL_API_CALL = "AWS API Call via CloudTrail"
"""The detail-type of an API call CloudTrail sends to EventBridge's default bus; recorded only while a trail with
logging is on (EventBridge user guide, "AWS service events delivered via AWS CloudTrail",
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail.html, read 2026-11-28)."""
EC2_EVENT_SOURCE = "ec2.amazonaws.com"
PURCHASES_SERVICE = "neuronfleet-capacity-purchases"
"""The Powertools service of the purchase announcer (its health metrics: ``MalformedEvents`` and
``CapacityAnnouncements`` in namespaces.CAPACITY_NAMESPACE, with ``Fleet``)."""


@dataclass(frozen=True)
class PurchaseAnnouncerConfig(environment.Configured):
    """The purchase announcer's settings: the fleet's topic and its own announcements table (not the lifecycle's:
    the lifecycle role, which may buy, cannot write it, so cannot pre-claim and silence an announcement)."""

    topic_arn: str = field(metadata=variable("ALERTS_TOPIC_ARN", allowed="the ARN of the fleet's SNS topic"))
    ledger_table: str = field(metadata=variable("ANNOUNCEMENTS_TABLE", allowed="the name of the announcer's own table"))
