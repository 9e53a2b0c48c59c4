"""Unit economics and the migration verdict (the evaluation-phase estimate is in evaluation.py). Pure: no AWS calls.

Prices come in with their source and date (from the instance catalog, fleet overrides applied at synth)
and go out with them, so every figure in a report can be traced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from neuronfleet_contract.cost import EndpointModel
from neuronfleet_contract.variants import GPU_POOL_SHARE

from .rows import CostRow

# The migration guide's thresholds on monthly GPU inference spend (USD), quoted: the guide's figures, not the kit's.
INFERENCE_PAYS_USD = Decimal(10_000)
INFERENCE_LARGE_USD = Decimal(100_000)
GUIDE = "the migration guide (quoted)"


@dataclass(frozen=True)
class Spend:
    """Spend over a period by workload and accelerator family. The workload comes from the usage type: SageMaker
    hosting and batch transform are inference, SageMaker training, EC2 instances and Capacity Block fees are
    training, SageMaker processing is processing; credits, refunds and taxes (no family) are not counted here."""

    by: Mapping[tuple[str, str], Decimal]

    @classmethod
    def of(cls, rows: Iterable[CostRow]) -> Spend:
        by: dict[tuple[str, str], Decimal] = {}
        for r in rows:
            if not r.family:
                continue
            key = (r.workload, r.family)
            by[key] = by.get(key, Decimal(0)) + r.amount
        return cls(by)

    def get(self, workload: str, family: str) -> Decimal:
        return self.by.get((workload, family), Decimal(0))

    def workload(self, workload: str) -> Decimal:
        return sum((v for (w, _), v in self.by.items() if w == workload), Decimal(0))

    def family(self, family: str) -> Decimal:
        return sum((v for (_, f), v in self.by.items() if f == family), Decimal(0))


@dataclass(frozen=True)
class Quotient:
    """A division that may not be possible: ``value`` (full precision) or None with ``reason``."""

    value: Decimal | None
    reason: str = ""


def divide(numerator: Decimal, denominator: Decimal, *, why_not: str) -> Quotient:
    """``numerator / denominator`` at full precision; None with ``why_not`` when the denominator is 0 or not finite."""
    if not denominator.is_finite() or not numerator.is_finite():
        return Quotient(None, f"{why_not} (not a finite number)")
    if denominator == 0:
        return Quotient(None, why_not)
    return Quotient(numerator / denominator)


def cost_per_million(spend: Decimal, units: Decimal, *, what: str = "units") -> Quotient:
    """USD per million ``units``, unrounded (rounding is for display only: :func:`show`)."""
    q = divide(spend, units, why_not=f"no {what} recorded")
    return q if q.value is None else Quotient(q.value * MILLION)


MILLION = Decimal(1_000_000)


def show(value: Decimal | None, places: int = 2) -> str | None:
    """For display only: ``places`` decimals. Never fed back into a computation."""
    if value is None:
        return None
    return str(value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def show_unit(value: Decimal | None, places: int = 2) -> str | None:
    """A unit cost for display only: ``places`` decimals, or 4 significant digits below 1 (a cost per million of
    $0.0049 stays visible instead of reading 0.00). Never fed back into a computation."""
    if value is None:
        return None
    if value != 0 and abs(value) < 1:
        exponent = value.adjusted() - 3
        return str(value.quantize(Decimal(1).scaleb(min(exponent, -places)), rounding=ROUND_HALF_UP))
    return str(value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


COMPARED_ROLES = ("baseline", "shadow")
"""GPU variants whose cost per million is a capacity figure for the same work: a baseline serves a share of the same
model's traffic, a shadow a copy of (a share of) its requests, each at its own instance count. The figure divides the
variant's own spend by its own Invocations, so it holds whatever share SageMaker replicates to a shadow (how much an
endpoint configuration's ShadowProductionVariants entry receives is not confirmed offline: docs/checks.md)."""

Counts = Mapping[tuple[str, str, str], Decimal]
"""(endpoint, variant neuron|gpu, day) -> count (SageMaker Invocations, or the workloads' Tokens)."""


