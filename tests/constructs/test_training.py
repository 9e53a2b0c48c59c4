"""TrainiumCluster and the training stacks: interfaces, security, capacity, storage, AWS Batch."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match, Template

from neuronfleet import CATALOG, AmiSettings, Capacity, InvalidSettings, TrainiumCluster, TrainiumClusterSettings
from neuronfleet.core.limits import template_problems
from neuronfleet.core.rules import EC2_USER_DATA_BYTES
from neuronfleet.facts.neuron import ecs_neuron_amis
from neuronfleet.training.cluster import NEURON_ECS_AMI_PARAMETER
from neuronfleet_contract.namespaces import NEURON_NAMESPACE as NEURON_METRICS_NAMESPACE
from tests.conftest import ENV, EXAMPLE_FLEETS, AzStack, network, new_app, properties
from tests.constructs import iam_view

TRN1_IMAGE = "111111111111.dkr.ecr.us-east-2.amazonaws.com/neuronfleet/train-trn1:torch-neuronx-2.9-sdk2.31.0"
"""A team's own trn1 image (Neuron 2.31: torch-neuronx 2.9, runtime library 2.33): no published one runs on trn1 with
the pinned ECS Neuron AMI's driver (tests/unit/test_neuron_data.py)."""
TRN1_OWN = {"training_image": TRN1_IMAGE, "training_image_sdk": "2.31.0"}
OWN_AMI = "ami-0123456789abcdef0"

