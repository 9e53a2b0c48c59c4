"""Unit economics, the migration verdict and the evaluation-phase estimate. Pure: no AWS calls.

Prices come in with their source and date (from the instance catalog, fleet overrides applied at synth)
and go out with them, so every figure in a report can be traced.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from .rows import CostRow

# The migration guide's thresholds (monthly spend, USD) and expected savings.
INFERENCE_PAYS_USD = Decimal(10_000)
INFERENCE_LARGE_USD = Decimal(100_000)

DEFAULT_EQUIVALENTS: dict[str, str] = {
    # GPU type -> the Neuron type assumed to do the same work per instance-hour. An assumption to replace
    # with the throughput ratio your pilot measures (pass your own table).
    "p5.48xlarge": "trn2.48xlarge", "p5en.48xlarge": "trn2.48xlarge", "p4d.24xlarge": "trn1.32xlarge",
    "g6e.48xlarge": "inf2.48xlarge", "g5.48xlarge": "inf2.48xlarge", "g6e.12xlarge": "inf2.24xlarge",
    "g5.12xlarge": "inf2.24xlarge", "g6e.xlarge": "inf2.xlarge", "g5.xlarge": "inf2.xlarge",
}


def _money(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


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


def cost_per_million(spend: Decimal, units: Decimal) -> Decimal | None:
    return _money(spend / units * 1_000_000) if units > 0 else None


def unit_economics(spend: Spend, invocations: Mapping[str, Decimal], tokens: Mapping[str, Decimal]) -> dict[str, Any]:
    """Cost per million inferences and per million tokens, Neuron (Inferentia) vs GPU, and the savings of
    the Neuron work against what it would have cost at the GPU unit cost (the GPU baseline)."""
    neuron_spend, gpu_spend = spend.get("inference", "inferentia"), spend.get("inference", "gpu")
    out: dict[str, Any] = {}
    for unit, counts in (("inferences", invocations), ("tokens", tokens)):
        n, g = Decimal(counts.get("neuron", 0)), Decimal(counts.get("gpu", 0))
        neuron_cpm, gpu_cpm = cost_per_million(neuron_spend, n), cost_per_million(gpu_spend, g)
        entry: dict[str, Any] = {"neuron_units": str(n), "gpu_units": str(g),
                                 "neuron_usd_per_million": _s(neuron_cpm), "gpu_usd_per_million": _s(gpu_cpm)}
        if neuron_cpm is not None and gpu_cpm is not None:
            baseline = _money(n * gpu_cpm / 1_000_000)
            saved = baseline - _money(neuron_spend)
            entry |= {"gpu_baseline_usd": str(baseline), "savings_usd": str(saved),
                      "savings_percent": str(_money(saved / baseline * 100)) if baseline > 0 else None}
        out[unit] = entry
    return out


def _s(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def verdict(spend: Spend, days: int) -> list[str]:
    """The migration guide's verdict from a period's spend, scaled to 30 days."""
    scale = Decimal(30) / Decimal(days)
    inference = _money(spend.workload("inference") * scale)
    training_gpu = _money(spend.get("training", "gpu") * scale)
    lines = []
    if inference > INFERENCE_LARGE_USD:
        lines.append(f"Inference spend ${inference}/month is over ${INFERENCE_LARGE_USD:,}: expect 40-50% lower cost "
                     "on Inferentia2.")
    elif inference > INFERENCE_PAYS_USD:
        lines.append(f"Inference spend ${inference}/month is over ${INFERENCE_PAYS_USD:,}: migrating inference pays.")
    else:
        lines.append(f"Inference spend ${inference}/month is under ${INFERENCE_PAYS_USD:,}: migration effort may not "
                     "pay back yet.")
    if training_gpu > 0:
        lines.append(f"GPU training spend ${training_gpu}/month: expect 30-50% lower cost on Trainium.")
    return lines


def _price_of(prices: Mapping[str, Mapping[str, Any]], instance_type: str) -> tuple[str, Mapping[str, Any]] | None:
    """The price entry for ``instance_type``: its own (``ml.`` SageMaker entries are their own), else None."""
    entry = prices.get(instance_type)
    return (instance_type, entry) if entry is not None else None


def estimate(gpu_rows: Iterable[CostRow], prices: Mapping[str, Mapping[str, Any]],
             equivalents: Mapping[str, str] = DEFAULT_EQUIVALENTS) -> dict[str, Any]:
    """What the GPU work of ``gpu_rows`` would cost on the Neuron equivalents, at the price table's prices.

    SageMaker rows (``ml.`` types) are priced with SageMaker entries (``ml.<gpu>`` -> ``ml.<neuron>``), never
    at EC2 rates; EC2 rows with EC2 entries. Instance-hours come from Cost Explorer's usage quantity (or spend /
    list price when it is missing); each line names the prices used with their source and date. GPU types with
    no equivalent or no price are listed as not estimated, never silently dropped.
    """
    lines: dict[str, dict[str, Any]] = {}
    skipped: dict[str, Decimal] = {}
    for row in gpu_rows:
        ml = row.instance_type.startswith("ml.")
        base = row.instance_type.removeprefix("ml.")
        neuron_base = equivalents.get(base)
        gpu_price = _price_of(prices, row.instance_type)
        neuron_price = _price_of(prices, f"ml.{neuron_base}" if ml else str(neuron_base)) if neuron_base else None
        if gpu_price is None or neuron_price is None:
            skipped[row.instance_type] = skipped.get(row.instance_type, Decimal(0)) + row.amount
            continue
        hours = row.usage_hours if row.usage_hours > 0 else row.amount / Decimal(str(gpu_price[1]["usd_per_hour"]))
        line = lines.setdefault(row.instance_type, {"gpu_type": row.instance_type, "neuron_type": neuron_price[0],
                                                    "gpu_spend": Decimal(0), "hours": Decimal(0)})
        line["gpu_spend"] += row.amount
        line["hours"] += hours
    out_lines = []
    total_gpu, total_neuron = Decimal(0), Decimal(0)
    for gpu, line in sorted(lines.items()):
        used = prices[line["neuron_type"]]
        neuron_cost = _money(line["hours"] * Decimal(str(used["usd_per_hour"])))
        total_gpu += line["gpu_spend"]
        total_neuron += neuron_cost
        out_lines.append({
            "gpu_type": gpu, "neuron_type": line["neuron_type"], "instance_hours": str(_money(line["hours"])),
            "gpu_spend_usd": str(_money(line["gpu_spend"])), "neuron_estimate_usd": str(neuron_cost),
            "neuron_price": {k: str(v) for k, v in used.items()},
            "gpu_price": {k: str(v) for k, v in prices[gpu].items()},
        })
    saved = _money(total_gpu) - total_neuron
    return {
        "assumption": "one Neuron instance-hour does the work of one GPU instance-hour of the mapped type; "
                      "replace the mapping with your pilot's measured throughput",
        "lines": out_lines, "gpu_spend_usd": str(_money(total_gpu)), "neuron_estimate_usd": str(total_neuron),
        "savings_usd": str(saved),
        "savings_percent": str(_money(saved / _money(total_gpu) * 100)) if total_gpu > 0 else None,
        "not_estimated": {k: str(_money(v)) for k, v in sorted(skipped.items())},
    }


def price_notes(prices: Mapping[str, Mapping[str, Any]], *, today: date, stale_after_days: int) -> list[str]:
    """Warnings about the prices a report used: unsourced ones, and ones read longer ago than the threshold."""
    notes = []
    for instance_type, p in sorted(prices.items()):
        source, as_of = str(p.get("source") or ""), str(p.get("as_of") or "")
        if p.get("note"):
            notes.append(f"{instance_type}: {p['note']}")
        if not source or source.lower().startswith("unsourced") or p.get("sourced") == "false":
            notes.append(f"{instance_type}: price {p.get('usd_per_hour')} USD/h is unsourced"
                         + (f" ({source})" if source else "") + "; override it with your own (prices: in the fleet file)")
        try:
            age = (today - date.fromisoformat(as_of)).days
        except ValueError:
            notes.append(f"{instance_type}: price has no valid as_of date (got {as_of!r})")
            continue
        if age > stale_after_days:
            notes.append(f"{instance_type}: price read {as_of}, {age} days ago (over {stale_after_days}): stale, "
                         "refresh or override it")
    return notes


def summary_text(report: Mapping[str, Any]) -> str:
    spend = report["spend_usd"]
    inferences = report["unit_economics"]["inferences"]
    lines = [f"neuronfleet migration report, {report['period']['start']} to {report['period']['end']}",
             f"Cost basis: {report.get('basis', 'net_amortized')}",
             "Spend by family: " + ", ".join(f"{k} ${v}" for k, v in sorted(spend["by_family"].items())),
             f"Cost per million inferences: Neuron {inferences['neuron_usd_per_million']}, "
             f"GPU {inferences['gpu_usd_per_million']}"]
    if inferences.get("savings_usd") is not None:
        lines.append(f"Savings against the GPU baseline: ${inferences['savings_usd']} "
                     f"({inferences['savings_percent']}%)")
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
    return "\n".join(lines)


def render_html(report: Mapping[str, Any]) -> str:
    """A readable page of the report (self-contained HTML)."""
    e = html.escape
    rows = "".join(f"<tr><td>{e(k)}</td><td>${e(str(v))}</td></tr>"
                   for k, v in sorted(report["spend_usd"]["by_family"].items()))
    econ = report["unit_economics"]
    econ_rows = "".join(
        f"<tr><td>{e(unit)}</td><td>{e(str(v['neuron_usd_per_million']))}</td><td>{e(str(v['gpu_usd_per_million']))}</td>"
        f"<td>{e(str(v.get('savings_usd')))}</td><td>{e(str(v.get('savings_percent')))}</td></tr>"
        for unit, v in econ.items())
    est = report.get("evaluation_estimate") or {"lines": []}
    est_rows = "".join(
        f"<tr><td>{e(line['gpu_type'])}</td><td>{e(line['neuron_type'])}</td><td>{e(line['instance_hours'])}</td>"
        f"<td>${e(line['gpu_spend_usd'])}</td><td>${e(line['neuron_estimate_usd'])}</td>"
        f"<td>{e(line['neuron_price']['usd_per_hour'])} USD/h ({e(line['neuron_price']['source'])}, "
        f"{e(line['neuron_price']['as_of'])})</td></tr>" for line in est["lines"])
    verdict_items = "".join(f"<li>{e(v)}</li>" for v in report["verdict"])
    verdict_items += "".join(f"<li>Price note: {e(n)}</li>" for n in report.get("price_notes", []))
    usage_rows = "".join(f"<tr><td>{e(k)}</td><td>${e(str(v))}</td></tr>"
                         for k, v in report["spend_usd"].get("by_usage", {}).items())
    adj_rows = "".join(f"<tr><td>{e(k)}</td><td>${e(str(v))}</td></tr>"
                       for k, v in report.get("adjustments_usd", {}).items())
    block_rows = "".join(
        f"<tr><td>{e(b['block_id'])}</td><td>{e(b['instance_type'])}</td><td>{b['days']}</td><td>${e(b['fee_usd'])}</td>"
        f"<td>{e(b['used_instance_hours'])}{' (unused)' if b['unused'] else ''}</td></tr>"
        for b in report.get("capacity_blocks", []))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>neuronfleet migration report</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:right}}td:first-child{{text-align:left}}</style></head>
<body><h1>Migration report: {e(report['fleet'])}</h1>
<p>{e(report['period']['start'])} to {e(report['period']['end'])} ({e(str(report['period']['days']))} days).
Figures from the cost ledger (Cost Explorer, {e(report.get('basis_description', report.get('basis', '')))}, USD).
Estimated days (Cost Explorer may still revise): {e(", ".join(report['period'].get('estimated_days', [])) or "none")}.
</p>
<h2>Spend by usage</h2><table><tr><th>usage</th><th>spend</th></tr>{usage_rows}</table>
<h2>Kept apart: credits, refunds, taxes</h2><table><tr><th>record type</th><th>amount</th></tr>{adj_rows}</table>
<h2>Capacity Blocks</h2><table><tr><th>block</th><th>type</th><th>days</th><th>fee (amortised)</th>
<th>instance-hours used</th></tr>{block_rows}</table>
<h2>Spend by accelerator family</h2><table><tr><th>family</th><th>spend</th></tr>{rows}</table>
<h2>Cost per million units</h2><table><tr><th>unit</th><th>Neuron</th><th>GPU</th><th>savings USD</th>
<th>savings %</th></tr>{econ_rows}</table>
<h2>Verdict</h2><ul>{verdict_items}</ul>
<h2>Evaluation estimate</h2><p>{e(est.get('assumption', ''))}</p><table><tr><th>GPU type</th><th>Neuron type</th>
<th>hours</th><th>GPU spend</th><th>Neuron estimate</th><th>price used</th></tr>{est_rows}</table>
</body></html>"""