def attribute_hosting(rows: Iterable[CostRow], models: Sequence[EndpointModel]
                      ) -> tuple[dict[tuple[str, str, str], Decimal], dict[str, str], dict[tuple[str, str], Decimal]]:
    """SageMaker hosting spend per (endpoint, variant, day), from the ledger's rows per instance type: a type that
    exactly one endpoint variant uses is that variant's. Cost Explorer has no per-endpoint figure (rows are per usage
    type), so a type two endpoints share cannot be split honestly (splitting by invocations is what made a cheap
    embeddings endpoint subsidise a chat model): its spend is listed as not attributed, with the reason. A GPU type
    that is both an endpoint's running GPU variant (hot standby, baseline, shadow) and a pool of its Neuron variant
    (config/pilot.yaml: the g6e shadow and the g6e pool) is booked to the GPU variant, which runs all the time; the
    pool's hours of that type, if SageMaker took it, are counted with it (Cost Explorer cannot tell them apart). Also
    the instance-hours per (endpoint, variant), for the pilot's measured throughput."""
    owners: dict[str, list[tuple[str, str]]] = {}
    for m in models:
        for t in m.neuron_types:
            owners.setdefault(t, []).append((m.endpoint, "neuron"))
        if m.gpu_type:
            owners.setdefault(m.gpu_type, []).append((m.endpoint, "gpu"))
        for t in m.gpu_pool_types:
            if (m.endpoint, "gpu") not in owners.get(t, []):  # the running GPU variant's own type: booked to it
                owners.setdefault(t, []).append((m.endpoint, GPU_POOL_SHARE))
    out: dict[tuple[str, str, str], Decimal] = {}
    hours: dict[tuple[str, str], Decimal] = {}
    unattributed: dict[str, Decimal] = {}
    gpu_types: set[str] = set()
    for r in rows:
        if r.usage != "sagemaker-hosting":
            continue
        if r.family == "gpu":
            gpu_types.add(r.instance_type)
        who = owners.get(r.instance_type, [])
        if len(who) == 1:
            key = (*who[0], r.day)
            out[key] = out.get(key, Decimal(0)) + r.amount
            hours[who[0]] = hours.get(who[0], Decimal(0)) + r.usage_hours
        else:
            unattributed[r.instance_type] = unattributed.get(r.instance_type, Decimal(0)) + r.amount
    reasons = {}
    for t, amount in sorted(unattributed.items()):
        users = owners.get(t, [])
        why = (f"shared by {', '.join(f'{e}/{v}' for e, v in users)}: Cost Explorer has no per-endpoint figure"
               if users else "no endpoint of this fleet is configured on this type"
               + ("; GPU work outside the fleet (e.g. a team's own GPU endpoint): the evaluation "
                  "estimate takes it as GPU work that could move" if t in gpu_types else ""))
        reasons[t] = f"${show(amount)} not attributed to a model: {why}"
    return out, reasons, hours


def count(value: Decimal) -> str:
    """A count for display: whole numbers without a trailing ``.0``."""
    return str(value.quantize(Decimal(1))) if value == value.to_integral_value() else str(value)


def _sum(values: Mapping[tuple[str, str, str], Decimal], endpoint: str, variant: str,
         days: Iterable[str] | None = None) -> Decimal:
    wanted = None if days is None else set(days)
    return sum((v for (e, var, d), v in values.items() if e == endpoint and var == variant
                and (wanted is None or d in wanted)), Decimal(0))