CASES: dict[str, dict[str, Any]] = {
    "trn2": {"instance_type": "trn2.48xlarge", "count": 2},
    "trn2u-block": {"instance_type": "trn2u.48xlarge", "count": 8, "allow_unlisted_region": True,
                    "capacity": Capacity.capacity_block(resource_group_arn="arn:aws:resource-groups:us-east-2:"
                                                        "111111111111:group/blocks", availability_zone="us-east-2b")},
    "trn1": {"instance_type": "trn1.32xlarge", "count": 4,
             "capacity": Capacity.odcr(reservation_id="cr-0123456789abcdef0"), **TRN1_OWN},
    "trn1n": {"instance_type": "trn1n.32xlarge", "count": 2, **TRN1_OWN},
    # a Capacity Block by reservation id, on a type EC2 sells them for (not trn1n: data/capacity_blocks.json)
    "trn2-block": {"instance_type": "trn2.48xlarge", "count": 2,
                   "capacity": Capacity.capacity_block(reservation_id="cr-0fedcba9876543210")},
    # the user's own AMI: its driver is not known at synth, so the default (sdk2.30.0) image is not refused there;
    # the health gate checks it on the host
    "trn1-own-ami": {"instance_type": "trn1.32xlarge", "count": 1, "ami": AmiSettings.pinned(OWN_AMI)},
    "trn1-small": {"instance_type": "trn1.2xlarge", "count": 1, **TRN1_OWN},
    "trn2-follow": {"instance_type": "trn2.48xlarge", "count": 1, "ami": AmiSettings.latest(),
                    "logical_nc_config": 1, "capacity_wait_timeout_s": None, "fsx_backup_retention_days": 0},
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
    assert cards == CATALOG.get(instance_type).network_cards
    if instance_type == "trn1.2xlarge":
        assert got == [(0, 0, "interface")]
    else:
        # EC2 user guide's current EFA layout (catalog.InstanceSpec.network_interfaces): ENA primary at card 0 /
        # device 0, EFA-only at card 0 / device 1, EFA-only at device 0 of every other card: one EFA per card
        assert got == [(0, 0, "interface"), (0, 1, "efa-only")] + [(card, 0, "efa-only") for card in range(1, cards)]
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


def _efa_and_lustre_groups(t: Template) -> tuple[str, str]:
    groups = t.find_resources("AWS::EC2::SecurityGroup")
    efa = next(k for k, v in groups.items() if "EFA" in v["Properties"]["GroupDescription"])
    lustre = next(k for k, v in groups.items() if "Lustre" in v["Properties"]["GroupDescription"])
    return efa, lustre


def test_lustre_security_group_is_open_only_to_the_cluster_on_lustre_ports(templates) -> None:
    t = templates["trn2"]
    efa, lustre = _efa_and_lustre_groups(t)
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
    data = _lt_data(templates["trn2-block"])
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
    assert data["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 1}
    assert data["BlockDeviceMappings"] == [{"DeviceName": "/dev/xvda", "Ebs": {
        "DeleteOnTermination": True, "Encrypted": True, "VolumeSize": 512, "VolumeType": "gp3"}}]
    assert "KeyName" not in data and "SecurityGroupIds" not in data
    assert data["InstanceType"] == "trn2.48xlarge"
    # pinned: the ECS Neuron AMI recorded for us-east-2, no SSM parameter re-resolved at deploy
    assert data["ImageId"] == ecs_neuron_amis()["us-east-2"]
    assert not any("optimized-ami" in str(p.get("Default")) for p in t.to_json().get("Parameters", {}).values())
    user_data = json.dumps(data["UserData"])
    for needle in ("multipart/mixed", "mount -a -t lustre", "/opt/neuronfleet/utilisation.py",
                   f"--namespace {NEURON_METRICS_NAMESPACE}", "systemctl enable --now neuronfleet-utilisation"):
        assert needle in user_data, needle
    tags = {(tag["Key"], tag["Value"]) for spec in data["TagSpecifications"] for tag in spec["Tags"]}
    assert ("neuronfleet:accelerator-family", "trainium") in tags


@pytest.mark.parametrize("name", list(CASES))
def test_instance_role_is_the_host_only_session_manager_ecs_agent_and_scoped_metrics(templates, name) -> None:
    """The host's role: the ECS agent's documented policy, Session Manager's five actions (not
    AmazonSSMManagedInstanceCore: ssm:GetParameter(s) on every parameter), the utilisation publisher's metric in its
    namespace, and s3:GetObject of exactly the node scripts' asset, the object its user data fetches; no data bucket
    (FSx mounts need no S3 right; the job role has the data)."""
    t = templates[name]
    role = iam_view.role_id(t, service="ec2.amazonaws.com")
    (arn,) = iam_view.managed(t, role)
    assert "AmazonEC2ContainerServiceforEC2Role" in arn
    sts = iam_view.statements(t, role)
    (fetch,) = [s for s in sts if s["Action"] == "s3:GetObject"]
    key = re.search(r"--key (\S+\.zip)", json.dumps(_lt_data(t)["UserData"])).group(1)  # type: ignore[union-attr]
    assert fetch["Resource"] == f"arn:aws:s3:::cdk-hnb659fds-assets-111111111111-us-east-2/{key}"
    assert sorted(sts, key=json.dumps) == sorted([
        {"Action": iam_view.SESSION_MANAGER, "Effect": "Allow", "Resource": "*"},
        {"Action": "cloudwatch:PutMetricData", "Effect": "Allow", "Resource": "*",
         "Condition": {"StringEquals": {"cloudwatch:namespace": NEURON_METRICS_NAMESPACE}}}, fetch], key=json.dumps)
    for action in ("ssm:GetParameter", "ssm:GetParameters", "s3:PutObject", "s3:DeleteObjectVersion", "s3:ListBucket"):
        assert iam_view.allows(sts, action) == [], action


@pytest.mark.parametrize("name", list(CASES))
def test_job_code_runs_with_its_own_role_and_only_its_data_bucket(templates, name) -> None:
    """The job definition names a job role (ECS's task role) that may list, read, write and delete (a delete marker:
    no version deletes) objects of the cluster's own data bucket, and nothing of the instance role's rights."""
    t = templates[name]
    job_role = iam_view.role_id(t, service="ecs-tasks.amazonaws.com", description="training jobs")
    assert _container(t)["JobRoleArn"] == {"Fn::GetAtt": [job_role, "Arn"]}
    assert iam_view.managed(t, job_role) == []
    (bucket,) = [k for k, b in t.find_resources("AWS::S3::Bucket").items()
                 if b["Properties"].get("VersioningConfiguration")]
    sts = iam_view.statements(t, job_role)
    assert sorted(sts, key=json.dumps) == sorted([
        {"Action": ["s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads"], "Effect": "Allow",
         "Resource": {"Fn::GetAtt": [bucket, "Arn"]}},
        {"Action": ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:ListMultipartUploadParts",
                    "s3:PutObject"], "Effect": "Allow",
         "Resource": {"Fn::Join": ["", [{"Fn::GetAtt": [bucket, "Arn"]}, "/*"]]}},
        # only the capacity lifecycle writes a drain flag (training.drain.deny_flag_writes; issue 36, finding 8)
        {"Action": ["s3:DeleteObject", "s3:DeleteObjectVersion", "s3:PutObject"], "Effect": "Deny",
         "Resource": {"Fn::Join": ["", [{"Fn::GetAtt": [bucket, "Arn"]}, "/neuronfleet/drain/*"]]}}], key=json.dumps)
    for action in iam_view.FORBIDDEN_FOR_JOBS:
        assert iam_view.allows(sts, action) == [], action
    # the instance role and the job role share nothing (an action on the same resource: both read S3 objects, the
    # host only its node scripts' asset, the job only its data bucket)
    def grants(statements: list[dict[str, Any]]) -> set[tuple[str, str]]:
        return {(a, json.dumps(r, sort_keys=True)) for st in statements
                for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])
                for r in ([st["Resource"]] if not isinstance(st["Resource"], list) else st["Resource"])}

    host = grants(iam_view.statements(t, iam_view.role_id(t, service="ec2.amazonaws.com")))
    assert host & grants(sts) == set()
    assert iam_view.actions(iam_view.statements(t, iam_view.role_id(t, service="ec2.amazonaws.com"))) & \
        iam_view.actions(sts) == {"s3:GetObject"}


