"""The Price List Query API reader (lambdas/cost/logic/pricelist.py): its parser on AWS's own GetProducts example
(tests/data/pricing, verbatim from botocore), variations derived from it, the choice among several products, the
endpoint, and the lookup's throttling, caching and fallbacks, with the client stubbed by botocore's Stubber (moto
does not implement the pricing service: it answers 404 "Not yet implemented")."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import botocore
import botocore.session
import pytest
from botocore.stub import Stubber
from botocore.validate import ParamValidator

from neuronfleet.lambdas.cost.adapters.pricelist import PriceCache, PriceListApi, plan_endpoint
from neuronfleet.lambdas.cost.logic.economics import price_notes
from neuronfleet.lambdas.cost.logic.pricelist import (
    EC2_FILTERS,
    CacheFailed,
    LivePrices,
    MalformedProduct,
    choose,
    endpoint_region,
    filters,
    hourly_usd,
    parse_product,
    resolve,
    wanted_types,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "pricing"
EXAMPLES = json.loads((DATA / "botocore-examples-1.json").read_text())
(GET_PRODUCTS,) = EXAMPLES["examples"]["GetProducts"]
OUTPUT = GET_PRODUCTS["output"]
MODEL = botocore.session.get_session().get_service_model("pricing")
NOW = datetime(2026, 11, 23, 7, tzinfo=UTC)


def derived(*, sku: str = "SKUTRN1", attributes: dict[str, str] | None = None, unit: str = "Hrs",
            prices: dict[str, str] | None = None) -> str:
    """botocore's example product with only the named fields changed (an instance instead of a volume)."""
    doc = json.loads(OUTPUT["PriceList"][0])
    old = doc["product"]["sku"]
    doc = json.loads(json.dumps(doc).replace(old, sku))
    if attributes is not None:
        doc["product"]["attributes"] = attributes
    (term,) = doc["terms"]["OnDemand"].values()
    (dim,) = term["priceDimensions"].values()
    dim["unit"] = unit
    if prices is not None:
        dim["pricePerUnit"] = prices
    return json.dumps(doc)


TRN1 = {"instanceType": "trn1.32xlarge", "regionCode": "us-east-2", **EC2_FILTERS}


# ------------------------------------------------------------------------------------- the publisher's example


def test_the_example_is_botocores_own_byte_for_byte() -> None:
    installed = Path(botocore.__file__).parent / "data" / "pricing" / "2017-10-15" / "examples-1.json"
    assert (DATA / "botocore-examples-1.json").read_bytes() == installed.read_bytes()
    assert botocore.__version__ == "1.44.5"  # the version the README names


