"""The collector (moto: DynamoDB, CloudWatch, Cost Explorer's injected results; EC2 stubbed on botocore's shapes)
with a Capacity Block the kit bought: before Cost Explorer books its fee the run reports it as unbilled and writes no
spend for it; once booked, the ledger holds the fee once and nothing is unbilled. No double count either way."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from neuronfleet.lambdas.cost.adapters.capacity_blocks import CapacityBlocks
from neuronfleet_contract.capacity_lifecycle import FEE_TAG, PURCHASE_TAG
from neuronfleet_contract.tags import FLEET_TAG
from tests.moto import test_cost_moto
from tests.moto.test_cost_moto import _block, _blocks_client, _reservation, group, inject, page, rows_of, run_collector

aws = test_cost_moto.aws
"""The cost tests' fixture: moto with the ledger table, Cost Explorer's injected results and the metrics."""

BOUGHT = datetime(2026, 11, 1, 9, tzinfo=UTC)
START = datetime(2026, 11, 1, 11, 30, tzinfo=UTC)
TAGS = {FLEET_TAG: "nf-prod", PURCHASE_TAG: "cb-offer-1", FEE_TAG: "4000.00"}


def _ec2():
    return _blocks_client([_block("cb-a", "cr-a", START, 4, BOUGHT, {})],
                          [_reservation("cr-a", "trn2.48xlarge", 1, TAGS)])


def test_a_bought_block_is_unbilled_until_cost_explorer_books_it_then_counted_once(aws) -> None:
    inject([page("2026-11-01", [group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "0", hours=12.5)])])
    summary, _ = run_collector(aws, blocks=CapacityBlocks(_ec2()))
    assert summary.unbilled_fees_usd == "4000.00"
    assert summary.unbilled_fees == ["bought:block:cb-offer-1 on 2026-11-01: $4000.00"]
    assert [i for i in rows_of(aws) if i["usage"] == "capacity-block"] == []   # not spend before it is billed


def test_once_booked_the_fee_is_in_the_ledger_once_and_nothing_is_unbilled(aws) -> None:
    inject([page("2026-11-01", [group("USE2-CapacityBlockFee:trn2.48xlarge", "", "4000.00", hours=0),
                                group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "0", hours=12.5)])])
    summary, _ = run_collector(aws, blocks=CapacityBlocks(_ec2()))
    assert (summary.unbilled_fees_usd, summary.unbilled_fees) == ("0", [])
    fees = [Decimal(i["amount"]) for i in rows_of(aws) if i["usage"] == "capacity-block"]
    assert sum(fees) == Decimal("4000.00")
