"""``neuronfleet estimate``: what the GPU spend in an AWS cost export would cost on Trainium/Inferentia.

No Node.js: this reads the catalog, the price table and the exports (``neuronfleet.cost.exports``) and runs the
weekly report's own estimate (``neuronfleet.lambdas.cost.logic.evaluation.estimate``); nothing loads aws-cdk-lib.
"""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import click

from neuronfleet.facts.catalog import CATALOG, AcceleratorFamily, Price, accelerators_of

from ..cost.exports import FORMATS, ExportRows, read_export
from ..facts.prices import PriceCacheError, refreshed_price_table
from ..lambdas.cost.logic.evaluation import (
    DTYPE_BYTES,
    MEMORY_MATCHED,
    SIZED,
    UNKNOWN,
    WORKLOADS,
    Declared,
    ModelSize,
    by_usage_type,
)
from ..lambdas.cost.logic.evaluation import estimate as run_estimate
from ..lambdas.cost.logic.rows import CostRow, family_of, parse_page
from .output import OK, BadInput, emit, json_option, progress
from .prices import default_cache_path

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


def _per_type(value: str) -> tuple[str | None, str]:
    """``GPU_TYPE=VALUE`` -> (type, value); ``VALUE`` -> (None, value)."""
    instance_type, sep, raw = value.rpartition("=")
    return (instance_type.strip() if sep else None), raw.strip()


def _positive(raw: str) -> Decimal | None:
    try:
        number = Decimal(raw)
    except InvalidOperation:
        return None
    return number if number.is_finite() and number > 0 else None


def parse_ratios(values: tuple[str, ...]) -> tuple[Decimal | None, dict[str, Decimal]]:
    """``N`` (every line) or ``GPU_TYPE=N``: Neuron instances per GPU instance, how many Neuron instances do the work
    of one GPU instance (the fleet file's ``gpu_variant.neuron_instances_per_gpu_instance``)."""
    every: Decimal | None = None
    per: dict[str, Decimal] = {}
    for value in values:
        instance_type, raw = _per_type(value)
        ratio = _positive(raw)
        if ratio is None or (instance_type is not None and family_of(instance_type) != "gpu"):
            raise BadInput.of("--ratio", value, "N or GPU_TYPE=N, N the Neuron instances per GPU instance for the same "
                                                "work, a number > 0 (2: two Neuron instances do what one GPU instance "
                                                "does), GPU_TYPE a GPU instance type", what="estimate")
        if instance_type is not None:
            per[instance_type] = ratio
        else:
            every = ratio
    return every, per


def hour_ratios(types: list[str], every: Decimal | None, per: dict[str, Decimal]) -> dict[str, Decimal]:
    """Ratios as the estimate takes them, per GPU type: Neuron instance-hours per GPU instance-hour (the same unit)."""
    out = {t: every for t in types} if every is not None else {}
    out.update(per)
    return out


def parse_workloads(values: tuple[str, ...]) -> Declared:
    """``inference|training`` (every GPU row nobody else declared) or ``GPU_TYPE=inference|training``."""
    every: str | None = None
    per: dict[str, str] = {}
    for value in values:
        instance_type, kind = _per_type(value)
        kind = kind.lower()
        if kind not in WORKLOADS or (instance_type is not None and family_of(instance_type) != "gpu"):
            raise BadInput.of("--workload", value, "inference | training (every GPU row), or GPU_TYPE=inference | "
                                                   "GPU_TYPE=training (one GPU type, e.g. g6e.12xlarge=inference)",
                              what="estimate")
        if instance_type is not None:
            per[instance_type] = kind
        else:
            every = kind
    return Declared(every=every, per_type=per)


_PARAMS = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<unit>[BbMm]?)$")


