"""What the shared pool relies on, with its sources: Kueue's release and API, EventBridge Scheduler's expressions,
Kubernetes' termination semantics. No aws-cdk-lib import. tests/unit/test_sharing_facts.py pins each one against
the publisher's own files (tests/data/kueue, botocore 1.44.5's scheduler model, kubernetes-validate's schemas).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from ..facts.kueue import (  # noqa: F401  (the pool's Kueue pins live in facts.kueue: one home, re-exported here)
    KUEUE_API,
    KUEUE_CHART,
    KUEUE_COMMIT,
    KUEUE_MANIFESTS,
    KUEUE_NAMESPACE,
    KUEUE_SOURCE,
    KUEUE_VERSION,
    PRIORITY_LABEL,
    QUEUE_LABEL,
)

READ = date(2026, 11, 23)

KUEUE_INTEGRATIONS = ("batch/job", "pod", "deployment")
"""The integrations the pool's workloads use, all enabled in the chart's default ``integrations.frameworks`` at
0.19.2 (charts/kueue/values.yaml); site/content/en/docs/tasks/run/deployment.md: 'The `deployment` integration is
enabled by default', each Deployment pod is 'a single independent Plain Pod' workload, and 'A Kueue managed Pod
cannot be created in `kube-system` or `kueue-system` namespaces'; 'In case of preemption, the Pod will be terminated
and deleted' (tasks/run/plain_pods.md)."""

RECLAIM_WITHIN_COHORT = ("Never", "LowerPriority", "Any")
STOP_POLICIES = ("None", "Hold", "HoldAndDrain")
"""The ClusterQueue CRD's enums at 0.19.2. concepts/cluster_queue.md: reclaimWithinCohort ``Any``: 'if the pending
Workload fits within the nominal quota of its ClusterQueue, preempt any Workload in the cohort, irrespective of
priority'; stopPolicy ``Hold`` 'will stop the admission of new workloads in the ClusterQueue while allowing the
already admitted workloads to finish'."""

RECLAIM = "LowerPriority"
"""What the inference ClusterQueue sets: it takes back its nominal quota from lower-priority (training) workloads
only; ``Any`` would also preempt an equal-priority inference workload another pool's queue borrowed."""


@dataclass(frozen=True)
class Fact:
    text: str
    source: str
    as_of: date = READ
    confirmed: bool = True


SCHEDULER_PRECISION = Fact(
    "All schedule types on EventBridge Scheduler invoke their targets with 60 second precision.",
    "EventBridge Scheduler user guide, 'Schedule types on EventBridge Scheduler' "
    "(https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html)")
SCHEDULER_DST = Fact(
    "When the time shifts forward in Spring, your schedule invocation gets skipped if the cron expression falls on "
    "a non-existent date and time. When the time shifts back in the Fall, your schedule runs only once",
    "AWS re:Post Knowledge Center, 'eventbridge-scheduler-adjust-dst' (https://repost.aws/knowledge-center/"
    "eventbridge-scheduler-adjust-dst); the user guide's own 'Daylight savings time' section was not stored here",
    confirmed=False)
"""Why the pool's schedule runs as ``rate(1 minute)`` and computes its phase itself: a cron expression at a local
time in a skipped hour would skip that morning's reclaim or that night's checkpoint signal."""
SCHEDULE_EXPRESSION = "rate(1 minute)"
"""botocore 1.44.5 scheduler CreateSchedule.ScheduleExpression: 'at', 'rate(value unit)' (unit minute | minutes |
hour | hours | day | days) or 'cron(fields)'; ScheduleExpressionTimezone is 'The timezone in which the scheduling
expression is evaluated' (unused by a rate)."""

GRACE_PERIOD = Fact(
    "The grace period is the duration in seconds after the processes running in the pod are sent a termination "
    "signal and the time when the processes are forcibly halted with a kill signal. [...] Defaults to 30 seconds.",
    "Kubernetes 1.36 OpenAPI, PodSpec.terminationGracePeriodSeconds (kubernetes-validate 1.37.0's "
    "v1.36.0-local-strict/podspec-v1.json)")