def test_the_examples_response_is_valid_for_botocores_pricing_model() -> None:
    shape = MODEL.operation_model("GetProducts").output_shape
    assert not ParamValidator().validate(OUTPUT, shape).has_errors()
    assert shape.members["PriceList"].member.serialization == {"jsonvalue": True}  # each entry: JSON as a string
    bad = {**OUTPUT, "PriceList": [json.loads(OUTPUT["PriceList"][0])]}  # a decoded entry is not the wire shape
    report = ParamValidator().validate(bad, shape)
    assert report.has_errors() and "PriceList[0]" in report.generate_report()
    # the example's request predates ServiceCode becoming required (botocore's model: GetProducts requires it):
    # the service code is in its filters instead
    request = MODEL.operation_model("GetProducts").input_shape
    assert "ServiceCode" in request.required_members and "ServiceCode" not in GET_PRODUCTS["input"]
    params = {**GET_PRODUCTS["input"], "ServiceCode": "AmazonEC2"}
    # the Stubber checks a stubbed response against the same model: the lookup tests below stub valid pages
    client = boto3.client("pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        stub.add_response("get_products", OUTPUT, params)
        assert client.get_products(**params)["PriceList"] == OUTPUT["PriceList"]


def test_the_parser_reads_the_examples_product() -> None:
    product = parse_product(OUTPUT["PriceList"][0])
    assert (product.sku, product.service_code) == ("WQGC34PB2AWS8R4U", "AmazonEC2")
    assert product.attributes["location"] == "Canada (Central)"
    assert product.publication == "2017-09-01T18:22:01Z"
    (term,) = product.on_demand
    assert (term.code, term.effective) == ("WQGC34PB2AWS8R4U.JRTCKXETXF", "2017-08-01T00:00:00Z")
    (dim,) = term.dimensions
    assert (dim.rate_code, dim.unit, dim.usd, dim.currencies) == (
        "WQGC34PB2AWS8R4U.JRTCKXETXF.6YS6EN2CT7", "GB-Mo", Decimal("0.1380000000"), ("USD",))
    # a volume's price is per GB-month: no hourly price to estimate an instance with
    with pytest.raises(ValueError, match=r"SKU WQGC34PB2AWS8R4U: no hourly \(Hrs\) On-Demand price \(units: GB-Mo\)"):
        hourly_usd(product)


# ------------------------------------------------------------------------------------- variations derived from it


def test_an_instance_product_derived_from_the_example_gives_its_hourly_price_with_source_and_date() -> None:
    answer = choose("trn1.32xlarge", "us-east-2", [derived(attributes=TRN1, prices={"USD": "21.5000000000"})],
                    read_on="2026-11-23")
    assert answer.entry is not None
    assert dict(answer.entry) == {
        "usd_per_hour": "21.5", "as_of": "2026-11-23", "region": "us-east-2", "sourced": "true", "origin": "live",
        "source": "AWS Price List Query API (pricing:GetProducts AmazonEC2, EC2 On-Demand Linux, shared tenancy, "
                  "us-east-2, SKU SKUTRN1; term effective 2017-08-01)"}


@pytest.mark.parametrize(("prices", "why"), [
    ({"USD": "0.0000000000"}, "SKU SKUTRN1: hourly On-Demand price is 0E-10 USD"),
    ({"CNY": "150.00"}, "SKU SKUTRN1: no USD price (currencies: CNY)"),
    ({}, "SKU SKUTRN1: no USD price (currencies: none)"),
])
def test_a_price_of_0_or_without_usd_is_set_aside_and_no_price_results(prices: dict[str, str], why: str) -> None:
    answer = choose("trn1.32xlarge", "us-east-2", [derived(attributes=TRN1, prices=prices)], read_on="2026-11-23")
    assert answer.entry is None
    assert answer.reason == "1 product(s) for trn1.32xlarge in us-east-2, none with a usable price"
    assert answer.set_aside == (why,)


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", r"PriceList entry is not JSON"),
    (json.dumps({"product": {"attributes": {}}}), r"product: product\.sku is missing"),
    (json.dumps({"product": {"sku": "S", "attributes": {}}}), r"product S: terms is missing"),
    (derived(prices={"USD": "abc"}), r"pricePerUnit\.USD is 'abc', not a number"),
    (derived(prices={"USD": "NaN"}), r"pricePerUnit\.USD is 'NaN'"),
])
def test_a_malformed_entry_names_the_field(text: str, message: str) -> None:
    with pytest.raises(MalformedProduct, match=message):
        parse_product(text)
    answer = choose("trn1.32xlarge", "us-east-2", [text, derived(attributes=TRN1, prices={"USD": "21.50"})],
                    read_on="2026-11-23")
    assert answer.entry is not None and answer.entry["usd_per_hour"] == "21.5"  # the good product still answers
    assert len(answer.set_aside) == 1


