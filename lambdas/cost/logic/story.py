"""What the migration report tells, beyond its tables: spend per day by family, per model the saving against GPU (from
a GPU baseline variant or the pilot judge's GPU cost per unit), the GPU standby's monthly cost against the Neuron
spend it protects, and one headline a person reads first.

Pure: figures in (the ledger's rows, ``economics.unit_economics``' models, the judge's verdicts), JSON-ready figures
out, computed at full precision and rounded only where shown. Monthly figures are rates over the days the ledger
recorded (30 / recorded days), as the verdict's are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from neuronfleet_contract.judge import Verdict
from neuronfleet_contract.variants import GPU_VARIANT, NEURON_VARIANT

from .economics import divide, show
from .rows import CostRow

FAMILIES = ("trainium", "inferentia", "gpu")


def spend_by_day_family(rows: Iterable[CostRow]) -> dict[str, dict[str, str]]:
    """day -> family -> spend (usage rows only: credits, refunds and taxes have no family)."""
    out: dict[str, dict[str, Decimal]] = {}
    for r in rows:
        if r.family in FAMILIES and r.day:
            day = out.setdefault(r.day, {})
            day[r.family] = day.get(r.family, Decimal(0)) + r.amount
    return {d: {f: str(show(v)) for f, v in sorted(fam.items())} for d, fam in sorted(out.items())}


def _scale(recorded_days: int) -> Decimal | None:
    return Decimal(30) / Decimal(recorded_days) if recorded_days > 0 else None


def _dec(value: object) -> Decimal:
    return Decimal(str(value)) if value not in (None, "") else Decimal(0)


def monthly_basis(recorded_days: int) -> str:
    return f"monthly rates from {recorded_days} recorded days"


def gpu_standby(models: Sequence[Mapping[str, Any]], names: Mapping[str, str], recorded_days: int) -> dict[str, Any]:
    """Per model with a GPU standby: ``hot`` (the weight-0 GPU variant: its whole spend, standby and failover days) or
    ``warm`` (GPU instance pools of the Neuron variant: what they cost, $0 while Neuron has capacity), against the
    model's Neuron spend, both as monthly rates. ``names``: endpoint -> the fleet file's model name."""
    scale = _scale(recorded_days)
    out = []
    for m in models if scale is not None else ():
        if m.get("gpu_role") == "standby":
            mode, gpu_type, cost = "hot", m["gpu_type"], _dec(m["gpu_spend_usd"])
        elif m.get("capacity_fallback"):
            mode, gpu_type, cost = "warm", ", ".join(m["capacity_fallback"]["types"]), _dec(m["capacity_fallback"]["usd"])
        else:
            continue
        assert scale is not None
        neuron = _dec(m["neuron_spend_usd"]) * scale
        cost *= scale
        share = divide(cost * 100, cost + neuron, why_not="no spend recorded for the model")
        out.append({"model": names.get(m["endpoint"], m["endpoint"]), "endpoint": m["endpoint"], "mode": mode,
                    "gpu_type": gpu_type, "standby_usd_month": show(cost), "neuron_usd_month": show(neuron),
                    "standby_share_percent": show(share.value), "monthly_basis": monthly_basis(recorded_days)})
    return {"models": out}


def judged_ratio(v: Verdict) -> Decimal | None:
    """GPU cost per million units over Neuron's, both from the same judge run (single-stream figures, so alike)."""
    n, g = v.variants.get(NEURON_VARIANT), v.variants.get(GPU_VARIANT)
    if not n or not g or not n.usd_per_million or not g.usd_per_million:
        return None
    return Decimal(str(g.usd_per_million)) / Decimal(str(n.usd_per_million))