def per_model(models: Sequence[EndpointModel], spend: Mapping[tuple[str, str, str], Decimal], invocations: Counts,
              tokens: Counts) -> list[dict[str, Any]]:
    """Cost per million inferences and tokens per model (endpoint): its Neuron variant against the GPU variant that
    served the same model. A GPU standby is never a baseline: its standby days and its failover days (days it served
    traffic) are shown apart, and no savings are claimed from them."""
    out = []
    for m in models:
        entry: dict[str, Any] = {"endpoint": m.endpoint, "model": m.name, "neuron_types": list(m.neuron_types),
                                 "gpu_type": m.gpu_type,
                                 "gpu_role": m.gpu_role or "none"}
        n_spend = _sum(spend, m.endpoint, "neuron")
        g_spend = _sum(spend, m.endpoint, "gpu")
        entry["neuron_spend_usd"] = show(n_spend)
        entry["gpu_spend_usd"] = show(g_spend)
        if m.gpu_pool_types:
            entry["capacity_fallback"] = {"types": list(m.gpu_pool_types),
                                          "usd": show(_sum(spend, m.endpoint, GPU_POOL_SHARE)),
                                          "note": "the Neuron variant on its GPU instance pools (no Neuron capacity): "
                                                  "shown apart, not a baseline"}
        gpu_days = {d for (e, v, d) in spend if e == m.endpoint and v == "gpu"}
        served = {d for (e, v, d), n in invocations.items() if e == m.endpoint and v == "gpu" and n > 0}
        units: dict[str, Any] = {}
        for unit, counts in (("inferences", invocations), ("tokens", tokens)):
            n_units = _sum(counts, m.endpoint, "neuron")
            n_cpm = cost_per_million(n_spend, n_units, what=f"Neuron {unit}")
            u: dict[str, Any] = {"neuron_units": count(n_units), "neuron_usd_per_million": show_unit(n_cpm.value)}
            if n_cpm.value is None:
                u["neuron_why_none"] = n_cpm.reason
            if m.gpu_role in COMPARED_ROLES:
                g_units = _sum(counts, m.endpoint, "gpu")
                g_cpm = cost_per_million(g_spend, g_units, what=f"GPU {unit}")
                u |= {"gpu_units": count(g_units), "gpu_usd_per_million": show_unit(g_cpm.value)}
                if g_cpm.value is None:
                    u["comparison"] = None
                    u["why_none"] = g_cpm.reason
                elif n_cpm.value is None:
                    u["comparison"] = None
                    u["why_none"] = n_cpm.reason
                else:
                    baseline = n_units * g_cpm.value / MILLION
                    saved = baseline - n_spend
                    pct = divide(saved * 100, baseline, why_not="the GPU baseline is $0")
                    u["comparison"] = {"gpu_baseline_usd": show(baseline), "savings_usd": show(saved),
                                       "savings_percent": show(pct.value), "why_none": pct.reason or None,
                                       "_saved": saved}
            units[unit] = u
        entry["units"] = units
        if m.gpu_role in ("standby", "shadow"):
            failover_days = sorted(served & gpu_days) if m.gpu_role == "standby" else []
            standby_days = sorted(gpu_days - set(failover_days))
            f_spend = _sum(spend, m.endpoint, "gpu", failover_days)
            f_calls = _sum(invocations, m.endpoint, "gpu", failover_days)
            f_cpm = cost_per_million(f_spend, f_calls, what="GPU inferences during the failover")
            entry[m.gpu_role] = {
                "days": len(standby_days), "usd": show(_sum(spend, m.endpoint, "gpu", standby_days)),
                "note": ("the GPU standby's cost while Neuron served: insurance for the failover, not a baseline "
                         "and never savings" if m.gpu_role == "standby" else
                         "a shadow copy of the traffic: its responses serve nobody, its cost is the pilot's")}
            if m.gpu_role == "standby":
                entry["failover"] = {"days": failover_days, "usd": show(f_spend), "inferences": count(f_calls),
                                     "gpu_usd_per_million": show_unit(f_cpm.value),
                                     "note": "days the standby served traffic: shown apart, never as savings"}
        out.append(entry)
    return out


def unit_economics(models: Sequence[EndpointModel], spend: Mapping[tuple[str, str, str], Decimal],
                   invocations: Counts, tokens: Counts) -> dict[str, Any]:
    """Per model, plus the savings summed over the models that have a GPU baseline (never a pooled cost per
    million: an embeddings endpoint's cheap calls would make a chat model look free)."""
    models_out = per_model(models, spend, invocations, tokens)
    totals: dict[str, Any] = {}
    for unit in ("inferences", "tokens"):
        compared = [m for m in models_out if (m["units"][unit].get("comparison") or {}).get("_saved") is not None]
        saved = sum((m["units"][unit]["comparison"]["_saved"] for m in compared), Decimal(0))
        totals[unit] = {"models_compared": [m["endpoint"] for m in compared],
                        "savings_usd": show(saved) if compared else None,
                        "why_none": None if compared else "no model has both a Neuron and a GPU baseline variant "
                                                          "with work recorded"}
    for m in models_out:
        for u in m["units"].values():
            if u.get("comparison"):
                u["comparison"].pop("_saved", None)
    return {"models": models_out, "compared": totals}


def unit_costs(models: Sequence[EndpointModel], spend: Mapping[tuple[str, str, str], Decimal], invocations: Counts,
               tokens: Counts) -> list[tuple[str, str, str, Decimal]]:
    """(endpoint, variant, unit, USD per million) at full precision, from the same quantities as :func:`per_model`:
    the Neuron variant always, the GPU variant only when it is a baseline (a standby's figure is no unit cost)."""
    out = []
    for m in models:
        variants = ("neuron", "gpu") if m.gpu_role in COMPARED_ROLES else ("neuron",)
        for unit, counts in (("inferences", invocations), ("tokens", tokens)):
            for v in variants:
                q = cost_per_million(_sum(spend, m.endpoint, v), _sum(counts, m.endpoint, v))
                if q.value is not None:
                    out.append((m.endpoint, v, unit, q.value))
    return out