def test_several_products_with_one_price_are_one_answer_and_with_different_prices_none() -> None:
    a = derived(sku="SKUA", attributes=TRN1, prices={"USD": "21.50"})
    b = derived(sku="SKUB", attributes=TRN1, prices={"USD": "21.5000"})
    c = derived(sku="SKUC", attributes=TRN1, prices={"USD": "24.78"})
    same = choose("trn1.32xlarge", "us-east-2", [b, a], read_on="2026-11-23")
    assert same.entry is not None and "SKU SKUA, SKUB;" in same.entry["source"]
    ambiguous = choose("trn1.32xlarge", "us-east-2", [a, c], read_on="2026-11-23")
    assert ambiguous.entry is None
    assert ambiguous.reason == ("ambiguous: 2 products for trn1.32xlarge in us-east-2 with different prices "
                                "(SKU SKUA 21.50 USD/h, SKU SKUC 24.78 USD/h); none used: override it (prices: in the "
                                "fleet file)")


def test_no_product_is_said_so() -> None:
    answer = choose("ml.inf2.xlarge", "us-east-2", [], read_on="2026-11-23")
    assert (answer.entry, answer.reason) == (None, "no product in the Price List for ml.inf2.xlarge in us-east-2 "
                                                   "(AmazonSageMaker)")


# ------------------------------------------------------------------------------------- requests and endpoints


