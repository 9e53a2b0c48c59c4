"""make demo (issue 43): one run of each batch job of a fleet, started as its schedule starts it.

moto's CloudFormation creates no ``AWS::Scheduler::Schedule`` (moto 5.2.5's scheduler has no CloudFormation model)
and moto runs no schedule, so the demo does what the schedule would: it reads the schedule's ``Input`` (the
CreateTransformJob request) from the synthesised template, fills in what the deploy created (the bucket's name, the
model's name) and the run's execution id, and sends it with ``sagemaker.create_transform_job``. moto 5.2.5 implements
``create_transform_job`` and ``describe_transform_job``: its jobs complete at once, without running the model."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neuronfleet.inference.batch_transform import job_request

SCHEDULE = "AWS::Scheduler::Schedule"


def resolve(value: Any, physical: Mapping[str, str]) -> Any:
    """A template value with its ``Fn::Join``, ``Ref`` and ``Fn::GetAtt [<model>, ModelName]`` filled in from the
    deployed stack's physical ids (a SageMaker model's is its ARN, ``...:model/<name>``, as CloudFormation's Ref)."""
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(str(resolve(p, physical)) for p in parts)
    if isinstance(value, dict) and "Ref" in value:
        return physical[value["Ref"]]
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        logical, attribute = value["Fn::GetAtt"]
        if attribute != "ModelName":
            raise ValueError(f"Fn::GetAtt {logical}.{attribute}: the demo fills ModelName only")
        return physical[logical].rsplit(":model/", 1)[-1]
    return value


def start_runs(template: Mapping[str, Any], physical: Mapping[str, str], sagemaker: Any,
               execution_id: str | None = None) -> list[dict[str, Any]]:
    """Start one run of each schedule of ``template`` (a batch stack's) and return each job as described."""
    runs = []
    for resource in template["Resources"].values():
        if resource["Type"] != SCHEDULE:
            continue
        text = resolve(resource["Properties"]["Target"]["Input"], physical)
        request = job_request(text, execution_id or uuid.uuid4().hex[:16])
        sagemaker.create_transform_job(**request)
        runs.append(sagemaker.describe_transform_job(TransformJobName=request["TransformJobName"]))
    return runs


def run_batch_jobs(assembly: Path, stack_name: str, cloudformation: Any, sagemaker: Any) -> list[dict[str, Any]]:
    """The demo's step: the batch stack's template from the cloud assembly, its physical ids from the deploy."""
    template = json.loads((assembly / f"{stack_name}.template.json").read_text())
    physical = {r["LogicalResourceId"]: r["PhysicalResourceId"]
                for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name)
                for r in page["StackResourceSummaries"] if r.get("LogicalResourceId")}  # moto: skipped ones are blank
    return start_runs(template, physical, sagemaker)
