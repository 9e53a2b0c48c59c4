"""The network stack, as synthesised from config/dev.yaml and config/prod.yaml."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import assertions
from aws_cdk.assertions import Capture, Match

from neuronfleet import FleetNetwork, InvalidSettings, NetworkSettings
from neuronfleet.network.fleet_network import INTERFACE_ENDPOINTS


@pytest.fixture(scope="module")
def dev(synth_fleet):
    return synth_fleet("dev")


@pytest.fixture(scope="module")
def prod(synth_fleet):
    return synth_fleet("prod")


def _subnet_azs(template: assertions.Template, name: str) -> list[str]:
    subnets = template.find_resources("AWS::EC2::Subnet", {"Properties": {"Tags": Match.array_with(
        [{"Key": "aws-cdk:subnet-name", "Value": name}])}})
    return sorted(s["Properties"]["AvailabilityZone"] for s in subnets.values())


def test_vpc_cidr_and_subnets_in_every_fleet_az(prod) -> None:
    t = prod.template("network")
    t.resource_count_is("AWS::EC2::VPC", 1)
    t.has_resource_properties("AWS::EC2::VPC", {"CidrBlock": "10.42.0.0/16", "EnableDnsSupport": True,
                                                "EnableDnsHostnames": True})
    azs = list(prod.fleet.network.availability_zones)
    assert _subnet_azs(t, "compute") == azs
    assert _subnet_azs(t, "public") == azs
    t.resource_count_is("AWS::EC2::NatGateway", 3)


def test_training_subnet_is_the_compute_subnet_of_the_capacity_az(prod) -> None:
    net = prod.stacks["network"].network
    assert net.training_subnet.availability_zone == prod.fleet.network.training_az == "us-east-2b"
    compute = net.vpc.select_subnets(subnet_group_name="compute").subnets
    assert net.training_subnet.node.path in [s.node.path for s in compute]


def test_compute_subnets_are_private(prod) -> None:
    t = prod.template("network")
    compute = t.find_resources("AWS::EC2::Subnet", {"Properties": {"Tags": Match.array_with(
        [{"Key": "aws-cdk:subnet-name", "Value": "compute"}])}})
    assert compute
    assert all(s["Properties"]["MapPublicIpOnLaunch"] is False for s in compute.values())


def test_s3_gateway_and_interface_endpoints(prod, dev) -> None:
    t = prod.template("network")
    service = Capture()
    t.has_resource_properties("AWS::EC2::VPCEndpoint", {"VpcEndpointType": "Gateway", "ServiceName": service})
    assert "s3" in str(service.as_object())
    interfaces = t.find_resources("AWS::EC2::VPCEndpoint", {"Properties": {"VpcEndpointType": "Interface"}})
    names = sorted(str(r["Properties"]["ServiceName"]) for r in interfaces.values())
    assert len(interfaces) == len(INTERFACE_ENDPOINTS) == 11
    # ecs, ecs-agent, ecs-telemetry: what the ECS agent of every Batch container instance needs in isolated
    # subnets (AWS's "Amazon ECS interface VPC endpoints" guide); ECR and logs for images and job logs
    for short in ("ssm", "ssmmessages", "ec2messages", "ecs", "ecs-agent", "ecs-telemetry", "ecr.api", "ecr.dkr",
                  "logs", "monitoring", "sts"):
        assert any(n.endswith(f".{short}") or f".{short}" in n for n in names), (short, names)
    for ep in interfaces.values():
        assert ep["Properties"]["PrivateDnsEnabled"] is True
    # dev switches interface endpoints off (cost), keeps the free S3 gateway endpoint
    dev.template("network").resource_count_is("AWS::EC2::VPCEndpoint", 1)


def test_endpoint_security_group_is_not_open_to_the_world(prod) -> None:
    t = prod.template("network")
    groups = t.find_resources("AWS::EC2::SecurityGroup").values()
    assert [rule for sg in groups for rule in sg["Properties"].get("SecurityGroupIngress", [])]  # the HTTPS rule
    for sg in groups:
        for rule in sg["Properties"].get("SecurityGroupIngress", []):
            assert rule.get("CidrIp") != "0.0.0.0/0", rule


def test_flow_logs_capture_all_traffic_with_retention(prod, dev) -> None:
    t = prod.template("network")
    t.has_resource_properties("AWS::EC2::FlowLog", {"TrafficType": "ALL", "ResourceType": "VPC",
                                                    "LogDestinationType": "cloud-watch-logs"})
    t.has_resource("AWS::Logs::LogGroup", {"Properties": {"RetentionInDays": 90},
                                            "DeletionPolicy": "Retain"})
    dev.template("network").has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 7})


def test_fleet_tags_on_resources(prod) -> None:
    prod.template("network").has_resource_properties("AWS::EC2::VPC", {"Tags": Match.array_with([
        {"Key": "cost-center", "Value": "ml-platform"},
        {"Key": "neuronfleet:fleet", "Value": "nf-prod"},
        {"Key": "neuronfleet:phase", "Value": "production"},
    ])})


def test_stack_environment_comes_from_the_fleet_file(prod) -> None:
    stack = prod.stacks["network"]
    assert (stack.account, stack.region) == ("333333333333", "us-east-2")
    assert stack.availability_zones == ["us-east-2a", "us-east-2b", "us-east-2c"]


def test_synth_needs_no_lookups(synth_fleet) -> None:
    for name in ("dev", "prod"):
        manifest = json.loads((Path(synth_fleet(name).assembly.directory) / "manifest.json").read_text())
        assert manifest.get("missing", []) == []


@pytest.mark.parametrize(("settings", "message"), [
    ({"training_az": "us-east-2c"}, "training_az: got 'us-east-2c'; allowed: one of availability_zones: us-east-2a, "
                                    "us-east-2b"),
    ({"nat_gateways": 3}, "nat_gateways: got 3; allowed: 0 to 2 (one per AZ at most)"),
    ({"availability_zones": ["us-east-2a"], "training_az": "us-east-2a"},
     "availability_zones: got ['us-east-2a']; allowed: at least 2 entries"),
    ({"cidr": "10.0.0.0/8"}, "cidr: got '10.0.0.0/8'; allowed: an IPv4 CIDR from /16 to /20"),
])
def test_settings_reject_what_aws_would(settings, message) -> None:
    with pytest.raises(InvalidSettings) as info:
        NetworkSettings(**{"availability_zones": ["us-east-2a", "us-east-2b"], "training_az": "us-east-2b", **settings})
    assert [str(p) for p in info.value.problems] == [message]


def test_construct_checks_the_azs_against_its_region() -> None:
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    with pytest.raises(InvalidSettings, match=r"availability_zones\[0\]: got 'us-east-2a'; allowed: an availability zone "
                                              r"of us-west-2"):
        FleetNetwork(stack, "N", settings=NetworkSettings(availability_zones=["us-east-2a", "us-east-2b"],
                                                          training_az="us-east-2b"))


def test_no_nat_means_isolated_compute_subnets() -> None:
    stack = cdk.Stack(cdk.App(), "S")
    FleetNetwork(stack, "N", settings=NetworkSettings(availability_zones=["us-east-2a", "us-east-2b"],
                                                      training_az="us-east-2b", nat_gateways=0, interface_endpoints=False))
    t = assertions.Template.from_stack(stack)
    t.resource_count_is("AWS::EC2::NatGateway", 0)
    t.resource_count_is("AWS::EC2::InternetGateway", 0)
    t.resource_count_is("AWS::EC2::Subnet", 2)


def test_isolated_subnets_get_every_endpoint_batch_needs() -> None:
    """nat_gateways: 0 with interface endpoints: ECS (ecs, ecs-agent, ecs-telemetry), ECR, logs, STS, SSM as
    interface endpoints in the compute subnets, S3 as a gateway endpoint."""
    stack = cdk.Stack(cdk.App(), "S")
    net = FleetNetwork(stack, "N", settings=NetworkSettings(availability_zones=["us-east-2a", "us-east-2b"],
                                                            training_az="us-east-2b", nat_gateways=0))
    assert net.settings.reaches_aws_apis
    net.require_aws_api_access("a GPU pool")  # no error
    t = assertions.Template.from_stack(stack)
    t.resource_count_is("AWS::EC2::NatGateway", 0)
    interfaces = t.find_resources("AWS::EC2::VPCEndpoint", {"Properties": {"VpcEndpointType": "Interface"}})
    services = [json.dumps(e["Properties"]["ServiceName"]) for e in interfaces.values()]
    for short in ("ecs", "ecs-agent", "ecs-telemetry", "ecr.api", "ecr.dkr", "logs", "sts", "ssm"):
        assert sum(f'".{short}"' in s for s in services) == 1, (short, services)  # com.amazonaws.<region>.<short>
    gateway = t.find_resources("AWS::EC2::VPCEndpoint", {"Properties": {"VpcEndpointType": "Gateway"}})
    assert len(gateway) == 1 and "s3" in json.dumps(gateway)
    for e in interfaces.values():
        assert len(e["Properties"]["SubnetIds"]) == 2  # every AZ's compute subnet


def test_isolated_subnets_without_endpoints_are_refused_for_batch() -> None:
    settings = NetworkSettings(availability_zones=["us-east-2a", "us-east-2b"], training_az="us-east-2b",
                               nat_gateways=0, interface_endpoints=False)
    assert not settings.reaches_aws_apis
    net = FleetNetwork(cdk.Stack(cdk.App(), "S"), "N", settings=settings)
    with pytest.raises(InvalidSettings) as info:
        net.require_aws_api_access("training clusters")
    (problem,) = info.value.problems
    assert str(problem).startswith("interface_endpoints: got False; allowed: true when nat_gateways is 0 and the fleet "
                                   "has training clusters: in isolated subnets the ECS agent of AWS Batch instances "
                                   "reaches ECS (ecs, ecs-agent, ecs-telemetry)")
    # with a NAT gateway, or with the endpoints, the same subnets are fine
    for ok in ({"nat_gateways": 1, "interface_endpoints": False}, {"nat_gateways": 0, "interface_endpoints": True}):
        assert NetworkSettings(availability_zones=["us-east-2a", "us-east-2b"], training_az="us-east-2b",
                               **ok).reaches_aws_apis


def _evaluate(node, region: str = "us-east-2"):
    """A template expression with the partition and region filled in (enough for endpoint policies)."""
    if isinstance(node, dict) and "Fn::Join" in node:
        sep, parts = node["Fn::Join"]
        return sep.join(_evaluate(p, region) for p in parts)
    if isinstance(node, dict) and "Ref" in node:
        return {"AWS::Partition": "aws", "AWS::Region": region}[node["Ref"]]
    return node


@pytest.mark.parametrize("fleet", ["prod", "dev"])
def test_every_endpoint_lets_through_this_accounts_principals_and_aws_owned_buckets_only(fleet, prod, dev) -> None:
    """Each endpoint has a policy; each Allow either requires aws:PrincipalAccount = the fleet's account, or (the S3
    gateway only) lets anyone read the AWS-owned buckets image layers and packages come from; nothing else."""
    synth = {"prod": prod, "dev": dev}[fleet]
    t = synth.template("network")
    account = synth.stacks["network"].account
    region = synth.stacks["network"].region
    endpoints = t.find_resources("AWS::EC2::VPCEndpoint")
    assert len(endpoints) == (12 if fleet == "prod" else 1)
    for name, endpoint in endpoints.items():
        statements = endpoint["Properties"]["PolicyDocument"]["Statement"]
        own = [s for s in statements if s.get("Condition")]
        assert own == [{"Action": "*", "Condition": {"StringEquals": {"aws:PrincipalAccount": account}},
                        "Effect": "Allow", "Principal": {"AWS": "*"}, "Resource": "*"}], name
        rest = [s for s in statements if not s.get("Condition")]
        if endpoint["Properties"]["VpcEndpointType"] == "Interface":
            assert rest == [], name
            continue
        (aws_owned,) = rest
        assert (aws_owned["Action"], aws_owned["Effect"], aws_owned["Principal"]) == ("s3:GetObject", "Allow",
                                                                                      {"AWS": "*"})
        assert sorted(_evaluate(r, region) for r in aws_owned["Resource"]) == [
            f"arn:aws:s3:::al2023-repos-{region}-*/*", f"arn:aws:s3:::prod-{region}-starport-layer-bucket/*"]
