"""What the fleet bought in Capacity Blocks and extensions, reconciled with the fees Cost Explorer has booked: each
fee counted once.

The record of a purchase is AWS's and the kit's own, written as it is bought:

- a block: its reservations carry ``neuronfleet:capacity-offering`` (the offering bought) and
  ``neuronfleet:upfront-fee-usd`` (the whole offer's fee), tagged at purchase by ``neuronfleet capacity buy``
  (neuronfleet_contract.capacity_lifecycle PURCHASE_TAG / FEE_TAG): one fee per offering, however many segments;
- an extension: DescribeCapacityBlockExtensionHistory, each item with its ``UpfrontFee``, ``CurrencyCode`` and
  ``CapacityBlockExtensionStatus`` (botocore 1.44.5 ec2 ``CapacityBlockExtension`` shape; a ``payment-failed``
  extension costs nothing; ``payment-pending`` and ``payment-succeeded`` are counted, once per reservation and
  offering). The collector reads it for the reservations of the blocks it describes (its fleet's: the block's
  ``neuronfleet:fleet`` tag, its reservations', or the fleet's own reservations and groups), whose block ends on or
  after the first day it reads; an item whose fee is not an amount in USD, or lacks a date, is named, never read as
  $0.

Cost Explorer books a fee once, as ``<region>-CapacityBlockFee:<type>`` (lambdas/cost/logic/rows.py), a day or more
later, on the block's start day or its purchase day (neither documented: block_amortisation.FEE_DAY). :func:`reconcile`
lets Cost Explorer's row win: a purchase whose fee a booked row of its type covers, on one of its days, is booked;
the others are returned as estimated fee rows on their start day (``estimated=True``, ``detail`` naming the
purchase). The collector reports them (RunSummary ``unbilled_fees_usd``) and never writes them as spend: a pending
row on a day outside the run's window could not be retracted when Cost Explorer books the fee on another day, so
writing it could count the fee twice. A booked row nothing bought explains stays as it is (a block bought in the
console). A purchase whose days all fall before the first day a run reads is out of that run's sight
(:func:`in_sight`): Cost Explorer's row for it, if any, lies outside the window, so it is neither booked nor
unbilled there (the extension history lists every extension a block ever had).

An extension's booked fee is spread over the extension's own hours, for the block's fleet: :func:`extension_blocks`
gives each extension :func:`reconcile` found booked as a block of its own (start, end, purchase day) to
``block_amortisation.amortise``, so a fee row Cost Explorer books untagged on the extension's start day lands in the
fleet's ledger once, like a block's (an unbooked extension takes no share of a booked row).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from neuronfleet_contract.capacity_lifecycle import FEE_TAG, PURCHASE_TAG
from neuronfleet_contract.tags import FLEET_TAG

from .block_amortisation import Block
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
    end: datetime | None = None
    """An extension's end (its block's new end); None for a block (the block's own record has it)."""
    instance_count: int = 0

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


LIVE = {"payment-pending": 1, "payment-succeeded": 2}
"""The extension statuses that cost their fee (botocore ``CapacityBlockExtensionStatus``: payment-pending,
payment-failed, payment-succeeded); of two items of one extension, the later status wins."""
CURRENCY = "USD"


def bought_extensions(history: Iterable[Mapping[str, Any]],
                      fleets: Mapping[str, str]) -> tuple[list[Bought], list[str]]:
    """Extensions paid or being paid (DescribeCapacityBlockExtensionHistory items), one per reservation and offering;
    ``fleets``: reservation -> fleet. And problems: an item whose fee is not an amount in USD or that lacks its start
    date is named, never read as $0. A ``payment-failed`` item costs nothing, even when another item of the same
    extension says payment-pending (not when one says payment-succeeded: paid is final)."""
    out: dict[tuple[str, str], Bought] = {}
    rank: dict[tuple[str, str], int] = {}
    failed: set[tuple[str, str]] = set()
    problems = []
    for e in history:
        rid, ref = str(e.get("CapacityReservationId")), str(e.get("CapacityBlockExtensionOfferingId"))
        key, status = (rid, ref), e.get("CapacityBlockExtensionStatus")
        if status == "payment-failed":
            failed.add(key)
        if status not in LIVE or LIVE[status] <= rank.get(key, 0):
            continue
        name = f"{rid} extension {ref}"
        currency, fee = e.get("CurrencyCode") or CURRENCY, e.get("UpfrontFee")
        try:
            amount = Decimal(str(fee))
            if not amount.is_finite() or amount < 0:
                raise InvalidOperation
        except InvalidOperation:
            problems.append(f"{name}: UpfrontFee={fee!r} is not an amount (a fee in {CURRENCY} was expected)")
            continue
        if currency != CURRENCY:
            problems.append(f"{name}: CurrencyCode={currency!r}, fee {fee} not counted (the ledger is in {CURRENCY})")
            continue
        if not e.get("CapacityBlockExtensionStartDate"):
            problems.append(f"{name}: no CapacityBlockExtensionStartDate, fee ${amount} not placed on a day")
            continue
        start = _utc(e["CapacityBlockExtensionStartDate"])
        end = e.get("CapacityBlockExtensionEndDate")
        if not end and e.get("CapacityBlockExtensionDurationHours"):
            end = start + timedelta(hours=int(e["CapacityBlockExtensionDurationHours"]))
        rank[key] = LIVE[status]
        out[key] = Bought("extension", ref, rid, str(e.get("InstanceType")), fleets.get(rid, UNTAGGED), amount, start,
                          _utc(e.get("CapacityBlockExtensionPurchaseDate") or start),
                          end=_utc(end) if end else None, instance_count=int(e.get("InstanceCount") or 0))
    return [b for k, b in out.items() if k not in failed or rank[k] == LIVE["payment-succeeded"]], problems


def in_sight(bought: Iterable[Bought], first_day: str) -> list[Bought]:
    """The purchases a run reading from ``first_day`` can judge: one of their days on or after it (see the module)."""
    return [b for b in bought if max(b.days) >= first_day]


def extension_blocks(bought: Iterable[Bought]) -> list[Block]:
    """Each (booked) extension as a block of its own (id ``<reservation>/extension/<offering>``), for ``amortise``: its fee
    row is matched on its start day (else its purchase day) and spread over its hours, for the block's fleet."""
    return [Block(block_id=f"{b.reservation_id}/extension/{b.ref}", instance_type=b.instance_type,
                  instance_count=b.instance_count, start=b.start, end=b.end, created=b.bought,
                  tags={} if b.fleet == UNTAGGED else {FLEET_TAG: b.fleet})
            for b in bought if b.kind == "extension" and b.end is not None and b.end > b.start]


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
