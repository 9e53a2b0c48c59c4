"""config/eks.yaml's EKS stack (the session's one synth of that fleet): every namespace the stack puts an object in
exists before the object is applied (issue 40, "every namespace a chart's values put objects in is created (or the
feature is off)"). Read from the template as CloudFormation will apply it: each aws-cdk-lib kubectl manifest's objects
and each Helm release, and the DependsOn chain between them.

A namespace exists when it is Kubernetes' own (kube-system, default), when a manifest the object's resource depends
on (directly or not) holds its Namespace, when a Helm release the resource depends on creates it
(``CreateNamespace``), or, for a chart release, when the release itself creates it (``CreateNamespace``, or the
chart's own Namespace template: the Neuron chart's DRA driver namespace, ``draDriver.enabled``). The Neuron chart's
problem detector has no Namespace template: with ``npd.enabled`` its namespace must come from a manifest the release
depends on (tests/constructs/test_neuron_chart_render.py shows the chart's objects land there)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from neuronfleet.facts import eks_pins as pins

STACK = "train-pretrain"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
CHART = "Custom::AWSCDK-EKS-HelmChart"
KUBERNETES_OWN = {"kube-system", "default"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume", "StorageClass",
                  "CustomResourceDefinition", "DeviceClass", "Topology", "ResourceFlavor", "ClusterQueue",
                  "WorkloadPriorityClass"}


def _manifest(value: Any) -> list[dict[str, Any]]:
    """A kubectl resource's objects: its Manifest is JSON, or a Fn::Join of JSON with tokens inside string values
    (a role ARN), which become a placeholder."""
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        value = sep.join(p if isinstance(p, str) else "TOKEN" for p in parts)
    return list(json.loads(value))


def _namespace(obj: dict[str, Any]) -> str | None:
    """Where a namespaced object lands (no namespace: default, as kubectl applies it); None if cluster-scoped."""
    if obj["kind"] in CLUSTER_SCOPED:
        return None
    return str(obj["metadata"].get("namespace") or "default")


def _chart_own(props: dict[str, Any]) -> set[str]:
    """The namespaces a Helm release creates itself: its own with CreateNamespace, the DRA driver's (a Namespace
    template of the Neuron chart when draDriver.enabled)."""
    own = {props["Namespace"]} if props.get("CreateNamespace") else set()
    values = json.loads(props.get("Values") or "{}")
    if props["Chart"] == pins.CHARTS[pins.NEURON_CHART]["1.9.0"].chart and values.get("draDriver", {}).get("enabled"):
        own.add(pins.DRA_DRIVER_NAMESPACE)
    return own


def unmet(template: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(resource, kind/name, namespace) of every object whose namespace does not exist before it is applied."""
    resources = template["Resources"]
    creates: dict[str, set[str]] = {}
    for logical, res in resources.items():
        if res["Type"] == MANIFEST:
            creates[logical] = {o["metadata"]["name"] for o in _manifest(res["Properties"]["Manifest"])
                                if o["kind"] == "Namespace"}
        elif res["Type"] == CHART:
            creates[logical] = _chart_own(res["Properties"])

    def before(logical: str, seen: set[str] | None = None) -> set[str]:
        seen = set() if seen is None else seen
        for dep in resources[logical].get("DependsOn", []):
            if dep not in seen:
                seen.add(dep)
                before(dep, seen)
        return seen

    found = []
    for logical, res in resources.items():
        if res["Type"] not in (MANIFEST, CHART):
            continue
        existing = KUBERNETES_OWN | {n for dep in before(logical) for n in creates.get(dep, ())}
        props = res["Properties"]
        if res["Type"] == CHART:
            values = json.loads(props.get("Values") or "{}")
            needs = {props["Namespace"]} | ({pins.NPD_NAMESPACE} if values.get("npd", {}).get("enabled") else set())
            found += [(logical, f"release/{props['Release']}", n) for n in sorted(needs - existing - _chart_own(props))]
            continue
        made: set[str] = set()
        for obj in _manifest(props["Manifest"]):   # kubectl applies a manifest's objects in order
            namespace = _namespace(obj)
            if namespace is not None and namespace not in existing | made:
                found.append((logical, f"{obj['kind']}/{obj['metadata']['name']}", namespace))
            if obj["kind"] == "Namespace":
                made.add(obj["metadata"]["name"])
    return found


@pytest.fixture(scope="module")
def template(synth_fleet) -> dict[str, Any]:
    return synth_fleet("eks").template_json(STACK)


def test_every_object_lands_in_a_namespace_that_exists_before_it(template: dict[str, Any]) -> None:
    assert unmet(template) == []
    # what that covers on this fleet: the kit's namespaces, Kueue's (its release creates it) and the DRA driver's
    namespaces = {_namespace(o) for r in template["Resources"].values() if r["Type"] == MANIFEST
                  for o in _manifest(r["Properties"]["Manifest"])} - {None}
    assert namespaces == {"kube-system", "kueue-system", "neuronfleet-metrics", "neuronfleet-serving",
                          "neuronfleet-training"}
    releases = {p["Release"]: p for r in template["Resources"].values() if r["Type"] == CHART
                for p in [r["Properties"]]}
    assert pins.DRA_DRIVER_NAMESPACE in _chart_own(releases["neuron-dra"])
    assert releases["kueue"]["Namespace"] == "kueue-system" and releases["kueue"]["CreateNamespace"] is True


def _without_dependency(template: dict[str, Any], resource: str, on: str) -> dict[str, Any]:
    copy = json.loads(json.dumps(template))
    res = copy["Resources"][next(k for k in copy["Resources"] if k.startswith(resource))]
    res["DependsOn"] = [d for d in res.get("DependsOn", []) if not d.startswith(on)]
    return copy


def test_the_check_names_what_a_missing_namespace_leaves_out(template: dict[str, Any]) -> None:
    """The check is live: the pool's queues without their dependency on the namespaces, the Kueue release without
    CreateNamespace, and the problem detector turned on without its namespace, each named."""
    queues = unmet(_without_dependency(template, "EksClustermanifestQueues", "EksClustermanifestNamespaces"))
    assert {(kind.split("/")[0], ns) for _, kind, ns in queues} == {
        ("LocalQueue", "neuronfleet-serving"), ("LocalQueue", "neuronfleet-training")}
    copy = json.loads(json.dumps(template))
    releases = {p["Release"]: p for r in copy["Resources"].values() if r["Type"] == CHART
                for p in [r["Properties"]]}
    releases["kueue"]["CreateNamespace"] = False
    values = json.loads(releases["neuron-helm-chart"]["Values"])
    releases["neuron-helm-chart"]["Values"] = json.dumps(values | {"npd": {"enabled": True}})
    found = {(what, ns) for _, what, ns in unmet(copy)}
    assert ("release/kueue", "kueue-system") in found and ("release/neuron-helm-chart", pins.NPD_NAMESPACE) in found
    assert ("Role/neuronfleet-kueue-metrics", "kueue-system") in found   # the scraper's rights in Kueue's namespace
