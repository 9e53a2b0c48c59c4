"""The price table the cost monitors and the estimate use: every price with its source, date and region.

The built-in prices live in one home, ``neuronfleet_contract/data/prices.json`` (neuronfleet_contract.prices), which
every function's code and the wheel ship: the catalog reads its EC2 prices from it, this module builds the table from
the catalog and it, and a function's environment carries only what differs (neuronfleet_contract.prices.carried).

- EC2 types: the instance catalog's On-Demand price (AWS's Price List as aws/karpenter-provider-aws generates it,
  us-east-1, 2026-07-20), or a regional entry of the data when the fleet's region has one, or the fleet file's
  override (``prices:``).
- SageMaker types (``ml.*``): their own entries, never EC2 rates (SageMaker instances are priced apart): the hosting
  rates of the data's ``sagemaker`` (an AWS sample's copy, dated, region-tagged; null where no source was found:
  see its ``about``), or the fleet file's.
- Each entry says ``sourced``: "false" when its price has no public source (the data's ``unsourced``), and
  ``region``: where it was read; the report warns when a price is unsourced, from another region, or stale.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from neuronfleet_contract import prices as contract_prices

from .catalog import CATALOG, InstanceCatalog


def _data() -> dict[str, Any]:
    """The packaged price data (neuronfleet_contract.prices.data)."""
    return contract_prices.data()


def sagemaker_types() -> tuple[str, ...]:
    """The ``ml.`` types a fleet file may price."""
    return tuple(sorted(_data()["sagemaker"]))


def sagemaker_usd_per_hour(instance_type: str) -> float | None:
    """The built-in SageMaker hosting rate of ``instance_type`` (``ml.`` prefix optional), or None where none is built
    in (data/prices.json ``sagemaker``: null, with why)."""
    ml = instance_type if instance_type.startswith("ml.") else f"ml.{instance_type}"
    entry = (_data().get("sagemaker") or {}).get(ml)
    return float(entry["usd_per_hour"]) if entry else None


def hosting_usd_per_hour(instance_type: str) -> float:
    """An hour of SageMaker hosting on ``instance_type`` at :func:`sagemaker_usd_per_hour`; where none is built in,
    the EC2 rate of the same type, which understates it (SageMaker instances are priced apart and above EC2's)."""
    rate = sagemaker_usd_per_hour(instance_type)
    return rate if rate is not None else CATALOG.get(instance_type.removeprefix("ml.")).price.usd_per_hour


def price_table(catalog: InstanceCatalog = CATALOG, region: str | None = None,
                overrides: Mapping[str, Any] | None = None) -> dict[str, dict[str, str]]:
    """Every known price with its source and date, as the functions use it (the catalog's own prices: for the
    default catalog, neuronfleet_contract.prices.builtin_table). ``overrides``: fleet-file entries (objects or
    mappings with usd_per_hour, source, as_of), for any catalog or ``ml.`` type."""
    out: dict[str, dict[str, str]] = {}
    for s in catalog:
        p = s.price
        out[s.instance_type] = contract_prices.ec2_entry(s.instance_type, {
            "usd_per_hour": str(p.usd_per_hour), "source": p.source, "as_of": p.as_of.isoformat(),
            "region": p.region}, region)
    out |= contract_prices.sagemaker_entries()
    for instance_type, o in (overrides or {}).items():
        get = (lambda k, o=o: o[k]) if isinstance(o, Mapping) else (lambda k, o=o: getattr(o, k))
        as_of = get("as_of")
        out[instance_type] = {"usd_per_hour": str(get("usd_per_hour")), "source": str(get("source")),
                              "as_of": as_of.isoformat() if hasattr(as_of, "isoformat") else str(as_of),
                              "region": str(region or ""), "sourced": "true", "override": "true"}
    return out


# ------------------------------------------------------------------ the dated cache `neuronfleet prices refresh` writes

CACHE_FORMAT = "neuronfleet-prices/1"


class PriceCacheError(ValueError):
    """A price cache file that cannot be used; the message names the file, the field and what is allowed."""


def write_cache(path: Path, *, region: str, read_at: datetime, prices: Mapping[str, Mapping[str, str]],
                failed: Mapping[str, str], endpoint: str) -> None:
    """The dated cache: every live price (an entry as the report's Price List read gives it: usd_per_hour, source,
    as_of, region, sourced, origin live) and, per type, why none was read."""
    doc = {"format": CACHE_FORMAT, "region": region, "read_at": read_at.isoformat(), "endpoint": endpoint,
           "prices": {t: dict(p) for t, p in sorted(prices.items())}, "failed": dict(sorted(failed.items()))}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)


