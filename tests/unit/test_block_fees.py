"""Capacity Block and extension fees as bought (the purchase tags, the extension history) reconciled with Cost
Explorer's fee rows: each fee counted once, before and after Cost Explorer books it. The reservations derive from
aws-cli's describe-capacity-reservations example, the fee rows from its get-cost-and-usage example (tests/data/
aws_cli), the extension items from botocore's shapes (no publisher example: tests/capacity_fixtures.py)."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from neuronfleet.lambdas.cost.logic.block_amortisation import Block, amortise
from neuronfleet.lambdas.cost.logic.block_fees import (
    bought_blocks,
    bought_extensions,
    extension_blocks,
    in_sight,
    reconcile,
)
from neuronfleet.lambdas.cost.logic.rows import parse
from neuronfleet_contract.capacity_lifecycle import FEE_TAG, PURCHASE_TAG
from neuronfleet_contract.tags import FLEET_TAG
from tests.capacity_fixtures import extension
from tests.publisher_examples import cli_outputs
from tests.unit.test_publisher_examples import derived_ce_page

START = datetime(2026, 11, 1, 12, tzinfo=UTC)
END = START + timedelta(days=2)
BOUGHT = datetime(2026, 10, 30, 9, tzinfo=UTC)


def reservations(*tagged: tuple[str, dict[str, str]]) -> list[dict]:
    """aws-cli's example reservation, as a Capacity Block of trn2.48xlarge with the given ids and tags."""
    page = cli_outputs("ec2-describe-capacity-reservations")[0]
    out = []
    for rid, tags in tagged:
        r = copy.deepcopy(page["CapacityReservations"][0])
        r |= {"CapacityReservationId": rid, "InstanceType": "trn2.48xlarge", "TotalInstanceCount": 4,
              "ReservationType": "capacity-block", "StartDate": START, "EndDate": END, "CreateDate": BOUGHT,
              "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        out.append(r)
    return out


def fee_rows(*amounts: str) -> list:
    page = derived_ce_page([("USE2-CapacityBlockFee:trn2.48xlarge", "nf-prod",
                             {"NetAmortizedCost": a, "UnblendedCost": a, "UsageQuantity": "1"}) for a in amounts])
    return parse(page).rows


TAGS = {PURCHASE_TAG: "cb-1", FEE_TAG: "3840.00", FLEET_TAG: "nf-prod"}


def test_a_block_bought_and_not_yet_booked_counts_once_as_an_estimate():
    bought, problems = bought_blocks(reservations(("cr-1", TAGS), ("cr-2", TAGS)))  # two segments, one offering
    assert problems == [] and len(bought) == 1 and bought[0].fee == Decimal("3840.00")
    done = reconcile(bought, [])
    (row,) = done.pending
    assert (row.day, row.amount, row.estimated, row.usage, row.fleet) == (
        "2026-11-01", Decimal("3840.00"), True, "capacity-block", "nf-prod")
    assert row.detail == "bought:block:cb-1" and row.family == "trainium"


def test_once_cost_explorer_books_it_its_row_counts_and_the_estimate_goes():
    bought, _ = bought_blocks(reservations(("cr-1", TAGS)))
    booked = fee_rows("3840.00")
    assert booked[0].day == "2026-11-01"
    done = reconcile(bought, booked)
    assert done.pending == [] and [b.ref for b in done.booked] == ["cb-1"]
    total = sum(r.amount for r in [*booked, *done.pending])
    assert total == Decimal("3840.00")


def test_extensions_count_unless_their_payment_failed_and_each_is_matched_once():
    bought, _ = bought_blocks(reservations(("cr-1", TAGS)))
    history = [extension("cr-1", "cbe-ok", start=END, fee="1920.00", status="payment-succeeded"),
               extension("cr-1", "cbe-failed", start=END, fee="1920.00", status="payment-failed")]
    ext, problems = bought_extensions(history, {"cr-1": "nf-prod"})
    assert [e.ref for e in ext] == ["cbe-ok"] and problems == []
    done = reconcile([*bought, *ext], fee_rows("3840.00"))
    assert [b.ref for b in done.booked] == ["cb-1"]
    (pending,) = done.pending
    assert (pending.amount, pending.day, pending.detail) == (Decimal("1920.00"), "2026-11-03", "bought:extension:cbe-ok")


def test_one_booked_row_never_books_two_purchases():
    twice = {**TAGS, PURCHASE_TAG: "cb-2"}
    bought, _ = bought_blocks(reservations(("cr-1", TAGS), ("cr-2", twice)))
    done = reconcile(bought, fee_rows("3840.00"))
    assert len(done.booked) == 1 and len(done.pending) == 1


def test_a_booked_fee_nothing_bought_explains_stays_and_a_bad_tag_is_named():
    bought, problems = bought_blocks(reservations(("cr-1", {**TAGS, FEE_TAG: "lots"})))
    assert bought == [] and problems == ["cr-1: tag neuronfleet:upfront-fee-usd='lots' is not an amount in USD"]
    console = fee_rows("996.67")
    assert reconcile(bought, console).pending == []


def test_amortised_with_the_estimates_the_fleet_pays_each_fee_once():
    bought, _ = bought_blocks(reservations(("cr-1", TAGS)))
    block = Block("cb-block-1", "trn2.48xlarge", 4, START, END, BOUGHT, tags={FLEET_TAG: "nf-prod"})
    for booked in ([], fee_rows("3840.00")):
        rows = [*booked, *reconcile(bought, booked).pending]
        spread, unmatched = amortise(rows, [block])
        assert unmatched == [] and sum(r.amount for r in spread) == Decimal("3840.00")


def test_a_pending_extension_counts_and_one_listed_twice_counts_once() -> None:
    """payment-pending costs its fee (the EC2 user guide: the fee is charged up front, the extension is pending
    until paid); the same reservation and offering listed twice (pending, then paid) counts once."""
    history = [extension("cr-1", "cbe-1", start=END, status="payment-pending"),
               extension("cr-1", "cbe-1", start=END, status="payment-succeeded"),
               extension("cr-2", "cbe-2", start=END, status="payment-pending", fee="960.00")]
    ext, problems = bought_extensions(history, {"cr-1": "nf-prod"})
    assert problems == []
    assert [(e.ref, e.fee, e.fleet) for e in ext] == [("cbe-1", Decimal("1920.00"), "nf-prod"),
                                                      ("cbe-2", Decimal("960.00"), "(untagged)")]
    assert sum(r.amount for r in reconcile(ext, []).pending) == Decimal("2880.00")


def test_a_pending_extension_whose_payment_then_failed_costs_nothing() -> None:
    history = [extension("cr-1", "cbe-1", start=END, status="payment-pending"),
               extension("cr-1", "cbe-1", start=END, status="payment-failed")]
    assert bought_extensions(history, {"cr-1": "nf-prod"}) == ([], [])


def test_an_extension_fee_that_is_not_usd_or_not_an_amount_is_named_never_read_as_zero() -> None:
    odd = {**extension("cr-1", "cbe-eur", start=END, status="payment-succeeded"), "CurrencyCode": "EUR"}
    bad = {**extension("cr-1", "cbe-bad", start=END, status="payment-succeeded"), "UpfrontFee": "lots"}
    ext, problems = bought_extensions([odd, bad], {"cr-1": "nf-prod"})
    assert ext == []
    assert problems == ["cr-1 extension cbe-eur: CurrencyCode='EUR', fee 1920.00 not counted (the ledger is in USD)",
                        "cr-1 extension cbe-bad: UpfrontFee='lots' is not an amount (a fee in USD was expected)"]


def test_a_purchase_whose_days_all_precede_the_window_is_out_of_sight() -> None:
    """The history lists every extension a block ever had: one bought and started before the first day read was
    booked (or not) on a day the run does not read, so it is neither booked nor unbilled there."""
    old = {**extension("cr-1", "cbe-old", start=START - timedelta(days=20), status="payment-succeeded"),
           "CapacityBlockExtensionPurchaseDate": START - timedelta(days=22)}
    new = extension("cr-1", "cbe-new", start=END, status="payment-pending")
    ext, _ = bought_extensions([old, new], {"cr-1": "nf-prod"})
    assert [e.days for e in ext] == [("2026-10-12", "2026-10-10"), ("2026-11-03", "2026-11-23")]
    assert [e.ref for e in in_sight(ext, "2026-11-01")] == ["cbe-new"]
    assert [e.ref for e in in_sight(ext, "2026-10-12")] == ["cbe-old", "cbe-new"]  # its start day is read


def test_a_booked_extension_fee_is_spread_over_the_extension_for_the_blocks_fleet() -> None:
    """Cost Explorer's fee row for an extension, untagged, on the extension's start day: amortised as a block of
    its own (24 h from the old end), the fleet's, once; the estimate goes."""
    ext, _ = bought_extensions([extension("cr-1", "cbe-1", start=END, status="payment-succeeded")],
                               {"cr-1": "nf-prod"})
    booked = [replace(r, day="2026-11-03", fleet="(untagged)") for r in fee_rows("1920.00")]
    assert reconcile(ext, booked).pending == []
    spread, unmatched = amortise(booked, extension_blocks(ext))
    assert unmatched == [] and {r.fleet for r in spread} == {"nf-prod"}
    assert {r.detail for r in spread} == {"cr-1/extension/cbe-1"}
    assert sum(r.amount for r in spread) == Decimal("1920.00")
