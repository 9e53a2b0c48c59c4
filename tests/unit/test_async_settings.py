"""``invocation: async`` in EndpointSettings and the fleet file: defaults, and what an asynchronous endpoint refuses
(a clear error naming the field, the value and what is allowed)."""

from __future__ import annotations

from typing import Any

import pytest

from neuronfleet import InvalidSettings
from neuronfleet.settings.inference import DEFAULT_BACKLOG_PER_INSTANCE, EndpointSettings

BASE: dict[str, Any] = {"instance_type": "ml.inf2.xlarge", "container": "vllm-neuronx",
                        "hf_model_id": "unsloth/Llama-3.2-1B-Instruct",
                        "revision": "5a8abab4a5d6f164389b1079fb721cfab8d7126c", "tensor_parallel_degree": 2,
                        "allow_non_cached_model": True}


def problems(**extra: Any) -> str:
    with pytest.raises(InvalidSettings) as err:
        EndpointSettings(**BASE, **extra)
    return str(err.value)


def test_an_async_endpoint_scales_to_zero_by_default() -> None:
    s = EndpointSettings(**BASE, invocation="async")
    assert s.is_async and s.min_instances == 0
    assert s.async_settings.target_backlog_per_instance == DEFAULT_BACKLOG_PER_INSTANCE == 5.0
    assert EndpointSettings(**BASE, invocation="async", min_instances=1).min_instances == 1


def test_a_real_time_endpoint_keeps_at_least_one_instance() -> None:
    assert EndpointSettings(**BASE).min_instances == 1 and not EndpointSettings(**BASE).is_async
    msg = problems(min_instances=0)
    assert "min_instances: got 0" in msg and "invocation: async" in msg


def test_async_settings_belong_to_async_endpoints() -> None:
    msg = problems(async_inference={"target_backlog_per_instance": 2})
    assert "async_inference" in msg and "invocation real-time" in msg


@pytest.mark.parametrize(("extra", "field", "why"), [
    ({"gpu_variant": {"instance_type": "ml.g6.2xlarge", "max_instances": 2}}, "gpu_variant: got 'ml.g6.2xlarge'",
     "queue"),
    ({"gpu_variant": {"instance_type": "ml.g6.2xlarge", "standby": "warm"}}, "gpu_variant: got 'ml.g6.2xlarge'",
     "real-time endpoints only"),
    ({"gpu_variant": {"instance_type": "ml.g6.2xlarge", "shadow": True}}, "gpu_variant: got", "shadow"),
    ({"instance_pools": ["ml.inf2.8xlarge"]}, "instance_pools: got ['ml.inf2.8xlarge']", "InstancePools"),
    ({"target_invocations_per_instance": 10}, "target_invocations_per_instance: got 10", "InvocationsPerInstance"),
    ({"data_capture_percent": 10}, "data_capture_percent: got 10", "S3"),
])
def test_what_an_async_endpoint_refuses(extra: dict[str, Any], field: str, why: str) -> None:
    msg = problems(invocation="async", **extra)
    assert field in msg and why in msg


def test_the_client_concurrency_is_botocores_range() -> None:
    ok: dict[str, Any] = {"invocation": "async", "async_inference": {"max_concurrent_invocations_per_instance": 1000}}
    EndpointSettings(**BASE, **ok)
    with pytest.raises(InvalidSettings, match="max_concurrent_invocations_per_instance"):
        EndpointSettings(**BASE, **{**ok, "async_inference": {"max_concurrent_invocations_per_instance": 1001}})


def test_an_unknown_invocation_names_the_allowed_ones() -> None:
    msg = problems(invocation="batch")
    assert "invocation" in msg and "async" in msg and "real-time" in msg


def test_config_batch_is_an_async_fleet_and_verify_lists_its_usage_type_check() -> None:
    """config/batch.yaml: its endpoint is asynchronous and scales to zero; verify's manual check of the AsyncInf: usage
    type applies to it and not to a fleet without an asynchronous endpoint (config/dev.yaml)."""
    from neuronfleet import load_fleet
    from neuronfleet.verify import CHECKS
    from tests.conftest import ROOT

    batch, dev = (load_fleet(ROOT / "config" / f"{n}.yaml") for n in ("batch", "dev"))
    (summarise,) = batch.endpoints
    assert summarise.is_async and summarise.min_instances == 0 and summarise.instance_type == "ml.inf2.xlarge"
    (check,) = [c for c in CHECKS if c.id == "async-usage-type"]
    assert check.run is None and "AsyncInf:ml.inf2.xlarge" in check.by_hand
    assert check.not_applying(batch) == "" and check.not_applying(dev) == "the fleet has no asynchronous endpoint"