def test_the_filters_are_valid_getproducts_input() -> None:
    assert filters("trn1.32xlarge", "us-east-2") == [
        {"Type": "TERM_MATCH", "Field": "instanceType", "Value": "trn1.32xlarge"},
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-2"},
        {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
        {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
        {"Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA"},
        {"Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used"},
        {"Type": "TERM_MATCH", "Field": "marketoption", "Value": "OnDemand"}]
    assert filters("ml.inf2.xlarge", "us-east-2") == [
        {"Type": "TERM_MATCH", "Field": "instanceName", "Value": "ml.inf2.xlarge"},
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-2"},
        {"Type": "TERM_MATCH", "Field": "component", "Value": "Hosting"}]
    shape = MODEL.operation_model("GetProducts").input_shape
    for t in ("trn1.32xlarge", "ml.inf2.xlarge"):
        params = {"ServiceCode": "AmazonEC2", "Filters": filters(t, "us-east-2"), "FormatVersion": "aws_v1",
                  "MaxResults": 100}
        assert not ParamValidator().validate(params, shape).has_errors()
    assert "TERM_MATCH" in MODEL.shape_for("FilterType").enum


def test_botocore_lists_the_three_price_list_endpoints_and_the_nearest_is_used() -> None:
    session = boto3.session.Session()
    assert session.get_available_regions("pricing") == ["ap-south-1", "eu-central-1", "us-east-1"]
    assert session.get_available_regions("pricing", partition_name="aws-cn") == ["cn-northwest-1"]
    expected = {"us-east-2": "us-east-1", "us-west-2": "us-east-1", "sa-east-1": "us-east-1",
                "eu-west-1": "eu-central-1", "eu-central-1": "eu-central-1", "me-south-1": "eu-central-1",
                "ap-south-2": "ap-south-1", "ap-southeast-4": "ap-south-1", "ap-south-1": "ap-south-1",
                "cn-north-1": "cn-northwest-1"}
    assert {r: plan_endpoint(r, session) for r in expected} == {r: (e, "") for r, e in expected.items()}
    assert endpoint_region("us-east-2", []) is None


@pytest.mark.parametrize(("region", "why"), [
    ("xx-fake-1", "region xx-fake-1 is not one botocore knows: no live price asked"),
    ("us-gov-west-1", "partition aws-us-gov has no Price List Query API endpoint in botocore: no live price asked"),
    (None, "the function's region is not known"),
])
def test_a_region_without_the_api_asks_nothing_and_says_why(region: str | None, why: str) -> None:
    endpoint, reason = plan_endpoint(region, boto3.session.Session())
    assert (endpoint, reason) == (None, why)
    found = LivePrices(api=None, region=region or "", unavailable=reason).lookup(["trn1.32xlarge"], NOW)
    assert (found.prices, found.failed, found.requests) == ({}, {"trn1.32xlarge": why}, 0)
    assert found.note() == ("Price List API: no live price for 1 of 1 types (the catalog's or an override used): "
                            f"trn1.32xlarge: {why}")


# ------------------------------------------------------------------------------------- the lookup, stubbed


def _page(*texts: str, token: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"FormatVersion": "aws_v1", "PriceList": list(texts)}
    if token:
        out["NextToken"] = token
    return out


def _params(instance_type: str, token: str | None = None) -> dict[str, Any]:
    service = "AmazonSageMaker" if instance_type.startswith("ml.") else "AmazonEC2"
    out: dict[str, Any] = {"ServiceCode": service, "Filters": filters(instance_type, "us-east-2"),
                           "FormatVersion": "aws_v1", "MaxResults": 100}
    if token:
        out["NextToken"] = token
    return out


class FakeCache:
    """PriceCache's contract in memory (tests/moto/test_cost_moto.py runs the real one on DynamoDB)."""

    def __init__(self, held: dict[str, tuple[datetime, dict[str, str]]] | None = None, fail: bool = False) -> None:
        self.held = dict(held or {})
        self.saved: list[tuple[str, dict[str, Any]]] = []
        self.fail = fail

    def load(self, region: str) -> dict[str, tuple[datetime, dict[str, str]]]:
        if self.fail:
            raise CacheFailed("ValueError")  # what PriceCache raises for a bad item (tested below)
        return dict(self.held)

    def save(self, region: str, entries: dict[str, Any], read_at: datetime) -> None:
        self.saved.append((region, dict(entries)))
        self.held.update({t: (read_at, dict(e)) for t, e in entries.items()})


@pytest.fixture
def pricing() -> Any:
    client = boto3.client("pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def test_throttling_stops_the_lookup_and_the_rest_falls_back(pricing) -> None:
    client, stub = pricing
    inf2 = {**TRN1, "instanceType": "inf2.xlarge"}  # a product of another type would be set aside (its instanceType)
    stub.add_response("get_products", _page(derived(attributes=inf2, prices={"USD": "0.7582"})), _params("inf2.xlarge"))
    stub.add_client_error("get_products", service_error_code="ThrottlingException", service_message="Rate exceeded",
                          http_status_code=400, expected_params=_params("ml.inf2.xlarge"))
    live = LivePrices(api=PriceListApi(client), region="us-east-2")
    found = live.lookup(["inf2.xlarge", "ml.inf2.xlarge", "trn1.32xlarge"], NOW)  # no third request is stubbed
    assert sorted(found.prices) == ["inf2.xlarge"] and found.requests == 2
    why = "the API failed (ThrottlingException: Rate exceeded); no further type asked this run"
    assert found.failed == {"ml.inf2.xlarge": why, "trn1.32xlarge": why}
    assert found.note() == f"Price List API: no live price for 2 of 3 types (the catalog's or an override used): " \
                           f"ml.inf2.xlarge, trn1.32xlarge: {why}"


def test_a_per_type_error_and_a_malformed_page_fall_back_for_that_type_only(pricing) -> None:
    client, stub = pricing
    stub.add_client_error("get_products", service_error_code="InvalidParameterException", service_message="bad",
                          http_status_code=400, expected_params=_params("inf2.xlarge"))
    stub.add_response("get_products", _page("<html>oops</html>"), _params("ml.inf2.xlarge"))
    stub.add_response("get_products", _page(derived(attributes=TRN1, prices={"USD": "1"}), token="t2"),
                      _params("trn1.32xlarge"))
    stub.add_response("get_products", _page(derived(sku="SKU2", attributes=TRN1, prices={"USD": "1.0"})),
                      _params("trn1.32xlarge", "t2"))
    found = LivePrices(api=PriceListApi(client), region="us-east-2").lookup(
        ["inf2.xlarge", "ml.inf2.xlarge", "trn1.32xlarge"], NOW)
    assert found.prices["trn1.32xlarge"]["usd_per_hour"] == "1"  # both pages read, one price
    assert "SKU SKU2, SKUTRN1;" in found.prices["trn1.32xlarge"]["source"]
    assert found.failed == {"inf2.xlarge": "InvalidParameterException: bad",
                            "ml.inf2.xlarge": "1 product(s) for ml.inf2.xlarge in us-east-2, none with a usable price"}


def test_live_prices_are_cached_and_an_old_one_is_used_when_the_api_fails(pricing) -> None:
    client, stub = pricing
    cache = FakeCache()
    stub.add_response("get_products", _page(derived(attributes=TRN1, prices={"USD": "21.50"})),
                      _params("trn1.32xlarge"))
    live = LivePrices(api=PriceListApi(client), region="us-east-2", cache=cache)  # type: ignore[arg-type]
    first = live.lookup(["trn1.32xlarge"], NOW)
    assert (first.requests, first.from_cache) == (1, [])
    assert cache.saved == [("us-east-2", {"trn1.32xlarge": first.prices["trn1.32xlarge"]})]
    # the same container within a week: no request (nothing more is stubbed)
    assert live.lookup(["trn1.32xlarge"], NOW + timedelta(days=6)).from_cache == ["trn1.32xlarge"]
    # a new container: the ledger's copy
    other = LivePrices(api=PriceListApi(client), region="us-east-2", cache=cache)  # type: ignore[arg-type]
    again = other.lookup(["trn1.32xlarge"], NOW + timedelta(days=1))
    assert (again.requests, again.prices) == (0, first.prices)
    # a week later the API is asked again; when it fails, the price read a week ago is still better than the catalog's
    stub.add_client_error("get_products", service_error_code="AccessDeniedException", service_message="no",
                          http_status_code=400, expected_params=_params("trn1.32xlarge"))
    late = other.lookup(["trn1.32xlarge"], NOW + timedelta(days=8))
    assert (late.requests, late.prices, late.failed, late.from_cache) == (1, first.prices, {}, ["trn1.32xlarge"])


def test_a_cache_that_cannot_be_read_asks_the_api_and_says_so(pricing) -> None:
    client, stub = pricing
    stub.add_response("get_products", _page(), _params("trn1.32xlarge"))
    found = LivePrices(api=PriceListApi(client), region="us-east-2",
                       cache=FakeCache(fail=True)).lookup(["trn1.32xlarge"], NOW)  # type: ignore[arg-type]
    assert found.failed == {"trn1.32xlarge": "no product in the Price List for trn1.32xlarge in us-east-2 (AmazonEC2)"}
    assert found.note().endswith("(the ledger's price cache could not be read: ValueError)")


def test_the_price_cache_reports_a_failure_as_cache_failed_naming_the_error() -> None:
    class BadTable:
        def query(self, **kwargs: Any) -> dict[str, Any]:
            return {"Items": [{"pk": "PRICE#us-east-2", "sk": "trn1.32xlarge"}]}  # no read_at: KeyError

    with pytest.raises(CacheFailed, match=r"^KeyError$"):
        PriceCache(BadTable()).load("us-east-2")


# ------------------------------------------------------------------------------------- the table and the notes


CATALOG_ENTRY = {"usd_per_hour": "21.5", "source": "https://aws.amazon.com/ec2/pricing/on-demand/ (us-east-2, Linux)",
                 "as_of": "2025-10-01", "region": "us-east-2", "sourced": "true"}


def test_overrides_beat_live_prices_which_beat_the_catalog() -> None:
    table = {"trn1.32xlarge": CATALOG_ENTRY, "inf2.xlarge": {**CATALOG_ENTRY, "usd_per_hour": "0.7582"},
             "p5.48xlarge": {"usd_per_hour": "30", "source": "EDP", "as_of": "2026-01-01", "override": "true"}}
    live = {"trn1.32xlarge": {"usd_per_hour": "20", "source": "AWS Price List", "as_of": "2026-11-23",
                              "origin": "live"},
            "p5.48xlarge": {"usd_per_hour": "55", "source": "AWS Price List", "as_of": "2026-11-23", "origin": "live"},
            "ml.inf2.xlarge": {"usd_per_hour": "0.99", "source": "AWS Price List", "as_of": "2026-11-23",
                               "origin": "live"}}
    out = resolve(table, live)
    assert {t: (p["usd_per_hour"], p["origin"]) for t, p in out.items()} == {
        "trn1.32xlarge": ("20", "live"), "inf2.xlarge": ("0.7582", "catalog"), "p5.48xlarge": ("30", "override"),
        "ml.inf2.xlarge": ("0.99", "live")}
    assert wanted_types(table, ["p5.48xlarge", "g5.xlarge", ""], {"inf2.xlarge": ("inferentia", 32),
                                                                   "g5.xlarge": ("gpu", 22)}) == [
        "g5.xlarge", "inf2.xlarge", "ml.inf2.xlarge"]  # the override is not asked


def test_stale_and_unsourced_prices_are_noted_once_naming_types_origins_and_the_oldest_date() -> None:
    from neuronfleet.facts.prices import price_table

    table = resolve(price_table(region="us-east-2"), {"inf2.xlarge": {
        "usd_per_hour": "0.76", "source": "AWS Price List", "as_of": "2026-11-23", "region": "us-east-2"}})
    table["ml.inf2.xlarge"] = {"usd_per_hour": "1", "source": "EDP", "as_of": "2024-01-01", "override": "true"}
    notes = price_notes(table, today=date(2026, 11, 23), stale_after_days=180)
    assert len(notes) == 1  # not one per type
    (line,) = notes
    stale = sorted(t for t, p in table.items() if p["as_of"] < "2026-05-27")
    unsourced = sorted(t for t, p in table.items() if p.get("sourced") == "false")
    assert "ml.inf2.xlarge" in stale and "trn2.48xlarge" in unsourced
    flagged = set(stale) | set(unsourced) | {t for t, p in table.items() if p.get("note")}
    assert line.startswith(f"{len(flagged)} of {len(table)} prices need a look: {len(stale)} stale (read over 180 "
                           "days ago, the oldest on 2024-01-01): catalog: ")
    stale_part, unsourced_part = line.split("; override: ml.inf2.xlarge; ", 1)
    assert all(re.search(rf"(?<![\w.-]){re.escape(t)}\b", stale_part) for t in stale if t != "ml.inf2.xlarge")
    assert unsourced_part.startswith(f"{len(unsourced)} unsourced (no public source): catalog: "
                                     + ", ".join(unsourced))
    assert not re.search(r"(?<![\w.-])inf2\.xlarge\b", line)  # the live price is fresh and sourced
    assert line.endswith(f"The {len(table)} prices came from: live 1, catalog {len(table) - 2}, override 1. Refresh "
                         "them or override them (prices: in the fleet file).")
    # fresh, sourced prices: nothing to say; the live lookup's own line comes on its own
    fresh = {"inf2.xlarge": table["inf2.xlarge"]}
    assert price_notes(fresh, today=date(2026, 11, 23), stale_after_days=180) == []
    assert price_notes(fresh, today=date(2026, 11, 23), stale_after_days=180, live_note="Price List API: x") == [
        "Price List API: x"]


def test_a_price_read_in_another_region_and_one_without_a_date_are_in_the_same_line() -> None:
    from neuronfleet.facts.prices import price_table

    table = {t: p for t, p in price_table(region="us-west-2").items() if t in ("p5.48xlarge", "g5.xlarge")}
    table["g5.xlarge"] = {**table["g5.xlarge"], "as_of": "soon"}
    (line,) = price_notes(table, today=date(2026, 11, 28), stale_after_days=180)
    assert line == ("2 of 2 prices need a look: 1 without a valid as_of date: catalog: g5.xlarge; 2 read in another "
                    "region than the fleet's (us-east-1; the price may differ): catalog: g5.xlarge, p5.48xlarge. The 2 "
                    "prices came from: live 0, catalog 2, override 0. Refresh them or override them (prices: in the "
                    "fleet file).")


def test_a_deep_copy_of_the_example_still_parses() -> None:
    # the parser does not depend on key order or on fields it does not read
    doc = copy.deepcopy(json.loads(OUTPUT["PriceList"][0]))
    doc.pop("version")
    doc["product"] = dict(reversed(list(doc["product"].items())))
    assert parse_product(json.dumps(doc)).sku == "WQGC34PB2AWS8R4U"


# ------------------------------------------------------------------------------------- market option and SageMaker

KARPENTER = DATA / "karpenter"


def test_the_ec2_filters_are_the_ones_awss_karpenter_asks_on_demand_prices_with() -> None:
    """aws/karpenter-provider-aws pkg/providers/pricing/pricing.go (verbatim copy @ 1d927085): every TERM_MATCH of
    fetchOnDemandPricing and of its shared-tenancy call is one of ours, with the same value, marketoption=OnDemand
    among them (serviceCode is GetProducts' ServiceCode here; productFamily is not asked: an instanceType filter
    already names one instance)."""
    go = (KARPENTER / "pricing.go").read_text()
    body = go[go.index("func (p *DefaultProvider) fetchOnDemandPricing"):]
    body = body[:body.index("input := &pricing.GetProductsInput")]
    theirs = dict(re.findall(r'Field: aws\.String\("(\w+)"\),\s*Type:\s*"TERM_MATCH",\s*Value: aws\.String\("?([\w.]+)"?\)',
                             body))
    assert theirs == {"regionCode": "p.region", "serviceCode": "AmazonEC2", "preInstalledSw": "NA",
                      "operatingSystem": "Linux", "capacitystatus": "Used", "marketoption": "OnDemand"}
    assert 'Field: aws.String("tenancy"),\n\t\t\t\tType:  "TERM_MATCH",\n\t\t\t\tValue: aws.String("Shared")' in go
    ours = {f["Field"]: f["Value"] for f in filters("p5.48xlarge", "us-east-2")}
    for field_name, value in theirs.items():
        if field_name not in ("regionCode", "serviceCode"):
            assert ours[field_name] == value, field_name
    assert ours["tenancy"] == "Shared" and ours["regionCode"] == "us-east-2"


P5 = {"instanceType": "p5.48xlarge", "regionCode": "us-east-2", **EC2_FILTERS}


def test_a_capacity_block_product_in_the_same_answer_is_set_aside_and_the_on_demand_price_used(pricing) -> None:
    """The request carries marketoption=OnDemand; should the answer still hold the Capacity Block product (every other
    attribute the same, another price), it is set aside by name and the On-Demand price answers: no "ambiguous"."""
    client, stub = pricing
    on_demand = derived(sku="SKUP5OD", attributes=P5, prices={"USD": "55.0400000000"})
    block = derived(sku="SKUP5CB", attributes={**P5, "marketoption": "CapacityBlock"}, prices={"USD": "31.4640000000"})
    stub.add_response("get_products", _page(block, on_demand), _params("p5.48xlarge"))
    found = LivePrices(api=PriceListApi(client), region="us-east-2").lookup(["p5.48xlarge"], NOW)
    assert found.prices["p5.48xlarge"]["usd_per_hour"] == "55.04"
    assert "SKU SKUP5OD;" in found.prices["p5.48xlarge"]["source"] and found.failed == {}
    answer = choose("p5.48xlarge", "us-east-2", [block, on_demand], read_on="2026-11-28")
    assert answer.set_aside == ("SKU SKUP5CB: marketoption is 'CapacityBlock', not 'OnDemand' (set aside)",)
    # without the market option, the two would be one product each at a different price: ambiguous, as before
    loose = [derived(sku=sku, attributes={k: v for k, v in P5.items() if k != "marketoption"}, prices={"USD": usd})
             for sku, usd in (("SKUP5OD", "55.04"), ("SKUP5CB", "31.464"))]
    assert choose("p5.48xlarge", "us-east-2", loose, read_on="2026-11-28").reason.startswith("ambiguous: 2 products")


SM_INF2 = {"instanceName": "ml.inf2.xlarge", "regionCode": "us-east-2", "component": "Hosting"}


def test_the_sagemaker_read_asks_amazonsagemaker_hosting_and_sets_other_components_aside(pricing) -> None:
    """AmazonSageMaker, instanceName + regionCode + component Hosting (as AWS's awslabs/llmeter asks, pricelist.py):
    the stubbed request must carry exactly these; a product of another component (training, notebooks) for the same
    instance name is set aside by name, the hosting rate answers, dated and sourced."""
    client, stub = pricing
    hosting = derived(sku="SKUHOST", attributes=SM_INF2, prices={"USD": "0.9900000000"})
    training = derived(sku="SKUTRAIN", attributes={**SM_INF2, "component": "Training"}, prices={"USD": "0.7582000000"})
    params = _params("ml.inf2.xlarge")
    assert params["ServiceCode"] == "AmazonSageMaker"
    assert {f["Field"]: f["Value"] for f in params["Filters"]} == SM_INF2
    stub.add_response("get_products", _page(training, hosting), params)
    found = LivePrices(api=PriceListApi(client), region="us-east-2").lookup(["ml.inf2.xlarge"], NOW)
    entry = found.prices["ml.inf2.xlarge"]
    assert (entry["usd_per_hour"], entry["as_of"], entry["region"]) == ("0.99", "2026-11-23", "us-east-2")
    assert entry["source"].startswith("AWS Price List Query API (pricing:GetProducts AmazonSageMaker, SageMaker Hosting,")
    answer = choose("ml.inf2.xlarge", "us-east-2", [training, hosting], read_on="2026-11-23")
    assert answer.set_aside == ("SKU SKUTRAIN: component is 'Training', not 'Hosting' (set aside)",)
    # TERM_MATCH is case-insensitive: a product spelling the value another way is no contradiction
    lower = derived(sku="SKULOW", attributes={**SM_INF2, "component": "hosting"}, prices={"USD": "0.99"})
    assert choose("ml.inf2.xlarge", "us-east-2", [lower], read_on="2026-11-23").entry is not None


def test_every_built_in_sagemaker_price_is_the_aws_samples_figure_with_its_source() -> None:
    """data/prices.json ``sagemaker``: every ml. type of the families the kit maps from or to is listed (null where no
    source was found); each price equals aws-samples/foundation-model-benchmarking-tool's pricing_fallback.yml
    (verbatim copy @ 77ece06a), and says so, dated and region-tagged."""
    from neuronfleet.facts.catalog import sagemaker_instance_types
    from neuronfleet.facts.prices import _data, price_table

    data = _data()
    families = re.compile(r"ml\.(g5|g6|g6e|p4d|p4de|p5|p5e|p5en|inf2|trn1|trn1n|trn2)\.")
    assert set(data["sagemaker"]) == {t for t in sagemaker_instance_types() if families.match(t)}
    fallback = (DATA / "fmbench" / "pricing_fallback.yml").read_text()
    quoted = dict(re.findall(r"^    (ml\.[\w.-]+): ([0-9.]+)$", fallback, flags=re.M))
    priced = {t: p for t, p in data["sagemaker"].items() if p}
    assert len(priced) == 19
    for t, p in priced.items():
        assert p["usd_per_hour"] == quoted[t], t
        assert (p["source"], p["as_of"], p["region"]) == (data["sagemaker_source"], "2025-01-26", "us-east-1")
        assert "aws-samples/foundation-model-benchmarking-tool/blob/77ece06a" in p["source"] and "quoted" in p["source"]
    table = price_table(region="us-east-2")
    assert table["ml.inf2.48xlarge"]["usd_per_hour"] == "15.58" and "ml.g6e.xlarge" not in table
