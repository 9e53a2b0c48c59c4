"""The net monthly cost of the fleet as deployed, against GPU alone for the same work: the report's first claim.

What is in it, each part as a monthly rate over the days the ledger recorded (30 / recorded days, as every monthly
figure of the report):

- per model whose work has a GPU figure (``story.savings``: a GPU baseline or shadow variant serving the same traffic,
  or the fleet file's throughput ratio at recorded hourly costs): its Neuron serving (as deployed) against that GPU
  figure (GPU alone);
- that model's GPU standby (hot: the weight-0 GPU variant's whole spend, failover days included) and GPU shadow (the
  pilot's copy of the traffic): as deployed only, since GPU alone serves the work itself;
- that model's capacity fallback (the Neuron variant on its GPU instance pools): GPU work in either setup, the same on
  both sides;
- the fleet's GPU instances on EC2 (the GPU fallback pool: work the fleet keeps on GPU): the same on both sides;
- the kit's own running cost (NAT gateways, interface endpoints, FSx, KMS keys, functions, alarms: priced at synth
  from what the fleet deploys, each with its source): as deployed only, so the saving is never overstated (a GPU-only
  setup would need some of it too).

What has no GPU figure (a model with no baseline, shadow or stated ratio; a no-go model; training on Trainium, for
which the fleet file states no throughput ratio; GPU hosting outside the fleet's endpoints) is left out of both sides
and listed in ``outside`` with its monthly cost and why: the net compares like with like, and says what it leaves out.

Pure: figures in (the report's per-model economics and savings, the ledger's spend, the overhead bill), JSON-ready
figures out, full precision inside, rounded only where shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from neuronfleet_contract import overhead as wire

from .economics import divide, show

SAME = "same"
"""``gpu_only`` of a part that costs the same in both setups (said once, not as a second figure)."""


@dataclass(frozen=True)
class OverheadLine:
    """One priced line of the kit's own running cost: ``what`` (e.g. "NAT gateway x 3"), its monthly USD, its source."""

    what: str
    monthly_usd: Decimal
    source: str


@dataclass(frozen=True)
class Overhead:
    """The kit's own running cost as priced at synth: the priced lines and what could not be priced (and why)."""

    lines: Sequence[OverheadLine] = ()
    not_priced: Sequence[str] = ()


def overhead_of(bill: wire.OverheadBill | None) -> Overhead | None:
    """The bill the function was given at synth (neuronfleet_contract.overhead), as the net counts it: one line per
    priced key, each naming its resources and the source key of its price (docs/cost.md lists the sources)."""
    if bill is None:
        return None
    lines = tuple(OverheadLine(f"{line.what}, {line.count} resource(s), {wire_number(line.quantity)} a month",
                               line.monthly_usd, f"counted at synth from what the fleet deploys; price "
                               f"'{line.source_key}' (docs/cost.md lists its source), read {bill.read}")
                  for line in bill.priced)
    return Overhead(lines=lines, not_priced=tuple(f"{u.key} x {u.count}: {u.why}" for u in bill.unpriced))


def wire_number(value: Decimal) -> str:
    return f"{value.normalize():,f}"


def _dec(value: object) -> Decimal:
    return Decimal(str(value)) if value not in (None, "") else Decimal(0)


def _part(part: str, what: str, as_deployed: Decimal, gpu_only: Decimal | str | None, note: str) -> dict[str, Any]:
    return {"part": part, "what": what, "_as_deployed": as_deployed,
            "_gpu_only": gpu_only if isinstance(gpu_only, Decimal) else as_deployed if gpu_only == SAME else Decimal(0),
            "as_deployed_usd": show(as_deployed),
            "gpu_only_usd": SAME if gpu_only == SAME else show(gpu_only) if isinstance(gpu_only, Decimal) else None,
            "note": note}


