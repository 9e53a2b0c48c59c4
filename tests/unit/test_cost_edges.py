"""The cost ledger, fee rows, unit costs and the evaluation's fit at the edges where a plausible bug would misstate
money and the broader tests would not notice (issue 37's surviving mutants): a key repeated across pages, another
fleet's rows in the ledger, a Capacity Block fee's usage quantity, a standby's cost per million, and a model exactly
the size of a GPU's memory; and (issue 43) the days an asynchronous endpoint spent at zero instances, which have no
row but are recorded days, and its inferences, which SageMaker does not count."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from neuronfleet.lambdas.cost.logic.economics import model_line, summary_text, unit_costs
from neuronfleet.lambdas.cost.logic.evaluation import neuron_equivalent
from neuronfleet.lambdas.cost.logic.ledger import answered_days, item, plan
from neuronfleet.lambdas.cost.logic.rows import CostRow, parse
from neuronfleet.lambdas.cost.report import build
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


# ---------------------------------------------------------------- days at zero and asynchronous endpoints (issue 43)

ASYNC = EndpointModel(endpoint="nf-batch-summarise", neuron_types=("ml.inf2.xlarge",), model="summarise",
                      created="2026-10-01T00:00:00+00:00")  # before the month: every recorded day compared
MONTH = [f"2026-{m:02d}-{d:02d}" for m, d in [(10, 30), (10, 31), *((11, d) for d in range(1, 29))]]
"""The report's 30 days, 2026-10-30 to 2026-11-28 (its period ends 2026-11-29, exclusive)."""


def ce_day(day: str, busy: bool) -> dict:
    """Cost Explorer's answer for one day, derived from the publisher's example (aws-cli's get-cost-and-usage, checked
    against botocore's GetCostAndUsage output shape by derived_ce_page): the async endpoint 1 x 3 h ($2.97) on a busy
    day, no group at all on a day at zero instances (a period with empty Groups: what the answer holds for a day
    with no spend)."""
    page = derived_ce_page([("USE2-AsyncInf:ml.inf2.xlarge", "nf-batch", {
        "NetAmortizedCost": "2.97", "UnblendedCost": "2.97", "UsageQuantity": "3"})] if busy else [])
    end = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
    page["ResultsByTime"][0]["TimePeriod"] = {"Start": day, "End": end}
    return page


def month_report(pages: list[dict], asked: list[str]) -> dict:
    """What the collector keeps of ``pages`` (rows, and the days marked as answered) and the report over MONTH."""
    rows: list[CostRow] = []
    answered: set[str] = set()
    bad: set[str] = set()
    for p in pages:
        parsed = parse(p)
        rows += parsed.rows
        answered |= parsed.days or set()
        bad |= {b.day for b in parsed.bad}
    rows = plan(rows, existing={}).new  # one row per key, as the ledger keeps them
    return build(fleet="nf-batch", rows=rows, start=date(2026, 10, 30), end=date(2026, 11, 29), invocations={},
                 tokens={}, prices={}, models=[ASYNC], queried=answered_days(asked, answered, bad))


def test_days_at_zero_instances_are_recorded_days_and_the_saving_covers_the_whole_month() -> None:
    """1 x 3 h on alternate days: 15 busy days ($44.55, 45 instance-hours at $0.99), 15 days at zero with no row.
    Before: the period was the 15 days with rows, always on cost 360 h = $356.40, 'saved $311.85', and the serving
    extrapolated to $89.10 a month (30/15 x $44.55). Now: 30 days answered, always on 720 h = $712.80, saved $668.25,
    $44.55 a month as billed."""
    out = month_report([ce_day(d, i % 2 == 0) for i, d in enumerate(MONTH)], MONTH)
    assert out["period"]["recorded_days"] == 30
    (z,) = out["scale_to_zero"]
    assert (z["days"], z["spend_usd"], z["instance_hours"], z["always_on_usd"], z["saved_usd"]) == \
        (30, "44.55", "45.00", "712.80", "668.25")
    assert z["idle_hours_at_least"] == "675.00"  # 720 - 45
    (outside,) = out["net"]["outside"]
    assert outside["usd"] == "44.55"  # a month of serving is what a month billed


