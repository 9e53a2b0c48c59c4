"""TrainiumCluster: a Trainium training cluster on AWS Batch, every EFA card attached.

The launch template is the core (:attr:`TrainiumCluster.launch_template`): network interfaces from the
instance catalog, the capacity (On-Demand, a targeted ODCR, or EC2 Capacity Blocks for ML), a pinned AMI,
IMDSv2, an encrypted root volume, the instance profile and the user data that mounts FSx for Lustre, installs
the node scripts (health gate, launcher) in /opt/neuronfleet and starts neuron-monitor. AWS Batch runs on it
(managed compute environment, job queue, multi-node parallel job definition); a team on EKS or Slurm can use
the launch template directly.
"""

from __future__ import annotations

import base64
import gzip
from typing import Any

from aws_cdk import Acknowledgment, Annotations, ArnFormat, Aws, RemovalPolicy, Size, Stack, Token, Validations
from aws_cdk import aws_batch as batch
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from neuronfleet_contract.namespaces import NEURON_CORE_UTILIZATION, NEURON_NAMESPACE

from ..core.args import duck, settings_argument
from ..core.fleet_tag_check import warn_without_fleet_tag
from ..core.lookups import in_stack, minutes, region_of, seconds, stack_of
from ..core.nag import acknowledge_wildcards
from ..core.problems import InvalidSettings, Problem
from ..core.region import check_in_region
from ..core.s3_reads import owner_condition
from ..core.tagging import tag_capacity, tag_family
from ..facts.catalog import AcceleratorFamily, InstanceSpec
from ..facts.compile_cache import FSX_CACHE_DIR, NEURON_COMPILE_CACHE_URL
from ..facts.images import dlc_image, ecr_repository_arn
from ..facts.neuron import (
    DEFAULT_TRAINING_IMAGE,
    ImageRef,
    ecs_neuron_amis,
    parse_image,
    runtime_environment,
    training_image,
)
from ..node import BOOTSTRAP, HOST_DIR, SCRIPTS, bootstrap_text, node_directory
from ..node.health_gate import EXIT_CONFIG, EXIT_HARDWARE_FAULT
from ..settings import Capacity, TrainiumClusterSettings
from .batch import (
    batch_compute_environment,
    batch_instance_role,
    batch_job_role,
    ecs_agent_config_commands,
    ecs_machine_image,
    efa_launch_template,
    efa_security_group,
    job_queue,
)
from .drain import drain_environment, drain_volumes
from .lustre import grant_data, lustre_storage

NEURON_ECS_AMI_PARAMETER = "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id"
"""The ECS-optimized Amazon Linux 2023 Neuron AMI: what AWS Batch container instances need. Followed only with
``ami.follow_latest``; by default the cluster pins the value recorded in data/neuron_ecs_amis.json."""

__all__ = ["DEFAULT_TRAINING_IMAGE", "NEURON_ECS_AMI_PARAMETER", "TrainiumCluster", "neuron_dlami_parameter"]

CHECKPOINT_DIR = "/fsx/data/checkpoints"
"""Under /fsx/data, the path linked to the data bucket (auto-export): every checkpoint gets a durable S3 copy."""
RENDEZVOUS_DIR = "/fsx/.neuronfleet/rendezvous"
"""Where the launcher's nodes publish their UltraServer identity (not exported to S3)."""
DEFAULT_SCRIPT = "/fsx/data/code/train.py"
"""The job definition's default ``script`` parameter (``aws batch submit-job --parameters script=...``)."""
NEURON_MONITOR = "/opt/aws/neuron/bin/neuron-monitor"
"""Where the ECS-optimized Neuron AMI has neuron-monitor: its build installs aws-neuronx-tools into /opt/aws/neuron/bin
and then deletes the Neuron yum repository, so nothing can be installed at boot (aws/amazon-ecs-ami at a2532d35,
scripts/enable-ecs-agent-inferentia-support.sh; data/neuron_compat.json ``driver_runtime.ecs_neuron_ami``)."""
CAPACITY_BLOCKED_REASON = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
"""The status reason of a job held RUNNABLE for lack of capacity (Batch user guide, "Jobs stuck in RUNNABLE":
the reasons jobStateTimeLimitActions can act on; botocore batch JobStateTimeLimitAction ``reason``)."""


