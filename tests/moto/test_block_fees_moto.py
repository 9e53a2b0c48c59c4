"""The collector (moto: DynamoDB, CloudWatch, Cost Explorer's injected results; EC2 stubbed on botocore's shapes)
with a Capacity Block the kit bought: before Cost Explorer books its fee the run reports it as unbilled and writes no
spend for it; once booked, the ledger holds the fee once and nothing is unbilled. No double count either way."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.stub import Stubber

from neuronfleet.lambdas.cost.adapters.block_reservations import CapacityBlocks
from neuronfleet_contract.capacity_lifecycle import FEE_TAG, PURCHASE_TAG
from neuronfleet_contract.tags import FLEET_TAG
from tests import capacity_fixtures
from tests.moto import test_cost_moto
from tests.moto.test_cost_moto import (
    REGION,
    _block,
    _blocks_client,
    _reservation,
    group,
    inject,
    page,
    rows_of,
    run_collector,
    spend_sum,
)

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


# ---------------------------------------------------------------------------------------------------- extensions
# DescribeCapacityBlockExtensionHistory: AWS publishes no example answer (EC2 API reference page: request, response
# elements, errors, no example; aws-cli has no examples/ec2 page for it; botocore 1.44.5 ec2 examples-1.json none;
# checked 2026-11-26). The items below are tests/capacity_fixtures.extension, built on botocore 1.44.5's
# CapacityBlockExtension shape, and the Stubber checks each answer against the operation's output shape.

EXT_START = START + timedelta(days=4)
"""Block cb-a (4 days from 11-01 11:30) extended by a day from its end, 11-05 11:30."""


def _history(*items: dict[str, Any], error: tuple[str, int] | None = None):
    """The stub's answer to the history request for cr-a: these items, or an error (code, HTTP status)."""
    def add(stub: Stubber) -> None:
        if error:
            capacity_fixtures.error(stub, "describe_capacity_block_extension_history", *error,
                                    expected={"CapacityReservationIds": ["cr-a"]})
        else:
            stub.add_response("describe_capacity_block_extension_history", {"CapacityBlockExtensions": list(items)},
                              {"CapacityReservationIds": ["cr-a"]})
    return add


def _extended(*items: dict[str, Any], error: tuple[str, int] | None = None, tags: dict[str, str] = TAGS) -> Any:
    return _blocks_client([_block("cb-a", "cr-a", START, 5, BOUGHT, {})],
                          [_reservation("cr-a", "trn2.48xlarge", 1, tags)], _history(*items, error=error))


def _ext(offering: str, status: str, fee: str = "1000.00") -> dict[str, Any]:
    return {**capacity_fixtures.extension("cr-a", offering, start=EXT_START, status=status, fee=fee),
            "CapacityBlockExtensionPurchaseDate": datetime(2026, 11, 3, 8, tzinfo=UTC)}


BOOKED_BLOCK = group("USE2-CapacityBlockFee:trn2.48xlarge", "", "4000.00", hours=0)
USAGE = group("USE2-BoxUsage:trn2.48xlarge", "nf-prod", "0", hours=12.5)


def test_an_extension_bought_and_not_yet_booked_is_unbilled_once_and_a_failed_one_costs_nothing(aws) -> None:
    """The block's fee is booked; of its three extensions one is paid, one pending (both owed: $1000 + $500), one
    failed (nothing). Unbilled: the two, each once, kind extension; none of them is written as spend."""
    inject([page("2026-11-01", [BOOKED_BLOCK, USAGE])])
    ec2 = _extended(_ext("cbe-paid", "payment-succeeded"), _ext("cbe-pending", "payment-pending", "500.00"),
                    _ext("cbe-failed", "payment-failed", "700.00"))
    summary, _ = run_collector(aws, blocks=CapacityBlocks(ec2))
    assert summary.extension_fees_unknown == ""
    assert summary.unbilled_fees_usd == "1500.00"
    assert sorted(summary.unbilled_fees) == ["bought:extension:cbe-paid on 2026-11-05: $1000.00",
                                             "bought:extension:cbe-pending on 2026-11-05: $500.00"]
    fees = [i for i in rows_of(aws) if i["usage"] == "capacity-block"]
    assert {i["detail"] for i in fees} == {"cb-a"} and sum(Decimal(i["amount"]) for i in fees) == Decimal("4000.00")