@pytest.mark.parametrize("name", list(CASES))
def test_containers_are_cut_off_from_the_instance_role(templates, name) -> None:
    """IMDSv2 only, hop limit 1 (a bridged container is one hop too far), and the ECS agent told to block IMDS for
    awsvpc tasks (Batch runs multi-node jobs in awsvpc mode), before the agent starts (in the first user-data part,
    which Batch merges with its own)."""
    data = _lt_data(templates[name])
    assert data["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 1}
    user_data = json.dumps(data["UserData"])
    assert user_data.count("echo ECS_AWSVPC_BLOCK_IMDS=true >> /etc/ecs/ecs.config") == 1
    assert "ECS_ENABLE_TASK_IAM_ROLE=false" not in user_data and "HttpPutResponseHopLimit" not in user_data


ATTEMPT_S = {"trn2": 7 * 86400, "trn2u-block": 86400 - 3600, "trn1": 7 * 86400, "trn2-block": 86400 - 1800}


@pytest.mark.parametrize(("name", "seconds"), list(ATTEMPT_S.items()))
def test_a_hung_job_ends_before_the_shortest_capacity_block_does(templates, name, seconds) -> None:
    """attemptDurationSeconds: on a Capacity Block the shortest block (1 day) less the time before its end that its
    instances stop (30 minutes; UltraServer blocks: the assumed 60), so a run started with its block ends before any
    block ends it; a week otherwise."""
    (jd,) = templates[name].find_resources("AWS::Batch::JobDefinition").values()
    assert jd["Properties"]["Timeout"] == {"AttemptDurationSeconds": seconds}


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
    # the kit's EFA group, named on the environment: the MNP task interfaces ECS attaches take the environment's
    # groups (the VPC default group if it named none), and it is the group of every launch-template interface
    efa, _ = _efa_and_lustre_groups(t)
    assert res["SecurityGroupIds"] == [{"Fn::GetAtt": [efa, "GroupId"]}]
    assert {json.dumps(i["Groups"]) for i in _lt_data(t)["NetworkInterfaces"]} == {json.dumps(res["SecurityGroupIds"])}
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
    assert set(templates) == set(CASES)
    for name, t in templates.items():
        (lt,) = t.find_resources("AWS::EC2::LaunchTemplate").values()
        ignored = lt.get("Metadata", {}).get("cfn-lint", {}).get("config", {}).get("ignore_checks", [])
        assert ignored == (["E3628"] if CASES[name]["instance_type"] == "trn2u.48xlarge" else [])


# ------------------------------------------------------------------------------------ bad combinations


def _cluster(**overrides: Any) -> None:
    stack = AzStack(cdk.App(), "Bad", env=ENV)
    net = network(stack)
    settings = TrainiumClusterSettings(**{
        "instance_type": "trn2u.48xlarge", "count": 4, "allow_unlisted_region": True,
        "capacity": Capacity.capacity_block(reservation_id="cr-0123456789abcdef0"), **overrides})
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
    assert list(prod.stacks) == ["network", "alerts", "train-pretrain", "train-finetune", "inference", "fallback",
                                 "capacity", "cost"]
    t = prod.template("train-pretrain")
    data = _lt_data(t)
    assert data["InstanceType"] == "trn2u.48xlarge"
    assert sum(i.get("InterfaceType") == "efa-only" for i in data["NetworkInterfaces"]) == 16  # + the ENA primary
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


# ------------------------------------------------------------------ what runs on a node, per instance type

PER_TYPE = {  # case: (image's SDK, LNC, logical cores, Neuron devices, EFA devices, UltraServer size)
    "trn1": ("2.31.0", None, 32, 16, 8, 1),
    "trn2": ("2.33.0", "2", 64, 16, 16, 1),
    "trn2u-block": ("2.33.0", "2", 64, 16, 16, 4),
}
TORCHNEURON = "public.ecr.aws/neuron/pytorch-training-neuronx:2.14.0-neuronx-py314-sdk2.33.0-ubuntu26.04"
IMAGES = {  # case: (image, what the health gate gets: runtime library, driver window)
    "trn1": (TRN1_IMAGE, {"NEURONFLEET_RUNTIME_LIB": "2.33.10.0"}),
    "trn2": (TORCHNEURON, {"NEURONFLEET_RUNTIME_LIB": "2.35.30.0", "NEURONFLEET_DRIVER_MIN": "2.22"}),
    "trn2u-block": (TORCHNEURON, {"NEURONFLEET_RUNTIME_LIB": "2.35.30.0", "NEURONFLEET_DRIVER_MIN": "2.22"}),
    "trn1-own-ami": ("pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04",
                     {"NEURONFLEET_RUNTIME_LIB": "2.32.31.0", "NEURONFLEET_DRIVER_MIN": "2.27",
                      "NEURONFLEET_DRIVER_BELOW": "2.29"}),
}


def _container(t: Template) -> dict[str, Any]:
    (jd,) = t.find_resources("AWS::Batch::JobDefinition").values()
    (rng,) = jd["Properties"]["NodeProperties"]["NodeRangeProperties"]
    return rng["Container"]


def _env(t: Template) -> dict[str, str]:
    return {e["Name"]: e["Value"] for e in _container(t)["Environment"]}


def _policies_of(t: Template, role_ref: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["Properties"] for p in t.find_resources("AWS::IAM::Policy").values()
            if role_ref in p["Properties"]["Roles"]]


@pytest.mark.parametrize("name", list(IMAGES))
def test_image_and_the_runtime_the_health_gate_checks_the_driver_against(templates, name) -> None:
    image, gate = IMAGES[name]
    got = _container(templates[name])["Image"]
    text = got if isinstance(got, str) else "".join(p if isinstance(p, str) else "" for p in got["Fn::Join"][1])
    # DLC shorthand resolves to AWS's DLC registry (account 763104351884 in us-east-2, CDK's region facts)
    assert text == image or (text.startswith("763104351884.dkr.ecr.") and text.endswith("/" + image)), text
    env = _env(templates[name])
    assert {k: v for k, v in env.items() if k.startswith(("NEURONFLEET_RUNTIME", "NEURONFLEET_DRIVER"))} == gate
    assert "NEURONFLEET_MIN_DRIVER" not in env


def _pull_statements(t: Template) -> list[dict[str, Any]]:
    role_arn = _container(t)["ExecutionRoleArn"]
    role_ref = {"Ref": role_arn["Fn::GetAtt"][0]}
    return [st for p in _policies_of(t, role_ref) for st in p["PolicyDocument"]["Statement"]
            if st["Action"] == "ecr:GetAuthorizationToken" or "ecr:BatchGetImage" in st["Action"]]


IMAGE_REPOSITORIES: dict[str, Any] = {
    **{n: {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":ecr:us-east-2:111111111111:repository/"
                             "neuronfleet/train-trn1"]]} for n in ("trn1", "trn1n", "trn1-small")},
    "trn1-own-ami": {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":ecr:", {"Ref": "AWS::Region"},
                                       ":763104351884:repository/pytorch-training-neuronx"]]},
}
"""The ECR repository each case's image comes from (the trn2 cases pull the default image from ECR Public: none)."""


