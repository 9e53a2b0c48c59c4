"""Compose one fleet's stacks from a validated Fleet."""

from __future__ import annotations

from aws_cdk import Environment, Stack
from constructs import Construct

from neuronfleet import Fleet, tag_fleet

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
    stacks: list[Stack] = [network]
    for cluster in fleet.training_clusters:
        training = TrainingStack(
            scope, f"{prefix}-train-{cluster.name}", network=network.network, cluster=cluster,
            availability_zones=list(fleet.network.availability_zones), env=env,
            description=f"neuronfleet {fleet.name}: training cluster {cluster.name} "
                        f"({cluster.count} x {cluster.instance_type}, {cluster.capacity.type})",
        )
        stacks.append(training)
    for stack in stacks:
        tag_fleet(stack, fleet=fleet.name, phase=fleet.phase, extra=dict(fleet.tags))
    return stacks