def test_once_cost_explorer_books_an_extension_its_fee_is_the_fleets_once_and_no_longer_unbilled(aws) -> None:
    """Cost Explorer books the paid extension's fee (untagged) on the extension's start day: the ledger holds it
    once, spread over the extension's day for nf-prod; the pending one is still unbilled; nothing counted twice."""
    inject([page("2026-11-01", [BOOKED_BLOCK, USAGE], token="p2"),
            page("2026-11-05", [group("USE2-CapacityBlockFee:trn2.48xlarge", "", "1000.00", hours=0)])])
    ec2 = _extended(_ext("cbe-paid", "payment-succeeded"), _ext("cbe-pending", "payment-pending", "500.00"))
    summary, _ = run_collector(aws, blocks=CapacityBlocks(ec2))
    assert (summary.unbilled_fees_usd, summary.unbilled_fees) == (
        "500.00", ["bought:extension:cbe-pending on 2026-11-05: $500.00"])
    assert (summary.capacity_blocks, summary.unmatched_fees) == (1, 0)
    fees = [i for i in rows_of(aws) if i["usage"] == "capacity-block"]
    ext = [i for i in fees if i["detail"] == "cr-a/extension/cbe-paid"]
    assert {i["fleet"] for i in ext} == {"nf-prod"} and sum(Decimal(i["amount"]) for i in ext) == Decimal("1000.00")
    assert sorted({i["day"] for i in ext}) == ["2026-11-05", "2026-11-06"]  # 24 h from 11-05 11:30
    assert sum(Decimal(i["amount"]) for i in fees) == Decimal("5000.00")  # block + the booked extension, once each


@pytest.mark.parametrize("code,status", [("RequestLimitExceeded", 503), ("UnauthorizedOperation", 403),
                                         ("AccessDenied", 403)])
def test_when_the_history_cannot_be_read_the_spend_is_written_and_extension_fees_are_unknown_not_zero(
        aws, code, status) -> None:
    """Throttled (EC2's RequestLimitExceeded, after botocore's retries) or denied (EC2 answers UnauthorizedOperation;
    AccessDenied as other services do): Cost Explorer's rows are written and published as on any run; the summary
    says extension fees are unknown (why, and in the unbilled list), and counts the unbilled block only."""
    inject([page("2026-11-01", [USAGE, group("USE2-BoxUsage:p5.48xlarge", "nf-prod", "100.00", hours=2)])])
    summary, bad = run_collector(aws, blocks=CapacityBlocks(_extended(error=(code, status))))
    assert bad == [] and summary.new == 2
    assert sorted((i["instance_type"], i["amount"]) for i in rows_of(aws)) == [("p5.48xlarge", "100.00"),
                                                                               ("trn2.48xlarge", "0")]
    assert spend_sum(aws, "2026-11-01", "nf-prod", "gpu") == 100.0
    assert summary.extension_fees_unknown.startswith(
        f"DescribeCapacityBlockExtensionHistory of 1 reservation(s) failed: {code}: ")
    assert summary.unbilled_fees_usd == "4000.00"  # the block (unbooked); extensions unknown, not 0
    assert summary.unbilled_fees == ["bought:block:cb-offer-1 on 2026-11-01: $4000.00",
                                     f"extensions: unknown this run ({summary.extension_fees_unknown})"]


def test_the_handler_logs_unknown_extension_fees(aws, monkeypatch, caplog) -> None:
    """The function itself: a denied history call gives a warning naming the reason, and the run's summary."""
    from neuronfleet.lambdas.cost import collector
    from neuronfleet.lambdas.cost.adapters.outputs import SpendMetrics
    from neuronfleet.lambdas.cost.adapters.spend_ledger import SpendLedger
    from neuronfleet_contract.cost import CollectorConfig

    inject([page("2026-11-01", [USAGE])])
    settings = CollectorConfig(ledger_table="ledger", instance_types=("trn2.48xlarge",), fleet="nf-prod")
    container = collector.Container(settings=settings, ce_client=aws["ce"], ledger=SpendLedger(aws["table"]),
                                    spend=SpendMetrics(aws["cw"], "NeuronFleet/Cost"),
                                    blocks=CapacityBlocks(_extended(error=("UnauthorizedOperation", 403)),
                                                          fleet="nf-prod"))
    monkeypatch.setattr(collector, "container", lambda: container)
    context = SimpleNamespace(function_name="nf-prod-collector", memory_limit_in_mb=512, aws_request_id="r-1",
                              invoked_function_arn=f"arn:aws:lambda:{REGION}:123456789012:function:c")
    out = collector.handler({"version": "0", "id": "1", "detail-type": "Scheduled Event", "source": "aws.events",
                             "account": "123456789012", "time": "2026-11-04T06:00:00Z", "region": REGION,
                             "resources": [], "detail": {}}, context)
    assert out["extension_fees_unknown"].startswith("DescribeCapacityBlockExtensionHistory of 1 reservation(s) "
                                                    "failed: UnauthorizedOperation")
    (warning,) = [r for r in caplog.records if r.getMessage().startswith("Capacity Block extension fees unknown")]
    assert (warning.levelname, getattr(warning, "reason", None)) == ("WARNING", out["extension_fees_unknown"])
    assert out["new"] >= 1  # Cost Explorer's row written all the same