@pytest.mark.parametrize(("name", "repository"), [(n, IMAGE_REPOSITORIES[n]) for n in ("trn1", "trn1-own-ami")])
def test_the_execution_role_pulls_the_image_with_least_privilege(templates, name, repository) -> None:
    statements = _pull_statements(templates[name])
    token = [st for st in statements if st["Action"] == "ecr:GetAuthorizationToken"]
    assert token == [{"Action": "ecr:GetAuthorizationToken", "Effect": "Allow", "Resource": "*"}]
    (pull,) = [st for st in statements if "ecr:BatchGetImage" in st["Action"]]
    assert sorted(pull["Action"]) == ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage",
                                      "ecr:GetDownloadUrlForLayer"]
    assert pull["Resource"] == repository


@pytest.mark.parametrize("name", list(CASES))
def test_no_role_of_a_job_pulls_from_every_repository(templates, name) -> None:
    """Whatever grants an image action (ecr:*, a second policy, a repository/* pattern), the execution role may pull
    from the job image's repository only, the job role from none; only the token is on "*" (it has no resource)."""
    t = templates[name]
    execution = _container(t)["ExecutionRoleArn"]["Fn::GetAtt"][0]
    job = _container(t)["JobRoleArn"]["Fn::GetAtt"][0]
    image_actions = ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability")
    for role, allowed in ((execution, IMAGE_REPOSITORIES.get(name)), (job, None)):
        sts = iam_view.statements(t, role)
        for action in image_actions:
            resources = [json.dumps(r) for st in iam_view.allows(sts, action) for r in iam_view.as_list(st["Resource"])]
            assert resources == ([json.dumps(allowed)] if allowed else []), (role, action)
            assert not any(r == '"*"' or "repository/*" in r for r in resources)
        assert {r for st in iam_view.allows(sts, "ecr:GetAuthorizationToken")
                for r in iam_view.as_list(st["Resource"])} <= {"*"}


def test_an_ecr_public_image_needs_no_ecr_permission_and_an_unconfirmed_one_is_flagged() -> None:
    stack = AzStack(new_app(), "Public", env=ENV)
    net = network(stack)
    TrainiumCluster(stack, "Cluster", vpc=net.vpc, subnet=net.training_subnet,
                    settings=TrainiumClusterSettings(instance_type="trn2.48xlarge", count=1))
    assert _pull_statements(Template.from_stack(stack)) == []
    notes = Annotations.from_stack(stack).find_info("*", Match.string_like_regexp("unconfirmed"))
    assert len(notes) == 1 and f"docker manifest inspect {TORCHNEURON}" in json.dumps(notes[0].entry.data)
    assert Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("unconfirmed")) == []


@pytest.mark.parametrize("name", list(PER_TYPE))
def test_runtime_variables(templates, name) -> None:
    _, lnc, cores, neuron, efa, us = PER_TYPE[name]
    env = _env(templates[name])
    assert "NEURON_RT_NUM_CORES" not in env  # under torchrun each process would reserve every core
    assert env.get("NEURON_LOGICAL_NC_CONFIG") == lnc
    assert (env["NEURONFLEET_NPROC_PER_NODE"], env["NEURONFLEET_EXPECT_NEURON_DEVICES"],
            env["NEURONFLEET_EXPECT_EFA_DEVICES"], env["NEURONFLEET_ULTRASERVER_SIZE"]) == \
        (str(cores), str(neuron), str(efa), str(us))
    assert (env["FI_PROVIDER"], env["FI_EFA_USE_DEVICE_RDMA"]) == ("efa", "1")


def test_lnc_1_presents_128_cores_on_trn2(templates) -> None:
    env = _env(templates["trn2-follow"])
    assert (env["NEURON_LOGICAL_NC_CONFIG"], env["NEURONFLEET_NPROC_PER_NODE"]) == ("1", "128")


@pytest.mark.parametrize("name", list(PER_TYPE))
def test_retry_strategy_retries_host_and_hardware_failures_only(templates, name) -> None:
    (jd,) = templates[name].find_resources("AWS::Batch::JobDefinition").values()
    assert jd["Properties"]["RetryStrategy"] == {"Attempts": 3, "EvaluateOnExit": [
        {"Action": "EXIT", "OnExitCode": "78"},  # the health gate's configuration error (runtime/driver mismatch)
        {"Action": "RETRY", "OnExitCode": "75"},
        {"Action": "RETRY", "OnStatusReason": "Host EC2*"},
        {"Action": "EXIT", "OnReason": "*"}]}


