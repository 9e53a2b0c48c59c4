"""CapacityLifecycle: a fleet's Capacity Blocks looked after before they end (extend, or drain), interconnect health,
and jobs held for Trainium capacity moved to the GPU pool (lambdas/capacity_lifecycle)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet_contract import capacity_alert as alert_contract
from neuronfleet_contract.capacity_lifecycle import ClusterRef, LifecycleSettings, drain_key

from ..alerts.announcement_ledger import AnnouncementLedger
from ..alerts.topic import grant_publish
from ..core.functions import FleetFunction
from ..core.nag import acknowledge_wildcards
from ..fallback.gpu_pool import GpuPool
from ..settings.capacity import CapacityPolicySettings
from ..training.cluster import TrainiumCluster

PASS_EVERY = Duration.minutes(10)
"""The lifecycle pass: a block's decision point, a drain's start or a held job's limit is acted on at most 10
minutes late (the checkpoint lead, 45 minutes by default, leaves room for it)."""
TIMEOUT = Duration.minutes(5)


class CapacityLifecycle(Construct):
    """Looks after the fleet's Capacity Blocks with its ``policy`` (CapacityPolicySettings): every 10 minutes and on
    EC2's Capacity Block events, extends a block whose jobs still run (within the policy, bought once), else raises
    the cluster's checkpoint flag (``s3://<data bucket>/neuronfleet/drain/<cluster>.json``) ahead of the stop and
    announces the drain once; announces impaired interconnects once; moves jobs held for capacity past
    ``fallback_after_minutes`` to ``pool`` when they name a GPU job definition. See docs/capacity-blocks.md.

    Example::

        CapacityLifecycle(self, "Lifecycle", fleet="nf-prod", clusters=[cluster], topic=alerts.topic, pool=pool,
                          policy=CapacityPolicySettings(max_upfront_fee_usd=20000, max_usd_per_instance_hour=45))
    """

    def __init__(self, scope: Construct, construct_id: str, *, fleet: str,
                 clusters: Mapping[str, TrainiumCluster] | Sequence[TrainiumCluster], topic: sns.ITopic,
                 policy: CapacityPolicySettings, pool: GpuPool | None = None,
                 prices: Mapping[str, Mapping[str, str]] | None = None, training_azs: Sequence[str] = ()) -> None:
        """``clusters``: by name (the name in announcements and in the drain flag's key), or a list (named by their
        construct ids). ``training_azs``: where the fleet's training subnets are, when the clusters' capacities name
        no AZ (the policy's ``availability_zones`` win when set). ``prices``: the kit's price table by default."""
        super().__init__(scope, construct_id)
        if not isinstance(policy, CapacityPolicySettings):
            raise TypeError(f"policy: got {type(policy).__name__}; allowed: CapacityPolicySettings")
        named = dict(clusters) if isinstance(clusters, Mapping) else {c.node.id.lower(): c for c in clusters}
        if not isinstance(clusters, Mapping) and len(named) != len(clusters):
            raise ValueError(f"clusters: got construct ids {[c.node.id for c in clusters]}; allowed: distinct ids, or "
                             "a mapping of names to clusters")
        self.cluster_names = tuple(named)
        refs = tuple(ClusterRef(
            name=name, queue_arn=c.job_queue.job_queue_arn, instance_type=c.settings.instance_type,
            drain_bucket=c.data_bucket.bucket_name,
            reservation_ids=(c.settings.capacity.reservation_id,) if c.settings.capacity.reservation_id else (),
            group_arns=(c.settings.capacity.resource_group_arn,) if c.settings.capacity.resource_group_arn else ())
            for name, c in named.items())
        clusters = list(named.values())
        azs = sorted({c.settings.capacity.availability_zone for c in clusters if c.settings.capacity.availability_zone}
                     | set(training_azs))
        if prices is None:
            from ..facts.prices import price_table

            prices = price_table()
        wanted = {c.settings.instance_type for c in clusters} | ({pool.specs[0].instance_type} if pool else set())
        self.ledger = AnnouncementLedger(self, "Announced")
        settings = LifecycleSettings(
            fleet=fleet, topic_arn=topic.topic_arn, ledger_table=self.ledger.table.table_name,
            policy=policy.policy(training_azs=azs), clusters=refs,
            gpu_queue_arn=pool.job_queue.job_queue_arn if pool else "",
            gpu_instance_type=pool.specs[0].instance_type if pool else "",
            prices={k: v for k, v in prices.items() if k in wanted})
        self.function = FleetFunction(
            self, "Function", handler="capacity_lifecycle.handler.handler", topic=topic, timeout=TIMEOUT,
            description="neuronfleet: Capacity Blocks before they end (extend or drain), held jobs to the GPU pool",
            environment=settings.to_environment(to_json=Stack.of(self).to_json_string))
        grant_publish(topic, self.function.role)
        self.ledger.grant(self.function.role)
        self.rules: dict[str, events.Rule] = {
            "Pass": events.Rule(self, "Pass", description="Capacity Blocks: extend or drain; held jobs (every 10 min)",
                                schedule=events.Schedule.rate(PASS_EVERY), targets=[self.function.event_target()]),
            "BlockEvents": events.Rule(
                self, "BlockEvents", description="EC2 Capacity Block events: run the lifecycle pass at once",
                event_pattern=events.EventPattern(source=["aws.ec2"], detail_type=[
                    *alert_contract.CAPACITY_BLOCK_ENDING, *alert_contract.CAPACITY_BLOCK_DELIVERED]),
                targets=[self.function.event_target()]),
        }
        self._grant(named, pool)

    def _grant(self, named: Mapping[str, TrainiumCluster], pool: GpuPool | None) -> None:
        clusters = list(named.values())
        role = self.function.role
        stack = Stack.of(self)
        describe = ["ec2:DescribeCapacityReservations", "ec2:DescribeCapacityBlocks", "ec2:DescribeCapacityBlockStatus",
                    "ec2:DescribeCapacityBlockExtensionOfferings", "ec2:DescribeCapacityBlockExtensionHistory",
                    "batch:ListJobs", "batch:DescribeJobs"]
        role.add_to_principal_policy(iam.PolicyStatement(actions=describe, resources=["*"]))
        reservations = stack.format_arn(service="ec2", resource="capacity-reservation", resource_name="*")
        role.add_to_principal_policy(iam.PolicyStatement(actions=["ec2:PurchaseCapacityBlockExtension"],
                                                         resources=[reservations]))
        groups = sorted({c.settings.capacity.resource_group_arn for c in clusters
                         if c.settings.capacity.resource_group_arn})
        if groups:
            role.add_to_principal_policy(iam.PolicyStatement(actions=["resource-groups:ListGroupResources"],
                                                             resources=groups))
        for name, c in named.items():
            role.add_to_principal_policy(iam.PolicyStatement(
                actions=["s3:PutObject", "s3:GetObject", "s3:DeleteObject"],  # GetObject: HeadObject before a delete
                resources=[c.data_bucket.arn_for_objects(drain_key(name))]))
        jobs = stack.format_arn(service="batch", resource="job", resource_name="*")
        wild: list[Any] = ["*", reservations, jobs]
        if pool is not None:
            pool.grant_submit_jobs(role)
            role.add_to_principal_policy(iam.PolicyStatement(actions=["batch:CancelJob"], resources=[jobs]))
        acknowledge_wildcards(role, "EC2's Capacity Block describes and Batch's ListJobs/DescribeJobs have no "
                                    "resource-level permissions; extensions of any of this account's reservations "
                                    "(the function picks the fleet's); CancelJob of the held jobs it moves",
                              resources=tuple(wild))
