"""NeuronEksCluster on its template: the cluster, its node groups per capacity kind with every EFA interface, the
charts with their versions and values, labels, taints and tolerations, access entries and pod identities; and what
the construct API refuses. The templates are config/eks.yaml's (the session's one synth of that fleet)."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from neuronfleet import CATALOG, InvalidSettings
from neuronfleet.eks import NeuronEksCluster
from neuronfleet.eks.job_alarms import SPLIT_METRIC, SPLIT_NAMESPACE
from neuronfleet.facts.eks_labels import NEURON_TAINT_KEY
from neuronfleet.facts.eks_observability import KUEUE_PENDING
from neuronfleet.facts.eks_pins import CHARTS, DEFAULT_CHART_VERSIONS, EFA_CHART, FSX_CSI_CHART, NEURON_CHART
from neuronfleet.settings.eks import NeuronEksClusterSettings, NeuronNodegroupSettings
from tests.conftest import ENV, AzStack, network, properties

BLOCKS = "arn:aws:resource-groups:us-east-2:444444444444:group/nf-eks-trn2u-blocks"
ADMIN = "arn:aws:iam::444444444444:role/PlatformAdmin"


@pytest.fixture(scope="module")
def built(synth_fleet) -> tuple[NeuronEksCluster, Template]:
    """config/eks.yaml's EKS stack: a Capacity Block group (pretrain), an UltraServer Capacity Block group on DRA
    (ultra), an ODCR group (tune), an On-Demand Inferentia group (serve); the session's one synth of that fleet."""
    fleet = synth_fleet("eks")
    return fleet.stacks["train-pretrain"].cluster, fleet.template("train-pretrain")


def _nodegroup(template: Template, group: str) -> dict[str, Any]:
    found = [p for p in properties(template, "AWS::EKS::Nodegroup").values()
             if p.get("Labels", {}).get("neuronfleet/node-group") == group]
    assert len(found) == 1, group
    return found[0]


def _launch_template(template: Template, nodegroup: dict[str, Any]) -> dict[str, Any]:
    return template.to_json()["Resources"][nodegroup["LaunchTemplate"]["Id"]["Ref"]]["Properties"]["LaunchTemplateData"]


def test_cluster_private_with_the_pinned_version_and_every_log(built) -> None:
    _, template = built
    template.has_resource_properties("AWS::EKS::Cluster", {
        "Version": "1.36", "AccessConfig": {"AuthenticationMode": "API"},
        "ResourcesVpcConfig": Match.object_like({"EndpointPrivateAccess": True, "EndpointPublicAccess": False}),
        "Logging": {"ClusterLogging": {"EnabledTypes": [{"Type": t} for t in (
            "api", "audit", "authenticator", "controllerManager", "scheduler")]}}})
    # the kubectl provider runs with the pinned layer, whose kubectl serves the cluster's minor version
    layers = sorted(p.get("Description", "") for p in properties(template, "AWS::Lambda::LayerVersion").values())
    assert layers == ["/opt/awscli/aws", "/opt/kubectl/kubectl 1.36.3; /opt/helm/helm 4.2.3"]