@pytest.mark.parametrize("name", list(PER_TYPE))
def test_health_gate_and_launcher_in_the_command(templates, name) -> None:
    t = templates[name]
    c = _container(t)
    assert c["Command"] == ["python3", "/opt/neuronfleet/launch.py", "--", "Ref::script"]
    (jd,) = t.find_resources("AWS::Batch::JobDefinition").values()
    assert jd["Properties"]["Parameters"] == {"script": "/fsx/data/code/train.py"}
    assert {"ContainerPath": "/opt/neuronfleet", "SourceVolume": "neuronfleet", "ReadOnly": True} in c["MountPoints"]
    assert {"Name": "neuronfleet", "Host": {"SourcePath": "/opt/neuronfleet"}} in c["Volumes"]
    # the user data writes the fetcher and its signer, and fetches the node scripts (the asset) into the host folder
    user_data = json.dumps(_lt_data(t)["UserData"])
    for name in ("sigv4.py", "fetch.py"):
        assert f"base64 -d | gunzip > /opt/neuronfleet/{name}" in user_data
    assert re.search(r"python3 /opt/neuronfleet/fetch\.py --bucket cdk-hnb659fds-assets-111111111111-us-east-2 --key "
                     r"[0-9a-f]{64}\.zip --region us-east-2 --url-suffix .* --dest /opt/neuronfleet", user_data)
    assert "gunzip > /opt/neuronfleet/launch.py" not in user_data
    from neuronfleet.node import SCRIPTS

    assert " --dest /opt/neuronfleet " + " ".join(f"--expect {n}" for n in SCRIPTS) + "\\n" in user_data
    for d in c["LinuxParameters"]["Devices"]:
        # the Batch EFA guide's set (READ, WRITE, MKNOD); CDK writes the enum in lower case
        assert [p.upper() for p in d["Permissions"]] == ["READ", "WRITE", "MKNOD"]


@pytest.mark.parametrize("name", list(CASES))
def test_user_data_stays_under_the_ec2_limit(templates, name) -> None:
    """As CloudFormationLimits measures it (the MIME document raw, its base64 script part as base64, references at
    their longest), with room for the part AWS Batch merges in (its size is not published: 2 KB kept)."""
    from neuronfleet.core.limits import _Context, _deployed_length

    template = templates[name].to_json()
    (logical,) = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::EC2::LaunchTemplate"]
    user_data = template["Resources"][logical]["Properties"]["LaunchTemplateData"]["UserData"]
    size = _deployed_length(user_data["Fn::Base64"], _Context(template["Resources"], {}))
    assert size < EC2_USER_DATA_BYTES - 2048, size
    assert [p for p in template_problems(name, template) if p.rule == "ec2-user-data-size"] == []


def test_user_data_over_ec2s_limit_is_refused_by_cloudformation_limits() -> None:
    """The node scripts written into the user data, as before they became an S3 asset: 28,950 bytes raw for prod's
    pretrain cluster at 7026a26, refused naming the launch template."""
    from neuronfleet.node import SCRIPTS
    from neuronfleet.training.cluster import _packed

    script = "\n".join(f"echo {_packed(n)} | base64 -d | gunzip > /opt/neuronfleet/{n}" for n in SCRIPTS)
    template = {"Resources": {"LaunchTemplate": {"Type": "AWS::EC2::LaunchTemplate", "Properties": {
        "LaunchTemplateData": {"UserData": {"Fn::Base64": {"Fn::Join": ["", [
            "Content-Type: multipart/mixed; boundary=\"b\"\n--b\n", {"Fn::Base64": script}, "\n--b--\n"]]}}}}}}}
    (problem,) = template_problems("train", template)
    assert problem.rule == "ec2-user-data-size" and problem.path == "train.LaunchTemplate"
    assert f"allowed: at most {EC2_USER_DATA_BYTES:,} bytes, raw, before base64" in str(problem)


@pytest.mark.parametrize("name", list(PER_TYPE))
def test_checkpoints_go_to_the_s3_linked_path_and_the_file_system_asks_for_no_backups(templates, name) -> None:
    t = templates[name]
    assert _env(t)["CHECKPOINT_DIR"] == "/fsx/data/checkpoints"
    t.has_resource_properties("AWS::FSx::DataRepositoryAssociation", {
        "FileSystemPath": "/data", "S3": {"AutoExportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]},
                                          "AutoImportPolicy": Match.any_value()}})
    # FSx for Lustre backs up no file system linked to an S3 data repository (settings.training
    # FSX_NO_BACKUPS_WITH_S3_LINK): the template asks for none; the versioned bucket holds the checkpoints
    t.has_resource_properties("AWS::FSx::FileSystem", {"LustreConfiguration": Match.object_like({
        "DeploymentType": "PERSISTENT_2", "AutomaticBackupRetentionDays": 0})})


def test_ultraserver_capacity_target(templates) -> None:
    data = _lt_data(templates["trn2u-block"])
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationResourceGroupArn": "arn:aws:resource-groups:us-east-2:111111111111:group/blocks"}


@pytest.mark.parametrize("name", list(PER_TYPE))
def test_update_behaviour_ami_pinned_and_queue_cancels_jobs_blocked_on_capacity(templates, name) -> None:
    t = templates[name]
    assert _lt_data(t)["ImageId"] == ecs_neuron_amis()["us-east-2"]
    (queue,) = t.find_resources("AWS::Batch::JobQueue").values()
    assert queue["Properties"]["JobStateTimeLimitActions"] == [{
        "Action": "CANCEL", "State": "RUNNABLE", "MaxTimeSeconds": 3600,
        "Reason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"}]


def test_follow_latest_resolves_the_ssm_parameter_and_no_queue_timeout(templates) -> None:
    t = templates["trn2-follow"]
    params = t.to_json()["Parameters"]
    assert any(p.get("Default") == NEURON_ECS_AMI_PARAMETER for p in params.values())
    (queue,) = t.find_resources("AWS::Batch::JobQueue").values()
    assert "JobStateTimeLimitActions" not in queue["Properties"]


