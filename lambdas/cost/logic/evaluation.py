"""The evaluation-phase estimate: what GPU work would cost on Neuron, at the price table's prices. Pure: no AWS calls.

Prices come in with their source and date and go out with them, so every figure can be traced.

**Workload: declared, never guessed.** A row's workload (inference | training) comes, in this order, from

1. its billed usage type: SageMaker ``Host:``/``AsyncInf:``/``Transform:`` are inference, ``Train:`` training
   (:data:`INFERENCE_USAGES`, :data:`TRAINING_USAGES`; rows.py names the usage types and their sources);
2. a label the export carries for that row: a cost allocation tag's value (``--workload-tag KEY``) or the simple
   CSV's ``workload`` column (:class:`Work`);
3. a declaration per GPU type (``--workload GPU_TYPE=inference``), then for every row (``--workload inference``)
   (:class:`Declared`);
4. nothing: the row is ``unknown``. An EC2 GPU row (or a SageMaker processing row, or a Capacity Block fee) that
   nobody declared is never taken as training: its line shows both Neuron targets (inference and training, each with
   its estimate) and stays out of the totals, which say so.

**Sizing.** Without a model size a GPU type maps to the cheapest priced Neuron type with at least its accelerator
memory (the model fits the GPU it runs on: memory-matched). With one (:class:`ModelSize`), inference maps to the
cheapest Neuron type whose NeuronCores hold the model at a tensor-parallel degree Neuron supports
(:data:`NEURON_CORES`). Training is memory-matched either way: a training job's memory is weights, gradients,
optimizer state and activations, which a model size alone does not give.

**Ratio: Neuron instances per GPU instance**, the fleet file's ``gpu_variant.neuron_instances_per_gpu_instance``:
how many Neuron instances do the work of one GPU instance. A line's Neuron instance-hours are its GPU
instance-hours times that ratio; its break-even is the ratio at which both cost the same (GPU hourly price / Neuron
hourly price): a ratio below the break-even saves money.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .economics import divide, show
from .rows import CostRow, usage_of
from .scale_to_zero import shape, suggestions

INFERENCE_USAGES = ("sagemaker-hosting", "sagemaker-transform")
"""Usages whose work is inference by their usage type (SageMaker Host:, AsyncInf:, Transform:)."""
TRAINING_USAGES = ("sagemaker-training",)
"""Usages whose work is training by their usage type (SageMaker Train:)."""
WORKLOADS = ("inference", "training")
"""What a declaration may say."""
UNKNOWN = "unknown"
"""The workload of a row nobody declared and whose usage type does not say."""

ASSUMED_RATIO = Decimal(1)
"""Neuron instances per GPU instance when the pilot measured none and none was given: an assumption, said so."""

FROM_USAGE_TYPE = "usage type"
FROM_EVERY = "--workload"
FROM_TYPE = "--workload TYPE="
FROM_UNKNOWN = "unknown"
"""How a line's workload was decided (``workload_from``); a tag gives ``tag KEY=value``, the simple CSV
``simple CSV column``."""

Accelerators = Mapping[str, tuple[str, int]]
"""EC2 instance type -> (family trainium|inferentia|gpu, accelerator memory GiB): the instance catalog's figures."""


@dataclass(frozen=True)
class CoreMemory:
    """What NxD Inference shards a model over on one Neuron instance type."""

    cores: int
    """NeuronCores the instance presents (logical NeuronCores at Trn2's default LNC=2)."""
    gib_per_core: int
    """Device memory per (logical) NeuronCore, GiB."""
    degrees: tuple[int, ...]
    """The tensor-parallel degrees Neuron supports on the family; empty: any degree up to ``cores``."""
    source: str


