"""AsyncQueue: an asynchronous endpoint's S3 locations and SNS topics, and the facts its scaling and alarms read.

SageMaker asynchronous inference (AsyncInferenceConfig in the endpoint configuration): the caller puts its request in
S3 and calls InvokeEndpointAsync with its location; SageMaker queues it, writes the answer under ``S3OutputPath`` (an
error under ``S3FailurePath``) and publishes to the success or error topic. The endpoint's execution role writes only
its two prefixes, reads only its input prefix and publishes only its two topics.

Facts (each pinned by tests/unit/test_async_endpoint.py):

- AsyncInferenceConfig's shape: ``OutputConfig`` (required) with ``S3OutputPath``, ``S3FailurePath``, ``KmsKeyId``,
  ``NotificationConfig`` (``SuccessTopic``, ``ErrorTopic``, ``IncludeInferenceResponseIn``), and ``ClientConfig``
  (``MaxConcurrentInvocationsPerInstance`` 1-1000): botocore 1.44.5 ``sagemaker/2017-07-24/service-2.json``, read
  2026-11-29.
- The metrics (namespace ``AWS/SageMaker``): ``ApproximateBacklogSizePerInstance`` and
  ``ApproximateAgeOfOldestRequest`` by ``EndpointName``; ``InvocationFailures`` by ``EndpointName`` and
  ``VariantName`` (Sum); "Any metric not listed below is not published if the endpoint is enabled for asynchronous
  inference", among them ``Invocations`` and ``InvocationsPerInstance`` (and ``InvocationModelErrors``, not listed):
  SageMaker developer guide, "Monitor asynchronous endpoints"
  (https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-monitor.html; awsdocs/amazon-sagemaker-developer-
  guide doc_source/async-inference-monitor.md @ 4ac846c8), read 2026-11-29.
- ``HasBacklogWithoutCapacity`` and the scale-from-zero policy and alarm (:data:`SCALE_FROM_ZERO`): SageMaker developer
  guide, "Autoscale an asynchronous endpoint", "Optional: Define a scaling policy that scales up from zero for new
  requests" (https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-autoscale.html; awsdocs/amazon-sagemaker-
  developer-guide doc_source/async-inference-autoscale.md @ d14094bb), read 2026-11-29.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sns as sns
from constructs import Construct

from ..alerts.topic import grant_publish
from ..core.nag import acknowledge_wildcards
from ..core.storage import secure_bucket

ASYNC_METRICS = {
    "backlog_per_instance": "ApproximateBacklogSizePerInstance",
    "backlog_without_capacity": "HasBacklogWithoutCapacity",
    "oldest_request_age": "ApproximateAgeOfOldestRequest",
    "invocation_failures": "InvocationFailures",
}
"""The asynchronous endpoint metrics the kit reads (AWS/SageMaker; sources above)."""
NOT_PUBLISHED_FOR_ASYNC = ("modelErrors",)
"""NeuronEndpoint's real-time alarm kinds whose metric SageMaker does not publish for an asynchronous endpoint
(InvocationModelErrors is not in the developer guide's exhaustive list)."""
ASYNC_ALARMS = {"backlogAge": "backlog-age", "invocationFailures": "invocation-failures"}
"""An asynchronous endpoint's own alarms by kind -> the suffix of their names (``<endpoint name>-<suffix>``)."""
SCALE_FROM_ZERO: dict[str, Any] = {
    "AdjustmentType": "ChangeInCapacity", "MetricAggregationType": "Average", "Cooldown": 300,
    "MetricIntervalLowerBound": 0, "ScalingAdjustment": 1,
    "Statistic": "Average", "EvaluationPeriods": 2, "DatapointsToAlarm": 2, "Threshold": 1,
    "ComparisonOperator": "GreaterThanOrEqualToThreshold", "TreatMissingData": "missing", "Period": 60,
}
"""AWS's scale-from-zero step policy (put_scaling_policy's StepScalingPolicyConfiguration) and its alarm
(put_metric_alarm) on HasBacklogWithoutCapacity, as the developer guide writes them (source above). The policy's
Cooldown is ``async_inference.scale_from_zero_cooldown_s`` (default this 300)."""


class AsyncQueue(Construct):
    """The S3 prefixes (``async/<endpoint construct id>/input|output|failures``) and the two SNS topics of one
    asynchronous endpoint, and the execution role's rights on exactly them.

    ``bucket``: where the prefixes live (default: a bucket of its own, with access logs). The topics are encrypted
    with a key of their own (as the fleet's alerts topic), TLS only; subscribe the team's consumers to them
    (``success_topic``, ``error_topic``)."""

    def __init__(self, scope: Construct, construct_id: str, *, role: iam.IRole, bucket: s3.IBucket | None = None,
                 removal_policy: RemovalPolicy = RemovalPolicy.RETAIN) -> None:
        super().__init__(scope, construct_id)
        if bucket is None:
            logs = secure_bucket(self, "AccessLogs", removal_policy=removal_policy)
            bucket = secure_bucket(self, "Bucket", access_logs=logs, log_prefix="async/",
                                   removal_policy=removal_policy)
        self.bucket = bucket
        prefix = f"async/{scope.node.id}"
        self.input_prefix, self.output_prefix, self.failure_prefix = (
            f"{prefix}/input/", f"{prefix}/output/", f"{prefix}/failures/")
        """Where callers put requests (InvokeEndpointAsync InputLocation), where answers and errors land."""
        self.key = kms.Key(self, "TopicKey", enable_key_rotation=True, pending_window=Duration.days(30),
                           description="Asynchronous endpoint's success and error topics")
        self.success_topic = sns.Topic(self, "SuccessTopic", master_key=self.key, enforce_ssl=True,
                                       display_name="neuronfleet async inference: success")
        self.error_topic = sns.Topic(self, "ErrorTopic", master_key=self.key, enforce_ssl=True,
                                     display_name="neuronfleet async inference: error")
        writes = [bucket.arn_for_objects(f"{self.output_prefix}*"), bucket.arn_for_objects(f"{self.failure_prefix}*")]
        reads = [bucket.arn_for_objects(f"{self.input_prefix}*")]
        role.add_to_principal_policy(iam.PolicyStatement(sid="AsyncOutput", actions=["s3:PutObject"],
                                                         resources=writes))
        role.add_to_principal_policy(iam.PolicyStatement(sid="AsyncInput", actions=["s3:GetObject"],
                                                         resources=reads))
        if isinstance(role, Construct):
            acknowledge_wildcards(role, "SageMaker reads an asynchronous request under the endpoint's own input prefix "
                                        "and writes its answer or error under its own output and failure prefixes",
                                  resources=(*writes, *reads))
        for topic in (self.success_topic, self.error_topic):
            grant_publish(topic, role)

    def grant_caller(self, grantee: iam.IGrantable) -> iam.Grant:
        """What a caller of the endpoint needs of its queue: put requests under the input prefix, read answers and
        errors under the output and failure prefixes, nothing else of the bucket."""
        put = iam.Grant.add_to_principal(grantee=grantee, actions=["s3:PutObject"],
                                         resource_arns=[self.bucket.arn_for_objects(f"{self.input_prefix}*")])
        return put.combine(iam.Grant.add_to_principal(grantee=grantee, actions=["s3:GetObject"], resource_arns=[
            self.bucket.arn_for_objects(f"{self.output_prefix}*"),
            self.bucket.arn_for_objects(f"{self.failure_prefix}*")]))

    @property
    def output_uri(self) -> str:
        return self.bucket.s3_url_for_object(self.output_prefix.rstrip("/"))

    @property
    def failure_uri(self) -> str:
        return self.bucket.s3_url_for_object(self.failure_prefix.rstrip("/"))

    def config(self, key: kms.IKey | None, max_concurrent: int | None
               ) -> sagemaker.CfnEndpointConfig.AsyncInferenceConfigProperty:
        """The endpoint configuration's AsyncInferenceConfig: answers and errors in the two prefixes (encrypted with
        ``key`` when given), both notifications on their topics."""
        cfg = sagemaker.CfnEndpointConfig
        return cfg.AsyncInferenceConfigProperty(
            output_config=cfg.AsyncInferenceOutputConfigProperty(
                s3_output_path=self.output_uri, s3_failure_path=self.failure_uri,
                kms_key_id=key.key_arn if key is not None else None,
                notification_config=cfg.AsyncInferenceNotificationConfigProperty(
                    success_topic=self.success_topic.topic_arn, error_topic=self.error_topic.topic_arn)),
            client_config=None if max_concurrent is None else cfg.AsyncInferenceClientConfigProperty(
                max_concurrent_invocations_per_instance=max_concurrent))
