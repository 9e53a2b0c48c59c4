"""BatchJobSettings (issue 43): each AWS fact of a batch job pinned to the installed botocore's SageMaker model, and the
endpoint's Neuron checks applied to the job's model on the job's instance type."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import botocore
import pytest

from neuronfleet.core.problems import InvalidSettings
from neuronfleet.settings.transform import (
    EXECUTION_ID_ROOM,
    INVOCATIONS_MAX_RETRIES,
    INVOCATIONS_TIMEOUT_S,
    JOB_NAME_MAX,
    JOB_NAME_PATTERN,
    NEURON_TRANSFORM_TYPES,
    PREFIX_MAX,
    BatchJobSettings,
)

SHAPES: dict[str, Any] = json.loads(gzip.decompress(
    (Path(botocore.__file__).parent / "data" / "sagemaker" / "2017-07-24" / "service-2.json.gz").read_bytes()))["shapes"]
JOB: dict[str, Any] = dict(name="nightly", instance_type="ml.inf2.xlarge", schedule="cron(0 2 * * ? *)",
                           input_prefix="batch/nightly/input/",
                           model={"container": "hf-inference-neuronx", "hf_model_id": "BAAI/bge-base-en-v1.5",
                                  "revision": "5c38ec7c405ec4b44b94cc5a9bb96e735b38267a", "task": "embeddings"})


def refused(**changes: Any) -> str:
    with pytest.raises(InvalidSettings) as err:
        BatchJobSettings(**{**JOB, **changes})
    return str(err.value)


def test_the_neuron_types_are_botocores_transform_types() -> None:
    listed = SHAPES["TransformInstanceType"]["enum"]
    neuron = tuple(t for t in listed if t.startswith(("ml.inf", "ml.trn")))
    assert set(NEURON_TRANSFORM_TYPES) == set(neuron)
    assert not any(t.startswith("ml.trn2") for t in listed)  # trn2 serves endpoints, not batch transform


def test_the_request_bounds_are_botocores() -> None:
    name = SHAPES["TransformJobName"]
    assert (name["max"], name["pattern"]) == (JOB_NAME_MAX, JOB_NAME_PATTERN.pattern)
    timeout, retries = SHAPES["InvocationsTimeoutInSeconds"], SHAPES["InvocationsMaxRetries"]
    assert (timeout["min"], timeout["max"]) == INVOCATIONS_TIMEOUT_S
    assert (retries["min"], retries["max"]) == INVOCATIONS_MAX_RETRIES
    assert set(SHAPES["SplitType"]["enum"]) == {"None", "Line", "RecordIO", "TFRecord"}
    assert set(SHAPES["BatchStrategy"]["enum"]) == {"SingleRecord", "MultiRecord"}
    assert PREFIX_MAX + 1 + EXECUTION_ID_ROOM == JOB_NAME_MAX


def test_a_job_runs_its_model_on_its_own_type() -> None:
    job = BatchJobSettings(**JOB)
    assert job.endpoint_model.instance_type == "ml.inf2.xlarge" and "instance_type" not in type(job.model).model_fields
    assert job.output_key_prefix == "batch/nightly/output/" and job.report_name == "nightly"


@pytest.mark.parametrize(("changes", "field", "allowed"), [
    ({"instance_type": "ml.trn2.48xlarge"}, "instance_type", "TransformInstanceType"),
    ({"instance_type": "ml.g5.xlarge"}, "instance_type", "ml.inf2.xlarge"),
    ({"name": "a" * (PREFIX_MAX + 1)}, "name", f"at most {PREFIX_MAX} characters"),
    ({"name": "nightly_embed"}, "name", "letters, digits and hyphens"),
    ({"input_prefix": "/batch/in/"}, "input_prefix", "without a leading '/'"),
    ({"input_prefix": "batch/in"}, "input_prefix", "ending with '/'"),
    ({"output_prefix": "batch/nightly/input/out/"}, "output_prefix", "apart from input_prefix"),
    ({"schedule": "every night"}, "schedule", "cron"),
    ({"schedule_timezone": "Paris"}, "schedule_timezone", "IANA"),
    ({"instance_count": 101}, "instance_count", "100"),
    ({"invocations_max_retries": 4}, "invocations_max_retries", "3"),
    ({"model_name": "x" * 257}, "model_name", "tag value"),
    ({"model": {**JOB["model"], "min_instances": 2}}, "model.min_instances", "known keys: container"),
    ({"model": {**JOB["model"], "instance_type": "ml.inf2.8xlarge"}}, "model.instance_type", "no key 'instance_type'"),
])
def test_a_bad_job_names_the_field_the_value_and_what_is_allowed(changes: dict[str, Any], field: str,
                                                                 allowed: str) -> None:
    message = refused(**changes)
    assert f"{field}: got" in message and allowed in message, message


def test_the_endpoints_neuron_checks_apply_to_the_jobs_model() -> None:
    """vLLM on ml.inf2.xlarge (2 NeuronCores) with tensor parallelism 4: the endpoint's divisor rule, on the job's
    type; a deprecated or unavailable container is refused as for an endpoint."""
    vllm = {"container": "vllm-neuronx", "hf_model_id": "unsloth/Llama-3.2-1B-Instruct",
            "revision": "5c38ec7c405ec4b44b94cc5a9bb96e735b38267a", "tensor_parallel_degree": 4,
            "allow_non_cached_model": False}
    message = refused(model=vllm)
    assert "model.tensor_parallel_degree: got 4" in message and "2 NeuronCores of ml.inf2.xlarge" in message
    assert "model.container" in refused(model={**JOB["model"], "container": "neuron-vllm"})
    BatchJobSettings(**{**JOB, "instance_type": "ml.inf2.8xlarge", "model": {**vllm, "tensor_parallel_degree": 2}})


def _fleet(**changes: Any) -> Any:
    import yaml

    from neuronfleet.fleetfile.schema import parse_fleet
    from tests.conftest import ROOT

    raw = yaml.safe_load((ROOT / "config" / "dev.yaml").read_text())
    raw["batch_jobs"] = [JOB, {**JOB, "name": "weekly", "schedule": "rate(7 days)"}]
    for key, value in changes.items():
        raw[key] = value if key != "network" else {**raw["network"], **value}
    return parse_fleet(raw, source="fleet.yaml")


def test_a_fleet_files_batch_jobs_are_checked_with_the_fleet() -> None:
    from neuronfleet.fleetfile.schema import FleetConfigError

    assert [j.name for j in _fleet().batch_jobs] == ["nightly", "weekly"]
    with pytest.raises(FleetConfigError) as err:
        _fleet(batch_jobs=[JOB, JOB])
    assert "batch_jobs" in str(err.value) and "nightly" in str(err.value)
    with pytest.raises(FleetConfigError) as err:
        _fleet(network={"nat_gateways": 0})
    assert "batch_jobs[0].model.hf_model_id: got 'BAAI/bge-base-en-v1.5'" in str(err.value)
    with pytest.raises(FleetConfigError) as err:
        _fleet(batch_jobs=[{**JOB, "instance_type": "ml.trn2.48xlarge"}])
    assert "batch_jobs[0].instance_type: got 'ml.trn2.48xlarge'" in str(err.value)