def test_lustre_client_rules_both_directions(templates) -> None:
    """FSx for Lustre user guide: clients and file system allow 988 and 1018-1023 to and from each other."""
    t = templates["trn2"]
    efa, lustre = _efa_and_lustre_groups(t)

    def rules(kind: str, group: str, peer_key: str) -> set[tuple[str, int, int]]:
        return {(r["Properties"][peer_key]["Fn::GetAtt"][0], r["Properties"]["FromPort"], r["Properties"]["ToPort"])
                for r in t.find_resources(kind).values()
                if r["Properties"]["GroupId"] == {"Fn::GetAtt": [group, "GroupId"]}
                and isinstance(r["Properties"].get(peer_key), dict) and "FromPort" in r["Properties"]}

    lustre_ports = {(988, 988), (1018, 1023)}
    assert {(p, a, b) for p, a, b in rules("AWS::EC2::SecurityGroupIngress", efa, "SourceSecurityGroupId")
            if p == lustre} == {(lustre, a, b) for a, b in lustre_ports}
    assert {(p, a, b) for p, a, b in rules("AWS::EC2::SecurityGroupEgress", efa, "DestinationSecurityGroupId")
            if p == lustre} == {(lustre, a, b) for a, b in lustre_ports}
    assert {(p, a, b) for p, a, b in rules("AWS::EC2::SecurityGroupEgress", lustre, "DestinationSecurityGroupId")
            if p == efa} == {(efa, a, b) for a, b in lustre_ports}


# ------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("overrides", "message"), [
    ({"instance_type": "trn2.48xlarge", "count": 2, "capacity": "on-demand",
      "training_image": "pytorch-training-neuronx:2.1.2-neuronx-py310-sdk2.18.2-ubuntu20.04"},
     "training_image: got 'pytorch-training-neuronx:2.1.2-neuronx-py310-sdk2.18.2-ubuntu20.04'; allowed: an image "
     "with Neuron SDK >= 2.21.0 (trn2.48xlarge needs it; this one carries 2.18.2); images that can: "
     f"{TORCHNEURON}, pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04"),
    # an explicit image whose runtime cannot run on the pinned AMI's driver (2.30 line): refused with the ones that can
    ({"instance_type": "trn2.48xlarge", "count": 1, "capacity": "on-demand",
      "training_image": "pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04"},
     "training_image: got 'pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04'; allowed: an image "
     "whose Neuron runtime library runs on Neuron driver 2.30 (ECS Neuron AMI 2023.0.20260922: the newest "
     "aws-neuronx-dkms on 2026-09-22 (inferred)): this one carries runtime 2.32.31.0, which runs with drivers >= 2.27 "
     f"and < 2.29 (Neuron's release notes: driver 2.29 or later needs runtime 2.33 or later, else nrt_init() fails; "
     f"runtime 2.32 needs driver 2.27 or later, else the runtime fails to initialize; runtime 2.32 needs driver 2.22 "
     f"or later on trn2/trn2u, else it does not start on Trainium2); images that run there: {TORCHNEURON}"),
    ({"instance_type": "trn2.48xlarge", "count": 1, "capacity": "on-demand", "ami": AmiSettings.latest(),
      "training_image": "111111111111.dkr.ecr.us-east-2.amazonaws.com/team/train:v7", "training_image_sdk": "2.29.1"},
     "training_image: got '111111111111.dkr.ecr.us-east-2.amazonaws.com/team/train:v7'; allowed: an image whose "
     "Neuron runtime library runs on Neuron driver 2.31 or later (the ECS Neuron AMI AWS publishes now"),
    # trn1 with no image: the default (the last pytorch-training-neuronx) cannot run there either, and none can
    ({"instance_type": "trn1.32xlarge", "count": 1, "capacity": "on-demand"},
     "training_image: got 'pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04'; allowed: an image "
     "whose Neuron runtime library runs on Neuron driver 2.30"),
    ({"instance_type": "trn1.32xlarge", "count": 1, "capacity": "on-demand", "training_image": TORCHNEURON},
     "training_image: got 'public.ecr.aws/neuron/pytorch-training-neuronx:2.14.0-neuronx-py314-sdk2.33....; "
     f"allowed: an image built for trn1 ({TORCHNEURON} runs on trn2, trn2u only)"),
    ({"job_nodes": 2, "count": 4},
     "job_nodes: got 2; allowed: a multiple of 4: a job on trn2u.48xlarge takes whole UltraServers"),
    ({"instance_type": "trn2.48xlarge", "count": 1, "capacity": "on-demand",
      "training_image": "111111111111.dkr.ecr.us-east-2.amazonaws.com/team/train:v7"},
     "training_image: got '111111111111.dkr.ecr.us-east-2.amazonaws.com/team/train:v7'; allowed: an image whose "
     "Neuron SDK is known"),
    ({"instance_type": "trn1.32xlarge", "count": 1, "capacity": "on-demand", "logical_nc_config": 2},
     "logical_nc_config: got 2; allowed: unset: trn1.32xlarge has no logical NeuronCore configuration"),
    ({"capacity": "on-demand"}, "capacity.type: got 'on-demand'; allowed: 'capacity-block': trn2u.48xlarge is sold only "
                                "as UltraServer Capacity Blocks"),
    ({"count": 8, "capacity": Capacity.capacity_block(reservation_id="cr-0123456789abcdef0")},
     "capacity.reservation_id: got 'cr-0123456789abcdef0'; allowed: a resource_group_arn holding all 2 UltraServer "
     "Capacity Blocks"),
    ({"ami": {"ssm_parameter": "/my/ami"}}, "ami.follow_latest: got False; allowed: true with ssm_parameter"),
    ({"capacity_wait_timeout_s": 300}, "capacity_wait_timeout_s: got 300; allowed: a number >= 600"),
    ({"retry_attempts": 11}, "retry_attempts: got 11; allowed: a number <= 10"),
    ({"fsx_backup_retention_days": 91}, "fsx_backup_retention_days: got 91; allowed: a number <= 90"),
    ({"fsx_backup_retention_days": 7}, "fsx_backup_retention_days: got 7; allowed: 0: FSx for Lustre takes no "
                                       "automatic or user-initiated backups of a file system linked to an S3 data "
                                       "repository"),
    ({"count": 1200}, "count: got 1200; allowed: a job of at most 1,000 nodes (AWS Batch's limit on nodes per "
                      "multi-node parallel job by its guide): set job_nodes"),
    ({"count": 2000, "job_nodes": 1500, "max_job_nodes": 1200},
     "job_nodes: got 1500; allowed: a job of at most 1,200 nodes (AWS Batch's limit on nodes per multi-node parallel "
     "job, as max_job_nodes says)"),
    ({"count": 5004, "job_nodes": 400}, "count: got 5004; allowed: at most 5,000: a cluster's instances register in "
                                        "one ECS cluster"),
])
def test_refusals_name_the_field_the_value_and_what_can_run(overrides, message) -> None:
    with pytest.raises(InvalidSettings) as info:
        _cluster(**overrides)
    assert any(str(p).startswith(message) for p in info.value.problems), info.value.problems