def test_a_history_that_fails_on_its_second_page_counts_no_extension_of_the_first() -> None:
    """Partial answers are not counted: the first page's extension is not reported while the rest is unknown."""
    def add(stub: Stubber) -> None:
        stub.add_response("describe_capacity_block_extension_history",
                          {"CapacityBlockExtensions": [_ext("cbe-1", "payment-succeeded")], "NextToken": "t2"},
                          {"CapacityReservationIds": ["cr-a"]})
        capacity_fixtures.error(stub, "describe_capacity_block_extension_history", "RequestLimitExceeded", 503,
                                expected={"CapacityReservationIds": ["cr-a"], "NextToken": "t2"})

    blocks = CapacityBlocks(_blocks_client([_block("cb-a", "cr-a", START, 5, BOUGHT, {})],
                                           [_reservation("cr-a", "trn2.48xlarge", 1, TAGS)], add))
    blocks.describe()
    got = blocks.extensions()
    assert got.bought == [] and got.unknown.startswith(
        "DescribeCapacityBlockExtensionHistory of 1 reservation(s) failed: RequestLimitExceeded")


def test_every_page_of_the_history_counts_and_a_repeated_token_makes_it_unknown() -> None:
    def pages(second_token: str | None):
        def add(stub: Stubber) -> None:
            stub.add_response("describe_capacity_block_extension_history",
                              {"CapacityBlockExtensions": [_ext("cbe-1", "payment-succeeded")], "NextToken": "t2"},
                              {"CapacityReservationIds": ["cr-a"]})
            second: dict[str, Any] = {"CapacityBlockExtensions": [_ext("cbe-2", "payment-pending")]}
            if second_token:
                second["NextToken"] = second_token
            stub.add_response("describe_capacity_block_extension_history", second,
                              {"CapacityReservationIds": ["cr-a"], "NextToken": "t2"})
        return CapacityBlocks(_blocks_client([_block("cb-a", "cr-a", START, 5, BOUGHT, {})],
                                             [_reservation("cr-a", "trn2.48xlarge", 1, TAGS)], add))

    blocks = pages(None)
    blocks.describe()
    assert sorted(b.ref for b in blocks.extensions().bought) == ["cbe-1", "cbe-2"]
    blocks = pages("t2")  # EC2 answering the same token again: the pager stops, the history is unknown
    blocks.describe()
    got = blocks.extensions()
    assert got.bought == [] and "answered the same NextToken twice" in got.unknown


def test_the_history_is_asked_for_the_fleets_blocks_that_end_in_sight_only() -> None:
    """nf-prod's collector: cb-a (nf-prod's reservation tag) and cb-g (no tag; its reservation is in the fleet file)
    are asked about; cb-o (another fleet's) and cb-old (nf-prod's, ended in October) are not. The Stubber checks the
    request's ids."""
    october = datetime(2026, 10, 1, tzinfo=UTC)
    ec2 = _blocks_client(
        [_block("cb-a", "cr-a", START, 5, BOUGHT, {}), _block("cb-g", "cr-g", START, 2, BOUGHT, {}),
         _block("cb-o", "cr-o", START, 2, BOUGHT, {"neuronfleet:fleet": "nf-other"}),
         _block("cb-old", "cr-old", october, 2, october, {"neuronfleet:fleet": "nf-prod"})],
        [_reservation("cr-a", "trn2.48xlarge", 1, TAGS), _reservation("cr-g", "trn2.48xlarge", 1),
         _reservation("cr-o", "trn2.48xlarge", 1), _reservation("cr-old", "trn2.48xlarge", 1)],
        lambda stub: stub.add_response(
            "describe_capacity_block_extension_history",
            {"CapacityBlockExtensions": [{**_ext("cbe-g", "payment-pending"), "CapacityReservationId": "cr-g"}]},
            {"CapacityReservationIds": ["cr-a", "cr-g"]}))
    blocks = CapacityBlocks(ec2, fleet="nf-prod", reservation_ids=["cr-g"])
    blocks.describe()
    got = blocks.extensions(since=datetime(2026, 11, 1).date())
    assert (got.reservations, [(b.ref, b.fleet) for b in got.bought]) == (2, [("cbe-g", "nf-prod")])


def test_a_block_whose_days_all_precede_the_window_is_not_reported_unbilled(aws) -> None:
    """Bought and run in October, still listed by DescribeCapacityBlocks in November: its fee row (if booked) is on
    an October day the November run does not read, so it is out of sight, not 'unbilled' all month."""
    october = datetime(2026, 10, 10, tzinfo=UTC)
    inject([page("2026-11-01", [USAGE])])
    ec2 = _blocks_client([_block("cb-old", "cr-old", october, 2, october, {})],
                         [_reservation("cr-old", "trn2.48xlarge", 1, {**TAGS, PURCHASE_TAG: "cb-offer-old"})])
    summary, _ = run_collector(aws, blocks=CapacityBlocks(ec2))
    assert (summary.unbilled_fees_usd, summary.unbilled_fees, summary.extension_fees_unknown) == ("0", [], "")
