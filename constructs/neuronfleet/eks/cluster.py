"""NeuronEksCluster: Trainium and Inferentia on Amazon EKS, a second scheduler beside AWS Batch.

aws-cdk-lib's ``aws_eks_v2`` cluster with an explicit kubectl provider (the pinned layer of its Kubernetes version),
the API endpoint private by default, admins through access entries, workloads through EKS Pod Identity. Neuron node
groups are ``eks.Nodegroup`` constructs, never ``Cluster.add_nodegroup_capacity()``, which applies a stale bundled
Neuron device plugin without RBAC for inf1/inf2 types (aws/aws-cdk#29262). Each one launches from the same launch
template code as the Batch path (:func:`neuronfleet.training.batch.efa_launch_template`: every EFA interface in AWS's
layout, IMDSv2 with a hop limit of 1, the capacity's market options and reservation), with the Neuron AMI type, a
Neuron taint and the kit's labels, and node auto repair on (the EKS node monitoring agent add-on sets the conditions
it acts on). The Neuron chart (one release for the device plugin, with the scheduler extension and node problem
detector when asked, one for the DRA driver: never both in one release), the EFA device plugin (told to tolerate the
Neuron taint) and the FSx for Lustre CSI driver are installed pinned; the kit's utilisation publisher runs as a
DaemonSet so the cost monitors see EKS nodes as they see Batch hosts. Every UltraServer node group on the device plugin
outside a sharing pool gets a Kueue placement queue (Kueue installed pinned, once), so a training Job of several
UltraServers is admitted only on whole free UltraServers (docs/eks.md, "Jobs that land whole").
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, cast

from aws_cdk import Acknowledgment, CfnResource, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from neuronfleet_contract.namespaces import NEURON_NAMESPACE

from ..capacity.lifecycle import CapacityBlockNodegroup
from ..core.args import settings_argument
from ..core.fleet_tag_check import warn_without_fleet_tag
from ..core.nag import SESSION_MANAGER, acknowledge, acknowledge_wildcards
from ..core.problems import InvalidSettings, Problem
from ..core.region import check_in_region
from ..core.s3_reads import owner_condition
from ..core.tagging import tag_capacity, tag_devices, tag_family
from ..core.trust import confine_pod_identity_role
from ..facts.eks_labels import NEURON_TAINT_KEY, NEURON_TAINT_VALUE
from ..facts.eks_pins import (
    CHARTS,
    EFA_CHART,
    FSX_CSI_CHART,
    KUBECTL_LAYERS,
    NEURON_CHART,
    NEURON_DRA_RELEASE,
    NODE_MONITORING_AGENT,
    NPD_METRICS_NAMESPACE,
    NPD_NAMESPACE,
    NPD_SERVICE_ACCOUNT,
    POD_IDENTITY_AGENT,
)
from ..facts.kueue import KUEUE_CHART, KUEUE_NAMESPACE, KUEUE_VERSION
from ..settings.eks import NeuronEksClusterSettings, NeuronNodegroupSettings
from ..training.batch import IMDS_HOP_LIMIT, SESSION_MANAGER_ACTIONS, efa_launch_template, efa_security_group
from ..training.lustre import LUSTRE_PORTS, grant_data
from . import manifests
from .cloudwatch import CloudWatchObservability

__all__ = ["NODE_MANAGED_POLICIES", "CapacityBlockNodegroup", "NeuronEksCluster"]

NODE_MANAGED_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly", "AmazonEKS_CNI_Policy")
"""What a managed node's role needs (Amazon EKS user guide, "Amazon EKS node IAM role": the worker node policy, an
ECR read policy, and the VPC CNI's policy when the CNI has no role of its own)."""

CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
"""The access policy an admin role gets, cluster-wide (botocore 1.44.5 eks model: AssociateAccessPolicy)."""

CAPACITY_TYPES = {"on-demand": eks.CapacityType.ON_DEMAND, "odcr": eks.CapacityType.ON_DEMAND,
                  "capacity-block": eks.CapacityType.CAPACITY_BLOCK}
"""A node group on an ODCR is On-Demand capacity whose launch template targets the reservation; a Capacity Block
node group takes ``CAPACITY_BLOCK`` (botocore 1.44.5 eks model, CapacityTypes) and, as EKS requires, a custom launch
template with ``InstanceMarketOptions.MarketType: capacity-block`` and the block's ``CapacityReservationTarget``
("Create a managed node group with Capacity Blocks for ML", Amazon EKS user guide)."""


