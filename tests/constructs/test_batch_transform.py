"""NeuronBatchTransform (issue 43): a scheduled SageMaker batch transform job on Neuron. One construct-level synth
(module scope); the schedule's request is checked against botocore's CreateTransformJob shape and run in moto
(create_transform_job / describe_transform_job, moto 5.2.5), the scheduler role against the Service Authorization
Reference's CreateTransformJob rows (tests/data/iam/list_amazonsagemaker-transform-rows.html)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from aws_cdk import Stack
from aws_cdk.assertions import Template
from moto import mock_aws

from neuronfleet.inference.batch_transform import (
    CREATE_TRANSFORM_JOB,
    EXECUTION_ID,
    TRANSFORM_JOB_KEYS,
    UNIVERSAL_TARGET,
    NeuronBatchTransform,
    job_request,
)
from neuronfleet.settings.transform import BatchJobSettings
from neuronfleet_contract.tags import FLEET_TAG, MODEL_TAG
from tests.conftest import ENV, AzStack, network, new_app, properties
from tests.sar_rows import IAM_DATA, action_row

ROWS = (IAM_DATA / "list_amazonsagemaker-transform-rows.html").read_text()
REVISION = "5c38ec7c405ec4b44b94cc5a9bb96e735b38267a"
SETTINGS: dict[str, Any] = dict(name="nightly-embed", instance_type="ml.inf2.xlarge", schedule="cron(0 2 * * ? *)",
                schedule_timezone="Europe/Paris", input_prefix="batch/nightly/input/",
                model={"container": "hf-inference-neuronx", "hf_model_id": "BAAI/bge-base-en-v1.5",
                       "revision": REVISION, "task": "embeddings", "batch_size": 4, "sequence_length": 512})


@pytest.fixture(scope="module")
def synth() -> tuple[NeuronBatchTransform, Any]:
    app = new_app()
    stack = AzStack(app, "BatchStack", env=ENV)
    net = network(stack)
    job = NeuronBatchTransform(stack, "Nightly", vpc=net.vpc, settings=BatchJobSettings(**SETTINGS), fleet="prod")
    return job, Template.from_stack(stack).to_json()


def _one(template: dict[str, Any], kind: str) -> dict[str, Any]:
    found = properties(Template.from_json(template), kind)
    assert len(found) == 1, f"{kind}: {sorted(found)}"
    return next(iter(found.values()))


def _resolve(value: Any, template: dict[str, Any]) -> Any:
    """The schedule's Input with the template's references filled as CloudFormation would in moto's account
    (the bucket's and the model's names)."""
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(_resolve(p, template) for p in parts)
    if isinstance(value, dict) and "Ref" in value:
        return {"AWS::Partition": "aws", "AWS::Region": "us-east-2", "AWS::AccountId": "111111111111"}.get(
            value["Ref"], "databucket-1")
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "nightly-model-1"
    return value


def test_the_schedule_calls_create_transform_job_through_the_universal_target(synth: Any) -> None:
    _, template = synth
    schedule = _one(template, "AWS::Scheduler::Schedule")
    assert schedule["Target"]["Arn"] == UNIVERSAL_TARGET == "arn:aws:scheduler:::aws-sdk:sagemaker:createTransformJob"
    assert schedule["ScheduleExpression"] == "cron(0 2 * * ? *)"
    assert schedule["ScheduleExpressionTimezone"] == "Europe/Paris"
    assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}


def test_each_run_has_a_job_name_of_its_own(synth: Any) -> None:
    _, template = synth
    text = _resolve(_one(template, "AWS::Scheduler::Schedule")["Target"]["Input"], template)
    assert EXECUTION_ID == "<aws.scheduler.execution-id>"
    first, second = job_request(text, "d32c5kddcf5bb8c3"), job_request(text, "e41a9b0c2d7f1e66")
    assert first["TransformJobName"] == "nightly-embed-d32c5kddcf5bb8c3"  # AWS's example execution id
    assert first["TransformJobName"] != second["TransformJobName"]


def test_the_request_is_a_valid_create_transform_job_and_runs_in_moto(synth: Any) -> None:
    """botocore validates the request against its CreateTransformJob shape; moto 5.2.5 implements
    create_transform_job and describe_transform_job (its jobs complete at once)."""
    _, template = synth
    request = job_request(_resolve(_one(template, "AWS::Scheduler::Schedule")["Target"]["Input"], template),
                          "d32c5kddcf5bb8c3")
    model = _one(template, "AWS::SageMaker::Model")
    with mock_aws():
        sm = boto3.client("sagemaker", region_name="us-east-2")
        sm.create_model(ModelName=request["ModelName"], ExecutionRoleArn="arn:aws:iam::111111111111:role/x",
                        PrimaryContainer={"Image": "111111111111.dkr.ecr.us-east-2.amazonaws.com/x:1",
                                          "Environment": model["PrimaryContainer"]["Environment"]})
        sm.create_transform_job(**request)
        job = sm.describe_transform_job(TransformJobName=request["TransformJobName"])
    assert job["TransformJobStatus"] == "Completed"
    assert job["TransformResources"] == {"InstanceType": "ml.inf2.xlarge", "InstanceCount": 1}
    assert job["TransformInput"]["DataSource"]["S3DataSource"] == {
        "S3DataType": "S3Prefix", "S3Uri": "s3://databucket-1/batch/nightly/input/"}
    assert request["TransformOutput"]["S3OutputPath"] == "s3://databucket-1/batch/nightly-embed/output/"
    assert {"Key": MODEL_TAG, "Value": "nightly-embed"} in request["Tags"]
    assert {"Key": FLEET_TAG, "Value": "prod"} in request["Tags"]


def test_the_model_is_the_endpoints_container_with_its_settings(synth: Any) -> None:
    _, template = synth
    env = _one(template, "AWS::SageMaker::Model")["PrimaryContainer"]["Environment"]
    assert env["HF_MODEL_ID"] == "BAAI/bge-base-en-v1.5" and env["HF_MODEL_REVISION"] == REVISION
    assert env["HF_TASK"] == "feature-extraction"
    assert env["HF_OPTIMUM_BATCH_SIZE"] == "4" and env["HF_OPTIMUM_SEQUENCE_LENGTH"] == "512"


def test_the_scheduler_role_creates_this_models_jobs_on_this_type_only(synth: Any) -> None:
    job, template = synth
    resources, keys, dependent = action_row(ROWS, "amazonsagemaker-CreateTransformJob")
    assert resources == ("transform-job*",) and dependent == ("sagemaker:AddTags",)
    assert set(TRANSFORM_JOB_KEYS) <= set(keys)
    assert "ARN" in ROWS[ROWS.index('id="amazonsagemaker-sagemaker_ModelArn"'):][:600]
    assert "ArrayOfString" in ROWS[ROWS.index('id="amazonsagemaker-sagemaker_InstanceTypes"'):][:700]
    role_id = Stack.of(job).get_logical_id(job.scheduler_role.node.default_child)
    policies = [p for p in properties(Template.from_json(template), "AWS::IAM::Policy").values()
                if {"Ref": role_id} in p["Roles"]]
    statements = [s for p in policies for s in p["PolicyDocument"]["Statement"]]
    assert len(statements) == 1, statements
    (statement,) = statements
    assert sorted(statement["Action"]) == sorted([CREATE_TRANSFORM_JOB, "sagemaker:AddTags"])
    assert json.dumps(statement["Resource"]).count("transform-job/nightly-embed-*") == 1
    assert statement["Condition"]["ArnEquals"]["sagemaker:ModelArn"] == {
        "Ref": Stack.of(job).get_logical_id(job.model)}
    assert statement["Condition"]["ForAllValues:StringEquals"]["sagemaker:InstanceTypes"] == ["ml.inf2.xlarge"]
    trust = template["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"]["StringEquals"]["aws:SourceAccount"] == "111111111111"


def test_the_execution_role_reads_the_input_prefix_and_writes_the_output_prefix_only(synth: Any) -> None:
    job, template = synth
    role_id = Stack.of(job).get_logical_id(job.role.node.default_child)
    statements = {s.get("Sid"): s for p in properties(Template.from_json(template), "AWS::IAM::Policy").values()
                  if {"Ref": role_id} in p["Roles"] for s in p["PolicyDocument"]["Statement"]}
    assert statements["ListInput"]["Condition"] == {"StringLike": {"s3:prefix": ["batch/nightly/input/*"]}}
    assert json.dumps(statements["ReadInput"]["Resource"]).endswith('"/batch/nightly/input/*"]]}')
    assert statements["ReadInput"]["Action"] == "s3:GetObject"
    assert sorted(statements["WriteOutput"]["Action"]) == ["s3:AbortMultipartUpload", "s3:PutObject"]
    assert json.dumps(statements["WriteOutput"]["Resource"]).endswith('"/batch/nightly-embed/output/*"]]}')
    logs = json.dumps(statements["TransformLogs"]["Resource"])
    assert logs.count("log-group:/aws/sagemaker/TransformJobs") == 2 and "Endpoints" not in logs
    writes = [s for s in statements.values() if "s3:PutObject" in json.dumps(s.get("Action"))]
    assert writes == [statements["WriteOutput"]]


VLLM: dict[str, Any] = {"container": "vllm-neuronx", "hf_model_id": "unsloth/Llama-3.2-1B-Instruct", "revision": REVISION,
        "tensor_parallel_degree": 2, "allow_non_cached_model": True}


def test_a_model_compiled_at_start_keeps_its_graphs_in_the_buckets_cache_prefix() -> None:
    """vllm-neuronx exporting a hub model at start (allow_non_cached_model) reads and writes the bucket's
    neuron-compile-cache/ prefix (facts.compile_cache.SERVING_CACHE): the first run compiles, the next ones load; the
    execution role gets that prefix only. The same job serving a compiled artifact gets no cache (nothing compiles)."""
    from neuronfleet.facts.compile_cache import NEURON_COMPILE_CACHE_URL

    app = new_app()
    stack = AzStack(app, "CacheStack", env=ENV)
    net = network(stack)
    job = NeuronBatchTransform(stack, "Gen", vpc=net.vpc, settings=BatchJobSettings(
        **{**SETTINGS, "name": "gen", "instance_type": "ml.inf2.8xlarge", "model": VLLM}))
    compiled = NeuronBatchTransform(stack, "Compiled", vpc=net.vpc, bucket=job.bucket, settings=BatchJobSettings(
        **{**SETTINGS, "name": "compiled", "instance_type": "ml.inf2.8xlarge",
           "model": {"container": "vllm-neuronx", "model_data_url": "s3://models-111111111111/llama/",
                     "tensor_parallel_degree": 2, "batch_size": 4, "sequence_length": 4096}}))
    template = Template.from_stack(stack)
    models = properties(template, "AWS::SageMaker::Model")
    env = models[stack.get_logical_id(job.model)]["PrimaryContainer"]["Environment"]
    assert env[NEURON_COMPILE_CACHE_URL] == {"Fn::Join": ["", [
        "s3://", {"Ref": stack.get_logical_id(job.bucket.node.default_child)}, "/neuron-compile-cache/"]]}
    assert NEURON_COMPILE_CACHE_URL not in models[stack.get_logical_id(compiled.model)]["PrimaryContainer"].get(
        "Environment", {})
    role_id = stack.get_logical_id(job.role.node.default_child)
    statements = {s.get("Sid"): s for p in properties(template, "AWS::IAM::Policy").values()
                  if {"Ref": role_id} in p["Roles"] for s in p["PolicyDocument"]["Statement"]}
    assert statements["ListCompileCache"]["Condition"] == {"StringLike": {"s3:prefix": ["neuron-compile-cache/*"]}}
    assert json.dumps(statements["CompileCache"]["Resource"]).endswith('"/neuron-compile-cache/*"]]}')
    other = stack.get_logical_id(compiled.role.node.default_child)
    assert not any("neuron-compile-cache" in json.dumps(p) for p in properties(template, "AWS::IAM::Policy").values()
                   if {"Ref": other} in p["Roles"])