def savings(models: Sequence[Mapping[str, Any]], names: Mapping[str, str], verdicts: Sequence[Verdict],
            recorded_days: int) -> list[dict[str, Any]]:
    """Per model, what its Neuron work would have cost on GPU and the saving, as monthly rates: from a GPU baseline
    variant serving the same model (measured side by side in production), else from the pilot judge's run: the
    model's Neuron spend times GPU's cost per million units over Neuron's, both measured in that run. Nothing without
    either: no saving is claimed from a standby."""
    scale = _scale(recorded_days)
    by_endpoint = {v.endpoint: v for v in verdicts}
    out = []
    for m in models if scale is not None else ():
        assert scale is not None
        name = names.get(m["endpoint"], m["endpoint"])
        neuron = _dec(m["neuron_spend_usd"])
        gpu: Decimal | None = None
        basis = ""
        for unit in ("tokens", "inferences"):
            c = m["units"][unit].get("comparison")
            if c:
                gpu, basis = _dec(c["gpu_baseline_usd"]), f"the GPU baseline variant's cost per million {unit}"
                break
        v = by_endpoint.get(m["endpoint"])
        ratio = judged_ratio(v) if v is not None and v.go else None
        if gpu is None and v is not None and ratio is not None and neuron > 0:
            gpu = neuron * ratio
            basis = (f"the pilot judge's run {v.run_id}: GPU costs {show(ratio)}x Neuron per million {v.unit} "
                     "(one request at a time, as the judge measures: batching may move it)"
                     + (" (synthetic: fixture answers)" if v.synthetic else ""))
        if gpu is None:
            continue
        saved = gpu - neuron
        pct = divide(saved * 100, gpu, why_not="the GPU figure is $0")
        out.append({"model": name, "endpoint": m["endpoint"], "neuron_usd_month": show(neuron * scale),
                    "gpu_usd_month": show(gpu * scale), "savings_usd_month": show(saved * scale),
                    "savings_percent": show(pct.value), "basis": basis,
                    "monthly_basis": monthly_basis(recorded_days)})
    return out


def headline(*, savings: Sequence[Mapping[str, Any]], standby: Mapping[str, Any], estimate: Mapping[str, Any],
             pilot: Sequence[tuple[str, bool]], names: Mapping[str, str], synthetic: bool) -> str:
    """One line a person reads first: the saving against GPU, else the evaluation estimate, then the standby's
    share and the pilot's verdicts (``pilot``: model name, go). ``names``: endpoint -> model name."""
    tag = "Synthetic: " if synthetic else ""
    parts = []
    if savings:
        neuron = sum((_dec(s["neuron_usd_month"]) for s in savings), Decimal(0))
        gpu = sum((_dec(s["gpu_usd_month"]) for s in savings), Decimal(0))
        pct = divide((gpu - neuron) * 100, gpu, why_not="")
        parts.append(f"Neuron serves {', '.join(s['model'] for s in savings)} for ${show(neuron)} a month where GPU "
                     f"would cost ${show(gpu)}: ${show(gpu - neuron)} a month saved"
                     + (f" ({show(pct.value)}%)" if pct.value is not None else ""))
    elif estimate.get("lines"):
        parts.append(f"the GPU work recorded (${estimate['gpu_spend_usd']}) would cost ${estimate['neuron_estimate_usd']}"
                     f" on Neuron, {estimate['savings_percent']}% less (an estimate: "
                     + ("throughput measured by the pilot" if estimate["assumption"].startswith("throughput measured")
                        else "throughput assumed 1:1 until a pilot measures it") + ")")
    for s in standby.get("models", []):
        if s["mode"] == "hot":
            parts.append(f"the hot GPU standby of {s['model']} costs ${s['standby_usd_month']} a month, "
                         f"{s['standby_share_percent']}% of the model's cost")
    if pilot:
        parts.append("pilot: " + ", ".join(f"{model} {'go' if go else 'no-go'}" for model, go in pilot))
    if not parts:
        return ""
    text = "; ".join(parts)
    return (f"{tag}{text}" if tag else text[0].upper() + text[1:]) + "."
