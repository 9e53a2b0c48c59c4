"""Current On-Demand prices from the AWS Price List Query API (``pricing:GetProducts``), for the migration report.

What the code relies on, each with its source (read 2026-11-23; tests/unit/test_price_list.py pins them):

- **Endpoints.** botocore's endpoints.json (botocore 1.44.5) lists ``api.pricing`` in ap-south-1, eu-central-1 and
  us-east-1 (partition aws) and cn-northwest-1 (aws-cn); the endpoint is taken from botocore at run time
  (:func:`endpoint_region`), the nearest one to the fleet's region. Every endpoint serves the same global price list
  (a product names its region in ``regionCode``), so the choice is about latency only.
- **Response.** GetProducts returns ``PriceList``: a list of strings, each one product as JSON (botocore's pricing
  model: the member is a string with the ``jsonvalue`` trait), with ``product.sku``, ``product.attributes`` and
  ``terms.OnDemand.<term>.priceDimensions.<rate>.{unit, pricePerUnit.USD}``: botocore's own GetProducts example
  (data/pricing/2017-10-15/examples-1.json), copied verbatim into tests/data/pricing.
- **EC2 filters** (service code AmazonEC2): ``instanceType``, ``regionCode``, ``operatingSystem`` Linux, ``tenancy``
  Shared, ``preInstalledSw`` NA, ``capacitystatus`` Used, ``marketoption`` OnDemand: the attribute names of the EC2
  price list (GetProducts' Field takes "all attribute names"). ``marketoption`` = ``OnDemand`` as AWS's own Karpenter
  asks for On-Demand prices (aws/karpenter-provider-aws pkg/providers/pricing/pricing.go, ``fetchOnDemandPricing``,
  @ 1d927085dd81a9df9301e613f371dac5b4d16bfe, file last changed 943d9d43 on 2026-04-03; a verbatim copy is in
  tests/data/pricing/karpenter): a Capacity Block product (``marketoption`` ``CapacityBlock``, the value a
  third-party reader of AWS's offer files skips: vantage-sh/ec2instances.info ec2.py @ 07a565e) shares every other
  attribute, so without it p5/trn1/trn2 answered two products and were "ambiguous". A product the API returns whose
  attributes contradict a filter is set aside, named, never priced (:func:`choose`).
- **SageMaker filters** (AmazonSageMaker): ``instanceName`` (``ml.inf2.xlarge``), ``component`` Hosting,
  ``regionCode``, hourly unit ``Hrs``: as AWS's own awslabs/llmeter reads SageMaker hosting prices
  (llmeter/callbacks/cost/providers/sagemaker.py @ cada484712337a198d8a0dbf5984123299335e7b). No AWS document
  confirms these names offline: the check on a real account is in docs/cost.md ("Prices").

A live price is used only when exactly one price answers: products that fail to parse, have no hourly On-Demand
USD price, or a price of 0 are set aside (with the reason); several remaining products with one and the same price
are one answer (their SKUs named); several with different prices are **ambiguous** and none is used (the catalog
price stays, the note names the SKUs and prices, an override settles it). Pure functions here, and
:class:`LivePrices`, which asks the two adapters it is given (``cost.adapters.pricelist``: ``PriceListApi``,
``PriceCache``, which hold the boto3 calls) and decides what a run uses.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

EC2 = "AmazonEC2"
SAGEMAKER = "AmazonSageMaker"
HOURLY_UNIT = "Hrs"
"""The unit of an hourly price dimension (case-insensitive)."""

EC2_FILTERS = {"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
               "marketoption": "OnDemand"}
"""Besides instanceType and regionCode: an On-Demand Linux instance on shared tenancy, no pre-installed software,
capacity used (not an unused reservation), sold On-Demand (not a Capacity Block)."""
SAGEMAKER_FILTERS = {"component": "Hosting"}
"""Besides instanceName and regionCode: the SageMaker hosting (real-time endpoint) rate."""

# the nearest Price List endpoint by the fleet region's prefix (any endpoint answers for every region)
_NEAR = (("eu-", "eu-central-1"), ("me-", "eu-central-1"), ("af-", "eu-central-1"), ("il-", "eu-central-1"),
         ("ap-", "ap-south-1"), ("cn-", "cn-northwest-1"))
_DEFAULT_ENDPOINT = "us-east-1"


class MalformedProduct(ValueError):
    """One PriceList entry that is not the documented product JSON; the message names the field."""


@dataclass(frozen=True)
class Dimension:
    rate_code: str
    unit: str
    usd: Decimal | None
    """pricePerUnit.USD; None when the dimension has no USD price."""
    currencies: tuple[str, ...]
    description: str = ""


@dataclass(frozen=True)
class Term:
    code: str
    effective: str
    dimensions: tuple[Dimension, ...]


@dataclass(frozen=True)
class Product:
    sku: str
    service_code: str
    attributes: Mapping[str, str]
    on_demand: tuple[Term, ...]
    publication: str = ""


def _field(doc: Any, path: str, kind: type, where: str) -> Any:
    value = doc
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            raise MalformedProduct(f"{where}: {path} is missing")
        value = value[key]
    if not isinstance(value, kind):
        raise MalformedProduct(f"{where}: {path} is {type(value).__name__}, expected {kind.__name__}")
    return value


def parse_product(text: str) -> Product:
    """One PriceList entry (a JSON string) as a :class:`Product`; MalformedProduct names what is wrong."""
    try:
        doc = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise MalformedProduct(f"PriceList entry is not JSON ({exc}): {str(text)[:80]!r}") from None
    sku = str(_field(doc, "product.sku", str, "product"))
    where = f"product {sku}"
    attributes = _field(doc, "product.attributes", dict, where)
    terms = _field(doc, "terms", dict, where)
    on_demand = terms.get("OnDemand", {})
    if not isinstance(on_demand, dict):
        raise MalformedProduct(f"{where}: terms.OnDemand is {type(on_demand).__name__}, expected dict")
    parsed = []
    for code, term in sorted(on_demand.items()):
        at = f"{where}: terms.OnDemand.{code}"
        dims = []
        for rate, d in sorted(_field(term, "priceDimensions", dict, at).items()):
            prices = _field(d, "pricePerUnit", dict, f"{at}.priceDimensions.{rate}")
            usd = None
            if "USD" in prices:
                try:
                    usd = Decimal(str(prices["USD"]))
                except InvalidOperation:
                    raise MalformedProduct(f"{at}.priceDimensions.{rate}: pricePerUnit.USD is "
                                           f"{prices['USD']!r}, not a number") from None
                if not usd.is_finite():
                    raise MalformedProduct(f"{at}.priceDimensions.{rate}: pricePerUnit.USD is {prices['USD']!r}")
            dims.append(Dimension(rate_code=rate, unit=str(d.get("unit", "")), usd=usd,
                                  currencies=tuple(sorted(prices)), description=str(d.get("description", ""))))
        parsed.append(Term(code=code, effective=str(term.get("effectiveDate", "")), dimensions=tuple(dims)))
    return Product(sku=sku, service_code=str(doc.get("serviceCode", "")),
                   attributes={str(k): str(v) for k, v in attributes.items()}, on_demand=tuple(parsed),
                   publication=str(doc.get("publicationDate", "")))


def hourly_usd(product: Product) -> tuple[Decimal, Term]:
    """The product's On-Demand price per hour in USD, and its term. ValueError with the reason when it has none,
    more than one, no USD price, or a price of 0 (no instance-hour is free: a 0 is not a price to estimate with)."""
    found: list[tuple[Dimension, Term]] = [(d, t) for t in product.on_demand for d in t.dimensions
                                           if d.unit.lower() == HOURLY_UNIT.lower()]
    if not product.on_demand:
        raise ValueError(f"SKU {product.sku}: no On-Demand term")
    if not found:
        units = sorted({d.unit for t in product.on_demand for d in t.dimensions})
        raise ValueError(f"SKU {product.sku}: no hourly ({HOURLY_UNIT}) On-Demand price (units: {', '.join(units)})")
    usd = {d.usd for d, _ in found}
    if None in usd:
        currencies = sorted({c for d, _ in found for c in d.currencies})
        raise ValueError(f"SKU {product.sku}: no USD price (currencies: {', '.join(currencies) or 'none'})")
    if len(usd) > 1:
        raise ValueError(f"SKU {product.sku}: {len(usd)} different hourly On-Demand prices "
                         f"({', '.join(str(u) for u in sorted(u for u in usd if u is not None))})")
    (price,) = usd
    assert price is not None
    if price <= 0:
        raise ValueError(f"SKU {product.sku}: hourly On-Demand price is {price} USD")
    return price, found[0][1]


@dataclass(frozen=True)
class Answer:
    """What the Price List said for one type: ``entry`` (a price-table entry) or None with ``reason``."""

    entry: Mapping[str, str] | None
    reason: str = ""
    set_aside: tuple[str, ...] = ()
    """Products that matched but could not be used, each with why (shown when no price results)."""


def service_of(instance_type: str) -> str:
    return SAGEMAKER if instance_type.startswith("ml.") else EC2


def wanted_attributes(instance_type: str, region: str) -> dict[str, str]:
    """The product attributes a price for ``instance_type`` in ``region`` must have (the GetProducts filters)."""
    if service_of(instance_type) == SAGEMAKER:
        return {"instanceName": instance_type, "regionCode": region, **SAGEMAKER_FILTERS}
    return {"instanceType": instance_type, "regionCode": region, **EC2_FILTERS}


def filters(instance_type: str, region: str) -> list[dict[str, str]]:
    """The GetProducts filters for one type in ``region`` (TERM_MATCH on each attribute)."""
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in wanted_attributes(instance_type, region).items()]


def contradiction(product: Product, wanted: Mapping[str, str]) -> str:
    """Why ``product`` is not the one asked for ("" when none of its attributes contradicts a filter). TERM_MATCH
    compares case-insensitively; an attribute the product does not carry is no contradiction."""
    for k, v in wanted.items():
        got = product.attributes.get(k)
        if got is not None and got.lower() != v.lower():
            return f"SKU {product.sku}: {k} is {got!r}, not {v!r} (set aside)"
    return ""


def choose(instance_type: str, region: str, texts: Sequence[str], *, read_on: str) -> Answer:
    """The price of ``instance_type`` from the PriceList entries GetProducts returned for it (see the module
    docstring for the rule when several products match). ``read_on``: the date the list was read (as_of)."""
    usable: list[tuple[Product, Decimal, Term]] = []
    aside: list[str] = []
    wanted = wanted_attributes(instance_type, region)
    for text in texts:
        try:
            product = parse_product(text)
            wrong = contradiction(product, wanted)
            if wrong:
                raise ValueError(wrong)
            price, term = hourly_usd(product)
        except ValueError as exc:
            aside.append(str(exc))
            continue
        usable.append((product, price, term))
    service = service_of(instance_type)
    if not usable:
        why = (f"no product in the Price List for {instance_type} in {region} ({service})" if not texts else
               f"{len(texts)} product(s) for {instance_type} in {region}, none with a usable price")
        return Answer(None, why, tuple(aside))
    prices = sorted({p for _, p, _ in usable})
    skus = sorted(p.sku for p, _, _ in usable)
    if len(prices) > 1:
        listed = ", ".join(f"SKU {p.sku} {price} USD/h" for p, price, _ in sorted(usable, key=lambda u: u[0].sku))
        return Answer(None, f"ambiguous: {len(usable)} products for {instance_type} in {region} with different "
                            f"prices ({listed}); none used: override it (prices: in the fleet file)", tuple(aside))
    product, price, term = sorted(usable, key=lambda u: u[0].sku)[0]
    what = "SageMaker Hosting" if service == SAGEMAKER else "EC2 On-Demand Linux, shared tenancy"
    source = (f"AWS Price List Query API (pricing:GetProducts {service}, {what}, {region}, SKU "
              f"{', '.join(skus)}; term effective {term.effective[:10] or 'not given'})")
    return Answer({"usd_per_hour": format(price.normalize(), "f"),
                   "source": source, "as_of": read_on, "region": region, "sourced": "true", "origin": "live"},
                  set_aside=tuple(aside))


def endpoint_region(region: str, endpoints: Iterable[str]) -> str | None:
    """The Price List endpoint to ask for a fleet in ``region``: the region itself when it is one, else the nearest
    of ``endpoints`` (botocore's list for the region's partition); None when the partition has none."""
    available = set(endpoints)
    if region in available:
        return region
    for prefix, endpoint in _NEAR:
        if region.startswith(prefix) and endpoint in available:
            return endpoint
    if _DEFAULT_ENDPOINT in available:
        return _DEFAULT_ENDPOINT
    return min(available) if available else None


def resolve(table: Mapping[str, Mapping[str, str]], live: Mapping[str, Mapping[str, str]]
            ) -> dict[str, dict[str, str]]:
    """The price table the report uses: the fleet file's overrides, then live prices, then the catalog. Each entry
    says where it came from (``origin``: override | live | catalog)."""
    out: dict[str, dict[str, str]] = {}
    for t, p in table.items():
        if p.get("override") == "true":
            out[t] = {**p, "origin": "override"}
        elif t in live:
            out[t] = {**live[t], "origin": "live"}
        else:
            out[t] = {**p, "origin": p.get("origin") or "catalog"}
    for t, p in live.items():
        out.setdefault(t, {**p, "origin": "live"})
    return out


class ApiFailed(Exception):
    """The Price List API failed in a way that is not about one type (throttled, denied, unreachable)."""


class CacheFailed(Exception):
    """The ledger's price cache could not be read or written (the message: the error's type)."""


@dataclass
class Lookup:
    """What one run found: ``prices`` (type -> live entry), ``failed`` (type -> why no live price)."""

    prices: dict[str, dict[str, str]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    from_cache: list[str] = field(default_factory=list)
    """Types whose price came from the cache (container or ledger), not from a request of this run."""
    requests: int = 0
    cache_error: str = ""

    def note(self) -> str:
        """One line on what the live lookup could not do (empty when it answered every type)."""
        if not self.failed:
            return ""
        by_reason: dict[str, list[str]] = {}
        for t, why in sorted(self.failed.items()):
            by_reason.setdefault(why, []).append(t)
        parts = "; ".join(f"{', '.join(ts)}: {why}" for why, ts in sorted(by_reason.items(), key=lambda i: i[1][0]))
        return (f"Price List API: no live price for {len(self.failed)} of {len(self.failed) + len(self.prices)} "
                f"types (the catalog's or an override used): {parts}"
                + (f" ({self.cache_error})" if self.cache_error else ""))


class LivePrices:
    """Live prices for the fleet's region, cached in the container (this object lives as long as it) and in the
    ledger (:class:`PriceCache`) for ``max_age``: a price list changes rarely, and a weekly report then reads each
    type once a week; reruns within ``max_age`` ask no API. When the API cannot answer, a cached price older than
    ``max_age`` is still used (live data, dated by when it was read) before the catalog's. After an error that is
    not about one type (throttled after botocore's retries, access denied, unreachable) no further type is asked
    in that run."""

    def __init__(self, *, api: Any | None, region: str, cache: Any | None = None,
                 max_age: timedelta = timedelta(days=7), unavailable: str = "") -> None:
        self.api, self.region, self.cache, self.max_age = api, region, cache, max_age
        self.unavailable = unavailable
        """Why no API is asked for this region (a region botocore does not know, a partition without the API)."""
        self._memory: dict[str, tuple[datetime, dict[str, str]]] = {}

    def lookup(self, types: Iterable[str], now: datetime) -> Lookup:
        wanted = sorted(set(types))
        out = Lookup()
        if self.unavailable or self.api is None:
            out.failed = {t: self.unavailable or "no Price List endpoint" for t in wanted}
            return out
        held = dict(self._memory)
        if self.cache is not None and any(t not in held or now - held[t][0] >= self.max_age for t in wanted):
            try:
                held = {**self.cache.load(self.region), **held}
            except CacheFailed as exc:  # a cache that cannot be read is no reason to fail the report
                out.cache_error = f"the ledger's price cache could not be read: {exc}"
        fresh: dict[str, dict[str, str]] = {}
        stopped = ""
        before = self.api.requests
        for t in wanted:
            if t in held and now - held[t][0] < self.max_age:
                out.prices[t] = held[t][1]
                out.from_cache.append(t)
                continue
            why = stopped
            if not stopped:
                try:
                    answer = choose(t, self.region, self.api.products(t, self.region), read_on=now.date().isoformat())
                except ApiFailed as exc:
                    stopped = why = f"the API failed ({exc}); no further type asked this run"
                except ValueError as exc:
                    why = str(exc)
                else:
                    if answer.entry is not None:
                        fresh[t] = out.prices[t] = dict(answer.entry)
                        continue
                    why = answer.reason
            if t in held:  # a live price read earlier beats the catalog's
                out.prices[t] = held[t][1]
                out.from_cache.append(t)
            else:
                out.failed[t] = why
        out.requests = self.api.requests - before
        for t, entry in fresh.items():
            self._memory[t] = (now, entry)
        if fresh and self.cache is not None:
            try:
                self.cache.save(self.region, fresh, now)
            except CacheFailed as exc:  # the prices serve this run; the next one asks again
                out.cache_error = f"the ledger's price cache could not be written: {exc}"
        return out


def wanted_types(table: Mapping[str, Any], row_types: Iterable[str], accelerators: Mapping[str, tuple[str, int]]
                 ) -> list[str]:
    """The types whose prices the report can use: those of the period's spend rows, and every Neuron type of the
    catalog in both its EC2 and SageMaker (``ml.``) form (the evaluation estimate's candidates). Overridden types
    are not asked (the override wins)."""
    neuron = {t for t, (family, _) in accelerators.items() if family in ("trainium", "inferentia")}
    types = {t for t in row_types if t} | neuron | {f"ml.{t}" for t in neuron}
    return sorted(t for t in types if (table.get(t) or {}).get("override") != "true")
