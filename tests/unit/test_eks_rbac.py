"""The kit's RBAC evaluator (neuronfleet/eks/rbac.py) on Kubernetes' own examples, copied verbatim from "Using RBAC
Authorization" (tests/data/k8s-rbac), asked what the page says each one allows; then on the kit's own objects: no
ClusterRole of the kit's may patch pods, training's service account cannot touch serving's pods, serving's has no
right at all."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from neuronfleet.eks import rbac
from neuronfleet.eks.manifests import (
    SERVING_NAMESPACE,
    SERVING_SERVICE_ACCOUNT,
    TRAINING_NAMESPACE,
    TRAINING_SERVICE_ACCOUNT,
)
from neuronfleet.sharing import manifests as sharing
from neuronfleet_contract.pool_schedule import PoolSchedule

DOCS = [o for o in yaml.safe_load_all(
    (Path(__file__).resolve().parents[1] / "data" / "k8s-rbac" / "kubernetes-docs-examples.yaml").read_text()) if o]
JANE, DAVE = rbac.Subject("jane"), rbac.Subject("dave")
MANAGER = rbac.Subject("erin", ("manager", "system:authenticated"))
R = rbac.Request


def test_the_examples_are_the_pages() -> None:
    assert [(o["kind"], o["metadata"]["name"]) for o in DOCS] == [
        ("Role", "pod-reader"), ("ClusterRole", "secret-reader"), ("RoleBinding", "read-pods"),
        ("RoleBinding", "read-secrets"), ("ClusterRoleBinding", "read-secrets-global"),
        ("Role", "pod-and-pod-logs-reader"), ("Role", "configmap-updater")]


@pytest.mark.parametrize(("subject", "request_", "expected"), [
    # "This allows "jane" to read pods in the "default" namespace."
    (JANE, R("get", "pods", namespace="default", name="web-0"), True),
    (JANE, R("list", "pods", namespace="default"), True),
    (JANE, R("watch", "pods", namespace="default"), True),
    (JANE, R("list", "pods", namespace="kube-system"), False),
    (JANE, R("delete", "pods", namespace="default", name="web-0"), False),
    (JANE, R("get", "pods", namespace="default", name="web-0", subresource="log"), False),  # a subresource is its own
    (JANE, R("list", "pods"), False),  # across namespaces: a RoleBinding grants in its namespace only
    # "dave" ... "will only be able to read secrets in the "development" namespace"
    (DAVE, R("get", "secrets", namespace="development", name="db"), True),
    (DAVE, R("get", "secrets", namespace="default", name="db"), False),
    (DAVE, R("list", "secrets"), False),
    # "allows any user in the group "manager" to read secrets in any namespace"
    (MANAGER, R("list", "secrets"), True),
    (MANAGER, R("get", "secrets", namespace="kube-system", name="x"), True),
    (MANAGER, R("update", "secrets", namespace="kube-system", name="x"), False),
    (rbac.Subject("manager"), R("list", "secrets"), False),  # a user named like the group is not in it
])
def test_the_pages_bindings(subject: rbac.Subject, request_: rbac.Request, expected: bool) -> None:
    assert rbac.allowed(DOCS, subject, request_) is expected


BOUND = rbac.Subject("bound", ("bound",))


def _bind(role: str) -> list[dict]:
    """The page's Role ``role`` bound, in its namespace, to the group ``bound`` (this binding is ours)."""
    return [*DOCS, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": f"bind-{role}", "namespace": "default"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "bound"}]}]


@pytest.mark.parametrize(("request_", "expected"), [
    (R("get", "pods", namespace="default", name="web-0", subresource="log"), True),  # "pods/log"
    (R("list", "pods", namespace="default"), True),
    (R("get", "pods", namespace="default", name="web-0", subresource="exec"), False),
])
def test_a_subresource_is_named_with_a_slash(request_: rbac.Request, expected: bool) -> None:
    assert rbac.allowed(_bind("pod-and-pod-logs-reader"), BOUND, request_) is expected


@pytest.mark.parametrize(("request_", "expected"), [
    # "restricts its subject to only get or update a ConfigMap named my-configmap"
    (R("get", "configmaps", namespace="default", name="my-configmap"), True),
    (R("update", "configmaps", namespace="default", name="my-configmap"), True),
    (R("get", "configmaps", namespace="default", name="other"), False),
    (R("patch", "configmaps", namespace="default", name="my-configmap"), False),
    # a request that names no object never matches a rule with resourceNames: create, deletecollection, a list
    # without a metadata.name field selector (Kubernetes docs, Referring to resources; evaluation_helpers.go)
    (R("create", "configmaps", namespace="default"), False),
    (R("deletecollection", "configmaps", namespace="default"), False),
    (R("list", "configmaps", namespace="default"), False),
])
def test_resource_names(request_: rbac.Request, expected: bool) -> None:
    assert rbac.allowed(_bind("configmap-updater"), BOUND, request_) is expected


def test_a_list_restricted_by_name_needs_the_name() -> None:
    """"If you restrict list or watch by resourceName, clients must include a metadata.name field selector" (the
    page): the request then carries the name."""
    rule = {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["my-configmap"], "verbs": ["list"]}
    assert rbac.rule_allows(rule, R("list", "configmaps", namespace="default", name="my-configmap"))
    assert not rbac.rule_allows(rule, R("list", "configmaps", namespace="default"))


def test_wildcards() -> None:
    rule = {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["*"]}
    assert rbac.rule_allows(rule, R("patch", "deployments", "apps", "x", "d", "scale"))
    assert not rbac.rule_allows(rule, R("patch", "deployments", "apps", "x", "d"))


def test_service_accounts_by_name_and_namespace() -> None:
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "b", "namespace": "default"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
               "subjects": [{"kind": "ServiceAccount", "name": "builder"}]}  # namespace: the binding's
    request = R("list", "pods", namespace="default")
    assert rbac.allowed([*DOCS, binding], rbac.service_account("default", "builder"), request)
    assert not rbac.allowed([*DOCS, binding], rbac.service_account("ci", "builder"), request)


