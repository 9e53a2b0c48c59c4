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
from .net import net_line
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
        elif m.get("capacity_fallback") and not m.get("gpu_type"):  # warm: no GPU variant runs; its type is the
            # last pool (gpu_type_of). A shadow's or baseline's pools are capacity fallback, not a standby
            mode, gpu_type, cost = "warm", gpu_type_of(m), _dec(m["capacity_fallback"]["usd"])
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
    """GPU cost per million units over Neuron's, both from the same judge run: single-stream figures (one request at a
    time over the judge's prompts), a latency comparison, never a capacity figure: no saving is computed from it."""
    n, g = v.variants.get(NEURON_VARIANT), v.variants.get(GPU_VARIANT)
    if not n or not g or not n.usd_per_million or not g.usd_per_million:
        return None
    return Decimal(str(g.usd_per_million)) / Decimal(str(n.usd_per_million))


Hours = Mapping[tuple[str, str], Decimal]
"""(endpoint, variant neuron|gpu) -> instance-hours recorded in the ledger (economics.attribute_hosting)."""

RATIO_FIELD = "gpu_variant.neuron_instances_per_gpu_instance"
"""Where a fleet file states its throughput ratio (Neuron instances one GPU instance replaces)."""


def gpu_type_of(m: Mapping[str, Any]) -> str:
    """The GPU type a model's throughput ratio refers to: its GPU variant's, else (a warm standby) the last of its
    Neuron variant's GPU instance pools, where the warm standby's type goes (settings.inference: ``instance_pools``
    first and the warm GPU standby last)."""
    if m.get("gpu_type"):
        return str(m["gpu_type"])
    pools = (m.get("capacity_fallback") or {}).get("types") or ()
    return str(pools[-1]) if pools else ""


def _rates(m: Mapping[str, Any], hours: Hours, list_prices: Mapping[str, Decimal] | None = None
           ) -> tuple[Decimal, Decimal | None, Decimal | None, str]:
    """The model's Neuron instance-hours and the cost of one instance-hour of its Neuron variant (recorded: spend over
    instance-hours in the ledger) and of its GPU type (recorded from its GPU variant, else the price table's list
    price: a warm standby records none), and where the GPU figure came from; None where there is none."""
    n_h, g_h = hours.get((m["endpoint"], NEURON_VARIANT), Decimal(0)), hours.get((m["endpoint"], GPU_VARIANT), Decimal(0))
    n_rate = divide(_dec(m["neuron_spend_usd"]), n_h, why_not="").value
    g_rate = divide(_dec(m["gpu_spend_usd"]), g_h, why_not="").value if m.get("gpu_type") else None
    where = "recorded"
    gpu_type = gpu_type_of(m)
    if not g_rate and gpu_type and (list_prices or {}).get(gpu_type):
        g_rate, where = (list_prices or {})[gpu_type], "the price table's list"
    return n_h, n_rate or None, g_rate or None, where


def _judge_text(v: Verdict | None) -> str:
    ratio = judged_ratio(v) if v is not None else None
    if v is None or ratio is None:
        return ""
    return (f"the pilot judge's run {v.run_id} ({v.prompts} prompts, one request at a time"
            + (", synthetic: fixture answers" if v.synthetic else "") + f") found GPU {show(ratio)}x Neuron per "
            f"million {v.unit}: a single-stream latency figure, not a capacity figure, so no saving is taken from it")


