"""The EKS and Kubernetes rows of docs/checks.md as checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..facts.eks_observability import CLOUDWATCH_ADDON as CLOUDWATCH_ADDON_NAME
from ..facts.eks_observability import CLOUDWATCH_ADDON_VERSION, CONTAINER_INSIGHTS_NAMESPACE
from ..facts.eks_pins import DEFAULT_KUBERNETES_VERSION, POD_IDENTITY_AGENT
from ..facts.eks_pins import NODE_MONITORING_AGENT as NODE_MONITORING_AGENT_PIN
from ..preflight.checks import Failed
from . import applies
from .outcomes import Finding, broken, holds, not_yet, unchecked
from .registry import Check, Context, unreadable

if TYPE_CHECKING:
    from ..fleetfile.schema import Fleet

KUBERNETES = "verify reads no Kubernetes API yet (the command is listed for you to run with kubectl)"

EKS_PINS = Check(
    "eks-pins", "the EKS path's pins and images (Neuron chart 1.9.0's values keys, Kubernetes 1.36 with an AL2023 "
    "Neuron AMI, python3 in the neuron-monitor image)", "helm show values ... --version 1.9.0; aws eks "
    "describe-cluster-versions; the publisher's logs (docs/eks.md)", manual=KUBERNETES, applies=applies.eks)
POOL_RELIANCES = Check(
    "pool-reliances", "the shared pool's reliances: Kueue 0.19.2's chart, the training LocalQueue at HoldAndDrain "
    "evicting training by suspending its Jobs and None readmitting them, reclaim from the active training "
    "ClusterQueue, topology-aware admission on whole free nodes, the downwardAPI volume refreshing the "
    "checkpoint-by annotation",
    "kubectl -n neuronfleet-training get workloads after a morning (evicted, reason LocalQueueStopped); kubectl get "
    "job <train> -o jsonpath='{.spec.suspend}' (true by day, false the next night); helm show chart "
    "oci://registry.k8s.io/kueue/charts/kueue --version 0.19.2; kubectl exec <pod> -- cat "
    "/etc/neuronfleet/checkpoint-by",
    manual=KUBERNETES, applies=applies.sharing)
MONITOR_DIGEST = Check(
    "neuron-monitor-digest", "the neuron-monitor image's digest",
    "crane digest public.ecr.aws/neuron/neuron-monitor:1.3.0, then set NEURON_MONITOR_DIGEST",
    manual="the image lives in Neuron's public registry, outside the account", applies=applies.eks)
POOL_RBAC = Check(
    "pool-rbac", "the pool schedule's namespaced RBAC and the split identities on a real cluster",
    "kubectl auth can-i --list --as=x --as-group=neuronfleet-pool-schedule-<pool> -n neuronfleet-serving (and -n "
    "neuronfleet-training, -n kube-system)", manual=KUBERNETES, applies=applies.sharing)
POD_SECURITY = Check(
    "pod-security-baseline", "the training Job and inference Deployment pass the baseline Pod Security Standard",
    "kubectl -n neuronfleet-training apply --dry-run=server -f k8s/training-job.yaml", manual=KUBERNETES,
    applies=applies.eks)
POD_IDENTITY_TAGS = Check(
    "pod-identity-tags", "EKS Pod Identity tags its session with kubernetes-namespace and kubernetes-service-account",
    "kubectl -n neuronfleet-training run t --rm -it --image=public.ecr.aws/aws-cli/aws-cli --overrides=... -- sts "
    "get-caller-identity", manual="it runs a pod (a change)", applies=applies.eks)

NEURON_CHART_RENDER = Check(
    "neuron-chart-render", "the Neuron chart 1.9.0 renders the kit's two releases as chart 1.0.0 does offline (the "
    "device plugin DaemonSet on the device-plugin node groups, the DRA driver's on the dra ones, every object in a "
    "namespace that exists)",
    "helm list -n kube-system (neuron-helm-chart and neuron-dra deployed); kubectl get daemonsets -A -o "
    "custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name,SELECTOR:.spec.template.spec.nodeSelector",
    manual=KUBERNETES, applies=applies.eks)
KUBE_SCHEDULER = Check(
    "eks-kube-scheduler", "an eks-distro kube-scheduler tag of the cluster's Kubernetes minor for Neuron's scheduler "
    "extension", "crane ls public.ecr.aws/eks-distro/kubernetes/kube-scheduler | grep '^v1.36', then "
    "kube_scheduler_tag: <that tag>",
    manual="the image lives in a public registry, outside the account", applies=applies.eks)
NODE_MONITORING_AGENT = Check(
    "eks-node-monitoring-agent", f"the {NODE_MONITORING_AGENT_PIN.name} add-on version the kit pins "
    f"({NODE_MONITORING_AGENT_PIN.version}, seen on Kubernetes 1.36 by a third party) exists for the cluster's "
    "Kubernetes version",
    f"aws eks describe-addon-versions --addon-name {NODE_MONITORING_AGENT_PIN.name} --kubernetes-version "
    f"{DEFAULT_KUBERNETES_VERSION} --query 'addons[].addonVersions[].addonVersion'",
    manual="verify reads no EKS add-on versions yet",
    applies=applies.eks)
POD_IDENTITY_AGENT_VERSION = Check(
    "eks-pod-identity-agent", f"the {POD_IDENTITY_AGENT.name} add-on version the kit pins on aws-cdk-lib's own add-on "
    f"({POD_IDENTITY_AGENT.version}, seen on Kubernetes 1.36 by third parties) exists for the cluster's Kubernetes "
    "version",
    f"aws eks describe-addon-versions --addon-name {POD_IDENTITY_AGENT.name} --kubernetes-version "
    f"{DEFAULT_KUBERNETES_VERSION} --query 'addons[].addonVersions[].addonVersion'",
    manual="verify reads no EKS add-on versions yet", applies=applies.eks)
NODE_REPAIR_REPLACE = Check(
    "node-repair-replace", "what node auto repair's Replace does on a Capacity Block or UltraServer node group (the "
    "new instance in the same block and UltraServer) and how the Auto Scaling group records it (a termination, "
    "then a launch within 30 minutes)",
    "after a repair: aws autoscaling describe-scaling-activities --auto-scaling-group-name <the node group's>; aws "
    "ec2 describe-instances --instance-ids <new> --query 'Reservations[].Instances[].CapacityReservationId'; kubectl "
    "get node <new> -L neuron.amazonaws.com/ultraserver-server-id-4",
    manual="it needs a node repaired (a fault on a real node)", applies=applies.eks)

ULTRASERVER_LABEL = Check(
    "ultraserver-label", "who sets Neuron's UltraServer label neuron.amazonaws.com/ultraserver-server-id-4 on a DRA "
    "node group's nodes (no device plugin there)",
    "kubectl get nodes -l neuronfleet/node-group=<group> -L neuron.amazonaws.com/ultraserver-server-id-4",
    manual=KUBERNETES, applies=applies.eks)
ULTRASERVER_PLACEMENT = Check(
    "ultraserver-placement", "a Job of several UltraServers on a device-plugin UltraServer node group, queued on its "
    "placement queue (whole-ultraservers-<group>), is admitted by Kueue 0.19.2 only on whole free UltraServers",
    "kubectl -n neuronfleet-training get workloads -o wide (the Job's workload admitted to whole-ultraservers-<group>, "
    "or pending with a topology reason); kubectl get pods -o wide -L neuron.amazonaws.com/ultraserver-server-id-4",
    manual=KUBERNETES, applies=applies.placement)
NEURON_NODE_METRIC = "node_neuroncore_utilization"
"""The add-on's Neuron metric verify looks for, per cluster (``ClusterName``): neuronfleet.facts.eks_observability."""