_CALCULATOR = ("AWS Neuron Calculator, 'NeuronCores needed for LLM Inference' (aws-neuron/aws-neuron-sdk "
               "about-neuron/calculator/neuron-calculator.rst @ 1db4d74e, read 2026-11-28): memory footprint / 16 GB "
               "per NeuronCore, tensor-parallel degrees Inf2 [2,4,8,12,24] and Trn1 [2,8,32], NeuronCores "
               "Inf2.xlarge 2, Inf2.8xlarge 2, Inf2.24xlarge 12, Inf2.48xlarge 24, Trn1.2xlarge 2, Trn1.32xlarge 32")
_TRN1N = (_CALCULATOR + "; trn1n.32xlarge: the same 16 Trainium devices and 512 GiB as trn1.32xlarge (Neuron docs, "
          "'AWS Trn1/Trn1n Architecture')")
_TRN2 = ("NxD Inference 'Tutorial: Deploying Llama3.1 405B (Trn2)' (aws-neuron/aws-neuron-sdk libraries/nxd-inference/"
         "tutorials/trn2-llama3.1-405b-tutorial.rst @ 06f33784, read 2026-11-28): 'Each Trn2 instance has 128 Neuron "
         "cores. With LNC=2, you can set a TP degree up to 64'; Neuron 'Best practices for training' (read "
         "2026-11-28): 16 Trainium2 chips of 8 physical NeuronCores and 96 GiB each, at LNC2 four logical NeuronCores "
         "per chip, 'approximately 24 GiB of HBM per rank, before runtime overhead'. Which degrees below 64 NxD "
         "Inference accepts on Trn2 is not in these sources: any degree up to the logical NeuronCores is taken")
NEURON_CORES: dict[str, CoreMemory] = {
    "inf2.xlarge": CoreMemory(2, 16, (2, 4, 8, 12, 24), _CALCULATOR),
    "inf2.8xlarge": CoreMemory(2, 16, (2, 4, 8, 12, 24), _CALCULATOR),
    "inf2.24xlarge": CoreMemory(12, 16, (2, 4, 8, 12, 24), _CALCULATOR),
    "inf2.48xlarge": CoreMemory(24, 16, (2, 4, 8, 12, 24), _CALCULATOR),
    "trn1.2xlarge": CoreMemory(2, 16, (2, 8, 32), _CALCULATOR),
    "trn1.32xlarge": CoreMemory(32, 16, (2, 8, 32), _CALCULATOR),
    "trn1n.32xlarge": CoreMemory(32, 16, (2, 8, 32), _TRN1N),
    "trn2.3xlarge": CoreMemory(4, 24, (), _TRN2 + " (trn2.3xlarge: one Trainium2 chip, 4 logical NeuronCores)"),
    "trn2.48xlarge": CoreMemory(64, 24, (), _TRN2),
    "trn2u.48xlarge": CoreMemory(64, 24, (), _TRN2 + " (trn2u.48xlarge: the same 16 chips as trn2.48xlarge)"),
}
"""Per Neuron type: NeuronCores, GiB per NeuronCore and the tensor-parallel degrees Neuron supports, with sources."""

HEADROOM = ("no headroom is added: the model's size is compared with NeuronCore memory as it is (the Neuron "
            "Calculator adds the KV cache from batch size, sequence length and layers, which a model size does not "
            "give; Trn2's 24 GiB is 'before runtime overhead'), so a model near a boundary may need the next size")
"""What the sizing leaves out, said on every sized line's mapping."""

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
"""Bytes per parameter (bf16/fp16: 2, as the Neuron Calculator's BF16/FP16 data type size; fp8/int8: 1)."""


@dataclass(frozen=True)
class ModelSize:
    """The model served on a GPU type, in GiB, and where that figure comes from (``--model-gib``, ``--params 70B
    --dtype bf16``, a fleet file's ``model_size_gib``)."""

    gib: Decimal
    source: str

    @classmethod
    def of_params(cls, params: Decimal, dtype: str, source: str) -> ModelSize:
        return cls(params * DTYPE_BYTES[dtype] / Decimal(2**30), source)