def savings(models: Sequence[Mapping[str, Any]], names: Mapping[str, str], verdicts: Sequence[Verdict],
            recorded_days: int, *, hours: Hours | None = None, ratios: Mapping[str, Decimal] | None = None,
            list_prices: Mapping[str, Decimal] | None = None) -> list[dict[str, Any]]:
    """Per model, what its Neuron work would have cost on GPU and the saving, as monthly rates, from a capacity figure
    only: a GPU baseline variant serving the same model (measured side by side under the same traffic), else the
    fleet's throughput ratio (``ratios``: endpoint -> Neuron instances one GPU instance replaces, as the fleet file
    states it) applied to the model's recorded Neuron instance-hours at the recorded cost of an instance-hour of its
    GPU variant. Never from the pilot judge's cost per million: the judge times one request at a time on a handful of
    prompts, which says nothing of what a batched server does in an hour (:func:`break_even` shows it, labelled).
    Nothing without either: no saving is claimed from a standby."""
    scale = _scale(recorded_days)
    hours, ratios = hours or {}, ratios or {}
    no_go = {v.endpoint for v in verdicts if v.outcome == "no-go"}  # unmeasured: no verdict, not a no-go
    out = []
    for m in models if scale is not None else ():
        assert scale is not None
        name = names.get(m["endpoint"], m["endpoint"])
        neuron = _dec(m["neuron_spend_usd"])
        gpu: Decimal | None = None
        basis, extra = "", {}
        for unit in ("tokens", "inferences"):
            c = m["units"][unit].get("comparison")
            if c:
                gpu = _dec(c["gpu_baseline_usd"])
                basis = (f"the pilot's GPU shadow variant's cost per million {unit}, serving a copy of the same "
                         "traffic" if m.get("gpu_role") == "shadow" else
                         f"the GPU baseline variant's cost per million {unit}, serving the same model")
                break
        ratio = ratios.get(m["endpoint"])
        n_h, n_rate, g_rate, where = _rates(m, hours, list_prices)
        if (gpu is None and ratio is not None and ratio > 0 and n_rate and g_rate and neuron > 0
                and m["endpoint"] not in no_go):  # a no-go model does not serve the same answers
            gpu = n_h / ratio * g_rate
            neuron_type = m["neuron_types"][0] if m.get("neuron_types") else "Neuron"
            gpu_type = gpu_type_of(m)
            basis = (f"the fleet file's throughput ratio: one {gpu_type} does the work of {ratio.normalize()} "
                     f"{neuron_type} ({RATIO_FIELD}), applied to {show(n_h)} recorded Neuron instance-hours at "
                     f"{where} ${show(g_rate)} per {gpu_type} instance-hour; break-even at "
                     f"{show(g_rate / n_rate)} Neuron instances per GPU instance (Neuron costs ${show(n_rate)} an "
                     "instance-hour)")
            extra = {"ratio": str(ratio.normalize()), "break_even_ratio": show(g_rate / n_rate)}
        if gpu is None:
            continue
        saved = gpu - neuron
        pct = divide(saved * 100, gpu, why_not="the GPU figure is $0")
        out.append({"model": name, "endpoint": m["endpoint"], "neuron_usd_month": show(neuron * scale),
                    "gpu_usd_month": show(gpu * scale), "savings_usd_month": show(saved * scale),
                    "savings_percent": show(pct.value), "basis": basis,
                    "gpu_over_neuron": str(divide(gpu, neuron, why_not="").value or ""),
                    "monthly_basis": monthly_basis(recorded_days), **extra})
    return out


def break_even(models: Sequence[Mapping[str, Any]], names: Mapping[str, str], verdicts: Sequence[Verdict], *,
               hours: Hours, ratios: Mapping[str, Decimal] | None = None,
               claimed: Sequence[str] = (), list_prices: Mapping[str, Decimal] | None = None) -> list[dict[str, Any]]:
    """Per model with a GPU variant (standby or shadow) and no saving ``claimed`` (endpoints): the Neuron:GPU
    throughput ratio at which the two cost the same (the cost of a GPU instance-hour over a Neuron one: recorded, or
    the GPU type's list price for a warm standby),
    what the fleet file states, and the pilot judge's single-stream ratio, labelled as what it is."""
    ratios = ratios or {}
    by_endpoint = {v.endpoint: v for v in verdicts}
    out = []
    for m in models:
        if m["endpoint"] in claimed or not gpu_type_of(m) or m.get("gpu_role") == "baseline":
            continue
        _, n_rate, g_rate, where = _rates(m, hours, list_prices)
        if not n_rate or not g_rate:
            continue
        name, gpu_type = names.get(m["endpoint"], m["endpoint"]), gpu_type_of(m)
        neuron_type = m["neuron_types"][0] if m.get("neuron_types") else "Neuron"
        be = show(g_rate / n_rate)
        stated = ratios.get(m["endpoint"])
        text = (f"{name}: one {gpu_type} instance-hour costs what {be} {neuron_type} instance-hours do ({where} "
                f"{gpu_type} price, recorded {neuron_type} cost), so "
                f"Neuron is cheaper while one {gpu_type} does less than the work of {be} {neuron_type}; "
                + (f"the fleet file states {stated.normalize()}" if stated is not None else
                   f"no throughput ratio is measured or stated ({RATIO_FIELD}), so no saving is claimed"))
        judged = _judge_text(by_endpoint.get(m["endpoint"]))
        out.append({"model": name, "endpoint": m["endpoint"], "gpu_type": gpu_type, "neuron_type": neuron_type,
                    "break_even_ratio": be, "stated_ratio": str(stated.normalize()) if stated is not None else None,
                    "judge": judged or None, "text": text + (f"; {judged}" if judged else "")})
    return out