def test_a_cluster_larger_than_one_job_runs_jobs_of_job_nodes_or_a_raised_limit() -> None:
    group = Capacity.capacity_block(resource_group_arn="arn:aws:resource-groups:us-east-2:111111111111:group/blocks")
    common = {"instance_type": "trn2u.48xlarge", "count": 1200, "allow_unlisted_region": True, "capacity": group}
    assert TrainiumClusterSettings(**common, job_nodes=400).nodes == 400
    assert TrainiumClusterSettings(**common, max_job_nodes=2000).nodes == 1200


def test_a_custom_image_with_a_declared_sdk_is_accepted_and_pulled_from_its_repository() -> None:
    settings = TrainiumClusterSettings(instance_type="trn2.48xlarge", count=1,
                                       training_image="111111111111.dkr.ecr.us-east-2.amazonaws.com/team/train:v7",
                                       training_image_sdk="2.29.1")
    assert settings.image_sdk == "2.29.1"
    with pytest.raises(InvalidSettings, match=r"training_image_sdk: got '2\.21\.0'; allowed: unset, or the SDK"):
        TrainiumClusterSettings(instance_type="trn2.48xlarge", count=1, training_image_sdk="2.21.0")


def test_a_redeploy_waits_for_running_jobs_as_long_as_the_cluster_says() -> None:
    stack = AzStack(new_app(), "Waits", env=ENV)
    net = network(stack)
    TrainiumCluster(stack, "Cluster", vpc=net.vpc, subnet=net.training_subnet,
                    settings=TrainiumClusterSettings(instance_type="trn2.48xlarge", count=2, update_timeout_minutes=2880))
    (env,) = Template.from_stack(stack).find_resources("AWS::Batch::ComputeEnvironment").values()
    assert env["Properties"]["UpdatePolicy"] == {"TerminateJobsOnUpdate": False, "JobExecutionTimeoutMinutes": 2880}
    with pytest.raises(InvalidSettings, match=r"update_timeout_minutes: got 7201"):
        TrainiumClusterSettings(instance_type="trn2.48xlarge", count=2, update_timeout_minutes=7201)


def test_the_training_stack_refuses_an_isolated_network_without_aws_endpoints() -> None:
    from stacks.training_stack import TrainingStack

    stack = AzStack(new_app(), "Net", env=ENV)
    net = network(stack, nat_gateways=0, interface_endpoints=False)
    with pytest.raises(InvalidSettings, match=r"interface_endpoints: got False; allowed: true when nat_gateways is 0"):
        TrainingStack(stack.node.scope, "Train", network=net, env=ENV,  # type: ignore[arg-type]
                      cluster=TrainiumClusterSettings(instance_type="trn2.48xlarge", count=2))


@pytest.mark.parametrize(("name", "capacity"), [("trn2", "on-demand"), ("trn2u-block", "capacity-block"),
                                                ("trn1", "odcr"), ("trn2-block", "capacity-block"),
                                                ("trn1n", "on-demand")])
def test_instances_carry_the_capacity_their_launch_template_targets(templates, name: str, capacity: str) -> None:
    """The waste detector's off-reservation signal reads this tag off the instances (the guard on Batch honouring
    the launch template's market options, which its user guide lists among the settings it ignores)."""
    (instance_tags,) = [s["Tags"] for s in _lt_data(templates[name])["TagSpecifications"]
                        if s["ResourceType"] == "instance"]
    assert {"Key": "neuronfleet:capacity", "Value": capacity} in instance_tags


