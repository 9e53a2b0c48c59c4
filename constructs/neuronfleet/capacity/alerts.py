"""CapacityAlerts: failed or ending Trainium capacity, announced once, with what the GPU pool can take instead."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Duration, Fn, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet_contract import capacity_alert as contract
from neuronfleet_contract.capacity_alert import CapacityAlertConfig, gpu_pool
from neuronfleet_contract.namespaces import CAPACITY_NAMESPACE

from ..alerts.announcement_ledger import AnnouncementLedger
from ..alerts.health_alarms import fleet_health, health_alarm, health_metric
from ..alerts.topic import grant_publish
from ..core.args import duck
from ..core.functions import FleetFunction
from ..core.nag import acknowledge_wildcards
from ..facts.catalog import CATALOG
from ..fallback.gpu_pool import GpuPool
from ..settings import reservations
from ..training.cluster import TrainiumCluster

SCAN_EVERY = Duration.minutes(15)
"""The Capacity Block scan (a safety net for AWS's warning event): a warning point is announced at most 15 minutes
late, and exactly once."""


def batch_asg_prefix(compute_environment_arn: str) -> str:
    """The name prefix of the Auto Scaling groups AWS Batch creates for a compute environment:
    ``<compute environment name>-asg-<uuid>``. Not documented by AWS; observed in Batch's own error messages
    (e.g. outerbounds/terraform-aws-metaflow PR #19, 2022). If Batch renames them, the launch rules stop matching
    (the blocked-queue rule, on Batch's documented event, still reports capacity)."""
    name = Fn.select(1, Fn.split("compute-environment/", compute_environment_arn))
    return f"{name}-asg-"


class CapacityAlerts(Construct):
    """Announces the fleet's Trainium capacity problems on the topic, each once, with what the GPU pool can take.

    Watches only the fleet's own resources: its clusters' Capacity Blocks and reservations (EC2 events, and a
    scan every 15 minutes that warns 24 h and 2 h before the instances stop: 30 minutes before the end of an
    instance block, 60 before an UltraServer block's), the Auto Scaling groups AWS Batch runs for its
    clusters' compute environments (launches refused, and launching again), and its job queues ("Batch Job Queue
    Blocked", and a job starting again). Lasting conditions are announced when they start and when they end.

    Example::

        CapacityAlerts(self, "Capacity", pool=pool, topic=alerts.topic, clusters=[cluster], fleet="nf-prod")
    """

    def __init__(self, scope: Construct, construct_id: str, *, pool: GpuPool, topic: sns.ITopic,
                 clusters: Sequence[TrainiumCluster] = (), fleet: str = "") -> None:
        """``fleet``: the fleet's name, the ``Fleet`` dimension of the function's metrics and of :meth:`metric_*`
        (none: ``service`` alone, shared with any other fleet's in the account; neuronfleet_contract.health)."""
        super().__init__(scope, construct_id)
        self.health = fleet_health(fleet)
        duck("topic", topic, "topic_arn", "an sns.ITopic (e.g. alerts.topic)", what="CapacityAlerts")
        duck("pool", pool, "describe", "a GpuPool", what="CapacityAlerts")
        ids, groups = reservations(c.settings.capacity for c in clusters)
        self.ledger = AnnouncementLedger(self, "Announced")
        self.function = FleetFunction(
            self, "Function", handler="capacity_alert.handler.handler", topic=topic,
            description="neuronfleet: Trainium capacity events -> GPU fallback announcement",
            environment=CapacityAlertConfig(
                pool=gpu_pool(pool.describe()), topic_arn=topic.topic_arn, ledger_table=self.ledger.table.table_name,
                reservation_ids=ids, resource_group_arns=groups,
                ultraserver_types=tuple(s.instance_type for s in CATALOG if s.ultraserver_size > 1),
            ).to_environment(to_json=Stack.of(self).to_json_string) | self.health.to_environment())
        grant_publish(topic, self.function.role)
        self.ledger.grant(self.function.role)
        self.rules: dict[str, events.Rule] = {}
        if ids or groups:
            self._reservations(ids, groups)
        if clusters:
            self._schedulers(clusters)
        self.malformed_alarm = health_alarm(
            self, "MalformedEventsAlarm", self.metric_malformed_events(), topic=topic,
            description="neuronfleet capacity alerts: an event was refused as malformed (MalformedEvents): a "
                        "capacity problem of that kind may go unannounced until the event's format is handled; its "
                        "log has the event")
        """Events refused in an hour (EC2's, Batch's and Auto Scaling's: a change of their format would otherwise
        silence the announcements)."""

    def metric_announcements(self, **options: Any) -> cloudwatch.Metric:
        """Messages the capacity alerts published (``CapacityAnnouncements``; ``cloudwatch.MetricOptions`` keywords;
        hourly sums by default), of this fleet only."""
        return self._metric(contract.ANNOUNCEMENTS_METRIC, options)

    def metric_malformed_events(self, **options: Any) -> cloudwatch.Metric:
        """Events the function refused as malformed (``MalformedEvents``; hourly sums by default), of this fleet."""
        return self._metric(contract.MALFORMED_METRIC, options)

    def _metric(self, name: str, options: dict[str, Any]) -> cloudwatch.Metric:
        return health_metric(CAPACITY_NAMESPACE, name, service=contract.SERVICE, health=self.health, options=options)

    def _rule(self, rule_id: str, description: str, **kwargs: Any) -> events.Rule:
        self.rules[rule_id] = events.Rule(self, rule_id, description=description,
                                          targets=[self.function.event_target()], **kwargs)
        return self.rules[rule_id]

    def _reservations(self, ids: Sequence[str], groups: Sequence[str]) -> None:
        """EC2's Capacity Block and reservation events (filtered to the fleet's ids by the rule, or, when the fleet
        buys through resource groups, by the function), and the scan; the function may read the reservations."""
        detail = {} if groups else {"capacity-reservation-id": list(ids)}
        self._rule("ReservationEvents", "The fleet's Capacity Blocks: delivered, ending; reservations failed/expired",
                   event_pattern=events.EventPattern(source=["aws.ec2"], detail_type=list(contract.EC2_EVENTS),
                                                     detail=detail or None))
        self._rule("BlockScan", "Capacity Blocks: warn 24 h and 2 h before their instances stop (safety net)",
                   schedule=events.Schedule.rate(SCAN_EVERY))
        role = self.function.role
        role.add_to_principal_policy(iam.PolicyStatement(actions=["ec2:DescribeCapacityReservations"],
                                                         resources=["*"]))
        if groups:
            role.add_to_principal_policy(iam.PolicyStatement(actions=["resource-groups:ListGroupResources"],
                                                             resources=list(groups)))
        acknowledge_wildcards(role, "ec2:DescribeCapacityReservations has no resource-level permissions",
                              resources=("*",))

    def _schedulers(self, clusters: Sequence[TrainiumCluster]) -> None:
        queues = [c.job_queue.job_queue_arn for c in clusters]
        self._rule("QueueBlocked", "A job blocks one of the fleet's Trainium queues (Batch Job Queue Blocked)",
                   event_pattern=events.EventPattern(source=["aws.batch"], detail_type=[contract.QUEUE_BLOCKED],
                                                     detail={"jobQueue": queues}))
        self._rule("QueueMoving", "A job starts on one of the fleet's Trainium queues (ends a blocked condition)",
                   event_pattern=events.EventPattern(source=["aws.batch"], detail_type=[contract.JOB_STATE],
                                                     detail={"jobQueue": queues, "status": list(contract.JOB_STARTED)}))
        prefixes = [{"prefix": batch_asg_prefix(c.compute_environment.attr_compute_environment_arn)} for c in clusters]
        self._rule("Launches", "Instances of the fleet's Trainium compute environments not launched / launched again",
                   event_pattern=events.EventPattern(
                       source=["aws.autoscaling"], detail_type=[contract.LAUNCH_UNSUCCESSFUL, contract.LAUNCH_SUCCESSFUL],
                       detail={"AutoScalingGroupName": prefixes}))