def _short_basis(s: Mapping[str, Any]) -> str:
    if s.get("ratio"):
        return (f"{s['model']} at the fleet file's throughput ratio, {s['ratio']} Neuron instances per GPU instance "
                f"(break-even at {s['break_even_ratio']})")
    if "shadow" in str(s.get("basis")):
        return f"{s['model']} against the pilot's GPU shadow, measured on the same traffic"
    return f"{s['model']} against its GPU baseline variant, measured side by side"


def headline(*, net: Mapping[str, Any], savings: Sequence[Mapping[str, Any]], standby: Mapping[str, Any],
             estimate: Mapping[str, Any], pilot: Sequence[tuple[str, str]], synthetic: bool,
             break_even: Sequence[Mapping[str, Any]] = ()) -> str:
    """One line a person reads first, each claim with one figure: the net monthly cost of the fleet as deployed
    against GPU alone for the same work (``net.net``), then the per-work saving (a percentage: its dollars are the net's
    parts), else the evaluation estimate; the break-even of a model with no saving claimed; a hot standby's share of
    its model's cost; the pilot's verdicts (``pilot``: model name, ``go``, ``no-go`` or ``unmeasured``)."""
    tag = "Synthetic: " if synthetic else ""
    parts = [text for text in (net_line(net),) if text]
    per_work = net.get("per_work")
    if per_work and savings:
        pct = _dec(per_work["savings_percent"])
        parts.append(f"for the same work, Neuron serving costs {show(abs(pct))}% {'less' if pct >= 0 else 'more'} "
                     f"than GPU alone ({'; '.join(_short_basis(s) for s in savings)})")
    elif estimate.get("lines") and estimate.get("savings_percent") is not None:
        pct = _dec(estimate["savings_percent"])
        parts.append(f"the GPU work that could move would cost {show(abs(pct))}% {'less' if pct >= 0 else 'more'} on "
                     "Neuron (the evaluation estimate: "
                     + ("throughput measured by the pilot" if str(estimate.get("assumption", "")).startswith(
                         "throughput measured") else "throughput assumed until a pilot measures it") + ")")
    for b in break_even:
        parts.append(f"Neuron is cheaper for {b['model']} while one {b['gpu_type']} does less than the work of "
                     f"{b['break_even_ratio']} {b['neuron_type']} (break-even at recorded costs"
                     + ("; no throughput ratio measured, so no saving claimed)" if b["stated_ratio"] is None else
                        f"; the fleet file states {b['stated_ratio']})"))
    for s in standby.get("models", []):
        if s["mode"] == "hot":
            parts.append(f"{s['model']} keeps a hot GPU standby on {s['gpu_type']}: "
                         f"{s['standby_share_percent']}% of the model's monthly cost")
    if pilot:
        parts.append("pilot: " + ", ".join(f"{model} {'no verdict (prompts unmeasured)' if said == 'unmeasured' else said}"
                                            for model, said in pilot))
    if not parts:
        return ""
    text = "; ".join(parts)
    return (f"{tag}{text}" if tag else text[0].upper() + text[1:]) + "."
