"""The fleet's SageMaker endpoints, found at run time instead of listed in the function's environment (Lambda's
4 KB held about a dozen): the endpoints tagged ``neuronfleet:fleet`` = the fleet (Resource Groups Tagging API
GetResources, resource type ``sagemaker:endpoint``), and each one's model read from its endpoint configuration
(DescribeEndpoint -> EndpointConfigName -> DescribeEndpointConfig).

Pure: the API answers in, names and :class:`~.economics.EndpointModel` out. The calls are in
``inventory.FleetEndpoints``. Whether a variant is Neuron or GPU is decided by its instance types' family in the
instance catalog the report receives (``ReportConfig.accelerators``), never by the variant's name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from neuronfleet_contract.tags import FLEET_TAG, MODEL_TAG, THROUGHPUT_TAG
from neuronfleet_contract.variants import GPU_VARIANT, NEURON_VARIANT

from .economics import EndpointModel
from .evaluation import Accelerators

NEURON_FAMILIES = ("trainium", "inferentia")
GPU_FAMILY = "gpu"



@dataclass(frozen=True)
class Discovered:
    """The fleet's endpoints as the report sees them: each readable one's model, and why any other was skipped."""

    models: tuple[EndpointModel, ...] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)
    notes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per endpoint, what of its configuration the model leaves out (logged, and in the report)."""
    throughput: Mapping[str, Decimal] = field(default_factory=dict)
    """Per endpoint, the Neuron instances one GPU instance replaces, as its fleet file states it (its
    ``neuronfleet:neuron-per-gpu`` tag): the capacity figure the report computes a saving from."""


def endpoint_name(arn: str) -> str:
    """The endpoint's name in its ARN (``arn:<partition>:sagemaker:<region>:<account>:endpoint/<name>``)."""
    parts = arn.split(":", 5)
    kind, _, name = parts[5].partition("/") if len(parts) == 6 else ("", "", "")
    if parts[2:3] != ["sagemaker"] or kind != "endpoint" or not name:
        raise ValueError(f"not a SageMaker endpoint ARN: {arn!r}")
    return name


def fleet_endpoints(mappings: Iterable[Mapping[str, Any]], fleet: str) -> list[str]:
    """The names of the endpoints among GetResources' ``ResourceTagMappingList`` entries that carry
    ``neuronfleet:fleet`` = ``fleet`` (the request filters on it; this holds without that too), sorted, once each.
    An entry that is no endpoint ARN is left out."""
    names = set()
    for m in mappings:
        tags = {t.get("Key"): t.get("Value") for t in m.get("Tags") or []}
        if tags.get(FLEET_TAG) != fleet:
            continue
        try:
            names.add(endpoint_name(str(m.get("ResourceARN", ""))))
        except ValueError:
            continue
    return sorted(names)


def model_tags(mappings: Iterable[Mapping[str, Any]], fleet: str) -> dict[str, str]:
    """endpoint name -> the fleet file's name of its model (its ``neuronfleet:model`` tag), for the fleet's endpoints
    among GetResources' ``ResourceTagMappingList`` entries that carry one."""
    out = {}
    for m in mappings:
        tags = {t.get("Key"): t.get("Value") for t in m.get("Tags") or []}
        if tags.get(FLEET_TAG) != fleet or not tags.get(MODEL_TAG):
            continue
        try:
            out[endpoint_name(str(m.get("ResourceARN", "")))] = str(tags[MODEL_TAG])
        except ValueError:
            continue
    return out


def throughput_tags(mappings: Iterable[Mapping[str, Any]], fleet: str) -> dict[str, Decimal]:
    """endpoint name -> the throughput ratio its ``neuronfleet:neuron-per-gpu`` tag states (a positive number), for the
    fleet's endpoints among GetResources' entries. A tag that is no positive number is left out (no figure, no saving
    claimed from it)."""
    out = {}
    for m in mappings:
        tags = {t.get("Key"): t.get("Value") for t in m.get("Tags") or []}
        if tags.get(FLEET_TAG) != fleet or not tags.get(THROUGHPUT_TAG):
            continue
        try:
            value = Decimal(str(tags[THROUGHPUT_TAG]))
            name = endpoint_name(str(m.get("ResourceARN", "")))
        except (ValueError, ArithmeticError):
            continue
        if value.is_finite() and value > 0:
            out[name] = value
    return out


def variant_types(variant: Mapping[str, Any]) -> tuple[str, ...]:
    """A variant's instance types in the order SageMaker tries them: its ``InstancePools`` by priority (1 first),
    else its ``InstanceType``; () for a serverless variant."""
    pools = variant.get("InstancePools") or []
    if pools:
        ordered = sorted(pools, key=lambda p: int(p.get("Priority") or 0))
        return tuple(str(p["InstanceType"]) for p in ordered if p.get("InstanceType"))
    return (str(variant["InstanceType"]),) if variant.get("InstanceType") else ()


