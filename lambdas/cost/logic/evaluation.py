"""The evaluation-phase estimate: what GPU work would cost on Neuron, at the price table's prices. Pure: no AWS calls.

Prices come in with their source and date and go out with them, so every figure can be traced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from .economics import divide, show
from .rows import CostRow

INFERENCE_USAGES = ("sagemaker-hosting", "sagemaker-transform")
"""Usages whose GPU work moves to Inferentia (inference types); everything else with a family is training work."""

ASSUMED_RATIO = Decimal(1)
"""Neuron instance-hours per GPU instance-hour when the pilot measured none: an assumption, stated on every line."""


Accelerators = Mapping[str, tuple[str, int]]
"""EC2 instance type -> (family trainium|inferentia|gpu, accelerator memory GiB): the instance catalog's figures."""


def neuron_equivalent(gpu_type: str, *, inference: bool, accelerators: Accelerators,
                      prices: Mapping[str, Mapping[str, Any]], need_gib: int | None = None, region: str = ""
                      ) -> tuple[str | None, str]:
    """The cheapest priced Neuron type for ``gpu_type``'s work: inference types (Inferentia) for inference, training
    types (Trainium) for training, with at least the accelerator memory the work needs (``need_gib``, else the GPU
    type's own memory: the model fits the GPU it runs on). (type or None, why)."""
    ml = gpu_type.startswith("ml.")
    base = gpu_type.removeprefix("ml.")
    family = "inferentia" if inference else "trainium"
    need = need_gib if need_gib is not None else accelerators.get(base, ("", 0))[1]
    if need_gib is None and base not in accelerators:
        return None, f"{base}: accelerator memory unknown (not in the instance catalog)"
    fits = [(t, mem) for t, (fam, mem) in accelerators.items() if fam == family and mem >= need]
    priced = [(Decimal(str(prices[f"ml.{t}" if ml else t]["usd_per_hour"])), t) for t, _ in fits
              if (f"ml.{t}" if ml else t) in prices]
    if not fits:
        return None, f"no {family} type has {need} GiB of accelerator memory"
    if not priced:
        return None, (f"no {'SageMaker' if ml else 'EC2'} price for "
                      f"{', '.join(sorted(('ml.' if ml else '') + t for t, _ in fits))}{' in ' + region if region else ''}"
                      " (set one under prices: in the fleet file)")
    _, chosen = min(priced)
    return (f"ml.{chosen}" if ml else chosen), f"cheapest {family} type with >= {need} GiB of accelerator memory"