# --------------------------------------------------------------------------------------------- the kit's objects

SCHEDULE = PoolSchedule.build(pool="rainier", time_zone="America/New_York", day=["07:00-23:00"], pool_devices=64,
                              replica_devices=4, day_replicas=16, night_floor=4, checkpoint_deadline=30)
KIT = [*sharing.schedule_access(SCHEDULE, deployment="serve"), *sharing.training_acknowledge_access()]
TRAINING_SA = rbac.service_account(TRAINING_NAMESPACE, TRAINING_SERVICE_ACCOUNT)
SERVING_SA = rbac.service_account(SERVING_NAMESPACE, SERVING_SERVICE_ACCOUNT)
POD_WRITES = ("patch", "update", "delete", "create")


def patches_pods(role: dict) -> bool:
    """Whether any rule of ``role`` lets a write reach a pod, whatever its name."""
    return any(rbac.rule_allows(rule, R(verb, "pods", namespace="ns", name=name))
               for rule in role.get("rules", []) for verb in POD_WRITES
               for name in (*rule.get("resourceNames", ()), "any-pod", ""))


def test_the_schedule_holds_no_cluster_wide_right() -> None:
    """Issue 39: the schedule function's rights are namespaced (Roles in serving's and training's namespaces): no
    ClusterRole, nothing on a ClusterQueue, nothing outside the two namespaces."""
    group = rbac.Subject("fn", (sharing.schedule_group("rainier"),))
    assert not [o for o in KIT if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    for request in (R("patch", "clusterqueues", "kueue.x-k8s.io", name="rainier-training"),
                    R("patch", "localqueues", "kueue.x-k8s.io", "kube-system", "rainier-training"),
                    R("patch", "localqueues", "kueue.x-k8s.io", SERVING_NAMESPACE, "rainier-inference"),
                    R("patch", "pods", namespace="kube-system", name="any"),
                    R("patch", "deployments", "apps", SERVING_NAMESPACE, "serve", "scale")):
        assert not rbac.allowed(KIT, group, request), request
    assert rbac.allowed(KIT, group, R("patch", "localqueues", "kueue.x-k8s.io", TRAINING_NAMESPACE, "rainier-training"))
    assert rbac.allowed(KIT, group, R("patch", "horizontalpodautoscalers", "autoscaling", SERVING_NAMESPACE, "serve"))
    roles = [o for o in KIT if o["kind"] == "Role"]
    assert not any(patches_pods(r) for r in roles if r["metadata"]["namespace"] != TRAINING_NAMESPACE)
    broken = {**roles[0], "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}]}
    assert patches_pods(broken)  # the check sees one


@pytest.mark.parametrize("verb", ["get", "list", "patch", "update", "delete"])
def test_training_cannot_touch_servings_pods(verb: str) -> None:
    assert not rbac.allowed(KIT, TRAINING_SA, R(verb, "pods", namespace=SERVING_NAMESPACE, name="serve-0"))
    assert not rbac.allowed(KIT, TRAINING_SA, R(verb, "pods", namespace="kube-system", name="serve-0"))


def test_training_acknowledges_on_its_own_namespaces_pods() -> None:
    assert rbac.allowed(KIT, TRAINING_SA, R("patch", "pods", namespace=TRAINING_NAMESPACE, name="train-0"))
    assert rbac.allowed(KIT, TRAINING_SA, R("get", "pods", namespace=TRAINING_NAMESPACE, name="train-0"))
    # the same service account name in another namespace is another account
    assert not rbac.allowed(KIT, rbac.service_account(SERVING_NAMESPACE, TRAINING_SERVICE_ACCOUNT),
                            R("patch", "pods", namespace=TRAINING_NAMESPACE, name="train-0"))


def test_serving_holds_no_right_in_the_cluster() -> None:
    for request in (R("get", "pods", namespace=SERVING_NAMESPACE, name="serve-0"),
                    R("patch", "pods", namespace=TRAINING_NAMESPACE, name="train-0"),
                    R("list", "pods", namespace=SERVING_NAMESPACE)):
        assert not rbac.allowed(KIT, SERVING_SA, request)


def test_the_schedules_group_is_the_pools_own() -> None:
    other = rbac.Subject("fn", (sharing.schedule_group("other-pool"),))
    assert not rbac.allowed(KIT, other, R("patch", "pods", namespace=TRAINING_NAMESPACE, name="train-0"))
    assert sharing.schedule_group("rainier") == "neuronfleet-pool-schedule-rainier"
