"""``neuronfleet estimate``: what the GPU spend in an AWS cost export would cost on Trainium/Inferentia.

No Node.js: this reads the catalog, the price table and the exports (``neuronfleet.cost.exports``) and runs the
weekly report's own estimate (``neuronfleet.lambdas.cost.logic.evaluation.estimate``); nothing loads aws-cdk-lib.
``neuronfleet-estimate`` is the same command under its old name.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import click

from neuronfleet import CATALOG, load_fleet
from neuronfleet.facts.catalog import AcceleratorFamily, Price

from ..cost.estimate import accelerators_of
from ..cost.exports import FORMATS, ExportRows, read_export
from ..facts.prices import price_table
from ..lambdas.cost.logic.evaluation import estimate as run_estimate
from ..lambdas.cost.logic.rows import family_of
from .output import OK, BadInput, emit, json_option, progress

PRICE_REGION: str = str(Price.__dataclass_fields__["region"].default)
"""The region the catalog's prices are read in, where no fleet file or --region says another."""
LARGE_EXPORT_BYTES = 20 * 2**20
"""An export this large takes seconds to read: say so on stderr (a month of CUR 2.0 is often hundreds of MiB)."""
PRICE_SOURCE = "--price on the command line"
"""The source recorded for a price given with ``--price``."""


