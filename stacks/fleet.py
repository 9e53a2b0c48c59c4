"""Compose one fleet's stacks from a validated Fleet."""

from __future__ import annotations

from aws_cdk import Environment, Stack
from constructs import Construct

from neuronfleet import Fleet, tag_fleet

from .alerts_stack import AlertsStack
from .cost_stack import CostStack
from .fallback_stack import FallbackStack
from .inference_stack import InferenceStack
from .network_stack import NetworkStack
from .training_stack import TrainingStack


def build_fleet(scope: Construct, fleet: Fleet) -> list[Stack]:
    """Add every stack of ``fleet`` to ``scope`` (an App or Stage) and return them in deploy order."""
    env = Environment(account=fleet.account, region=fleet.region)
    prefix = fleet.name
    network = NetworkStack(
        scope, f"{prefix}-network", network=fleet.network, env=env,
        description=f"neuronfleet {fleet.name} ({fleet.phase}): VPC, endpoints, flow logs",
    )
    alerts = AlertsStack(scope, f"{prefix}-alerts", emails=fleet.notification_emails, env=env,
                         description=f"neuronfleet {fleet.name}: alerts topic")
    stacks: list[Stack] = [network, alerts]
    trainium_queues = []
    for cluster in fleet.training_clusters:
        training = TrainingStack(
            scope, f"{prefix}-train-{cluster.name}", network=network.network, cluster=cluster,
            availability_zones=list(fleet.network.availability_zones), env=env,
            description=f"neuronfleet {fleet.name}: training cluster {cluster.name} "
                        f"({cluster.count} x {cluster.instance_type}, {cluster.capacity.type})",
        )
        stacks.append(training)
        trainium_queues.append(training.cluster.job_queue)
    inference = None
    if fleet.endpoints:
        inference = InferenceStack(
            scope, f"{prefix}-inference", network=network.network, endpoints=fleet.endpoints,
            alerts_topic=alerts.alerts.topic, availability_zones=list(fleet.network.availability_zones), env=env,
            failover=fleet.fallback.enabled,
            description=f"neuronfleet {fleet.name}: Inferentia2 endpoints "
                        + ", ".join(f"{e.name} ({e.instance_type})" for e in fleet.endpoints),
        )
        stacks.append(inference)
    if fleet.fallback.enabled:
        stacks.append(FallbackStack(
            scope, f"{prefix}-fallback", network=network.network, fallback=fleet.fallback,
            alerts_topic=alerts.alerts.topic, trainium_queues=trainium_queues,
            availability_zones=list(fleet.network.availability_zones), env=env,
            description=f"neuronfleet {fleet.name}: GPU fallback pool "
                        f"({', '.join(fleet.fallback.instance_types)}) and Trainium capacity alerts"))
    if fleet.cost_monitors.enabled:
        stacks.append(CostStack(
            scope, f"{prefix}-cost", fleet=fleet, alerts_topic=alerts.alerts.topic, env=env,
            endpoint_names=[e.endpoint_name for e in inference.endpoints.values()] if inference else [],
            description=f"neuronfleet {fleet.name}: cost monitors (ledger, report, waste, budget, dashboard)"))
    for stack in stacks:
        tag_fleet(stack, fleet=fleet.name, phase=fleet.phase, extra=dict(fleet.tags))
    return stacks
