"""EndpointFailover: Neuron->GPU endpoint failover that carries the load and moves back on evidence only."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Tags
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet_contract.failover import (
    CANARY_WEIGHT,
    CANARY_WINDOW,
    CAPACITY_TIMEOUT,
    ERRORS_METRIC,
    MALFORMED_METRIC,
    MIN_DWELL,
    SERVICE,
    EndpointBounds,
    FailoverConfig,
    WatchedEndpoint,
)
from neuronfleet_contract.namespaces import FAILOVER_NAMESPACE

from ..alerts.health_alarms import fleet_health, health_alarm, health_metric
from ..alerts.topic import grant_publish
from ..core.args import duck
from ..core.functions import FleetFunction
from ..core.lookups import arn_in, minutes, stack_of
from ..core.nag import acknowledge, acknowledge_wildcards
from ..core.problems import InvalidSettings, Problem
from ..core.rules import EVENT_PATTERN_CHARS
from .endpoint import GPU_VARIANT, NeuronEndpoint
from .scaling_iam import (
    DESCRIBE_SCALABLE_TARGETS,
    FAILOVER_TAG,
    any_scalable_target,
    failover_tag,
    variant_bounds_statement,
)

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
        alarms=list(endpoint.alarm_names.values()), gpu_alarms=list(endpoint.gpu_alarm_names.values()),
        latency_limit_ms=s.alarms.latency_p99_ms,
        capacity=EndpointBounds(neuron_min=s.min_instances, neuron_max=s.max_instances, gpu_min=gpu.min_instances,
                          gpu_max=gpu.max_instances,
                          neuron_instances_per_gpu_instance=gpu.neuron_instances_per_gpu_instance))


def _delta(d: Duration | None, default: timedelta) -> timedelta:
    return timedelta(minutes=d.to_minutes()) if d is not None else default


class EndpointFailover(Construct):
    """Moves an endpoint's traffic from its Neuron variant to its GPU variant when the Neuron variant's alarms fire,
    after raising the GPU variant to carry the Neuron variant's load; moves it back only on evidence that Neuron
    serves (instances in service, then a canary's own invocations, errors and latency), and lowers the GPU
    variant again. Never moves traffic onto a GPU variant whose own alarms fire (both failing: announced once).
    Waits out endpoint updates. One decision at a time (reserved concurrency 1); each step logged, counted
    (``FAILOVER_NAMESPACE``, neuronfleet_contract.namespaces) and announced once on the topic: recorded first in
    :attr:`table` (one item per endpoint, version-conditioned writes), published from the record.

    The function may describe, re-weight and resize only the endpoints given, read only their alarms, read and
    write only its own table, and change the Application Auto Scaling bounds only of the given endpoints' variants
    (scalable-target ARNs are not known at synth: the targets are tagged ``neuronfleet:failover`` with this
    failover's id and the policy requires that tag; docs/security.md, "Scalable targets").
    """

    def __init__(self, scope: Construct, construct_id: str, *, endpoints: Sequence[NeuronEndpoint],
                 topic: sns.ITopic, min_dwell: Duration | None = None, capacity_timeout: Duration | None = None,
                 canary_window: Duration | None = None, canary_weight: float = CANARY_WEIGHT,
                 check_every: Duration | None = None, removal_policy: RemovalPolicy = RemovalPolicy.DESTROY,
                 fleet: str = "") -> None:
        """``removal_policy``: the state table's. DESTROY by default, the one exception to the kit's RETAIN: it holds
        no data, only the step a failover in progress owes, which the next check takes over (and announces).
        ``fleet``: the fleet's name, the ``Fleet`` dimension of the function's health metrics and of :meth:`metric_*`
        (none: ``service`` alone, shared with any other fleet's in the account; neuronfleet_contract.health)."""
        super().__init__(scope, construct_id)
        self.health = fleet_health(fleet)
        duck("topic", topic, "topic_arn", "an sns.ITopic (e.g. alerts.topic)", what="EndpointFailover")
        no_gpu = [e.node.id for e in endpoints if not e.has_live_gpu]
        if not endpoints or no_gpu:
            raise InvalidSettings([Problem("endpoints", no_gpu or [], f"endpoints that each have a live "
                                           f"'{GPU_VARIANT}' variant (GpuVariant(shadow=False)): those listed have "
                                           "none" if no_gpu else "at least one endpoint")], what="EndpointFailover")
        stack = stack_of(self)
        self.table = dynamodb.Table(
            self, "State", partition_key=dynamodb.Attribute(name="endpoint", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True),
            removal_policy=removal_policy)
        """The failover's state per endpoint: its phase and the step it owes. Lost, a failover in progress is taken
        over at the next check (and announced), so it is destroyed with its stack. Unavailable, the failover falls back
        to its safe default (a move to a GPU variant already carrying the load, nothing else: docs/fallback.md)."""
        acknowledge(self.table, "DynamoDBInBackupPlan", "CKV_AWS_119")  # core.nag.ACKNOWLEDGED: PITR is on
        self.settings = FailoverConfig(
            endpoints={e.endpoint_name: watched_endpoint(e) for e in endpoints}, topic_arn=topic.topic_arn,
            state_table=self.table.table_name,
            min_dwell=_delta(min_dwell, MIN_DWELL),
            capacity_timeout=_delta(capacity_timeout, capacity_timeout_for(endpoints)),
            canary_window=_delta(canary_window, CANARY_WINDOW), canary_weight=canary_weight)
        self.function = FleetFunction(
            self, "Function", handler="failover.handler.handler", topic=topic,
            description="neuronfleet: Neuron->GPU endpoint failover", reserved_concurrent_executions=1,
            environment=self.settings.to_environment(to_json=stack.to_json_string) | self.health.to_environment())
        role = self.function.role
        arns = [e.endpoint_arn for e in endpoints]
        role.add_to_policy(iam.PolicyStatement(
            actions=["sagemaker:DescribeEndpoint", "sagemaker:UpdateEndpointWeightsAndCapacities"], resources=arns))
        self.table.grant(role, "dynamodb:GetItem", "dynamodb:PutItem")
        # RegisterScalableTarget on a SageMaker variant: Application Auto Scaling acts with the caller's SageMaker
        # permissions (DescribeEndpoint, DescribeEndpointConfig, UpdateEndpointWeightsAndCapacities). Endpoint
        # configurations get generated names: any of the account's, read-only.
        configs = stack.format_arn(service="sagemaker", resource="endpoint-config", resource_name="*",
                                   arn_format=ArnFormat.SLASH_RESOURCE_NAME)
        role.add_to_policy(iam.PolicyStatement(actions=["sagemaker:DescribeEndpointConfig"], resources=[configs]))
        # The scalable targets' ARNs end in an id generated at registration (unknown at synth): the failover may
        # change the bounds only of targets tagged as its own (its endpoints' variants, tagged here), of a SageMaker
        # variant's instance count (inference.scaling_iam, the Service Authorization Reference's keys)
        own_tag = failover_tag(self)
        for endpoint in endpoints:
            for target in (endpoint.scalable_target, endpoint.gpu_scalable_target):
                if target is not None:
                    Tags.of(target).add(FAILOVER_TAG, own_tag)
        role.add_to_policy(variant_bounds_statement(stack, tag=(FAILOVER_TAG, own_tag)))
        role.add_to_policy(iam.PolicyStatement(
            actions=[DESCRIBE_SCALABLE_TARGETS.action, "cloudwatch:GetMetricData"], resources=["*"]))
        acknowledge_wildcards(role, "application-autoscaling:DescribeScalableTargets and cloudwatch:GetMetricData "
                                    "(read-only) have no resource type; RegisterScalableTarget on scalable targets "
                                    "(generated ids) only when tagged as this failover's, of a SageMaker variant's "
                                    "instance count; endpoint configurations get generated names "
                                    "(DescribeEndpointConfig, read-only)",
                              resources=("*", configs, any_scalable_target(stack)))
        # Each endpoint's alarms by their name prefix (six full ARNs per endpoint pass IAM's 10,240 characters of
        # inline policy at about fifteen endpoints): read-only, and the handler asks for exact names
        alarm_prefixes = [arn_in(stack, service="cloudwatch", resource="alarm", resource_name=f"{e.endpoint_name}-*",
                                 arn_format=ArnFormat.COLON_RESOURCE_NAME) for e in endpoints]
        role.add_to_policy(iam.PolicyStatement(actions=["cloudwatch:DescribeAlarms"], resources=alarm_prefixes))
        acknowledge_wildcards(role, "cloudwatch:DescribeAlarms (read-only) on each endpoint's alarms, named "
                                    "<endpoint name>-<suffix> and <endpoint name>-gpu-<suffix>, by that prefix",
                              resources=tuple(alarm_prefixes))
        grant_publish(topic, role)
        # By name prefix, <endpoint name>-, one per endpoint (both variants' alarms): six alarm ARNs per endpoint
        # would pass EventBridge's pattern limit at a dozen endpoints. The handler maps exact names.
        source, detail_type = ["aws.cloudwatch"], ["CloudWatch Alarm State Change"]
        detail = {"alarmName": [{"prefix": f"{e.endpoint_name}-"} for e in endpoints]}
        size = len(json.dumps({"source": source, "detail-type": detail_type, "detail": detail}, separators=(",", ":")))
        if size > EVENT_PATTERN_CHARS:
            raise InvalidSettings([Problem(
                "endpoints", f"{len(endpoints)} endpoints (an alarm rule pattern of {size} characters)",
                f"at most {EVENT_PATTERN_CHARS} characters of pattern (EventBridge's EventPattern): give the endpoints "
                "to more than one failover (more inference stacks)")], what="EndpointFailover")
        self.alarm_rule = events.Rule(
            self, "OnAlarm", description="Neuron or GPU variant alarm changed state",
            event_pattern=events.EventPattern(source=source, detail_type=detail_type, detail=detail),
            targets=[self.function.event_target()])
        self.schedule_rule = events.Rule(
            self, "Recheck", description="Next step of a failover in progress: capacity, canary, move back, lower",
            schedule=events.Schedule.rate(check_every or Duration.minutes(5)),
            targets=[self.function.event_target()])
        self._health_alarms(topic)

    def _health_alarms(self, topic: sns.ITopic) -> None:
        """The failover's own health into the topic. The handler counts an endpoint it could not check
        (``FailoverErrors``) and goes on, so the function reports no invocation error: while that lasts the failover is
        blind to those endpoints (with its state table down, it still moves traffic to a GPU variant already carrying
        the load: the safe default, lambdas/failover/logic.py, and counts the check all the same). Alarmed when every
        5-minute period of 15 minutes has one (a throttled check is retried at the next), and when any event is
        refused (``MalformedEvents``: EventBridge sends only the rules' own events)."""
        self.blind_alarm = health_alarm(
            self, "BlindAlarm", self.metric_failover_errors(period=minutes(5)), topic=topic, periods=3,
            announce_ok=True, description="neuronfleet failover: for 15 minutes it could not check one or more "
                                          "endpoints (FailoverErrors): it cannot move their traffic, or with its "
                                          "state table down only to a GPU variant already carrying the load; its "
                                          "log names them and why")
        self.malformed_alarm = health_alarm(
            self, "MalformedEventsAlarm", self.metric_malformed_events(), topic=topic,
            description="neuronfleet failover: it refused an event as malformed (MalformedEvents); its log has the "
                        "event")

    def metric_failover_errors(self, **options: Any) -> cloudwatch.Metric:
        """Endpoints the failover could not check (``FailoverErrors``), of this fleet only (hourly sums by default;
        the function's own invocation errors are ``self.function.function.metric_errors()``)."""
        return health_metric(FAILOVER_NAMESPACE, ERRORS_METRIC, service=SERVICE, health=self.health, options=options)

    def metric_malformed_events(self, **options: Any) -> cloudwatch.Metric:
        """Events the failover refused (``MalformedEvents``), of this fleet only (hourly sums by default)."""
        return health_metric(FAILOVER_NAMESPACE, MALFORMED_METRIC, service=SERVICE, health=self.health,
                             options=options)
