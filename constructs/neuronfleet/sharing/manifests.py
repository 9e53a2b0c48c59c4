"""The Kubernetes objects of a shared pool: Kueue's queues and priorities, the schedule function's access, and the
example workloads wired to the schedule (an inference Deployment, a training Job that honours the checkpoint signal).

Pure functions returning plain dicts (no aws-cdk-lib). tests/unit/test_sharing_manifests.py validates the Kueue
objects against Kueue 0.19.2's own CRD schemas (tests/data/kueue) and the rest against the Kubernetes schemas of the
pinned version (kubernetes-validate), as tests/unit/test_eks_manifests.py does for the EKS path.

The quota is in Neuron devices, plus the node group's vCPUs, memory and EFA interfaces: Kueue admits a workload only
if every resource it requests is declared on the ClusterQueue (site/content/en/docs/tasks/manage/
administer_cluster_quotas.md @ v0.19.2: 'By default, administrators must specify all resources required by workloads
in the ClusterQueue's .spec.resourceGroups[*]'); declaring them keeps Kueue's controller configuration the chart's own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from neuronfleet_contract.pool_schedule import (
    ANNOTATION_CHECKPOINT_BY,
    CHECKPOINT_FILE,
    LABEL_POOL,
    LABEL_ROLE,
    PoolSchedule,
    Role,
    lendable_nodes,
    sharing_problems,
)

from ..eks import manifests as eks_manifests
from ..facts.eks_labels import NEURON_RESOURCE, NODE_GROUP_LABEL
from ..settings.eks import NeuronNodegroupSettings
from .pins import KUEUE_API, PRIORITY_LABEL, QUEUE_LABEL, RECLAIM, TRAINING_GRACE_SECONDS

Manifest = dict[str, Any]

INFERENCE_PRIORITY = 1000
TRAINING_PRIORITY = 100
"""WorkloadPriorityClass values: inference above training (Kueue compares the values; the numbers are the kit's)."""
SCHEDULE_ROLE = "neuronfleet-pool-schedule"
"""The prefix of a pool's schedule identity: :func:`schedule_group`."""
RBAC_API = "rbac.authorization.k8s.io/v1"
ROLE_NAMESPACES = {Role.INFERENCE: eks_manifests.SERVING_NAMESPACE, Role.TRAINING: eks_manifests.TRAINING_NAMESPACE}
"""Where each role's workloads, and its LocalQueue, live."""


def schedule_group(pool: str) -> str:
    """The Kubernetes group a pool's schedule function maps to (its EKS access entry's kubernetesGroups), and the name
    of its Roles, ClusterRole and bindings: one per pool, so one pool's function holds no right on another's."""
    return f"{SCHEDULE_ROLE}-{pool}"


HOSTNAME_LABEL = eks_manifests.HOSTNAME_LABEL
NAMESPACE_NAME_LABEL = eks_manifests.NAMESPACE_NAME_LABEL
topology_levels = eks_manifests.topology_levels
"""The pool's Topology levels: the node group's (eks.manifests.topology_levels, one home with the cluster's
placement queues): the node, under the UltraServer on an UltraServer node group."""


def names(pool: str) -> dict[str, str]:
    """The pool's Kueue object names: the cohort, its flavor and topology, each role's ClusterQueue, LocalQueue and
    priority."""
    return {"cohort": pool, "flavor": pool, "topology": pool,
            "inference_queue": f"{pool}-inference", "training_queue": f"{pool}-training",
            "inference_priority": f"{pool}-inference", "training_priority": f"{pool}-training"}


def training_nodes(schedule: PoolSchedule, group: NeuronNodegroupSettings) -> int:
    """The pool's example training Job's nodes: every node inference lends at night (whole UltraServers on an
    UltraServer node group), the most the training queue can admit. ValueError naming ``night_floor`` when that is
    not one job (the settings and SharingPool refuse such a schedule at synth with the same words:
    neuronfleet_contract.pool_schedule.sharing_problems)."""
    size = group.spec.ultraserver_size
    problems = sharing_problems(schedule, node_devices=group.spec.accelerators, job_nodes=size,
                                node_type=group.instance_type)
    if problems:
        raise ValueError("; ".join(str(p) for p in problems))
    return lendable_nodes(schedule, group.spec.accelerators) // size * size


def kueue_objects(schedule: PoolSchedule, group: NeuronNodegroupSettings) -> list[Manifest]:
    """A Topology (:func:`topology_levels`: the node, under the UltraServer on UltraServer node groups), the
    ResourceFlavor (the node group, on that topology), two ClusterQueues
    in one cohort, a LocalQueue each, two priorities.

    The inference ClusterQueue owns the whole pool's quota and lends whole nodes: ``lendingLimit`` on the Neuron
    devices is :func:`neuronfleet_contract.pool_schedule.lendable_nodes` times a node's devices (not the pool less
    the floor's devices: a training pod takes a whole node, and a lend of part of a node admits no pod). It reclaims
    what it lent from lower-priority workloads (``reclaimWithinCohort: LowerPriority``). The training ClusterQueue
    owns nothing and borrows (nominal quota 0, no borrowing limit: the lending limit bounds it,
    pkg/cache/scheduler/resource_node.go ``available()``). Neither ClusterQueue is ever stopped: the schedule gates
    training at its LocalQueue (a stopped ClusterQueue is left out of the scheduler's snapshot, so reclaim could not
    see its workloads: docs/sharing.md).

    The flavor's ``topologyName`` turns on Kueue's topology-aware scheduling for both queues: a workload is admitted
    only where its pods fit node by node, counting the pods Kueue does not manage (DaemonSets and the like), so a
    16-device training pod is admitted only on a node with all 16 devices free, and a workload that does not fit
    holds no quota (Kueue pkg/controller/tas/non_tas_usage_controller.go; pkg/scheduler/scheduler_tas_test.go
    TestScheduleForTAS "workload does not get scheduled as the node capacity is already used by a non-TAS pod")."""
    if schedule.pool_devices != group.count * group.spec.accelerators:
        raise ValueError(f"pool_devices: got {schedule.pool_devices}; allowed: the node group's "
                         f"{group.count * group.spec.accelerators} Neuron devices ({group.count} x {group.instance_type})")
    n = names(schedule.pool)
    quota = eks_manifests.node_group_quota(group)
    lend = training_nodes(schedule, group) * group.spec.accelerators

    def queue(name: str, *, nominal: bool, preemption: dict[str, Any]) -> Manifest:
        resources = []
        for resource, amount in quota.items():
            item: dict[str, Any] = {"name": resource, "nominalQuota": amount if nominal else 0}
            if nominal and resource == NEURON_RESOURCE:
                item["lendingLimit"] = lend
            resources.append(item)
        role = Role.INFERENCE if name == n["inference_queue"] else Role.TRAINING
        return {"apiVersion": KUEUE_API, "kind": "ClusterQueue",
                "metadata": {"name": name, "labels": {LABEL_POOL: schedule.pool}},
                "spec": {"cohortName": n["cohort"],  # admits its role's namespace only
                         "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: ROLE_NAMESPACES[role]}},
                         "resourceGroups": [{"coveredResources": list(quota),
                                             "flavors": [{"name": n["flavor"], "resources": resources}]}],
                         "preemption": preemption}}

    return [
        {"apiVersion": KUEUE_API, "kind": "Topology", "metadata": {"name": n["topology"]},
         "spec": {"levels": [{"nodeLabel": label} for label in topology_levels(group)]}},
        {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": n["flavor"]},
         "spec": {"nodeLabels": {NODE_GROUP_LABEL: group.name}, "topologyName": n["topology"],
                  "tolerations": [eks_manifests.neuron_toleration()]}},
        queue(n["inference_queue"], nominal=True,
              preemption={"reclaimWithinCohort": RECLAIM, "withinClusterQueue": "Never"}),
        queue(n["training_queue"], nominal=False,
              preemption={"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"}),
        *({"apiVersion": KUEUE_API, "kind": "LocalQueue",
           "metadata": {"name": n[f"{role}_queue"], "namespace": ROLE_NAMESPACES[role]},
           "spec": {"clusterQueue": n[f"{role}_queue"]}} for role in (Role.INFERENCE, Role.TRAINING)),
        {"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": n["inference_priority"]},
         "value": INFERENCE_PRIORITY, "description": f"{schedule.pool}: inference, reclaims what it lent"},
        {"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": n["training_priority"]},
         "value": TRAINING_PRIORITY, "description": f"{schedule.pool}: training, borrows the pool at night"},
    ]


