"""The kit's built-in price table, in one home: ``data/prices.json`` in this package.

The file ships with every function's code (neuronfleet.core.assets stages the contract beside each handler) and in
the wheel (pyproject.toml package-data). The instance catalog reads its EC2 prices from it (neuronfleet.facts.catalog),
neuronfleet.facts.prices builds the construct side's price table with :func:`ec2_entry` and the SageMaker rates here,
and a function's environment carries only the entries that differ from :func:`builtin_table` (:func:`carried`: the
fleet file's overrides, a catalog's own prices); the function puts them back on the table it loads from the file
(:func:`merged`). The whole table no longer travels in Lambda's 4 KB environment (3,015 bytes of the report's in prod
when it did).

An entry: ``usd_per_hour``, ``source``, ``as_of``, ``region`` (where it was read), ``sourced`` ("false": no public
source, data ``unsourced`` says why), ``note`` (read in another region than the fleet's), ``override`` ("true": the
fleet file's). Pure: no boto3, no Powertools, no CDK.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

PriceEntry = dict[str, str]

DATA = ("data", "prices.json")
"""Where the table lives in this package."""


@cache
def data() -> dict[str, Any]:
    """The packaged file as it is: ``ec2`` (type -> usd_per_hour, source, as_of, region), ``unsourced`` (type ->
    why no public source gives its price), ``regional`` (region -> type -> entry over the ec2 one), ``sagemaker``
    (``ml.`` type -> entry, or null where no source was found), and what each is (``about``)."""
    doc: dict[str, Any] = json.loads(resources.files(__package__ or "neuronfleet_contract").joinpath(*DATA).read_text())
    return doc


def ec2_entry(instance_type: str, price: Mapping[str, str], region: str | None = None) -> PriceEntry:
    """The table's entry for an EC2 type priced ``price`` (usd_per_hour, source, as_of, region it was read in) when
    the fleet runs in ``region``: ``sourced`` from the data's ``unsourced`` list (its reason replaces a bare pricing-page
    source), the data's regional entry for ``region`` instead when it has one, a note when it was read elsewhere."""
    doc = data()
    unsourced = doc["unsourced"]
    entry = {"usd_per_hour": str(price["usd_per_hour"]), "source": str(price["source"]), "as_of": str(price["as_of"]),
             "region": str(price["region"]), "sourced": "false" if instance_type in unsourced else "true"}
    if instance_type in unsourced and entry["source"].startswith("https://aws.amazon.com/ec2/pricing"):
        entry["source"] = f"unsourced: {unsourced[instance_type]}"
    regional = (doc["regional"].get(region or "") or {}).get(instance_type)
    if regional:
        entry = {**{k: str(v) for k, v in regional.items()}, "region": str(region), "sourced": "true"}
    if region and entry["region"] != region:
        entry["note"] = f"read in {entry['region']}; the fleet runs in {region}, where the price may differ"
    return entry


def sagemaker_entries() -> dict[str, PriceEntry]:
    """The built-in SageMaker hosting rates (``ml.`` types with a source; a null one is left out)."""
    return {t: {**{k: str(v) for k, v in p.items()}, "sourced": "true"} for t, p in data()["sagemaker"].items() if p}


@cache
def _builtin(region: str | None) -> dict[str, PriceEntry]:
    table = {t: ec2_entry(t, p, region) for t, p in data()["ec2"].items()}
    return table | sagemaker_entries()


def builtin_table(region: str | None = None) -> dict[str, PriceEntry]:
    """Every built-in price for a fleet in ``region`` (None: unknown, no note): the EC2 types in the data's order,
    then the SageMaker rates. A fresh copy: the caller may change it."""
    return {t: dict(p) for t, p in _builtin(region or None).items()}


def carried(table: Mapping[str, Mapping[str, str]], region: str | None = None) -> dict[str, PriceEntry]:
    """What a function's environment must carry of ``table`` (the construct side's whole table for ``region``): the
    entries that differ from :func:`builtin_table` of ``region`` or that it lacks. An entry the built-in table has and
    ``table`` lacks cannot be carried: the function prices that type from the file (a type no longer priced is
    removed from the data, not from an environment)."""
    builtin = _builtin(region or None)
    return {t: {k: str(v) for k, v in p.items()} for t, p in table.items() if builtin.get(t) != p}


def merged(given: Mapping[str, Mapping[str, str]], region: str | None = None) -> dict[str, PriceEntry]:
    """The table a function uses: :func:`builtin_table` of ``region`` with ``given`` (what its environment carried)
    on top, entry by entry (a given entry replaces the built-in one whole, never field by field)."""
    out = builtin_table(region)
    out.update({t: {k: str(v) for k, v in p.items()} for t, p in given.items()})
    return out