def kubectl_layer(scope: Construct, kubernetes_version: str) -> Any:
    """The pinned kubectl layer of ``kubernetes_version`` (neuronfleet.facts.eks_pins.KUBECTL_LAYERS)."""
    pin = KUBECTL_LAYERS[kubernetes_version]
    try:
        module = importlib.import_module(pin.module)
    except ImportError:
        raise InvalidSettings([Problem("kubernetes_version", kubernetes_version, (
            f"a version whose kubectl layer is installed: pip install {pin.package}=={pin.package_version} "
            "(requirements.txt pins it)"))], what="Neuron EKS cluster") from None
    return getattr(module, pin.class_name)(scope, "KubectlLayer")


class NeuronEksCluster(Construct):
    """An EKS cluster with Neuron node groups, the Neuron chart, EFA and FSx for Lustre.

    Example::

        cluster = NeuronEksCluster(self, "Eks", vpc=net.vpc, vpc_subnets=net.compute_subnets,
            settings=NeuronEksClusterSettings(
                admin_role_arns=["arn:aws:iam::111111111111:role/Platform"],
                node_groups=[NeuronNodegroupSettings(
                    name="pretrain", instance_type="trn2u.48xlarge", count=8,      # two UltraServers
                    capacity=Capacity.capacity_block(resource_group_arn=blocks, availability_zone="us-east-2b"))]))
        cluster.cluster            # aws_eks_v2.Cluster
        cluster.node_groups        # name -> aws_eks_v2.Nodegroup
        cluster.training_role      # the Pod Identity role of training's service account (its namespace)
        cluster.serving_role       # the Pod Identity role of serving's service account (its namespace)
        cluster.grant_training_data(data_bucket)                   # read/write, never a drain flag
        cluster.grant_serving_model_read(models, "chat/llama-3-8b/")  # read only, never the training bucket
    """

    def __init__(self, scope: Construct, construct_id: str, *, vpc: ec2.IVpc, settings: NeuronEksClusterSettings,
                 vpc_subnets: ec2.SubnetSelection | None = None, file_system: fsx.LustreFileSystem | None = None,
                 metrics_namespace: str = NEURON_NAMESPACE,
                 service_account: str = manifests.TRAINING_SERVICE_ACCOUNT,
                 serving_service_account: str = manifests.SERVING_SERVICE_ACCOUNT,
                 monitor_image: str | None = None, shared_node_groups: Sequence[str] = ()) -> None:
        """Raises :class:`InvalidSettings` for settings the region cannot serve and for a node group on reserved
        capacity whose subnets span several AZs. ``vpc_subnets``: where the cluster's ENIs and nodes go (private
        subnets; default: the VPC's private ones). ``file_system``: an FSx for Lustre file system the nodes mount
        (a static PersistentVolume ``fsx`` and its claim; the Batch path's design: /fsx, /fsx/data linked to S3).
        ``service_account`` and ``serving_service_account``: training's (in ``neuronfleet-training``) and serving's
        (in ``neuronfleet-serving``), each with its own Pod Identity role. ``monitor_image``: the utilisation
        publisher's image, pinned by digest (default: the kit's pin, neuronfleet.facts.eks_pins.NEURON_MONITOR_DIGEST).
        ``shared_node_groups``: the node groups a SharingPool will share (its own Kueue queues place their jobs); every
        other UltraServer node group on the device plugin gets a placement queue (:attr:`placement_queues`)."""
        super().__init__(scope, construct_id)
        settings = settings_argument(settings, NeuronEksClusterSettings, what="NeuronEksCluster")
        try:
            self.monitor_image = manifests.monitor_image(monitor_image)
        except ValueError:
            raise InvalidSettings([Problem("monitor_image", monitor_image, (
                "a reference pinned by digest: <repository>[:<tag>]@sha256:<64 lowercase hex> (the utilisation "
                "publisher runs privileged in the host network)"))], what="NeuronEksCluster") from None
        check_in_region(self, settings.what, settings.region_problems)
        unknown = [n for n in shared_node_groups if n not in {g.name for g in settings.node_groups}]
        if unknown:
            raise InvalidSettings([Problem("shared_node_groups", unknown, (
                f"names of the cluster's node groups: {sorted(g.name for g in settings.node_groups)}"))],
                what="NeuronEksCluster")
        self.settings = settings
        self.vpc = vpc
        self.vpc_subnets = vpc_subnets or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
        self.metrics_namespace = metrics_namespace
        self.kubectl_layer = kubectl_layer(self, settings.kubernetes_version)
        self.cluster = eks.Cluster(
            self, "Cluster", version=eks.KubernetesVersion.of(settings.kubernetes_version), vpc=vpc,
            vpc_subnets=[self.vpc_subnets],
            endpoint_access=(eks.EndpointAccess.PRIVATE if settings.endpoint_access == "private"
                             else eks.EndpointAccess.PUBLIC_AND_PRIVATE),
            kubectl_provider_options=eks.KubectlProviderOptions(kubectl_layer=self.kubectl_layer),
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP, default_capacity=0,
            cluster_logging=[eks.ClusterLoggingTypes.API, eks.ClusterLoggingTypes.AUDIT,
                             eks.ClusterLoggingTypes.AUTHENTICATOR, eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
                             eks.ClusterLoggingTypes.SCHEDULER],
        )
        self._acknowledge_cluster()
        self.pod_identity_agent = self._pod_identity_agent()
        """aws-cdk-lib's own ``eks-pod-identity-agent`` add-on, pinned (:meth:`_pod_identity_agent`)."""
        for i, arn in enumerate(settings.admin_role_arns):
            self.cluster.grant_access(f"Admin{i}", arn, [eks.AccessPolicy.from_access_policy_name(
                CLUSTER_ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER)])
        self.security_group = efa_security_group(
            self, "EfaSecurityGroup", vpc=vpc,
            description="Neuron nodes: EFA (all traffic within the group), HTTPS out")
        self.node_role = self._node_role()
        self.system_node_group = self._system_node_group()
        self.launch_templates: dict[str, ec2.LaunchTemplate] = {}
        self.network_interfaces: dict[str, list[dict[str, Any]]] = {}
        self.node_groups: dict[str, eks.Nodegroup] = {}
        for i, group in enumerate(settings.node_groups):
            self._node_group(i, group)
        self.problem_detector_role: iam.Role | None = None
        """The node problem detector's Pod Identity role (None while the detector is off)."""
        self.charts = self._charts()
        self.node_monitoring_agent = self._node_monitoring_agent()
        self.namespaces = self.cluster.add_manifest("Namespaces", *manifests.namespaces())
        """Training's and serving's namespaces (Pod Security ``baseline`` enforced in each)."""
        self.kueue: eks.HelmChart | None = None
        """Kueue's Helm release, pinned (neuronfleet.facts.kueue), once installed (:meth:`install_kueue`)."""
        placed = [g for g in settings.node_groups
                  if manifests.places_whole_ultraservers(g) and g.name not in shared_node_groups]
        self.placement_queues = {g.name: manifests.placement_name(g) for g in placed}
        """Node group -> the LocalQueue (in training's namespace) that admits its training only on whole free
        UltraServers: every UltraServer node group on the device plugin outside a sharing pool (docs/eks.md, 'Jobs that
        land whole'). Not a DRA one: Kueue v0.19.2 does not place DRA devices by topology (facts.kueue.TAS_DRA)."""
        self.placement: eks.KubernetesManifest | None = None
        if placed:
            self.placement = self.cluster.add_manifest(
                "WholeUltraServers", *(o for g in placed for o in manifests.placement_objects(g)))
            self.placement.node.add_dependency(self.install_kueue(), self.namespaces)
        self.file_system: fsx.LustreFileSystem | None = None
        if file_system is not None:
            self.mount(file_system)
        self.training_service_account = self._service_account(
            "Workloads", service_account, manifests.TRAINING_NAMESPACE)
        self.training_role = self.training_service_account.role
        """Training's Pod Identity role: nothing until granted (:meth:`grant_training_data`)."""
        self.serving_service_account = self._service_account(
            "Serving", serving_service_account, manifests.SERVING_NAMESPACE)
        self.serving_role = self.serving_service_account.role
        """Serving's Pod Identity role: nothing until granted (:meth:`grant_serving_model_read`)."""
        self.workload_service_account, self.workload_role = self.training_service_account, self.training_role
        """Earlier names of training's service account and role."""
        self._training_buckets: list[s3.IBucket] = []
        self.utilisation = self.cluster.add_manifest(
            "UtilisationPublisher", *manifests.utilisation_publisher(
                settings.node_groups, namespace_metrics=metrics_namespace, region=Stack.of(self).region,
                image=monitor_image))
        self.utilisation.node.add_dependency(*self.node_groups.values())
        self.observability = CloudWatchObservability(self, "Observability", cluster=self.cluster)
        """The CloudWatch Observability add-on (Neuron metrics per node, pod and UltraServer; every container's logs in
        its application log group) with its Pod Identity role: eks.cloudwatch."""

    # ------------------------------------------------------------------------------------------------ identities

    def _service_account(self, construct_id: str, name: str, namespace: str) -> eks.ServiceAccount:
        """A service account in ``namespace`` with its own EKS Pod Identity role, applied after the namespace."""
        account = self.cluster.add_service_account(construct_id, name=name, namespace=namespace,
                                                   identity_type=eks.IdentityType.POD_IDENTITY)
        account.node.find_child(f"manifest-{construct_id}ServiceAccountResource").node.add_dependency(self.namespaces)
        # only this namespace's service account may wear the role (Pod Identity's session tags; core.trust)
        confine_pod_identity_role(account.role, namespace=namespace, service_account=name)
        return account

    def grant_training_data(self, bucket: s3.IBucket) -> iam.Grant:
        """Training reads and writes ``bucket`` (its data and checkpoints: neuronfleet.training.lustre.grant_data,
        which also denies writes to the capacity drain flags' prefix). Serving may never be given it
        (:meth:`grant_serving_model_read` refuses it)."""
        self._training_buckets.append(bucket)
        return grant_data(bucket, self.training_role)

    def grant_serving_model_read(self, bucket: s3.IBucket, prefix: str, *,
                                 owner_account: str | None = None) -> iam.Grant:
        """Serving reads its model: ``s3:GetObject`` under ``prefix`` of ``bucket`` and ``s3:ListBucket`` of that
        prefix only, and only while the bucket belongs to ``owner_account`` (``s3:ResourceAccount``; default: the
        stack's account). Raises :class:`InvalidSettings` for a training bucket (serving never reads training data)
        and for a prefix that is empty or holds an IAM wildcard or policy variable (``*``, ``?``, ``${``)."""
        problems = []
        if any(bucket is b or bucket.bucket_name == b.bucket_name  # the same name, or the same unresolved token
               for b in self._training_buckets):
            problems.append(Problem("bucket", bucket.bucket_name, (
                "a bucket that is not training's: serving never reads the training bucket; copy the model out")))
        if not prefix or any(c in prefix for c in ("*", "?", "${")) or prefix.startswith("/"):
            problems.append(Problem("prefix", prefix, (
                "the model's key prefix, e.g. 'chat/llama-3-8b/': not empty, no leading '/', no '*', '?' or '${' "
                "(each would widen the grant in IAM)")))
        if problems:
            raise InvalidSettings(problems, what="NeuronEksCluster.grant_serving_model_read")
        owner = owner_condition(Stack.of(self), owner_account)
        grant = iam.Grant.add_to_principal(grantee=self.serving_role, actions=["s3:GetObject"],
                                           resource_arns=[bucket.arn_for_objects(f"{prefix}*")], conditions=owner)
        grant = grant.combine(iam.Grant.add_to_principal(
            grantee=self.serving_role, actions=["s3:ListBucket"], resource_arns=[bucket.bucket_arn],
            conditions={**owner, "StringLike": {"s3:prefix": [f"{prefix}*"]}}))
        acknowledge_wildcards(self.serving_role, "serving reads its model: every object under its prefix",
                              resources=(bucket.arn_for_objects(f"{prefix}*"),))
        return grant

    def install_kueue(self) -> eks.HelmChart:
        """Kueue's chart at the kit's pin in ``kueue-system`` (created), after the system nodes, once per cluster: the
        placement queues and a sharing pool use the same release. Its controller configuration is the chart's own."""
        if self.kueue is None:
            self.kueue = self.cluster.add_helm_chart(
                "Kueue", chart="kueue", repository=KUEUE_CHART, version=KUEUE_VERSION, namespace=KUEUE_NAMESPACE,
                create_namespace=True, release="kueue", wait=True)
            self.kueue.node.add_dependency(self.system_node_group)
        return self.kueue

    def lifecycle_targets(self, drain_bucket: s3.IBucket) -> tuple[CapacityBlockNodegroup, ...]:
        """The cluster's Capacity Block node groups, for ``CapacityLifecycle(node_groups=...)``: each follows its
        blocks (scaled out when they are active, drained before they end). ``drain_bucket``: the data bucket its
        training pods read through FSx for Lustre (the drain flags' home; the training role may never write them:
        :meth:`grant_training_data`). The node groups start at 0 (``desired``): the lifecycle scales them."""
        return tuple(CapacityBlockNodegroup(name=g.name, cluster=self.cluster, nodegroup=self.node_groups[g.name],
                                            settings=g, drain_bucket=drain_bucket)
                     for g in self.settings.node_groups if g.capacity.type == "capacity-block")

    # ------------------------------------------------------------------------------------------------ cluster

    def _acknowledge_cluster(self) -> None:
        """aws-cdk-lib's own roles of the cluster and its kubectl provider, each finding by its exact id."""
        policy = "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{}]"
        Validations.of(self.cluster).acknowledge(
            Acknowledgment(id=policy.format("AmazonEKSClusterPolicy"),
                           reason="the cluster role's AWS-managed policy, which Amazon EKS documents for it"),
            Acknowledgment(id=policy.format("service-role/AWSLambdaBasicExecutionRole"),
                           reason="aws-cdk-lib's kubectl provider functions log with the basic execution role"),
            Acknowledgment(id=policy.format("service-role/AWSLambdaVPCAccessExecutionRole"),
                           reason="the kubectl provider runs in the VPC to reach the private endpoint"),
            Acknowledgment(id=policy.format("AmazonEC2ContainerRegistryReadOnly"),
                           reason="aws-cdk-lib's kubectl provider pulls charts from ECR"),
            Acknowledgment(id=(
                'AwsSolutions-IAM4[Policy::{"Fn::If":["' + self._logical_id("HasEcrPublic") + '",{"Fn::Join":["",['
                '"arn:",{"Ref":"AWS::Partition"},":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},'
                '{"Ref":"AWS::NoValue"}]}]'),
                reason="aws-cdk-lib's kubectl provider pulls the Neuron chart from public ECR (oci://public.ecr.aws)"),
        )
        handler = cast(lambda_.IFunction, self.cluster.kubectl_provider.node.find_child(  # type: ignore[union-attr]
            "Handler"))
        Validations.of(handler).acknowledge(Acknowledgment(id="AwsSolutions-L1", reason=(
            "aws-cdk-lib's kubectl handler: its runtime is the one its bundled code (kubectl and helm layer, Python "
            "handler) is built and tested for")))
        acknowledge_wildcards(self.cluster, "aws-cdk-lib's kubectl provider framework invokes its handler's versions",
                              resources=(f"{handler.function_arn}:*",))
        # the compliance packs' and checkov's findings kept (core.nag.ACKNOWLEDGED has each reason): the provider's
        # functions and log groups, and the cluster's secrets key (AWS's own envelope encryption, see EKS_SECRETS)
        provider = cast(Construct, self.cluster.kubectl_provider)
        acknowledge(provider, "LambdaConcurrency", "LambdaDLQ", "CloudWatchLogGroupEncrypted")
        acknowledge(self.cluster, "CKV_AWS_58")
        for child in provider.node.find_all():
            if isinstance(child, lambda_.CfnFunction):
                child.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W3005"]}, "reason": (
                    "aws-cdk-lib's kubectl provider functions depend on their role both by DependsOn and by GetAtt")})
                acknowledge(child, "CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_173")
            elif isinstance(child, logs.CfnLogGroup):
                acknowledge(child, "CKV_AWS_158")

    def _logical_id(self, condition: str) -> str:
        """The logical id of a CfnCondition under the kubectl provider's handler."""
        handler = self.cluster.kubectl_provider.node.find_child("Handler")  # type: ignore[union-attr]
        return Stack.of(self).get_logical_id(handler.node.find_child(condition))  # type: ignore[arg-type]

    def _node_role(self) -> iam.Role:
        """The nodes' role: the worker policies, Session Manager, and PutMetricData in the kit's namespace (the
        utilisation publisher runs in the host network and signs with it, as on a Batch host)."""
        role = iam.Role(self, "NodeRole", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
                        description="Neuron EKS nodes: kubelet, image pulls, VPC CNI, Session Manager, utilisation",
                        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(p)
                                          for p in NODE_MANAGED_POLICIES])
        Validations.of(role).acknowledge(*(Acknowledgment(
            id=f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{p}]",
            reason="the managed policies Amazon EKS documents for the node IAM role") for p in NODE_MANAGED_POLICIES))
        role.add_to_principal_policy(iam.PolicyStatement(actions=list(SESSION_MANAGER_ACTIONS), resources=["*"]))
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["cloudwatch:PutMetricData"], resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": self.metrics_namespace}}))
        acknowledge_wildcards(role, "Session Manager and cloudwatch:PutMetricData (limited to the kit's namespace) "
                                    "have no resource-level permissions", resources=("*",))
        acknowledge(role.node.find_child("DefaultPolicy"), "CKV_AWS_111", reason=SESSION_MANAGER)
        return role

    def _system_node_group(self) -> eks.Nodegroup:
        """The untainted nodes CoreDNS and the charts' controllers run on (every Neuron node is tainted)."""
        s = self.settings
        lt = ec2.LaunchTemplate(
            self, "SystemLaunchTemplate", instance_type=ec2.InstanceType(s.system_instance_type),
            require_imdsv2=True, http_tokens=ec2.LaunchTemplateHttpTokens.REQUIRED,
            http_put_response_hop_limit=IMDS_HOP_LIMIT,
            block_devices=[ec2.BlockDevice(device_name="/dev/xvda", volume=ec2.BlockDeviceVolume.ebs(
                50, volume_type=ec2.EbsDeviceVolumeType.GP3, encrypted=True, delete_on_termination=True))])
        return eks.Nodegroup(
            self, "SystemNodes", cluster=cast(eks.ICluster, self.cluster), node_role=self.node_role,
            ami_type=eks.NodegroupAmiType.AL2023_X86_64_STANDARD, subnets=self.vpc_subnets,
            launch_template_spec=eks.LaunchTemplateSpec(id=lt.launch_template_id or "",
                                                        version=lt.latest_version_number),
            min_size=s.system_nodes, max_size=s.system_nodes, desired_size=s.system_nodes,
            enable_node_auto_repair=True)

    # --------------------------------------------------------------------------------------------- node groups

    def _subnets(self, index: int, group: NeuronNodegroupSettings) -> ec2.SubnetSelection:
        """The node group's subnets: those of ``vpc_subnets`` in its AZ(s); one AZ for reserved capacity."""
        zones = list(group.availability_zones) or ([group.availability_zone] if group.availability_zone else [])
        selected = self.vpc.select_subnets(
            subnet_group_name=self.vpc_subnets.subnet_group_name, subnet_type=self.vpc_subnets.subnet_type,
            subnets=self.vpc_subnets.subnets, availability_zones=zones or self.vpc_subnets.availability_zones)
        if not selected.subnets:
            raise InvalidSettings([Problem(f"node_groups[{index}].availability_zones", zones, (
                "AZs where vpc_subnets has a subnet: " + ", ".join(sorted({
                    s.availability_zone for s in self.vpc.select_subnets(
                        subnet_group_name=self.vpc_subnets.subnet_group_name,
                        subnet_type=self.vpc_subnets.subnet_type).subnets}))))], what="NeuronEksCluster")
        azs = sorted({s.availability_zone for s in selected.subnets})
        if group.reserved and len(azs) > 1:
            raise InvalidSettings([Problem(f"node_groups[{index}].availability_zones", azs, (
                f"one AZ, the reservation's: node group {group.name!r} is on a {group.capacity.type}, which lives in "
                "one AZ; name it (capacity.availability_zone) or give vpc_subnets of that AZ only"))],
                what="NeuronEksCluster")
        return ec2.SubnetSelection(subnets=selected.subnets)

    def _node_group(self, index: int, group: NeuronNodegroupSettings) -> None:
        spec = group.spec
        subnets = self._subnets(index, group)
        cid = "".join(part.capitalize() for part in group.name.split("-"))
        placement = None
        if group.capacity.placement_group if group.capacity.placement_group is not None else (
                group.capacity.type == "on-demand" and spec.efa_supported and group.count > 1):
            placement = ec2.PlacementGroup(self, f"{cid}PlacementGroup", strategy=ec2.PlacementGroupStrategy.CLUSTER)
        # no AMI (the node group's AMI type picks the EKS Neuron AMI), no instance profile and no subnet (EKS
        # refuses a launch template that names either: the node group gives them)
        lt, interfaces = efa_launch_template(
            self, f"{cid}LaunchTemplate", spec=spec, machine_image=None, instance_profile=None,
            security_group=self.security_group, extra_security_groups=[self.cluster.cluster_security_group],
            root_volume_gib=group.root_volume_gib, placement_group=placement,
            extra_data=group.capacity.launch_template_data())
        tag_capacity(lt, group.capacity.type)
        tag_family(lt, spec.family)
        tag_devices(lt, dra=group.dra)   # a DRA node publishes no utilisation: the waste detector says "not measured"
        warn_without_fleet_tag(self, lt, what=f"Neuron node group {group.name} of {self.node.path}",
                               found_by="the fleet's spend (Cost Explorer and the budget group by it)")
        self.launch_templates[group.name] = lt
        self.network_interfaces[group.name] = interfaces
        self.node_groups[group.name] = eks.Nodegroup(
            self, f"{cid}Nodes", cluster=cast(eks.ICluster, self.cluster), node_role=self.node_role,
            ami_type=eks.NodegroupAmiType.AL2023_X86_64_NEURON, capacity_type=CAPACITY_TYPES[group.capacity.type],
            launch_template_spec=eks.LaunchTemplateSpec(id=lt.launch_template_id or "",
                                                        version=lt.latest_version_number),
            subnets=subnets, min_size=0, max_size=group.count, desired_size=group.desired_nodes,
            labels=manifests.node_labels(group), enable_node_auto_repair=True,
            taints=[eks.TaintSpec(effect=eks.TaintEffect.NO_SCHEDULE, key=NEURON_TAINT_KEY, value=NEURON_TAINT_VALUE)])

    # ------------------------------------------------------------------------------------------------- charts

    def _charts(self) -> dict[str, eks.HelmChart]:
        """The pinned charts, after the system nodes: the Neuron chart as one release per device manager (device
        plugin, DRA driver: never both in one release), the EFA device plugin, the FSx for Lustre CSI driver. Keys:
        the chart keys, and :data:`NEURON_DRA_RELEASE` for the DRA release. Every namespace their values put objects
        in exists first (kube-system; the DRA driver's, which the chart creates; the problem detector's, which the kit
        creates: :meth:`_problem_detector`)."""
        s = self.settings
        neuron = CHARTS[NEURON_CHART][s.charts.neuron]
        releases: list[tuple[str, str, Any, str, dict[str, Any]]] = []
        for release, values in manifests.neuron_chart_releases(s).items():
            key, cid = ((NEURON_DRA_RELEASE, "NeuronDraChart") if release == NEURON_DRA_RELEASE
                        else (NEURON_CHART, "NeuronChart"))
            releases.append((key, cid, neuron, release, values))
        for key, cid, values in ((EFA_CHART, "EfaDevicePluginChart", manifests.efa_chart_values()),
                                 (FSX_CSI_CHART, "FsxCsiDriverChart", manifests.fsx_csi_chart_values())):
            pin = CHARTS[key][getattr(s.charts, "efa_device_plugin" if key == EFA_CHART else "fsx_csi_driver")]
            releases.append((key, cid, pin, pin.chart, values))
        charts = {}
        for key, cid, pin, release, values in releases:
            charts[key] = self.cluster.add_helm_chart(
                cid, chart=pin.chart, repository=pin.repository, version=pin.version, namespace="kube-system",
                release=release, values=values)
            charts[key].node.add_dependency(self.system_node_group)
        if s.problem_detector and NEURON_CHART in charts:
            charts[NEURON_CHART].node.add_dependency(*self._problem_detector())
        return charts

    def _problem_detector(self) -> list[Construct]:
        """What Neuron's node problem detector needs before the chart: its namespace (the chart has no Namespace
        template) and a Pod Identity role for its service account that may put metrics into ``NeuronHealthCheck``
        only (Neuron's IAM policy's CloudWatch statement; monitor only: no Auto Scaling right, EKS's auto repair
        replaces nodes)."""
        namespace = self.cluster.add_manifest("ChartNamespaces", *manifests.chart_namespaces(self.settings))
        role = iam.Role(self, "ProblemDetectorRole",
                        assumed_by=iam.SessionTagsPrincipal(iam.ServicePrincipal("pods.eks.amazonaws.com")),
                        description="Neuron's node problem detector: its metrics into NeuronHealthCheck only")
        confine_pod_identity_role(role, namespace=NPD_NAMESPACE, service_account=NPD_SERVICE_ACCOUNT)
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["cloudwatch:PutMetricData"], resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": NPD_METRICS_NAMESPACE}}))
        acknowledge_wildcards(role, "cloudwatch:PutMetricData has no resource-level permissions (limited to "
                                    "the NeuronHealthCheck namespace)", resources=("*",))
        association = eks.CfnPodIdentityAssociation(
            self, "ProblemDetectorPodIdentity", cluster_name=self.cluster.cluster_name, namespace=NPD_NAMESPACE,
            service_account=NPD_SERVICE_ACCOUNT, role_arn=role.role_arn)
        association.node.add_dependency(namespace)
        self.problem_detector_role = role
        return [namespace, association]

    def _pod_identity_agent(self) -> eks.IAddon:
        """The ``eks-pod-identity-agent`` add-on every Pod Identity association here needs: aws-cdk-lib makes it itself,
        without a version (``Cluster.eks_pod_identity_agent``, which each Pod Identity service account calls; the
        same one each time), so its ``AWS::EKS::Addon`` takes the kit's pin by a property override. Pinned
        UNCONFIRMED (neuronfleet.facts.eks_pins.POD_IDENTITY_AGENT; docs/checks.md ``eks-pod-identity-agent``). Raises
        when aws-cdk-lib no longer builds it as an add-on whose resource can be found: never deployed unpinned."""
        pin = POD_IDENTITY_AGENT
        addon = self.cluster.eks_pod_identity_agent
        resource = addon.node.default_child if addon is not None else None
        if addon is None or not (isinstance(resource, CfnResource) and resource.cfn_resource_type == "AWS::EKS::Addon"
                                 and getattr(resource, "addon_name", None) == pin.name):
            raise RuntimeError(
                f"NeuronEksCluster: cannot pin the {pin.name} add-on to {pin.version}: aws_eks_v2.Cluster."
                f"eks_pod_identity_agent gave {addon!r}, whose default child is {resource!r}, not an AWS::EKS::Addon "
                f"named {pin.name} (aws-cdk-lib changed how it builds the add-on: find its resource and pin it again)")
        resource.add_property_override("AddonVersion", pin.version)
        return addon

    def _node_monitoring_agent(self) -> eks.Addon:
        """The EKS node monitoring agent (an EKS add-on), whose node conditions managed node group auto repair acts
        on: the four Neuron hardware errors as ``AcceleratedHardwareReady``, repaired by Replace after 10 minutes.
        Its version is pinned UNCONFIRMED (neuronfleet.facts.eks_pins.NODE_MONITORING_AGENT; docs/checks.md)."""
        pin = NODE_MONITORING_AGENT
        addon = eks.Addon(self, "NodeMonitoringAgent", cluster=cast(eks.ICluster, self.cluster), addon_name=pin.name,
                          addon_version=pin.version)
        addon.node.add_dependency(self.system_node_group)
        return addon

    def mount(self, file_system: fsx.LustreFileSystem, *, open_ports: bool = True, storage_gib: int = 1200) -> None:
        """Mount ``file_system`` in pods: a static PersistentVolume ``fsx`` and its claim (the FSx CSI driver's
        static provisioning). ``open_ports``: open the Lustre ports between the file system and the Neuron nodes
        (False when :func:`neuronfleet.training.lustre.lustre_storage` built it for :attr:`security_group`)."""
        if open_ports:
            for port in LUSTRE_PORTS:
                file_system.connections.allow_from(self.security_group, port, "Lustre from the Neuron nodes")
                file_system.connections.allow_to(self.security_group, port, "Lustre to the Neuron nodes")
        self.file_system = file_system
        self.fsx_volume = self.cluster.add_manifest("FsxVolume", *manifests.fsx_volume(
            file_system_id=file_system.file_system_id, dns_name=file_system.dns_name,
            mount_name=file_system.mount_name, storage_gib=storage_gib))
        self.fsx_volume.node.add_dependency(self.charts[FSX_CSI_CHART], self.namespaces)