def test_a_day_answered_twice_is_one_day_and_a_day_never_asked_is_none() -> None:
    """Two runs answer the same days: still 30 days and the same saving. A collector that missed the last two days
    (never asked; one busy, $2.97) counts 28: the saving never grows from days nobody read (28 x 24 h x $0.99 -
    $41.58 = $623.70, not the 30 days' $668.25)."""
    pages = [ce_day(d, i % 2 == 0) for i, d in enumerate(MONTH)]
    twice = month_report(pages + pages, MONTH + MONTH)
    assert (twice["period"]["recorded_days"], twice["scale_to_zero"][0]["saved_usd"]) == (30, "668.25")
    missed = month_report(pages[:-2], MONTH[:-2])
    (z,) = missed["scale_to_zero"]
    assert (missed["period"]["recorded_days"], z["days"], z["saved_usd"]) == (28, 28, "623.70")
    assert answered_days(MONTH[:-2], MONTH) == MONTH[:-2]  # an answer for a day the run did not ask: not marked


def test_a_day_a_bad_row_came_from_is_not_marked_and_an_unknown_days_bad_row_marks_none() -> None:
    assert answered_days(MONTH[:3], MONTH[:3], bad_days=[MONTH[1]]) == [MONTH[0], MONTH[2]]
    assert answered_days(MONTH[:3], MONTH[:3], bad_days=[""]) == []
    assert answered_days(MONTH[:3], MONTH[:2]) == MONTH[:2]  # the answer left a day out: not recorded


def test_an_async_endpoints_inferences_line_says_why_there_is_no_figure_never_none() -> None:
    """SageMaker publishes no Invocations metric for an asynchronous endpoint (economics.ASYNC_INFERENCES, the
    developer guide quoted): the line says so and points at the per-token figure; it never reads "$None/M"."""
    tokens = {("nf-batch-summarise", "neuron", d): Decimal(5_000_000) for d in MONTH[::2]}
    out = build(fleet="nf-batch", rows=[r for i, d in enumerate(MONTH) for r in parse(ce_day(d, i % 2 == 0)).rows],
                start=date(2026, 10, 30), end=date(2026, 11, 29), invocations={}, tokens=tokens, prices={},
                models=[ASYNC], queried=["2026-10-29", *MONTH, *MONTH[:5], "2026-11-29"])  # repeats, days outside
    assert out["period"]["recorded_days"] == 30
    (m,) = out["unit_economics"]["models"]
    assert m["asynchronous"] is True
    assert model_line(m, "inferences") == (
        "summarise: inferences not counted by the kit: an asynchronous endpoint, for which SageMaker publishes no "
        "Invocations metric; its cost per million tokens is on its tokens line")
    assert model_line(m, "tokens") == ("summarise: Neuron $0.5940/M tokens recorded (the fleet's spend over its "
                                       "Tokens metric)")  # $44.55 / 75M tokens
    summary = summary_text(out)
    assert "None" not in summary and summary.count("0.5940") == 1


def test_a_real_time_model_with_no_invocations_says_so_never_none() -> None:
    m = {"model": "chat", "endpoint": "chat", "gpu_role": "baseline", "units": {"inferences": {
        "neuron_usd_per_million": None, "neuron_why_none": "no Neuron inferences recorded", "gpu_usd_per_million": None,
        "comparison": None, "why_none": "no GPU inferences recorded"}}}
    line = model_line(m, "inferences")
    assert "None" not in line
    assert line == ("chat: no Neuron cost per million inferences: no Neuron inferences recorded (its Invocations "
                    "metric), no GPU cost per million (no comparison: no GPU inferences recorded)")
