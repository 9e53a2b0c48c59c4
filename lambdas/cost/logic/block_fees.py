"""What the fleet bought in Capacity Blocks and extensions, reconciled with the fees Cost Explorer has booked: each
fee counted once.

The record of a purchase is AWS's and the kit's own, written as it is bought:

- a block: its reservations carry ``neuronfleet:capacity-offering`` (the offering bought) and
  ``neuronfleet:upfront-fee-usd`` (the whole offer's fee), tagged at purchase by ``neuronfleet capacity buy``
  (neuronfleet_contract.capacity_lifecycle PURCHASE_TAG / FEE_TAG): one fee per offering, however many segments;
- an extension: DescribeCapacityBlockExtensionHistory, each item with its ``UpfrontFee`` and status (a
  ``payment-failed`` extension costs nothing; ``payment-pending`` and ``payment-succeeded`` are counted).

Cost Explorer books a fee once, as ``<region>-CapacityBlockFee:<type>`` (lambdas/cost/logic/rows.py), a day or more
later, on the block's start day or its purchase day (neither documented: capacity_blocks.FEE_DAY). :func:`reconcile`
lets Cost Explorer's row win: a purchase whose fee a booked row of its type covers, on one of its days, is booked;
the others are returned as estimated fee rows on their start day (``estimated=True``, ``detail`` naming the
purchase). The collector reports them (RunSummary ``unbilled_fees_usd``) and never writes them as spend: a pending
row on a day outside the run's window could not be retracted when Cost Explorer books the fee on another day, so
writing it could count the fee twice. A booked row nothing bought explains stays as it is (a block bought in the
console). Extensions: their history is read by the lifecycle function and the command; the collector reads block
fees only (its role has no DescribeCapacityBlockExtensionHistory).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from neuronfleet_contract.capacity_lifecycle import FEE_TAG, PURCHASE_TAG
from neuronfleet_contract.tags import FLEET_TAG

from .rows import UNTAGGED, CostRow, family_of

CENT = Decimal("0.01")
"""Cost Explorer's amount and the offer's fee are the same figure; a cent of rounding is allowed between them."""


@dataclass(frozen=True)
class Bought:
    """One fee paid up front: a block (``kind`` block, ``ref`` its offering) or an extension (``ref`` its offering)."""

    kind: str
    ref: str
    reservation_id: str
    instance_type: str
    fleet: str
    fee: Decimal
    start: datetime
    bought: datetime

    @property
    def days(self) -> tuple[str, ...]:
        """The days Cost Explorer may book it on, in the order the collector matches (start, then purchase)."""
        return tuple(dict.fromkeys([self.start.date().isoformat(), self.bought.date().isoformat()]))


def _utc(value: Any) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _tags(items: Iterable[Mapping[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items or () if "Key" in t}


def bought_blocks(reservations: Iterable[Mapping[str, Any]]) -> tuple[list[Bought], list[str]]:
    """Blocks bought by the kit, one per offering (DescribeCapacityReservations items); and problems (a fee tag that
    is not an amount: named, never read as $0)."""
    out: dict[str, Bought] = {}
    problems = []
    for r in reservations:
        tags = _tags(r.get("Tags"))
        offering, fee = tags.get(PURCHASE_TAG), tags.get(FEE_TAG)
        if not offering or fee is None or offering in out:
            continue
        try:
            amount = Decimal(fee)
            if not amount.is_finite() or amount < 0:
                raise InvalidOperation
        except InvalidOperation:
            problems.append(f"{r.get('CapacityReservationId')}: tag {FEE_TAG}={fee!r} is not an amount in USD")
            continue
        out[offering] = Bought("block", offering, str(r.get("CapacityReservationId")), str(r.get("InstanceType")),
                               tags.get(FLEET_TAG) or UNTAGGED, amount, _utc(r["StartDate"]),
                               _utc(r.get("CreateDate") or r["StartDate"]))
    return list(out.values()), problems


def bought_extensions(history: Iterable[Mapping[str, Any]], fleets: Mapping[str, str]) -> list[Bought]:
    """Extensions paid or being paid (DescribeCapacityBlockExtensionHistory items); ``fleets``: reservation -> fleet."""
    out = []
    for e in history:
        if e.get("CapacityBlockExtensionStatus") not in ("payment-pending", "payment-succeeded"):
            continue
        rid = str(e.get("CapacityReservationId"))
        out.append(Bought("extension", str(e.get("CapacityBlockExtensionOfferingId")), rid,
                          str(e.get("InstanceType")), fleets.get(rid, UNTAGGED), Decimal(str(e.get("UpfrontFee"))),
                          _utc(e["CapacityBlockExtensionStartDate"]),
                          _utc(e.get("CapacityBlockExtensionPurchaseDate") or e["CapacityBlockExtensionStartDate"])))
    return out


@dataclass(frozen=True)
class Reconciled:
    booked: list[Bought]
    """Purchases Cost Explorer has booked (its rows count them)."""
    pending: list[CostRow]
    """Estimated fee rows for the purchases it has not booked yet."""


def reconcile(bought: Sequence[Bought], fee_rows: Sequence[CostRow], *, region_prefix: str = "") -> Reconciled:
    """Match each purchase to Cost Explorer's fee rows (same instance type, one of its days, the row's amount not yet
    used up by other purchases, within a cent): booked; the rest become estimated fee rows (see the module)."""
    left = {id(r): r.amount for r in fee_rows if r.usage == "capacity-block"}
    rows = [r for r in fee_rows if r.usage == "capacity-block"]
    booked, pending = [], []
    for b in sorted(bought, key=lambda b: (b.bought, b.ref)):
        match = next((r for day in b.days for r in rows
                      if r.day == day and r.instance_type == b.instance_type and left[id(r)] + CENT >= b.fee), None)
        if match is not None:
            left[id(match)] -= b.fee
            booked.append(b)
            continue
        template = next((r for r in rows if r.instance_type == b.instance_type), None)
        usage_type = template.usage_type if template else f"{region_prefix}CapacityBlockFee:{b.instance_type}"
        row = CostRow(day=b.start.date().isoformat(), fleet=b.fleet, service="EC2 - Other",
                      instance_type=b.instance_type,
                      family=template.family if template else (family_of(b.instance_type) or ""),
                      amount=b.fee, usage_hours=Decimal(0), usage="capacity-block", estimated=True,
                      detail=f"bought:{b.kind}:{b.ref}", usage_type=usage_type)
        pending.append(replace(row, source_day=row.day))
    return Reconciled(booked, pending)