@dataclass(frozen=True)
class Declared:
    """The workload the user declared: for every GPU row (``every``) and per GPU type (``per_type``)."""

    every: str | None = None
    per_type: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Work:
    """A GPU row with the workload label its export carries (a tag's value, the simple CSV's column), if any."""

    row: CostRow
    label: str = ""
    """inference | training (case-insensitive), or "" when the export says nothing (another value is no label)."""
    label_from: str = ""
    """Where ``label`` comes from: ``tag KEY=value``, ``simple CSV column``."""


def by_usage_type(row: CostRow) -> str | None:
    """inference | training when the row's billed usage type says (SageMaker hosting, async, transform, training)."""
    parsed = usage_of(row.usage_type) if row.usage_type else None
    usage = parsed[0] if parsed else (row.usage if not row.usage_type else None)
    if usage in INFERENCE_USAGES:
        return "inference"
    if usage in TRAINING_USAGES:
        return "training"
    return None


def workload_of(work: Work | CostRow, declared: Declared | None = None) -> tuple[str, str]:
    """(inference | training | unknown, how it was decided): usage type, the export's label, --workload TYPE=,
    --workload, else unknown (never training by default)."""
    w = work if isinstance(work, Work) else Work(work)
    declared = declared or Declared()
    said = by_usage_type(w.row)
    if said:
        return said, FROM_USAGE_TYPE
    label = w.label.strip().lower()
    if label in WORKLOADS:
        return label, w.label_from
    if w.row.instance_type in declared.per_type:
        return declared.per_type[w.row.instance_type], FROM_TYPE
    if declared.every:
        return declared.every, FROM_EVERY
    return UNKNOWN, FROM_UNKNOWN


def tensor_parallel_degree(neuron_type: str, model_gib: Decimal) -> int | None:
    """The smallest tensor-parallel degree Neuron supports on ``neuron_type`` whose NeuronCores hold ``model_gib``,
    or None (the model does not fit one instance, or the type's NeuronCores are not known)."""
    cm = NEURON_CORES.get(neuron_type.removeprefix("ml."))
    if cm is None:
        return None
    need = max(1, math.ceil(model_gib / cm.gib_per_core))
    fits = [d for d in (cm.degrees or range(1, cm.cores + 1)) if need <= d <= cm.cores]
    return min(fits) if fits else None


def neuron_equivalent(gpu_type: str, *, inference: bool, accelerators: Accelerators,
                      prices: Mapping[str, Mapping[str, Any]], need_gib: int | None = None, region: str = "",
                      model: ModelSize | None = None) -> tuple[str | None, str]:
    """The cheapest priced Neuron type for ``gpu_type``'s work: inference types (Inferentia) for inference, training
    types (Trainium) for training. Inference with a ``model``: the cheapest whose NeuronCores hold it at a supported
    tensor-parallel degree (:func:`tensor_parallel_degree`). Otherwise memory-matched: at least the accelerator memory
    the work needs (``need_gib``, else the GPU type's own memory: the model fits the GPU it runs on).
    (type or None, why: the mapping, said so)."""
    ml = gpu_type.startswith("ml.")
    base = gpu_type.removeprefix("ml.")
    family = "inferentia" if inference else "trainium"
    name = (lambda t: f"ml.{t}") if ml else (lambda t: t)
    if model is not None and inference:
        sized = [(t, d) for t, (fam, _) in accelerators.items() if fam == family
                 and (d := tensor_parallel_degree(t, model.gib)) is not None]
        if not sized:
            return None, (f"no {family} type holds the {show(model.gib, 1)} GiB model ({model.source}) on one "
                          "instance at a tensor-parallel degree Neuron supports")
        priced_sized = [(Decimal(str(prices[name(t)]["usd_per_hour"])), t, d) for t, d in sized if name(t) in prices]
        if not priced_sized:
            return None, _no_price(ml, [t for t, _ in sized], name, region)
        _, chosen, degree = min(priced_sized)
        cm = NEURON_CORES[chosen]
        return name(chosen), (f"cheapest {family} type holding the {show(model.gib, 1)} GiB model "
                              f"({model.source}) at tensor-parallel degree {degree} ({degree} NeuronCores x "
                              f"{cm.gib_per_core} GiB; no headroom added)")
    need = need_gib if need_gib is not None else accelerators.get(base, ("", 0))[1]
    if need_gib is None and base not in accelerators:
        return None, f"{base}: accelerator memory unknown (not in the instance catalog)"
    fits = [(t, mem) for t, (fam, mem) in accelerators.items() if fam == family and mem >= need]
    priced = [(Decimal(str(prices[name(t)]["usd_per_hour"])), t) for t, _ in fits if name(t) in prices]
    if not fits:
        return None, f"no {family} type has {need} GiB of accelerator memory"
    if not priced:
        return None, _no_price(ml, [t for t, _ in fits], name, region)
    _, chosen = min(priced)
    return name(chosen), f"cheapest {family} type with >= {need} GiB of accelerator memory"


