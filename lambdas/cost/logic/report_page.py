"""The migration report as one self-contained HTML page: charts as inline SVG (charts.py), no script, no stylesheet or
font from elsewhere, so it reads the same offline and from the report bucket.

Pure: the report (its JSON form, as ``report.build`` makes it) in, an HTML string out; every value is escaped. A
section with nothing to show is left out; the price notes are said once, in their own section.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from . import charts
from .economics import show_unit

STANDBY_CHOICES: tuple[tuple[str, str, str], ...] = (
    ("hot", "min_instances GPU instances run around the clock (the GPU variant at weight 0)",
     "health and capacity: the failover moves the traffic to GPU within minutes when the Neuron variant's latency, "
     "5XX or model-error alarms fire, and GPU instances are there when Neuron capacity is not"),
    ("warm", "no GPU instance runs: the GPU type is the Neuron variant's last instance pool",
     "capacity only: SageMaker takes the GPU pool when Neuron capacity is refused at creation or scale-out; no "
     "run-time failover (an unhealthy Neuron variant keeps the traffic)"),
    ("cold", "not built by neuronfleet (SageMaker inference components scaled to zero instances)",
     "nothing runs; a failover would wait for an instance to start and load the model"),
)
"""The GPU standby's choices (``gpu_variant.standby``), what each keeps running and what it covers (docs/fallback.md,
"Hot, warm or cold": what each costs a month and how long a failover takes with it)."""

STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;max-width:800px;margin:24px auto;padding:0 16px;
color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
.sub{color:#555;margin-top:0}.synthetic{background:#fff4cc;border:1px solid #e0b000;padding:8px 12px;margin:12px 0}
.headline{font-size:1.1em;background:#eef5fb;border-left:4px solid #0072B2;padding:8px 12px}
.t{overflow-x:auto}table{border-collapse:collapse;margin:8px 0;font-size:.94em}
td,th{border-bottom:1px solid #e4e4e4;padding:4px 8px;text-align:right;
vertical-align:top}th{background:#f6f6f6}td:first-child,th:first-child{text-align:left}td.l,th.l{text-align:left}
.go{color:#00744f;font-weight:600}.nogo{color:#b00020;font-weight:600}.muted{color:#666}.small{font-size:.9em}
svg{max-width:100%;height:auto;display:block;margin:8px 0}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _d(value: object) -> Decimal | None:
    """A figure of the report (a string of digits, or None) as a Decimal."""
    if value is None or value == "":
        return None
    try:
        out = Decimal(str(value))
    except InvalidOperation:
        return None
    return out if out.is_finite() else None


def model_name(m: Mapping[str, Any]) -> str:
    """The name the fleet file gives the model (its endpoint's ``neuronfleet:model`` tag), else the endpoint's."""
    return str(m.get("model") or m["endpoint"])


def _table(head: Sequence[str], rows: Iterable[Sequence[object]], *, left: Sequence[int] = (0,)) -> str:
    th = "".join(f'<th{" class=l" if i in left else ""}>{_e(h)}</th>' for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(f'<td{" class=l" if i in left else ""}>{_e(c)}</td>' for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f"<div class=t><table><tr>{th}</tr>{body}</table></div>"


def _section(title: str, body: str) -> str:
    return f"<section><h2>{_e(title)}</h2>{body}</section>" if body else ""


def _money(value: object) -> str:
    d = _d(value)
    return "-" if d is None else f"${d:,.2f}"


def spend_section(report: Mapping[str, Any]) -> str:
    spend = report["spend_usd"]
    by_day: Mapping[str, Mapping[str, str]] = spend.get("by_day_family") or {}
    families = [f for f in ("trainium", "inferentia", "gpu") if (_d(spend["by_family"].get(f)) or 0) > 0]
    if not families:
        return ""
    label = "synthetic " if report.get("synthetic") else ""
    parts = []
    if by_day:
        days = sorted(by_day)
        series = {f: [_d(by_day[day].get(f)) or Decimal(0) for day in days] for f in families}
        parts.append(charts.spend_by_day(days, series, title=f"{label}spend per day by accelerator family (USD)"))
    # the chart only: the period's totals by family and usage are in report.json; the page states each monthly figure
    # once, in the net's parts (a family's total would repeat a part's figure)
    return _section("Spend per day by family", "".join(parts))


def _judged(verdicts: Mapping[str, Mapping[str, Any]], m: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return verdicts.get(m["endpoint"])


def _gpu_figure(m: Mapping[str, Any], unit: str, verdict: Mapping[str, Any] | None,
                saving: Mapping[str, Any] | None = None) -> tuple[Decimal | None, str]:
    """The GPU cost per million ``unit`` to set beside the Neuron one, and where it comes from: a GPU baseline variant
    serving the same model, else the Neuron figure times the report's saving's GPU over Neuron cost (the fleet file's
    throughput ratio at recorded hourly costs: story.savings). Never from the pilot judge's figures: they time one
    request at a time, a latency figure and not what a batched server costs (shown apart, labelled). A standby's
    failover days are no unit cost."""
    u = m["units"][unit]
    if m.get("gpu_role") in ("baseline", "shadow") and _d(u.get("gpu_usd_per_million")) is not None:
        return _d(u["gpu_usd_per_million"]), ("the pilot's GPU shadow, serving a copy of the same traffic"
                                              if m.get("gpu_role") == "shadow" else
                                              "the GPU baseline variant serving the same model")
    neuron = _d(u.get("neuron_usd_per_million"))
    factor = _d((saving or {}).get("gpu_over_neuron"))
    if saving is not None and neuron is not None and factor:
        return (Decimal(str(show_unit(neuron * factor))),
                f"Neuron's recorded figure x {factor:.4f}: the fleet file's throughput ratio ({saving.get('ratio')} "
                "Neuron instances per GPU instance) at recorded hourly costs")
    if verdict is not None and verdict.get("variants"):
        return None, "no capacity figure (the pilot judge's single-stream figures are in its column)"
    return None, "not judged yet"


def models_section(report: Mapping[str, Any]) -> str:
    econ = report.get("unit_economics") or {}
    models = econ.get("models") or []
    if not models:
        return ""
    verdicts = {str(v.get("endpoint")): v for v in report.get("pilot_verdicts", [])}
    claimed = {str(s.get("endpoint")): s for s in report.get("savings", [])}
    parts = []
    for unit in ("tokens", "inferences"):
        rows = []
        for m in models:
            neuron = _d(m["units"][unit].get("neuron_usd_per_million"))
            gpu, source = _gpu_figure(m, unit, _judged(verdicts, m), claimed.get(m["endpoint"]))
            if neuron is None and gpu is None:
                continue
            rows.append((m, neuron, gpu, source))
        if not rows:
            continue
        parts.append(f"<h3>Cost per million {_e(unit)}</h3>")
        parts.append(charts.unit_costs([charts.UnitCost(model_name(m), n, g, s) for m, n, g, s in rows], unit=unit,
                                       title=f"Neuron against GPU, USD per million {unit}, per model"))
        parts.append(_table(["model", "GPU figure from", "pilot judge (single-stream)"], [
            (model_name(m), s, _verdict_text(_judged(verdicts, m), unit)) for m, _, g, s in rows], left=(0, 1, 2)))
    if parts:
        parts.append("<p class=small>Neuron (recorded): the model's Neuron spend over its Invocations or Tokens metric "
                     "in the period, what the fleet paid. Pilot judge (single-stream): the judge's own run, one request "
                     "at a time over its prompts at list prices: a latency figure, not a capacity one, so no saving is "
                     "taken from it.</p>")
    even = report.get("break_even") or []
    if even:
        parts.append("<h3>Break-even: when Neuron is cheaper</h3><ul>"
                     + "".join(f"<li><strong>{_e(b['model'])}: {_e(b['break_even_ratio'])} {_e(b['neuron_type'])} per "
                               f"{_e(b['gpu_type'])}</strong>. {_e(b['text'])}.</li>" for b in even) + "</ul>")
    return _section("Per model: Neuron against GPU", "".join(parts))


def _verdict_text(v: Mapping[str, Any] | None, unit: str | None = None) -> str:
    """The judge's verdict, and its single-stream figures only in the table of their own ``unit`` (said once)."""
    if not v:
        return "not judged yet"
    failing = "; ".join(f"{f['measure']}{' (' + f['variant'] + ')' if f.get('variant') else ''} {f['value']:.4g} "
                        f"against a limit of {f['limit']:.4g}" for f in v.get("failing") or [])
    said = v.get("verdict") or ("go" if v.get("go") else "no-go")
    if said == "unmeasured":
        return (f"no verdict: {len(v.get('unmeasured') or [])} of {v.get('prompts')} prompts unmeasured (transient "
                "errors after retries); neither go nor no-go") + (" [synthetic: fixture answers]" if v.get("synthetic")
                                                                  else "")
    text = said + (f": {failing}" if failing else "")
    text += f" ({v['prompts']} prompts)" if v.get("prompts") else f" ({v['source']})" if v.get("source") else ""
    figures = v.get("variants") or {}
    n, g = (_d((figures.get(k) or {}).get("usd_per_million")) for k in ("neuron", "gpu"))
    if n is not None and g is not None and unit is not None and v.get("unit") not in (None, unit):
        text += f"; its single-stream figures are per million {v.get('unit')}"
    elif n is not None and g is not None:
        text += (f"; single-stream (one request at a time, {v.get('prompts')} prompts, list prices): Neuron "
                 f"${n:.2f}/M, GPU ${g:.2f}/M {v.get('unit')}: a latency figure, not what the fleet pays")
    return text + (" [synthetic: fixture answers]" if v.get("synthetic") else "")


def standby_section(report: Mapping[str, Any]) -> str:
    """The GPU standby of each model that keeps one: its share of the model's monthly cost (its dollars are the net's
    part, said there once), and the three choices with what each keeps running and covers."""
    models = (report.get("gpu_standby") or {}).get("models") or []
    if not models:
        return ""
    items = "".join(f"<li><strong>{_e(s['model'])}</strong>: {_e(s['mode'])} standby on {_e(s['gpu_type'])}, "
                    f"{_e(s['standby_share_percent'] or '0')}% of the model's monthly cost"
                    + (" (its cost is a part of the net above)." if s["mode"] == "hot" else
                       " (a pool of the Neuron variant: it costs only when SageMaker takes it).") + "</li>"
                    for s in models)
    return _section("The GPU standby: what it costs and what it protects",
                    f"<ul>{items}</ul>" + _table(["choice", "what runs", "what it covers"], STANDBY_CHOICES,
                                                 left=(0, 1, 2)))


def scale_to_zero_section(report: Mapping[str, Any]) -> str:
    """Each asynchronous endpoint's spend, its hours at zero instances and what scaling to zero saved against the same
    endpoint always on (logic/scale_to_zero.py): one line per model, each figure once."""
    entries = report.get("scale_to_zero") or []
    if not entries:
        return ""
    items = "".join(f"<li>{_e(x['line'])}</li>" for x in entries)
    return _section("Scaling to zero: asynchronous endpoints",
                    f"<ul>{items}</ul><p class=small>{_e(entries[0]['source'])}</p>")


def batch_transform_section(report: Mapping[str, Any]) -> str:
    """Each batch job's transform spend by its model, or why a type's spend has no model (logic/batch_spend.py): one
    line per instance type, each transform row in one line only."""
    entries = report.get("batch_transform") or []
    if not entries:
        return ""
    items = "".join(f"<li>{_e(x['line'])}</li>" for x in entries)
    source = (report.get("sources") or {}).get("batch_transform", "")
    return _section("Batch transform: spend by model", f"<ul>{items}</ul><p class=small>{_e(source)}</p>")


def _targets(line: Mapping[str, Any]) -> str:
    """An undeclared line's two Neuron targets (inference, training), each with its estimate: never one guessed."""
    return "; ".join(f"{k}: {t.get('neuron_type') or '-'} {_money(t.get('neuron_estimate_usd'))}"
                     for k, t in (line.get("targets") or {}).items()) or "-"


def estimate_section(report: Mapping[str, Any]) -> str:
    est = report.get("evaluation_estimate") or {}
    lines = est.get("lines") or []
    if not lines and not est.get("not_estimated_why"):
        return ""
    label = "synthetic " if report.get("synthetic") else ""
    parts = []
    if lines:
        rows = [(x["gpu_type"], x["workload"], x["neuron_type"] or _targets(x), x["instance_hours"],
                 _money(x["gpu_spend_usd"]), _money(x["neuron_estimate_usd"]), x["throughput"],
                 x.get("break_even_neuron_instances_per_gpu_instance") or "-")
                for x in lines]
        if len([x for x in lines if x["workload"] != "unknown"]) > 1:  # one line is its own total: said once
            rows.append(("total", "", "", "", _money(est["gpu_spend_usd"]), _money(est["neuron_estimate_usd"]), "", ""))
        parts.append(_table(["GPU type", "workload", "Neuron type", "GPU hours", f"GPU {label}spend",
                             "Neuron estimate", "throughput used", "break-even"], rows, left=(0, 1, 2, 6)))
        parts.append(f"<p class=small>{_e(est.get('assumption', ''))}. Throughput and break-even count Neuron "
                     "instances per GPU instance, as the fleet file's neuron_instances_per_gpu_instance does: at the "
                     "break-even the two cost the same; below it Neuron is cheaper."
                     + (f" {_e(est['unknown']['note'])}." if est.get("unknown") else "")
                     + (f" {_e(est['sizing'])}." if est.get("sizing") else "") + "</p>")
    suggested = est.get("suggestions") or []
    if suggested:
        parts.append("<ul>" + "".join(f"<li>{_e(x)}</li>" for x in suggested) + "</ul>")
    why = est.get("not_estimated_why") or {}
    if why:
        parts.append(_table(["not estimated", "amount", "why"],
                            [(t, _money((est.get("not_estimated") or {}).get(t)), r) for t, r in why.items()],
                            left=(0, 2)))
    return _section("Evaluation estimate: the GPU work on Neuron", "".join(parts))


def net_section(report: Mapping[str, Any]) -> str:
    """What the fleet costs a month as deployed, part by part, against GPU alone for the same work (net.py); the
    totals are the headline's, said there once; what the net leaves out, and why; what is not priced."""
    n = report.get("net") or {}
    parts_in, outside = n.get("parts") or [], n.get("outside") or []
    if not parts_in and not outside:
        return ""
    label = "synthetic " if report.get("synthetic") else ""
    body = []
    if parts_in:
        body.append(_table(["part", f"as deployed ({label}a month)", "GPU alone (a month)", "what it is"], [
            (p["what"], _money(p["as_deployed_usd"]),
             "the same" if p["gpu_only_usd"] == "same" else
             "what its GPU shadow costs (the shadow's row)" if p.get("gpu_only_is") == "gpu_shadow" else
             _money(p["gpu_only_usd"]), p["note"])
            for p in parts_in], left=(0, 3)))
    if outside:
        estimated = bool((report.get("evaluation_estimate") or {}).get("lines"))
        body.append(_table(["left out of the net", f"{label}a month", "why"], [
            (o["what"], "in the evaluation estimate below" if o.get("part") == "gpu_work" and estimated
             else _money(o["usd"]), o["why"]) for o in outside], left=(0, 2)))
    if n.get("overhead_not_priced"):
        body.append("<p class=small>The kit's own, not priced: " + _e("; ".join(n["overhead_not_priced"])) + ".</p>")
    body.append(f"<p class=small>Scope: {_e(n.get('scope', ''))}.</p>")
    return _section("What the fleet costs a month, against GPU alone", "".join(body))


def details_section(report: Mapping[str, Any]) -> str:
    parts = []
    blocks = report.get("capacity_blocks") or []
    if blocks:
        parts.append("<h3>Capacity Blocks</h3>" + _table(
            ["block", "type", "days", "fee (amortised)", "instance-hours used"],
            [(b["block_id"], b["instance_type"], b["days"], _money(b["fee_usd"]),
              f"{b['used_instance_hours']}{' (unused)' if b['unused'] else ''}") for b in blocks], left=(0, 1)))
    adjustments = report.get("adjustments_usd") or {}
    if adjustments:
        parts.append("<h3>Kept apart: credits, refunds, taxes</h3>"
                     + _table(["record type", "amount"], [(k, _money(v)) for k, v in adjustments.items()]))
    unattributed = report.get("unattributed") or {}
    if unattributed:
        estimated = {x["gpu_type"] for x in (report.get("evaluation_estimate") or {}).get("lines") or []}
        # a type the evaluation estimate prices: its spend is the estimate's line, said there once
        parts.append("<h3>Hosting spend not attributed to a model</h3>" + _table(["instance type", "why"], [
            (t, why.split(" ", 1)[1] + " (its spend: the evaluation estimate's line)"
             if t in estimated and why.startswith("$") else why) for t, why in unattributed.items()], left=(0, 1)))
    endpoints = report.get("endpoints") or {}
    skipped, left_out = endpoints.get("skipped") or {}, endpoints.get("left_out") or {}
    if skipped or left_out:
        rows = [(n, f"not in the report: {w}") for n, w in skipped.items()]
        rows += [(n, "modelled in part: " + "; ".join(w)) for n, w in left_out.items()]
        parts.append("<h3>Endpoints</h3>" + _table(["endpoint", "note"], rows, left=(0, 1)))
    judges = report.get("judge_records") or []
    if judges:
        parts.append("<h3>Pilot judges' records</h3>" + _table(["model", "endpoint", "note"], [
            (j["model"], j["endpoint"], j["note"]) for j in judges], left=(0, 1, 2)))
    return _section("Details", "".join(parts))


def prices_section(report: Mapping[str, Any]) -> str:
    notes = report.get("price_notes") or []
    origins = report.get("price_origins") or {}
    if not notes and not origins:
        return ""
    parts = [f"<p class=small>{_e(n)}</p>" for n in notes]
    if origins:
        counts: dict[str, list[str]] = {}
        for t, o in sorted(origins.items()):
            counts.setdefault(o, []).append(t)
        parts.append(_table(["price origin", "types"], [(o, ", ".join(ts)) for o, ts in counts.items()],
                            left=(0, 1)))
    return _section("Prices", "".join(parts))


def confirmed_section(report: Mapping[str, Any]) -> str:
    """What ``neuronfleet verify`` confirmed on the account (confirmations.lines), left out when not read."""
    items = "".join(f"<li>{_e(line)}</li>" for line in report.get("confirmed_on_account") or ())
    return _section("What is confirmed on this account", f"<ul>{items}</ul>" if items else "")


def render_html(report: Mapping[str, Any]) -> str:
    """The page: headline, what the fleet costs against GPU alone (the net), the verdict, spend per day, per model
    Neuron against GPU, the GPU standby, the evaluation estimate, details, prices and sources (each left out when it
    has nothing to show). Each figure is stated once (tests/unit/test_report_page.py counts them)."""
    period = report["period"]
    synthetic = report.get("synthetic")
    head = [f"<h1>Migration report: {_e(report['fleet'])}</h1>",
            f"<p class=sub>{_e(period['start'])} to {_e(period['end'])}: {_e(period['days'])} days, "
            f"{_e(period.get('recorded_days'))} recorded. Cost basis: "
            f"{_e(report.get('basis_description') or report.get('basis', ''))}; USD.</p>"]
    if synthetic:
        head.append(f"<p class=synthetic><strong>SYNTHETIC figures.</strong> {_e(synthetic)}</p>")
    if report.get("story"):
        head.append(f"<p class=headline>{_e(report['story'])}</p>")
    verdict = "".join(f"<li>{_e(v)}</li>" for v in report.get("verdict", []))
    estimated = period.get("estimated_days") or []
    if estimated:
        verdict += f"<li>Estimated days (Cost Explorer may still revise): {_e(', '.join(estimated))}</li>"
    body = "".join([
        net_section(report),
        _section("Verdict", f"<ul>{verdict}</ul>" if verdict else ""),
        spend_section(report), models_section(report), standby_section(report), scale_to_zero_section(report),
        batch_transform_section(report),
        estimate_section(report),
        details_section(report), confirmed_section(report), prices_section(report),
        _section("Sources", "".join(f"<p class=small><strong>{_e(k)}</strong>: {_e(v)}</p>"
                                    for k, v in (report.get("sources") or {}).items())),
    ])
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>neuronfleet migration report: {_e(report['fleet'])}</title><style>{STYLE}</style></head>"
            f"<body>{''.join(head)}{body}</body></html>")
