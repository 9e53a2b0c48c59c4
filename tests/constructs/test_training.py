"""TrainiumCluster and the training stacks: interfaces, security, capacity, storage, AWS Batch."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from neuronfleet import CATALOG, AmiSettings, Capacity, InvalidSettings, TrainiumCluster, TrainiumClusterSettings
from neuronfleet.lambdas.namespaces import NEURON_NAMESPACE as NEURON_METRICS_NAMESPACE
from neuronfleet.training import NEURON_ECS_AMI_PARAMETER
from tests.conftest import ENV, AzStack, network, new_app

CASES: dict[str, dict[str, Any]] = {
    "trn2": {"instance_type": "trn2.48xlarge", "count": 2},
    "trn2u-block": {"instance_type": "trn2u.48xlarge", "count": 8, "allow_unlisted_region": True,
                    "capacity": Capacity.capacity_block(resource_group_arn="arn:aws:resource-groups:us-east-2:"
                                                        "111111111111:group/blocks", availability_zone="us-east-2b")},
    "trn1": {"instance_type": "trn1.32xlarge", "count": 4,
             "capacity": Capacity.odcr(reservation_id="cr-0123456789abcdef0")},
    "trn1n-block": {"instance_type": "trn1n.32xlarge", "count": 2,
                    "capacity": Capacity.capacity_block(reservation_id="cr-0fedcba9876543210")},
    "trn1-small": {"instance_type": "trn1.2xlarge", "count": 1},
}


@pytest.fixture(scope="module")
def templates() -> dict[str, Template]:
    """One app, one synth: a stack per case, each with its own network."""
    app = new_app()
    stacks = {}
    for name, props in CASES.items():
        stack = AzStack(app, f"T-{name}", env=ENV)
        net = network(stack)
        TrainiumCluster(stack, "Cluster", vpc=net.vpc, subnet=net.training_subnet,
                        settings=TrainiumClusterSettings(**props))
        stacks[name] = stack
    assembly = app.synth()
    return {n: Template.from_json(assembly.get_stack_by_name(s.stack_name).template) for n, s in stacks.items()}


def _lt_data(t: Template) -> dict[str, Any]:
    (lt,) = t.find_resources("AWS::EC2::LaunchTemplate").values()
    return lt["Properties"]["LaunchTemplateData"]


@pytest.mark.parametrize("name", list(CASES))
def test_exact_interface_list_one_per_card(templates, name: str) -> None:
    instance_type = CASES[name]["instance_type"]
    interfaces = _lt_data(templates[name])["NetworkInterfaces"]
    got = [(i["NetworkCardIndex"], i["DeviceIndex"], i.get("InterfaceType", "interface")) for i in interfaces]
    cards = {"trn2.48xlarge": 16, "trn2u.48xlarge": 16, "trn1n.32xlarge": 16, "trn1.32xlarge": 8,
             "trn1.2xlarge": 1}[instance_type]
    assert len(got) == cards == CATALOG.get(instance_type).network_cards
    if instance_type == "trn1.2xlarge":
        assert got == [(0, 0, "interface")]
    else:
        assert got == [(0, 0, "efa")] + [(card, 1, "efa-only") for card in range(1, cards)]
    subnet_refs = {json.dumps(i["SubnetId"]) for i in interfaces}
    assert len(subnet_refs) == 1 and "computeSubnet2" in subnet_refs.pop()  # us-east-2b, the training AZ
    assert all(len(i["Groups"]) == 1 and i["DeleteOnTermination"] for i in interfaces)


def test_efa_security_group_allows_itself_and_nothing_from_the_internet(templates) -> None:
    t = templates["trn2"]
    sg_id = next(k for k, v in t.find_resources("AWS::EC2::SecurityGroup").items()
                 if "EFA" in v["Properties"]["GroupDescription"])
    self_ref = {"Fn::GetAtt": [sg_id, "GroupId"]}
    t.has_resource_properties("AWS::EC2::SecurityGroupIngress", {
        "IpProtocol": "-1", "GroupId": self_ref, "SourceSecurityGroupId": self_ref})
    t.has_resource_properties("AWS::EC2::SecurityGroupEgress", {
        "IpProtocol": "-1", "GroupId": self_ref, "DestinationSecurityGroupId": self_ref})
    sg = t.find_resources("AWS::EC2::SecurityGroup")[sg_id]["Properties"]
    assert [(e["CidrIp"], e["IpProtocol"], e["FromPort"], e["ToPort"]) for e in sg["SecurityGroupEgress"]] == \
        [("0.0.0.0/0", "tcp", 443, 443)]
    assert "SecurityGroupIngress" not in sg
    for ingress in t.find_resources("AWS::EC2::SecurityGroupIngress").values():
        assert "CidrIp" not in ingress["Properties"]


def test_lustre_security_group_is_open_only_to_the_cluster_on_lustre_ports(templates) -> None:
    t = templates["trn2"]
    groups = t.find_resources("AWS::EC2::SecurityGroup")
    efa = next(k for k, v in groups.items() if "EFA" in v["Properties"]["GroupDescription"])
    lustre = next(k for k, v in groups.items() if "Lustre" in v["Properties"]["GroupDescription"])
    rules = [r["Properties"] for r in t.find_resources("AWS::EC2::SecurityGroupIngress").values()
             if r["Properties"]["GroupId"] == {"Fn::GetAtt": [lustre, "GroupId"]}]
    got = sorted((r["SourceSecurityGroupId"]["Fn::GetAtt"][0], r["FromPort"], r["ToPort"]) for r in rules)
    # the cluster on the Lustre ports; the file servers among themselves (LustreFileSystem's own rule)
    assert got == sorted([(efa, 988, 988), (efa, 1018, 1023), (lustre, 988, 1023)])


def test_on_demand_cluster_gets_a_cluster_placement_group(templates) -> None:
    t = templates["trn2"]
    t.has_resource_properties("AWS::EC2::PlacementGroup", {"Strategy": "cluster"})
    data = _lt_data(t)
    assert "InstanceMarketOptions" not in data and "CapacityReservationSpecification" not in data
    assert "GroupName" in data["Placement"]
    templates["trn1-small"].resource_count_is("AWS::EC2::PlacementGroup", 0)  # one instance, no EFA


def test_capacity_block_by_resource_group_has_market_type_and_no_placement_group(templates) -> None:
    t = templates["trn2u-block"]
    data = _lt_data(t)
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"] == {"CapacityReservationTarget": {
        "CapacityReservationResourceGroupArn": "arn:aws:resource-groups:us-east-2:111111111111:group/blocks"}}
    assert "Placement" not in data
    t.resource_count_is("AWS::EC2::PlacementGroup", 0)
    (ce,) = t.find_resources("AWS::Batch::ComputeEnvironment").values()
    assert "PlacementGroup" not in ce["Properties"]["ComputeResources"]


def test_capacity_block_by_reservation_id(templates) -> None:
    data = _lt_data(templates["trn1n-block"])
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": "cr-0fedcba9876543210"}


def test_odcr_is_targeted_without_market_type(templates) -> None:
    data = _lt_data(templates["trn1"])
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": "cr-0123456789abcdef0"}
    assert "InstanceMarketOptions" not in data
    templates["trn1"].resource_count_is("AWS::EC2::PlacementGroup", 0)  # an ODCR is not in our new group


def test_host_settings(templates) -> None:
    t = templates["trn2"]
    data = _lt_data(t)
    assert data["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 2}
    assert data["BlockDeviceMappings"] == [{"DeviceName": "/dev/xvda", "Ebs": {
        "DeleteOnTermination": True, "Encrypted": True, "VolumeSize": 512, "VolumeType": "gp3"}}]
    assert "KeyName" not in data and "SecurityGroupIds" not in data
    assert data["InstanceType"] == "trn2.48xlarge"
    params = t.to_json()["Parameters"]
    assert any(p.get("Default") == NEURON_ECS_AMI_PARAMETER for p in params.values())
    user_data = json.dumps(data["UserData"])
    for needle in ("multipart/mixed", "mount -a -t lustre", "neuron-monitor-cloudwatch.py",
                   f"--namespace {NEURON_METRICS_NAMESPACE}", "systemctl enable --now neuron-monitor-cloudwatch"):
        assert needle in user_data, needle
    tags = {(tag["Key"], tag["Value"]) for spec in data["TagSpecifications"] for tag in spec["Tags"]}
    assert ("neuronfleet:accelerator-family", "trainium") in tags


def test_instance_role_has_session_manager_and_ecs_and_scoped_metrics(templates) -> None:
    t = templates["trn2"]
    roles = [r for r in t.find_resources("AWS::IAM::Role").values()
             if "ec2.amazonaws.com" in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])]
    (role,) = roles
    arns = json.dumps(role["Properties"]["ManagedPolicyArns"])
    assert "AmazonSSMManagedInstanceCore" in arns and "AmazonEC2ContainerServiceforEC2Role" in arns
    t.has_resource_properties("AWS::IAM::Policy", {"PolicyDocument": {"Statement": Match.array_with([{
        "Action": "cloudwatch:PutMetricData", "Effect": "Allow", "Resource": "*",
        "Condition": {"StringEquals": {"cloudwatch:namespace": NEURON_METRICS_NAMESPACE}}}])}})


def test_storage_bucket_and_lustre(templates) -> None:
    t = templates["trn2"]
    t.has_resource("AWS::S3::Bucket", {
        "DeletionPolicy": "Retain",
        "Properties": {"VersioningConfiguration": {"Status": "Enabled"},
                       "PublicAccessBlockConfiguration": {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                                          "IgnorePublicAcls": True, "RestrictPublicBuckets": True},
                       "BucketEncryption": Match.any_value(), "LoggingConfiguration": Match.any_value()}})
    t.has_resource_properties("AWS::S3::BucketPolicy", {"PolicyDocument": {"Statement": Match.array_with([
        Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})])}})
    t.has_resource("AWS::FSx::FileSystem", {"DeletionPolicy": "Retain", "Properties": {
        "FileSystemType": "LUSTRE", "StorageCapacity": 1200,
        "LustreConfiguration": Match.object_like({"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 250})}})
    t.has_resource_properties("AWS::FSx::DataRepositoryAssociation", {
        "FileSystemPath": "/data", "BatchImportMetaDataOnCreate": True})


@pytest.mark.parametrize(("name", "neuron_devices", "efa_devices", "nodes"),
                         [("trn2", 16, 16, 2), ("trn2u-block", 16, 16, 8), ("trn1", 16, 8, 4),
                          ("trn1-small", 1, 0, 1)])
def test_batch_compute_environment_queue_and_mnp_job_definition(templates, name, neuron_devices, efa_devices,
                                                                nodes) -> None:
    t = templates[name]
    spec = CATALOG.get(CASES[name]["instance_type"])
    (ce,) = t.find_resources("AWS::Batch::ComputeEnvironment").values()
    res = ce["Properties"]["ComputeResources"]
    assert (res["Type"], res["MinvCpus"], res["MaxvCpus"], res["InstanceTypes"]) == \
        ("EC2", 0, spec.vcpus * nodes, [spec.instance_type])
    assert "SecurityGroupIds" not in res  # the launch template's per-interface groups apply
    assert "LaunchTemplateId" in res["LaunchTemplate"] and len(res["Subnets"]) == 1
    t.resource_count_is("AWS::Batch::JobQueue", 1)
    (jd,) = t.find_resources("AWS::Batch::JobDefinition").values()
    props = jd["Properties"]
    assert props["Type"] == "multinode"
    nodes_props = props["NodeProperties"]
    assert (nodes_props["NumNodes"], nodes_props["MainNode"]) == (nodes, 0)
    (rng,) = nodes_props["NodeRangeProperties"]
    assert rng["TargetNodes"] == f"0:{nodes - 1}"
    devices = [d["HostPath"] for d in rng["Container"]["LinuxParameters"]["Devices"]]
    assert devices == [f"/dev/neuron{i}" for i in range(neuron_devices)] + \
        [f"/dev/infiniband/uverbs{i}" for i in range(efa_devices)]
    assert {"HardLimit": -1, "Name": "memlock", "SoftLimit": -1} in rng["Container"]["Ulimits"]
    assert {"ContainerPath": "/fsx", "SourceVolume": "fsx"} in rng["Container"]["MountPoints"]


def test_cfn_lint_suppression_only_on_the_capacity_block_only_type(templates) -> None:
    for name, t in templates.items():
        (lt,) = t.find_resources("AWS::EC2::LaunchTemplate").values()
        ignored = lt.get("Metadata", {}).get("cfn-lint", {}).get("config", {}).get("ignore_checks", [])
        assert ignored == (["E3628"] if CASES[name]["instance_type"] == "trn2u.48xlarge" else [])


# ------------------------------------------------------------------------------------ bad combinations


def _cluster(**overrides: Any) -> None:
    stack = AzStack(cdk.App(), "Bad", env=ENV)
    net = network(stack)
    settings = TrainiumClusterSettings(**{"instance_type": "trn2u.48xlarge", "count": 4, "allow_unlisted_region": True,
                                          **overrides})
    TrainiumCluster(stack, "Cluster", vpc=net.vpc, subnet=net.training_subnet, settings=settings)


@pytest.mark.parametrize(("overrides", "message"), [
    ({"count": 6}, "count: got 6; allowed: a multiple of 4 (trn2u.48xlarge comes in whole UltraServers of 4 instances)"),
    ({"count": True}, "count: got True; allowed: a whole number"),
    ({"capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0", "placement_group": True}},
     "capacity.placement_group: got True; allowed: false or unset"),
    ({"capacity": Capacity.capacity_block(reservation_id="cr-0123456789abcdef0", availability_zone="us-east-2a")},
     "subnet: got 'us-east-2b'; allowed: a subnet in us-east-2a, the AZ of the capacity-block reservation"),
    ({"capacity": Capacity.capacity_block(reservation_id="cr-0123456789abcdef0", availability_zone="us-west-2a")},
     "capacity.availability_zone: got 'us-west-2a'; allowed:"),
    ({"ami": {"ssm_parameter": "aws/service/neuron/ami"}}, "ami.ssm_parameter: got 'aws/service/neuron/ami'; allowed:"),
    ({"ami": {"ssm_parameter": "/ok/path", "ami_id": "ami-0123456789abcdef0"}}, "ami: got {"),
    ({"ami": {"ami_id": "ami-zz"}}, "ami.ami_id: got 'ami-zz'; allowed:"),
    ({"instance_type": "p5.48xlarge"}, "instance_type: got 'p5.48xlarge'; allowed: 'trn1.2xlarge'"),
    ({"allow_unlisted_region": False}, "instance_type: got 'trn2u.48xlarge'; allowed: a type offered in us-east-2"),
    ({"fsx_storage_gib": 3600}, "fsx_storage_gib: got 3600; allowed: 1200 or a multiple of 2400"),
    ({"capacity": "on-demand", "root_volume_gib": 0}, "root_volume_gib: got 0; allowed: a number >= 1"),
])
def test_bad_combinations_fail_synth_with_a_reason(overrides, message) -> None:
    with pytest.raises(InvalidSettings) as info:
        _cluster(**overrides)
    assert any(str(p).startswith(message) for p in info.value.problems), info.value.problems


def test_capacity_needs_exactly_one_target() -> None:
    with pytest.raises(InvalidSettings, match="reservation_id: got None; allowed: a reservation id"):
        Capacity.capacity_block()
    with pytest.raises(InvalidSettings, match="reservation_id: got 'cr-xyz'"):
        Capacity.odcr(reservation_id="cr-xyz")
    with pytest.raises(InvalidSettings, match=r"resource_group_arn: got .*; allowed: either reservation_id or"):
        Capacity.odcr(reservation_id="cr-0123456789abcdef0",
                      resource_group_arn="arn:aws:resource-groups:us-east-2:111111111111:group/blocks")
    with pytest.raises(InvalidSettings, match="type: got 'on-demand'; allowed: 'odcr' or 'capacity-block'"):
        Capacity(type="on-demand", reservation_id="cr-0123456789abcdef0")


def test_on_demand_shorthand_and_defaults() -> None:
    settings = TrainiumClusterSettings(instance_type="trn2.48xlarge", count=2, capacity="on-demand")
    assert settings.capacity == Capacity.on_demand()
    assert settings.ami == AmiSettings()


# -------------------------------------------------------------------------------------- fleet files


def test_prod_deploys_the_ultraserver_cluster_on_capacity_blocks(synth_fleet) -> None:
    prod = synth_fleet("prod")
    assert list(prod.stacks) == ["network", "alerts", "train-pretrain", "train-finetune", "inference", "fallback", "cost"]
    t = prod.template("train-pretrain")
    data = _lt_data(t)
    assert data["InstanceType"] == "trn2u.48xlarge"
    assert len(data["NetworkInterfaces"]) == 16
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert "CapacityReservationResourceGroupArn" in data["CapacityReservationSpecification"][
        "CapacityReservationTarget"]
    (jd,) = t.find_resources("AWS::Batch::JobDefinition").values()
    assert jd["Properties"]["NodeProperties"]["NumNodes"] == 8
    outputs = t.to_json()["Outputs"]
    assert {"JobQueueArn", "JobDefinitionArn", "LaunchTemplateId", "DataBucketName", "FileSystemId"} <= set(outputs)
    t.has_resource_properties("AWS::FSx::FileSystem", {"StorageCapacity": 4800})


def test_training_stack_tags_for_the_cost_monitors(synth_fleet) -> None:
    t = synth_fleet("prod").template("train-finetune")
    tags = {(tag["Key"], tag["Value"]) for spec in _lt_data(t)["TagSpecifications"] for tag in spec["Tags"]}
    assert {("neuronfleet:fleet", "nf-prod"), ("neuronfleet:phase", "production"),
            ("neuronfleet:accelerator-family", "trainium")} <= tags
