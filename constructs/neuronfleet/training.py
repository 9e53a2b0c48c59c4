"""TrainiumCluster: a Trainium training cluster on AWS Batch, every EFA card attached.

The launch template is the core (:attr:`TrainiumCluster.launch_template`): network interfaces from the
instance catalog, the capacity (On-Demand, a targeted ODCR, or EC2 Capacity Blocks for ML), the AMI,
IMDSv2, an encrypted root volume, the instance profile and the user data that mounts FSx for Lustre and
starts neuron-monitor. AWS Batch runs on it (managed compute environment, job queue, multi-node parallel
job definition); a team on EKS or Slurm can use the launch template directly.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, RemovalPolicy, Size, Stack, Token
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_iam as iam
from constructs import Construct

from ._nag import acknowledge_wildcards
from ._region import check_in_region
from .catalog import AcceleratorFamily, InstanceSpec
from .compute import (
    batch_compute_environment,
    batch_instance_role,
    efa_launch_template,
    efa_security_group,
    job_queue,
)
from .images import dlc_image
from .lambdas.namespaces import NEURON_NAMESPACE
from .problems import InvalidSettings, Problem
from .settings import Capacity, TrainiumClusterSettings
from .storage import secure_bucket
from .tagging import tag_family

NEURON_ECS_AMI_PARAMETER = "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id"
"""The ECS-optimized Amazon Linux 2023 Neuron AMI: what AWS Batch container instances need."""


DEFAULT_TRAINING_IMAGE = "pytorch-training-neuronx:2.1.2-neuronx-py310-sdk2.18.2-ubuntu20.04"
"""An AWS Neuron Deep Learning Container (account 763104351884), for the job definition template."""

LUSTRE_PORTS = (ec2.Port.tcp(988), ec2.Port.tcp_range(1018, 1023))

def neuron_dlami_parameter(framework: str = "multi-framework", os: str = "ubuntu-22.04") -> str:
    """SSM parameter of the Neuron DLAMI for plain EC2 (``/aws/service/neuron/dlami/<framework>/<os>/...``)."""
    return f"/aws/service/neuron/dlami/{framework}/{os}/latest/image_id"


class TrainiumCluster(Construct):
    """A Trainium training cluster: launch template, EFA security group, FSx for Lustre, AWS Batch.

    Example::

        cluster = TrainiumCluster(self, "Pretrain",
            vpc=net.vpc, subnet=net.training_subnet,
            settings=TrainiumClusterSettings(
                instance_type="trn2u.48xlarge", count=8,                    # two Trn2 UltraServers
                capacity=Capacity.capacity_block(resource_group_arn=blocks_arn, availability_zone="us-east-2b")))
        cluster.launch_template   # for EKS / Slurm too
        cluster.job_queue.job_queue_arn, cluster.job_definition.job_definition_arn
    """

    def __init__(self, scope: Construct, construct_id: str, *, vpc: ec2.IVpc, subnet: ec2.ISubnet,
                 settings: TrainiumClusterSettings, metrics_namespace: str = NEURON_NAMESPACE) -> None:
        super().__init__(scope, construct_id)
        check_in_region(self, settings.what, settings.region_problems)
        _check_subnet(subnet, settings.capacity)
        self.settings = settings
        self.spec: InstanceSpec = settings.spec
        self.capacity = settings.capacity
        self.count = settings.count
        self.metrics_namespace = metrics_namespace
        tag_family(self, AcceleratorFamily.TRAINIUM)
        # EFA needs all traffic from and to the group itself; nothing from the internet
        self.security_group = efa_security_group(
            self, "EfaSecurityGroup", vpc=vpc,
            description=f"{settings.instance_type} cluster: EFA (all traffic within the group), HTTPS out")
        self._storage(vpc, subnet)
        self._host(subnet)
        self._scheduler(subnet)

    def _storage(self, vpc: ec2.IVpc, subnet: ec2.ISubnet) -> None:
        """S3 for data and checkpoints, FSx for Lustre linked to it."""
        settings = self.settings
        self.access_logs_bucket = secure_bucket(self, "AccessLogs")
        self.data_bucket = secure_bucket(self, "Data", versioned=True, access_logs=self.access_logs_bucket,
                                         log_prefix="data/")
        self.fsx_security_group = ec2.SecurityGroup(
            self, "LustreSecurityGroup", vpc=vpc, allow_all_outbound=False,
            description="FSx for Lustre: Lustre ports from the cluster and between file servers only",
        )
        for port in LUSTRE_PORTS:  # (LustreFileSystem itself opens 988-1023 between its own servers)
            self.fsx_security_group.add_ingress_rule(self.security_group, port, "Lustre from the cluster")
            self.fsx_security_group.add_egress_rule(self.fsx_security_group, port, "Lustre between servers")
            self.security_group.add_egress_rule(self.fsx_security_group, port, "Lustre to FSx")
        self.file_system = fsx.LustreFileSystem(
            self, "Lustre", vpc=vpc, vpc_subnet=subnet, storage_capacity_gib=settings.fsx_storage_gib,
            security_group=self.fsx_security_group, removal_policy=RemovalPolicy.RETAIN,
            file_system_type_version=fsx.FileSystemTypeVersion.V_2_15,
            lustre_configuration=fsx.LustreConfiguration(
                deployment_type=fsx.LustreDeploymentType.PERSISTENT_2,
                per_unit_storage_throughput=settings.fsx_throughput_mib_per_tib,
                data_compression_type=fsx.LustreDataCompressionType.LZ4,
            ),
        )
        events = ["NEW", "CHANGED", "DELETED"]
        self.data_repository = fsx.CfnDataRepositoryAssociation(
            self, "LustreS3Link", file_system_id=self.file_system.file_system_id, file_system_path="/data",
            data_repository_path=f"s3://{self.data_bucket.bucket_name}/",
            batch_import_meta_data_on_create=True,
            s3=fsx.CfnDataRepositoryAssociation.S3Property(
                auto_import_policy=fsx.CfnDataRepositoryAssociation.AutoImportPolicyProperty(events=events),
                auto_export_policy=fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(events=events),
            ),
        )

    def _host(self, subnet: ec2.ISubnet) -> None:
        """Role (SSM Session Manager, ECS agent, neuron-monitor metrics), image, placement, launch template."""
        settings, spec = self.settings, self.spec
        self.role, self.instance_profile = batch_instance_role(
            self, "InstanceRole", description=f"{settings.instance_type} training instances",
            metrics_namespace=self.metrics_namespace)
        self.data_bucket.grant_read_write(self.role)
        acknowledge_wildcards(self.role, "grant_read_write on the cluster's own data bucket: training reads data "
                                         "and writes checkpoints", resources=(self.data_bucket.arn_for_objects("*"),),
                              actions=("s3:Abort*", "s3:DeleteObject*", "s3:GetBucket*", "s3:GetObject*", "s3:List*"))
        ami = settings.ami
        if ami.ami_id:
            self.machine_image: ec2.IMachineImage = ec2.MachineImage.generic_linux({Stack.of(self).region: ami.ami_id})
        else:
            self.machine_image = ec2.MachineImage.from_ssm_parameter(ami.ssm_parameter or NEURON_ECS_AMI_PARAMETER)
        self.placement_group: ec2.PlacementGroup | None = None
        wanted = settings.capacity.placement_group
        if wanted if wanted is not None else (
                settings.capacity.type == "on-demand" and spec.efa_supported and settings.count > 1):
            self.placement_group = ec2.PlacementGroup(self, "PlacementGroup",
                                                      strategy=ec2.PlacementGroupStrategy.CLUSTER)
        self.launch_template, self.network_interfaces = efa_launch_template(
            self, "LaunchTemplate", spec=spec, machine_image=self.machine_image,
            instance_profile=self.instance_profile, security_group=self.security_group,
            user_data=self._user_data(), root_volume_gib=settings.root_volume_gib, subnet_id=subnet.subnet_id,
            placement_group=self.placement_group, extra_data=settings.capacity.launch_template_data())

    def _scheduler(self, subnet: ec2.ISubnet) -> None:
        """AWS Batch: a compute environment on the launch template, a queue, a multi-node job definition."""
        self.compute_environment = batch_compute_environment(
            self, "ComputeEnvironment", spec=self.spec, launch_template=self.launch_template,
            instance_profile=self.instance_profile, subnet_ids=[subnet.subnet_id],
            maxv_cpus=self.spec.vcpus * self.count, placement_group=self.placement_group)
        self.job_queue = job_queue(self, "JobQueue", compute_environments=[self.compute_environment])
        self.job_definition = self._job_definition(self.settings.training_image or DEFAULT_TRAINING_IMAGE)

    def _user_data(self) -> ec2.UserData:
        region = Stack.of(self).region
        mount = f"{self.file_system.dns_name}@tcp:/{self.file_system.mount_name}"
        script = ec2.UserData.for_linux()
        script.add_commands(
            "set -euxo pipefail",
            "# FSx for Lustre at /fsx (data and checkpoints; /fsx/data is linked to the S3 bucket)",
            "dnf install -y lustre-client",
            "mkdir -p /fsx",
            f"echo '{mount} /fsx lustre defaults,relatime,flock,_netdev,x-systemd.automount 0 0' >> /etc/fstab",
            "mount -a -t lustre",
            f"# neuron-monitor -> CloudWatch ({self.metrics_namespace}): NeuronCore utilisation for the cost monitors",
            "command -v neuron-monitor || dnf install -y aws-neuronx-tools",
            "cat > /etc/systemd/system/neuron-monitor-cloudwatch.service <<'UNIT'",
            "[Unit]",
            "Description=neuron-monitor publishing to CloudWatch",
            "After=network-online.target",
            "[Service]",
            "ExecStart=/bin/bash -c '/opt/aws/neuron/bin/neuron-monitor | /opt/aws/neuron/bin/neuron-monitor-cloudwatch.py "
            f"--namespace {self.metrics_namespace} --region {region}'",
            "Restart=always",
            "[Install]",
            "WantedBy=multi-user.target",
            "UNIT",
            "systemctl daemon-reload",
            "systemctl enable --now neuron-monitor-cloudwatch.service",
        )
        # AWS Batch merges its own user data into the launch template's: it must be MIME multi-part
        multipart = ec2.MultipartUserData()
        multipart.add_user_data_part(script, ec2.MultipartBody.SHELL_SCRIPT, True)
        return multipart

    def _job_definition(self, image: str) -> batch.MultiNodeJobDefinition:
        spec = self.spec
        linux = batch.LinuxParameters(self, "LinuxParameters", shared_memory_size=Size.gibibytes(64))
        rw = [batch.DevicePermission.READ, batch.DevicePermission.WRITE]
        linux.add_devices(*[batch.Device(host_path=f"/dev/neuron{i}", container_path=f"/dev/neuron{i}",
                                         permissions=rw) for i in range(spec.accelerators)])
        linux.add_devices(*[batch.Device(host_path=f"/dev/infiniband/uverbs{i}",
                                         container_path=f"/dev/infiniband/uverbs{i}", permissions=rw)
                            for i in range(spec.efa_interfaces)])
        uri = dlc_image(self, image)
        container = batch.EcsEc2ContainerDefinition(
            self, "Container",
            image=ecs.ContainerImage.from_registry(uri),
            cpu=spec.vcpus - 2,
            memory=Size.mebibytes(int(spec.memory_gib * 1024 * 0.9)),
            linux_parameters=linux,
            ulimits=[batch.Ulimit(name=batch.UlimitName.MEMLOCK, hard_limit=-1, soft_limit=-1)],
            volumes=[batch.EcsVolume.host(name="fsx", host_path="/fsx", container_path="/fsx")],
            environment={
                "FI_PROVIDER": "efa",
                "FI_EFA_USE_DEVICE_RDMA": "1",
                "NEURON_RT_NUM_CORES": str(spec.neuron_cores),
                "CHECKPOINT_DIR": "/fsx/checkpoints",
                "DATA_DIR": "/fsx/data",
            },
            command=["torchrun", "--help"],
        )
        _acknowledge_execution_role(container.execution_role)
        return batch.MultiNodeJobDefinition(
            self, "JobDefinition", main_node=0, propagate_tags=True,
            instance_type=ec2.InstanceType(spec.instance_type),
            containers=[batch.MultiNodeContainer(container=container, start_node=0, end_node=self.count - 1)],
        )


def _check_subnet(subnet: ec2.ISubnet, capacity: Capacity) -> None:
    az = capacity.availability_zone
    if az and not Token.is_unresolved(subnet.availability_zone) and subnet.availability_zone != az:
        raise InvalidSettings([Problem(
            "subnet", subnet.availability_zone,
            f"a subnet in {az}, the AZ of the {capacity.type} reservation: reserved capacity launches only in its "
            "own AZ")], what="training cluster")


def _acknowledge_execution_role(role: iam.IRole) -> None:
    stack = Stack.of(role)
    acknowledge_wildcards(role, "CDK's Batch execution role writes job logs to the /aws/batch/job log group's "
                                "streams only", resources=(stack.format_arn(
                                    service="logs", resource="log-group", resource_name="/aws/batch/job:*",
                                    arn_format=ArnFormat.COLON_RESOURCE_NAME),))