SIZED = "by the model"
MEMORY_MATCHED = "memory-matched: no model size given (--model-gib, --params with --dtype, a fleet file's model_size_gib)"
TRAINING_MATCHED = "memory-matched: sizing by the model applies to inference only (training also holds gradients, " \
                   "optimizer state and activations)"
"""A target's ``sizing``: how its Neuron type was chosen."""


def sizing_of(workload: str, model: ModelSize | None, given_equivalent: bool = False) -> str:
    if given_equivalent:
        return "given equivalent"
    if model is None:
        return MEMORY_MATCHED
    return SIZED if workload == "inference" else TRAINING_MATCHED


def _no_price(ml: bool, types: list[str], name: Any, region: str) -> str:
    return (f"no {'SageMaker' if ml else 'EC2'} price for {', '.join(sorted(name(t) for t in types))}"
            f"{' in ' + region if region else ''} (set one under prices: in the fleet file, or --price)")


def _model_for(gpu_type: str, models: Mapping[str, ModelSize]) -> ModelSize | None:
    return models.get(gpu_type) or models.get(gpu_type.removeprefix("ml.")) or models.get("")


def _unsourced(price: Mapping[str, Any]) -> bool:
    source = str(price.get("source") or "")
    return not source or source.lower().startswith("unsourced") or str(price.get("sourced")) == "false"