def parse_prices(values: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``TYPE=USD`` overrides, as the price table takes them (source: the command line, as of today)."""
    out: dict[str, dict[str, Any]] = {}
    today = datetime.now(UTC).date()
    for value in values:
        instance_type, sep, usd = value.partition("=")
        instance_type = instance_type.strip()
        try:
            price = Decimal(usd.strip()) if sep else Decimal("NaN")
        except InvalidOperation:
            price = Decimal("NaN")
        if family_of(instance_type) is None or not price.is_finite() or price < 0:
            raise BadInput.of("--price", value, "TYPE=USD per instance-hour, TYPE an accelerator instance type "
                                                "(p5.48xlarge, ml.inf2.xlarge, ...), USD a number >= 0",
                              what="estimate")
        out[instance_type] = {"usd_per_hour": price, "source": PRICE_SOURCE, "as_of": today}
    return out


def parse_ratios(values: tuple[str, ...]) -> tuple[Decimal | None, dict[str, Decimal]]:
    """``R`` (every line) or ``GPU_TYPE=R``: Neuron:GPU throughput, the work one Neuron instance does in the time one
    GPU instance does 1 (0.8: a Neuron instance does 80% of the GPU instance's work)."""
    every: Decimal | None = None
    per: dict[str, Decimal] = {}
    for value in values:
        instance_type, sep, raw = value.rpartition("=")
        try:
            ratio = Decimal(raw.strip())
        except InvalidOperation:
            ratio = Decimal("NaN")
        if not ratio.is_finite() or ratio <= 0 or (sep and family_of(instance_type.strip()) != "gpu"):
            raise BadInput.of("--ratio", value, "R or GPU_TYPE=R, R the Neuron:GPU throughput ratio, a number > 0 "
                                                "(0.8: a Neuron instance does 80% of a GPU instance's work)",
                              what="estimate")
        if sep:
            per[instance_type.strip()] = ratio
        else:
            every = ratio
    return every, per


def hour_ratios(types: list[str], every: Decimal | None, per: dict[str, Decimal]) -> dict[str, Decimal]:
    """Throughput ratios as the estimate takes them: Neuron instance-hours per GPU instance-hour (1 / throughput)."""
    out = {t: 1 / every for t in types} if every is not None else {}
    out.update({t: 1 / r for t, r in per.items()})
    return out


@click.command(short_help="What your GPU spend would cost on Trainium/Inferentia (no Node.js).",
               help="""What the GPU spend in EXPORT would cost on Trainium/Inferentia, per GPU type: the Neuron type
it maps to, the saving, and the break-even Neuron:GPU throughput ratio (the ratio at which the Neuron line costs what
the GPU line cost).

EXPORT is a file AWS writes: the JSON of `aws ce get-cost-and-usage --group-by Type=DIMENSION,Key=USAGE_TYPE
--metrics UnblendedCost UsageQuantity`, a CUR 2.0 (Data Exports) CSV or gzip CSV, a legacy CUR CSV, or an
instance_type,amount_usd,hours[,workload] CSV. Rows that are not GPU instance time are skipped and counted.
Prices: the catalog's (each with its source and date), a fleet file's prices:, and --price (strongest).""")
@click.argument("export", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["auto", *FORMATS]), default="auto", show_default=True,
              help="The export's format (auto: detected from the file).")
@click.option("--csv", "csv_path", type=click.Path(path_type=Path, dir_okay=False),
              help="An instance_type,amount_usd,hours[,workload] CSV (the same as EXPORT with --format simple).")
@click.option("--cost-explorer", "live", is_flag=True,
              help="Read the last --days days from Cost Explorer with your credentials ($0.01 a request).")
@click.option("--days", type=click.IntRange(1, 365), default=30, show_default=True,
              help="Days read with --cost-explorer.")
@click.option("-c", "--config", "--fleet", "fleet_path", type=click.Path(path_type=Path, dir_okay=False),
              help="A fleet file: its prices: and region are used.")
@click.option("--region", help="The region whose prices apply (default: the fleet file's, else us-east-2, where the "
                                "catalog's prices were read).")
@click.option("--price", "prices", multiple=True, metavar="TYPE=USD",
              help="An hourly price for one instance type, e.g. --price ml.inf2.xlarge=0.99 (repeatable).")
@click.option("--ratio", "ratios", multiple=True, metavar="[GPU_TYPE=]R",
              help="Neuron:GPU throughput ratio (0.8: a Neuron instance does 80% of a GPU instance's work), for "
                   "every line or one GPU type (repeatable; default 1, said so).")
@json_option
def estimate(export: Path | None, fmt: str, csv_path: Path | None, live: bool, days: int, fleet_path: Path | None,
             region: str | None, prices: tuple[str, ...], ratios: tuple[str, ...], as_json: bool) -> int:
    sources = [s for s in (export, csv_path, live or None) if s]
    if len(sources) != 1:
        raise BadInput.of("EXPORT | --csv | --cost-explorer", f"{len(sources)} given", "exactly one source of spend",
                          what="estimate")
    catalog = CATALOG
    overrides: dict[str, Any] = {}
    if fleet_path is not None:
        fleet = load_fleet(fleet_path)
        catalog, region, overrides = fleet.catalog, region or fleet.region, dict(fleet.prices)
    region = region or PRICE_REGION
    overrides.update(parse_prices(prices))
    every, per = parse_ratios(ratios)
    if live:
        got = _from_cost_explorer(days)
    else:
        path = export or csv_path
        assert path is not None
        if path.is_file() and path.stat().st_size > LARGE_EXPORT_BYTES:
            progress(f"reading {path} ({path.stat().st_size // 2**20} MiB) ...")
        got = read_export(path, "simple" if csv_path else None if fmt == "auto" else fmt)  # type: ignore[arg-type]
    table = price_table(catalog, region, overrides)
    result = run_estimate(got.rows, table, accelerators=accelerators_of(catalog), region=region,
                          ratios=hour_ratios(sorted({r.instance_type for r in got.rows}), every, per),
                          ratio_source="given with --ratio")
    result["input"] = got.summary()
    result["region"] = region
    emit(result, render(result, got), as_json=as_json)
    return OK


def _from_cost_explorer(days: int) -> ExportRows:
    from ..cost.estimate import rows_from_cost_explorer

    progress(f"reading {days} days of GPU spend from Cost Explorer ...")
    try:
        rows = rows_from_cost_explorer(days)
    except Exception as exc:  # credentials, access denied, throttling: one line, never a traceback
        name = type(exc).__name__
        if name in ("NoCredentialsError", "ClientError", "BotoCoreError", "NoRegionError") or \
                type(exc).__module__.startswith("botocore"):
            raise BadInput.of("--cost-explorer", f"{name}: {exc}", "credentials allowed ce:GetCostAndUsage "
                              "(or use an exported file)", what="estimate") from None
        raise
    out = ExportRows(source="Cost Explorer", format="cost-explorer")
    for row in rows:
        if row.family == "gpu":
            out.rows.append(row)
        else:
            out.skip("already on Neuron (Trainium, Inferentia)", row.amount)
    return out


def _money(value: str | None) -> str:
    if value is None:
        return "-"
    return f"-${value[1:]}" if value.startswith("-") else f"${value}"


def render(result: dict[str, Any], got: ExportRows) -> str:
    """The estimate as text: one line per GPU type, the totals, what was not estimated and why, what was skipped."""
    out = [f"{got.source} ({got.format}): {len(got.rows)} GPU row(s) read"]
    for reason, n in sorted(got.skipped.items()):
        out.append(f"  skipped {n} row(s), ${got.skipped_usd.get(reason, Decimal(0)):.2f}: {reason}")
    head = (f"{'GPU type':18} {'workload':9} {'-> Neuron':18} {'GPU hours':>10} {'GPU spend':>12} "
            f"{'Neuron est.':>12} {'saving':>12} {'break-even':>10}  throughput used")
    if result["lines"]:
        out += ["", head]
    for line in result["lines"]:
        out.append(f"{line['gpu_type']:18} {line['workload']:9} {line['neuron_type']:18} {line['instance_hours']:>10} "
                   f"{_money(line['gpu_spend_usd']):>12} {_money(line['neuron_estimate_usd']):>12} "
                   f"{_money(line['savings_usd']):>12} {line['break_even_ratio'] or '-':>10}  {line['ratio']}")
    if result["lines"]:
        out.append(f"total: GPU ${result['gpu_spend_usd']} -> Neuron ${result['neuron_estimate_usd']} "
                   f"({_verdict(result)})")
        out.append("break-even: the Neuron:GPU throughput ratio at which a line's Neuron estimate equals its GPU spend;"
                   " a measured ratio below it means the move costs more.")
        used = {line["neuron_type"]: line["neuron_price"] for line in result["lines"]}
        out.append("prices used: " + "; ".join(f"{t} ${p['usd_per_hour']}/h ({p['source']}, {p['as_of']})"
                                               for t, p in sorted(used.items())))
    else:
        out.append("no GPU line could be estimated")
    if result["not_estimated"]:
        out.append("not estimated:")
        for gpu_type, usd in result["not_estimated"].items():
            out.append(f"  {gpu_type} ${usd}: {result['not_estimated_why'][gpu_type]}")
        out += [f"  ({hint})" for hint in _hints(result["not_estimated_why"].values())]
    if result["lines"]:
        out.append(f"assumption: {result['assumption']}")
    return "\n".join(out)


def _verdict(result: dict[str, Any]) -> str:
    """The total's saving, or what the move costs more, and the break-even throughput ratio of every line taken
    together (one ratio for all: Neuron instance-hour cost at 1:1 over the GPU spend)."""
    saved, pct = Decimal(result["savings_usd"]), result["savings_percent"]
    gpu = Decimal(result["gpu_spend_usd"])
    at_one = sum((Decimal(line["instance_hours"]) * Decimal(line["neuron_price"]["usd_per_hour"])
                  for line in result["lines"]), Decimal(0))
    even = f"break-even at a Neuron:GPU throughput ratio of {at_one / gpu:.3f} for every line" if gpu > 0 else ""
    if saved < 0:
        more = f"{-Decimal(pct):.2f}% more" if pct is not None else "more"
        return f"costs ${-saved:.2f} more, {more}" + (f": {even}; a ratio above it would save" if even else "")
    return f"saves ${saved:.2f}" + (f", {pct}%" if pct is not None else "") + (f"; {even}" if even else "")


def _hints(reasons: Any) -> list[str]:
    """One hint per kind of reason a line was not estimated: a price to give, or a type the catalog lacks."""
    reasons = list(reasons)
    hints = []
    if any("price" in r for r in reasons):
        hints.append("give a missing price with --price TYPE=USD, or under prices: in a fleet file")
    if any("not in the instance catalog" in r for r in reasons):
        known = ", ".join(CATALOG.types(AcceleratorFamily.GPU))
        hints.append("a GPU type outside the kit's instance catalog has no known accelerator memory, so no Neuron "
                     f"type can be matched to it (a price does not help); the catalog knows the GPU types {known} "
                     "(docs/catalog.md)")
    return hints


__all__ = ["estimate", "parse_prices", "parse_ratios", "render"]
