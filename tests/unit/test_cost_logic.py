"""Pure cost logic: families, ledger plans, verdict thresholds, the evaluation estimate and its CLI."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from neuronfleet import CATALOG
from neuronfleet.cli.main import main as cli
from neuronfleet.facts.prices import price_table
from neuronfleet.lambdas.cost.logic.block_amortisation import Block, amortise, use_of
from neuronfleet.lambdas.cost.logic.economics import Spend, verdict
from neuronfleet.lambdas.cost.logic.evaluation import estimate
from neuronfleet.lambdas.cost.logic.ledger import plan
from neuronfleet.lambdas.cost.logic.rows import CostRow, family_of, totals, usage_of


def row(instance_type: str, amount: str, hours: str = "0", service: str = "ec2", fleet: str = "f",
        usage: str | None = None) -> CostRow:
    return CostRow(day="2026-11-01", fleet=fleet, service=service, instance_type=instance_type,
                   family=family_of(instance_type) or "?", amount=Decimal(amount), usage_hours=Decimal(hours),
                   usage=usage or ("sagemaker-hosting" if service == "sagemaker" else "ec2"))


@pytest.mark.parametrize(("instance_type", "family"), [
    ("trn2u.48xlarge", "trainium"), ("trn1n.32xlarge", "trainium"), ("ml.inf2.xlarge", "inferentia"),
    ("inf2.48xlarge", "inferentia"), ("p5en.48xlarge", "gpu"), ("ml.g6e.12xlarge", "gpu"), ("m5.large", None),
    ("p6-b200.48xlarge", "gpu"), ("ml.p6e-gb200.36xlarge", "gpu"), ("c6-x.large", None), ("NoInstanceType", None)])
def test_family_of(instance_type: str, family: str | None) -> None:
    assert family_of(instance_type) == family


def test_every_catalog_type_has_its_catalog_family() -> None:
    assert list(CATALOG)
    for spec in CATALOG:
        assert family_of(spec.instance_type) == spec.family.value
        assert family_of(f"ml.{spec.instance_type}") == spec.family.value


def test_ledger_plan_new_replaced_unchanged() -> None:
    a, b = row("trn2.48xlarge", "10.00"), row("p5.48xlarge", "5.00")
    held = {a.key: {"amount": "10.00", "usage_hours": "0"}, b.key: {"amount": "4.00", "usage_hours": "0"}}
    c = row("inf2.xlarge", "1.00")
    p = plan([a, b, c], held)
    assert (p.new, p.replaced, p.unchanged) == ([c], [b], 1)


def _held(r: CostRow, **changes: Any) -> dict[str, Any]:
    from neuronfleet.lambdas.cost.logic.ledger import item

    return {**item(r, "t"), **changes}


@pytest.mark.parametrize(("changes", "replaced"), [
    ({}, False),
    ({"estimated": True}, True),            # estimated -> final, amount unchanged
    ({"usage_hours": "10"}, True),          # an hours-only correction
    ({"unblended": "9.00"}, True),          # an unblended-only correction
    ({"amount": "10.01"}, True),
])
def test_a_correction_of_any_field_is_rewritten(changes, replaced) -> None:
    """Before (mutants): a row whose amount was unchanged but whose Estimated flag flipped, or whose hours changed,
    was never rewritten."""
    final = CostRow(day="2026-11-01", fleet="f", service="ec2", instance_type="trn2.48xlarge", family="trainium",
                    amount=Decimal("10.00"), usage_hours=Decimal("12"), estimated=False,
                    usage_type="USE2-BoxUsage:trn2.48xlarge")
    p = plan([final], {final.key: _held(final, **changes)})
    assert (p.replaced, p.unchanged) == (([final], 0) if replaced else ([], 1))


def _fee_row(day: str, block: str, source_day: str, fleet: str = "f") -> CostRow:
    return CostRow(day=day, fleet=fleet, service="ec2", instance_type="trn2.48xlarge", family="trainium",
                   amount=Decimal("100"), usage_hours=Decimal(0), usage="capacity-block", source_day=source_day,
                   detail=block, usage_type="USE2-CapacityBlockFee:trn2.48xlarge")


def test_retraction_follows_the_fee_day_so_amortised_rows_of_a_block_bought_earlier_stay() -> None:
    """A block bought on 10-28 spreads its fee over 11-02..11-03; a November run (scope 11-01..11-03) does not see
    the fee (dated 10-28) and must keep those rows. Retracting by the row's own day (a mutant) deleted them; an
    amortised row whose fee day is in scope and was not produced again is retracted."""
    early = [_fee_row("2026-11-02", "cb-1", "2026-10-28"), _fee_row("2026-11-03", "cb-1", "2026-10-28")]
    gone = _fee_row("2026-11-03", "cb-2", "2026-11-01")
    ec2 = row("p5.48xlarge", "5")
    held = {r.key: _held(r) for r in [*early, gone, ec2]}
    p = plan([ec2], held, scope=["2026-11-01", "2026-11-02", "2026-11-03"], fleet="f")
    assert p.retracted == [gone.key] and p.unchanged == 1


def test_a_bad_row_keeps_what_the_ledger_knew_of_its_day_but_never_a_row_cloudwatch_refuses() -> None:
    known, other_day = row("p5.48xlarge", "5"), replace(row("p5.48xlarge", "7"), day="2026-11-02")
    poison = replace(row("trn2.48xlarge", "1"), usage_type="USE2-BoxUsage:trn2.48xlarge")
    held = {known.key: _held(known), other_day.key: _held(other_day), poison.key: _held(poison, amount="1E+400")}
    scope = ["2026-11-01", "2026-11-02"]
    p = plan([], held, scope=scope, bad_days={"2026-11-01"})
    assert (p.kept, sorted(p.retracted)) == (1, sorted([other_day.key, poison.key]))
    p = plan([], held, scope=scope, bad_days={""})  # a bad row of no known day: keep every readable row
    assert (p.kept, p.retracted) == (2, [poison.key])
    assert plan([], held, scope=scope).retracted == list(held)


def test_rows_of_one_key_twice_are_counted_as_duplicates_and_one_is_kept() -> None:
    a = row("p5.48xlarge", "5")
    p = plan([a, a], {})
    assert (p.new, p.duplicates) == ([a], 1)


def _block(block_id: str, count: int, start: datetime, hours: int = 24, created: datetime | None = None) -> Block:
    return Block(block_id, "trn2.48xlarge", count, start, start + timedelta(hours=hours), created=created or start)


def test_a_fee_shared_by_same_day_blocks_is_split_by_instance_hours() -> None:
    """Two blocks of one type start the same day, 24 h each, 1 and 3 instances: 25% and 75% of the fee. Ignoring
    the instance count (a mutant) split it 50/50."""
    start = datetime(2026, 11, 3, tzinfo=UTC)
    fee = _fee_row("2026-11-03", "", "2026-11-03")
    spread, unmatched = amortise([fee], [_block("cb-b", 3, start), _block("cb-a", 1, start)])
    assert unmatched == []
    assert {r.detail: r.amount for r in spread} == {"cb-a": Decimal("25.000000"), "cb-b": Decimal("75.000000")}
    hours = amortise([fee], [_block("cb-a", 2, start, hours=24), _block("cb-b", 1, start, hours=48)])[0]
    assert {r.detail: sum(x.amount for x in hours if x.detail == r.detail) for r in hours} == \
        {"cb-a": Decimal(50), "cb-b": Decimal(50)}  # 48 instance-hours each


def test_a_block_bought_ahead_is_paid_on_its_days_whichever_day_the_fee_is_dated() -> None:
    """The kit's rule (cloudcost-exporter: the fee on the block's start day; else the purchase day). A block bought
    on 11-01 for 11-10: a fee dated either day is spread over 11-10 and 11-11 and sums to the fee; a fee dated
    neither stays on its day as unmatched, never lost."""
    block = _block("cb-1", 1, datetime(2026, 11, 10, 12, tzinfo=UTC), created=datetime(2026, 11, 1, 9, tzinfo=UTC))
    for day in ("2026-11-10", "2026-11-01"):
        spread, unmatched = amortise([_fee_row(day, "", day)], [block])
        assert unmatched == [] and [(r.day, r.amount, r.source_day) for r in spread] == [
            ("2026-11-10", Decimal("50.000000"), day), ("2026-11-11", Decimal("50.000000"), day)]
    spread, unmatched = amortise([_fee_row("2026-11-05", "", "2026-11-05")], [block])
    assert spread == [] and [(r.day, r.amount, r.detail) for r in unmatched] == [("2026-11-05", Decimal(100),
                                                                                 "unmatched")]


def test_unused_reservation_hours_are_spend_but_not_hours_a_block_was_used() -> None:
    start = datetime(2026, 11, 3, tzinfo=UTC)
    block = replace(_block("cb-1", 1, start), tags={"neuronfleet:fleet": "f"})
    ran = replace(row("trn2.48xlarge", "0", hours="20"), day="2026-11-03", usage_type="USE2-BoxUsage:trn2.48xlarge")
    unused = replace(ran, usage_type="USE2-UnusedBox:trn2.48xlarge", amount=Decimal("30"), usage_hours=Decimal(4))
    old = replace(ran, usage_type="", usage_hours=Decimal(1))  # a row from before usage types were kept: run time
    (use,) = use_of([block], [ran, unused, old], [])
    assert use.used_instance_hours == Decimal(21)
    assert totals([ran, unused])[("2026-11-03", "f", "trainium")] == Decimal(30)
    assert usage_of("USE2-UnusedBox:trn2.48xlarge") == usage_of("USE2-UnusedDed:trn2.48xlarge") == \
        ("ec2", "trn2.48xlarge")


@pytest.mark.parametrize(("monthly", "expected"), [
    ("9999.99", "at most $10,000 a month (a monthly rate from 30 recorded days), where the migration guide (quoted) "
                "says the migration effort may not pay back yet"),
    ("10000.00", "at most $10,000 a month (a monthly rate from 30 recorded days), where the migration guide (quoted) "
                 "says the migration effort may not pay back yet"),  # the guide's mark is "over" $10,000: not reached
    ("100000.00", "over $10,000 a month (a monthly rate from 30 recorded days), where the migration guide (quoted) "
                  "says migrating inference pays"),  # over $10,000, not over $100,000
    ("10000.01", "over $10,000 a month (a monthly rate from 30 recorded days), where the migration guide (quoted) "
                 "says migrating inference pays"),
    ("100000.01", "over $100,000 a month (a monthly rate from 30 recorded days), the migration guide (quoted) mark "
                  "for a large migration; what it would cost on Neuron is the evaluation estimate's figure"),
])
def test_verdict_thresholds(monthly: str, expected: str) -> None:
    # GPU inference spend that could move (inf2 spend is already on Neuron: test_unit_economics.py)
    (line,) = verdict(Spend.of([row("ml.g6e.xlarge", monthly, service="sagemaker")]), days=30)
    assert expected in line
    assert "%" not in line  # the guide's expected savings (40-50 %, 30-50 %) are never stated as the kit's


def test_training_verdict_only_with_gpu_training_spend() -> None:
    assert len(verdict(Spend.of([row("trn2.48xlarge", "100")]), 30)) == 1
    (_, training) = verdict(Spend.of([row("p5.48xlarge", "300")]), 10)
    assert training.startswith("Training: GPU training work outside the fleet's GPU pool could move to Trainium; the "
                               "kit claims no saving for it until a throughput ratio is measured")
    assert "%" not in training and "$" not in training


def test_estimate_uses_hours_and_names_its_prices() -> None:
    from neuronfleet.facts.catalog import accelerators_of
    from neuronfleet.lambdas.cost.logic.evaluation import Declared

    prices = price_table()
    # EC2 rows say nothing of their workload: declared training here (undeclared, they are "unknown": test_cli)
    result = estimate([row("p5.48xlarge", "5504.00", hours="100"), row("g6e.xlarge", "18.61"),
                       row("g4dn.xlarge", "50.00")], prices, accelerators=accelerators_of(CATALOG),
                      declared=Declared(every="training"))
    by_type = {line["gpu_type"]: line for line in result["lines"]}
    trn2 = CATALOG.get("trn2.48xlarge").price
    assert by_type["p5.48xlarge"]["neuron_type"] == "trn2.48xlarge"  # 1,536 GiB >= p5's 640; trn1 (512) too small
    assert by_type["p5.48xlarge"]["neuron_estimate_usd"] == str((Decimal(str(trn2.usd_per_hour)) * 100).quantize(
        Decimal("0.01")))
    assert by_type["p5.48xlarge"]["throughput"].startswith("assumed: 1 Neuron instance per GPU instance")
    assert by_type["p5.48xlarge"]["neuron_price"]["source"].startswith("unsourced: no public On-Demand rate")
    assert by_type["p5.48xlarge"]["neuron_price"]["sourced"] == "false"
    assert by_type["p5.48xlarge"]["gpu_price"]["source"] == CATALOG.get("p5.48xlarge").price.source
    assert by_type["p5.48xlarge"]["neuron_price"]["as_of"] == trn2.as_of.isoformat()
    # no usage hours: spend / the GPU list price (18.61 / 1.861 = 10 h); training work: the cheapest training type with
    # >= 44 GiB, trn2.3xlarge (one Trainium2 chip, 96 GiB; its price unsourced, and the line says so)
    assert by_type["g6e.xlarge"]["instance_hours"] == "10.00"
    assert by_type["g6e.xlarge"]["neuron_type"] == "trn2.3xlarge"
    assert by_type["g6e.xlarge"]["neuron_price"]["sourced"] == "false"
    assert result["not_estimated"] == {"g4dn.xlarge": "50.00"}
    # no hours and no catalog price (nor memory) for g4dn.xlarge: said, never guessed
    assert result["not_estimated_why"]["g4dn.xlarge"] == "no usage hours and no price for g4dn.xlarge"


def test_estimate_cli_reads_a_csv(tmp_path, capsys) -> None:
    csv = tmp_path / "gpu.csv"
    csv.write_text("instance_type,amount_usd,hours,workload\np5.48xlarge,5504.00,100,training\n"
                   "g6e.48xlarge,301.31,10,inference\n")
    assert cli(["estimate", "--csv", str(csv), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["gpu_spend_usd"] == "5805.31"
    # inference to an inference type with enough memory (inf2.48xlarge 384 GiB >= 357), training to training
    assert [(line["neuron_type"], line["workload"]) for line in result["lines"]] == [
        ("inf2.48xlarge", "inference"), ("trn2.48xlarge", "training")]
    assert cli(["estimate", "--csv", str(csv)]) == 0
    assert "total of the declared lines: GPU $5805.31 -> Neuron $" in capsys.readouterr().out


def test_estimate_cli_rejects_a_bad_csv_naming_line_field_and_value(tmp_path, capsys) -> None:
    csv = tmp_path / "gpu.csv"
    csv.write_text("instance_type,amount_usd,hours\ntrn2.48xlarge,1,1\n")  # not GPU spend: skipped and counted
    assert cli(["estimate", "--csv", str(csv)]) == 0
    assert "skipped 1 row(s), $1.00: already on Neuron" in capsys.readouterr().out
    csv.write_text("instance_type,amount_usd,hours\np5.48xlarge,lots,1\n")
    assert cli(["estimate", "--csv", str(csv)]) == 2
    assert "gpu.csv: the spend CSV: line 2: amount_usd: got 'lots'; allowed: a decimal number" in capsys.readouterr().err
    csv.write_text("instance_type,amount_usd,hours\np5.48xlarge,10,NaN\n")  # used to end in a traceback
    assert cli(["estimate", "--csv", str(csv)]) == 2
    assert "gpu.csv: the spend CSV: line 2: hours: got 'NaN'; allowed: a decimal number" in capsys.readouterr().err


def test_fleet_price_overrides_reach_the_estimate(tmp_path, capsys) -> None:
    from tests.unit.test_config import BASE

    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(json.dumps({**BASE, "prices": {"trn2.48xlarge": {"usd_per_hour": 30, "source": "EDP",
                                                                      "as_of": "2026-10-01"}}}))
    csv = tmp_path / "gpu.csv"
    csv.write_text("instance_type,amount_usd,hours,workload\np5.48xlarge,5504.00,100,training\n")
    assert cli(["estimate", "--csv", str(csv), "--fleet", str(fleet), "--json"]) == 0
    (line,) = json.loads(capsys.readouterr().out)["lines"]
    assert (line["neuron_estimate_usd"], line["neuron_price"]["source"]) == ("3000.00", "EDP")


def test_a_wrong_cost_basis_names_the_field_the_value_and_what_is_allowed(tmp_path) -> None:
    from neuronfleet import FleetConfigError, load_fleet
    from neuronfleet_contract.cost import CollectorConfig
    from neuronfleet_contract.environment import InvalidEnvironment
    from tests.unit.test_config import BASE

    with pytest.raises(InvalidEnvironment, match=re.escape("COST_BASIS: got 'gross'; allowed: net_amortized | unblended")):
        CollectorConfig.from_environment({"LEDGER_TABLE": "t", "INSTANCE_TYPES": '["trn2.48xlarge"]',
                                          "COST_BASIS": "gross"})
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(json.dumps({**BASE, "cost_monitors": {"basis": "gross"}}))
    with pytest.raises(FleetConfigError) as err:
        load_fleet(fleet)
    text = str(err.value)
    assert "cost_monitors.basis" in text and "'gross'" in text and "net_amortized" in text and "unblended" in text


def test_sagemaker_rows_are_never_priced_at_ec2_rates_and_any_type_can_be_overridden(tmp_path) -> None:
    from datetime import date

    from neuronfleet.facts.prices import price_table, sagemaker_types

    table = price_table()
    # a SageMaker rate is built in for ml.inf2.xlarge (an AWS sample's, quoted), none for ml.g6e.xlarge: its row has
    # no price and no hours, so it cannot be estimated, and never at the EC2 rate of g6e.xlarge
    assert table["ml.inf2.xlarge"]["source"] != table["inf2.xlarge"]["source"] and "ml.g6e.xlarge" not in table
    from neuronfleet.facts.catalog import accelerators_of

    acc = accelerators_of(CATALOG)
    result = estimate([row("ml.g6e.xlarge", "18.61", service="sagemaker")], table, accelerators=acc)
    assert result["lines"] == [] and result["not_estimated"] == {"ml.g6e.xlarge": "18.61"}
    priced = price_table(overrides={"ml.g6e.xlarge": {"usd_per_hour": 2.0, "source": "our EDP sheet",
                                                      "as_of": date(2026, 11, 1)},
                                    "ml.inf2.24xlarge": {"usd_per_hour": 1.0, "source": "our EDP sheet",
                                                         "as_of": date(2026, 11, 1)}}, region="us-west-2")
    (line,) = estimate([row("ml.g6e.xlarge", "20.00", hours="10", service="sagemaker")], priced,
                       accelerators=acc)["lines"]
    assert (line["neuron_type"], line["neuron_estimate_usd"]) == ("ml.inf2.24xlarge", "10.00")
    assert "ml.inf2.xlarge" in sagemaker_types()
    from neuronfleet import FleetConfigError, load_fleet
    from tests.unit.test_config import BASE

    edp = {"usd_per_hour": 1, "source": "EDP", "as_of": "2026-10-01"}
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(json.dumps({**BASE, "prices": {"ml.inf2.xlarge": edp}}))
    assert dict(load_fleet(fleet).prices)["ml.inf2.xlarge"].usd_per_hour == 1
    fleet.write_text(json.dumps({**BASE, "prices": {"ml.m5.large": edp}}))
    with pytest.raises(FleetConfigError, match=r"prices\.ml\.m5\.large.*ml\.inf2\.xlarge"):
        load_fleet(fleet)


def test_price_notes_mark_unsourced_other_region_and_stale_prices_in_one_line() -> None:
    from datetime import date

    from neuronfleet.facts.prices import price_table
    from neuronfleet.lambdas.cost.logic.economics import price_notes

    (line,) = price_notes(price_table(region="us-west-2"), today=date(2026, 11, 22), stale_after_days=180)
    assert "unsourced (no public source): catalog: " in line and "trn2.48xlarge" in line
    assert "read in another region than the fleet's (" in line and "us-east-2" in line
    # the oldest: the SageMaker rates quoted from an AWS sample (2025-01-26); trn2.48xlarge's 2025-10-01 figure
    assert "stale (read over 180 days ago, the oldest on 2025-01-26): catalog: " in line
    stale = line.split(" stale ")[1].split(";")[0]
    assert "ml.inf2.48xlarge" in stale and "trn2.48xlarge" in stale and ", p5.48xlarge" not in stale
    (fresh,) = price_notes(price_table(region="us-east-2"), today=date(2026, 7, 21), stale_after_days=180)
    stale = fresh.split(" stale ")[1].split(";")[0].split(": ", 1)[1].split(", ")
    assert "p5.48xlarge" not in stale and "ml.p5.48xlarge" in stale  # the EC2 rate read 2026-07-20: fresh


class _Pages:
    """A GetCostAndUsage client answering empty pages with the given next-page tokens, in order."""

    def __init__(self, tokens: list[Any]) -> None:
        self.tokens, self.calls = list(tokens), []  # type: list[Any], list[dict[str, Any]]

    def get_cost_and_usage(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        token = self.tokens.pop(0)
        return {"ResultsByTime": [], **({"NextPageToken": token} if token is not None else {})}


def _read(tokens: list[Any], **options: Any) -> tuple[Any, _Pages]:
    from datetime import date

    from neuronfleet.lambdas.cost.adapters.cost_explorer import CostExplorer

    client = _Pages(tokens)
    ce = CostExplorer(client, sleep=lambda s: None, **options)
    return (list(ce.pages(date(2026, 11, 1), date(2026, 11, 4), ["trn2.48xlarge"])), ce), client


def test_a_repeated_page_token_stops_the_query_loudly_naming_it() -> None:
    """Before: a token Cost Explorer repeats was followed until the Lambda timed out, $0.01 a request."""
    from neuronfleet.lambdas.cost.logic.paging import PagingError

    with pytest.raises(PagingError, match=r"Cost Explorer GetCostAndUsage: next-page token 'tok-b' repeated after "
                                          r"page 3 \(\$0\.03 at \$0\.01 a page\)") as err:
        _read(["tok-a", "tok-b", "tok-b", None])
    assert "stopped" in str(err.value)
    with pytest.raises(PagingError, match="token 'tok-a' repeated after page 3"):  # a cycle, not only a repeat
        _read(["tok-a", "tok-b", "tok-a", None])
    with pytest.raises(PagingError, match="next-page token got 7 after page 1; allowed: a string"):
        _read([7])


def test_the_page_cap_is_500_pages_and_every_page_is_counted() -> None:
    """Boundary: exactly 500 pages with no further token is a complete answer; a token on the 500th page stops the
    query ($5.00 spent) instead of following it to the Lambda's timeout."""
    from neuronfleet.lambdas.cost.adapters.cost_explorer import MAX_PAGES, USD_PER_REQUEST
    from neuronfleet.lambdas.cost.logic.paging import PagingError

    assert (MAX_PAGES, str(USD_PER_REQUEST)) == (500, "0.01")
    (pages, ce), client = _read([f"t{i}" for i in range(499)] + [None])
    assert (len(pages), ce.pages_read, ce.requests, len(client.calls)) == (500, 500, 500, 500)
    assert client.calls[1]["NextPageToken"] == "t0" and "NextPageToken" not in client.calls[0]
    with pytest.raises(PagingError, match=r"stopped at the cap of 500 pages \(\$5\.00 at \$0\.01 a page\) with more "
                                          r"to read \(next-page token 't499'\)"):
        _read([f"t{i}" for i in range(500)] + [None])
    (pages, ce), _ = _read(["a", "b", None], max_pages=3)
    assert len(pages) == 3
    with pytest.raises(PagingError, match="cap of 2 pages"):
        _read(["a", "b", None], max_pages=2)


def test_a_repeated_get_metric_data_token_stops_the_report_naming_it() -> None:
    from neuronfleet.lambdas.cost.adapters.work import Work
    from neuronfleet.lambdas.cost.logic.paging import PagingError

    class Looping:
        calls = 0

        def get_metric_data(self, **kwargs: Any) -> dict[str, Any]:
            Looping.calls += 1
            return {"MetricDataResults": [], "NextToken": "again"}

    start = datetime(2026, 11, 1, tzinfo=UTC)
    with pytest.raises(PagingError, match="CloudWatch GetMetricData: next-page token 'again' repeated after page 2"):
        Work(Looping()).invocations(["chat"], start, start + timedelta(days=1))
    assert Looping.calls == 2
