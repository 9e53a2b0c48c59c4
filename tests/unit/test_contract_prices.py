"""The built-in price table and accelerator map in one home (neuronfleet_contract/data/*.json): the catalog and the
construct side's price table read them, every function's code ships them, and a function's environment carries only
what differs (neuronfleet_contract.prices / .accelerators: carried, merged)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from datetime import date
from fnmatch import fnmatch
from pathlib import Path

import pytest

from neuronfleet.core.assets import asset_files, handler_packages, stage
from neuronfleet.facts.catalog import CATALOG, AcceleratorFamily, InstanceCatalog, InstanceSpec, Price, accelerators_of
from neuronfleet.facts.prices import price_table
from neuronfleet_contract import accelerators, prices
from neuronfleet_contract.cost import ReportConfig, _prices

ROOT = Path(__file__).resolve().parents[2]
DATA = ("neuronfleet_contract/data/prices.json", "neuronfleet_contract/data/accelerators.json")
REGIONS = [None, "us-east-2", "us-east-1", "sa-east-1"]
OVERRIDES = {"p5.48xlarge": {"usd_per_hour": "31.464", "source": "our EDP", "as_of": "2026-11-01"},
             "ml.g6e.xlarge": {"usd_per_hour": "2.0", "source": "our quote", "as_of": date(2026, 11, 2)}}


@pytest.mark.parametrize("region", REGIONS)
def test_the_built_in_table_is_the_catalogs_price_table(region: str | None) -> None:
    """What a function builds from its code equals what the constructs build from the catalog, entry by entry and in
    the same order: for a fleet that overrides nothing, nothing is left to carry."""
    table = price_table(CATALOG, region)
    assert prices.builtin_table(region) == table and list(prices.builtin_table(region)) == list(table)
    assert prices.carried(table, region) == {}


def test_the_catalogs_prices_come_from_the_one_file() -> None:
    ec2 = prices.data()["ec2"]
    assert list(ec2) == list(CATALOG.types())  # every catalog type priced there, and nothing else
    for spec in CATALOG:
        p = ec2[spec.instance_type]
        assert spec.price == Price(usd_per_hour=float(p["usd_per_hour"]), source=p["source"],
                                   as_of=date.fromisoformat(p["as_of"]), region=p["region"])
        assert str(spec.price.usd_per_hour) == p["usd_per_hour"]  # the table's text is the file's
    assert not (ROOT / "constructs/neuronfleet/facts/data/prices.json").exists()  # no second copy


def test_the_catalogs_accelerators_come_from_the_one_file() -> None:
    assert accelerators.builtin() == accelerators_of(CATALOG)
    assert list(accelerators.data()["types"]) == list(CATALOG.types())
    assert {a[0] for a in accelerators.builtin().values()} == {f.value for f in AcceleratorFamily}


@pytest.mark.parametrize("region", REGIONS)
def test_only_the_overrides_are_carried_and_merging_gives_the_table_back(region: str | None) -> None:
    table = price_table(CATALOG, region, OVERRIDES)
    carried = prices.carried(table, region)
    assert sorted(carried) == sorted(OVERRIDES)
    assert carried["ml.g6e.xlarge"]["as_of"] == "2026-11-02" and carried["p5.48xlarge"]["override"] == "true"
    assert prices.merged(carried, region) == table


def test_a_carried_entry_replaces_the_built_in_one_whole_and_the_copy_is_the_callers() -> None:
    given = {"p5.48xlarge": {"usd_per_hour": "1", "source": "x", "as_of": "2026-01-01"}}
    out = prices.merged(given, "us-east-2")
    assert out["p5.48xlarge"] == given["p5.48xlarge"]  # no "sourced" or "region" left over from the built-in entry
    assert out["p5.48xlarge"] is not given["p5.48xlarge"]
    out["trn1.2xlarge"]["usd_per_hour"] = "0"
    assert prices.builtin_table("us-east-2")["trn1.2xlarge"]["usd_per_hour"] == "1.34375"


def test_a_catalog_of_ones_own_travels_as_its_differences() -> None:
    custom = InstanceSpec(instance_type="x9.large", family=AcceleratorFamily.GPU, accelerator_name="X",
                          accelerators=1, neuron_cores=0, accelerator_memory_gib=24, vcpus=4, memory_gib=16,
                          instance_storage_gb=0, network_cards=1, efa_interfaces=0, network_bandwidth_gbps=10.0,
                          price=Price(usd_per_hour=1.5, source="s", as_of=date(2026, 11, 1)))
    catalog = InstanceCatalog((*CATALOG, custom)).with_prices(
        {"inf2.xlarge": Price(usd_per_hour=0.5, source="t", as_of=date(2026, 11, 1))})
    table = price_table(catalog, "us-east-2")
    assert sorted(prices.carried(table, "us-east-2")) == ["inf2.xlarge", "x9.large"]
    assert accelerators.carried(accelerators_of(catalog)) == {"x9.large": ("gpu", 24)}
    assert accelerators.merged(accelerators.carried(accelerators_of(catalog))) == accelerators_of(catalog)


def test_the_report_environment_carries_the_overrides_only_and_reads_back_the_whole_table() -> None:
    table = price_table(CATALOG, "us-east-2", OVERRIDES)
    settings = ReportConfig(fleet="nf-prod", ledger_table="t", report_bucket="b", topic_arn="arn:aws:sns:x:1:t",
                            prices=table, price_region="us-east-2", accelerators=accelerators_of(CATALOG))
    env = settings.to_environment()
    assert _prices(json.loads(env["PRICES"])) == prices.carried(table, "us-east-2")
    assert (env["ACCELERATORS"], env["PRICE_REGION"]) == ("{}", "us-east-2")
    back = ReportConfig.from_environment(env)
    assert back == settings and back.prices == table and back.accelerators == accelerators_of(CATALOG)
    assert len(env["PRICES"]) < 400  # two entries, not the table's 3 KB
    assert "PRICE_REGION" not in ReportConfig(fleet="f", ledger_table="t", report_bucket="b", topic_arn="a",
                                              prices={}).to_environment()


def test_every_functions_asset_and_the_wheel_ship_the_data() -> None:
    assert DATA and handler_packages()
    for package in handler_packages():
        assert set(DATA) <= set(asset_files(package)), package
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for name in DATA:
        inside = name.removeprefix("neuronfleet_contract/")
        assert any(fnmatch(inside, glob) for glob in data["neuronfleet_contract"]), name


@pytest.mark.slow
def test_a_staged_report_asset_loads_the_table_from_its_own_code(tmp_path: Path) -> None:
    """Deployed, the report reads the file from its code root: a fresh interpreter in the staged folder builds the
    same table as the library does, without the library."""
    folder = stage("cost", into=tmp_path)
    code = ("import sys, json; from neuronfleet_contract import prices, accelerators; "
            "assert prices.__file__.startswith(sys.argv[1]), prices.__file__; "
            "assert not [m for m in sys.modules if m.split('.')[0] == 'neuronfleet']; "
            "print(json.dumps([prices.builtin_table('us-east-2'), accelerators.builtin()]))")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHONPATH"))}
    out = subprocess.run([sys.executable, "-c", code, str(folder)], cwd=folder, env=env, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    table, accel = json.loads(out.stdout)
    assert table == price_table(CATALOG, "us-east-2")
    assert {t: tuple(a) for t, a in accel.items()} == accelerators_of(CATALOG)