def read_cache(path: Path, region: str) -> tuple[datetime, dict[str, dict[str, str]]]:
    """(when it was read, type -> price entry) from a cache file; PriceCacheError naming what is wrong."""
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise PriceCacheError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise PriceCacheError(f"{path}: not JSON ({exc}); run `neuronfleet prices refresh` again") from None
    if not isinstance(doc, dict) or doc.get("format") != CACHE_FORMAT:
        raise PriceCacheError(f"{path}: format is {doc.get('format') if isinstance(doc, dict) else doc!r}, "
                              f"expected {CACHE_FORMAT!r} (written by `neuronfleet prices refresh`)")
    if doc.get("region") != region:
        raise PriceCacheError(f"{path}: region is {doc.get('region')!r}, expected {region!r}")
    try:
        read_at = datetime.fromisoformat(str(doc["read_at"]))
    except (KeyError, ValueError):
        raise PriceCacheError(f"{path}: read_at is {doc.get('read_at')!r}, expected an ISO date and time") from None
    prices = doc.get("prices")
    if not isinstance(prices, dict):
        raise PriceCacheError(f"{path}: prices is {type(prices).__name__}, expected an object")
    out: dict[str, dict[str, str]] = {}
    for t, p in prices.items():
        if not isinstance(p, dict) or not {"usd_per_hour", "source", "as_of"} <= set(p):
            raise PriceCacheError(f"{path}: prices.{t} must be an object with usd_per_hour, source and as_of")
        try:
            if float(p["usd_per_hour"]) <= 0:
                raise ValueError
        except ValueError:
            raise PriceCacheError(f"{path}: prices.{t}.usd_per_hour is {p['usd_per_hour']!r}, expected a number > 0"
                                  ) from None
        out[str(t)] = {k: str(v) for k, v in p.items()} | {"origin": "live"}
    return read_at, out


def refreshed_price_table(catalog: InstanceCatalog = CATALOG, region: str | None = None,
                          overrides: Mapping[str, Any] | None = None, *, cache_file: Path | None = None
                          ) -> tuple[dict[str, dict[str, str]], str]:
    """:func:`price_table` with the prices ``neuronfleet prices refresh`` cached for ``region`` in ``cache_file`` (the
    command line chooses it: neuronfleet.cli.prices.default_cache_path; none or no such file, no cache): the fleet
    file's overrides first, then the cached live prices, then the built-in ones, each entry saying its ``origin``
    (override | live | catalog), the report's rule (cost.logic.pricelist.resolve). Returns (the table, one line saying
    which cache was used and when it was read, "" when none). A cache that cannot be used: PriceCacheError (one line:
    which file, what is wrong)."""
    table = price_table(catalog, region, overrides)
    where = region or "us-east-2"
    if cache_file is None or not cache_file.is_file():
        return table, ""
    path = cache_file
    read_at, live = read_cache(path, where)
    used = 0
    out: dict[str, dict[str, str]] = {}
    for t, p in table.items():
        if p.get("override") == "true":
            out[t] = {**p, "origin": "override"}
        elif t in live:
            out[t] = live[t]
            used += 1
        else:
            out[t] = {**p, "origin": p.get("origin") or "catalog"}
    for t, p in live.items():
        if t not in out:
            out[t] = p
            used += 1
    return out, (f"{used} live prices from `neuronfleet prices refresh` of {read_at.date().isoformat()} ({path}); "
                 "the fleet file's overrides win, the built-in prices fill the rest")
