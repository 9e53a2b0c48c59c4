"""``neuronfleet verify``'s checks of issue 43's batch transform jobs and the Neuron compile cache: what no public
source confirmed offline (docs/checks.md, one row each). Each needs a run on the account (a billed transform job or
training job), so verify lists it with the command and never runs it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..facts.compile_cache import FSX_CACHE_DIR, S3_CACHE_PREFIX
from .registry import Check

if TYPE_CHECKING:
    from ..fleetfile.schema import Fleet


def _batch_jobs(fleet: Fleet) -> str:
    return "" if fleet.batch_jobs else "the fleet has no batch_jobs"


def _compile_cache(fleet: Fleet) -> str:
    cached = [j for j in fleet.batch_jobs if j.model.hf_model_id and j.model.allow_non_cached_model]
    return "" if fleet.training_clusters or cached else \
        "the fleet has no training cluster and no batch job that compiles at start"


BATCH_TRANSFORM_RUN = Check(
    "batch-transform-run", "EventBridge Scheduler replaces <aws.scheduler.execution-id> inside the job name "
    "(<name>-<id>), the scheduler role's sagemaker:ModelArn condition matches the model's Ref, and the container "
    "answers batch transform's /invocations",
    "after the first scheduled run, aws sagemaker list-transform-jobs --name-contains <name>- shows <name>-<id> "
    "Completed; none: aws cloudtrail lookup-events --lookup-attributes AttributeKey=EventName,"
    "AttributeValue=CreateTransformJob shows the call and its error", manual="it needs a scheduled run (a billed "
    "transform job)", applies=_batch_jobs)
TRANSFORM_USAGE_TYPE = Check(
    "transform-usage-type", "SageMaker bills a batch transform job's instance-hours as <region>-Tsform:ml.<type> or "
    "<region>-Transform:ml.<type>", "the day after a run, aws ce get-cost-and-usage --granularity DAILY --metrics "
    "UnblendedCost UsageQuantity --filter '{\"Dimensions\":{\"Key\":\"SERVICE\",\"Values\":[\"Amazon SageMaker\"]}}' "
    "--group-by Type=DIMENSION,Key=USAGE_TYPE shows one of them for ml.inf2/ml.trn1",
    manual="it needs billed hours of a transform job, which Cost Explorer shows up to a day later",
    applies=_batch_jobs)
COMPILE_CACHE = Check(
    "compile-cache", "the Neuron compiler wrapper shares its cache on FSx for Lustre between the nodes of a job and "
    "runs, and on S3 with rights on its prefix only (list, get, put, delete)",
    f"after a second run: ls {FSX_CACHE_DIR} on a training node shows neuronxcc-* folders and the job's log says "
    "'Using a cached neff'; for a batch job, aws s3 ls s3://<batch bucket>/"
    f"{S3_CACHE_PREFIX} lists neuronxcc-* and the second run's log in /aws/sagemaker/TransformJobs says the same",
    manual="it needs two runs of a job (billed)", applies=_compile_cache)

CHECKS: tuple[Check, ...] = (BATCH_TRANSFORM_RUN, TRANSFORM_USAGE_TYPE, COMPILE_CACHE)
