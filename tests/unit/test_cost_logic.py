"""Pure cost logic: families, ledger plans, verdict thresholds, the evaluation estimate and its CLI."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest

from neuronfleet import CATALOG
from neuronfleet.estimate import main as estimate_cli
from neuronfleet.estimate import price_table
from neuronfleet.lambdas.cost.economics import Spend, estimate, verdict
from neuronfleet.lambdas.cost.ledger import plan
from neuronfleet.lambdas.cost.rows import CostRow, family_of


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
    for spec in CATALOG:
        assert family_of(spec.instance_type) == spec.family.value
        assert family_of(f"ml.{spec.instance_type}") == spec.family.value


def test_ledger_plan_new_replaced_unchanged() -> None:
    a, b = row("trn2.48xlarge", "10.00"), row("p5.48xlarge", "5.00")
    held = {a.key: {"amount": "10.00", "usage_hours": "0"}, b.key: {"amount": "4.00", "usage_hours": "0"}}
    c = row("inf2.xlarge", "1.00")
    p = plan([a, b, c], held)
    assert (p.new, p.replaced, p.unchanged) == ([c], [b], 1)


@pytest.mark.parametrize(("monthly", "expected"), [
    ("9999.99", "under $10,000: migration effort may not pay back yet"),
    ("10000.01", "over $10,000: migrating inference pays"),
    ("100000.01", "over $100,000: expect 40-50% lower cost on Inferentia2"),
])
def test_verdict_thresholds(monthly: str, expected: str) -> None:
    # GPU inference spend that could move (inf2 spend is already on Neuron: test_unit_economics.py)
    lines = verdict(Spend.of([row("ml.g6e.xlarge", monthly, service="sagemaker")]), days=30)
    assert expected in lines[0]


def test_training_verdict_only_with_gpu_training_spend() -> None:
    assert len(verdict(Spend.of([row("trn2.48xlarge", "100")]), 30)) == 1
    (_, training) = verdict(Spend.of([row("p5.48xlarge", "300")]), 10)
    assert training.startswith("GPU training spend $900.00/month (monthly rate from 10 recorded days): expect 30-50% "
                               "lower cost on Trainium")


def test_estimate_uses_hours_and_names_its_prices() -> None:
    from neuronfleet.cost import accelerators_of

    prices = price_table()
    result = estimate([row("p5.48xlarge", "5504.00", hours="100"), row("g6e.xlarge", "18.61"),
                       row("g4dn.xlarge", "50.00")], prices, accelerators=accelerators_of(CATALOG))
    by_type = {line["gpu_type"]: line for line in result["lines"]}
    trn2 = CATALOG.get("trn2.48xlarge").price
    assert by_type["p5.48xlarge"]["neuron_type"] == "trn2.48xlarge"  # 1,536 GiB >= p5's 640; trn1 (512) too small
    assert by_type["p5.48xlarge"]["neuron_estimate_usd"] == str((Decimal(str(trn2.usd_per_hour)) * 100).quantize(
        Decimal("0.01")))
    assert by_type["p5.48xlarge"]["throughput"].startswith("assumed: 1 Neuron instance-hour per GPU instance-hour")
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
    assert result["not_estimated_why"]["g4dn.xlarge"].startswith("g4dn.xlarge: accelerator memory unknown")


def test_estimate_cli_reads_a_csv(tmp_path, capsys) -> None:
    csv = tmp_path / "gpu.csv"
    csv.write_text("instance_type,amount_usd,hours,workload\np5.48xlarge,5504.00,100,training\n"
                   "g6e.48xlarge,301.31,10,inference\n")
    assert estimate_cli(["--csv", str(csv), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["gpu_spend_usd"] == "5805.31"
    # inference to an inference type with enough memory (inf2.48xlarge 384 GiB >= 357), training to training
    assert [(line["neuron_type"], line["workload"]) for line in result["lines"]] == [
        ("inf2.48xlarge", "inference"), ("trn2.48xlarge", "training")]
    assert estimate_cli(["--csv", str(csv)]) == 0
    assert "total: GPU $5805.31 -> Neuron $" in capsys.readouterr().out


def test_estimate_cli_rejects_a_bad_csv_naming_line_field_and_value(tmp_path, capsys) -> None:
    csv = tmp_path / "gpu.csv"
    csv.write_text("instance_type,amount_usd,hours\ntrn2.48xlarge,1,1\n")
    assert estimate_cli(["--csv", str(csv)]) == 2
    assert "gpu.csv:2: instance_type: got 'trn2.48xlarge'; allowed: a GPU type" in capsys.readouterr().err
    csv.write_text("instance_type,amount_usd,hours\np5.48xlarge,lots,1\n")
    assert estimate_cli(["--csv", str(csv)]) == 2
    assert "amount_usd/hours: got 'lots'/'1'; allowed: decimal numbers" in capsys.readouterr().err
    csv.write_text("instance_type,amount_usd,hours\np5.48xlarge,10,NaN\n")  # used to end in a traceback
    assert estimate_cli(["--csv", str(csv)]) == 2
    assert "gpu.csv:2: hours: got 'NaN'; allowed: a finite number >= 0" in capsys.readouterr().err


def test_fleet_price_overrides_reach_the_estimate(tmp_path, capsys) -> None:
    from tests.unit.test_config import BASE

    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(json.dumps({**BASE, "prices": {"trn2.48xlarge": {"usd_per_hour": 30, "source": "EDP",
                                                                      "as_of": "2026-10-01"}}}))
    csv = tmp_path / "gpu.csv"
    csv.write_text("instance_type,amount_usd,hours\np5.48xlarge,5504.00,100\n")
    assert estimate_cli(["--csv", str(csv), "--fleet", str(fleet), "--json"]) == 0
    (line,) = json.loads(capsys.readouterr().out)["lines"]
    assert (line["neuron_estimate_usd"], line["neuron_price"]["source"]) == ("3000.00", "EDP")


def test_a_wrong_cost_basis_names_the_field_the_value_and_what_is_allowed(tmp_path) -> None:
    from neuronfleet import FleetConfigError, load_fleet
    from neuronfleet.lambdas.cost.settings import CollectorSettings
    from neuronfleet.lambdas.environment import InvalidEnvironment
    from tests.unit.test_config import BASE

    with pytest.raises(InvalidEnvironment, match=re.escape("COST_BASIS: got 'gross'; allowed: net_amortized | unblended")):
        CollectorSettings.from_environment({"LEDGER_TABLE": "t", "INSTANCE_TYPES": '["trn2.48xlarge"]',
                                            "COST_BASIS": "gross"})
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(json.dumps({**BASE, "cost_monitors": {"basis": "gross"}}))
    with pytest.raises(FleetConfigError) as err:
        load_fleet(fleet)
    text = str(err.value)
    assert "cost_monitors.basis" in text and "'gross'" in text and "net_amortized" in text and "unblended" in text


def test_sagemaker_rows_are_never_priced_at_ec2_rates_and_any_type_can_be_overridden(tmp_path) -> None:
    from datetime import date

    from neuronfleet.prices import price_table, sagemaker_types

    table = price_table()
    assert "ml.inf2.xlarge" not in table  # no built-in SageMaker rate: none could be confirmed
    from neuronfleet.cost import accelerators_of

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

    from neuronfleet.lambdas.cost.economics import price_notes
    from neuronfleet.prices import price_table

    (line,) = price_notes(price_table(region="us-west-2"), today=date(2026, 11, 22), stale_after_days=180)
    assert "unsourced (no public source): catalog: " in line and "trn2.48xlarge" in line
    assert "read in another region than the fleet's (" in line and "us-east-2" in line
    assert "stale (read over 180 days ago, the oldest on 2025-10-01): catalog: " in line
    assert "p5.48xlarge" in line.split(" stale ")[1].split(";")[0]
    (fresh,) = price_notes(price_table(region="us-east-2"), today=date(2025, 10, 2), stale_after_days=180)
    assert "p5.48xlarge" not in fresh and " stale " not in fresh  # only the unsourced ones remain