def neuron_dlami_parameter(framework: str = "multi-framework", os: str = "ubuntu-24.04") -> str:
    """SSM parameter of the Neuron DLAMI for plain EC2 (``/aws/service/neuron/dlami/<framework>/<os>/...``).

    Source (read 2026-11-22): Neuron DLAMI user guide (aws-neuron-sdk deploy/environments/dlami.rst) lists
    ``/aws/service/neuron/dlami/multi-framework/ubuntu-24.04`` among the current prefixes; the Ubuntu 22.04
    multi-framework DLAMI is no longer published from Neuron 2.29.0 (whats-new.rst).
    """
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
                 settings: TrainiumClusterSettings, metrics_namespace: str = NEURON_NAMESPACE,
                 removal_policy: RemovalPolicy = RemovalPolicy.RETAIN, drain_name: str | None = None) -> None:
        """Raises :class:`InvalidSettings` for a subnet outside the reservation's AZ, a type not offered in the
        stack's region, or a region without a recorded ECS Neuron AMI when the AMI is not pinned or followed.

        ``subnet`` is one ``ec2.ISubnet``, not a selection: reserved capacity (Capacity Blocks, ODCRs) lives in one
        AZ, and every instance of the cluster launches there (``net.training_subnet_for(capacity)``).
        ``removal_policy``: what deleting the stack does to the data (the FSx file system, the data and access-log
        buckets): RETAIN unless asked. ``drain_name``: the name CapacityLifecycle knows this cluster by (its key in
        ``clusters=``), which ends the job's drain flag path; default: the construct id in lower case (the reference
        app passes the fleet file's ``name``)."""
        super().__init__(scope, construct_id)
        in_stack(self, stack_of(scope))
        settings = settings_argument(settings, TrainiumClusterSettings, what="TrainiumCluster")
        duck("subnet", subnet, "subnet_id", "one ec2.ISubnet, in the capacity's AZ (e.g. net.training_subnet or "
             "net.training_subnet_for(capacity)); a SubnetSelection or a list names several", what="TrainiumCluster")
        check_in_region(self, settings.what, settings.region_problems)
        _check_subnet(subnet, settings.capacity)
        self.settings = settings
        self.spec: InstanceSpec = settings.spec
        self.capacity = settings.capacity
        self.count = settings.count
        self.metrics_namespace = metrics_namespace
        self.removal_policy = removal_policy
        self._drain_name: str = drain_name or construct_id.lower()
        tag_family(self, AcceleratorFamily.TRAINIUM)
        # EFA needs all traffic from and to the group itself; nothing from the internet
        self.security_group = efa_security_group(
            self, "EfaSecurityGroup", vpc=vpc,
            description=f"{settings.instance_type} cluster: EFA (all traffic within the group), HTTPS out")
        self._storage(vpc, subnet)
        self._host(subnet)
        self._scheduler(subnet)

    @property
    def drain_name(self) -> str:
        """The name CapacityLifecycle knows this cluster by: the job's drain flag path (``NEURONFLEET_DRAIN_FLAG``,
        training.drain) ends with it. Set once, at construction (``drain_name=``)."""
        return self._drain_name

    def _storage(self, vpc: ec2.IVpc, subnet: ec2.ISubnet) -> None:
        """S3 for data and checkpoints, FSx for Lustre linked to it (:func:`neuronfleet.training.lustre.
        lustre_storage`, shared with the EKS path)."""
        settings = self.settings
        storage = lustre_storage(
            self, vpc=vpc, subnet=subnet, clients=self.security_group, storage_gib=settings.fsx_storage_gib,
            throughput_mib_per_tib=settings.fsx_throughput_mib_per_tib,
            backup_retention_days=settings.fsx_backup_retention_days, removal_policy=self.removal_policy)
        self.access_logs_bucket, self.data_bucket = storage.access_logs_bucket, storage.data_bucket
        self.fsx_security_group, self.file_system = storage.security_group, storage.file_system
        self.data_repository = storage.data_repository

    def _host(self, subnet: ec2.ISubnet) -> None:
        """Role (SSM Session Manager, ECS agent, neuron-monitor metrics), image, placement, launch template."""
        settings, spec = self.settings, self.spec
        # the host: ECS agent, Session Manager, the utilisation publisher's metric, the node scripts' asset; no data
        # (FSx mounts need no S3 right: the file system's link to the bucket is FSx's own)
        self.role, self.instance_profile = batch_instance_role(
            self, "InstanceRole", description=f"{settings.instance_type} training instances",
            metrics_namespace=self.metrics_namespace)
        # the job code: its data bucket, nothing else
        self.job_role = batch_job_role(self, "JobRole", description=f"{settings.instance_type} training jobs: the "
                                                                    "cluster's data bucket, read and write")
        self.grant_data(self.job_role)
        self.machine_image, self.ami_pinned = self._machine_image()
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
        tag_capacity(self.launch_template, settings.capacity.type)
        warn_without_fleet_tag(self, self.launch_template, what=f"training cluster {self.node.path}",
                               found_by="the fleet's spend (Cost Explorer and the budget group by it)")

    def _machine_image(self) -> tuple[ec2.IMachineImage, bool]:
        """The AMI and whether it is pinned (a redeploy never moves it) or follows an SSM parameter."""
        ami = self.settings.ami
        return ecs_machine_image(self, ami_id=ami.ami_id, follow_latest=ami.follow_latest,
                                 parameter=ami.ssm_parameter or NEURON_ECS_AMI_PARAMETER, recorded=ecs_neuron_amis(),
                                 data_file="neuron_ecs_amis.json", field="ami", what="training cluster")

    def _scheduler(self, subnet: ec2.ISubnet) -> None:
        """AWS Batch: a compute environment on the launch template, a queue, a multi-node job definition."""
        self.compute_environment = batch_compute_environment(
            self, "ComputeEnvironment", spec=self.spec, launch_template=self.launch_template,
            instance_profile=self.instance_profile, subnet_ids=[subnet.subnet_id],
            maxv_cpus=self.spec.vcpus * self.count, placement_group=self.placement_group,
            security_group=self.security_group,
            update_timeout_minutes=self.settings.update_timeout_minutes)
        self.job_queue = job_queue(self, "JobQueue", compute_environments=[self.compute_environment])
        if self.settings.capacity_wait_timeout_s is not None:
            # A job held for capacity is cancelled after the wait (CapacityAlerts announces the hold before that)
            cfn_queue = self.job_queue.node.default_child
            assert isinstance(cfn_queue, batch.CfnJobQueue)
            cfn_queue.add_property_override("JobStateTimeLimitActions", [{
                "Action": "CANCEL", "State": "RUNNABLE", "MaxTimeSeconds": self.settings.capacity_wait_timeout_s,
                "Reason": CAPACITY_BLOCKED_REASON}])
        self.job_definition = self._job_definition(self.settings.image)

    def _user_data(self) -> ec2.UserData:
        region = region_of(self)
        mount = f"{self.file_system.dns_name}@tcp:/{self.file_system.mount_name}"
        # The node scripts are an S3 asset (EC2 takes 16 KB of user data; they pack to more): the user data writes
        # only the fetcher (and its SigV4 signer), which downloads them with the instance role (no AWS CLI on the AMI)
        self.node_scripts = s3_assets.Asset(self, "NodeScripts", path=node_directory(),
                                            exclude=["*", *(f"!{name}" for name in SCRIPTS)])
        # exactly the one object (Asset.grant_read would add s3:List*, s3:GetBucket* and the whole bucket), of the
        # bootstrap bucket named by the account only while the account owns it (core.s3_reads)
        self.role.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=[
            self.node_scripts.bucket.arn_for_objects(self.node_scripts.s3_object_key)],
            conditions=owner_condition(Stack.of(self))))
        script = ec2.UserData.for_linux()
        script.add_commands(
            "set -euxo pipefail",
            f"mkdir -p {HOST_DIR}",
            *(f"echo {_packed(name)} | base64 -d | gunzip > {HOST_DIR}/{name}" for name in BOOTSTRAP),
            f"python3 {HOST_DIR}/fetch.py --bucket {self.node_scripts.s3_bucket_name} "
            f"--key {self.node_scripts.s3_object_key} --region {region} --url-suffix {Aws.URL_SUFFIX} "
            f"--dest {HOST_DIR} " + " ".join(f"--expect {name}" for name in SCRIPTS),
            f"chmod 0755 {HOST_DIR}/*.py",
            "dnf install -y lustre-client",
            "mkdir -p /fsx",
            f"echo '{mount} /fsx lustre defaults,relatime,flock,_netdev,x-systemd.automount 0 0' >> /etc/fstab",
            "mount -a -t lustre",
            *ecs_agent_config_commands(),
            # neuron-monitor -> utilisation.py -> CloudWatch PutMetricData, SigV4 with the instance role (namespace
            # NeuronCoreUtilization, Percent, InstanceId): the kit's own metric for the cost monitors. No package
            # install (the AMI has no Neuron repository), no AWS CLI: python3 only. (Not a comment in the user data:
            # EC2 takes 16 KB of it.)
            f"if [ -x {NEURON_MONITOR} ] && command -v python3; then",
            "cat > /etc/systemd/system/neuronfleet-utilisation.service <<'UNIT'",
            "[Unit]",
            "Description=neuron-monitor to the neuronfleet NeuronCore utilisation metric",
            "After=network-online.target",
            "[Service]",
            f"ExecStart=/bin/bash -o pipefail -c '{NEURON_MONITOR} | python3 {HOST_DIR}/utilisation.py "
            f"--namespace {self.metrics_namespace} --region {region} --cores {self.settings.logical_cores}'",
            "Restart=always",
            "RestartSec=10",
            "[Install]",
            "WantedBy=multi-user.target",
            "UNIT",
            "systemctl daemon-reload",
            "systemctl enable --now neuronfleet-utilisation.service",
            "else",
            f"logger -s -t neuronfleet -p user.err 'ERROR: {NEURON_MONITOR} or python3 is missing on this AMI: no "
            "NeuronCore utilisation is published and the cost monitors report this instance as silent (use the "
            "ECS-optimized Neuron AMI, which installs aws-neuronx-tools there)'",
            "fi",
        )
        # AWS Batch merges its own user data into the launch template's: it must be MIME multi-part. The script part
        # goes as plain text (no Content-Transfer-Encoding), the format AWS documents for merged launch-template user
        # data (AWS PCS User Guide, "Working with Amazon EC2 user data", read 2026-11-27: a text/x-shellscript block
        # holds the shell commands); a base64 part would count a third more against EC2's 16 KB. Not confirmed for
        # Batch from its own guide here (its example was not read whole): the first deploy's check is the console
        # output's "neuronfleet fetch" line (docs/checks.md), which only a part that ran prints
        multipart = ec2.MultipartUserData()
        multipart.add_part(ec2.MultipartBody.from_raw_body(content_type='text/x-shellscript; charset="us-ascii"',
                                                           body=script.render()))
        return multipart

    def _job_definition(self, image: str) -> batch.MultiNodeJobDefinition:
        settings, spec = self.settings, self.spec
        linux = batch.LinuxParameters(self, "LinuxParameters", shared_memory_size=Size.gibibytes(64))
        # READ, WRITE and MKNOD: what the Batch EFA guide asks for (or none); the same for the Neuron devices
        rwm = [batch.DevicePermission.READ, batch.DevicePermission.WRITE, batch.DevicePermission.MKNOD]
        linux.add_devices(*[batch.Device(host_path=f"/dev/neuron{i}", container_path=f"/dev/neuron{i}",
                                         permissions=rwm) for i in range(spec.accelerators)])
        linux.add_devices(*[batch.Device(host_path=f"/dev/infiniband/uverbs{i}",
                                         container_path=f"/dev/infiniband/uverbs{i}", permissions=rwm)
                            for i in range(spec.efa_interfaces)])
        self.image_uri = dlc_image(self, image)
        self.image_ref = parse_image(image)
        known = training_image(image)
        if known is not None and not known.confirmed:
            # info, not a warning: the example fleets synthesise clean; the CLI still prints it at every synth
            Annotations.of(self).add_info(
                f"neuronfleet: training image {image} is unconfirmed: {known.note}. A reference that does not exist "
                "fails every job at image pull (CannotPullContainerError, not retried).")
        container = batch.EcsEc2ContainerDefinition(
            self, "Container",
            image=ecs.ContainerImage.from_registry(self.image_uri),
            cpu=spec.vcpus - 2,
            memory=Size.mebibytes(int(spec.memory_gib * 1024 * 0.9)),
            linux_parameters=linux,
            ulimits=[batch.Ulimit(name=batch.UlimitName.MEMLOCK, hard_limit=-1, soft_limit=-1)],
            volumes=[batch.EcsVolume.host(name="fsx", host_path="/fsx", container_path="/fsx"),
                     batch.EcsVolume.host(name="neuronfleet", host_path=HOST_DIR, container_path=HOST_DIR,
                                          readonly=True),
                     *drain_volumes(self)],  # the drain flags read-only: only the lifecycle writes them
            environment=self.runtime_environment(),
            command=["python3", f"{HOST_DIR}/launch.py", "--", "Ref::script"],
            job_role=self.job_role,
        )
        self.execution_role = container.execution_role
        self._grant_pull(self.execution_role, self.image_ref)
        if self.image_ref.ecr_account_region:  # from_registry warns on an ECR URI; _grant_pull attached the policy
            Validations.of(container).acknowledge(Acknowledgment(
                id="Annotation::@aws-cdk/aws-ecs:ecrImageRequiresPolicy",
                reason="the execution role may pull it: ecr:GetAuthorizationToken and the image actions on its own "
                       "repository (TrainiumCluster._grant_pull)"))
        _acknowledge_execution_role(container.execution_role, stack_of(self))
        return batch.MultiNodeJobDefinition(
            self, "JobDefinition", main_node=0, propagate_tags=True,
            instance_type=ec2.InstanceType(spec.instance_type),
            containers=[batch.MultiNodeContainer(container=container, start_node=0, end_node=settings.nodes - 1)],
            parameters={"script": DEFAULT_SCRIPT},
            # each attempt ends after this (Batch terminates the whole MNP job; a timed-out job is not retried)
            timeout=seconds(settings.attempt_duration_s),
            retry_attempts=settings.retry_attempts,
            retry_strategies=_retry_strategies(),
        )

    def runtime_environment(self) -> dict[str, str]:
        """The job's environment: EFA, the logical NeuronCore configuration, what the health gate expects (devices,
        the image's runtime library and the driver window it runs with), where checkpoints go, the Neuron compile
        cache on the cluster's FSx (:data:`~neuronfleet.facts.compile_cache.FSX_CACHE_DIR`). No
        NEURON_RT_NUM_CORES: under torchrun each process would reserve that many cores."""
        settings, spec = self.settings, self.spec
        env = {
            "FI_PROVIDER": "efa",
            "FI_EFA_USE_DEVICE_RDMA": "1",
            "NEURONFLEET_NPROC_PER_NODE": str(settings.logical_cores),
            "NEURONFLEET_EXPECT_NEURON_DEVICES": str(spec.accelerators),
            "NEURONFLEET_EXPECT_EFA_DEVICES": str(spec.efa_interfaces),
            "NEURONFLEET_ULTRASERVER_SIZE": str(spec.ultraserver_size),
            "NEURONFLEET_RENDEZVOUS_DIR": RENDEZVOUS_DIR,
            "NEURONFLEET_COLLECTIVE_CHECK": "auto",
            "CHECKPOINT_DIR": CHECKPOINT_DIR,
            "DATA_DIR": "/fsx/data",
        }
        env[NEURON_COMPILE_CACHE_URL] = FSX_CACHE_DIR  # one compile cache for every node and run (facts.compile_cache)
        if settings.lnc:
            env["NEURON_LOGICAL_NC_CONFIG"] = str(settings.lnc)
        env.update(runtime_environment(settings.instance_type, settings.image, settings.training_image_sdk))
        env.update(drain_environment(self))  # the Capacity Block drain flag, for the launcher's relay
        return env

    def grant_data(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read and write the cluster's data bucket (:func:`neuronfleet.training.lustre.grant_data`)."""
        return grant_data(self.data_bucket, grantee)

    def grant_read_data(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read the cluster's data bucket (aws-cdk-lib's ``Bucket.grant_read``): datasets and checkpoints."""
        return self.data_bucket.grant_read(grantee)

    def grant_submit_jobs(self, grantee: iam.IGrantable) -> iam.Grant:
        """``batch:SubmitJob`` on this cluster's job queue with its job definition (this revision), nothing else
        (Batch user guide, "Resource: Restrict to job definition prefix on job submission",
        https://docs.aws.amazon.com/batch/latest/userguide/iam-example-restrict-job-submission.html, read 2026-11-23:
        "you must provide both job queue and job definition resource types"; the request's job-definition ARN carries
        the revision)."""
        return iam.Grant.add_to_principal(grantee=grantee, actions=["batch:SubmitJob"], resource_arns=[
            self.job_queue.job_queue_arn, self.job_definition.job_definition_arn])

    def metric_neuron_core_utilization(self, instance_id: str, **options: Any) -> cloudwatch.Metric:
        """NeuronCore utilisation (percent, 0-100) of one of the cluster's instances, as the kit's publisher on the
        host puts it (``metrics_namespace``, ``NeuronCoreUtilization``, dimension ``InstanceId``;
        neuronfleet_contract.namespaces) (``cloudwatch.MetricOptions`` keywords: ``period``, ``statistic``, ...;
        5-minute averages by default). The publisher names no cluster, so a cluster-wide view is a SEARCH over
        the namespace, as the CostMonitors dashboard draws it."""
        props: dict[str, Any] = {"statistic": "Average", "period": minutes(5), **options}
        return cloudwatch.Metric(namespace=self.metrics_namespace, metric_name=NEURON_CORE_UTILIZATION,
                                 dimensions_map={"InstanceId": instance_id}, **props)

    def _grant_pull(self, role: iam.IRole, ref: ImageRef) -> None:
        """Least privilege to pull the job image from ECR: the token (no resource-level permission) and the
        image's own repository. ECR Public and other registries need no ECR permission."""
        repository_arn = ecr_repository_arn(self, ref)
        if repository_arn is None:
            return
        policy = iam.Policy(self, "PullJobImage", statements=[
            iam.PolicyStatement(actions=["ecr:GetAuthorizationToken"], resources=["*"]),
            iam.PolicyStatement(actions=["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage",
                                         "ecr:GetDownloadUrlForLayer"], resources=[repository_arn]),
        ])
        role.attach_inline_policy(policy)
        acknowledge_wildcards(policy, "ecr:GetAuthorizationToken has no resource-level permissions (ECR user guide); "
                                      "the image actions name the job image's repository only", resources=("*",))


def _check_subnet(subnet: ec2.ISubnet, capacity: Capacity) -> None:
    az = capacity.availability_zone
    if az and not Token.is_unresolved(subnet.availability_zone) and subnet.availability_zone != az:
        raise InvalidSettings([Problem(
            "subnet", subnet.availability_zone,
            f"a subnet in {az}, the AZ of the {capacity.type} reservation: reserved capacity launches only in its "
            "own AZ")], what="training cluster")


def _packed(name: str) -> str:
    """A bootstrap file as the user data writes it: without docstrings and comments (node.bootstrap_text),
    gzip-compressed (no timestamp: the same file gives the same user data) and base64."""
    return base64.b64encode(gzip.compress(bootstrap_text(name).encode(), compresslevel=9, mtime=0)).decode()


def _retry_strategies() -> list[batch.RetryStrategy]:
    """What an attempt's end decides, in Batch's order (the first matching evaluateOnExit wins): made once and shared
    by every cluster's job definition (retry strategies are values)."""
    if not _RETRY_STRATEGIES:
        _RETRY_STRATEGIES.extend([
            # the health gate found a configuration error (a runtime/driver mismatch, ...): another attempt on
            # the same AMI fails the same way, so stop first (Batch takes the first matching evaluateOnExit)
            batch.RetryStrategy.of(batch.Action.EXIT, batch.Reason.custom(on_exit_code=str(EXIT_CONFIG))),
            # the health gate found a hardware fault on a node: run the job again
            batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.custom(on_exit_code=str(EXIT_HARDWARE_FAULT))),
            # the instance failed under the job (Batch's status reason for host failures)
            batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.custom(on_status_reason="Host EC2*")),
            # anything else (the user's code, a configuration the gate refused): stop
            batch.RetryStrategy.of(batch.Action.EXIT, batch.Reason.custom(on_reason="*")),
        ])
    return list(_RETRY_STRATEGIES)


_RETRY_STRATEGIES: list[batch.RetryStrategy] = []


def _acknowledge_execution_role(role: iam.IRole, stack: Stack) -> None:
    in_stack(role, stack)
    acknowledge_wildcards(role, "CDK's Batch execution role writes job logs to the /aws/batch/job log group's "
                                "streams only", resources=(stack.format_arn(
                                    service="logs", resource="log-group", resource_name="/aws/batch/job:*",
                                    arn_format=ArnFormat.COLON_RESOURCE_NAME),))
