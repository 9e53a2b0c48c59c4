"""``neuronfleet prices refresh``: read current On-Demand prices from the AWS Price List Query API with your credentials
into the dated local cache ``neuronfleet estimate`` reads (neuronfleet.facts.prices.refreshed_price_table).

The read is the weekly report's own (neuronfleet.lambdas.cost: ``PriceListApi`` asks GetProducts, ``LivePrices``
decides what each answer means, ``plan_endpoint`` picks the nearest Price List endpoint): every catalog type (EC2) and
every ``ml.`` type the kit prices (SageMaker hosting). The report itself keeps its live prices in the cost ledger
(``PRICE#<region>``); this cache is the command line's, one JSON file per region (docs/cost.md, "Prices").
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from .output import FINDINGS, OK, BadInput, emit, json_option, progress


def default_cache_path(region: str) -> Path:
    """Where ``neuronfleet prices refresh`` keeps ``region``'s prices and ``neuronfleet estimate`` looks for them:
    ``$NEURONFLEET_PRICE_CACHE`` (a folder), else ``$XDG_CACHE_HOME/neuronfleet``, else ``~/.cache/neuronfleet``; one
    file per region, ``prices-<region>.json``. The command line's to read (the library reads no environment)."""
    folder = os.environ.get("NEURONFLEET_PRICE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "neuronfleet")
    return Path(folder) / f"prices-{region}.json"


@click.group(help="The prices the kit estimates with: refresh them from the AWS Price List Query API.")
def prices() -> None:
    """The group."""


@prices.command(help="""Read the On-Demand price of every catalog type (EC2, Linux) and every SageMaker hosting type
(ml.*) from the AWS Price List Query API (pricing:GetProducts, your credentials) and write them, dated, to the local
cache `neuronfleet estimate` uses (default: ~/.cache/neuronfleet/prices-<region>.json). Types with no usable answer keep
the built-in price; the command says which and why.""")
@click.option("--region", help="The region to price (default: the fleet file's, else us-east-2).")
@click.option("-c", "--config", "--fleet", "fleet_path", type=click.Path(path_type=Path, dir_okay=False),
              help="A fleet file: its region is priced (its prices: overrides stay on top when estimating).")
@click.option("--out", "out", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the cache here instead of the default path.")
@json_option
def refresh(region: str | None, fleet_path: Path | None, out: Path | None, as_json: bool) -> int:
    from ..facts.catalog import CATALOG
    from ..facts.prices import sagemaker_types, write_cache

    if fleet_path is not None and region is None:
        from .. import load_fleet

        region = load_fleet(fleet_path).region
    region = region or "us-east-2"
    types = [*CATALOG.types(), *sagemaker_types()]
    client, endpoint = _client(region)
    from ..lambdas.cost.adapters.pricelist import PriceListApi
    from ..lambdas.cost.logic.pricelist import LivePrices

    progress(f"reading {len(types)} prices for {region} from the AWS Price List Query API ({endpoint}) ...")
    now = datetime.now(UTC)
    found = LivePrices(api=PriceListApi(client), region=region).lookup(types, now)
    failures = set(found.failed.values())
    if not found.prices and failures and all(why.startswith("the API failed") for why in failures):
        why = sorted(failures)[0].removeprefix("the API failed (").removesuffix("); no further type asked this run")
        code, _, message = why.partition(": ")
        raise BadInput.of("pricing:GetProducts", code, f"credentials allowed pricing:GetProducts (AWS_PROFILE, "
                          f"AWS_ACCESS_KEY_ID, ...); AWS said: {message or why}", what="prices refresh")
    path = out or default_cache_path(region)
    if found.prices:
        write_cache(path, region=region, read_at=now, prices=found.prices, failed=found.failed, endpoint=endpoint)
    lines = [f"{len(found.prices)} of {len(types)} prices read live for {region} ({found.requests} GetProducts "
             f"requests to {endpoint}); " + (f"written to {path}" if found.prices else "nothing written")]
    if found.failed:
        lines.append(found.note())
    payload: dict[str, Any] = {"region": region, "endpoint": endpoint, "read_at": now.isoformat(),
                               "cache": str(path) if found.prices else None, "prices": found.prices,
                               "failed": found.failed, "requests": found.requests}
    emit(payload, "\n".join(lines), as_json=as_json)
    return OK if found.prices else FINDINGS


def _client(region: str) -> tuple[Any, str]:
    """(pricing client, endpoint region) for ``region``; BadInput when no Price List endpoint serves it."""
    import boto3

    from ..lambdas.cost.adapters.pricelist import plan_endpoint

    session = boto3.session.Session()
    endpoint, why = plan_endpoint(region, session)
    if endpoint is None:
        raise BadInput.of("--region", region, f"a region the Price List Query API serves ({why})", what="prices refresh")
    return session.client("pricing", region_name=endpoint), endpoint
