"""EndpointFailover: Neuron->GPU endpoint failover that carries the load and moves back on evidence only."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from ._nag import acknowledge_wildcards
from .alerts import grant_publish
from .functions import FleetFunction
from .inference import GPU_VARIANT, NeuronEndpoint
from .lambdas.failover.logic import CANARY_WEIGHT, CANARY_WINDOW, CAPACITY_TIMEOUT, MIN_DWELL, Capacity
from .lambdas.failover.settings import FailoverSettings, WatchedEndpoint

CAPACITY_MARGIN = timedelta(minutes=10)
"""Added to an endpoint's model-download and startup timeouts for the default capacity bound: SageMaker itself
fails an instance that exceeds them."""


def capacity_timeout_for(endpoints: Sequence[NeuronEndpoint]) -> timedelta:
    """How long raised capacity may take: SageMaker's own timeouts for the slowest endpoint, plus a margin, at
    least CAPACITY_TIMEOUT."""
    slowest = max(e.settings.model_download_timeout_s + e.settings.startup_health_check_timeout_s for e in endpoints)
    return max(CAPACITY_TIMEOUT, timedelta(minutes=math.ceil(slowest / 60)) + CAPACITY_MARGIN)


def watched_endpoint(endpoint: NeuronEndpoint) -> WatchedEndpoint:
    s, gpu = endpoint.settings, endpoint.settings.gpu_variant
    assert gpu is not None
    return WatchedEndpoint(
        alarms=list(endpoint.alarm_names.values()), latency_limit_ms=s.alarms.latency_p99_ms,
        capacity=Capacity(neuron_min=s.min_instances, neuron_max=s.max_instances, gpu_min=gpu.min_instances,
                          gpu_max=gpu.max_instances,
                          neuron_instances_per_gpu_instance=gpu.neuron_instances_per_gpu_instance))


def _delta(d: Duration | None, default: timedelta) -> timedelta:
    return timedelta(minutes=d.to_minutes()) if d is not None else default


class EndpointFailover(Construct):
    """Moves an endpoint's traffic from its Neuron variant to its GPU variant when the Neuron variant's alarms fire,
    after raising the GPU variant to carry the Neuron variant's load; moves it back only on evidence that Neuron
    serves (instances in service, then a canary's own invocations, errors and latency), and lowers the GPU
    variant again. Waits out endpoint updates. One decision at a time (reserved concurrency 1); each step logged,
    counted (``FAILOVER_NAMESPACE``, neuronfleet.lambdas.namespaces) and announced on the topic.

    The function may describe, re-weight, resize and tag only the endpoints given, read only their alarms, and
    change the Application Auto Scaling bounds of SageMaker variants (scalable-target ARNs are not known at synth).
    """

    def __init__(self, scope: Construct, construct_id: str, *, endpoints: Sequence[NeuronEndpoint],
                 topic: sns.ITopic, min_dwell: Duration | None = None, capacity_timeout: Duration | None = None,
                 canary_window: Duration | None = None, canary_weight: float = CANARY_WEIGHT,
                 check_every: Duration | None = None) -> None:
        super().__init__(scope, construct_id)
        no_gpu = [e.node.id for e in endpoints if e.gpu_variant is None or e.gpu_variant.shadow]
        if not endpoints or no_gpu:
            raise ValueError(f"endpoints without a live '{GPU_VARIANT}' variant cannot fail over: "
                             f"{', '.join(no_gpu) or 'none given'}; give each a GpuVariant(shadow=False)")
        stack = Stack.of(self)
        self.settings = FailoverSettings(
            endpoints={e.endpoint_name: watched_endpoint(e) for e in endpoints}, topic_arn=topic.topic_arn,
            min_dwell=_delta(min_dwell, MIN_DWELL),
            capacity_timeout=_delta(capacity_timeout, capacity_timeout_for(endpoints)),
            canary_window=_delta(canary_window, CANARY_WINDOW), canary_weight=canary_weight)
        self.function = FleetFunction(
            self, "Function", handler="failover.handler.handler", alarm_topic=topic,
            description="neuronfleet: Neuron->GPU endpoint failover", reserved_concurrent_executions=1,
            environment=self.settings.to_environment(to_json=stack.to_json_string))
        role = self.function.role
        arns = [e.endpoint_arn for e in endpoints]
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["sagemaker:DescribeEndpoint", "sagemaker:UpdateEndpointWeightsAndCapacities",
                     "sagemaker:ListTags", "sagemaker:AddTags", "sagemaker:DeleteTags"], resources=arns))
        # RegisterScalableTarget on a SageMaker variant: Application Auto Scaling acts with the caller's SageMaker
        # permissions (DescribeEndpoint, DescribeEndpointConfig, UpdateEndpointWeightsAndCapacities). Endpoint
        # configurations get generated names: any of the account's, read-only.
        configs = stack.format_arn(service="sagemaker", resource="endpoint-config", resource_name="*",
                                   arn_format=ArnFormat.SLASH_RESOURCE_NAME)
        role.add_to_principal_policy(iam.PolicyStatement(actions=["sagemaker:DescribeEndpointConfig"],
                                                         resources=[configs]))
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["application-autoscaling:DescribeScalableTargets", "application-autoscaling:RegisterScalableTarget",
                     "cloudwatch:GetMetricData"], resources=["*"]))
        acknowledge_wildcards(role, "Application Auto Scaling scalable-target ARNs carry an id generated at "
                                    "registration (unknown at synth) and cloudwatch:GetMetricData has no resource "
                                    "scope; endpoint configurations get generated names (DescribeEndpointConfig, "
                                    "read-only)", resources=("*", configs))
        alarms = [a for e in endpoints for a in e.alarms.values()]
        role.add_to_principal_policy(iam.PolicyStatement(actions=["cloudwatch:DescribeAlarms"],
                                                         resources=[a.alarm_arn for a in alarms]))
        grant_publish(topic, role)
        self.alarm_rule = events.Rule(
            self, "OnAlarm", description="Neuron variant alarm changed state",
            event_pattern=events.EventPattern(source=["aws.cloudwatch"], detail_type=["CloudWatch Alarm State Change"],
                                              resources=[a.alarm_arn for a in alarms]),
            targets=[self.function.event_target()])
        self.schedule_rule = events.Rule(
            self, "Recheck", description="Next step of a failover in progress: capacity, canary, move back, lower",
            schedule=events.Schedule.rate(check_every or Duration.minutes(5)),
            targets=[self.function.event_target()])