def _model_rows(m: Mapping[str, Any], name: str, s: Mapping[str, Any] | None, scale: Decimal, no_go: bool,
                parts: list[dict[str, Any]], outside: list[dict[str, Any]]) -> tuple[Decimal, Decimal] | None:
    """One model's rows of the net: its Neuron serving against its GPU figure ``s`` and what it keeps beside it
    (appended to ``parts``), or, with no GPU figure, all its serving in ``outside``. Returns the compared (Neuron, GPU
    alone) figures, None when there is no GPU figure."""
    neuron = _dec(m.get("neuron_spend_usd")) * scale
    gpu_variant = _dec(m.get("gpu_spend_usd")) * scale
    pools = _dec((m.get("capacity_fallback") or {}).get("usd")) * scale
    if s is None:
        why = ("the pilot judge said no-go: Neuron does not serve the same answers" if no_go else
               "no GPU figure for its work: no GPU baseline or shadow variant serving the same traffic and no "
               "throughput ratio in the fleet file (gpu_variant.neuron_instances_per_gpu_instance)")
        total = neuron + gpu_variant + pools
        if total:
            outside.append({"part": "model", "what": f"{name}: all its serving", "usd": show(total), "why": why,
                            "_usd": total})
        return None
    types = ", ".join(m.get("neuron_types") or ()) or "Neuron"
    gpu_figure = _dec(s["gpu_usd_month"])
    parts.append(_part("neuron_serving", f"{name}: Neuron serving on {types}", neuron, gpu_figure,
                       f"GPU alone: {s['basis']}"))
    _gpu_variant_part(m, name, gpu_variant, gpu_figure, parts)
    if pools:
        pool_types = ", ".join((m.get("capacity_fallback") or {}).get("types") or ())
        parts.append(_part("capacity_fallback", f"{name}: Neuron variant on its GPU instance pools ({pool_types})",
                           pools, SAME, "served on GPU when Neuron capacity was refused: GPU in either setup"))
    return neuron, gpu_figure


def _gpu_variant_part(m: Mapping[str, Any], name: str, gpu_variant: Decimal, gpu_figure: Decimal,
                      parts: list[dict[str, Any]]) -> None:
    """The GPU variant kept beside a compared model's Neuron serving, by its role: standby, shadow or baseline."""
    role = m.get("gpu_role")
    if role == "standby" and gpu_variant:
        parts.append(_part("gpu_standby", f"{name}: hot GPU standby on {m.get('gpu_type')}", gpu_variant, None,
                           "insurance for the run-time failover, failover days included; GPU alone needs none"))
    elif role == "shadow" and gpu_variant:
        parts.append(_part("gpu_shadow", f"{name}: GPU shadow on {m.get('gpu_type')}", gpu_variant, None,
                           "the pilot's copy of the traffic: it answers nobody; it ends with the pilot"))
        if show(gpu_variant) == show(gpu_figure):  # the shadow served the same work: its cost is GPU alone's
            parts[-2]["gpu_only_is"] = "gpu_shadow"
    elif role == "baseline" and gpu_variant:
        parts.append(_part("gpu_baseline", f"{name}: GPU baseline variant on {m.get('gpu_type')}", gpu_variant,
                           SAME, "serves its share of the traffic on GPU in either setup"))


