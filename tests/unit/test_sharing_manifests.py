"""The shared pool's Kubernetes objects: Kueue's validated against Kueue 0.19.2's own CRD schemas (tests/data/kueue,
strict: no field the CRD does not declare), the rest against the Kubernetes 1.36 schemas (kubernetes-validate), next
to the publisher's own examples; and what they say: one cohort, inference owns and lends all but its floor, training
borrows, inference above training, the checkpoint signal mounted in the training pods."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from neuronfleet.facts.eks_labels import EFA_RESOURCE, NEURON_RESOURCE, NODE_GROUP_LABEL
from neuronfleet.facts.eks_pins import DEFAULT_KUBERNETES_VERSION
from neuronfleet.settings.eks import NeuronNodegroupSettings
from neuronfleet.sharing import manifests, pins
from neuronfleet_contract.pool_schedule import ANNOTATION_CHECKPOINT_BY, CHECKPOINT_FILE, LABEL_ROLE, PoolSchedule

DATA = Path(__file__).resolve().parents[1] / "data" / "kueue"
POOL = NeuronNodegroupSettings(name="pool", instance_type="trn2.48xlarge", count=4)
SCHEDULE = PoolSchedule.build(pool="rainier", time_zone="America/New_York", day=["07:00-23:00"], pool_devices=64,
                              replica_devices=4, day_replicas=16, night_floor=4, checkpoint_deadline=30)
KINDS = {"ClusterQueue": "clusterqueues", "LocalQueue": "localqueues", "ResourceFlavor": "resourceflavors",
         "WorkloadPriorityClass": "workloadpriorityclasses", "Topology": "topologies"}


def _strict(schema: Any) -> Any:
    """The CRD's schema with no undeclared field allowed (the API server would prune one silently)."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if "properties" in out and "additionalProperties" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def _schemas() -> dict[str, dict]:
    out = {}
    for kind, plural in KINDS.items():
        crd = yaml.safe_load((DATA / f"kueue.x-k8s.io_{plural}.yaml").read_text())
        version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
        out[kind] = _strict(version["schema"]["openAPIV3Schema"])
    return out


SCHEMAS = _schemas()


def kueue_valid(obj: dict) -> None:
    assert obj["apiVersion"] == pins.KUEUE_API
    jsonschema.validate(obj, SCHEMAS[obj["kind"]])


def publisher_examples() -> list[dict]:
    return [o for name in ("single-clusterqueue-setup.yaml", "resource-flavor-tolerations.yaml")
            for o in yaml.safe_load_all((DATA / name).read_text()) if o]


