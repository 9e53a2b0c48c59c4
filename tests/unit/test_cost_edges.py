"""The cost ledger, fee rows, unit costs and the evaluation's fit at the edges where a plausible bug would misstate
money and the broader tests would not notice (issue 37's surviving mutants): a key repeated across pages, another
fleet's rows in the ledger, a Capacity Block fee's usage quantity, a standby's cost per million, and a model exactly
the size of a GPU's memory."""

from __future__ import annotations

from decimal import Decimal

from neuronfleet.lambdas.cost.logic.economics import unit_costs
from neuronfleet.lambdas.cost.logic.evaluation import neuron_equivalent
from neuronfleet.lambdas.cost.logic.ledger import item, plan
from neuronfleet.lambdas.cost.logic.rows import CostRow, parse
from neuronfleet_contract.cost import EndpointModel
from tests.unit.test_publisher_examples import derived_ce_page

DAY = "2026-11-01"


def row(amount: str, fleet: str = "nf-a", instance_type: str = "trn2.48xlarge") -> CostRow:
    return CostRow(day=DAY, fleet=fleet, service="ec2", instance_type=instance_type, family="trainium",
                   amount=Decimal(amount), usage_hours=Decimal(1), source_day=DAY)


def held(r: CostRow) -> dict:
    return item(r, "2026-11-02T00:00:00Z")


def test_a_key_repeated_across_pages_keeps_the_later_pages_row() -> None:
    """Cost Explorer pages in order; a group repeated on a later page is the later answer (the ledger's rule,
    ledger.plan): the row written is the second, and the repeat is counted."""
    first, later = row("10.00"), row("12.50")
    p = plan([first, later], existing={})
    assert [r.amount for r in p.new] == [Decimal("12.50")] and p.duplicates == 1
    p = plan([first, later], existing={first.key: held(first)})
    assert [r.amount for r in p.replaced] == [Decimal("12.50")] and p.unchanged == 0


def test_a_run_for_one_fleet_never_retracts_another_fleets_rows() -> None:
    """A fleet's collector asks Cost Explorer about its own fleet; another fleet's held row of the same day is not in
    its answer and must stay (its own collector owns it)."""
    mine, theirs = row("5", fleet="nf-a"), row("7", fleet="nf-b", instance_type="trn1.32xlarge")
    existing = {mine.key: held(mine), theirs.key: held(theirs)}
    p = plan([], existing, scope=[DAY], fleet="nf-a")
    assert p.retracted == [mine.key]
    assert plan([], existing, scope=[DAY], fleet=None).retracted == [mine.key, theirs.key]


def test_a_capacity_block_fee_row_holds_no_instance_hours() -> None:
    """A fee row's UsageQuantity is not instance time the kit counts: the instances in a block report
    their own hours on their usage rows. Counted as hours, it would double the block's used hours."""
    page = derived_ce_page([
        ("USE2-CapacityBlockFee:trn2.48xlarge", "nf-a", {"NetAmortizedCost": "3840", "UnblendedCost": "3840",
                                                         "UsageQuantity": "24"}),
        ("USE2-BoxUsage:trn2.48xlarge", "nf-a", {"NetAmortizedCost": "0", "UnblendedCost": "0",
                                                 "UsageQuantity": "24"})])
    fee, use = sorted(parse(page).rows, key=lambda r: r.usage)
    assert (fee.usage, fee.usage_hours, fee.amount) == ("capacity-block", Decimal(0), Decimal(3840))
    assert (use.usage, use.usage_hours) == ("ec2", Decimal(24))


def test_a_standby_gpus_cost_per_million_is_never_published() -> None:
    """A standby serves nobody while Neuron serves: dividing its cost by the endpoint's inferences would publish a
    GPU unit cost that was never incurred per inference. Only a baseline's (or shadow's) GPU figure is a unit cost."""
    spend = {("ep", "neuron", DAY): Decimal(100), ("ep", "gpu", DAY): Decimal(300)}
    calls = {("ep", "neuron", DAY): Decimal(1_000_000), ("ep", "gpu", DAY): Decimal(10)}
    standby = EndpointModel(endpoint="ep", neuron_types=("ml.inf2.xlarge",), gpu_type="ml.g5.xlarge",
                            gpu_role="standby")
    published = unit_costs([standby], spend, calls, {})
    assert [(v, u) for _, v, u, _ in published] == [("neuron", "inferences")]
    baseline = EndpointModel(endpoint="ep", neuron_types=("ml.inf2.xlarge",), gpu_type="ml.g5.xlarge",
                             gpu_role="baseline")
    assert {v for _, v, _, _ in unit_costs([baseline], spend, calls, {})} == {"neuron", "gpu"}


def test_a_model_exactly_a_types_memory_fits_that_type() -> None:
    """Memory-matched: a Neuron type with exactly the accelerator memory the work needs holds it."""
    accelerators = {"g5.xlarge": ("nvidia", 24), "inf2.xlarge": ("inferentia", 32), "inf2.48xlarge": ("inferentia", 384)}
    prices = {"inf2.xlarge": {"usd_per_hour": "0.7582"}, "inf2.48xlarge": {"usd_per_hour": "12.98127"}}
    chosen, why = neuron_equivalent("g5.xlarge", inference=True, accelerators=accelerators, prices=prices, need_gib=32)
    assert (chosen, why) == ("inf2.xlarge", "cheapest inferentia type with >= 32 GiB of accelerator memory")
    chosen, _ = neuron_equivalent("g5.xlarge", inference=True, accelerators=accelerators, prices=prices, need_gib=33)
    assert chosen == "inf2.48xlarge"
