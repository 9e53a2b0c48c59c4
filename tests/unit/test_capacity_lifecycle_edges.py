"""The Capacity Block lifecycle's rules at their edges, one test per bug issue 37's mutants let through: AWS's
1-hour extension window in the step, the extension key's end date, the first of several drains' deadline, a
payment-failed extension costing nothing, an offer starting in the past, an extension's length in hours. Each test
asserts what a user sees (the step taken, the deadline written, the offer refused, the text announced)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from neuronfleet.lambdas.capacity_lifecycle.logic import (
    Block,
    History,
    choose_extension,
    drain_deadline,
    extended_text,
    extension_key,
    step,
)
from neuronfleet_contract.capacity_lifecycle import (
    CapacityPolicy,
    extension_history,
    extension_offer,
    offer,
    offer_refusals,
)
from tests.capacity_fixtures import NOW, extension, extension_offering, offering

POLICY = CapacityPolicy(max_upfront_fee_usd=Decimal(10000), max_usd_per_instance_hour=Decimal(25),
                        allow_extension=True, extension_budget_usd=Decimal(4000),
                        checkpoint_lead=timedelta(minutes=5))
"""A short checkpoint lead (5 min): the drain starts 35 min before an instance block's end, so the minutes from 60
to 35 before it are decided by AWS's 1-hour extension window alone."""


def block(end: datetime, rid: str = "cr-1") -> Block:
    return Block(rid, "trn2.48xlarge", 4, end - timedelta(days=2), end, "active", block_id="cb-1")


def test_no_extension_is_tried_within_the_hour_aws_refuses_it():
    end = NOW + timedelta(hours=3)
    assert step(block(end), running_jobs=1, past=History(), policy=POLICY, now=end - timedelta(minutes=61)).action \
        == "extend"
    at = end - timedelta(minutes=59)   # AWS extends no later than 1 hour before the end: wait for the drain
    s = step(block(end), running_jobs=1, past=History(), policy=POLICY, now=at)
    assert s.action == "wait" and s.why == f"drains from {(end - timedelta(minutes=35)).isoformat()}"
    assert step(block(end), running_jobs=1, past=History(), policy=POLICY,
                now=end - timedelta(minutes=35)).action == "drain"


def test_a_block_extended_once_has_a_new_key_so_it_can_be_extended_again():
    first, extended = block(NOW), block(NOW + timedelta(hours=24))
    assert extension_key(first) != extension_key(extended)
    assert extension_key(extended) == f"extend#cr-1#{(NOW + timedelta(hours=24)).isoformat()}"


def test_several_blocks_draining_take_the_first_stop_as_the_deadline():
    early, late = block(NOW + timedelta(hours=1), "cr-early"), block(NOW + timedelta(hours=9), "cr-late")
    # an instance block stops 30 min before its end; the jobs' deadline is 10 min before that
    assert drain_deadline([late, early]) == NOW + timedelta(minutes=20)
    assert drain_deadline([early, late]) == NOW + timedelta(minutes=20)


def test_a_payment_failed_extension_costs_nothing_so_the_block_may_still_be_extended():
    end = NOW + timedelta(hours=5)
    failed = extension("cr-1", "cbe-failed", start=end, fee="3000.00", status="payment-failed")
    paid = extension("cr-1", "cbe-paid", start=end - timedelta(days=1), fee="1000.00", status="payment-succeeded")
    past = extension_history([failed, paid])
    assert past.spent_usd == Decimal("1000.00") and not past.pending
    x = extension_offer(extension_offering("cbe-new", block_start=end - timedelta(days=2), block_end=end,
                                           fee="2400.00"))
    choice = choose_extension([x], block(end), past, POLICY, now=NOW)   # 1000 + 2400 within 4000: bought
    assert choice.offer == x and choice.refused == {}


def test_an_offer_starting_in_the_past_is_refused_even_without_a_start_window():
    assert POLICY.start_after is None and POLICY.start_before is None
    late = offer(offering("cb-late", start=NOW - timedelta(minutes=1), fee="1000.00", count=4, hours=24))
    refusals = offer_refusals(late, POLICY, now=NOW)
    assert [r.rule for r in refusals] == ["start"]
    assert str(refusals[0]) == "start: the offer's start 2026-11-23T11:59:00+00:00; allowed: after now " \
                               "(2026-11-23T12:00:00+00:00)"
    assert offer_refusals(offer(offering("cb-now", start=NOW, fee="1000.00", count=4, hours=24)), POLICY,
                          now=NOW) == []


def test_an_extensions_length_is_read_in_hours():
    end = datetime(2026, 11, 30, 12, tzinfo=UTC)
    x = extension_offer(extension_offering("cbe-1", block_start=end - timedelta(days=2), block_end=end,
                                           hours=48, fee="3840.00", count=4))
    assert x.end == end + timedelta(hours=48) and x.hours == 48
    assert x.usd_per_instance_hour == Decimal("20.0000")   # 3840 / (48 h x 4 instances)
    _, message = extended_text("pretrain", block(end), x, already=False)
    assert "Extension cbe-1 bought: 48 h to 2026-12-02 12:00 UTC, upfront fee $3840.00 USD ($20.0000 per " \
           "instance-hour)" in message


def test_an_extension_without_its_end_date_ends_its_duration_in_hours_after_its_start():
    """The cost collector reads an extension whose history item lacks CapacityBlockExtensionEndDate by its
    CapacityBlockExtensionDurationHours (botocore: 'The duration of the Capacity Block extension in hours'): 24 of
    them, never 24 days; its fee is then spread over those 24 hours (lambdas/cost/logic/block_fees.py)."""
    from neuronfleet.lambdas.cost.logic.block_fees import bought_extensions, extension_blocks

    start = datetime(2026, 11, 30, 12, tzinfo=UTC)
    item = extension("cr-1", "cbe-1", start=start, hours=24, status="payment-succeeded")
    del item["CapacityBlockExtensionEndDate"]
    (x,), problems = bought_extensions([item], {"cr-1": "nf-prod"})
    assert problems == [] and x.end == start + timedelta(hours=24)
    (spread,) = extension_blocks([x])
    assert spread.end - spread.start == timedelta(hours=24)