def estimate(gpu_rows: Iterable[CostRow | Work], prices: Mapping[str, Mapping[str, Any]], *,
             accelerators: Accelerators | None = None, ratios: Mapping[str, Decimal] | None = None,
             equivalents: Mapping[str, str] | None = None, region: str = "",
             ratio_source: str = "measured by the pilot", declared: Declared | None = None,
             models: Mapping[str, ModelSize] | None = None) -> dict[str, Any]:
    """What the GPU work of ``gpu_rows`` would cost on Neuron, at the price table's prices.

    Each row's workload is decided by :func:`workload_of` (``declared``: the user's declarations); inference maps to
    inference types, training to training types (:func:`neuron_equivalent`; ``equivalents`` overrides per GPU type;
    ``models``: the model size per GPU type, key "" for every type). A row nobody declared is ``unknown``: its line
    carries both targets (``targets``) and stays out of the totals (``unknown``). Neuron instance-hours are the GPU
    instance-hours times ``ratios[gpu type]`` (Neuron instances per GPU instance; ``ratio_source`` says where they
    come from), else times :data:`ASSUMED_RATIO`, and the line says which. SageMaker rows are priced with SageMaker
    entries, never at EC2 rates. Pass only spend that could move (no GPU standby). Full precision; rounded for
    display. ``region`` names where a missing price was looked for.
    """
    accelerators, ratios, equivalents = accelerators or {}, ratios or {}, equivalents or {}
    models = models or {}
    lines: dict[tuple[str, str, str], dict[str, Any]] = {}
    skipped: dict[str, Decimal] = {}
    reasons: dict[str, str] = {}

    def skip(gpu_type: str, amount: Decimal, why: str) -> None:
        skipped[gpu_type] = skipped.get(gpu_type, Decimal(0)) + amount
        if why not in reasons.get(gpu_type, ""):
            reasons[gpu_type] = f"{reasons[gpu_type]}; {why}" if gpu_type in reasons else why

    not_training: list[CostRow] = []
    for item in gpu_rows:
        row = item.row if isinstance(item, Work) else item
        workload, decided = workload_of(item, declared)
        if workload != "training":
            not_training.append(row)
        gpu_price = prices.get(row.instance_type)
        if row.usage_hours > 0:
            hours = row.usage_hours
        else:
            q = divide(row.amount, Decimal(str(gpu_price["usd_per_hour"])) if gpu_price else Decimal(0),
                       why_not="the GPU price is 0" if gpu_price else f"no price for {row.instance_type}")
            if q.value is None:
                skip(row.instance_type, row.amount, f"no usage hours and {q.reason}")
                continue
            hours = q.value
        targets = {}
        model = _model_for(row.instance_type, models)
        for kind in (WORKLOADS if workload == UNKNOWN else (workload,)):
            targets[kind] = (*_target(row.instance_type, kind, accelerators=accelerators, prices=prices,
                                      equivalents=equivalents, region=region, model=model),
                             sizing_of(kind, model, row.instance_type in equivalents))
        if all(t[0] is None for t in targets.values()):
            skip(row.instance_type, row.amount, "; ".join(
                (f"as {k}: " if len(targets) > 1 else "") + why for k, (_, why, _) in targets.items()))
            continue
        line = lines.setdefault((row.instance_type, workload, decided), {
            "gpu_type": row.instance_type, "workload": workload, "workload_from": decided, "targets": targets,
            "gpu_spend": Decimal(0), "hours": Decimal(0)})
        line["gpu_spend"] += row.amount
        line["hours"] += hours

    out_lines = []
    total_gpu, total_neuron = Decimal(0), Decimal(0)
    unknown_usd, unknown_types = Decimal(0), []
    used: dict[str, Mapping[str, Any]] = {}
    for (gpu, workload, _), line in sorted(lines.items()):
        measured = ratios.get(gpu)
        ratio = measured if measured is not None else ASSUMED_RATIO
        priced = {k: _priced(line, t, why, ratio, prices) | {"sizing": sizing}
                  for k, (t, why, sizing) in line["targets"].items()}
        for p in priced.values():
            if p.get("neuron_type"):
                used[p["neuron_type"]] = prices[p["neuron_type"]]
        entry: dict[str, Any] = {
            "gpu_type": gpu, "workload": workload, "workload_from": line["workload_from"],
            "instance_hours": show(line["hours"]), "gpu_spend_usd": show(line["gpu_spend"]),
            "neuron_instances_per_gpu_instance": str(ratio.normalize()),
            "ratio_from": ratio_source if measured is not None else "assumed",
            "throughput": (f"{ratio_source}: {ratio.normalize()} Neuron instances per GPU instance"
                           if measured is not None else
                           f"assumed: {ASSUMED_RATIO} Neuron instance per GPU instance (no pilot measurement or "
                           "--ratio for this type)"),
            "gpu_price": {k: str(v) for k, v in prices.get(gpu, {}).items()},
        }
        if workload == UNKNOWN:
            entry |= {"neuron_type": None, "mapping": None, "sizing": None, "neuron_instance_hours": None,
                      "neuron_estimate_usd": None,
                      "savings_usd": None, "break_even_neuron_instances_per_gpu_instance": None, "neuron_price": None,
                      "targets": {k: {f: v for f, v in p.items() if not f.startswith("_")} for k, p in priced.items()}}
            unknown_usd += line["gpu_spend"]
            unknown_types.append(gpu)
        else:
            p = priced[workload]
            entry |= {k: v for k, v in p.items() if not k.startswith("_")}
            total_gpu += line["gpu_spend"]
            total_neuron += p["_cost"]
        out_lines.append(entry)
    saved = total_gpu - total_neuron
    pct = divide(saved * 100, total_gpu, why_not="no GPU spend estimated")
    assumed = sorted({x["gpu_type"] for x in out_lines if x["ratio_from"] == "assumed"})
    unsourced = sorted(t for t, p in used.items() if _unsourced(p))
    sized = [t for x in out_lines for t in (x["targets"].values() if x["workload"] == UNKNOWN else [x])
             if t.get("sizing") == SIZED and t.get("neuron_type")]
    unsourced_gpu = sorted({x["gpu_type"] for x in out_lines if x["gpu_price"] and _unsourced(x["gpu_price"])})
    return {
        "assumption": (f"throughput {ratio_source} for every line" if not assumed else
                       f"throughput assumed: {ASSUMED_RATIO} Neuron instance per GPU instance for "
                       f"{', '.join(assumed)} (no pilot measurement): replace with the pilot's measured ratio"),
        "ratio_unit": "Neuron instances per GPU instance",
        "lines": out_lines, "gpu_spend_usd": show(total_gpu), "neuron_estimate_usd": show(total_neuron),
        "savings_usd": show(saved), "savings_percent": show(pct.value),
        "unknown": ({"lines": len(unknown_types), "gpu_spend_usd": show(unknown_usd), "gpu_types": unknown_types,
                     "note": "GPU work whose workload nobody declared (EC2 instances, Capacity Blocks, SageMaker "
                             "processing): both Neuron targets shown, left out of the totals; declare it with "
                             "--workload inference|training, --workload GPU_TYPE=inference|training or "
                             "--workload-tag KEY"} if unknown_types else None),
        "sizing": (f"sized by the model: NeuronCores, GiB per NeuronCore and tensor-parallel degrees from "
                   f"{'; '.join(sorted({NEURON_CORES[x['neuron_type'].removeprefix('ml.')].source for x in sized}))}; "
                   f"{HEADROOM}" if sized else None),
        "unsourced_prices": unsourced + [t for t in unsourced_gpu if t not in unsourced],
        "shapes": (shapes := shape(not_training)),
        "suggestions": suggestions(shapes),
        "not_estimated": {k: show(v) for k, v in sorted(skipped.items())},
        "not_estimated_why": dict(sorted(reasons.items())),
    }