def addon_pinned(addons: Mapping[str, Mapping[str, Any] | None], metrics: Sequence[Mapping[str, Any]], *,
                 dra: bool) -> Finding:
    """The finding of ``cloudwatch-addon`` from each fleet cluster's DescribeAddon ``addon`` (None: the cluster has
    none) and ListMetrics' series of :data:`NEURON_NODE_METRIC` in ``ContainerInsights``; ``dra``: the fleet has DRA
    node groups, whose pods' Neuron metrics verify cannot tell apart."""
    pin = CLOUDWATCH_ADDON_VERSION
    if not addons:
        return not_yet("no EKS cluster carries the fleet's tag", "run it again after the EKS stack's deploy")
    missing = sorted(c for c, a in addons.items() if a is None)
    if missing:
        return broken(f"no {CLOUDWATCH_ADDON_NAME} add-on on {', '.join(missing)}",
                      "the kit creates it on every cluster: deploy the EKS stack again (cdk deploy)")
    found = {c: a for c, a in addons.items() if a is not None}
    other = {c: str(a.get("addonVersion")) for c, a in found.items() if a.get("addonVersion") != pin}
    if other:
        return broken("; ".join(f"{c} runs {v}" for c, v in sorted(other.items())) + f", the kit pins {pin}",
                      f"cdk deploy puts {pin} back (a change made outside the stack); to keep the other version, "
                      "set neuronfleet.facts.eks_observability.CLOUDWATCH_ADDON_PIN to it, checked against its "
                      "chart's values (docs/checks.md cloudwatch-addon)")
    unwell = {c: a for c, a in found.items() if a.get("status") != "ACTIVE"}
    if unwell:
        return broken("; ".join(f"{c}: {a.get('status')} " + ", ".join(
            str(i.get("code")) for i in (a.get("health") or {}).get("issues", [])) for c, a in sorted(unwell.items())),
            f"aws eks describe-addon --cluster-name <cluster> --addon-name {CLOUDWATCH_ADDON_NAME} --query "
            "addon.health (the issues' messages say what to fix)")
    publishing = {d.get("Value") for m in metrics for d in m.get("Dimensions", []) if d.get("Name") == "ClusterName"}
    silent = sorted(set(found) - publishing)
    if silent:
        return not_yet(f"{pin} on every cluster; no {NEURON_NODE_METRIC} for {', '.join(silent)} in the last 2 weeks",
                       "run it again once a Neuron node has run 10 minutes (Capacity Block node groups start at 0)")
    seen = f"{pin} on {', '.join(sorted(found))}, each publishing {NEURON_NODE_METRIC}"
    if dra:
        return unchecked(f"{seen}; DRA node groups' pods: not read by verify",
                         "by hand: aws cloudwatch list-metrics --namespace ContainerInsights --metric-name "
                         "pod_neuroncore_utilization --dimensions Name=ClusterName,Value=<cluster> lists a pod of a "
                         "dra node group")
    return holds(seen)


