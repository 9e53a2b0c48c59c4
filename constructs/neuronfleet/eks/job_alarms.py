"""EksJobAlarms: the EKS path's two job alarms, each on a metric something publishes, into the fleet's topic.

- **UltraServer split**: launch.py refuses a job whose pods are split across UltraServers (exit 76, its line on
  stderr: eks.observability.SPLIT_MARKER). The CloudWatch Observability add-on ships every container's output to the
  cluster's application log group (eks.cloudwatch); a metric filter there counts the line (CloudWatch Logs publishes
  the metric), and the alarm fires on the first one. With Kueue's topology annotations a split is never admitted
  (eks.manifests.ultraserver_placement); the alarm is the guard for Jobs Kueue does not queue and for a node group
  whose nodes lack the UltraServer label.
- **Training pending past a deadline**: Kueue's ``kueue_pending_workloads`` gauge (active + inadmissible) of each
  training ClusterQueue, scraped into CloudWatch by the kit's agent (eks.observability, :class:`KueueMetrics`), at 1
  or more for every 5-minute period of ``pending_minutes``. A training LocalQueue the pool holds by day removes its
  workloads from the ClusterQueue's queue (Kueue localqueue_controller.go ``Update`` -> queue manager
  ``DeleteLocalQueue`` @ 8eab6877), but the gauge is set again only on a workload event of that queue (manager.go
  ``reportCQPendingWorkloads`` callers; ``DeleteLocalQueue`` reports nothing): whether a held day leaves a stale
  count that fires the alarm is UNCONFIRMED (docs/checks.md ``kueue-metrics``).

Each alarm notifies once when it goes into ALARM (no OK action, no repeat while it stays there); missing data (no
Kueue workload, no log line) is not breaching.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil
from typing import Any, cast

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from ..alerts.health_alarms import health_alarm
from ..core.nag import acknowledge
from ..core.problems import InvalidSettings, Problem
from ..core.trust import confine_pod_identity_role
from ..facts.eks_observability import (
    AGENT_POLICY,
    KUEUE_DIMENSIONS,
    KUEUE_PENDING,
    PENDING_STATUSES,
    PROMETHEUS_LOG_GROUP,
    PROMETHEUS_NAMESPACE,
)
from . import observability
from .cluster import NeuronEksCluster

SPLIT_NAMESPACE = "NeuronFleet/EKS"
SPLIT_METRIC = "UltraServerSplit"
"""The metric filter's metric: ``NeuronFleet/EKS`` / ``UltraServerSplit``, dimension ``ClusterName`` (a constant of
the filter: one application log group per cluster), value 1 per split line."""
PERIOD = Duration.minutes(5)
DEFAULT_PENDING_MINUTES = 60


class KueueMetrics(Construct):
    """Kueue's metrics in CloudWatch: the CloudWatch agent in AWS's Prometheus-on-EKS shape (eks.observability), its
    log group, and its EKS Pod Identity role (CloudWatchAgentServerPolicy, worn only by its service account)."""

    def __init__(self, scope: Construct, construct_id: str, *, cluster: NeuronEksCluster, kueue: eks.HelmChart) -> None:
        super().__init__(scope, construct_id)
        k8s = cluster.cluster
        self.cluster_name = k8s.cluster_name
        self.log_group = logs.LogGroup(self, "Logs", log_group_name=PROMETHEUS_LOG_GROUP.format(
            cluster=k8s.cluster_name), retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY)
        acknowledge(self.log_group, "CloudWatchLogGroupEncrypted", "CKV_AWS_158")
        objects = observability.kueue_metrics_objects(cluster_name=k8s.cluster_name, region=k8s.stack.region)
        namespace = k8s.add_manifest(f"{construct_id}Namespace", objects[0])
        account = k8s.add_service_account(f"{construct_id}Agent", name=observability.SCRAPER,
                                          namespace=observability.METRICS_NAMESPACE,
                                          identity_type=eks.IdentityType.POD_IDENTITY)
        account.node.find_child(f"manifest-{construct_id}AgentServiceAccountResource").node.add_dependency(namespace)
        confine_pod_identity_role(account.role, namespace=observability.METRICS_NAMESPACE,
                                  service_account=observability.SCRAPER)
        account.role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name(AGENT_POLICY))
        Validations.of(account.role).acknowledge(Acknowledgment(
            id=f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{AGENT_POLICY}]",
            reason="the managed policy AWS documents for the CloudWatch agent"))
        self.role = account.role
        self.manifest = k8s.add_manifest(construct_id, *objects[1:])
        self.manifest.node.add_dependency(kueue, account, self.log_group)

    def metric_pending(self, cluster_queue: str, status: str) -> cloudwatch.Metric:
        """``kueue_pending_workloads`` of one ClusterQueue and status, as the agent publishes it (highest per
        period: a gauge)."""
        if status not in PENDING_STATUSES:
            raise ValueError(f"status: got {status!r}; allowed: {', '.join(PENDING_STATUSES)}")
        values = {"ClusterName": self.cluster_name, "cluster_queue": cluster_queue, "status": status}
        return cloudwatch.Metric(namespace=PROMETHEUS_NAMESPACE, metric_name=KUEUE_PENDING, statistic="Maximum",
                                 period=PERIOD, dimensions_map={d: values[d] for d in KUEUE_DIMENSIONS[KUEUE_PENDING]})


class EksJobAlarms(Construct):
    """The UltraServer split alarm on ``cluster``, and with ``kueue`` (the cluster's Kueue release,
    ``NeuronEksCluster.kueue``: installed for its placement queues or by a sharing pool) Kueue's metrics and a pending
    alarm per training ClusterQueue named in ``training_queues`` (the pool's training queue, the cluster's
    ``placement_queues``).

    Example::

        EksJobAlarms(self, "JobAlarms", cluster=eks_cluster, topic=alerts.topic, kueue=eks_cluster.kueue,
                     training_queues=[pool.names["training_queue"], *eks_cluster.placement_queues.values()],
                     pending_minutes=60)
    """

    def __init__(self, scope: Construct, construct_id: str, *, cluster: NeuronEksCluster, topic: sns.ITopic,
                 kueue: eks.HelmChart | None = None, training_queues: Sequence[str] = (),
                 pending_minutes: int = DEFAULT_PENDING_MINUTES) -> None:
        super().__init__(scope, construct_id)
        problems = []
        if not isinstance(pending_minutes, int) or isinstance(pending_minutes, bool) or not 5 <= pending_minutes <= 1440:
            problems.append(Problem("pending_minutes", pending_minutes, "whole minutes from 5 to 1440 (a day)"))
        if training_queues and kueue is None:
            problems.append(Problem("training_queues", list(training_queues), (
                "none without kueue: the pending alarm reads Kueue's metrics, scraped only where Kueue is installed "
                "(pass the cluster's Kueue release, NeuronEksCluster.kueue)")))
        if problems:
            raise InvalidSettings(problems, what="EksJobAlarms")
        name = cluster.cluster.cluster_name
        self.split_filter = logs.MetricFilter(
            self, "UltraServerSplitFilter", log_group=cluster.observability.application_logs,
            filter_pattern=logs.FilterPattern.literal(f'"{observability.SPLIT_MARKER}"'),
            metric_namespace=SPLIT_NAMESPACE, metric_name=SPLIT_METRIC, metric_value="1")
        cast(logs.CfnMetricFilter, self.split_filter.node.default_child).add_property_override(
            "MetricTransformations.0.Dimensions", [{"Key": "ClusterName", "Value": name}])
        split = cloudwatch.Metric(namespace=SPLIT_NAMESPACE, metric_name=SPLIT_METRIC, statistic="Sum", period=PERIOD,
                                  dimensions_map={"ClusterName": name})
        self.split_alarm = health_alarm(
            self, "UltraServerSplit", split, topic=topic, description=(
                "A training job's pods were split across UltraServers: launch.py refused it (exit 76). Submit whole "
                "UltraServers through Kueue (docs/eks.md, 'Jobs that land whole')."))
        self.kueue_metrics: KueueMetrics | None = None
        self.pending_alarms: dict[str, cloudwatch.Alarm] = {}
        if kueue is None:
            return
        self.kueue_metrics = KueueMetrics(self, "KueueMetrics", cluster=cluster, kueue=kueue)
        periods = ceil(pending_minutes / PERIOD.to_minutes())
        for queue in training_queues:
            metrics: dict[str, Any] = {
                s[0]: self.kueue_metrics.metric_pending(queue, s) for s in PENDING_STATUSES}  # a: active, i: inad.
            pending = cloudwatch.MathExpression(expression="FILL(a, 0) + FILL(i, 0)", using_metrics=metrics,
                                                period=PERIOD, label=f"{queue}: pending workloads")
            self.pending_alarms[queue] = health_alarm(
                self, f"Pending{''.join(p.capitalize() for p in queue.split('-'))}",
                cast(cloudwatch.Metric, pending), topic=topic, periods=periods, description=(
                    f"Training in ClusterQueue {queue} has been pending (Kueue: not admitted) for {pending_minutes} "
                    "minutes or more. kubectl -n neuronfleet-training get workloads shows why (docs/eks.md)."))