def net(*, models: Sequence[Mapping[str, Any]], savings: Sequence[Mapping[str, Any]], names: Mapping[str, str],
        recorded_days: int, fleet_gpu_ec2_usd: Decimal, trainium_training_usd: Decimal, movable_gpu_usd: Decimal,
        total_usd: Decimal, overhead: Sequence[OverheadLine], overhead_not_priced: Sequence[str] = (),
        no_go: Sequence[str] = ()) -> dict[str, Any]:
    """The ``net`` object of the report. ``models``: ``economics.per_model``'s entries; ``savings``: ``story.savings``
    (one per model with a GPU figure, monthly); spends over the period (scaled here): the fleet's GPU instances on EC2,
    its Trainium training, the GPU work the evaluation estimate prices (``movable_gpu_usd``) and all its usage
    (``total_usd``: what no part or listed item holds is listed as the fleet's other spend, so the parts and ``outside``
    add up to the fleet's whole spend and the kit's own cost); ``overhead``: monthly already (priced at synth);
    ``no_go``: endpoints the pilot judge said no-go on (their work is not the same work on GPU)."""
    if recorded_days <= 0:
        return {"as_deployed_usd": None, "gpu_only_usd": None, "savings_usd": None, "savings_percent": None,
                "why_none": "no days of spend recorded", "parts": [], "outside": []}
    scale = Decimal(30) / Decimal(recorded_days)
    by_endpoint = {str(s["endpoint"]): s for s in savings}
    parts: list[dict[str, Any]] = []
    outside: list[dict[str, Any]] = []
    compared_neuron, compared_gpu = Decimal(0), Decimal(0)
    for m in models:
        endpoint = str(m["endpoint"])
        compared = _model_rows(m, names.get(endpoint, endpoint), by_endpoint.get(endpoint), scale,
                               endpoint in no_go, parts, outside)
        if compared is not None:
            compared_neuron += compared[0]
            compared_gpu += compared[1]
    if fleet_gpu_ec2_usd:
        parts.append(_part("gpu_fallback_pool", "the fleet's GPU instances on EC2 (the GPU fallback pool)",
                           fleet_gpu_ec2_usd * scale, SAME, "work the fleet keeps on GPU (CUDA-only or moved there "
                           "when Trainium capacity waited too long): GPU in either setup"))
    for line in overhead:
        parts.append(_part("kit_overhead", f"the kit's own: {line.what}", line.monthly_usd, None, line.source))
    if trainium_training_usd:
        outside.append({"part": "training", "what": "training on Trainium (instances and Capacity Block fees)",
                        "usd": show(trainium_training_usd * scale), "_usd": trainium_training_usd * scale,
                        "why": "no GPU figure: the fleet file states no training throughput ratio"})
    if movable_gpu_usd:
        outside.append({"part": "gpu_work", "what": "GPU work no model of the fleet serves (the evaluation estimate's)",
                        "usd": show(movable_gpu_usd * scale), "_usd": movable_gpu_usd * scale,
                        "why": "not the fleet's own serving: the evaluation estimate prices it on Neuron"})
    as_deployed = sum((p["_as_deployed"] for p in parts), Decimal(0))
    recorded = sum((p["_as_deployed"] for p in parts if p["part"] != "kit_overhead"), Decimal(0))
    other = total_usd * scale - recorded - sum((o["_usd"] for o in outside), Decimal(0))
    if show(other) not in ("0.00", "-0.00"):
        outside.append({"part": "other", "what": "the fleet's other recorded spend", "usd": show(other), "_usd": other,
                        "why": "no part above holds it (Neuron hosting no model owns, processing): no GPU figure"})
    out: dict[str, Any] = {
        "scope": "serving whose work has a GPU figure, the GPU kept beside it, the fleet's GPU pool and the kit's own "
                 "running cost; monthly rates from "
                 f"{recorded_days} recorded days (the kit's own running cost: priced at synth, a month)",
        "as_deployed_usd": show(as_deployed), "outside_usd": show(sum((o["_usd"] for o in outside), Decimal(0))),
        "overhead_not_priced": list(overhead_not_priced),
    }
    if compared_gpu > 0:
        gpu_only = sum((p["_gpu_only"] for p in parts), Decimal(0))
        saved = gpu_only - as_deployed
        out |= {"gpu_only_usd": show(gpu_only), "savings_usd": show(saved),
                "savings_percent": show(divide(saved * 100, gpu_only, why_not="").value), "why_none": None}
        per_work = compared_gpu - compared_neuron
        out["per_work"] = {"neuron_usd": show(compared_neuron), "gpu_usd": show(compared_gpu),
                           "savings_usd": show(per_work),
                           "savings_percent": show(divide(per_work * 100, compared_gpu, why_not="").value),
                           "what": "the compared models' Neuron serving against GPU alone for the same work, before "
                                   "what the fleet keeps beside it (standby, shadow, pools) and the kit's own cost"}
    else:
        out |= {"gpu_only_usd": None, "savings_usd": None, "savings_percent": None,
                "why_none": "no model's work has a GPU figure yet (a GPU baseline or shadow variant, or a throughput "
                            "ratio in the fleet file): nothing to compare the fleet against"}
    for p in parts:
        p.pop("_as_deployed"), p.pop("_gpu_only")
    for o in outside:
        o.pop("_usd")
    out["parts"], out["outside"] = parts, outside
    return out


def net_line(n: Mapping[str, Any]) -> str:
    """The net as one sentence (the headline's first): what the net counts as deployed against GPU alone, once, and
    what it leaves out for want of a GPU figure (named, not summed: each left-out figure is stated in its own row)."""
    if n.get("as_deployed_usd") is None:
        return ""
    left_out = [str(o["what"]).split(":")[0] if o.get("part") == "model" else str(o["what"]).split(" (")[0]
                for o in n.get("outside") or []]
    tail = f"; left out for want of a GPU figure: {', '.join(left_out)}" if left_out else ""
    if n.get("gpu_only_usd") is None:
        kinds = {p.get("part") for p in n.get("parts") or []}
        counted = " and ".join(w for w, ks in (("the GPU kept beside the work", kinds - {"kit_overhead"}),
                                               ("the kit's own running cost", kinds & {"kit_overhead"})) if ks)
        return (f"as deployed, {counted or 'what the net counts'} come{'s' if ' and ' not in counted else ''} to "
                f"${n['as_deployed_usd']} a month ({n['why_none']}){tail}")
    saved = _dec(n["savings_usd"])
    verdict = (f"${show(saved)} a month saved ({n['savings_percent']}%)" if saved >= 0 else
               f"${show(-saved)} a month more than GPU alone ({show(-_dec(n['savings_percent']))}% more)")
    return (f"as deployed, the compared serving, the GPU kept beside it and the kit's own running cost come to "
            f"${n['as_deployed_usd']} a month against ${n['gpu_only_usd']} on GPU alone for the same work: "
            f"{verdict}{tail}")
