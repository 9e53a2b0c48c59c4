"""The EKS path's job alarms and the CloudWatch Observability add-on on a construct-level stack (cdk-nag gating the
synth): each alarm reads exactly the metric its publisher emits (the metric filter's transformation; the Kueue
scraper's declaration, read back from the manifest the stack applies), goes to the fleet's topic, and notifies once."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template

from neuronfleet.core.problems import InvalidSettings
from neuronfleet.eks import NeuronEksCluster
from neuronfleet.eks import observability as scraper
from neuronfleet.eks.job_alarms import SPLIT_METRIC, SPLIT_NAMESPACE, EksJobAlarms
from neuronfleet.facts import eks_observability as facts
from neuronfleet.settings.eks import NeuronEksClusterSettings, NeuronNodegroupSettings
from tests.cdk_support import ENV, AzStack, network, new_app, properties

QUEUE = "rainier-training"


def _stack(*, with_kueue: bool = True, **alarms: Any) -> tuple[cdk.Stack, NeuronEksCluster, EksJobAlarms]:
    stack = AzStack(new_app(), "S", env=ENV)
    net = network(stack)
    cluster = NeuronEksCluster(stack, "Eks", vpc=net.vpc, vpc_subnets=net.compute_subnets,
                               settings=NeuronEksClusterSettings(node_groups=(NeuronNodegroupSettings(
                                   name="g", instance_type="inf2.xlarge", count=1),)))
    kueue = cluster.cluster.add_helm_chart("Kueue", chart="kueue", repository="oci://registry.k8s.io/kueue/charts/kueue",
                                           version="0.19.2", namespace="kueue-system", create_namespace=True)
    topic = sns.Topic(stack, "Topic", enforce_ssl=True)
    job_alarms = EksJobAlarms(stack, "JobAlarms", cluster=cluster, topic=topic, kueue=kueue if with_kueue else None,
                              training_queues=[QUEUE], **alarms)
    return stack, cluster, job_alarms


@pytest.fixture(scope="module")
def built() -> tuple[cdk.Stack, Template]:
    stack, _, _ = _stack()
    return stack, Template.from_stack(stack)


def _alarms(template: Template) -> dict[str, dict[str, Any]]:
    return properties(template, "AWS::CloudWatch::Alarm")


def _topic(template: Template) -> dict[str, Any]:
    [logical] = template.find_resources("AWS::SNS::Topic")
    return {"Ref": logical}


def test_the_addon_with_its_pod_identity_and_log_group_first(built) -> None:
    _, template = built
    [addon] = [a for a in template.find_resources("AWS::EKS::Addon").values()
               if a["Properties"]["AddonName"] == facts.CLOUDWATCH_ADDON]
    props = addon["Properties"]
    # pinned, to the version named after its chart (unconfirmed for 1.36: docs/checks.md cloudwatch-addon)
    assert props["AddonVersion"] == facts.CLOUDWATCH_ADDON_PIN.version == "v6.4.0-eksbuild.1"
    [association] = props["PodIdentityAssociations"]
    assert association["ServiceAccount"] == facts.ADDON_SERVICE_ACCOUNT
    role = template.find_resources("AWS::IAM::Role")[association["RoleArn"]["Fn::GetAtt"][0]]["Properties"]
    [trust] = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Condition"] == {"StringEquals": {"aws:RequestTag/kubernetes-namespace": facts.ADDON_NAMESPACE,
                                                   "aws:RequestTag/kubernetes-service-account": "cloudwatch-agent"}}
    assert "CloudWatchAgentServerPolicy" in json.dumps(role["ManagedPolicyArns"])
    groups = {k: v for k, v in template.find_resources("AWS::Logs::LogGroup").items()
              if "/application" in json.dumps(v["Properties"].get("LogGroupName", ""))}
    [(group, _)] = groups.items()
    assert group in addon["DependsOn"]  # the kit's group exists before Fluent Bit could make one


def test_the_split_alarm_reads_the_metric_filters_metric(built) -> None:
    _, template = built
    [fil] = properties(template, "AWS::Logs::MetricFilter").values()
    assert scraper.SPLIT_MARKER in fil["FilterPattern"] and fil["FilterPattern"].startswith('"')
    [transform] = fil["MetricTransformations"]
    alarm = next(a for a in _alarms(template).values() if a.get("MetricName") == SPLIT_METRIC)
    assert (alarm["Namespace"], alarm["MetricName"]) == (transform["MetricNamespace"], transform["MetricName"]) == (
        SPLIT_NAMESPACE, SPLIT_METRIC)
    assert [{"Name": d["Key"], "Value": d["Value"]} for d in transform["Dimensions"]] == alarm["Dimensions"]
    assert transform["MetricValue"] == "1" and alarm["Statistic"] == "Sum"
    # the filter reads the add-on's application log group, the one the kit created
    group = template.find_resources("AWS::Logs::LogGroup")[fil["LogGroupName"]["Ref"]]["Properties"]
    assert "/application" in json.dumps(group["LogGroupName"])


def _agent_config(template: Template) -> dict[str, Any]:
    for p in properties(template, "Custom::AWSCDK-EKS-KubernetesResource").values():
        manifest = p["Manifest"]
        text = json.dumps(manifest)
        if "cwagentconfig.json" in text:
            return manifest
    raise AssertionError("no scraper manifest")


def test_the_pending_alarm_reads_what_the_scraper_declares(built) -> None:
    """The alarm's two metrics (active, inadmissible) are the namespace, name and dimension names the agent's
    declaration for kueue_pending_workloads emits, ClusterName the cluster's own name as in the agent's config."""
    _, template = built
    alarm = next(a for a in _alarms(template).values() if "Metrics" in a)
    stats = [q["MetricStat"] for q in alarm["Metrics"] if "MetricStat" in q]
    assert {s["Metric"]["Namespace"] for s in stats} == {facts.PROMETHEUS_NAMESPACE}
    assert {s["Metric"]["MetricName"] for s in stats} == {facts.KUEUE_PENDING}
    assert {s["Stat"] for s in stats} == {"Maximum"}
    by_status = {next(d["Value"] for d in s["Metric"]["Dimensions"] if d["Name"] == "status"): s for s in stats}
    assert set(by_status) == set(facts.PENDING_STATUSES)
    declared = scraper.agent_config(cluster_name="X", region="r")["logs"]["metrics_collected"]["prometheus"][
        "emf_processor"]
    [pending] = [d for d in declared["metric_declaration"] if d["metric_selectors"] == [f"^{facts.KUEUE_PENDING}$"]]
    for s in stats:
        assert [d["Name"] for d in s["Metric"]["Dimensions"]] == pending["dimensions"][0]
        dims = {d["Name"]: d["Value"] for d in s["Metric"]["Dimensions"]}
        assert dims["cluster_queue"] == QUEUE
    # ClusterName: the same value the scraper's config carries (the cluster's name, resolved in the stack)
    cluster_name = {json.dumps(d["Value"]) for s in stats for d in s["Metric"]["Dimensions"] if d["Name"] == "ClusterName"}
    assert len(cluster_name) == 1 and next(iter(cluster_name)) in json.dumps(_agent_config(template))
    expression = next(q for q in alarm["Metrics"] if "Expression" in q)
    assert expression["Expression"].replace(" ", "") in ("FILL(a,0)+FILL(i,0)",)


def test_each_alarm_goes_to_the_topic_once_and_missing_data_is_quiet(built) -> None:
    _, template = built
    alarms = _alarms(template)
    assert len(alarms) == 2
    for alarm in alarms.values():
        assert alarm["AlarmActions"] == [_topic(template)]
        assert "OKActions" not in alarm and "InsufficientDataActions" not in alarm
        assert alarm["TreatMissingData"] == "notBreaching" and alarm["Threshold"] == 1
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    pending = next(a for a in alarms.values() if "Metrics" in a)
    assert pending["EvaluationPeriods"] == pending["DatapointsToAlarm"] == 12  # 60 minutes of 5-minute periods
    assert all(q["MetricStat"]["Period"] == 300 for q in pending["Metrics"] if "MetricStat" in q)


def test_the_scraper_runs_as_its_own_pod_identity_after_kueue(built) -> None:
    _, template = built
    roles = [r["Properties"] for r in template.find_resources("AWS::IAM::Role").values()
             if scraper.SCRAPER in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])]
    assert len(roles) == 1 and "CloudWatchAgentServerPolicy" in json.dumps(roles[0]["ManagedPolicyArns"])
    [(_, resource)] = [(k, v) for k, v in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").items()
                             if "cwagentconfig.json" in json.dumps(v["Properties"]["Manifest"])]
    kueue = next(k for k, v in template.find_resources("Custom::AWSCDK-EKS-HelmChart").items()
                 if v["Properties"]["Chart"] == "kueue")
    assert kueue in resource["DependsOn"]


@pytest.mark.parametrize(("args", "field"), [
    ({"pending_minutes": 2}, "pending_minutes"), ({"pending_minutes": 3000}, "pending_minutes"),
    ({"with_kueue": False}, "training_queues: got \\['rainier-training'\\]; allowed: none without kueue"),
])
def test_bad_arguments_are_refused_naming_the_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSettings, match=field):
        _stack(**args)
