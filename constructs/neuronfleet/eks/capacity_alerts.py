"""NodegroupCapacityAlerts: a Neuron node group of an EKS cluster that cannot get its nodes, announced once."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet_contract import capacity_alert
from neuronfleet_contract.capacity_alert import gpu_pool
from neuronfleet_contract.namespaces import CAPACITY_NAMESPACE
from neuronfleet_contract.nodegroup_capacity import SCAN_MINUTES, NodegroupAlertConfig

from ..alerts.announcement_ledger import AnnouncementLedger
from ..alerts.health_alarms import fleet_health, health_metric
from ..alerts.topic import grant_publish
from ..core.args import duck
from ..core.functions import FleetFunction
from ..core.nag import acknowledge_wildcards
from ..fallback.gpu_pool import GpuPool
from .cluster import NeuronEksCluster

REPLACEMENT_READ = "autoscaling:DescribeScalingActivities"
"""What the replacement announcement reads (each node group's Auto Scaling activities: a node terminated and another
launched after it, e.g. by node auto repair)."""


class NodegroupCapacityAlerts(Construct):
    """Announces on the topic, once per node group and episode, a Neuron node group of ``cluster`` that cannot get
    its nodes (EKS's health issues of a launch kind: neuronfleet_contract.nodegroup_capacity.LAUNCH_ISSUES), and
    once more when it can again; with what the GPU pool can take when AWS's words are a capacity refusal. And, once
    each, a node the group replaced (node auto repair, an EC2 health check, an operator): the group's Auto Scaling
    activities show a termination and a launch right after it (capacity_alert/nodegroups.py ``replaced``).

    EKS names a node group's Auto Scaling group itself, so this does not match Auto Scaling events by a name prefix
    as the Batch path's CapacityAlerts does: a function describes each node group every ``SCAN_MINUTES`` minutes
    (eks:DescribeNodegroup on exactly those node groups' ARNs) through the announcements ledger.

    Example::

        NodegroupCapacityAlerts(self, "NodegroupCapacity", cluster=eks_cluster, topic=alerts.topic, pool=pool,
                                fleet="nf-prod")
    """

    def __init__(self, scope: Construct, construct_id: str, *, cluster: NeuronEksCluster, topic: sns.ITopic,
                 pool: GpuPool | None = None, fleet: str = "") -> None:
        """``pool``: the fleet's GPU fallback pool, named in capacity announcements (none: they say so). ``fleet``:
        the fleet's name, the ``Fleet`` dimension of the function's metrics and of :meth:`metric_announcements`
        (none: ``service`` alone, shared with any other fleet's in the account; neuronfleet_contract.health)."""
        super().__init__(scope, construct_id)
        self.health = fleet_health(fleet)
        duck("topic", topic, "topic_arn", "an sns.ITopic (e.g. alerts.topic)", what="NodegroupCapacityAlerts")
        duck("cluster", cluster, "node_groups", "a NeuronEksCluster", what="NodegroupCapacityAlerts")
        if pool is not None:
            duck("pool", pool, "describe", "a GpuPool", what="NodegroupCapacityAlerts")
        groups = list(cluster.node_groups.values())
        self.ledger = AnnouncementLedger(self, "Announced")
        self.function = FleetFunction(
            self, "Function", handler="capacity_alert.nodegroup_handler.handler", topic=topic,
            description="neuronfleet: Neuron node groups that cannot get nodes -> announcement",
            environment=NodegroupAlertConfig(
                cluster_name=cluster.cluster.cluster_name, node_groups=tuple(g.nodegroup_name for g in groups),
                topic_arn=topic.topic_arn, ledger_table=self.ledger.table.table_name,
                pool=gpu_pool(pool.describe()) if pool is not None else None,
            ).to_environment(to_json=Stack.of(self).to_json_string) | self.health.to_environment())
        grant_publish(topic, self.function.role)
        self.ledger.grant(self.function.role)
        self.function.role.add_to_policy(iam.PolicyStatement(
            actions=["eks:DescribeNodegroup"], resources=[g.nodegroup_arn for g in groups]))
        # the replacement announcement reads each node group's Auto Scaling activities; the action takes no resource
        # type (Service Authorization Reference, tests/data/eks/list_amazonec2autoscaling-...-row.html): read only
        self.function.role.add_to_policy(iam.PolicyStatement(
            actions=[REPLACEMENT_READ], resources=["*"]))
        acknowledge_wildcards(self.function.role, f"{REPLACEMENT_READ} has no resource-level permissions (read only: "
                                                  "the node groups' scaling activities)", resources=("*",))
        self.rule = events.Rule(self, "Scan", description="Describe the fleet's Neuron node groups (capacity)",
                                schedule=events.Schedule.rate(Duration.minutes(SCAN_MINUTES)),
                                targets=[self.function.event_target()])

    def metric_announcements(self, **options: Any) -> cloudwatch.Metric:
        """Messages these alerts published (``CapacityAnnouncements`` of the capacity alerts' service; hourly sums
        by default), of this fleet only. The Batch path's CapacityAlerts publishes the same metric under the same
        service: a fleet with both sees the sum of both here and there."""
        return health_metric(CAPACITY_NAMESPACE, capacity_alert.ANNOUNCEMENTS_METRIC, service=capacity_alert.SERVICE,
                             health=self.health, options=options)
