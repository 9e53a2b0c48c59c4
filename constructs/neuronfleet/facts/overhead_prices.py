"""The unit prices of what the kit deploys besides accelerator instances (``data/overhead_prices.json``).

Each price has its source, the date it was read here, the region it was read for and its standing: ``aws`` (AWS's own
page or document), ``quoted`` (a third party's copy of AWS's page or price list, labelled), and a price no public
source confirmed is listed in ``unsourced`` with why, never priced. ``not_priced`` says, per CloudFormation type, why
a resource the kit deploys has no figure (usage-based, or no price read). ``neuronfleet.cost.overhead`` prices a
construct tree with these.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from functools import cache
from importlib import resources
from typing import Any, Literal

Standing = Literal["aws", "quoted"]


@dataclass(frozen=True)
class OverheadPrice:
    """One unit price: ``usd`` per ``unit``, read from ``source`` on ``as_of`` for ``region``."""

    key: str
    usd: Decimal
    unit: str
    region: str
    standing: Standing
    source_key: str
    """A short name of the source (the wire format carries it; ``source`` is the whole citation)."""
    source: str
    as_of: date
    basis: str = ""
    """What the price is applied to when that is an assumption (e.g. a 0 GB traffic basis), else empty."""


@cache
def _data() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(
        resources.files("neuronfleet.facts.data").joinpath("overhead_prices.json").read_text())
    return doc


def _price(key: str, entry: dict[str, Any]) -> OverheadPrice:
    standing = entry["standing"]
    if standing not in ("aws", "quoted"):
        raise ValueError(f"overhead_prices.json prices.{key}.standing is {standing!r}; allowed: 'aws', 'quoted' "
                         "(a price with no source belongs in 'unsourced')")
    return OverheadPrice(key=key, usd=Decimal(entry["usd"]), unit=entry["unit"], region=entry["region"],
                         standing=standing, source_key=entry["source_key"], source=entry["source"],
                         as_of=date.fromisoformat(entry["as_of"]), basis=entry.get("basis", ""))


@cache
def overhead_prices() -> dict[str, OverheadPrice]:
    """Every sourced overhead price by key (``nat-gateway-hour``, ``kms-key-month``, ...)."""
    return {k: _price(k, v) for k, v in _data()["prices"].items()}


def unsourced() -> dict[str, str]:
    """Price keys no public source confirmed (e.g. ``fsx-lustre:PERSISTENT_2:SSD:250``), each with why."""
    return dict(_data()["unsourced"])


def not_priced() -> dict[str, tuple[str, str]]:
    """Why a CloudFormation type the kit deploys has no figure, by type (``AWS::Logs::LogGroup``, ...): the reason
    code the wire format carries (neuronfleet_contract.overhead.REASONS) and the sentence."""
    return {k: (v["code"], v["why"]) for k, v in _data()["not_priced"].items()}


def hours_per_month() -> Decimal:
    """The hours in a month the hourly prices are multiplied by (730, with its source in the data file)."""
    return Decimal(_data()["hours_per_month"]["value"])


def read_on() -> date:
    """When the data file was last read against its sources."""
    return date.fromisoformat(_data()["read"])
