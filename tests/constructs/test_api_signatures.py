"""One construct API style, for the constructs whose module also changes with the contract package: a training
cluster's one subnet and settings type, the cost monitors' topic type, the endpoint's new argument names."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from neuronfleet import CostMonitors, InvalidSettings, TrainiumCluster, TrainiumClusterSettings
from tests.conftest import ENV, AzStack, network


def _stack() -> cdk.Stack:
    return AzStack(cdk.App(), "S", env=ENV)


def test_a_list_as_training_settings_names_the_argument_and_both_types() -> None:
    stack = _stack()
    net = network(stack)
    with pytest.raises(InvalidSettings, match=r"TrainiumCluster: settings: .*a TrainiumClusterSettings .*got a list"):
        TrainiumCluster(stack, "T", vpc=net.vpc, subnet=net.training_subnet,
                        settings=[TrainiumClusterSettings(instance_type="trn1.32xlarge", count=2)])  # type: ignore[arg-type]


def test_training_subnet_is_one_subnet_not_a_selection() -> None:
    stack = _stack()
    net = network(stack)
    with pytest.raises(InvalidSettings) as err:
        TrainiumCluster(stack, "T", vpc=net.vpc, subnet=net.compute_subnets,  # type: ignore[arg-type]
                        settings=TrainiumClusterSettings(instance_type="trn1.32xlarge", count=2))
    assert "TrainiumCluster: subnet: got SubnetSelection(" in str(err.value)
    assert "one ec2.ISubnet" in str(err.value) and "(got a SubnetSelection)" in str(err.value)


def test_cost_monitors_topic_must_be_a_topic() -> None:
    with pytest.raises(InvalidSettings, match=r"CostMonitors: topic: got 'arn:aws:sns:.*an sns.ITopic .*got a str"):
        CostMonitors(_stack(), "Cost", fleet_name="nf", topic="arn:aws:sns:us-east-2:111111111111:t")  # type: ignore[arg-type]


def _settings() -> object:
    from neuronfleet import EndpointSettings

    return EndpointSettings(instance_type="ml.inf2.xlarge", hf_model_id="o/m", revision="a" * 40,
                            allow_non_cached_model=False)


def test_endpoint_takes_vpc_subnets_and_topic_and_not_their_old_names() -> None:
    from aws_cdk import aws_sns as sns
    from aws_cdk.assertions import Template

    from neuronfleet import NeuronEndpoint

    def build(**kwargs: object) -> dict[str, object]:
        stack = _stack()
        net = network(stack)
        topic = sns.Topic(stack, "T")
        args = {k: (net.compute_subnets if "subnets" in k else topic) for k in kwargs}
        NeuronEndpoint(stack, "E", vpc=net.vpc, settings=_settings(), **args)  # type: ignore[arg-type]
        return Template.from_stack(stack).to_json()  # type: ignore[no-any-return]

    new = build(vpc_subnets=True, topic=True)
    assert any(r.get("Type") == "AWS::CloudWatch::Alarm" for r in new["Resources"].values())  # type: ignore[attr-defined]
    for old in ("subnets", "alarm_topic"):  # the old names of the unreleased 0.1.0 are gone
        with pytest.raises(TypeError, match=old):
            build(**{old: True})
    stack = _stack()
    net = network(stack)
    with pytest.raises(InvalidSettings, match=r"NeuronEndpoint: vpc_subnets: .*an ec2.SubnetSelection .*got a list"):
        NeuronEndpoint(stack, "E", vpc=net.vpc, settings=_settings(),  # type: ignore[arg-type]
                       vpc_subnets=net.vpc.private_subnets)  # type: ignore[arg-type]


def test_an_endpoint_without_the_fleet_tag_is_warned_about() -> None:
    from aws_cdk.assertions import Annotations, Match

    from neuronfleet import NeuronEndpoint, tag_fleet

    def warned(tag: bool) -> list[str]:
        stack = _stack()
        NeuronEndpoint(stack, "E", vpc=network(stack).vpc, settings=_settings())  # type: ignore[arg-type]
        if tag:
            tag_fleet(stack, fleet="nf", phase="pilot")
        return [str(w.entry.data) for w in Annotations.from_stack(stack).find_warning("*", Match.any_value())
                if "neuronfleet:fleet tag" in str(w.entry.data)]

    (warning,) = warned(tag=False)
    assert warning.startswith("endpoint S/E carries no neuronfleet:fleet tag: the cost monitors find the fleet's "
                              "endpoints (migration report, idle endpoints) by that tag")
    assert warned(tag=True) == []


def _statements(stack: cdk.Stack, role_id: str) -> list[dict[str, object]]:
    from aws_cdk.assertions import Template

    policies = Template.from_stack(stack).find_resources("AWS::IAM::Policy")
    return [s for p in policies.values() if any(r == {"Ref": role_id} for r in p["Properties"]["Roles"])
            for s in p["Properties"]["PolicyDocument"]["Statement"]]


def test_grants_return_iam_grant_and_name_the_construct_resources() -> None:
    from aws_cdk import aws_iam as iam

    from neuronfleet import GpuPool

    stack = _stack()
    net = network(stack)
    cluster = TrainiumCluster(stack, "T", vpc=net.vpc, subnet=net.training_subnet,
                              settings=TrainiumClusterSettings(instance_type="trn2.48xlarge", count=1))
    pool = GpuPool(stack, "P", vpc=net.vpc)
    pool.add_job_definition("Cuda", job_definition_name="cuda",   # grant_submit_jobs names the pool's own
                            image=cdk.aws_ecs.ContainerImage.from_registry("public.ecr.aws/example/cuda:1"))
    cost = CostMonitors(stack, "Cost", fleet_name="nf", topic=cdk.aws_sns.Topic(stack, "Topic"))
    role = iam.Role(stack, "App", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    grants = [cluster.grant_submit_jobs(role), cluster.grant_read_data(role), pool.grant_submit_jobs(role),
              cost.grant_read_reports(role)]
    assert all(isinstance(g, iam.Grant) and g.success for g in grants)
    statements = _statements(stack, stack.get_logical_id(role.node.default_child))  # type: ignore[arg-type]
    submit = [s for s in statements if s["Action"] == "batch:SubmitJob"]
    assert len(submit) == 2
    resolved = [stack.resolve(s["Resource"]) for s in submit]
    assert stack.resolve(cluster.job_queue.job_queue_arn) in resolved[0]
    assert stack.resolve(cluster.job_definition.job_definition_arn) in resolved[0]
    assert stack.resolve(pool.job_queue.job_queue_arn) in resolved[1]
    assert stack.resolve(pool.job_definitions["cuda"].job_definition_arn) in resolved[1]
    reads = [s for s in statements if "s3:GetObject*" in s["Action"]]
    assert len(reads) == 2  # the data bucket and the reports prefix
    assert any("/reports/*" in str(stack.resolve(s["Resource"])) for s in reads)
    metric = cost.metric_spend("trainium", period=cdk.Duration.days(7))
    assert metric.dimensions == {"Fleet": "nf", "Family": "trainium"} and metric.period.to_days() == 7
    assert metric.statistic == "Sum"
    # metric_* on the constructs whose functions or hosts publish: the names the publishers use (the contract)
    from neuronfleet import CapacityAlerts
    from neuronfleet.lambdas.capacity_alert import handler as capacity_handler
    from neuronfleet_contract.namespaces import CAPACITY_NAMESPACE, NEURON_NAMESPACE

    used = cluster.metric_neuron_core_utilization("i-0011223344556677a", statistic="Maximum")
    assert (used.namespace, used.metric_name, used.dimensions, used.statistic, used.period.to_minutes()) == (
        NEURON_NAMESPACE, "NeuronCoreUtilization", {"InstanceId": "i-0011223344556677a"}, "Maximum", 5)
    alerts = CapacityAlerts(stack, "Capacity", pool=pool, topic=cdk.aws_sns.Topic(stack, "Alerts"), clusters=[cluster])
    said, bad = alerts.metric_announcements(), alerts.metric_malformed_events(period=cdk.Duration.days(1))
    assert (said.namespace, said.metric_name, said.dimensions, said.statistic) == (
        CAPACITY_NAMESPACE, "CapacityAnnouncements", {"service": capacity_handler.SERVICE}, "Sum")
    assert capacity_handler.metrics.namespace == CAPACITY_NAMESPACE  # where the function publishes them
    assert (bad.metric_name, bad.period.to_days()) == (capacity_handler.MALFORMED_METRIC, 1)


def test_removal_policies_are_props_with_retain_by_default() -> None:
    from aws_cdk import RemovalPolicy
    from aws_cdk.assertions import Template

    def policies(removal: RemovalPolicy | None) -> dict[str, set[str]]:
        stack = _stack()
        net = network(stack)
        kwargs = {} if removal is None else {"removal_policy": removal}
        TrainiumCluster(stack, "T", vpc=net.vpc, subnet=net.training_subnet,
                        settings=TrainiumClusterSettings(instance_type="trn2.48xlarge", count=1), **kwargs)
        CostMonitors(stack, "Cost", fleet_name="nf", topic=cdk.aws_sns.Topic(stack, "Topic"), **kwargs)
        t = Template.from_stack(stack).to_json()["Resources"]
        out: dict[str, set[str]] = {}
        for kind in ("AWS::FSx::FileSystem", "AWS::S3::Bucket", "AWS::DynamoDB::Table"):
            out[kind] = {r.get("DeletionPolicy", "Delete") for lid, r in t.items() if r["Type"] == kind
                         and not lid.startswith("CostAnnounced")}  # the announcement ledger: see the note
        return out

    assert policies(None) == {"AWS::FSx::FileSystem": {"Retain"}, "AWS::S3::Bucket": {"Retain"},
                              "AWS::DynamoDB::Table": {"Retain"}}
    assert policies(RemovalPolicy.DESTROY) == {"AWS::FSx::FileSystem": {"Delete"}, "AWS::S3::Bucket": {"Delete"},
                                               "AWS::DynamoDB::Table": {"Delete"}}


def test_removal_policies_of_the_ledger_the_logs_and_the_cur_buckets_are_props() -> None:
    """The announcement ledger and function logs default to DESTROY (documented: neither holds what AWS cannot give
    again), the CUR buckets to RETAIN; each can be asked otherwise."""
    from aws_cdk import RemovalPolicy
    from aws_cdk.assertions import Template

    from neuronfleet import CurAnalytics, FleetFunction
    from neuronfleet.alerts.announcement_ledger import AnnouncementLedger

    def policies(**kwargs: RemovalPolicy) -> dict[str, set[str]]:
        stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(account="111111111111", region="us-east-1"))
        AnnouncementLedger(stack, "Ledger", **({"removal_policy": kwargs["ledger"]} if "ledger" in kwargs else {}))
        FleetFunction(stack, "Fn", handler="failover.handler.handler", description="d",
                      **({"log_removal_policy": kwargs["logs"]} if "logs" in kwargs else {}))
        CurAnalytics(stack, "Cur", export_name="x", **({"removal_policy": kwargs["cur"]} if "cur" in kwargs else {}))
        t = Template.from_stack(stack).to_json()["Resources"]
        return {kind: {r.get("DeletionPolicy", "Delete") for r in t.values() if r["Type"] == kind}
                for kind in ("AWS::DynamoDB::Table", "AWS::Logs::LogGroup", "AWS::S3::Bucket")}

    assert policies() == {"AWS::DynamoDB::Table": {"Delete"}, "AWS::Logs::LogGroup": {"Delete"},
                          "AWS::S3::Bucket": {"Retain"}}
    assert policies(ledger=RemovalPolicy.RETAIN, logs=RemovalPolicy.RETAIN, cur=RemovalPolicy.DESTROY) == {
        "AWS::DynamoDB::Table": {"Retain"}, "AWS::Logs::LogGroup": {"Retain"}, "AWS::S3::Bucket": {"Delete"}}


def test_a_training_cluster_without_the_fleet_tag_is_warned_about() -> None:
    from aws_cdk.assertions import Annotations, Match

    from neuronfleet import tag_fleet

    def warned(tag: bool) -> list[str]:
        stack = _stack()
        net = network(stack)
        TrainiumCluster(stack, "T", vpc=net.vpc, subnet=net.training_subnet,
                        settings=TrainiumClusterSettings(instance_type="trn2.48xlarge", count=1))
        if tag:
            tag_fleet(stack, fleet="nf", phase="production")
        return [str(w.entry.data) for w in Annotations.from_stack(stack).find_warning("*", Match.any_value())
                if "neuronfleet:fleet tag" in str(w.entry.data)]

    (warning,) = warned(tag=False)
    assert warning.startswith("training cluster S/T carries no neuronfleet:fleet tag: the cost monitors find the "
                              "fleet's spend (Cost Explorer and the budget group by it) by that tag")
    assert warned(tag=True) == []