def recorded(rows: Iterable[CostRow], queried: Iterable[str] = ()) -> list[str]:
    """The days of the period actually recorded, once each: each day Cost Explorer answered when the collector asked
    (``queried``: the ledger's marks, ledger.answered_days; a day with no spend, an asynchronous endpoint at zero
    instances, included) and each day the ledger holds rows for (a ledger written before the marks). A day never
    asked and without rows is not recorded: a run the collector missed never lengthens the period."""
    return sorted(set(queried) | {r.day for r in rows if r.day})


def recorded_days(rows: Iterable[CostRow], queried: Iterable[str] = ()) -> int:
    """How many days of the period are recorded (:func:`recorded`): what monthly rates scale from."""
    return len(recorded(rows, queried))


def verdict(movable: Spend, days: int, *, period_days: int | None = None) -> list[str]:
    """What the GPU work that could move (``movable``: GPU rows no model of the fleet serves on, not the fleet's own
    GPU pool; the same rows the evaluation estimate prices) means for a migration, per workload kind, against the
    migration guide's thresholds on monthly inference spend (:data:`INFERENCE_PAYS_USD`, :data:`INFERENCE_LARGE_USD`;
    quoted and labelled, never an expected saving: the kit states only the savings it computes). No dollar figure: the
    report states each figure once (the spend in the evaluation estimate, the fleet's own cost in the net)."""
    of = f" of {period_days}" if period_days is not None else ""
    if days <= 0:
        return [f"No verdict: 0{of} days of spend recorded (no days to scale a monthly rate from)."]
    scale = Decimal(30) / Decimal(days)
    basis = f"a monthly rate from {days}{of} recorded days"
    gpu_inference = movable.get("inference", "gpu") * scale
    lines = []
    if gpu_inference == 0:
        lines.append("Inference: no GPU inference work outside the fleet's own models to move (the fleet's own "
                     "serving is in the net).")
    elif gpu_inference > INFERENCE_LARGE_USD:
        lines.append(f"Inference: the GPU inference work that could move is over ${INFERENCE_LARGE_USD:,} a month "
                     f"({basis}), {GUIDE} mark for a large migration; what it would cost on Neuron is the evaluation "
                     "estimate's figure, not the guide's.")
    elif gpu_inference > INFERENCE_PAYS_USD:
        lines.append(f"Inference: the GPU inference work that could move is over ${INFERENCE_PAYS_USD:,} a month "
                     f"({basis}), where {GUIDE} says migrating inference pays.")
    else:
        lines.append(f"Inference: the GPU inference work that could move is at most ${INFERENCE_PAYS_USD:,} a month "
                     f"({basis}), where {GUIDE} says the migration effort may not pay back yet.")
    if movable.get("training", "gpu") > 0:
        lines.append("Training: GPU training work outside the fleet's GPU pool could move to Trainium; the kit claims "
                     "no saving for it until a throughput ratio is measured (the evaluation estimate says what it "
                     "assumes).")
    if movable.get("processing", "gpu") > 0:
        lines.append("Processing: GPU processing work could move; the kit has no figure for it.")
    if movable.get("unknown", "gpu") > 0:
        lines.append("GPU work of unknown kind (inference or training): declare it to estimate it.")
    return lines


def measured_ratios(models: Sequence[EndpointModel], hours: Mapping[tuple[str, str], Decimal],
                    invocations: Counts) -> dict[str, Decimal]:
    """Neuron instance-hours per GPU instance-hour for the same work, per GPU type, from the pilot's own metrics: a
    model whose GPU variant is a baseline (or shadow) with invocations and instance-hours on both variants.
    ``hours``: (endpoint, variant) -> instance-hours from the ledger."""
    out: dict[str, Decimal] = {}
    for m in models:
        if m.gpu_role not in ("baseline", "shadow"):
            continue
        n_h, g_h = hours.get((m.endpoint, "neuron"), Decimal(0)), hours.get((m.endpoint, "gpu"), Decimal(0))
        n_c, g_c = _sum(invocations, m.endpoint, "neuron"), _sum(invocations, m.endpoint, "gpu")
        per_neuron_hour, per_gpu_hour = divide(n_c, n_h, why_not=""), divide(g_c, g_h, why_not="")
        if per_neuron_hour.value and per_gpu_hour.value:
            out[m.gpu_type] = per_gpu_hour.value / per_neuron_hour.value
    return out


