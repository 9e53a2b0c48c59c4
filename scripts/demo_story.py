"""What `make demo` adds so each phase's report tells its story, every figure SYNTHETIC and labelled so:

- evaluation (config/dev.yaml, eval.yaml): a synthetic GPU baseline, the GPU endpoints a team would move from, so the
  report's evaluation estimate has GPU work to price on Neuron;
- production (config/prod.yaml): the pilot judge's verdict on fixture answers for each endpoint with a GPU variant:
  its go gates the saving, which the report computes from the fleet file's own throughput ratio
  (gpu_variant.neuron_instances_per_gpu_instance), never from the judge's single-stream cost per million (a latency
  figure: the fixtures' 1.2 s vs 1.0 s answers read "GPU costs 3.53x Neuron"; docs/cost.md says why).

SageMaker hours are priced at the kit's built-in SageMaker hosting rate of the type (facts/prices.py, each with its
source), and at the EC2 rate of the same type only where no SageMaker rate is built in (said so in the price's source).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SYNTHETIC_PRICE_SOURCE = ("synthetic (scripts/demo.py): the EC2 list price of the same type from the instance catalog; "
                          "no SageMaker rate of this type is built in")


def ec2_price(instance_type: str) -> float:
    from neuronfleet import CATALOG

    return CATALOG.get(instance_type.removeprefix("ml.")).price.usd_per_hour


def hourly_price(instance_type: str) -> float:
    """What the demo bills an hour of ``instance_type``: an ``ml.`` type at the built-in SageMaker hosting rate, else
    at the EC2 rate of the same type (facts.prices.hosting_usd_per_hour); an EC2 type at the catalog's rate."""
    from neuronfleet.facts.prices import hosting_usd_per_hour

    return hosting_usd_per_hour(instance_type) if instance_type.startswith("ml.") else ec2_price(instance_type)


def with_sagemaker_prices(prices: Mapping[str, Mapping[str, Any]], types: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The report's price table plus a SYNTHETIC ``ml.`` price (the EC2 rate) for each of ``types`` it lacks."""
    from neuronfleet import CATALOG

    out = {k: dict(v) for k, v in prices.items()}
    for t in types:
        ml = t if t.startswith("ml.") else f"ml.{t}"
        if ml not in out:
            spec = CATALOG.get(ml.removeprefix("ml."))
            out[ml] = {"usd_per_hour": str(spec.price.usd_per_hour), "source": SYNTHETIC_PRICE_SOURCE,
                       "as_of": str(spec.price.as_of), "origin": "override"}
    return out


def gpu_baseline(models: Sequence[Mapping[str, Any]], counts: Sequence[int], accelerators: Mapping[str, Any]
                 ) -> list[tuple[str, str, int]]:
    """Per endpoint without a GPU variant: (endpoint, the GPU SageMaker type a team would serve it on today, count):
    the cheapest catalog GPU type whose work the report's estimate maps back onto this endpoint's Neuron type (its
    accelerator memory fits), at the endpoint's minimum instances."""
    from neuronfleet.facts.prices import price_table
    from neuronfleet.lambdas.cost.logic.evaluation import neuron_equivalent

    built_in = price_table()
    gpu_types = [t for t, (family, _) in accelerators.items() if family == "gpu"]
    out = []
    for m, count in zip(models, counts, strict=True):
        if m.get("gpu_type"):
            continue
        neuron = m["neuron_types"][0]
        every = [*gpu_types, neuron.removeprefix("ml.")]
        prices = with_sagemaker_prices({}, every)
        fits = [t for t in gpu_types if f"ml.{t}" in built_in  # a GPU endpoint priced at a SageMaker rate
                and neuron_equivalent(f"ml.{t}", inference=True, accelerators=accelerators, prices=prices)[0] == neuron]
        if fits:
            out.append((m["endpoint"], f"ml.{min(fits, key=lambda t: hourly_price(f'ml.{t}'))}", count))
    return out


NEURON_LATENCY_MS, GPU_LATENCY_MS, TOKENS = 1200.0, 1000.0, 128
"""The fixture answers: both variants answer every prompt with the same 128 tokens (greedy outputs agree), Neuron in
1.2 s and GPU in 1.0 s (within the judge's default p99 bound of 1.5x). Synthetic: no endpoint answered."""


def fixture_verdicts(fleet: str, models: Sequence[Mapping[str, Any]], prompts: int = 20) -> list[Any]:
    """The pilot judge's own verdict (lambdas/judge) on fixture answers, for each endpoint with a GPU variant, at the
    kit's hourly prices (SageMaker at the EC2 rate, synthetic): labelled synthetic. Its cost per million is
    single-stream (one request at a time over ``prompts`` prompts) and shown as such; no saving is taken from it."""
    from neuronfleet.lambdas.judge.logic import Answer, Outcome, Prompt, RunState, judge
    from neuronfleet_contract.judge import Tolerances

    out = []
    for m in models:
        if not m.get("gpu_type"):
            continue
        asked = [Prompt(id=f"p{i}", text=f"fixture prompt {i}") for i in range(prompts)]
        state = RunState(run_id="demo-fixtures")
        tokens = tuple(f"t{i}" for i in range(TOKENS))
        for p in asked:
            state.add("neuron", p.id, Outcome(latency_ms=NEURON_LATENCY_MS, answer=Answer(tokens=tokens, units=TOKENS)))
            state.add("gpu", p.id, Outcome(latency_ms=GPU_LATENCY_MS, answer=Answer(tokens=tokens, units=TOKENS)))
        out.append(judge(endpoint=m["endpoint"], run_id="demo-fixtures", task="generation", prompts=asked, state=state,
                         tolerances=Tolerances(), fleet=fleet, synthetic=True,
                         usd_per_hour={"neuron": hourly_price(m["neuron_types"][0]),
                                       "gpu": hourly_price(m["gpu_type"])}))
    return out
