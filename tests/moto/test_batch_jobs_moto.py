"""config/batch.yaml's batch job (issue 43) deployed into moto with neuronfleet.offline (the session's synth_fleet:
no synth of its own) and one run started as its schedule would start it (scripts/demo_batch.py: moto creates no
schedule and runs none): the transform job is created from the schedule's own request and completes in moto."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3

from neuronfleet.facts.compile_cache import NEURON_COMPILE_CACHE_URL
from neuronfleet.offline import deploy_assembly, offline_aws
from scripts.demo_batch import run_batch_jobs


def test_a_batch_job_runs_in_moto_from_its_schedules_request(synth_fleet: Any) -> None:
    batch = synth_fleet("batch")
    fleet = batch.fleet
    stack_name = fleet.stack_name("batch")
    with offline_aws(account=fleet.account, region=fleet.region):
        result = deploy_assembly(batch.assembly.directory)
        cfn, sm = boto3.client("cloudformation", fleet.region), boto3.client("sagemaker", fleet.region)
        runs = run_batch_jobs(Path(batch.assembly.directory), stack_name, cfn, sm)
        container = sm.describe_model(ModelName=runs[0]["ModelName"])["PrimaryContainer"]
    stack = next(s for s in result.stacks if s.name == stack_name)
    assert stack.status == "CREATE_COMPLETE"
    (run,) = runs
    assert run["TransformJobName"].startswith("nightly-summaries-") and run["TransformJobStatus"] == "Completed"
    assert run["TransformResources"] == {"InstanceType": "ml.inf2.xlarge", "InstanceCount": 1}
    bucket = stack.outputs["BatchBucket"]
    assert run["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"] == \
        f"s3://{bucket}/batch/nightly-summaries/input/"
    assert run["TransformOutput"]["S3OutputPath"] == f"s3://{bucket}/batch/nightly-summaries/output/"
    # the job's model compiles at start (vllm-neuronx, allow_non_cached_model): its graphs go to the bucket's cache
    assert container["Environment"][NEURON_COMPILE_CACHE_URL] == f"s3://{bucket}/neuron-compile-cache/"