def schedule_access(schedule: PoolSchedule, *, deployment: str) -> list[Manifest]:
    """What the schedule function may do in the cluster, and no more: exactly the calls lambdas/pool_schedule/adapters.py
    makes (``Pool``), each bound to :func:`schedule_group`, all in the two workload namespaces (no ClusterRole):

    ============================================  ====================================  ===========================
    call (adapters.Pool)                          request                               rule
    ============================================  ====================================  ===========================
    ``bounds``/``set_bounds``: GET/PATCH          get, patch the inference              a Role in serving's
    .../horizontalpodautoscalers/<deployment>     HorizontalPodAutoscaler (named as     namespace, resourceNames
                                                  the Deployment)                       [deployment]
    ``pods(inference)``: GET pods?labelSelector   list pods in serving's namespace      a Role there (list)
    ``queue``/``update_queue``: GET/PATCH         get, patch the training LocalQueue    a Role in training's
    .../localqueues/<training queue>                                                    namespace, resourceNames
                                                                                        [training queue]
    ``pods(training)``: GET pods?labelSelector    list pods in training's namespace     a Role there (list, patch)
    ``annotate``: PATCH pods/<name>               patch a pod in training's namespace
    ============================================  ====================================  ===========================

    ``list`` and the training pods' ``patch`` carry no resourceNames: a list names no object (Kubernetes docs,
    "Using RBAC Authorization", Referring to resources: a list restricted by name needs a ``metadata.name`` field
    selector, which a label-selected list does not send), and a Job's pods have generated names. No rule on pods
    outside the two namespaces, none on kube-system, none on the Deployment itself (the autoscaler sets its
    replicas), none on a ClusterQueue (cluster-scoped: the schedule never stops one)."""
    group = schedule_group(schedule.pool)
    queue = names(schedule.pool)["training_queue"]
    serving, training = ROLE_NAMESPACES[Role.INFERENCE], ROLE_NAMESPACES[Role.TRAINING]
    subjects = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]

    def role(namespace: str, rules: list[dict[str, Any]]) -> list[Manifest]:
        meta = {"name": group, "namespace": namespace}
        return [{"apiVersion": RBAC_API, "kind": "Role", "metadata": meta, "rules": rules},
                {"apiVersion": RBAC_API, "kind": "RoleBinding", "metadata": dict(meta),
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": group},
                 "subjects": subjects}]

    return [
        *role(serving, [
            {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "resourceNames": [deployment],
             "verbs": ["get", "patch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]),
        *role(training, [
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues"], "resourceNames": [queue],
             "verbs": ["get", "patch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "patch"]}]),
    ]


def training_acknowledge_access() -> list[Manifest]:
    """Training's service account may read and patch pods in training's namespace only: the job writes its checkpoint
    acknowledgement (``neuronfleet/checkpointed-at``) on its own pod. Serving's pods are in another namespace, which
    no Role of training's reaches."""
    name = "neuronfleet-checkpoint-ack"
    ns = eks_manifests.TRAINING_NAMESPACE
    return [
        {"apiVersion": RBAC_API, "kind": "Role", "metadata": {"name": name, "namespace": ns},
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "patch"]}]},
        {"apiVersion": RBAC_API, "kind": "RoleBinding", "metadata": {"name": name, "namespace": ns},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": eks_manifests.TRAINING_SERVICE_ACCOUNT, "namespace": ns}]},
    ]


def _labels(schedule: PoolSchedule, role: Role) -> dict[str, str]:
    n = names(schedule.pool)
    return {QUEUE_LABEL: n[f"{role}_queue"], PRIORITY_LABEL: n[f"{role}_priority"],
            LABEL_POOL: schedule.pool, LABEL_ROLE: str(role)}


def training_job(schedule: PoolSchedule, group: NeuronNodegroupSettings, *, name: str = "train",
                 nodes: int | None = None) -> list[Manifest]:
    """The EKS path's example training Job, queued on the pool's training queue at training priority, its pods
    labelled for the schedule, the checkpoint signal mounted at :data:`CHECKPOINT_FILE` (a downwardAPI volume of the
    pod's ``neuronfleet/checkpoint-by`` annotation, refreshed while the pod runs) and a grace period after SIGTERM of
    :data:`TRAINING_GRACE_SECONDS`. ``nodes``: default :func:`training_nodes` (every node the night lends); more
    than that is refused (the queue could never admit it).

    It survives a reclaim and resumes (eks.manifests.training_job): Indexed, ``backoffLimitPerIndex`` for real
    crashes, a ``podFailurePolicy`` that ignores disruptions, Guaranteed cpu and memory. Kueue evicts it by
    suspending it (its pods deleted, no failure counted); readmitted the next night, Kueue unsuspends it and the
    Job recreates the indexes not completed. The job's script must keep training after it checkpoints, until the
    drain suspends it: a process that exits 0 completes its index, and a Job whose indexes all completed never
    resumes."""
    most = training_nodes(schedule, group)
    if nodes is not None and nodes > most:
        raise ValueError(f"nodes: got {nodes}; allowed: at most {most} (the whole nodes the night lends training)")
    service, job = json.loads(json.dumps(eks_manifests.training_job(
        group, name=name, nodes=nodes or most, queue=names(schedule.pool)["training_queue"])))
    job["metadata"]["labels"] = job["metadata"]["labels"] | _labels(schedule, Role.TRAINING)  # the Job's only
    pod = job["spec"]["template"]
    pod["metadata"]["labels"] = pod["metadata"]["labels"] | {LABEL_POOL: schedule.pool, LABEL_ROLE: str(Role.TRAINING)}
    spec = pod["spec"]
    spec["terminationGracePeriodSeconds"] = TRAINING_GRACE_SECONDS
    container = spec["containers"][0]
    container["env"] += [{"name": "NEURONFLEET_CHECKPOINT_FILE", "value": CHECKPOINT_FILE},
                         {"name": "NEURONFLEET_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    directory, file = CHECKPOINT_FILE.rsplit("/", 1)
    container["volumeMounts"].append({"name": "checkpoint-signal", "mountPath": directory, "readOnly": True})
    spec["volumes"].append({"name": "checkpoint-signal", "downwardAPI": {"items": [
        {"path": file, "fieldRef": {"fieldPath": f"metadata.annotations['{ANNOTATION_CHECKPOINT_BY}']"}}]}})
    return [service, job]


HPA_CPU_UTILISATION = 70
"""The example autoscaler's target: average cpu utilisation of the replicas' requests (%), the kit's choice; a team
scales on its own serving metric (requests in flight, latency) the same way, within the same bounds."""


def inference_deployment(schedule: PoolSchedule, group: NeuronNodegroupSettings, *, name: str = "serve",
                         image: str) -> Manifest:
    """The EKS path's example Deployment on the pool's inference queue at inference priority, each replica on
    ``replica_devices`` Neuron devices with its share of the node's cpu and memory (Guaranteed). Its replicas are
    the autoscaler's (:func:`inference_autoscaler`); it starts at the night floor."""
    deployment = json.loads(json.dumps(
        eks_manifests.inference_deployment(group, name=name, image=image, replicas=schedule.night_floor)))  # unshared
    deployment["metadata"]["labels"] = deployment["metadata"]["labels"] | _labels(schedule, Role.INFERENCE)
    template = deployment["spec"]["template"]["metadata"]
    template["labels"] = template["labels"] | {LABEL_POOL: schedule.pool, LABEL_ROLE: str(Role.INFERENCE)}
    resources = {NEURON_RESOURCE: str(schedule.replica_devices)} | eks_manifests.whole_node_cpu_memory(
        group, schedule.replica_devices / group.spec.accelerators)
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": resources, "limits": resources}
    return deployment


def inference_autoscaler(schedule: PoolSchedule, *, name: str = "serve") -> Manifest:
    """The inference Deployment's HorizontalPodAutoscaler (autoscaling/v2, named as the Deployment): it follows
    demand; the schedule function sets only its bounds (``minReplicas``/``maxReplicas``: the night floor by night,
    ``day_min_replicas`` to ``day_replicas`` by day), never the Deployment's replicas. Created at the night's
    bounds. Its cpu metric needs a metrics source the kit does not install; without one it holds its bounds
    (``PoolSchedule.day_min_replicas``)."""
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": eks_manifests.SERVING_NAMESPACE,
                         "labels": {LABEL_POOL: schedule.pool}},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                     "minReplicas": schedule.night_floor, "maxReplicas": schedule.night_floor,
                     "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                         "type": "Utilization", "averageUtilization": HPA_CPU_UTILISATION}}}]}}


def examples(schedule: PoolSchedule, group: NeuronNodegroupSettings, *, inference_image: str,
             deployment: str = "serve") -> dict[str, list[Manifest]]:
    """File name -> the objects in it: the pool's training Job (queued, checkpoint signal mounted, every lent node)
    and its inference Deployment (queued at inference priority). Not its autoscaler: SharingPool creates that one
    (:func:`inference_autoscaler`), and one object has one owner."""
    return {"pool-training-job.yaml": training_job(schedule, group, name="pool-train"),
            "pool-inference.yaml": [inference_deployment(schedule, group, name=deployment, image=inference_image)]}


def write_examples(schedule: PoolSchedule, group: NeuronNodegroupSettings, directory: str | Path, *,
                   inference_image: str) -> list[Path]:
    """Write :func:`examples` as multi-document YAML files into ``directory``."""
    import yaml

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for file, objects in examples(schedule, group, inference_image=inference_image).items():
        path = out / file
        path.write_text(yaml.safe_dump_all([json.loads(json.dumps(o)) for o in objects], sort_keys=False))
        written.append(path)
    return written
