"""The Kubernetes objects that put Kueue's metrics into CloudWatch, and the text the UltraServer split alarm looks
for. Pure functions returning plain dicts (no aws-cdk-lib): eks.job_alarms applies them; tests/unit/
test_eks_observability.py validates them against Kubernetes 1.36 and holds them to AWS's own Prometheus-on-EKS
deployment (tests/data/eks/cwagent-prometheus-eks.yaml).

Kueue serves Prometheus metrics only (kubernetes-sigs/kueue pkg/metrics/metrics.go at v0.19.2). AWS's documented
way to bring a Prometheus endpoint into CloudWatch on EKS is a CloudWatch agent Deployment with two ConfigMaps, a
Prometheus scrape configuration and the agent's ``emf_processor`` declarations (facts.eks_observability.
CWAGENT_PROMETHEUS_SAMPLE): the kit deploys exactly that shape, scraping Kueue's metrics Service only and declaring
the four Kueue metrics the alarms and docs use, each with one dimension set. One replica: the metrics are scraped once
(a DaemonSet agent would scrape the one Service once per node).
"""

from __future__ import annotations

import json
from typing import Any

from ..facts.eks_observability import (
    CI_VERSION,
    CWAGENT_CONFIG_DIR,
    CWAGENT_IMAGE,
    KUEUE_DIMENSIONS,
    KUEUE_METRICS_PORT,
    KUEUE_METRICS_SERVICE,
    PROMETHEUS_CONFIG_DIR,
    PROMETHEUS_LOG_GROUP,
    PROMETHEUS_NAMESPACE,
)
from ..facts.kueue import KUEUE_NAMESPACE

Manifest = dict[str, Any]

METRICS_NAMESPACE = "neuronfleet-metrics"
"""The scraper's own namespace (not the add-on's ``amazon-cloudwatch``, which the add-on owns: a manifest of the kit's
that held that Namespace would delete the add-on's objects with it)."""
SCRAPER = "neuronfleet-kueue-metrics"
"""The scraper's name: its Deployment, service account (EKS Pod Identity: a role with AWS's CloudWatchAgentServerPolicy,
as AWS's setup asks, which is not bound to one log group: eks/job_alarms.py), ClusterRole and ConfigMaps' prefix."""
KUEUE_JOB = "kueue"
"""The scrape job's name: the ``job`` label every scraped series carries, which the declarations match."""
TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"
POD_SECURITY_LEVEL = "baseline"

SPLIT_MARKER = "a job must take whole UltraServers"
"""What launch.py prints (on stderr, as ``neuronfleet launch: UltraServer <id>: this job has <n> of its <size> nodes
...; a job must take whole UltraServers, ...``) before it exits 76 when a job's pods are split across UltraServers
(node/launch.py ``order``); tests/unit/test_eks_observability.py runs launch.py's own check to hold this text to it."""


def scrape_config() -> dict[str, Any]:
    """The Prometheus scrape configuration: Kueue's metrics Service in kueue-system only (its ``https`` port, the
    pod's service-account token, TLS not verified as Kueue's own ServiceMonitor does), and only the declared
    metrics kept."""
    kept = "|".join(sorted(KUEUE_DIMENSIONS))
    return {
        "global": {"scrape_interval": "1m", "scrape_timeout": "10s"},
        "scrape_configs": [{
            "job_name": KUEUE_JOB, "sample_limit": 10000, "scheme": "https",
            "tls_config": {"insecure_skip_verify": True}, "bearer_token_file": TOKEN_FILE,
            "kubernetes_sd_configs": [{"role": "endpoints", "namespaces": {"names": [KUEUE_NAMESPACE]}}],
            "relabel_configs": [{
                "source_labels": ["__meta_kubernetes_service_name", "__meta_kubernetes_endpoint_port_name"],
                "action": "keep", "regex": f"{KUEUE_METRICS_SERVICE};{KUEUE_METRICS_PORT}"}],
            "metric_relabel_configs": [{"source_labels": ["__name__"], "action": "keep", "regex": f"({kept})"}]}],
    }


