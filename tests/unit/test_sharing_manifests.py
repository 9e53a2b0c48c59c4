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
         "WorkloadPriorityClass": "workloadpriorityclasses"}


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
    queue = copy.deepcopy(manifests.kueue_objects(SCHEDULE, POOL)[1])
    queue["spec"]["cohort"] = "rainier"  # v1beta1's name
    with pytest.raises(jsonschema.ValidationError):
        kueue_valid(queue)
    queue = copy.deepcopy(manifests.kueue_objects(SCHEDULE, POOL)[1])
    queue["spec"]["preemption"]["reclaimWithinCohort"] = "Always"
    with pytest.raises(jsonschema.ValidationError):
        kueue_valid(queue)


def kubernetes_objects() -> list[dict]:
    return [*manifests.schedule_access(SCHEDULE, deployment="serve"), *manifests.training_acknowledge_access(),
            *manifests.training_job(SCHEDULE, POOL),
            manifests.inference_deployment(SCHEDULE, POOL, image="public.ecr.aws/example/serve:1")]


@pytest.mark.parametrize("obj", kubernetes_objects(),
                         ids=lambda o: f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}")
def test_kubernetes_objects_validate(obj: dict) -> None:
    kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)


def by_kind(kind: str) -> list[dict]:
    return [o for o in manifests.kueue_objects(SCHEDULE, POOL) if o["kind"] == kind]


def test_one_cohort_inference_owns_and_lends_all_but_its_floor() -> None:
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
    """Namespaced Roles in the two workload namespaces, resourceNames where the names are known, one ClusterRole on
    the training ClusterQueue only (cluster-scoped); what each call needs is tested against a day's calls in
    tests/moto/test_pool_schedule_moto.py."""
    access = manifests.schedule_access(SCHEDULE, deployment="serve")
    group = manifests.schedule_group(SCHEDULE.pool)
    rules = {(o["kind"], o["metadata"].get("namespace", "")): o["rules"] for o in access
             if o["kind"] in ("Role", "ClusterRole")}
    assert rules == {
        ("ClusterRole", ""): [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"],
                               "resourceNames": ["rainier-training"], "verbs": ["get", "patch"]}],
        ("Role", "neuronfleet-serving"): [
            {"apiGroups": ["apps"], "resources": ["deployments/scale"], "resourceNames": ["serve"],
             "verbs": ["get", "patch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
        ("Role", "neuronfleet-training"): [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "patch"]}]}
    bindings = [o for o in access if o["kind"].endswith("Binding")]
    assert len(bindings) == 3 and all(b["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
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
    assert [d["kind"] for d in docs] == ["Service", "Job", "Deployment"]
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
