"""Compose one fleet's stacks from a validated Fleet: each stack gets its section's settings objects."""

from __future__ import annotations

from aws_cdk import Environment, Stack
from constructs import Construct

from neuronfleet import Fleet, tag_fleet
from neuronfleet.config import construct_id

from .alerts_stack import AlertsStack
from .cost_stack import CostStack
from .fallback_stack import FallbackStack
from .inference_stack import InferenceStack
from .network_stack import NetworkStack
from .training_stack import TrainingStack


def build_fleet(scope: Construct, fleet: Fleet) -> list[Stack]:
    """Add every stack of ``fleet`` to ``scope`` (an App or Stage) and return them in deploy order."""
    env = Environment(account=fleet.account, region=fleet.region)
    label = f"neuronfleet {fleet.name}"
    network = NetworkStack(scope, fleet.stack_name("network"), network=fleet.network, env=env,
                           description=f"{label} ({fleet.phase}): VPC, endpoints, flow logs")
    alerts = AlertsStack(scope, fleet.stack_name("alerts"), emails=fleet.notification_emails, env=env,
                         description=f"{label}: alerts topic")
    topic = alerts.alerts.topic
    stacks: list[Stack] = [network, alerts]
    training = [TrainingStack(scope, fleet.stack_name(f"train-{c.name}"), network=network.network, cluster=c, env=env,
                              description=f"{label}: training cluster {c.name} "
                                          f"({c.count} x {c.instance_type}, {c.capacity.type})")
                for c in fleet.training_clusters]
    stacks += training
    inference = None
    if fleet.endpoints:
        inference = InferenceStack(
            scope, fleet.stack_name("inference"), network=network.network, alerts_topic=topic, env=env,
            endpoints={construct_id(e.name): e for e in fleet.endpoints}, failover=fleet.fallback.enabled,
            description=f"{label}: Inferentia2 endpoints "
                        + ", ".join(f"{e.name} ({e.instance_type})" for e in fleet.endpoints))
        stacks.append(inference)
    if fleet.fallback.enabled:
        stacks.append(FallbackStack(
            scope, fleet.stack_name("fallback"), network=network.network, pool=fleet.fallback, alerts_topic=topic,
            clusters=[t.cluster for t in training], env=env,
            description=f"{label}: GPU fallback pool ({', '.join(fleet.fallback.instance_types)}) "
                        "and Trainium capacity alerts"))
    if fleet.cost_monitors.enabled:
        stacks.append(CostStack(
            scope, fleet.stack_name("cost"), fleet_name=fleet.name, settings=fleet.cost_monitors,
            catalog=fleet.catalog, price_overrides=dict(fleet.prices), alerts_topic=topic, env=env,
            endpoint_names=[e.endpoint_name for e in inference.endpoints.values()] if inference else [],
            description=f"{label}: cost monitors (ledger, report, waste, budget, dashboard)"))
    for stack in stacks:
        tag_fleet(stack, fleet=fleet.name, phase=fleet.phase, extra=dict(fleet.tags))
    return stacks