def agent_config(*, cluster_name: str, region: str) -> dict[str, Any]:
    """The CloudWatch agent's JSON configuration (AWS's sample's shape): the Prometheus input, its log group, and one
    ``metric_declaration`` per Kueue metric with the dimension set :data:`KUEUE_DIMENSIONS` gives it."""
    declarations = [{"source_labels": ["job"], "label_matcher": f"^{KUEUE_JOB}$", "dimensions": [list(dims)],
                     "metric_selectors": [f"^{name}$"]} for name, dims in KUEUE_DIMENSIONS.items()]
    return {"agent": {"region": region}, "logs": {"metrics_collected": {"prometheus": {
        "cluster_name": cluster_name, "log_group_name": PROMETHEUS_LOG_GROUP.format(cluster=cluster_name),
        "prometheus_config_path": f"{PROMETHEUS_CONFIG_DIR}/prometheus.yaml",
        "emf_processor": {"metric_namespace": PROMETHEUS_NAMESPACE, "metric_declaration": declarations}}},
        "force_flush_interval": 5}}


def kueue_metrics_objects(*, cluster_name: str, region: str) -> list[Manifest]:
    """Namespace, read rights (list the endpoints of kueue-system; ``get /metrics``), the two ConfigMaps and the
    agent's Deployment. Its service account is made by the construct (EKS Pod Identity)."""
    import yaml

    labels = {"app.kubernetes.io/name": SCRAPER, "app.kubernetes.io/part-of": "neuronfleet"}
    rbac = "rbac.authorization.k8s.io"
    subject = [{"kind": "ServiceAccount", "name": SCRAPER, "namespace": METRICS_NAMESPACE}]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": METRICS_NAMESPACE, "labels": {
            "app.kubernetes.io/part-of": "neuronfleet", "pod-security.kubernetes.io/enforce": POD_SECURITY_LEVEL}}},
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRole", "metadata": {"name": SCRAPER, "labels": labels},
         "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]},
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": SCRAPER, "labels": labels},
         "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": SCRAPER}, "subjects": subject},
        {"apiVersion": f"{rbac}/v1", "kind": "Role", "metadata": {"name": SCRAPER, "namespace": KUEUE_NAMESPACE,
                                                                  "labels": labels},
         "rules": [{"apiGroups": [""], "resources": ["endpoints", "services", "pods"],
                    "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": f"{rbac}/v1", "kind": "RoleBinding", "metadata": {"name": SCRAPER, "namespace": KUEUE_NAMESPACE,
                                                                         "labels": labels},
         "roleRef": {"apiGroup": rbac, "kind": "Role", "name": SCRAPER}, "subjects": subject},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{SCRAPER}-agent", "namespace": METRICS_NAMESPACE},
         "data": {"cwagentconfig.json": json.dumps(agent_config(cluster_name=cluster_name, region=region),
                                                   indent=2)}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{SCRAPER}-prometheus",
                                                               "namespace": METRICS_NAMESPACE},
         "data": {"prometheus.yaml": yaml.safe_dump(scrape_config(), sort_keys=False)}},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": SCRAPER, "namespace": METRICS_NAMESPACE, "labels": labels},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
             "metadata": {"labels": labels},
             "spec": {"serviceAccountName": SCRAPER, "terminationGracePeriodSeconds": 60,
                      "containers": [{
                          "name": "cloudwatch-agent", "image": CWAGENT_IMAGE,
                          "resources": {"limits": {"cpu": "1000m", "memory": "1000Mi"},
                                        "requests": {"cpu": "200m", "memory": "200Mi"}},
                          "env": [{"name": "CI_VERSION", "value": CI_VERSION}],
                          "securityContext": {"allowPrivilegeEscalation": False},
                          "volumeMounts": [{"name": "agent-config", "mountPath": CWAGENT_CONFIG_DIR},
                                           {"name": "prometheus-config", "mountPath": PROMETHEUS_CONFIG_DIR}]}],
                      "volumes": [{"name": "agent-config", "configMap": {"name": f"{SCRAPER}-agent"}},
                                  {"name": "prometheus-config", "configMap": {"name": f"{SCRAPER}-prometheus"}}]}}}},
    ]