def _uses_dra(fleet: Fleet) -> bool:
    return any(c.eks.dra or any(g.dra for g in c.eks.node_groups)
               for c in fleet.training_clusters if c.scheduler == "eks" and c.eks is not None)


def _run_cloudwatch_addon(context: Context) -> Finding:
    clusters = context.reads.eks_clusters()
    if isinstance(clusters, Failed):
        return unreadable(clusters, CLOUDWATCH_ADDON)
    addons: dict[str, Mapping[str, Any] | None] = {}
    for cluster in clusters:
        addon = context.reads.eks_addon(cluster, CLOUDWATCH_ADDON_NAME)
        if isinstance(addon, Failed):
            return unreadable(addon, CLOUDWATCH_ADDON)
        addons[cluster] = addon
    metrics = context.reads.metrics(CONTAINER_INSIGHTS_NAMESPACE, NEURON_NODE_METRIC) if addons else []
    if isinstance(metrics, Failed):
        return unreadable(metrics, CLOUDWATCH_ADDON)
    return addon_pinned(addons, metrics, dra=_uses_dra(context.fleet))


CLOUDWATCH_ADDON = Check(
    "cloudwatch-addon", f"the CloudWatch Observability add-on version the kit pins ({CLOUDWATCH_ADDON_VERSION}, "
    "assumed from its chart) exists for the cluster's Kubernetes version, is the one deployed, and publishes the Neuron "
    "metrics in ContainerInsights, per pod on DRA nodes too",
    f"aws eks describe-addon-versions --addon-name {CLOUDWATCH_ADDON_NAME} --kubernetes-version "
    f"{DEFAULT_KUBERNETES_VERSION} --query 'addons[].addonVersions[].addonVersion' (lists {CLOUDWATCH_ADDON_VERSION}); "
    "aws eks describe-addon "
    f"--cluster-name <cluster> --addon-name {CLOUDWATCH_ADDON_NAME} --query addon.addonVersion (prints "
    f"{CLOUDWATCH_ADDON_VERSION}); aws cloudwatch list-metrics --namespace ContainerInsights --metric-name "
    "node_neuroncore_utilization", run=_run_cloudwatch_addon,
    permission="tag:GetResources, eks:DescribeAddon, cloudwatch:ListMetrics", applies=applies.eks)
KUEUE_METRICS = Check(
    "kueue-metrics", "the kit's Kueue scraper reaches Kueue's metrics Service and CloudWatch makes "
    "kueue_pending_workloads {ClusterName, cluster_queue, status} in ContainerInsights/Prometheus",
    "aws cloudwatch list-metrics --namespace ContainerInsights/Prometheus --metric-name kueue_pending_workloads; "
    "kubectl -n neuronfleet-metrics logs deploy/neuronfleet-kueue-metrics",
    manual="verify reads no CloudWatch metric list yet, and the scraper's log is in the cluster",
    applies=applies.sharing)

CHECKS: tuple[Check, ...] = (
    ULTRASERVER_LABEL, ULTRASERVER_PLACEMENT, CLOUDWATCH_ADDON, KUEUE_METRICS, EKS_PINS, POOL_RELIANCES, MONITOR_DIGEST,
    POOL_RBAC, POD_SECURITY, POD_IDENTITY_TAGS, NEURON_CHART_RENDER, KUBE_SCHEDULER, NODE_MONITORING_AGENT,
    POD_IDENTITY_AGENT_VERSION, NODE_REPAIR_REPLACE)