PRESTOP = Fact(
    "The Pod's termination grace period countdown begins before the PreStop hook is executed.",
    "Kubernetes 1.36 OpenAPI, Lifecycle.preStop (kubernetes-validate 1.37.0's v1.36.0-local-strict/lifecycle-v1.json)")
JOB_SUSPEND = Fact(
    "If a Job is suspended after creation (i.e. the flag goes from false to true), the Job controller will delete "
    "all active Pods associated with this Job.",
    "Kubernetes 1.36 OpenAPI, JobSpec.suspend (kubernetes-validate 1.37.0's v1.36.0-local-strict/jobspec-batch-v1.json)")
"""Kueue evicts an admitted Job by suspending it, whatever the eviction (a LocalQueue's HoldAndDrain, reclaim,
deactivation): pkg/controller/jobframework/reconciler.go ``stopJob`` -> pkg/controller/jobs/job/job_controller.go
``(*Job).Stop`` sets ``spec.suspend`` (Kueue v0.19.2 @ KUEUE_COMMIT; job_controller_test.go TestReconciler "when
workload is evicted due to local queue stopped, job gets suspended" and "... due to preemption ..."). Its pods are
deleted, so each gets SIGTERM and its grace period, and no failure is counted (kubernetes job_controller_test.go
TestControllerSyncJob "suspending a job with satisfied expectations"; tests/unit/test_kueue_model.py)."""

TRAINING_GRACE_SECONDS = 120
"""The example training pod's terminationGracePeriodSeconds: the time the job gets after SIGTERM, at the reclaim, to
flush what the checkpoint signal did not (the kit's choice, not a published figure)."""

# ------------------------------------------------------------------------ why the Batch variant is not built

BATCH_DESIRED_ONLY_UP = Fact(
    "the updated desiredvCpus value must be greater than or equal to the current desiredvCpus value",
    "botocore 1.44.5 batch model, ComputeResourceUpdate.desiredvCpus")
"""A Batch compute environment cannot be scaled down by its desired vCPUs: a morning scale-down is not an API call."""
BATCH_DISABLED_QUEUE = Fact(
    "If the job queue state is DISABLED, new jobs can't be added to the queue, but jobs already in the queue can "
    "finish.", "botocore 1.44.5 batch model, UpdateJobQueueRequest.state")
"""Disabling the nightly queue at the signal stops new work but frees no chip: running jobs run on."""
BATCH_TERMINATE = Fact(
    "Jobs that are in the STARTING or RUNNING state are terminated, which causes them to transition to FAILED.",
    "botocore 1.44.5 batch model, TerminateJob")
"""The only reclaim on Batch: TerminateJob, SIGTERM then SIGKILL after the ECS agent's stop timeout (30 s by default;
Batch's ContainerProperties has no stopTimeout: docs/capacity-blocks.md)."""
SAGEMAKER_ML_RESERVATION = Fact(
    "SageMaker AI launches instances only into an ML capacity reservation.",
    "botocore 1.44.5 sagemaker model, ProductionVariantCapacityReservationConfig.CapacityReservationPreference "
    "(MlReservationArn: an arn:aws:sagemaker:... ARN, not an EC2 capacity reservation id)")
"""The kit's inference runs on SageMaker endpoints: they take an ML reservation (a SageMaker training plan), never the
EC2 ODCR or Capacity Block a Batch compute environment launches into, so the two cannot share one reservation."""

KUBECTL_HANDLER_OCI = Fact(
    "helm_cmd = ['helm', 'pull', repository, '--version', version , '--untar']",
    "aws-cdk-lib 2.275.0's kubectl handler, custom-resource-handlers/dist/aws-eks-v2/kubectl-handler/helm/__init__.py "
    "(in the installed jsii bundle): an oci:// repository is pulled whole with helm pull (the chart name is not used); "
    "outside ECR it logs 'OCI repository format not recognized, falling back to helm pull' and pulls without login")
"""Why the Kueue chart is given as ``repository=oci://registry.k8s.io/kueue/charts/kueue`` (the chart's full OCI
reference) and why the kubectl provider's log shows that error line for it: harmless, registry.k8s.io needs no login."""