def family(instance_type: str, accelerators: Accelerators) -> str:
    """trainium | inferentia | gpu from the catalog (SageMaker's ``ml.`` prefix ignored); "" when not in it."""
    return accelerators.get(instance_type.removeprefix("ml."), ("", 0))[0]


def _weight(variant: Mapping[str, Any]) -> float:
    weight = variant.get("InitialVariantWeight")
    return 1.0 if weight is None else float(weight)  # botocore: "If unspecified, it defaults to 1.0"


def _pick(candidates: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    """The candidate named ``name``, else the first."""
    return next((v for v in candidates if v.get("VariantName") == name), candidates[0] if candidates else None)


def endpoint_model(endpoint: str, config: Mapping[str, Any], accelerators: Accelerators
                   ) -> tuple[EndpointModel | None, tuple[str, ...]]:
    """An endpoint's model from its DescribeEndpointConfig answer: the Neuron variant (a production variant on a
    Trainium or Inferentia type) with its Neuron types and its GPU instance pools (capacity fallback, a warm GPU
    standby), and the GPU variant (all its types GPU; a production or shadow variant) with its role: ``shadow``
    (a shadow variant), ``baseline`` (weighted), ``standby`` (InitialVariantWeight 0). Also what the model leaves
    out. None when no variant runs on an accelerator type of the catalog."""
    notes: list[str] = []
    production = list(config.get("ProductionVariants") or [])
    shadows = list(config.get("ShadowProductionVariants") or [])

    def families(v: Mapping[str, Any]) -> set[str]:
        return {family(t, accelerators) for t in variant_types(v)}

    neuron = _pick([v for v in production if families(v) & set(NEURON_FAMILIES)], "neuron")
    gpu = _pick([v for v in production + shadows if v is not neuron and families(v) == {GPU_FAMILY}], "gpu")
    for v in production + shadows:
        if v is neuron or v is gpu:
            continue
        types = variant_types(v)
        why = ("no instance type (serverless)" if not types else
               f"on {', '.join(types)}: not an accelerator type of the catalog" if not families(v) - {""} else
               "the report models one Neuron and one GPU variant per endpoint")
        notes.append(f"variant {v.get('VariantName')}{' (shadow)' if any(v is s for s in shadows) else ''} left "
                     f"out: {why}")
    if neuron is None and gpu is None:
        return None, tuple(notes)
    neuron_types: tuple[str, ...] = ()
    pool_types: tuple[str, ...] = ()
    if neuron is not None:
        types = variant_types(neuron)
        neuron_types = tuple(t for t in types if family(t, accelerators) in NEURON_FAMILIES)
        pool_types = tuple(t for t in types if family(t, accelerators) == GPU_FAMILY)
        other = [t for t in types if t not in neuron_types + pool_types]
        if other:
            notes.append(f"variant {neuron.get('VariantName')}: pools {', '.join(other)} not in the catalog, "
                         "their spend not attributed")
    gpu_type, role = "", ""
    if gpu is not None:
        gpu_types = variant_types(gpu)
        gpu_type = gpu_types[0]
        role = ("shadow" if any(gpu is s for s in shadows) else "baseline" if _weight(gpu) > 0 else "standby")
        if len(gpu_types) > 1:
            notes.append(f"variant {gpu.get('VariantName')}: only its first pool {gpu_type} is its type; "
                         f"{', '.join(gpu_types[1:])} not attributed")
    for v, expected in ((neuron, NEURON_VARIANT), (gpu, GPU_VARIANT)):
        if v is not None and v.get("VariantName") != expected:
            notes.append(f"variant {v.get('VariantName')} is the {expected} variant by its instance types, but the "
                         f"report reads the invocations of the variant named {expected}: its work is not counted")
    return EndpointModel(endpoint=endpoint, neuron_types=neuron_types, gpu_type=gpu_type, gpu_role=role,
                         gpu_pool_types=pool_types), tuple(notes)


def gone(error: Mapping[str, Any]) -> bool:
    """A ClientError's ``Error`` that says the endpoint or its configuration no longer exists (SageMaker answers
    ValidationException "Could not find endpoint ..." / "Could not find endpoint configuration ...")."""
    return error.get("Code") == "ValidationException" and "Could not find" in str(error.get("Message", ""))


def creation_time(endpoint: Mapping[str, Any]) -> str:
    """A DescribeEndpoint answer's ``CreationTime`` (botocore: a timestamp, required in the output shape) as ISO 8601
    in UTC; "" when missing or without a time zone (the report then claims no scale-to-zero saving: never guessed)."""
    when = endpoint.get("CreationTime")
    if not isinstance(when, datetime) or when.tzinfo is None:
        return ""
    return when.astimezone(UTC).isoformat()
