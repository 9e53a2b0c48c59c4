"""What publishes the EKS path's metrics, and under which names: Neuron metrics per node and per pod (the CloudWatch
Observability EKS add-on's Container Insights), Kueue's metrics (scraped by a CloudWatch agent in the publisher's
Prometheus deployment), and the log group the add-on ships container logs to (the UltraServer split's metric
filter reads it). No aws-cdk-lib import. tests/unit/test_eks_observability.py pins each against the publisher's
files (tests/data/eks, tests/data/kueue) and the Kueue source read at its release commit.

Why the add-on and not neuron-monitor's exporter scraped by the kit: AWS documents per-node, per-pod, per-container
and per-UltraServer Neuron metrics from it, with their names and dimensions (Container Insights with enhanced
observability for Amazon EKS, the page below), and ships neuron-monitor 1.11.0, whose DaemonSet lists the trn2
types (aws-observability/helm-charts charts/amazon-cloudwatch-observability/values.yaml @ 71a298ff, chart 6.4.0,
2026-08-07: ``neuronMonitor.image.tag: 1.11.0``; its affinity lists trn2.3xlarge, trn2.48xlarge, trn2a.48xlarge,
trn2n.48xlarge, trn2u.48xlarge), where Neuron's own Kubernetes DaemonSet still pins 1.3.0 and lists no trn2 type
(tests/data/eks/k8s-neuron-monitor-daemonset.yml). Scraping neuron-monitor's exporter ourselves would need a
Prometheus pipeline the kit would own for metrics AWS already names.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from .eks_pins import AddonPin

READ = date(2026, 11, 29)

# ---------------------------------------------------------------------------------------------- the add-on

CLOUDWATCH_ADDON = "amazon-cloudwatch-observability"
CLOUDWATCH_CHART = (
    "aws-observability/helm-charts, tag amazon-cloudwatch-observability-6.4.0 @ "
    "f4ad2e3abc4444162a74684aa69058a73bb399f6 (2026-07-21; the chart its Helm repository served newest: gh-pages "
    "index.yaml @ f5139837, created 2026-08-06; copied in tests/data/cloudwatch_observability)")
CLOUDWATCH_ADDON_PIN = AddonPin(
    name=CLOUDWATCH_ADDON, version="v6.4.0-eksbuild.1", confirmed=False, as_of=READ,
    source=("the add-on version built from chart 6.4.0 (" + CLOUDWATCH_CHART + ": Chart.yaml version 6.4.0; "
            "values.yaml containerInsights.enabled true, otelContainerInsights.enabled false, neuronMonitor.image.tag "
            "1.11.0 with the trn2 types in its affinity). The add-on's versions are named after the chart's: RELEASE_NOTES "
            "v3.7.0 'Upgrade CloudWatch Agent Addon to v3.7.0-eksbuild.1'; AWS's 'Deploy Enhanced Container Insights "
            "(Classic) with CloudFormation or Helm' (docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/"
            "container-insights-eks-classic-iac.html, stored text id 58629973946, read 2026-11-29) installs "
            "AddonVersion v5.4.0-eksbuild.1 or the Helm chart --version 5.4.0. ASSUMED for Kubernetes 1.36: no "
            "publisher file lists the add-on's versions per Kubernetes version (DescribeAddonVersions needs an "
            "account); two third-party runs saw it there (a lab run of 2026-08-08, us-east-1: 'Kubernetes 1.36 ... "
            "v6.4.0-eksbuild.1 (the default build for 1.36 in this account on the run date)', stored id 59852584107; "
            "aws eks describe-addon-versions --kubernetes-version 1.36 in ap-southeast-1 on 2026-09-18 listing "
            "v6.6.0-eksbuild.1 (default), v6.5.0-eksbuild.1, v6.4.0-eksbuild.1, stored id 69417180906). The check: "
            "aws eks describe-addon-versions --addon-name amazon-cloudwatch-observability --kubernetes-version 1.36 "
            "(docs/checks.md cloudwatch-addon)"))
CLOUDWATCH_ADDON_VERSION = CLOUDWATCH_ADDON_PIN.version
"""The add-on at ``v6.4.0-eksbuild.1``, pinned so a deploy does not take whatever EKS defaults to that day (UNCONFIRMED
for Kubernetes 1.36: :data:`CLOUDWATCH_ADDON_PIN` says why this version and what is assumed). Why 6.4.0: it is the
chart whose files the facts here are read from (neuron-monitor 1.11.0 listing the trn2 types, the application log
group), the newest its Helm repository served at the stored snapshot (6.5.0 was a release branch, unpublished).
Neuron metrics: AWS: "Beginning with version 1.300036.0 of the CloudWatch agent, Container Insights with enhanced
observability for Amazon EKS collects accelerated computing metrics from AWS Trainium and AWS Inferentia accelerators
by default. The CloudWatch agent must be installed using the CloudWatch Observability EKS add-on version
v1.5.0-eksbuild.1 or later" (below). The kit reads Container Insights' CloudWatch-format metrics (``ContainerInsights``
namespace, what AWS now calls Enhanced Container Insights (Classic), "Minimum add-on version ... Prior to v6.2.0" on
its compare page): chart 6.4.0 keeps that pipeline on by default (``containerInsights.enabled: true``: "When set to
false, the kubernetes key is removed from the agent config, disabling legacy CI metrics collection") and the OTel one
off, and the 2026-08-08 run above saw the ``/performance`` log group of that pipeline; confirmed on the account by
the ``list-metrics`` of docs/checks.md ``cloudwatch-addon``. To change it: a version that command lists, checked
against that chart's values the same way."""
ADDON_NAMESPACE = "amazon-cloudwatch"
ADDON_SERVICE_ACCOUNT = "cloudwatch-agent"
"""The add-on's agent runs as ``cloudwatch-agent`` in ``amazon-cloudwatch`` (helm-charts templates/_helpers.tpl
``cloudwatch-agent.serviceAccountName``: ``agent.name`` default ``cloudwatch-agent`` @ 71a298ff; the release
namespace AWS's add-on uses). Its Pod Identity role gets CloudWatchAgentServerPolicy, as AWS's setup asks."""
AGENT_POLICY = "CloudWatchAgentServerPolicy"

CONTAINER_INSIGHTS_PAGE = (
    "Amazon CloudWatch user guide, 'Amazon EKS and Kubernetes Container Insights with enhanced observability metrics' "
    "(docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-enhanced-EKS.html, stored text "
    "id 51861309846, read 2026-11-29)")
CONTAINER_INSIGHTS_NAMESPACE = "ContainerInsights"


@dataclass(frozen=True)
class PublishedMetric:
    """A metric as its publisher emits it: namespace, name, and the dimension sets it publishes."""

    namespace: str
    name: str
    dimension_sets: tuple[tuple[str, ...], ...]
    source: str
    as_of: date = READ


NEURON_METRICS = (
    PublishedMetric(CONTAINER_INSIGHTS_NAMESPACE, "node_neuroncore_utilization", (
        ("ClusterName",), ("ClusterName", "UltraServer"), ("ClusterName", "InstanceId", "NodeName"),
        ("ClusterName", "InstanceId", "NodeName", "NeuronDevice", "NeuronCore")), CONTAINER_INSIGHTS_PAGE),
    PublishedMetric(CONTAINER_INSIGHTS_NAMESPACE, "pod_neuroncore_utilization", (
        ("ClusterName",), ("ClusterName", "Namespace"), ("ClusterName", "Namespace", "PodName"),
        ("ClusterName", "Namespace", "PodName", "FullPodName")), CONTAINER_INSIGHTS_PAGE),
    PublishedMetric(CONTAINER_INSIGHTS_NAMESPACE, "container_neuroncore_utilization", (
        ("ClusterName",), ("ClusterName", "Namespace", "PodName", "ContainerName")), CONTAINER_INSIGHTS_PAGE),
)
"""The Neuron metrics the dashboards and docs/eks.md name (the page lists more: memory, execution errors and
latency, ECC events). Prerequisite on the page: "The Neuron device plugin must be installed on the cluster": on DRA
node groups (no device plugin) per-pod correlation is unconfirmed (docs/checks.md ``cloudwatch-addon``)."""

APPLICATION_LOG_GROUP = "/aws/containerinsights/{cluster}/application"
"""Where the add-on's Fluent Bit ships every container's stdout and stderr (helm-charts values.yaml @ 71a298ff,
``containerLogs.fluentBit.config.extraFiles['application-log.conf']``: ``[OUTPUT] Name cloudwatch_logs``,
``log_group_name /aws/containerinsights/${CLUSTER_NAME}/application``, ``auto_create_group true``; its input tails
``/var/log/containers/*.log``). The kit creates the group first (retention, and the metric filter needs it)."""

# ----------------------------------------------------------------------------------- Kueue's metrics, scraped

CWAGENT_PROMETHEUS_SAMPLE = (
    "aws-samples/amazon-cloudwatch-container-insights k8s-deployment-manifest-templates/deployment-mode/service/"
    "cwagent-prometheus/prometheus-eks.yaml @ dfd961175e8215ca20f3c1bdec9e4ee8df60d676 (2026-05-07; copied in "
    "tests/data/eks/cwagent-prometheus-eks.yaml, blob b77b4a6a)")
CWAGENT_IMAGE = "public.ecr.aws/cloudwatch-agent/cloudwatch-agent:1.300066.1b1374"
CI_VERSION = "k8s/1.3.43"
"""The CloudWatch agent image of AWS's Prometheus-on-EKS deployment (:data:`CWAGENT_PROMETHEUS_SAMPLE`: one replica,
the agent's JSON config mounted at /etc/cwagentconfig, the Prometheus scrape config at /etc/prometheusconfig; 'Please
don't change the mountPath'; its ``CI_VERSION`` env: 'Please don't change below envs'). By tag: no digest is
published offline (docs/checks.md ``kueue-metrics``)."""
CWAGENT_CONFIG_DIR = "/etc/cwagentconfig"
PROMETHEUS_CONFIG_DIR = "/etc/prometheusconfig"
PROMETHEUS_LOG_GROUP = "/aws/containerinsights/{cluster}/prometheus"
"""The agent's ``log_group_name`` (aws/amazon-cloudwatch-agent translator/translate/logs/metrics_collected/prometheus/
ruleLogGroupName.go; the sample's earlier versions named it, as the ADOT sample does): the agent writes the scraped
metrics there as embedded-metric-format events, which CloudWatch turns into metrics."""
PROMETHEUS_NAMESPACE = "ContainerInsights/Prometheus"
"""The CloudWatch namespace of those metrics when ``emf_processor.metric_namespace`` is not set and the agent runs
in a container outside ECS: aws/amazon-cloudwatch-agent translator/translate/logs/metrics_collected/prometheus/
emfprocessor/ruleMetricNamespace.go @ 46146905 (``K8SDefaultCloudWatchNamespace``). The kit sets it explicitly to
the same value."""

KUEUE_METRICS_SERVICE = "kueue-controller-manager-metrics-service"
KUEUE_METRICS_PORT = "https"
"""Kueue's metrics Service for a release named ``kueue`` (the pool's), port 8443 named ``https``: kubernetes-sigs/kueue
charts/kueue/templates/manager/auth_proxy_service.yaml and values.yaml ``metricsService.ports`` @ 8eab6877. The
endpoint authorises ``get /metrics`` (non-resource URL), so the scraper's ClusterRole grants that alone, as AWS's
sample's ``cwagent-prometheus-role`` does. Kueue's own ServiceMonitor skips TLS verification (values.yaml
``metrics.serviceMonitor.tlsConfig.insecureSkipVerify: true``: its certificate is self-signed); the scraper too."""

KUEUE_SOURCE = "kubernetes-sigs/kueue pkg/metrics/metrics.go @ 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb (v0.19.2)"
KUEUE_PENDING = "kueue_pending_workloads"
"""Gauge, labels ``cluster_queue``, ``status`` (``active``: in the admission queue; ``inadmissible``: a failed admission
attempt, not retried until the cluster changes), ``replica_role``: ``PendingWorkloads``, Subsystem ``kueue``
(pkg/constants/constants.go ``KueueName``), set by ``ReportPendingWorkloads`` (test: pkg/metrics/metrics_test.go
TestClearClusterQueueMetricsOnLabelChangeOnlyClearsScopedGaugeMetrics: ``ReportPendingWorkloads(cq, 3, 1)`` gives 2
series for the queue, one per status)."""
KUEUE_ADMITTED = "kueue_admitted_workloads_total"
KUEUE_PREEMPTED = "kueue_preempted_workloads_total"
KUEUE_EVICTED = "kueue_evicted_workloads_total"
PENDING_STATUSES = ("active", "inadmissible")
KUEUE_DIMENSIONS = {
    KUEUE_PENDING: ("ClusterName", "cluster_queue", "status"),
    KUEUE_ADMITTED: ("ClusterName", "cluster_queue"),
    KUEUE_PREEMPTED: ("ClusterName", "preempting_cluster_queue", "reason"),
    KUEUE_EVICTED: ("ClusterName", "cluster_queue", "reason"),
}
"""Each scraped Kueue metric and the one dimension set the kit's agent declares for it (``emf_processor.
metric_declaration``): labels of the metric at v0.19.2, with the ``ClusterName`` the agent's sample uses."""