def estimate(gpu_rows: Iterable[CostRow], prices: Mapping[str, Mapping[str, Any]], *,
             accelerators: Accelerators | None = None, ratios: Mapping[str, Decimal] | None = None,
             equivalents: Mapping[str, str] | None = None, region: str = "",
             ratio_source: str = "measured by the pilot") -> dict[str, Any]:
    """What the GPU work of ``gpu_rows`` would cost on Neuron, at the price table's prices.

    Inference (SageMaker hosting, batch transform) maps to inference types, training (EC2, SageMaker training,
    Capacity Block fees) to training types, each to the cheapest priced type with enough accelerator memory
    (:func:`neuron_equivalent`; ``equivalents`` overrides per GPU type). Neuron instance-hours are the GPU
    instance-hours times ``ratios[gpu type]`` (Neuron instance-hours per GPU instance-hour, measured by the pilot),
    else times :data:`ASSUMED_RATIO`, and the line says which. SageMaker rows are priced with SageMaker entries,
    never at EC2 rates. Pass only spend that could move (no GPU standby). Full precision; rounded for display.
    Each line also gives its saving and ``break_even_ratio``: the Neuron:GPU throughput ratio (work of one Neuron
    instance-hour over one GPU instance-hour) at which its Neuron cost equals its GPU spend. ``region`` names where
    a missing price was looked for; ``ratio_source`` says where ``ratios`` come from.
    """
    accelerators, ratios, equivalents = accelerators or {}, ratios or {}, equivalents or {}
    lines: dict[tuple[str, bool], dict[str, Any]] = {}
    skipped: dict[str, Decimal] = {}
    reasons: dict[str, str] = {}
    for row in gpu_rows:
        neuron: str | None
        inference = row.usage in INFERENCE_USAGES
        gpu_price = prices.get(row.instance_type)
        if row.instance_type in equivalents:
            neuron, why = equivalents[row.instance_type], "given equivalent"
        else:
            neuron, why = neuron_equivalent(row.instance_type, inference=inference, accelerators=accelerators,
                                            prices=prices, region=region)
        if neuron is not None and gpu_price is None and row.usage_hours <= 0:
            neuron, why = None, f"no price for {row.instance_type} and no usage hours"
        if neuron is None or neuron not in prices:
            skipped[row.instance_type] = skipped.get(row.instance_type, Decimal(0)) + row.amount
            reasons[row.instance_type] = why if neuron is None else f"no price for {neuron}"
            continue
        if row.usage_hours > 0:
            hours = row.usage_hours
        else:
            q = divide(row.amount, Decimal(str(gpu_price["usd_per_hour"])) if gpu_price else Decimal(0),
                       why_not="the GPU price is 0")
            if q.value is None:
                skipped[row.instance_type] = skipped.get(row.instance_type, Decimal(0)) + row.amount
                reasons[row.instance_type] = f"no usage hours and {q.reason}"
                continue
            hours = q.value
        line = lines.setdefault((row.instance_type, inference), {
            "gpu_type": row.instance_type, "neuron_type": neuron, "workload": "inference" if inference else "training",
            "mapping": why, "gpu_spend": Decimal(0), "hours": Decimal(0)})
        line["gpu_spend"] += row.amount
        line["hours"] += hours
    out_lines = []
    total_gpu, total_neuron = Decimal(0), Decimal(0)
    for (gpu, _), line in sorted(lines.items()):
        used = prices[line["neuron_type"]]
        measured = ratios.get(gpu)
        ratio = measured if measured is not None else ASSUMED_RATIO
        neuron_hourly = Decimal(str(used["usd_per_hour"]))
        neuron_cost = line["hours"] * ratio * neuron_hourly
        break_even = divide(line["hours"] * neuron_hourly, line["gpu_spend"], why_not="no GPU spend")
        total_gpu += line["gpu_spend"]
        total_neuron += neuron_cost
        out_lines.append({
            "gpu_type": gpu, "neuron_type": line["neuron_type"], "workload": line["workload"],
            "mapping": line["mapping"], "instance_hours": show(line["hours"]),
            "neuron_instance_hours": show(line["hours"] * ratio),
            "throughput": (f"{ratio_source}: {measured.normalize()} Neuron instance-hours per GPU instance-hour"
                           if measured is not None else
                           f"assumed: {ASSUMED_RATIO} Neuron instance-hour per GPU instance-hour (no pilot measurement "
                           "for this type)"),
            "gpu_spend_usd": show(line["gpu_spend"]), "neuron_estimate_usd": show(neuron_cost),
            "savings_usd": show(line["gpu_spend"] - neuron_cost), "break_even_ratio": show(break_even.value, 3),
            "ratio": (f"{show(1 / ratio, 3)} Neuron:GPU ({ratio_source})" if measured is not None
                      else f"{ASSUMED_RATIO} Neuron:GPU (assumed)"),
            "neuron_price": {k: str(v) for k, v in used.items()},
            "gpu_price": {k: str(v) for k, v in prices.get(gpu, {}).items()},
        })
    saved = total_gpu - total_neuron
    pct = divide(saved * 100, total_gpu, why_not="no GPU spend estimated")
    assumed = [line["gpu_type"] for line in out_lines if line["throughput"].startswith("assumed")]
    return {
        "assumption": (f"throughput {ratio_source} for every line" if not assumed else
                       f"throughput assumed 1:1 for {', '.join(assumed)} (no pilot measurement): replace with the "
                       "pilot's measured ratio"),
        "lines": out_lines, "gpu_spend_usd": show(total_gpu), "neuron_estimate_usd": show(total_neuron),
        "savings_usd": show(saved), "savings_percent": show(pct.value),
        "not_estimated": {k: show(v) for k, v in sorted(skipped.items())},
        "not_estimated_why": dict(sorted(reasons.items())),
    }