def parse_models(gib: tuple[str, ...], params: tuple[str, ...], dtype: str | None) -> dict[str, ModelSize]:
    """``--model-gib [GPU_TYPE=]N`` and ``--params [GPU_TYPE=]N[B|M]`` with ``--dtype``: the model per GPU type ("":
    every type)."""
    out: dict[str, ModelSize] = {}
    for value in gib:
        instance_type, raw = _per_type(value)
        size = _positive(raw)
        if size is None or (instance_type is not None and family_of(instance_type) != "gpu"):
            raise BadInput.of("--model-gib", value, "N or GPU_TYPE=N, N the model's size in GiB, a number > 0",
                              what="estimate")
        out[instance_type or ""] = ModelSize(size, f"--model-gib {value}")
    if params and dtype is None:
        raise BadInput.of("--dtype", "(not given)", "bf16 | fp16 | fp8 | int8, the weights' data type, with --params",
                          what="estimate")
    for value in params:
        instance_type, raw = _per_type(value)
        m = _PARAMS.match(raw)
        count = Decimal(m["n"]) * (Decimal(10) ** (9 if m["unit"] in "Bb" and m["unit"] else 6 if m["unit"] else 0)) \
            if m else Decimal(0)
        if count <= 0 or (instance_type is not None and family_of(instance_type) != "gpu"):
            raise BadInput.of("--params", value, "N or GPU_TYPE=N, N the model's parameters: 70B, 8B, 350M or a "
                                                 "number", what="estimate")
        assert dtype is not None
        out[instance_type or ""] = ModelSize.of_params(count, dtype, f"--params {value} --dtype {dtype}")
    return out


def fleet_models(fleet: Any, source: Path) -> dict[str, ModelSize]:
    """A fleet file's endpoints' ``model_size_gib``, for the GPU type each endpoint's GPU variant serves it on."""
    out: dict[str, ModelSize] = {}
    for i, e in enumerate(fleet.endpoints):
        if e.model_size_gib and e.gpu_variant is not None:
            out.setdefault(e.gpu_variant.instance_type, ModelSize(
                Decimal(e.model_size_gib), f"{source}: endpoints[{i}].model_size_gib"))
    return out