def test_admin_access_entry_and_pod_identity(built) -> None:
    _, template = built
    admin = [p for p in properties(template, "AWS::EKS::AccessEntry").values() if p["PrincipalArn"] == ADMIN]
    assert len(admin) == 1 and admin[0]["AccessPolicies"][0]["AccessScope"] == {"Type": "cluster"}
    assert json.dumps(admin[0]["AccessPolicies"][0]["PolicyArn"]).endswith(
        ':eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"]]}')
    associations = sorted((p["Namespace"], p["ServiceAccount"], p["RoleArn"]["Fn::GetAtt"][0])
                          for p in properties(template, "AWS::EKS::PodIdentityAssociation").values())
    assert [a[:2] for a in associations] == [("neuronfleet-metrics", "neuronfleet-kueue-metrics"),
                                             ("neuronfleet-serving", "neuronfleet-serving"),
                                             ("neuronfleet-training", "neuronfleet-training")]
    assert len({a[2] for a in associations}) == 3  # a role each
    template.has_resource_properties("AWS::EKS::Addon", {"AddonName": "eks-pod-identity-agent"})
    role = [p for p in properties(template, "AWS::IAM::Role").values()
            if "pods.eks.amazonaws.com" in json.dumps(p["AssumeRolePolicyDocument"])]
    # training's, serving's, the CloudWatch Observability add-on's agent (eks.cloudwatch) and the Kueue metrics
    # scraper's (eks.job_alarms.KueueMetrics: the pool installs Kueue)
    assert len(role) == 4
    assert sum('"amazon-cloudwatch"' in json.dumps(r["AssumeRolePolicyDocument"]) for r in role) == 1
    # each role may be worn only by its association's namespace and service account (Pod Identity's session tags)
    roles = properties(template, "AWS::IAM::Role")
    for namespace, account, role_id in associations:
        (statement,) = roles[role_id]["AssumeRolePolicyDocument"]["Statement"]
        assert statement["Condition"] == {"StringEquals": {"aws:RequestTag/kubernetes-namespace": namespace,
                                                           "aws:RequestTag/kubernetes-service-account": account}}


