"""One construct API style: one name and one type per kind of argument, clear errors for a wrong type,
deprecated names that still work (with a DeprecationWarning), grants returning iam.Grant."""

from __future__ import annotations

import warnings

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from neuronfleet import (
    FleetAlerts,
    FleetFunction,
    FleetNetwork,
    GpuPool,
    InvalidSettings,
)
from tests.conftest import ENV, AzStack, network, properties


def _stack() -> cdk.Stack:
    return AzStack(cdk.App(), "S", env=ENV)


def test_a_list_as_settings_names_the_argument_and_both_types() -> None:
    stack = _stack()
    with pytest.raises(InvalidSettings) as err:
        FleetNetwork(stack, "Bad", settings=[{"availability_zones": ["us-east-2a"]}])  # type: ignore[arg-type]
    text = str(err.value)
    assert text.startswith("FleetNetwork: settings: got [")
    assert "a NetworkSettings (or a dict of its fields) (got a list)" in text
    net = network(stack)
    with pytest.raises(InvalidSettings, match=r"GpuPool: settings: got 'p5.48xlarge'.*a GpuPoolSettings .*got a str"):
        GpuPool(stack, "P", vpc=net.vpc, settings="p5.48xlarge")  # type: ignore[arg-type]


def test_a_dict_as_settings_is_the_settings_class() -> None:
    stack = _stack()
    net = FleetNetwork(stack, "Net", settings={  # type: ignore[arg-type]
        "availability_zones": ["us-east-2a", "us-east-2b"], "training_az": "us-east-2b", "interface_endpoints": False})
    assert net.settings.training_az == "us-east-2b"


def test_one_email_as_a_string_is_one_address() -> None:
    stack = _stack()
    FleetAlerts(stack, "Alerts", emails="ml-platform@example.com")  # type: ignore[arg-type]
    subs = properties(Template.from_stack(stack), "AWS::SNS::Subscription")
    assert [s["Endpoint"] for s in subs.values()] == ["ml-platform@example.com"]
    with pytest.raises(InvalidSettings, match=r"emails\[1\]: got 'not-an-address'"):
        FleetAlerts(_stack(), "Alerts", emails=["ml-platform@example.com", "not-an-address"])
    with pytest.raises(InvalidSettings, match=r"emails\[0\]: got 3; allowed: a string \(got a int\)"):
        FleetAlerts(_stack(), "Alerts", emails=[3])  # type: ignore[list-item]


def _pool_subnets(stack: cdk.Stack) -> list[str]:
    env = next(iter(properties(Template.from_stack(stack), "AWS::Batch::ComputeEnvironment").values()))
    return [stack.resolve(s)["Ref"] for s in env["ComputeResources"]["Subnets"]]


def test_gpu_pool_takes_a_subnet_selection_and_no_old_name() -> None:
    new = _stack()
    net = network(new)
    GpuPool(new, "P", vpc=net.vpc, vpc_subnets=net.compute_subnets)
    assert len(_pool_subnets(new)) == 2
    with pytest.raises(InvalidSettings, match=r"GpuPool: vpc_subnets: .*an ec2.SubnetSelection .*got a list"):
        GpuPool(_stack(), "P", vpc=net.vpc, vpc_subnets=net.vpc.private_subnets)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="subnets"):  # the old name of the unreleased 0.1.0 is gone
        GpuPool(_stack(), "P", vpc=net.vpc, subnets=net.vpc.private_subnets)  # type: ignore[call-arg]


def test_the_topic_is_topic_and_alarm_topic_is_gone() -> None:
    def function(**topic: object) -> dict[str, object]:
        stack = _stack()
        alerts = FleetAlerts(stack, "Alerts")
        FleetFunction(stack, "Fn", handler="failover.handler.handler", description="d",
                      **{k: alerts.topic for k in topic})  # type: ignore[arg-type]
        return properties(Template.from_stack(stack), "AWS::CloudWatch::Alarm")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = function(topic=True)
    assert len(new) == 2
    with pytest.raises(TypeError, match="alarm_topic"):  # the old name of the unreleased 0.1.0 is gone
        function(alarm_topic=True)


def test_fleet_alerts_grant_publish_returns_the_grant() -> None:
    stack = _stack()
    alerts = FleetAlerts(stack, "Alerts")
    role = iam.Role(stack, "App", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    grant = alerts.grant_publish(role)
    assert isinstance(grant, iam.Grant) and grant.success
    actions = [s["Action"] for p in properties(Template.from_stack(stack), "AWS::IAM::Policy").values()
               for s in p["PolicyDocument"]["Statement"]]
    assert "sns:Publish" in actions
    metric = alerts.metric_number_of_notifications_failed(period=cdk.Duration.hours(1), statistic="Sum")
    assert metric.namespace == "AWS/SNS" and metric.period.to_seconds() == 3600


def test_selections_are_the_aws_cdk_lib_type() -> None:
    net = network(_stack())
    assert isinstance(net.compute_subnets, ec2.SubnetSelection)
    assert isinstance(net.training_subnets, ec2.SubnetSelection)


def test_a_plain_environment_specific_stack_is_told_about_static_az_stack() -> None:
    from neuronfleet import NetworkSettings

    settings = NetworkSettings(availability_zones=["us-east-2a", "us-east-2b"], training_az="us-east-2b",
                               interface_endpoints=False)
    stack = cdk.Stack(cdk.App(), "Plain", env=ENV)
    with pytest.raises(InvalidSettings) as err:
        FleetNetwork(stack, "Net", settings=settings)
    text = str(err.value)
    assert text.startswith("FleetNetwork: stack: got \"Stack 'Plain'\"; allowed: a neuronfleet.StaticAzStack(")
    key = "availability-zones:account=111111111111:region=us-east-2"
    assert f'{{"{key}": ["us-east-2a", "us-east-2b"]}}' in text
    # the committed answer is what the CLI would have looked up: with it, the same stack synthesises offline
    answered = cdk.Stack(cdk.App(context={key: ["us-east-2a", "us-east-2b", "us-east-2c"]}), "Plain", env=ENV)
    FleetNetwork(answered, "Net", settings=settings)
    assert Template.from_stack(answered).find_resources("AWS::EC2::VPC") != {}
    FleetNetwork(AzStack(cdk.App(), "Static", env=ENV), "Net", settings=settings)  # StaticAzStack: no lookup


def _fleet_tag_warnings(stack: cdk.Stack) -> list[str]:
    from aws_cdk.assertions import Annotations, Match

    return [str(w.entry.data) for w in Annotations.from_stack(stack).find_warning("*", Match.any_value())
            if "neuronfleet:fleet tag" in str(w.entry.data)]


def test_a_gpu_pool_without_the_fleet_tag_is_warned_about() -> None:
    from neuronfleet import tag_fleet

    bare = _stack()
    GpuPool(bare, "P", vpc=network(bare).vpc)
    (warning,) = _fleet_tag_warnings(bare)
    assert warning.startswith("GPU pool S/P carries no neuronfleet:fleet tag: the cost monitors find the fleet's spend")
    assert "tag_fleet(stack, fleet=..., phase=...)" in warning and "[ack: neuronfleet:no-fleet-tag]" in warning
    tagged = _stack()
    GpuPool(tagged, "P", vpc=network(tagged).vpc)
    tag_fleet(tagged, fleet="nf", phase="pilot")  # after the constructs, as the reference app does
    assert _fleet_tag_warnings(tagged) == []
