"""EndpointFailover: Neuron->GPU endpoint traffic failover driven by the Neuron variant's alarms."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from aws_cdk import Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from .alerts import grant_publish
from .functions import FleetFunction
from .inference import GPU_VARIANT, NeuronEndpoint
from .lambdas.failover.logic import MIN_DWELL, RECOVERY
from .lambdas.failover.settings import FailoverSettings


class EndpointFailover(Construct):
    """Shifts an endpoint's traffic from its Neuron variant to its GPU variant when the Neuron variant's
    alarms fire, and back once they have been OK for ``recovery`` (hysteresis: no flapping). Each shift is
    logged, counted (``FAILOVER_NAMESPACE``, neuronfleet.lambdas.namespaces) and announced on the topic.

    The function may describe and re-weight only the endpoints given, and read only their alarms.
    """

    def __init__(self, scope: Construct, construct_id: str, *, endpoints: Sequence[NeuronEndpoint],
                 topic: sns.ITopic, recovery: Duration | None = None, min_dwell: Duration | None = None,
                 check_every: Duration | None = None) -> None:
        super().__init__(scope, construct_id)
        no_gpu = [e.node.id for e in endpoints if e.gpu_variant is None or e.gpu_variant.shadow]
        if not endpoints or no_gpu:
            raise ValueError(f"endpoints without a live '{GPU_VARIANT}' variant cannot fail over: "
                             f"{', '.join(no_gpu) or 'none given'}; give each a GpuVariant(shadow=False)")
        watched = {e.endpoint_name: [a.alarm_name for a in e.alarms.values()] for e in endpoints}
        self.function = FleetFunction(
            self, "Function", handler="failover.handler.handler", alarm_topic=topic,
            description="neuronfleet: Neuron->GPU endpoint traffic failover",
            environment=FailoverSettings(
                endpoints=watched, topic_arn=topic.topic_arn,
                recovery=timedelta(minutes=recovery.to_minutes()) if recovery else RECOVERY,
                min_dwell=timedelta(minutes=min_dwell.to_minutes()) if min_dwell else MIN_DWELL,
            ).to_environment(to_json=Stack.of(self).to_json_string))
        role = self.function.role
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["sagemaker:DescribeEndpoint", "sagemaker:UpdateEndpointWeightsAndCapacities"],
            resources=[e.endpoint_arn for e in endpoints]))
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
            self, "Recheck", description="Re-check failed-over endpoints for fail-back (hysteresis)",
            schedule=events.Schedule.rate(check_every or Duration.minutes(5)),
            targets=[self.function.event_target()])
