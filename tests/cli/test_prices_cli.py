"""``neuronfleet prices refresh`` (neuronfleet/cli/prices.py) and the cache ``neuronfleet estimate`` reads
(neuronfleet.facts.prices.refreshed_price_table). No AWS account here: the pricing client is botocore's Stubber, its
answers AWS's own GetProducts example (tests/data/pricing) with only the named fields changed, as in
tests/unit/test_price_list.py."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from neuronfleet import CATALOG
from neuronfleet.cli.main import main
from neuronfleet.cli.output import BAD_INPUT, OK
from neuronfleet.cli.prices import default_cache_path
from neuronfleet.facts.catalog import Price
from neuronfleet.facts.prices import PriceCacheError, price_table, refreshed_price_table, sagemaker_types
from neuronfleet.lambdas.cost.logic.pricelist import EC2_FILTERS, filters
from tests.unit.test_price_list import derived

REGION = "us-east-2"
TYPES = sorted({*CATALOG.types(), *sagemaker_types()})


def _params(instance_type: str) -> dict[str, Any]:
    service = "AmazonSageMaker" if instance_type.startswith("ml.") else "AmazonEC2"
    return {"ServiceCode": service, "Filters": filters(instance_type, REGION), "FormatVersion": "aws_v1",
            "MaxResults": 100}


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    client = boto3.client("pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    monkeypatch.setattr("neuronfleet.cli.prices._client", lambda region: (client, "us-east-1"))
    monkeypatch.setenv("NEURONFLEET_PRICE_CACHE", str(tmp_path / "cache"))
    with Stubber(client) as stub:
        yield stub, tmp_path / "cache" / f"prices-{REGION}.json"


def test_refresh_reads_every_type_and_writes_the_dated_cache(stubbed: Any, capsys: pytest.CaptureFixture[str]) -> None:
    stub, path = stubbed
    answers = {
        "trn1.32xlarge": derived(sku="SKUTRN1", attributes={"instanceType": "trn1.32xlarge", "regionCode": REGION,
                                                              **EC2_FILTERS}, prices={"USD": "21.5000000000"}),
        "ml.inf2.xlarge": derived(sku="SKUSM", attributes={"instanceName": "ml.inf2.xlarge", "regionCode": REGION,
                                                            "component": "Hosting"}, prices={"USD": "0.9900000000"}),
    }
    for t in TYPES:  # LivePrices asks the types in sorted order, one request each
        stub.add_response("get_products", {"FormatVersion": "aws_v1",
                                           "PriceList": [answers[t]] if t in answers else []}, _params(t))
    assert main(["prices", "refresh", "--region", REGION]) == OK
    stub.assert_no_pending_responses()
    out = capsys.readouterr().out
    assert out.startswith(f"2 of {len(TYPES)} prices read live for {REGION} ({len(TYPES)} GetProducts requests to "
                          f"us-east-1); written to {path}")
    doc = json.loads(path.read_text())
    assert (doc["format"], doc["region"], doc["endpoint"]) == ("neuronfleet-prices/1", REGION, "us-east-1")
    assert doc["prices"]["trn1.32xlarge"]["usd_per_hour"] == "21.5"
    assert doc["prices"]["ml.inf2.xlarge"]["source"].startswith("AWS Price List Query API (pricing:GetProducts "
                                                                 "AmazonSageMaker, SageMaker Hosting, us-east-2")
    assert len(doc["failed"]) == len(TYPES) - 2
    # what estimate uses: the cached live prices over the built-in ones, the fleet file's overrides over both
    ours = Price(usd_per_hour=18.0, source="EDP 2026", as_of=date(2026, 10, 1))
    table, note = refreshed_price_table(region=REGION, overrides={"trn1.32xlarge": ours},
                                        cache_file=default_cache_path(REGION))
    assert (table["trn1.32xlarge"]["usd_per_hour"], table["trn1.32xlarge"]["origin"]) == ("18.0", "override")
    assert (table["ml.inf2.xlarge"]["usd_per_hour"], table["ml.inf2.xlarge"]["origin"]) == ("0.99", "live")
    assert (table["inf2.xlarge"]["usd_per_hour"], table["inf2.xlarge"]["origin"]) == ("0.7582", "catalog")
    assert note.startswith("1 live prices from `neuronfleet prices refresh` of ") and str(path) in note


def test_denied_credentials_are_one_line_naming_what_failed_and_nothing_is_written(
        stubbed: Any, capsys: pytest.CaptureFixture[str]) -> None:
    stub, path = stubbed
    stub.add_client_error("get_products", service_error_code="AccessDeniedException",
                          service_message="User is not authorized to perform: pricing:GetProducts",
                          http_status_code=400, expected_params=_params(TYPES[0]))
    assert main(["prices", "refresh", "--region", REGION]) == BAD_INPUT
    err = capsys.readouterr().err
    assert "AccessDeniedException" in err and "AWS said: User is not authorized to perform: pricing:GetProducts" in err
    assert "credentials allowed pricing:GetProducts" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2 and not path.exists()


def test_a_region_without_a_price_list_endpoint_is_refused_before_any_request(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prices", "refresh", "--region", "us-gov-west-1"]) == BAD_INPUT
    err = capsys.readouterr().err
    assert "us-gov-west-1" in err and "no Price List Query API endpoint" in err and "Traceback" not in err


def test_no_cache_is_the_built_in_table_and_a_bad_cache_names_file_and_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURONFLEET_PRICE_CACHE", str(tmp_path))
    table, note = refreshed_price_table(region=REGION, cache_file=default_cache_path(REGION))
    assert (table, note) == (price_table(region=REGION), "")
    bad = tmp_path / f"prices-{REGION}.json"
    bad.write_text(json.dumps({"format": "neuronfleet-prices/1", "region": REGION, "read_at": "2026-11-28T00:00:00",
                               "prices": {"inf2.xlarge": {"usd_per_hour": "abc", "source": "s", "as_of": "x"}}}))
    with pytest.raises(PriceCacheError, match=r"prices\.inf2\.xlarge\.usd_per_hour is 'abc', expected a number > 0"):
        refreshed_price_table(region=REGION, cache_file=default_cache_path(REGION))
    bad.write_text(json.dumps({"format": "neuronfleet-prices/1", "region": "eu-west-1", "read_at": "x", "prices": {}}))
    with pytest.raises(PriceCacheError, match=r"region is 'eu-west-1', expected 'us-east-2'"):
        refreshed_price_table(region=REGION, cache_file=default_cache_path(REGION))


def test_the_estimate_uses_the_refreshed_cache_and_says_so_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`neuronfleet estimate` reads what `prices refresh` cached for its region: a live price replaces the built-in
    one (origin live), the output names the cache once; a cache it cannot use stops it with one line, no traceback."""
    monkeypatch.setenv("NEURONFLEET_PRICE_CACHE", str(tmp_path))
    live = {"usd_per_hour": "1.50", "source": "AWS Price List Query API (pricing:GetProducts), SKU TEST",
            "as_of": "2026-11-28", "region": REGION, "sourced": "true", "origin": "live"}
    (tmp_path / f"prices-{REGION}.json").write_text(json.dumps({
        "format": "neuronfleet-prices/1", "region": REGION, "read_at": "2026-11-28T06:00:00+00:00",
        "endpoint": "us-east-1", "prices": {"ml.inf2.xlarge": live}, "failed": {}}))
    csv = tmp_path / "gpu.csv"
    csv.write_text("instance_type,amount_usd,hours,workload\nml.g5.xlarge,14.08,10,inference\n")
    assert main(["estimate", "--csv", str(csv), "--json"]) == OK
    result = json.loads(capsys.readouterr().out)
    (line,) = result["lines"]
    assert (line["neuron_type"], line["neuron_price"]["usd_per_hour"], line["neuron_estimate_usd"]) == (
        "ml.inf2.xlarge", "1.50", "15.00")
    assert result["price_cache"].startswith("1 live prices from `neuronfleet prices refresh` of 2026-11-28")
    assert main(["estimate", "--csv", str(csv)]) == OK
    assert capsys.readouterr().out.count("live prices from `neuronfleet prices refresh`") == 1
    (tmp_path / f"prices-{REGION}.json").write_text("{not json")
    assert main(["estimate", "--csv", str(csv)]) == BAD_INPUT
    err = capsys.readouterr().err
    assert "price cache" in err and "Traceback" not in err
