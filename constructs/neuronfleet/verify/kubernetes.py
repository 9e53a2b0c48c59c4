"""The EKS and Kubernetes rows of docs/checks.md as checks."""

from __future__ import annotations

from . import applies
from .registry import Check

KUBERNETES = "verify reads no Kubernetes API yet (the command is listed for you to run with kubectl)"

EKS_PINS = Check(
    "eks-pins", "the EKS path's pins and images (Neuron chart 1.10.0's values keys, Kubernetes 1.36 with an AL2023 "
    "Neuron AMI, python3 in the neuron-monitor image)", "helm show values ... --version 1.10.0; aws eks "
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

CHECKS: tuple[Check, ...] = (EKS_PINS, POOL_RELIANCES, MONITOR_DIGEST, POOL_RBAC, POD_SECURITY, POD_IDENTITY_TAGS)