ORIGINS = ("live", "catalog", "override")
"""Where a price comes from: the AWS Price List Query API at run time, the kit's catalog, the fleet file."""


def origin_of(price: Mapping[str, Any]) -> str:
    """live | catalog | override (an entry without ``origin`` is the catalog's unless it is an override)."""
    return str(price.get("origin") or ("override" if price.get("override") == "true" else "catalog"))


def _by_origin(types: Sequence[tuple[str, str]]) -> str:
    groups: dict[str, list[str]] = {}
    for t, origin in types:
        groups.setdefault(origin, []).append(t)
    return "; ".join(f"{o}: {', '.join(sorted(ts))}" for o, ts in sorted(groups.items(), key=lambda g: ORIGINS.index(g[0])
                                                                         if g[0] in ORIGINS else len(ORIGINS)))


def price_notes(prices: Mapping[str, Mapping[str, Any]], *, today: date, stale_after_days: int,
                live_note: str = "") -> list[str]:
    """What the report says about its prices, once, however many there are: one line on the prices that are stale
    (read longer ago than the threshold), unsourced, undated or read in another region (how many, which types and
    where each came from: live, catalog, override; the oldest date), and ``live_note`` (what the Price List lookup
    could not answer) when there is one."""
    stale: list[tuple[str, str]] = []
    unsourced: list[tuple[str, str]] = []
    undated: list[tuple[str, str]] = []
    elsewhere: list[tuple[str, str]] = []
    oldest: date | None = None
    for instance_type, p in sorted(prices.items()):
        origin = origin_of(p)
        source, as_of = str(p.get("source") or ""), str(p.get("as_of") or "")
        if p.get("note"):
            elsewhere.append((instance_type, origin))
        if not source or source.lower().startswith("unsourced") or p.get("sourced") == "false":
            unsourced.append((instance_type, origin))
        try:
            read = date.fromisoformat(as_of)
        except ValueError:
            undated.append((instance_type, origin))
            continue
        if (today - read).days > stale_after_days:
            stale.append((instance_type, origin))
            oldest = read if oldest is None else min(oldest, read)
    flagged = {t for group in (stale, unsourced, undated, elsewhere) for t, _ in group}
    notes = []
    if flagged:
        parts = []
        if stale:
            parts.append(f"{len(stale)} stale (read over {stale_after_days} days ago, the oldest on {oldest}): "
                         f"{_by_origin(stale)}")
        if unsourced:
            parts.append(f"{len(unsourced)} unsourced (no public source): {_by_origin(unsourced)}")
        if undated:
            parts.append(f"{len(undated)} without a valid as_of date: {_by_origin(undated)}")
        if elsewhere:
            regions = sorted({str(prices[t].get("region") or "?") for t, _ in elsewhere})
            parts.append(f"{len(elsewhere)} read in another region than the fleet's ({', '.join(regions)}; the price "
                         f"may differ): {_by_origin(elsewhere)}")
        counts = {o: sum(1 for p in prices.values() if origin_of(p) == o) for o in ORIGINS}
        notes.append(f"{len(flagged)} of {len(prices)} prices need a look: " + "; ".join(parts)
                     + f". The {len(prices)} prices came from: " + ", ".join(f"{o} {n}" for o, n in counts.items())
                     + ". Refresh them or override them (prices: in the fleet file).")
    if live_note:
        notes.append(live_note)
    return notes


ASYNC_INFERENCES = ("inferences not counted by the kit: an asynchronous endpoint, for which SageMaker publishes no "
                    "Invocations metric")
"""What the report says of an asynchronous endpoint's inferences. SageMaker developer guide, "Monitor asynchronous
endpoints" (https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-monitor.html; awsdocs/amazon-sagemaker-
developer-guide doc_source/async-inference-monitor.md), read 2026-11-29: "Any metric not listed below is not
published if the endpoint is enabled for asynchronous inference. Such metrics include (but are not limited to):
OverheadLatency, Invocations, InvocationsPerInstance" (the kit's facts: constructs/neuronfleet/inference/
async_queue.py)."""