def test_node_groups_per_capacity_kind(built) -> None:
    _, template = built
    pretrain, ultra, train, serve = (_nodegroup(template, g) for g in ("pretrain", "ultra", "tune", "serve"))
    assert (pretrain["CapacityType"], ultra["CapacityType"], train["CapacityType"], serve["CapacityType"]) == (
        "CAPACITY_BLOCK", "CAPACITY_BLOCK", "ON_DEMAND", "ON_DEMAND")
    for ng in (pretrain, ultra, train, serve):
        assert ng["AmiType"] == "AL2023_x86_64_NEURON"
        assert "InstanceTypes" not in ng and "DiskSize" not in ng  # in the launch template (botocore's rule)
        assert ng["Taints"] == [{"Effect": "NO_SCHEDULE", "Key": NEURON_TAINT_KEY, "Value": "true"}]
    # a Capacity Block starts at 0 (EKS: before the block is active, and when upgrading); reserved capacity in one AZ
    assert ultra["ScalingConfig"] == {"MinSize": 0, "MaxSize": 4, "DesiredSize": 0}
    assert train["ScalingConfig"] == {"MinSize": 0, "MaxSize": 2, "DesiredSize": 2}
    assert len(pretrain["Subnets"]) == len(ultra["Subnets"]) == len(train["Subnets"]) == 1
    assert pretrain["Subnets"] == ultra["Subnets"] != train["Subnets"]  # us-east-2a, us-east-2a, us-east-2b
    assert len(serve["Subnets"]) == 2
    assert ultra["Labels"] == {"neuronfleet/node-group": "ultra", "neuronfleet/capacity": "capacity-block",
                               "neuronfleet/neuron-devices": "dra", "neuronfleet/ultraserver-size": "4"}
    assert train["Labels"]["neuronfleet/neuron-devices"] == "device-plugin"
    ultra_lt, train_lt, serve_lt = (_launch_template(template, ng) for ng in (ultra, train, serve))
    assert ultra_lt["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert ultra_lt["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationResourceGroupArn": BLOCKS}}
    assert "InstanceMarketOptions" not in train_lt
    assert train_lt["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0a1b2c3d4e5f60721"}}
    for lt in (ultra_lt, train_lt, serve_lt):
        assert lt["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 1}
        assert "ImageId" not in lt and "IamInstanceProfile" not in lt  # EKS refuses a profile; the AMI type picks
        assert all("SubnetId" not in ni for ni in lt["NetworkInterfaces"])


@pytest.mark.parametrize(("group", "instance_type"), [("pretrain", "trn2.48xlarge"), ("ultra", "trn2u.48xlarge"),
                                                      ("tune", "trn1.32xlarge"), ("serve", "inf2.xlarge")])
def test_every_efa_interface_in_the_catalogs_layout(built, group: str, instance_type: str) -> None:
    _, template = built
    lt = _launch_template(template, _nodegroup(template, group))
    assert lt["InstanceType"] == instance_type
    slots = CATALOG.get(instance_type).network_interfaces()
    got = [(ni["NetworkCardIndex"], ni["DeviceIndex"], ni.get("InterfaceType", "interface"))
           for ni in lt["NetworkInterfaces"]]
    assert got == [(s.network_card, s.device_index, s.interface_type) for s in slots]
    assert sum(t != "interface" for *_, t in got) == CATALOG.get(instance_type).efa_interfaces
    for ni in lt["NetworkInterfaces"]:  # the EFA group and the cluster's own (nodes reach the control plane)
        assert len(ni["Groups"]) == 2
        assert any(g.get("Fn::GetAtt", [None, None])[1] == "ClusterSecurityGroupId" for g in ni["Groups"])


def test_system_nodes_untainted_imdsv2(built) -> None:
    _, template = built
    system = [p for p in properties(template, "AWS::EKS::Nodegroup").values() if "Labels" not in p]
    assert len(system) == 1 and "Taints" not in system[0]
    assert system[0]["AmiType"] == "AL2023_x86_64_STANDARD"
    lt = _launch_template(template, system[0])
    assert lt["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 1}


def _chart(template: Template, chart: str, release: str | None = None) -> dict[str, Any]:
    found = [p for p in properties(template, "Custom::AWSCDK-EKS-HelmChart").values()
             if p["Chart"] == chart and p["Release"] == (release or chart)]
    assert len(found) == 1, chart
    return found[0]


def test_charts_pinned_with_values(built) -> None:
    _, template = built
    for key, release in ((NEURON_CHART, None), (NEURON_CHART, "neuron-dra"), (EFA_CHART, None),
                         (FSX_CSI_CHART, None)):
        pin = CHARTS[key][DEFAULT_CHART_VERSIONS[key]]
        chart = _chart(template, pin.chart, release)
        assert (chart["Version"], chart["Repository"], chart["Namespace"]) == (pin.version, pin.repository,
                                                                              "kube-system")
    neuron = {p["Release"]: json.loads(p["Values"]) for p in properties(template, "Custom::AWSCDK-EKS-HelmChart").values()
              if p["Chart"] == "neuron-helm-chart"}
    # both device managers, each in its own release, kept to its own node groups by the label the node groups carry
    assert neuron["neuron-helm-chart"]["devicePlugin"] == {
        "enabled": True, "nodeSelector": {"neuronfleet/neuron-devices": "device-plugin"}}
    assert neuron["neuron-helm-chart"]["draDriver"] == {"enabled": False}
    assert neuron["neuron-dra"]["draDriver"] == {"enabled": True, "nodeSelector": {"neuronfleet/neuron-devices": "dra"}}
    assert neuron["neuron-dra"]["devicePlugin"] == {"enabled": False}
    # the scheduler extension and the problem detector off (config/eks.yaml leaves them at their defaults)
    assert neuron["neuron-helm-chart"]["scheduler"] == {"enabled": False}
    assert neuron["neuron-helm-chart"]["npd"] == {"enabled": False}
    efa = json.loads(_chart(template, "aws-efa-k8s-device-plugin")["Values"])
    assert efa["tolerations"] == [{"key": NEURON_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]


def test_every_node_group_repairs_and_the_agent_is_installed(built) -> None:
    """config/eks.yaml's whole fleet (issue 40's Done-when): auto repair on every node group, Neuron and system, the
    node monitoring agent add-on, and no chart namespace the kit would have to create (the detector is off)."""
    _, template = built
    groups = properties(template, "AWS::EKS::Nodegroup")
    assert len(groups) == 5 and all(p["NodeRepairConfig"] == {"Enabled": True} for p in groups.values())
    addons = {p["AddonName"] for p in properties(template, "AWS::EKS::Addon").values()}
    assert "eks-node-monitoring-agent" in addons
    neuron = [json.loads(p["Values"]) for p in properties(template, "Custom::AWSCDK-EKS-HelmChart").values()
              if p["Chart"] == "neuron-helm-chart"]
    assert all(not v["npd"]["enabled"] for v in neuron) and len(neuron) == 2


def test_utilisation_publisher_per_node_group(built) -> None:
    cluster, template = built
    manifests = [json.loads(p["Manifest"]) for p in properties(template, "Custom::AWSCDK-EKS-KubernetesResource").values()
                 if isinstance(p["Manifest"], str)]  # (the service account's names its role: a Fn::Join)
    daemonsets = [o for m in manifests for o in m if o["kind"] == "DaemonSet"]
    assert sorted(d["metadata"]["name"] for d in daemonsets) == [  # none on ultra: DRA (Neuron Monitor: unsupported)
        "neuronfleet-utilisation-pretrain", "neuronfleet-utilisation-serve", "neuronfleet-utilisation-tune"]
    pretrain = next(d for d in daemonsets if d["metadata"]["name"].endswith("pretrain"))["spec"]["template"]["spec"]
    assert pretrain["hostNetwork"] is True and pretrain["nodeSelector"] == {"neuronfleet/node-group": "pretrain"}
    assert pretrain["containers"][0]["command"][2].endswith("--cores 64")  # trn2 at LNC=2: 64 logical cores
    # the node role may put metrics only into the kit's namespace
    template.has_resource_properties("AWS::IAM::Policy", {"PolicyDocument": {"Statement": Match.array_with([
        Match.object_like({"Action": "cloudwatch:PutMetricData",
                           "Condition": {"StringEquals": {"cloudwatch:namespace": cluster.metrics_namespace}}})])}})


def test_the_job_alarms_go_to_the_fleets_topic(synth_fleet) -> None:
    """The reference stack wires EksJobAlarms: the UltraServer split alarm, and the pool's training ClusterQueue
    pending alarm (the pool installs Kueue), each into the fleet's alerts topic (the alerts stack's one topic)."""
    fleet = synth_fleet("eks")
    template = fleet.template_json("train-pretrain")
    alarms = properties(Template.from_json(template), "AWS::CloudWatch::Alarm").values()
    [split] = [a for a in alarms if a.get("MetricName") == SPLIT_METRIC]
    assert split["Namespace"] == SPLIT_NAMESPACE
    [pending] = [a for a in alarms if KUEUE_PENDING in json.dumps(a.get("Metrics", []))]
    queues = {d["Value"] for q in pending["Metrics"] if "MetricStat" in q
              for d in q["MetricStat"]["Metric"]["Dimensions"] if d["Name"] == "cluster_queue"}
    assert queues == {fleet.stacks["train-pretrain"].pool.names["training_queue"]} == {"pretrain-training"}
    [topic] = properties(fleet.template("alerts"), "AWS::SNS::Topic")
    for alarm in (split, pending):
        [action] = alarm["AlarmActions"]
        stack, output = action["Fn::ImportValue"].split(":", 1)
        assert stack == fleet.stacks["alerts"].stack_name
        assert fleet.template_json("alerts")["Outputs"][output]["Value"] == {"Ref": topic}


def test_capacity_and_family_tags_reach_the_instances(built) -> None:
    _, template = built
    lt = _launch_template(template, _nodegroup(template, "ultra"))
    tags = {t["Key"]: t["Value"] for spec in lt["TagSpecifications"] if spec["ResourceType"] == "instance"
            for t in spec["Tags"]}
    assert tags["neuronfleet:capacity"] == "capacity-block" and tags["neuronfleet:accelerator-family"] == "trainium"
    assert tags["neuronfleet:fleet"] == "nf-eks"


# ------------------------------------------------------------------------------------------ the construct API


def _build(settings: Any, **kwargs: Any) -> None:
    app = cdk.App()
    stack = AzStack(app, "S", env=ENV)
    net = network(stack)
    NeuronEksCluster(stack, "Eks", vpc=net.vpc, settings=settings, vpc_subnets=net.compute_subnets, **kwargs)


def test_reserved_node_group_over_several_azs_is_refused() -> None:
    settings = {"node_groups": [{"name": "cb", "instance_type": "trn2.48xlarge", "count": 2,
                                 "capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}}]}
    with pytest.raises(InvalidSettings) as err:
        _build(settings)
    assert err.value.problems[0].path == "node_groups[0].availability_zones"
    assert err.value.problems[0].value == ["us-east-2a", "us-east-2b"]
    assert "one AZ" in err.value.problems[0].allowed


@pytest.mark.parametrize(("group", "path", "words"), [
    ({"instance_type": "trn2u.48xlarge", "count": 6,
      "capacity": {"type": "capacity-block", "resource_group_arn": BLOCKS}}, "node_groups[0].count", "whole UltraServers"),
    ({"instance_type": "trn2.48xlarge", "count": 2, "dra": True}, "node_groups[0].dra", "device_plugin"),
    ({"instance_type": "trn1.32xlarge", "count": 2, "dra": True, "device_plugin": False}, "node_groups[0].dra",
     "trn2.48xlarge"),
    ({"instance_type": "trn2.48xlarge", "count": 2, "availability_zones": ["us-east-2a", "us-east-2b"],
      "capacity": {"type": "odcr", "reservation_id": "cr-0123456789abcdef0"}}, "node_groups[0].availability_zones",
     "one AZ"),
])
def test_settings_refused_through_the_construct_api(group: dict[str, Any], path: str, words: str) -> None:
    with pytest.raises(InvalidSettings) as err:
        _build({"node_groups": [{"name": "g", **group}]})
    assert [p.path for p in err.value.problems] == [path]
    assert words in err.value.problems[0].allowed


@pytest.mark.parametrize(("field", "value", "words"), [
    ("kubernetes_version", "1.35", "aws-cdk-lambda-layer-kubectl-v36"),
    ("charts", {"neuron": "1.10.0"}, "1.9.0"),
    ("charts", {"efa_device_plugin": "v0.5.29"}, "v0.5.30"),
])
def test_versions_the_kit_has_not_recorded_are_refused(field: str, value: Any, words: str) -> None:
    with pytest.raises(InvalidSettings) as err:
        _build({"node_groups": [{"name": "g", "instance_type": "inf2.xlarge", "count": 1}], field: value})
    assert err.value.problems[0].path.startswith(field) and words in err.value.problems[0].allowed


def test_shared_storage_is_the_batch_paths_and_mounted_in_pods(built) -> None:
    """The same storage as a Batch cluster (training.lustre.lustre_storage): PERSISTENT_2 Lustre linked to a
    versioned bucket, the Lustre ports between it and the Neuron nodes' group only; a static volume for pods; the
    workloads' Pod Identity role may read and write the data bucket."""
    _, template = built
    template.has_resource_properties("AWS::FSx::FileSystem", {"LustreConfiguration": Match.object_like({
        "DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 250})})
    template.has_resource_properties("AWS::FSx::DataRepositoryAssociation", {"FileSystemPath": "/data"})
    (fs,) = template.find_resources("AWS::FSx::FileSystem")
    volumes = [p["Manifest"] for p in properties(template, "Custom::AWSCDK-EKS-KubernetesResource").values()
               if "fsx.csi.aws.com" in json.dumps(p["Manifest"])]
    assert len(volumes) == 1 and {"Ref": fs} in volumes[0]["Fn::Join"][1]
    (efa_group,) = [k for k, v in template.find_resources("AWS::EC2::SecurityGroup").items()
                    if "EFA" in v["Properties"]["GroupDescription"]]
    for port in (988, 1018):
        template.has_resource_properties("AWS::EC2::SecurityGroupIngress", {
            "GroupId": {"Fn::GetAtt": [efa_group, "GroupId"]}, "FromPort": port, "Description": "Lustre from FSx"})
    pod_role = _pod_identity_role(template, "neuronfleet-training")
    policies = [p for p in properties(template, "AWS::IAM::Policy").values() if {"Ref": pod_role} in p["Roles"]]
    actions = {a for p in policies for st in p["PolicyDocument"]["Statement"] if st["Effect"] == "Allow"
               for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])}
    assert {"s3:GetObject", "s3:PutObject", "s3:ListBucket"} <= actions
    assert not {"s3:DeleteObjectVersion", "s3:*"} & actions



# ------------------------------------------------------------------------- identities (issue 36, findings 4, 5, 8)


def _pod_identity_role(template: Template, service_account: str) -> str:
    [arn] = [p["RoleArn"] for p in properties(template, "AWS::EKS::PodIdentityAssociation").values()
             if p["ServiceAccount"] == service_account]
    return str(arn["Fn::GetAtt"][0])


def _statements(template: Template, role: str) -> list[dict[str, Any]]:
    return [st for p in properties(template, "AWS::IAM::Policy").values() if {"Ref": role} in p["Roles"]
            for st in p["PolicyDocument"]["Statement"]]


def test_serving_reads_nothing_of_training(built) -> None:
    """Serving's role holds no statement at all until its model is granted (grant_serving_model_read); above all none
    on the training data bucket."""
    _, template = built
    serving = _pod_identity_role(template, "neuronfleet-serving")
    (bucket,) = [k for k, v in template.find_resources("AWS::S3::Bucket").items()
                 if v["Properties"].get("VersioningConfiguration")]
    assert bucket not in json.dumps(_statements(template, serving))
    assert _statements(template, serving) == []


def test_training_may_not_write_a_drain_flag(built) -> None:
    _, template = built
    training = _pod_identity_role(template, "neuronfleet-training")
    [deny] = [st for st in _statements(template, training) if st["Effect"] == "Deny"]
    assert sorted(deny["Action"]) == ["s3:DeleteObject", "s3:DeleteObjectVersion", "s3:PutObject"]
    assert json.dumps(deny["Resource"]).endswith('"/neuronfleet/drain/*"]]}')


def test_service_accounts_after_their_namespaces(built) -> None:
    cluster, template = built
    stack = cdk.Stack.of(cluster)
    resources = template.to_json()["Resources"]
    namespaces = stack.get_logical_id(cluster.namespaces.node.default_child)
    accounts = [k for k, r in resources.items() if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
                and "ServiceAccountResource" in k]  # aws-cdk-lib's id: manifest-<id>ServiceAccountResource
    workloads = [k for k in accounts if "KueueMetrics" not in k]
    assert len(workloads) == 2 and all(namespaces in resources[k]["DependsOn"] for k in workloads)
    # the Kueue metrics scraper's (EksJobAlarms): after its own namespace, neuronfleet-metrics
    [scraper] = [k for k in accounts if "KueueMetrics" in k]
    [own] = [k for k, r in resources.items() if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
             and '\\"kind\\":\\"Namespace\\"' in json.dumps(r["Properties"]["Manifest"])
             and "neuronfleet-metrics" in json.dumps(r["Properties"]["Manifest"])]
    assert own in resources[scraper]["DependsOn"]
    [claim] = [k for k, r in resources.items() if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
               and "PersistentVolumeClaim" in json.dumps(r["Properties"]["Manifest"])]
    assert namespaces in resources[claim]["DependsOn"]


def test_cluster_admin_only_for_the_kubectl_role_and_the_named_admins(built) -> None:
    """aws-cdk-lib 2.275.0 gives its kubectl provider's role a cluster-scoped AmazonEKSClusterAdminPolicy entry with no
    option to narrow it (aws_eks_v2 Cluster: grantClusterAdmin("ClusterAdminRoleAccess", ...)); the kit adds only the
    fleet file's admin_role_arns. The pool's entry carries no access policy (its RBAC group only)."""
    cluster, template = built
    stack = cdk.Stack.of(cluster)
    provider = cluster.cluster.kubectl_provider
    assert provider is not None and provider.role is not None
    kubectl_role = stack.get_logical_id(provider.role.node.default_child)
    admins = [p["PrincipalArn"] for p in properties(template, "AWS::EKS::AccessEntry").values()
              if "AmazonEKSClusterAdminPolicy" in json.dumps(p.get("AccessPolicies", []))]
    assert sorted(admins, key=json.dumps) == sorted([ADMIN, {"Fn::GetAtt": [kubectl_role, "Arn"]}], key=json.dumps)
    trust = properties(template, "AWS::IAM::Role")[kubectl_role]["AssumeRolePolicyDocument"]["Statement"]
    assert [st["Principal"] for st in trust] == [{"Service": "lambda.amazonaws.com"}]


def _small() -> tuple[cdk.Stack, NeuronEksCluster]:
    app = cdk.App()
    stack = AzStack(app, "S", env=ENV)
    net = network(stack)
    cluster = NeuronEksCluster(stack, "Eks", vpc=net.vpc, vpc_subnets=net.compute_subnets,
                               settings=NeuronEksClusterSettings(node_groups=(NeuronNodegroupSettings(
                                   name="g", instance_type="inf2.xlarge", count=1),)))
    return stack, cluster


def _arn(path: str) -> dict[str, Any]:
    return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":s3:::{path}"]]}


def test_serving_model_grant_is_its_prefix_of_its_owners_bucket_never_trainings() -> None:
    from aws_cdk import aws_s3 as s3

    stack, cluster = _small()
    data = s3.Bucket(stack, "Data")
    cluster.grant_training_data(data)
    with pytest.raises(InvalidSettings) as err:
        cluster.grant_serving_model_read(data, "chat/")
    assert [p.path for p in err.value.problems] == ["bucket"] and "never reads the training bucket" in \
        err.value.problems[0].allowed
    with pytest.raises(InvalidSettings) as err:  # the same bucket by name is the same bucket
        cluster.grant_serving_model_read(s3.Bucket.from_bucket_name(stack, "Same", data.bucket_name), "chat/")
    models = s3.Bucket.from_bucket_name(stack, "Models", "models-bucket")
    for bad in ("", "chat/*", "chat/${aws:username}/", "/chat/"):
        with pytest.raises(InvalidSettings) as err:
            cluster.grant_serving_model_read(models, bad)
        assert [p.path for p in err.value.problems] == ["prefix"]
    cluster.grant_serving_model_read(models, "chat/llama-3-8b/")
    template = Template.from_stack(stack)
    serving = stack.get_logical_id(cluster.serving_role.node.default_child)  # type: ignore[arg-type]
    statements = _statements(template, serving)
    assert statements == [
        {"Action": "s3:GetObject", "Effect": "Allow", "Resource": _arn("models-bucket/chat/llama-3-8b/*"),
         "Condition": {"StringEquals": {"s3:ResourceAccount": ENV.account}}},
        {"Action": "s3:ListBucket", "Effect": "Allow", "Resource": _arn("models-bucket"),
         "Condition": {"StringEquals": {"s3:ResourceAccount": ENV.account},
                       "StringLike": {"s3:prefix": ["chat/llama-3-8b/*"]}}}]
    training = stack.get_logical_id(cluster.training_role.node.default_child)  # type: ignore[arg-type]
    assert "models-bucket" not in json.dumps(_statements(template, training))


def test_a_privileged_image_by_tag_is_refused() -> None:
    with pytest.raises(InvalidSettings) as err:
        _build({"node_groups": [{"name": "g", "instance_type": "inf2.xlarge", "count": 1}]},
               monitor_image="public.ecr.aws/neuron/neuron-monitor:1.3.0")
    assert err.value.problems[0].path == "monitor_image" and "pinned by digest" in err.value.problems[0].allowed
