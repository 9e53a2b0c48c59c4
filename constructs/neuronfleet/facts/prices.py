"""The price table the cost monitors and the estimate use: every price with its source, date and region.

- EC2 types: the instance catalog's On-Demand price (AWS's Price List as aws/karpenter-provider-aws generates it,
  us-east-1, 2026-07-20), or a regional entry of ``data/prices.json`` when the fleet's region has one, or the fleet
  file's override (``prices:``).
- SageMaker types (``ml.*``): their own entries, never EC2 rates (SageMaker instances are priced apart): the hosting
  rates of data/prices.json ``sagemaker`` (an AWS sample's copy, dated, region-tagged; null where no source was found:
  see its ``about``), or the fleet file's.
- Each entry says ``sourced``: "false" when its price has no public source (data/prices.json ``unsourced``), and
  ``region``: where it was read; the report warns when a price is unsourced, from another region, or stale.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from .catalog import CATALOG, InstanceCatalog


@cache
def _data() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(resources.files("neuronfleet.facts.data").joinpath("prices.json").read_text())
    return doc


def sagemaker_types() -> tuple[str, ...]:
    """The ``ml.`` types a fleet file may price."""
    return tuple(sorted(_data()["sagemaker"]))


def price_table(catalog: InstanceCatalog = CATALOG, region: str | None = None,
                overrides: Mapping[str, Any] | None = None) -> dict[str, dict[str, str]]:
    """Every known price with its source and date, as the Lambdas receive it. ``overrides``: fleet-file entries
    (objects or mappings with usd_per_hour, source, as_of), for any catalog or ``ml.`` type."""
    data = _data()
    out: dict[str, dict[str, str]] = {}
    for s in catalog:
        p = s.price
        entry = {"usd_per_hour": str(p.usd_per_hour), "source": p.source, "as_of": p.as_of.isoformat(),
                 "region": p.region, "sourced": "false" if s.instance_type in data["unsourced"] else "true"}
        if s.instance_type in data["unsourced"] and p.source.startswith("https://aws.amazon.com/ec2/pricing"):
            entry["source"] = f"unsourced: {data['unsourced'][s.instance_type]}"
        regional = (data["regional"].get(region or "") or {}).get(s.instance_type)
        if regional:
            entry = {**{k: str(v) for k, v in regional.items()}, "region": str(region), "sourced": "true"}
        if region and entry["region"] != region:
            entry["note"] = f"read in {entry['region']}; the fleet runs in {region}, where the price may differ"
        out[s.instance_type] = entry
    for ml, p in data["sagemaker"].items():
        if p:
            out[ml] = {**{k: str(v) for k, v in p.items()}, "sourced": "true"}
    for instance_type, o in (overrides or {}).items():
        get = (lambda k, o=o: o[k]) if isinstance(o, Mapping) else (lambda k, o=o: getattr(o, k))
        as_of = get("as_of")
        out[instance_type] = {"usd_per_hour": str(get("usd_per_hour")), "source": str(get("source")),
                              "as_of": as_of.isoformat() if hasattr(as_of, "isoformat") else str(as_of),
                              "region": str(region or ""), "sourced": "true", "override": "true"}
    return out