@pytest.mark.parametrize("name", EXAMPLE_FLEETS)
def test_every_compute_environment_of_a_fleet_names_its_own_self_referencing_efa_group(synth_fleet, name) -> None:
    """AWS Batch puts a multi-node-parallel task's interface in the compute environment's security groups, and in the
    VPC's default group when it names none (Batch user guide, "Compute environment considerations for MNP"): every
    environment of every fleet names exactly one group of its own stack that allows all traffic from and to itself."""
    fleet = synth_fleet(name)
    seen = 0
    for short in fleet.stacks:
        t = fleet.template(short)
        for ce in properties(t, "AWS::Batch::ComputeEnvironment").values():
            seen += 1
            (group,) = ce["ComputeResources"]["SecurityGroupIds"]
            logical = group["Fn::GetAtt"][0]
            assert group == {"Fn::GetAtt": [logical, "GroupId"]}
            assert t.find_resources("AWS::EC2::SecurityGroup").get(logical), (short, logical)
            t.has_resource_properties("AWS::EC2::SecurityGroupIngress", {
                "IpProtocol": "-1", "GroupId": group, "SourceSecurityGroupId": group})
            t.has_resource_properties("AWS::EC2::SecurityGroupEgress", {
                "IpProtocol": "-1", "GroupId": group, "DestinationSecurityGroupId": group})
    clusters = sum(c.scheduler == "batch" for c in fleet.fleet.training_clusters)  # (EKS clusters use no Batch)
    assert seen == clusters + (1 if fleet.fleet.fallback.enabled else 0)


BLOCK = {"instance_type": "trn2.48xlarge", "count": 2,
         "capacity": Capacity.capacity_block(reservation_id="cr-0fedcba9876543210")}
LONGEST_BLOCK_S = 182 * 86400


@pytest.mark.parametrize(("props", "timeout", "message"), [
    ({"instance_type": "trn2.48xlarge", "count": 2}, 59, "job_timeout_s: got 59; allowed: a number >= 60"),
    ({"instance_type": "trn2.48xlarge", "count": 2}, LONGEST_BLOCK_S + 1,
     f"job_timeout_s: got {LONGEST_BLOCK_S + 1}; allowed: a number <= {LONGEST_BLOCK_S}"),
    (BLOCK, LONGEST_BLOCK_S - 1800 + 1, f"job_timeout_s: got {LONGEST_BLOCK_S - 1800 + 1}; allowed: at most "
                                        f"{LONGEST_BLOCK_S - 1800:,} on a Capacity Block (the longest block, 182 days, "
                                        "less the 30 minutes before its end"),
    ({**BLOCK, "instance_type": "trn2u.48xlarge", "count": 4, "allow_unlisted_region": True},
     LONGEST_BLOCK_S - 3600 + 1, f"allowed: at most {LONGEST_BLOCK_S - 3600:,} on a Capacity Block"),
    ({"instance_type": "trn2.48xlarge", "count": 2}, "1d", "job_timeout_s: got '1d'; allowed: a whole number"),
])
def test_a_job_timeout_outside_what_batch_and_the_blocks_take_is_refused(props, timeout, message) -> None:
    with pytest.raises(InvalidSettings, match=re.escape(message)):
        TrainiumClusterSettings(**props, job_timeout_s=timeout)


@pytest.mark.parametrize(("props", "timeout"), [
    ({"instance_type": "trn2.48xlarge", "count": 2}, 60),  # Batch's minimum
    ({"instance_type": "trn2.48xlarge", "count": 2}, LONGEST_BLOCK_S),
    (BLOCK, LONGEST_BLOCK_S - 1800),  # exactly the longest block less its 30 minutes
    (BLOCK, 3 * 3600),  # shorter than the default: a user who knows the block ends in 3 hours
])
def test_a_job_timeout_at_the_bounds_reaches_the_job_definition(props, timeout) -> None:
    settings = TrainiumClusterSettings(**props, job_timeout_s=timeout)
    assert settings.attempt_duration_s == timeout
    stack = AzStack(new_app(), "Timeout", env=ENV)
    net = network(stack)
    TrainiumCluster(stack, "Cluster", vpc=net.vpc, subnet=net.training_subnet, settings=settings)
    Template.from_stack(stack).has_resource_properties("AWS::Batch::JobDefinition", {
        "Timeout": {"AttemptDurationSeconds": timeout}})


def test_the_node_scripts_asset_holds_exactly_the_scripts_and_fetch_py_unpacks_it(tmp_path) -> None:
    """The asset CDK stages from the node package (whatever else lies there: __init__.py, fetch.py, __pycache__) is
    the SCRIPTS files and nothing else, zipped as the CLI publishes a directory asset; fetch.py's own unpacking
    takes that zip (it refuses a member with a directory part)."""
    import zipfile

    from neuronfleet.node import SCRIPTS, fetch, node_directory

    app = cdk.App(outdir=str(tmp_path / "out"))
    stack = AzStack(app, "Assets", env=ENV)
    net = network(stack)
    cluster = TrainiumCluster(stack, "Cluster", vpc=net.vpc, subnet=net.training_subnet,
                              settings=TrainiumClusterSettings(instance_type="trn2.48xlarge", count=2))
    (Path(node_directory()) / "__pycache__").mkdir(exist_ok=True)  # as a developer's tree may have it
    assembly = app.synth()
    manifest = json.loads((Path(assembly.directory) / "Assets.assets.json").read_text())
    (staged,) = [f["source"]["path"] for h, f in manifest["files"].items()
                 if f["destinations"] and cluster.node_scripts.asset_hash == h]
    folder = Path(assembly.directory) / staged
    assert sorted(p.name for p in folder.iterdir()) == sorted(SCRIPTS)
    archive = tmp_path / "node.zip"
    with zipfile.ZipFile(archive, "w") as z:  # as the CLI zips a directory asset: names relative to it
        for p in sorted(folder.iterdir()):
            z.write(p, p.name)
    dest = tmp_path / "opt"
    dest.mkdir()
    fetch.install(fetch.members(archive.read_bytes()), str(dest))
    assert sorted(p.name for p in dest.iterdir()) == sorted(SCRIPTS)