@pytest.mark.parametrize("obj", publisher_examples(), ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_the_publisher_examples_validate(obj: dict) -> None:
    kueue_valid(obj)


@pytest.mark.parametrize("obj", manifests.kueue_objects(SCHEDULE, POOL),
                         ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_kueue_objects_validate_against_the_crds(obj: dict) -> None:
    kueue_valid(obj)


def test_the_crd_validator_is_live() -> None:
    queue = copy.deepcopy(by_kind("ClusterQueue")[0])
    queue["spec"]["cohort"] = "rainier"  # v1beta1's name
    with pytest.raises(jsonschema.ValidationError):
        kueue_valid(queue)
    queue = copy.deepcopy(by_kind("ClusterQueue")[0])
    queue["spec"]["preemption"]["reclaimWithinCohort"] = "Always"
    with pytest.raises(jsonschema.ValidationError):
        kueue_valid(queue)


def kubernetes_objects() -> list[dict]:
    return [*manifests.schedule_access(SCHEDULE, deployment="serve"), *manifests.training_acknowledge_access(),
            *manifests.training_job(SCHEDULE, POOL),
            manifests.inference_deployment(SCHEDULE, POOL, image="public.ecr.aws/example/serve:1"),
            manifests.inference_autoscaler(SCHEDULE)]


@pytest.mark.parametrize("obj", kubernetes_objects(),
                         ids=lambda o: f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}")
def test_kubernetes_objects_validate(obj: dict) -> None:
    kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)


def by_kind(kind: str) -> list[dict]:
    return [o for o in manifests.kueue_objects(SCHEDULE, POOL) if o["kind"] == kind]


def test_one_cohort_inference_owns_and_lends_whole_nodes() -> None:
    """4 nodes of 16; a floor of 4 x 4 = 16 devices keeps one node, so 3 whole nodes (48) are lent."""
    inference, training = by_kind("ClusterQueue")
    assert inference["spec"]["cohortName"] == training["spec"]["cohortName"] == "rainier"
    [group] = inference["spec"]["resourceGroups"]
    assert set(group["coveredResources"]) == {NEURON_RESOURCE, EFA_RESOURCE, "cpu", "memory"}
    resources = {r["name"]: r for r in group["flavors"][0]["resources"]}
    assert resources[NEURON_RESOURCE] == {"name": NEURON_RESOURCE, "nominalQuota": 64, "lendingLimit": 48}
    assert resources["cpu"]["nominalQuota"] == 4 * 192 and resources["memory"]["nominalQuota"] == "8192Gi"
    assert resources[EFA_RESOURCE]["nominalQuota"] == 4 * 16
    assert inference["spec"]["preemption"]["reclaimWithinCohort"] == "LowerPriority"
    training_resources = training["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert all(r["nominalQuota"] == 0 and "borrowingLimit" not in r for r in training_resources)
    [flavor] = by_kind("ResourceFlavor")
    assert flavor["spec"]["nodeLabels"] == {NODE_GROUP_LABEL: "pool"}
    assert "stopPolicy" not in inference["spec"] and "stopPolicy" not in training["spec"]


def test_the_lend_is_whole_nodes_not_the_devices_the_floor_leaves() -> None:
    """A floor of 5 x 4 = 20 devices spills onto a second node: 2 whole nodes (32) are lent, not 64 - 20 = 44
    (Kueue's TestSchedule "hierarchical cohort respects lending limit when borrowing": a borrower never holds more
    than the lending limit, so a lend of part of a node would admit no 16-device pod anyway)."""
    five = PoolSchedule.build(pool="rainier", time_zone="UTC", day=["07:00-23:00"], pool_devices=64,
                              replica_devices=4, day_replicas=16, night_floor=5, checkpoint_deadline=30)
    inference = next(o for o in manifests.kueue_objects(five, POOL) if o["kind"] == "ClusterQueue")
    neuron = inference["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert neuron == {"name": NEURON_RESOURCE, "nominalQuota": 64, "lendingLimit": 32}
    job = manifests.training_job(five, POOL)[1]["spec"]
    assert job["completions"] == job["parallelism"] == 2  # the job the lend admits: 2 x 16 = 32
    with pytest.raises(ValueError, match=r"nodes: got 3; allowed: at most 2"):
        manifests.training_job(five, POOL, nodes=3)


@pytest.mark.parametrize(("floor", "message"), [
    (13, r"night_floor: got 13; allowed: at most 12 replicas of 4 devices, so that the night lends training one "
         r"job: 1 whole node\(s\) of 16 Neuron devices \(4 x trn2.48xlarge"),
    (0, r"night_floor: got 0; allowed: 1 or more: it is the inference HorizontalPodAutoscaler's minReplicas")])
def test_a_schedule_that_lends_no_job_is_refused(floor: int, message: str) -> None:
    schedule = PoolSchedule.build(pool="rainier", time_zone="UTC", day=["07:00-23:00"], pool_devices=64,
                                  replica_devices=4, day_replicas=16, night_floor=floor, checkpoint_deadline=30)
    with pytest.raises(ValueError, match=message):
        manifests.kueue_objects(schedule, POOL)


def test_placement_is_topology_aware_at_the_node() -> None:
    """The flavor names a Topology whose one level is the node: Kueue's TAS then admits a training pod only where
    a whole node is free (non-TAS pods counted). The training pods carry no podset-required-topology annotation at
    the hostname level: that would put every pod of a multi-node Job on one node."""
    [topology] = by_kind("Topology")
    [flavor] = by_kind("ResourceFlavor")
    assert topology["spec"]["levels"] == [{"nodeLabel": "kubernetes.io/hostname"}]
    assert flavor["spec"]["topologyName"] == topology["metadata"]["name"] == "rainier"
    pod = manifests.training_job(SCHEDULE, POOL)[1]["spec"]["template"]
    assert not [k for k in pod["metadata"].get("annotations", {}) if k.startswith("kueue.x-k8s.io/podset-")]


def test_the_training_job_survives_a_reclaim() -> None:
    """Indexed with retries per index, disruptions ignored (Kubernetes' TestMatchPodFailurePolicy "ignore rule
    matched for pod conditions": Ignore on DisruptionTarget=True), Guaranteed cpu and memory below the node's."""
    job = manifests.training_job(SCHEDULE, POOL)[1]["spec"]
    assert job["completionMode"] == "Indexed" and job["backoffLimitPerIndex"] >= 1 and "backoffLimit" not in job
    assert job["podFailurePolicy"] == {"rules": [{"action": "Ignore", "onPodConditions": [
        {"type": "DisruptionTarget", "status": "True"}]}]}
    assert job["template"]["spec"]["restartPolicy"] == "Never"
    [container] = job["template"]["spec"]["containers"]
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert container["resources"]["requests"]["cpu"] == "172"  # 90 % of trn2.48xlarge's 192 vCPUs
    assert container["resources"]["requests"]["memory"] == "1843Gi"  # 90 % of its 2048 GiB
    assert job["completions"] * 16 <= 48  # within the lend


def test_inference_follows_an_autoscaler_within_the_nights_bounds() -> None:
    hpa = manifests.inference_autoscaler(SCHEDULE)
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "serve"}
    assert hpa["spec"]["minReplicas"] == hpa["spec"]["maxReplicas"] == SCHEDULE.night_floor
    container = manifests.inference_deployment(SCHEDULE, POOL, image="x")["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"] == container["resources"]["limits"] == {
        NEURON_RESOURCE: "4", "cpu": "43", "memory": "460Gi"}  # a quarter of the node's 90 %


def test_inference_above_training() -> None:
    priorities = {o["metadata"]["name"]: o["value"] for o in by_kind("WorkloadPriorityClass")}
    assert priorities["rainier-inference"] > priorities["rainier-training"]
    job = manifests.training_job(SCHEDULE, POOL)[1]
    deployment = manifests.inference_deployment(SCHEDULE, POOL, image="x")
    assert job["metadata"]["labels"][pins.PRIORITY_LABEL] == "rainier-training"
    assert job["metadata"]["labels"][pins.QUEUE_LABEL] == "rainier-training"
    assert deployment["metadata"]["labels"][pins.QUEUE_LABEL] == "rainier-inference"
    assert deployment["spec"]["template"]["metadata"]["labels"][LABEL_ROLE] == "inference"


def test_the_training_pod_reads_the_signal_and_has_its_grace() -> None:
    pod = manifests.training_job(SCHEDULE, POOL)[1]["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == pins.TRAINING_GRACE_SECONDS
    [volume] = [v for v in pod["volumes"] if v["name"] == "checkpoint-signal"]
    assert volume["downwardAPI"]["items"] == [{"path": "checkpoint-by", "fieldRef": {
        "fieldPath": f"metadata.annotations['{ANNOTATION_CHECKPOINT_BY}']"}}]
    [mount] = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "checkpoint-signal"]
    assert f"{mount['mountPath']}/checkpoint-by" == CHECKPOINT_FILE


def test_a_schedule_that_is_not_the_node_group_is_refused() -> None:
    with pytest.raises(ValueError, match=r"pool_devices: got 64; allowed: the node group's 32"):
        manifests.kueue_objects(SCHEDULE, NeuronNodegroupSettings(name="pool", instance_type="trn2.48xlarge", count=2))


def test_the_schedule_function_may_do_no_more() -> None:
    """Namespaced Roles in the two workload namespaces only (no ClusterRole), resourceNames where the names are
    known: the training LocalQueue, the inference autoscaler; what each call needs is tested against a day's calls
    in tests/moto/test_pool_schedule_moto.py."""
    access = manifests.schedule_access(SCHEDULE, deployment="serve")
    group = manifests.schedule_group(SCHEDULE.pool)
    assert {o["kind"] for o in access} == {"Role", "RoleBinding"}
    rules = {(o["kind"], o["metadata"].get("namespace", "")): o["rules"] for o in access if o["kind"] == "Role"}
    assert rules == {
        ("Role", "neuronfleet-serving"): [
            {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "resourceNames": ["serve"],
             "verbs": ["get", "patch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
        ("Role", "neuronfleet-training"): [
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues"], "resourceNames": ["rainier-training"],
             "verbs": ["get", "patch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "patch"]}]}
    bindings = [o for o in access if o["kind"].endswith("Binding")]
    assert len(bindings) == 2 and all(b["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                                         "name": group}] and b["roleRef"]["name"] == group
                                      for b in bindings)


def test_each_queue_admits_its_roles_namespace_only() -> None:
    queues = {q["metadata"]["name"]: q["spec"]["namespaceSelector"] for q in by_kind("ClusterQueue")}
    assert queues == {"rainier-inference": {"matchLabels": {"kubernetes.io/metadata.name": "neuronfleet-serving"}},
                      "rainier-training": {"matchLabels": {"kubernetes.io/metadata.name": "neuronfleet-training"}}}
    local = {q["metadata"]["name"]: q["metadata"]["namespace"] for q in by_kind("LocalQueue")}
    assert local == {"rainier-inference": "neuronfleet-serving", "rainier-training": "neuronfleet-training"}


def test_write_examples(tmp_path: Path) -> None:
    written = manifests.write_examples(SCHEDULE, POOL, tmp_path, inference_image="public.ecr.aws/example/serve:1")
    assert [p.name for p in written] == ["pool-training-job.yaml", "pool-inference.yaml"]
    docs = [d for p in written for d in yaml.safe_load_all(p.read_text())]
    assert [d["kind"] for d in docs] == ["Service", "Job", "Deployment"]  # the autoscaler is SharingPool's
    for doc in docs:
        kubernetes_validate.validate(doc, DEFAULT_KUBERNETES_VERSION, strict=True)
    assert docs[1]["metadata"]["labels"][pins.QUEUE_LABEL] == "rainier-training"
    assert docs[2]["spec"]["replicas"] == SCHEDULE.night_floor


def test_queue_labels_only_where_kueue_reads_them() -> None:
    """Kueue reads the queue and priority from the Job's and the Deployment's own labels; selectors and the pods keep
    theirs (a selector is immutable; the pods get the pool's role labels the schedule function selects on)."""
    service, job = manifests.training_job(SCHEDULE, POOL)
    deployment = manifests.inference_deployment(SCHEDULE, POOL, image="x")
    pod = job["spec"]["template"]
    for labels in (service["spec"]["selector"], pod["metadata"]["labels"], deployment["spec"]["selector"]["matchLabels"],
                   deployment["spec"]["template"]["metadata"]["labels"],
                   pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
                       "labelSelector"]["matchLabels"]):
        assert pins.QUEUE_LABEL not in labels and pins.PRIORITY_LABEL not in labels
    assert pod["metadata"]["labels"][LABEL_ROLE] == "training"
    assert LABEL_ROLE not in service["spec"]["selector"]


@pytest.mark.parametrize(("floor", "allowed"), [
    (5, "at most 4 replicas of 4 devices, so that the night lends training one job: 1 whole node(s) of 16 Neuron "
        "devices (2 x trn2.48xlarge in the pool"),
    (0, "1 or more: it is the inference HorizontalPodAutoscaler's minReplicas")])
def test_the_fleet_files_sharing_section_refuses_a_night_that_lends_no_job(floor: int, allowed: str) -> None:
    """config/eks.yaml's shape (2 x 16 devices, replicas of 4): a floor of 4 keeps one node and lends the other;
    5 keeps both and lends none: refused at synth, naming the field (so is 0: the autoscaler's minReplicas)."""
    from neuronfleet.core.problems import InvalidSettings
    from neuronfleet.settings.eks import NeuronEksClusterSettings
    from neuronfleet.settings.sharing import SharingSettings
    from neuronfleet.settings.training import Capacity

    group = NeuronNodegroupSettings(name="pool", instance_type="trn2.48xlarge", count=2, capacity=Capacity.odcr(
        reservation_id="cr-0123456789abcdef0", availability_zone="us-east-2b"))
    cluster = NeuronEksClusterSettings(node_groups=(group,))
    ok = SharingSettings(time_zone="UTC", day=("07:00-23:00",), replica_devices=4, day_replicas=8, night_floor=4,
                         checkpoint_deadline_minutes=30)
    assert ok.pool_schedule(cluster, "p").night_floor == 4
    with pytest.raises(InvalidSettings) as caught:
        ok.model_copy(update={"night_floor": floor}).pool_schedule(cluster, "p")
    [problem] = caught.value.problems
    assert problem.path == "night_floor" and allowed in problem.allowed


def test_the_fleet_files_sharing_section_refuses_a_dra_node_group() -> None:
    """A pool's quota and pods are in aws.amazon.com/neuron, which a DRA node group's pods never request (and Kueue
    0.19.2 admits a DRA claim only with a DeviceClass mapping the kit does not set: facts.kueue.TAS_DRA): refused at
    synth naming node_group, as SharingPool refuses it (tests/constructs/test_eks_placement.py)."""
    from neuronfleet.core.problems import InvalidSettings
    from neuronfleet.settings.eks import NeuronEksClusterSettings
    from neuronfleet.settings.sharing import SharingSettings
    from neuronfleet.settings.training import Capacity

    group = NeuronNodegroupSettings(
        name="ultra", instance_type="trn2u.48xlarge", count=4, allow_unlisted_region=True, device_plugin=False,
        dra=True, capacity=Capacity.capacity_block(resource_group_arn="arn:aws:resource-groups:us-east-2:111111111111:"
                                                   "group/ultra", availability_zone="us-east-2b"))
    sharing = SharingSettings(time_zone="UTC", day=("07:00-23:00",), replica_devices=4, day_replicas=8, night_floor=4,
                              checkpoint_deadline_minutes=30)
    with pytest.raises(InvalidSettings) as caught:
        sharing.pool_schedule(NeuronEksClusterSettings(node_groups=(group,)), "p")
    [problem] = caught.value.problems
    assert problem.path == "node_group" and problem.value == "ultra"
    assert problem.allowed.startswith("a node group on the device plugin: 'ultra' hands out its devices by DRA")