@click.command(short_help="What your GPU spend would cost on Trainium/Inferentia (no Node.js).",
               help="""What the GPU spend in EXPORT would cost on Trainium/Inferentia, per GPU type and workload: the
Neuron type it maps to, the saving, and the break-even in Neuron instances per GPU instance (the number of Neuron
instances per GPU instance at which both cost the same: GPU hourly price / Neuron hourly price; fewer saves).

EXPORT is a file AWS writes: the JSON of `aws ce get-cost-and-usage --group-by Type=DIMENSION,Key=USAGE_TYPE
[Type=TAG,Key=KEY] --metrics UnblendedCost UsageQuantity`, a CUR 2.0 (Data Exports) CSV or gzip CSV, a legacy CUR CSV,
or an instance_type,amount_usd,hours[,workload] CSV. Rows that are not GPU instance time are skipped and counted.

Workload: SageMaker Host:/AsyncInf:/Transform: rows are inference and Train: rows training by their usage type; any
other GPU row (EC2 instances, Capacity Blocks) is what the export's tag (--workload-tag) or column says, else what
--workload declares, else unknown: both Neuron targets are shown and it is left out of the totals.

Sizing: with the model (--model-gib, --params and --dtype, or a fleet file's endpoints' model_size_gib) inference
maps to the cheapest Neuron type whose NeuronCores hold it at a tensor-parallel degree Neuron supports; without it,
to the cheapest with the GPU type's accelerator memory (memory-matched), and the line says which.

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
              help="A fleet file: its prices:, region and endpoints' model_size_gib are used.")
@click.option("--region", help="The region whose prices apply (default: the fleet file's, else the region the "
                                "catalog's prices were read in).")
@click.option("--price", "prices", multiple=True, metavar="TYPE=USD",
              help="An hourly price for one instance type, e.g. --price ml.inf2.xlarge=0.99 (repeatable).")
@click.option("--ratio", "ratios", multiple=True, metavar="[GPU_TYPE=]N",
              help="Neuron instances per GPU instance for the same work (2: two Neuron instances do what one GPU "
                   "instance does; the fleet file's neuron_instances_per_gpu_instance), for every line or one GPU "
                   "type (repeatable; default 1, said so).")
@click.option("--workload", "workloads", multiple=True, metavar="[GPU_TYPE=]inference|training",
              help="What the GPU rows whose usage type does not say are: every such row, or one GPU type "
                   "(repeatable).")
@click.option("--workload-tag", metavar="KEY",
              help="A cost allocation tag whose values say inference or training: a Cost Explorer export grouped by "
                   "USAGE_TYPE and this TAG, or a CUR export's resource tags.")
@click.option("--model-gib", "model_gib", multiple=True, metavar="[GPU_TYPE=]N",
              help="The model's size in GiB, for every GPU type or one (repeatable): inference is sized by it.")
@click.option("--params", "params", multiple=True, metavar="[GPU_TYPE=]N",
              help="The model's parameters (70B, 8B, 350M), with --dtype: its size is parameters x bytes per "
                   "parameter.")
@click.option("--dtype", type=click.Choice(sorted(DTYPE_BYTES)), help="The weights' data type, with --params.")
@json_option
def estimate(export: Path | None, fmt: str, csv_path: Path | None, live: bool, days: int, fleet_path: Path | None,
             region: str | None, prices: tuple[str, ...], ratios: tuple[str, ...], workloads: tuple[str, ...],
             workload_tag: str | None, model_gib: tuple[str, ...], params: tuple[str, ...], dtype: str | None,
             as_json: bool) -> int:
    sources = [s for s in (export, csv_path, live or None) if s]
    if len(sources) != 1:
        raise BadInput.of("EXPORT | --csv | --cost-explorer", f"{len(sources)} given", "exactly one source of spend",
                          what="estimate")
    if workload_tag is not None and (live or not workload_tag.strip()):
        raise BadInput.of("--workload-tag", workload_tag, "a tag key, with an exported file (Cost Explorer grouped "
                          "by that TAG, or a CUR export); --cost-explorer reads no workload tag", what="estimate")
    catalog = CATALOG
    overrides: dict[str, Any] = {}
    models: dict[str, ModelSize] = {}
    if fleet_path is not None:
        from neuronfleet.fleetfile.schema import load_fleet  # pydantic: only with -c

        fleet = load_fleet(fleet_path)
        catalog, region, overrides = fleet.catalog, region or fleet.region, dict(fleet.prices)
        models = fleet_models(fleet, fleet_path)
    region = region or PRICE_REGION
    overrides.update(parse_prices(prices))
    every, per = parse_ratios(ratios)
    declared = parse_workloads(workloads)
    models.update(parse_models(model_gib, params, dtype))
    if live:
        got = _from_cost_explorer(days)
    else:
        path = export or csv_path
        assert path is not None
        if path.is_file() and path.stat().st_size > LARGE_EXPORT_BYTES:
            progress(f"reading {path} ({path.stat().st_size // 2**20} MiB) ...")
        got = read_export(path, "simple" if csv_path else None if fmt == "auto" else fmt,  # type: ignore[arg-type]
                          workload_tag=workload_tag)
    _check_declarations(got, declared)
    try:  # the prices `neuronfleet prices refresh` cached for the region, when there are any
        table, cache_note = refreshed_price_table(catalog, region, overrides, cache_file=default_cache_path(region))
    except PriceCacheError as exc:
        raise BadInput.of("price cache", str(exc), "a cache `neuronfleet prices refresh` wrote (run it again, or "
                          "remove the file)", what="estimate") from None
    result = run_estimate(got.work(), table, accelerators=accelerators_of(catalog), region=region,
                          ratios=hour_ratios(sorted({r.instance_type for r in got.rows}), every, per),
                          ratio_source="given with --ratio", declared=declared, models=models)
    result["input"] = got.summary()
    result["region"] = region
    result["price_cache"] = cache_note or None
    emit(result, render(result, got), as_json=as_json)
    return OK


def _check_declarations(got: ExportRows, declared: Declared) -> None:
    """A --workload GPU_TYPE= that contradicts the usage type of that type's rows is refused, naming both."""
    for row in got.rows:
        said = by_usage_type(row)
        wanted = declared.per_type.get(row.instance_type)
        if said and wanted and wanted != said:
            raise BadInput.of("--workload", f"{row.instance_type}={wanted}",
                              f"the workload of GPU rows whose usage type does not say; {row.instance_type}'s row "
                              f"{row.usage_type or row.usage} is {said} by its usage type", what="estimate")


def rows_from_cost_explorer(days: int = 30) -> list[CostRow]:
    """The last ``days`` days of accelerator spend from Cost Explorer, with the caller's credentials."""
    import boto3

    from ..lambdas.cost.adapters.cost_explorer import CostExplorer

    end = datetime.now(UTC).date()
    ce = CostExplorer(boto3.client("ce", region_name="us-east-1"))
    gpu_types = [t for s in CATALOG if s.family is AcceleratorFamily.GPU for t in (s.instance_type, f"ml.{s.instance_type}")]
    rows: list[CostRow] = []
    for page in ce.pages(end - timedelta(days=days), end, gpu_types):
        rows += parse_page(page)[0]
    print(f"Cost Explorer requests made: {ce.requests} (${ce.requests * 0.01:.2f})", file=sys.stderr)
    return rows


def _from_cost_explorer(days: int) -> ExportRows:
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
        out.add(row)
    return out


def _money(value: str | None) -> str:
    if value is None:
        return "-"
    return f"-${value[1:]}" if value.startswith("-") else f"${value}"


def _target_cells(t: dict[str, Any]) -> str:
    return (f"{t['neuron_type'] or '-':18} {_money(t.get('neuron_estimate_usd')):>12} {_money(t.get('savings_usd')):>12} "
            f"{t.get('break_even_neuron_instances_per_gpu_instance') or '-':>10}")


def _how(target: dict[str, Any]) -> str:
    """How a target was chosen: sized by the model, or memory-matched (and why), then the mapping."""
    sizing = target.get("sizing") or ""
    if not target.get("neuron_type") or sizing in ("", "given equivalent"):
        return str(target["mapping"])
    short = {SIZED: "sized by the model", MEMORY_MATCHED: "memory-matched (no model size)"}.get(sizing, sizing)
    return f"{short}: {target['mapping']}"


def render(result: dict[str, Any], got: ExportRows) -> str:
    """The estimate as text: one line per GPU type and workload (an unknown one with both targets), the totals, what
    was left out and why, what was skipped, the prices used (an unsourced one said once), and a suggestion per
    bursty type (asynchronous inference or batch: lambdas/cost/logic/scale_to_zero.py)."""
    out = _render_read(got)
    out += _render_lines(result)
    out += _render_totals(result)
    out += _render_prices(result) if result["lines"] else ["no GPU line could be estimated"]
    if result["not_estimated"]:
        out.append("not estimated:")
        for gpu_type, usd in result["not_estimated"].items():
            out.append(f"  {gpu_type} ${usd}: {result['not_estimated_why'][gpu_type]}")
        out += [f"  ({hint})" for hint in _hints(result["not_estimated_why"].values())]
    out += [f"suggestion: {text}" for text in result.get("suggestions") or ()]  # bursty types (shapes in --json)
    if result["lines"]:
        out.append(f"assumption: {result['assumption']}")
    return "\n".join(out)


def _render_read(got: ExportRows) -> list[str]:
    """What was read from the export, what was skipped and the tag values that declared nothing."""
    out = [f"{got.source} ({got.format}): {len(got.rows)} GPU row(s) read"]
    for reason, n in sorted(got.skipped.items()):
        out.append(f"  skipped {n} row(s), ${got.skipped_usd.get(reason, Decimal(0)):.2f}: {reason}")
    if got.other_labels:
        out.append("  tag values that say neither inference nor training (taken as undeclared): "
                   + ", ".join(f"{k} ({n} row(s))" for k, n in sorted(got.other_labels.items())))
    return out


def _render_lines(result: dict[str, Any]) -> list[str]:
    """The table: a line per GPU type and workload, both targets of an unknown workload, each with how it was chosen."""
    out: list[str] = []
    head = (f"{'GPU type':18} {'workload':9} {'decided by':22} {'GPU hours':>10} {'GPU spend':>12}  {'-> Neuron':18} "
            f"{'Neuron est.':>12} {'saving':>12} {'break-even':>10}  Neuron/GPU used")
    if result["lines"]:
        out += ["", head]
    for line in result["lines"]:
        start = (f"{line['gpu_type']:18} {line['workload']:9} {line['workload_from']:22} {line['instance_hours']:>10} "
                 f"{_money(line['gpu_spend_usd']):>12}  ")
        used = f"  {line['neuron_instances_per_gpu_instance']} ({line['ratio_from']})"
        if line["workload"] == UNKNOWN:
            for i, (kind, t) in enumerate(line["targets"].items()):
                lead = start if i == 0 else " " * len(start)
                out.append(f"{lead}{_target_cells(t)}{used if t['neuron_type'] else ''}  <- as {kind}")
                out.append(f"{'':20}as {kind}: {_how(t)}")
        else:
            out.append(f"{start}{_target_cells(line)}{used}")
            out.append(f"{'':20}{_how(line)}")
    return out


def _render_totals(result: dict[str, Any]) -> list[str]:
    """The declared lines' total and verdict, and what an undeclared workload left out of it."""
    out = []
    known = [x for x in result["lines"] if x["workload"] != UNKNOWN]
    if known:
        out.append(f"total of the declared lines: GPU ${result['gpu_spend_usd']} -> Neuron "
                   f"${result['neuron_estimate_usd']} ({_verdict(result)})")
    elif result["lines"]:
        out.append("no total: no line's workload is declared")
    unknown = result.get("unknown")
    if unknown:
        out.append(f"left out of the total: {unknown['lines']} line(s), ${unknown['gpu_spend_usd']} of GPU spend "
                   f"whose workload nobody declared ({', '.join(unknown['gpu_types'])}); both Neuron targets are "
                   "shown: declare it with --workload inference|training, --workload GPU_TYPE=inference|training or "
                   "--workload-tag KEY")
    return out


def _render_prices(result: dict[str, Any]) -> list[str]:
    """Under a table: break-even explained, the Neuron prices used with their sources, what rests on an unsourced or
    memory-matched figure, and the price cache."""
    out = ["break-even: the Neuron instances per GPU instance at which a line's Neuron estimate equals its GPU "
           "spend (GPU hourly price / Neuron hourly price); a measured ratio above it means the move costs "
           "more."]
    targets = [t for line in result["lines"]
               for t in (line["targets"].values() if line["workload"] == UNKNOWN else [line])]
    used_prices: dict[str, dict[str, Any]] = {}
    for t in targets:
        if t.get("neuron_type"):
            used_prices[t["neuron_type"]] = t["neuron_price"]
    out.append("prices used: " + "; ".join(f"{t} ${p['usd_per_hour']}/h ({p['as_of']})"
                                           for t, p in sorted(used_prices.items())))
    if result.get("unsourced_prices"):
        out.append(f"no public source for the price of {', '.join(result['unsourced_prices'])}: those figures "
                   "rest on an unsourced rate (give one with --price or a fleet file's prices:)")
    if any(t.get("sizing") == MEMORY_MATCHED for t in targets):
        out.append("memory-matched lines had no model size: give one with --model-gib, --params with --dtype, or "
                   "a fleet file's endpoints' model_size_gib, to size inference by the model")
    if result.get("sizing"):
        out.append(result["sizing"])
    sources = sorted({p["source"] for p in used_prices.values() if p["source"] and
                      not str(p["source"]).lower().startswith("unsourced")})
    if sources:
        out.append("price sources: " + "; ".join(sources))
    if result.get("price_cache"):
        out.append(f"prices: {result['price_cache']}")
    return out


def _verdict(result: dict[str, Any]) -> str:
    """The declared lines' saving, or what the move costs more, and their break-even taken together (one ratio for
    every declared line: the GPU spend over the Neuron cost at one Neuron instance per GPU instance)."""
    saved, pct = Decimal(result["savings_usd"]), result["savings_percent"]
    gpu = Decimal(result["gpu_spend_usd"])
    at_one = sum((Decimal(line["instance_hours"]) * Decimal(line["neuron_price"]["usd_per_hour"])
                  for line in result["lines"] if line["workload"] != UNKNOWN), Decimal(0))
    even = (f"break-even at {gpu / at_one:.2f} Neuron instances per GPU instance for every declared line"
            if at_one > 0 else "")
    if saved < 0:
        more = f"{-Decimal(pct):.2f}% more" if pct is not None else "more"
        return f"costs ${-saved:.2f} more, {more}" + (f": {even}; fewer would save" if even else "")
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


__all__ = ["estimate", "parse_models", "parse_prices", "parse_ratios", "parse_workloads", "render"]
