"""SharingPool: one node group of reserved Neuron capacity on a NeuronEksCluster, serving inference by day and
lent to training at night, with training told to checkpoint before each morning (docs/sharing.md).

Kueue installed pinned (its chart at 0.19.2), the pool's Kueue objects (a node-level Topology and the pool's flavor on
it, an inference ClusterQueue owning the quota and lending whole nodes and a training ClusterQueue borrowing them in
one cohort, neither ever stopped; WorkloadPriorityClasses inference above training), the inference Deployment's
HorizontalPodAutoscaler, and the schedule function (lambdas/pool_schedule) run every minute by EventBridge
Scheduler, in the VPC, reaching the cluster's private endpoint with an EKS access entry whose Kubernetes group (one
per pool) may only set the autoscaler's bounds, list the pool's pods and annotate training's, and set the training
LocalQueue's stopPolicy: namespaced Roles with resourceNames where the names are known, no ClusterRole
(sharing.manifests.schedule_access).
"""

from __future__ import annotations

from typing import Any, cast

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet_contract.pool_schedule import (
    MISSED_METRIC,
    POOL_NAMESPACE,
    UTILISATION_METRIC,
    PoolSchedule,
    PoolScheduleConfig,
    Role,
    sharing_problems,
)

from ..alerts.announcement_ledger import AnnouncementLedger
from ..alerts.topic import grant_publish
from ..core.functions import FleetFunction
from ..core.nag import acknowledge_wildcards
from ..core.problems import InvalidSettings, Problem
from ..core.trust import scheduler_principal
from ..eks.cluster import NeuronEksCluster
from ..eks.manifests import SERVING_NAMESPACE, TRAINING_NAMESPACE
from ..settings.sharing import unshareable
from . import manifests
from .pins import SCHEDULE_EXPRESSION

__all__ = ["SharingPool"]

TIMEOUT = Duration.seconds(50)
"""Shorter than the minute between runs: two runs overlap only when one is retried (each converges anyway)."""