def _target(gpu_type: str, workload: str, *, accelerators: Accelerators, prices: Mapping[str, Mapping[str, Any]],
            equivalents: Mapping[str, str], region: str, model: ModelSize | None) -> tuple[str | None, str]:
    neuron: str | None
    if gpu_type in equivalents:
        neuron, why = equivalents[gpu_type], "given equivalent"
    else:
        neuron, why = neuron_equivalent(gpu_type, inference=workload == "inference", accelerators=accelerators,
                                        prices=prices, region=region, model=model)
    if neuron is not None and neuron not in prices:
        return None, f"no price for {neuron}"
    return neuron, why


def _priced(line: Mapping[str, Any], neuron: str | None, why: str, ratio: Decimal,
            prices: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One target of a line: the Neuron type, its estimate at ``ratio`` and its break-even (both in Neuron instances
    per GPU instance), or why there is none."""
    if neuron is None:
        return {"neuron_type": None, "mapping": why}
    used = prices[neuron]
    neuron_hourly = Decimal(str(used["usd_per_hour"]))
    cost = line["hours"] * ratio * neuron_hourly
    break_even = divide(line["gpu_spend"], line["hours"] * neuron_hourly, why_not="the Neuron price is 0")
    return {"neuron_type": neuron, "mapping": why, "neuron_instance_hours": show(line["hours"] * ratio),
            "neuron_estimate_usd": show(cost), "savings_usd": show(line["gpu_spend"] - cost),
            "break_even_neuron_instances_per_gpu_instance": show(break_even.value),
            "neuron_price": {k: str(v) for k, v in used.items()}, "_cost": cost}