def model_line(m: Mapping[str, Any], unit: str) -> str:
    """One model's cost per million ``unit`` as the report states it; where there is no figure, why (never "None").
    ``m["asynchronous"]``: the endpoint is billed as asynchronous inference (report.build, from its ledger rows)."""
    u = m["units"][unit]
    name = m.get("model") or m["endpoint"]
    metric = "Tokens" if unit == "tokens" else "Invocations"
    if u.get("neuron_usd_per_million") is not None:
        text = (f"{name}: Neuron ${u['neuron_usd_per_million']}/M {unit} recorded (the fleet's spend over its "
                f"{metric} metric)")
    elif unit == "inferences" and m.get("asynchronous"):
        tokens = m["units"].get("tokens", {}).get("neuron_usd_per_million") is not None
        text = f"{name}: {ASYNC_INFERENCES}" + ("; its cost per million tokens is on its tokens line" if tokens
                                                else "; no Tokens recorded either: no cost per unit of its work")
    else:
        text = (f"{name}: no Neuron cost per million {unit}: {u.get('neuron_why_none') or f'no Neuron {unit} recorded'}"
                f" (its {metric} metric)")
    if m["gpu_role"] in COMPARED_ROLES:
        c = u.get("comparison")
        gpu = u.get("gpu_usd_per_million")
        text += f", GPU ${gpu}/M" if gpu is not None else ", no GPU cost per million"
        text += (f", saves ${c['savings_usd']} ({c['savings_percent']}%) against the GPU {m['gpu_role']}" if c
                 else f" (no comparison: {u.get('why_none')})")
        if m["gpu_role"] == "shadow":
            text += f"; GPU shadow ${m['shadow']['usd']} (the pilot's cost)"
    elif m["gpu_role"] == "standby":
        f = m["failover"]
        text += (f"; GPU standby ${m['standby']['usd']} over {m['standby']['days']} days (insurance, not savings)"
                 + (f"; failover days: {len(f['days'])}, ${f['usd']}, {f['inferences']} inferences, GPU "
                    f"${f['gpu_usd_per_million']}/M (apart, never savings)" if f["days"] else ""))
    return text


def summary_text(report: Mapping[str, Any]) -> str:
    spend = report["spend_usd"]
    econ = report["unit_economics"]
    lines = [f"neuronfleet migration report, {report['period']['start']} to {report['period']['end']} "
             f"({report['period']['recorded_days']} of {report['period']['days']} days recorded)",
             f"Cost basis: {report.get('basis', 'net_amortized')}",
             "Spend by family: " + ", ".join(f"{k} ${v}" for k, v in sorted(spend["by_family"].items()))]
    lines += [f"Cost per million, per model: {model_line(m, 'inferences')}" for m in econ["models"]]
    lines += [f"Cost per million tokens: {model_line(m, 'tokens')}" for m in econ["models"]
              if m["units"]["tokens"]["neuron_units"] != "0"]
    lines += [f"Not attributed: {t}: {why}" for t, why in report.get("unattributed", {}).items()]
    lines += [f"Endpoint not in the report: {n}: {why}" for n, why in report.get("endpoints", {}).get("skipped", {}).items()]
    lines += [f"Pilot judge of {j['model']}: {j['note']}" for j in report.get("judge_records", [])]
    if report.get("adjustments_usd"):
        lines.append("Kept apart (credits, refunds, taxes): "
                     + ", ".join(f"{k} ${v}" for k, v in report["adjustments_usd"].items()))
    unused = [b for b in report.get("capacity_blocks", []) if b["unused"]]
    if unused:
        lines.append("Capacity Blocks paid but unused: " + ", ".join(
            f"{b['block_id']} ({b['instance_type']}, ${b['fee_usd']})" for b in unused))
    if report["period"].get("estimated_days"):
        lines.append("Estimated days (Cost Explorer may still revise): " + ", ".join(report["period"]["estimated_days"]))
    lines += ["Verdict: " + " ".join(report["verdict"])]
    lines += [f"Price note: {n}" for n in report.get("price_notes", [])]
    est = report.get("evaluation_estimate")
    if est and est["lines"]:
        lines.append(f"Evaluation estimate: GPU work ${est['gpu_spend_usd']} would cost ${est['neuron_estimate_usd']} "
                     f"on Neuron ({est['savings_percent']}% less; {est['assumption']}).")
    if report.get("story"):
        lines.insert(0, str(report["story"]))
    if report.get("synthetic"):
        lines.insert(0, f"SYNTHETIC USAGE: {report['synthetic']}")
    return "\n".join(lines)