class SharingPool(Construct):
    """A node group of ``cluster`` shared by day and night on ``schedule``.

    Example::

        pool = SharingPool(self, "Pool", cluster=eks_cluster, node_group="pool", topic=alerts.topic,
            schedule=PoolSchedule.build(pool="rainier", time_zone="America/New_York", day=["07:00-23:00"],
                                        pool_devices=64, replica_devices=4, day_replicas=16, night_floor=4,
                                        checkpoint_deadline=30))
        pool.kueue            # the Kueue Helm release
        pool.function         # the schedule function (FleetFunction)
        pool.metric_devices(Role.TRAINING)
    """

    def __init__(self, scope: Construct, construct_id: str, *, cluster: NeuronEksCluster, node_group: str,
                 schedule: PoolSchedule, topic: sns.ITopic, deployment: str = "serve", fleet: str = "",
                 vpc_subnets: ec2.SubnetSelection | None = None) -> None:
        """``node_group``: the name of one of ``cluster``'s Neuron node groups, on reserved capacity (ODCR or
        Capacity Block); ``schedule.pool_devices`` must be its devices. ``deployment``: the inference Deployment (in
        serving's namespace, ``neuronfleet-serving``); the pool creates its HorizontalPodAutoscaler, whose bounds
        the schedule sets. ``vpc_subnets``: where the function runs
        (default: the cluster's)."""
        super().__init__(scope, construct_id)
        groups = {g.name: g for g in cluster.settings.node_groups}
        group = groups.get(node_group)
        problems = []
        if group is None:
            problems.append(Problem("node_group", node_group, f"one of the cluster's node groups: {sorted(groups)}"))
        elif (allowed := unshareable(group)) is not None:
            problems.append(Problem("node_group", node_group, allowed))
        elif schedule.pool_devices != group.count * group.spec.accelerators:
            problems.append(Problem("schedule.pool_devices", schedule.pool_devices, (
                f"the node group's Neuron devices: {group.count * group.spec.accelerators} "
                f"({group.count} x {group.instance_type})")))
        if group is not None and not problems:
            problems += sharing_problems(schedule, node_devices=group.spec.accelerators,
                                         job_nodes=group.spec.ultraserver_size, node_type=group.instance_type,
                                         field_prefix="schedule.")
        if group is not None and group.name in cluster.placement_queues:
            problems.append(Problem("node_group", node_group, (
                "a node group the cluster shares: pass shared_node_groups=[" + repr(node_group) + "] to "
                "NeuronEksCluster (it gave this UltraServer node group a placement queue of its own, which would "
                "admit training beside the pool's queues on the same nodes)")))
        if problems:
            raise InvalidSettings(problems, what="SharingPool")
        assert group is not None
        self.schedule = schedule
        self.names = manifests.names(schedule.pool)
        k8s = cluster.cluster
        self.kueue = cluster.install_kueue()   # one release per cluster (its placement queues use it too)
        self.queues = k8s.add_manifest("Queues", *manifests.kueue_objects(schedule, group))
        self.queues.node.add_dependency(self.kueue, cluster.namespaces)
        self.autoscaler = k8s.add_manifest("Autoscaler", manifests.inference_autoscaler(schedule, name=deployment))
        """The inference Deployment's HorizontalPodAutoscaler: the schedule sets its bounds, it sets the replicas."""
        self.autoscaler.node.add_dependency(cluster.namespaces)
        self.access = k8s.add_manifest("ScheduleAccess", *manifests.schedule_access(schedule, deployment=deployment),
                                       *manifests.training_acknowledge_access())
        self.access.node.add_dependency(cluster.namespaces)

        self.ledger = AnnouncementLedger(self, "Announced")
        subnets = vpc_subnets or cluster.vpc_subnets
        self.security_group = ec2.SecurityGroup(self, "FunctionSecurityGroup", vpc=cluster.vpc,
                                                description="pool schedule function: HTTPS to the cluster API",
                                                allow_all_outbound=True)
        # the control plane security group aws-cdk-lib creates and gives EKS (ResourcesVpcConfig.SecurityGroupIds: on
        # the endpoint's network interfaces in the VPC), not the cluster security group EKS makes at create time
        control_plane = cast(ec2.SecurityGroup, k8s.node.find_child("ControlPlaneSecurityGroup"))
        control_plane.add_ingress_rule(self.security_group, ec2.Port.tcp(443),
                                       "the pool schedule function calls the Kubernetes API")
        settings = PoolScheduleConfig(
            schedule=schedule, cluster_name=k8s.cluster_name, endpoint=k8s.cluster_endpoint,
            certificate_authority=k8s.cluster_certificate_authority_data, namespace=SERVING_NAMESPACE,
            training_namespace=TRAINING_NAMESPACE,
            deployment=deployment, training_queue=self.names["training_queue"], topic_arn=topic.topic_arn,
            ledger_table=self.ledger.table.table_name, fleet=fleet)
        self.function = FleetFunction(
            self, "Function", handler="pool_schedule.handler.handler", topic=topic, timeout=TIMEOUT,
            description=f"neuronfleet: pool {schedule.pool}, inference by day, training by night",
            environment=settings.to_environment(to_json=Stack.of(self).to_json_string),
            vpc=cluster.vpc, vpc_subnets=subnets, security_groups=[self.security_group])
        role = self.function.role
        grant_publish(topic, role)
        self.ledger.grant(role)
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["cloudwatch:PutMetricData"], resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": POOL_NAMESPACE}}))
        acknowledge_wildcards(role, "cloudwatch:PutMetricData has no resource-level permission (limited to the "
                                    "pool's namespace by condition)", resources=("*",))
        self.access_entry = eks.CfnAccessEntry(
            self, "AccessEntry", cluster_name=k8s.cluster_name, principal_arn=role.role_arn,
            kubernetes_groups=[manifests.schedule_group(schedule.pool)], type="STANDARD")
        self.schedule_role = iam.Role(self, "ScheduleRole", assumed_by=scheduler_principal(Stack.of(self)),
                                      description=f"pool {schedule.pool}: EventBridge Scheduler invokes its function")
        acknowledge_wildcards(self.schedule_role, "aws-cdk-lib's grant to invoke the function and its versions",
                              resources=(f"{self.function.function.function_arn}:*",))
        self.schedule_resource = scheduler.Schedule(
            self, "EveryMinute", schedule=scheduler.ScheduleExpression.expression(SCHEDULE_EXPRESSION),
            description=f"pool {schedule.pool}: converge on the schedule's target",
            target=scheduler_targets.LambdaInvoke(self.function.function, retry_attempts=0, role=self.schedule_role,
                                                  dead_letter_queue=self.function.dead_letter_queue))
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", widgets=[self.widgets()])
        """The pool's devices by role per hour and the checkpoints missed (the function's own metrics)."""

    # ------------------------------------------------------------------------------------------------ metrics

    def metric_devices(self, role: Role | str, **props: Any) -> cloudwatch.Metric:
        """Neuron devices of the pool in use by ``role`` (inference | training | idle), averaged per period."""
        role = Role(role)
        options: dict[str, Any] = {"statistic": "Average", "period": Duration.hours(1)} | props
        return cloudwatch.Metric(namespace=POOL_NAMESPACE, metric_name=UTILISATION_METRIC,
                                 dimensions_map={"Pool": self.schedule.pool, "Role": str(role)}, **options)

    def metric_checkpoints_missed(self, **props: Any) -> cloudwatch.Metric:
        options: dict[str, Any] = {"statistic": "Maximum", "period": Duration.hours(1)} | props
        return cloudwatch.Metric(namespace=POOL_NAMESPACE, metric_name=MISSED_METRIC,
                                 dimensions_map={"Pool": self.schedule.pool}, **options)

    def widgets(self) -> list[cloudwatch.IWidget]:
        """The pool's devices by role per hour, stacked, for a dashboard."""
        return [cast(cloudwatch.IWidget, cloudwatch.GraphWidget(
                    title=f"Pool {self.schedule.pool}: Neuron devices by role (hourly average)", stacked=True,
                    width=12, left=[self.metric_devices(r, label=str(r)) for r in Role])),
                cast(cloudwatch.IWidget, cloudwatch.GraphWidget(
                    title=f"Pool {self.schedule.pool}: training pods that missed the checkpoint", width=12,
                    left=[self.metric_checkpoints_missed(label="missed")]))]
