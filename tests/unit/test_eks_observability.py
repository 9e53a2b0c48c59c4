"""Metrics people use on EKS (issue 40): what publishes each metric the kit's alarms read, held to the publishers' own
files. Kueue's metric names and labels from its source at the pinned release (tests/data/kueue/metrics.go, verbatim);
the scraper's Deployment and its agent configuration from AWS's own Prometheus-on-EKS deployment
(tests/data/eks/cwagent-prometheus-eks.yaml, verbatim); the UltraServer split line from launch.py itself. Every object
validates against Kubernetes 1.36 (kubernetes-validate, strict)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from neuronfleet.eks import observability
from neuronfleet.facts import eks_observability as facts
from neuronfleet.facts.catalog import CATALOG, AcceleratorFamily
from neuronfleet.facts.eks_pins import DEFAULT_KUBERNETES_VERSION
from neuronfleet.node import launch

DATA = Path(__file__).resolve().parents[1] / "data"
OBJECTS = observability.kueue_metrics_objects(cluster_name="nf-eks", region="us-east-2")


def kind(name: str) -> list[dict[str, Any]]:
    return [o for o in OBJECTS if o["kind"] == name]


@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_the_scrapers_objects_validate(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)


def kueue_metrics_go() -> str:
    return (DATA / "kueue" / "metrics.go").read_text()


def kueue_metric(name: str) -> tuple[str, list[str]]:
    """(kind, labels) of a ``kueue_<name>`` metric as metrics.go at v0.19.2 declares it: ``prometheus.New<Kind>Vec``
    with Subsystem constants.KueueName ("kueue"), ``Name: "<name>"`` and its label list."""
    assert name.startswith("kueue_")
    found = re.search(r"prometheus\.New(Gauge|Counter|Histogram)Vec\(\s*prometheus\.\w+Opts\{\s*Subsystem:\s*"
                      r"constants\.KueueName,\s*Name:\s*\"" + re.escape(name[len("kueue_"):]) + r"\",.*?\}, append\("
                      r"\[\]string\{([^}]*)\}", kueue_metrics_go(), re.S)
    assert found, name
    return found.group(1), re.findall(r'"([^"]+)"', found.group(2))


def test_the_kueue_metrics_and_labels_are_the_releases() -> None:
    assert kueue_metric(facts.KUEUE_PENDING) == ("Gauge", ["cluster_queue", "status", "replica_role"])
    assert kueue_metric(facts.KUEUE_ADMITTED) == ("Counter", ["cluster_queue", "priority_class", "replica_role"])
    assert kueue_metric(facts.KUEUE_PREEMPTED) == ("Counter", ["preempting_cluster_queue", "reason", "replica_role"])
    assert kueue_metric(facts.KUEUE_EVICTED)[1][:2] == ["cluster_queue", "reason"]
    statuses = re.findall(r'PendingStatus(?:Active|Inadmissible)\s*=\s*"(\w+)"', kueue_metrics_go())
    assert tuple(statuses) == facts.PENDING_STATUSES
    # every declared dimension but the agent's ClusterName is a label of its metric
    for name, dims in facts.KUEUE_DIMENSIONS.items():
        assert dims[0] == "ClusterName" and set(dims[1:]) <= set(kueue_metric(name)[1]), name


def publisher() -> list[dict[str, Any]]:
    return [o for o in yaml.safe_load_all((DATA / "eks" / "cwagent-prometheus-eks.yaml").read_text()) if o]


def test_the_scraper_is_aws_own_prometheus_deployment() -> None:
    """Same agent image, environment and mount paths as AWS's deployment (its 'Please don't change' lines), one
    replica, the two configuration files under the keys the agent reads."""
    theirs = next(o for o in publisher() if o["kind"] == "Deployment")
    [ours] = kind("Deployment")
    their_c, our_c = theirs["spec"]["template"]["spec"]["containers"][0], ours["spec"]["template"]["spec"]["containers"][0]
    assert our_c["image"] == their_c["image"] == facts.CWAGENT_IMAGE
    assert our_c["env"] == their_c["env"]
    assert sorted(m["mountPath"] for m in our_c["volumeMounts"]) == sorted(m["mountPath"] for m in their_c["volumeMounts"])
    assert ours["spec"]["replicas"] == theirs["spec"]["replicas"] == 1
    their_keys = {k for o in publisher() if o["kind"] == "ConfigMap" for k in o["data"]}
    our_keys = {k for o in kind("ConfigMap") for k in o["data"]}
    assert our_keys == their_keys == {"cwagentconfig.json", "prometheus.yaml"}


def agent_config(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return json.loads(next(o["data"]["cwagentconfig.json"] for o in objects if o["kind"] == "ConfigMap"
                           and "cwagentconfig.json" in o["data"]))


def test_the_agent_config_has_the_publishers_shape() -> None:
    """The keys the kit writes are the ones AWS's deployment writes (the Prometheus input, its config path, the
    emf_processor's declarations with source_labels/label_matcher/dimensions/metric_selectors), plus the documented
    cluster_name, log_group_name and metric_namespace (facts.eks_observability)."""
    theirs = agent_config(publisher())["logs"]["metrics_collected"]["prometheus"]
    ours = agent_config(OBJECTS)["logs"]["metrics_collected"]["prometheus"]
    assert set(theirs) <= set(ours) and set(ours) - set(theirs) == {"cluster_name", "log_group_name"}
    assert ours["prometheus_config_path"] == theirs["prometheus_config_path"]
    assert set(ours["emf_processor"]) - set(theirs["emf_processor"]) == {"metric_namespace"}
    declaration_keys = {k for d in theirs["emf_processor"]["metric_declaration"] for k in d}
    assert all(set(d) == declaration_keys for d in ours["emf_processor"]["metric_declaration"])
    assert ours["log_group_name"] == "/aws/containerinsights/nf-eks/prometheus"
    assert ours["emf_processor"]["metric_namespace"] == facts.PROMETHEUS_NAMESPACE == "ContainerInsights/Prometheus"


def emitted(config: dict[str, Any], metric: str, labels: dict[str, str]) -> list[tuple[str, str, dict[str, str]]]:
    """What the agent emits for one scraped series, by its declarations (AWS's Container Insights Prometheus docs:
    a series whose ``source_labels`` values, joined by ';', match ``label_matcher`` and whose name matches a
    ``metric_selectors`` regex becomes one metric per dimension set): (namespace, name, dimensions)."""
    prometheus = config["logs"]["metrics_collected"]["prometheus"]
    labels = {**labels, "ClusterName": prometheus["cluster_name"]}
    out = []
    for d in prometheus["emf_processor"]["metric_declaration"]:
        source = ";".join(labels.get(k, "") for k in d["source_labels"])
        if re.fullmatch(d["label_matcher"], source) and any(re.search(s, metric) for s in d["metric_selectors"]):
            out += [(prometheus["emf_processor"]["metric_namespace"], metric, {k: labels[k] for k in dims})
                    for dims in d["dimensions"]]
    return out


def test_the_pending_series_becomes_the_metric_the_alarm_reads() -> None:
    """A series Kueue reports (ReportPendingWorkloads: cluster_queue, status, replica_role) scraped under the kit's
    job: one metric in ContainerInsights/Prometheus with ClusterName, cluster_queue and status. A series of another
    job (another Prometheus target) is not declared."""
    series = {"job": observability.KUEUE_JOB, "cluster_queue": "rainier-training", "status": "active",
              "replica_role": "standalone"}
    assert emitted(agent_config(OBJECTS), facts.KUEUE_PENDING, series) == [
        ("ContainerInsights/Prometheus", "kueue_pending_workloads",
         {"ClusterName": "nf-eks", "cluster_queue": "rainier-training", "status": "active"})]
    assert emitted(agent_config(OBJECTS), facts.KUEUE_PENDING, {**series, "job": "other"}) == []
    assert emitted(agent_config(OBJECTS), "kueue_admission_wait_time_seconds_bucket", series) == []


def test_the_scrape_keeps_kueues_metrics_service_only() -> None:
    config = yaml.safe_load(next(o for o in kind("ConfigMap") if "prometheus.yaml" in o["data"])["data"]["prometheus.yaml"])
    [job] = config["scrape_configs"]
    assert job["job_name"] == observability.KUEUE_JOB and job["scheme"] == "https"
    assert job["kubernetes_sd_configs"] == [{"role": "endpoints", "namespaces": {"names": ["kueue-system"]}}]
    [keep] = job["relabel_configs"]
    assert re.fullmatch(keep["regex"], "kueue-controller-manager-metrics-service;https")
    assert not re.fullmatch(keep["regex"], "kueue-webhook-service;https")
    [names] = job["metric_relabel_configs"]
    for name in facts.KUEUE_DIMENSIONS:
        assert re.fullmatch(names["regex"], name)
    assert not re.fullmatch(names["regex"], "kueue_build_info")


def test_the_scraper_may_read_kueue_metrics_and_no_more() -> None:
    [cluster_role] = kind("ClusterRole")
    assert cluster_role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    [role] = kind("Role")
    assert role["metadata"]["namespace"] == "kueue-system"
    assert role["rules"] == [{"apiGroups": [""], "resources": ["endpoints", "services", "pods"],
                              "verbs": ["get", "list", "watch"]}]
    [namespace] = kind("Namespace")
    assert namespace["metadata"]["name"] != facts.ADDON_NAMESPACE  # never the add-on's own namespace


def test_the_split_marker_is_what_launch_py_prints() -> None:
    """launch.order on a job with 3 of one UltraServer's 4 nodes raises the split; main prints it on stderr as
    'neuronfleet launch: ...' and exits 76. The metric filter's literal is in that line, and not in launch.py's other
    refusals (a node count that is not whole UltraServers, a node in no UltraServer)."""
    split = [launch.NodeRecord(index=i, address=f"10.0.0.{i}", server_id="a" * 16 if i < 3 else "b" * 16,
                               node_id=i % 4, modes=(1,)) for i in range(4)] + [
        launch.NodeRecord(index=4 + i, address=f"10.0.1.{i}", server_id="b" * 16, node_id=i + 1, modes=(1,))
        for i in range(3)] + [launch.NodeRecord(index=7, address="10.0.1.9", server_id="c" * 16, node_id=0, modes=(1,))]
    with pytest.raises(launch.TopologyError) as err:
        launch.order(split, 4)
    assert observability.SPLIT_MARKER in f"neuronfleet launch: {err.value}"
    with pytest.raises(launch.TopologyError) as err:
        launch.order(split[:6], 4)
    assert observability.SPLIT_MARKER not in str(err.value)
    assert launch.health_gate.EXIT_TOPOLOGY == 76


def test_no_utilisation_publisher_on_dra_node_groups() -> None:
    """Neuron: "Neuron Monitor does not currently support environments using the Neuron DRA (Dynamic Resource
    Allocation) Driver" (deploy/infrastructure/monitoring.rst @ 81ce03ae): no DaemonSet for a DRA group, one for each
    other group."""
    from neuronfleet.eks import manifests
    from neuronfleet.settings import Capacity
    from neuronfleet.settings.eks import NeuronNodegroupSettings

    dra = NeuronNodegroupSettings(name="ultra", instance_type="trn2u.48xlarge", count=4, dra=True, device_plugin=False,
                                  capacity=Capacity.capacity_block(
                                      resource_group_arn="arn:aws:resource-groups:us-east-2:111111111111:group/u"))
    plugin = NeuronNodegroupSettings(name="tune", instance_type="trn1.32xlarge", count=2)
    objects = manifests.utilisation_publisher([dra, plugin], namespace_metrics="NeuronFleet", region="us-east-2")
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "DaemonSet"] == ["neuronfleet-utilisation-tune"]


# ------------------------------------------------------------------------- the add-on's pinned version

CHART = DATA / "cloudwatch_observability"


def _blob(path: Path) -> str:
    body = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()


def test_the_charts_copies_are_verbatim() -> None:
    rows = re.findall(r"^\| `([^`]+)` \| .* \| ([0-9a-f]{40}) \|$", (CHART / "README.md").read_text(), re.M)
    assert sorted(name for name, _ in rows) == sorted(p.name for p in CHART.iterdir() if p.name != "README.md")
    assert len(rows) == 3
    for name, blob in rows:
        assert _blob(CHART / name) == blob, name


def release_notes() -> dict[str, str]:
    """Each release of RELEASE_NOTES at the tag: version -> its section's text."""
    parts = re.split(r"^amazon-cloudwatch-observability v(\S+) \(\d{4}-\d\d-\d\d\)$",
                     (CHART / "RELEASE_NOTES").read_text(), flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_the_addon_is_pinned_to_the_version_named_after_its_chart() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["name"] == facts.CLOUDWATCH_ADDON
    pin = facts.CLOUDWATCH_ADDON_PIN
    assert pin.name == facts.CLOUDWATCH_ADDON
    assert facts.CLOUDWATCH_ADDON_VERSION == pin.version == f"v{chart['version']}-eksbuild.1" == "v6.4.0-eksbuild.1"
    notes = release_notes()
    assert next(iter(notes)) == chart["version"]  # the newest release the tag's notes record is the chart's own
    # the publisher names an add-on version after the chart's (the notes of 3.7.0)
    assert "* Upgrade CloudWatch Agent Addon to v3.7.0-eksbuild.1\n" in notes["3.7.0"]
    # assumed, and says so: the chart's commit, AWS's naming, the third-party runs on 1.36, and the one check
    assert pin.confirmed is False and pin.as_of == facts.READ
    for cited in ("f4ad2e3abc4444162a74684aa69058a73bb399f6", "v3.7.0-eksbuild.1", "58629973946", "59852584107",
                  "69417180906", f"describe-addon-versions --addon-name {facts.CLOUDWATCH_ADDON} --kubernetes-version "
                  f"{DEFAULT_KUBERNETES_VERSION}", "cloudwatch-addon"):
        assert cited in pin.source, cited


def test_the_pinned_charts_values_are_what_the_kit_reads() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    # the CloudWatch-format (EMF) pipeline whose ContainerInsights metrics the kit names is on; the OTel one off
    assert values["containerInsights"]["enabled"] is True
    assert values["otelContainerInsights"]["enabled"] is False
    assert "Upgrade Neuron Monitor to v1.11.0" in release_notes()["6.4.0"]
    monitor = values["neuronMonitor"]
    assert monitor["enabled"] is True and monitor["image"]["tag"] == "1.11.0"
    [term] = monitor["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    [types] = [e["values"] for e in term["matchExpressions"]
               if e["key"] == "node.kubernetes.io/instance-type" and e["operator"] == "In"]
    assert set(CATALOG.types(AcceleratorFamily.TRAINIUM)) <= set(types)  # trn2u.48xlarge included
    application = values["containerLogs"]["fluentBit"]["config"]["extraFiles"]["application-log.conf"]
    assert re.search(r"^\s*log_group_name\s+" + re.escape(facts.APPLICATION_LOG_GROUP.format(cluster="${CLUSTER_NAME}"))
                     + r"$", application, re.M)



def test_the_first_deploy_check_compares_the_addon_with_the_pin() -> None:
    from neuronfleet.verify.kubernetes import CLOUDWATCH_ADDON as check
    assert check.id == "cloudwatch-addon" and facts.CLOUDWATCH_ADDON_VERSION in check.fact
    assert (f"describe-addon-versions --addon-name {facts.CLOUDWATCH_ADDON} --kubernetes-version "
            f"{DEFAULT_KUBERNETES_VERSION} ") in check.by_hand
    assert f"--query addon.addonVersion (prints {facts.CLOUDWATCH_ADDON_VERSION})" in check.by_hand
    [row] = [line for line in (DATA.parents[1] / "docs" / "checks.md").read_text().splitlines()
             if line.startswith("| `cloudwatch-addon` |")]
    assert f"`{facts.CLOUDWATCH_ADDON_VERSION}`" in row and "**assumed**" in row and "f4ad2e3a" in row
