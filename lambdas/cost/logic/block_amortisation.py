"""Capacity Block fees, found per fleet and amortised per day over the block.

Capacity Blocks for ML are paid upfront at purchase; the instances in them bill $0 of usage (Linux), so a fleet
that trains on Capacity Blocks spends its money in the fee (EC2 user guide, "Capacity Blocks pricing and
billing", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-pricing-billing.html, read
2026-11-22). Cost Explorer books the fee once, as usage type ``<region>-CapacityBlockFee:<instance type>``, record
type ``Upfront``, service "EC2 - Other", and does not amortise it; a cancelled block's refund carries the same usage
type, negative (grafana/cloudcost-exporter pkg/aws/client/billing.go at 68b7680f, read 2026-11-23). On which day:
cloudcost-exporter reads it on the block's start day ("Cost Explorer ... dates the fee to the reservation's
StartDate", pkg/aws/ec2/capacity_block_pricing_map.go at 68b7680f); AWS documents neither that nor the purchase day.
A fee row is matched to the blocks of its instance type that start on its day, else to those bought on its day
(:data:`FEE_DAY`); a row neither matches (a refund on a later day, for one) stays on its own day, never lost.

EC2 ``DescribeCapacityBlocks`` gives each block's id, start, end, creation time, capacity reservations and tags
but **no fee** (botocore 1.44.5 service model, ec2 ``CapacityBlock`` shape: CapacityBlockId, UltraserverType,
AvailabilityZone, CapacityReservationIds, StartDate, EndDate, CreateDate, State, Tags); the instance type and
count come from ``DescribeCapacityReservations`` of its reservations. So a fee row from Cost Explorer is matched
to the blocks of that instance type that start (else were bought) on its day, and the fee is spread over each
block's hours, day by day (UTC). The fleet is the ``neuronfleet:fleet`` tag of the block, else of its capacity
reservations, else of the fee row itself (a cost allocation tag on the reservation), else ``(untagged)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from neuronfleet_contract.tags import FLEET_TAG

from .rows import UNTAGGED, CostRow, runs_instances


@dataclass(frozen=True)
class Block:
    block_id: str
    instance_type: str
    instance_count: int
    start: datetime
    end: datetime
    created: datetime
    state: str = "active"
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def fleet(self) -> str:
        return self.tags.get(FLEET_TAG) or UNTAGGED

    @property
    def hours(self) -> Decimal:
        return Decimal(int((self.end - self.start).total_seconds())) / 3600

    def hours_by_day(self) -> Iterator[tuple[str, Decimal]]:
        """(UTC day, hours of the block in that day), start to end."""
        t = self.start
        while t < self.end:
            midnight = datetime.combine(t.date() + timedelta(days=1), datetime.min.time(), UTC)
            stop = min(midnight, self.end)
            yield t.date().isoformat(), Decimal(int((stop - t).total_seconds())) / 3600
            t = stop

    def days(self) -> list[str]:
        return [d for d, _ in self.hours_by_day()]


def utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


_CENT = Decimal("0.000001")
FEE_DAY = ("start", "purchase")
"""The block days a fee row's day is matched to, in order (see the module docstring: neither is documented)."""


def amortise(fees: Sequence[CostRow], blocks: Sequence[Block]) -> tuple[list[CostRow], list[CostRow]]:
    """Per-day rows of each fee spread over the blocks it paid for; and the fee rows no block matched (kept on
    their own day, so spend is never lost).

    A fee row (day, instance type) pays for the blocks of that type that start that day (UTC), else for those
    created that day (``FEE_DAY``), split by instance-hours when there are several; each block's share is spread
    over its hours per UTC day. Amounts are rounded to 1e-6 USD and the last day takes the remainder, so the days
    sum to the fee exactly.
    """
    by_day: dict[str, dict[tuple[str, str], list[Block]]] = {"start": {}, "purchase": {}}
    for b in blocks:
        by_day["start"].setdefault((b.start.date().isoformat(), b.instance_type), []).append(b)
        by_day["purchase"].setdefault((b.created.date().isoformat(), b.instance_type), []).append(b)
    out: list[CostRow] = []
    unmatched: list[CostRow] = []
    for fee in fees:
        paid = next((found for found in (by_day[k].get((fee.day, fee.instance_type)) for k in FEE_DAY) if found), [])
        paid = sorted(paid, key=lambda b: b.block_id)
        if not paid:
            unmatched.append(replace(fee, detail="unmatched"))
            continue
        weights = [b.hours * max(b.instance_count, 1) for b in paid]
        total_weight = sum(weights, Decimal(0)) or Decimal(1)
        for b, w in zip(paid, weights, strict=True):
            share_amortized, share_unblended = fee.amount * w / total_weight, fee.cost("unblended") * w / total_weight
            fleet = b.fleet if b.fleet != UNTAGGED else fee.fleet
            out += _spread(fee, b, fleet, share_amortized, share_unblended)
    return out, unmatched


def _spread(fee: CostRow, b: Block, fleet: str, amortized: Decimal, unblended: Decimal) -> list[CostRow]:
    parts = list(b.hours_by_day())
    hours = b.hours or Decimal(1)
    rows = []
    left_a, left_u = amortized, unblended
    for i, (day, h) in enumerate(parts):
        last = i == len(parts) - 1
        a = left_a if last else (amortized * h / hours).quantize(_CENT, ROUND_HALF_EVEN)
        u = left_u if last else (unblended * h / hours).quantize(_CENT, ROUND_HALF_EVEN)
        left_a, left_u = left_a - a, left_u - u
        rows.append(replace(fee, day=day, fleet=fleet, amount=a, unblended=u, usage_hours=Decimal(0),
                            source_day=fee.day, detail=b.block_id))
    return rows


@dataclass(frozen=True)
class BlockUse:
    """A block with what was paid and used, for the report (an unused block shows used_hours 0)."""

    block_id: str
    fleet: str
    instance_type: str
    instance_count: int
    start: str
    end: str
    paid_instance_hours: Decimal
    used_instance_hours: Decimal
    fee_usd: Decimal


def use_of(blocks: Sequence[Block], rows: Sequence[CostRow], fee_rows: Sequence[CostRow]) -> list[BlockUse]:
    """Each block's paid instance-hours vs the EC2 instance-hours its fleet ran of its type on its days (instances
    in a block bill $0 but report their hours; a reservation's unused or $0 bookkeeping hours are not run time)."""
    out = []
    for b in blocks:
        days = set(b.days())
        used = sum((r.usage_hours for r in rows if r.usage == "ec2" and runs_instances(r.usage_type)
                    and r.fleet == b.fleet and r.instance_type == b.instance_type and r.day in days), Decimal(0))
        fee = sum((r.amount for r in fee_rows if r.detail == b.block_id), Decimal(0))
        out.append(BlockUse(block_id=b.block_id, fleet=b.fleet, instance_type=b.instance_type,
                            instance_count=b.instance_count, start=b.start.isoformat(), end=b.end.isoformat(),
                            paid_instance_hours=b.hours * b.instance_count, used_instance_hours=used, fee_usd=fee))
    return out


def in_window(blocks: Iterable[Block], start: date, end: date) -> list[Block]:
    """Blocks whose time overlaps [start, end)."""
    lo = datetime.combine(start, datetime.min.time(), UTC)
    hi = datetime.combine(end, datetime.min.time(), UTC)
    return [b for b in blocks if b.start < hi and b.end > lo]
