"""Building blocks shared by the Trainium cluster and the GPU pool: EFA security group, instance role,
launch template with every EFA card from the catalog, AWS Batch compute environments and queue."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Acknowledgment, Stack, Token, Validations
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..core.lookups import all_traffic, any_ipv4, service_principal, tcp
from ..core.nag import SESSION_MANAGER, acknowledge
from ..core.problems import InvalidSettings, Problem
from ..facts.catalog import (
    BATCH_COMPUTE_ENVIRONMENTS_PER_QUEUE,
    BATCH_LAUNCH_TEMPLATE_OVERRIDES,
    BATCH_UPDATE_TIMEOUT_MINUTES,
    CFN_LINT_LAGS,
    InstanceSpec,
)
from ..settings.batch import DEFAULT_UPDATE_TIMEOUT_MINUTES


def efa_security_group(scope: Construct, construct_id: str, *, vpc: ec2.IVpc, description: str) -> ec2.SecurityGroup:
    """All traffic from and to the group itself (what EFA needs), HTTPS out, nothing in from outside."""
    sg = ec2.SecurityGroup(scope, construct_id, vpc=vpc, allow_all_outbound=False, description=description)
    sg.add_ingress_rule(sg, all_traffic(), "EFA: all from itself")
    sg.add_egress_rule(sg, all_traffic(), "EFA: all to itself")
    sg.add_egress_rule(any_ipv4(), tcp(443), "HTTPS to AWS APIs, ECR, S3 (ECS agent, images, checkpoints)")
    acknowledge(sg, "EC2RestrictedCommonPorts")  # the all-traffic rule's only source is the group itself
    return sg


SESSION_MANAGER_ACTIONS = (
    "ssm:UpdateInstanceInformation", "ssmmessages:CreateControlChannel", "ssmmessages:CreateDataChannel",
    "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel")
"""What the SSM Agent needs for Session Manager, and nothing else: AWS's own managed policy for Session-Manager-only
instances, AWSCloud9SSMInstanceProfile, is exactly these five actions on ``*`` (AWS Managed Policy reference,
https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AWSCloud9SSMInstanceProfile.html, read 2026-11-23; the
Systems Manager user guide's "Create an IAM instance profile for Session Manager" lists the same). They replace
AmazonSSMManagedInstanceCore, which also gives ``ssm:GetParameter``/``ssm:GetParameters`` on every parameter of the
account, documents, associations, inventory, patching and ec2messages (Run Command): none of which a Batch host of
the kit uses (its AMI is resolved by CloudFormation at deploy, not on the host). ssmmessages and
ssm:UpdateInstanceInformation have no resource-level permissions."""

ECS_INSTANCE_POLICY = "service-role/AmazonEC2ContainerServiceforEC2Role"
"""Kept: the ECS container agent's documented policy ("Amazon ECS container instance IAM role",
https://docs.aws.amazon.com/AmazonECS/latest/developerguide/instance_IAM_role.html). It gives the agent's ECS calls,
ec2:DescribeTags, ECR read (ecr:GetAuthorizationToken, BatchCheckLayerAvailability, GetDownloadUrlForLayer,
BatchGetImage) on every repository and logs:CreateLogStream/PutLogEvents on every log group. AWS documents it as
"the permissions needed to use the full Amazon ECS feature set" and offers it as a guide for a custom policy, but does
not list which of them an agent that only runs AWS Batch jobs needs: the kit keeps it rather than guess, and keeps job
code away from it instead (a job role, IMDS cut off: :data:`ECS_AGENT_CONFIG`)."""

ECS_TASKS = "ecs-tasks.amazonaws.com"

ECS_AGENT_CONFIG = {"ECS_AWSVPC_BLOCK_IMDS": "true"}
"""Lines the host appends to /etc/ecs/ecs.config before the ECS agent starts (AWS Batch writes ECS_CLUSTER there the
same way, in its own user-data part). Sources (read 2026-11-23):

- AWS Batch runs multi-node parallel jobs on ECS-EC2 in ``awsvpc`` network mode and single-node jobs in ``host`` mode
  (Batch user guide, "Networking modes for AWS Batch jobs",
  https://docs.aws.amazon.com/batch/latest/userguide/networking-modes-jobs.html).
- "To prevent containers in tasks that use the awsvpc network mode from accessing the credential information supplied
  to the container instance profile (while still allowing the permissions that are provided by the task role), set
  the ECS_AWSVPC_BLOCK_IMDS agent configuration variable to true" (ECS developer guide, "IAM roles for tasks";
  awsdocs/amazon-ecs-developer-guide doc_source/task-iam-roles.md @ 02824f062cc5fb004314ee7a90b36533f7f77f80).
- The job role's credentials reach the container through the agent's credential endpoint (169.254.170.2), not IMDS;
  on the ECS-optimized AMIs ecs-init starts the agent with ECS_ENABLE_TASK_IAM_ROLE=true and
  ECS_ENABLE_TASK_IAM_ROLE_NETWORK_HOST=true (aws/amazon-ecs-agent ecs-init/docker/docker.go @
  5fd8fb6a192cc4dded97d83760f6ca17bbea69f7, ``getContainerConfig``), so nothing more is set for them.

Host-mode containers (single-node Batch jobs, e.g. on the GPU pool) share the host's network namespace: neither this
variable nor the hop limit keeps them from IMDS, so what they can reach is the instance role, which the kit keeps to
what the ECS agent and Session Manager need."""


def ecs_agent_config_commands() -> list[str]:
    """Shell lines that write :data:`ECS_AGENT_CONFIG` to the agent's configuration file."""
    return ["# ECS agent: containers of awsvpc (multi-node) jobs cannot reach the instance role through IMDS",
            "mkdir -p /etc/ecs",
            *(f"echo {key}={value} >> /etc/ecs/ecs.config" for key, value in ECS_AGENT_CONFIG.items())]


def batch_instance_role(scope: Construct, construct_id: str, *, description: str,
                        metrics_namespace: str | None = None) -> tuple[iam.Role, iam.InstanceProfile]:
    """Instance role and profile of AWS Batch container instances: Session Manager only (no SSH key, no parameter
    reads: :data:`SESSION_MANAGER_ACTIONS`), the ECS agent's documented policy (:data:`ECS_INSTANCE_POLICY`) and,
    if a namespace is given, cloudwatch:PutMetricData limited to it (the host's utilisation publisher). No data: job
    code gets its own role (:func:`batch_job_role`)."""
    role = iam.Role(
        scope, construct_id, assumed_by=service_principal("ec2.amazonaws.com"), description=description,
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(ECS_INSTANCE_POLICY)],
    )
    role.add_to_policy(iam.PolicyStatement(actions=list(SESSION_MANAGER_ACTIONS), resources=["*"]))
    if metrics_namespace:
        role.add_to_policy(iam.PolicyStatement(
            actions=["cloudwatch:PutMetricData"], resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": metrics_namespace}}))
    # every acknowledgement of the role in one call (no token among them: nothing to resolve)
    Validations.of(role).acknowledge(
        Acknowledgment(id=f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{ECS_INSTANCE_POLICY}]",
                       reason="AWS's documented instance role for ECS container instances, which AWS Batch requires"),
        Acknowledgment(id="AwsSolutions-IAM5[Resource::*]", reason=(
            "Session Manager (the kit's replacement for SSH): ssmmessages and ssm:UpdateInstanceInformation have no "
            "resource-level permissions")),
        *([Acknowledgment(id="AwsSolutions-IAM5[Resource::*]", reason=(
            "cloudwatch:PutMetricData has no resource-level permissions; it is limited to namespace "
            f"{metrics_namespace}"))] if metrics_namespace else []))
    policy = role.node.find_child("DefaultPolicy")  # checkov's "write without constraints": Session Manager's
    acknowledge(policy, "CKV_AWS_111", reason=SESSION_MANAGER)
    return role, iam.InstanceProfile(scope, f"{construct_id}Profile", role=role)


def batch_job_role(scope: Construct, construct_id: str, *, description: str) -> iam.Role:
    """The role job code runs with (the Batch job definition's ``jobRoleArn``, ECS's task role): no permission until
    one is granted. Its credentials reach the containers through the ECS agent (:data:`ECS_AGENT_CONFIG`)."""
    return iam.Role(scope, construct_id, assumed_by=service_principal(ECS_TASKS), description=description)


IMDS_HOP_LIMIT = 1
"""IMDSv2 answers a token request with packets of this TTL, so a container behind one more hop (Docker's bridge) gets
no token and no instance-role credentials (EC2 user guide, "Configure the Instance Metadata Service options": "In a
container environment, we recommend setting the hop limit to 2" for containers that need IMDS). On the host itself
(the ECS agent, which runs in host network mode, the SSM Agent, the utilisation publisher) one hop is enough. Job
containers get their credentials from the job role (:func:`batch_job_role`); awsvpc tasks are also cut off by
:data:`ECS_AGENT_CONFIG`."""


def efa_launch_template(
    scope: Construct, construct_id: str, *, spec: InstanceSpec, machine_image: ec2.IMachineImage | None,
    instance_profile: iam.IInstanceProfile | None, security_group: ec2.ISecurityGroup, root_volume_gib: int,
    user_data: ec2.UserData | None = None, subnet_id: str | None = None, placement_group: ec2.PlacementGroup | None = None,
    extra_data: dict[str, Any] | None = None, extra_security_groups: Sequence[ec2.ISecurityGroup] = (),
) -> tuple[ec2.LaunchTemplate, list[dict[str, Any]]]:
    """A launch template with one interface per network card (the catalog's layout), IMDSv2 with a hop limit of
    :data:`IMDS_HOP_LIMIT`, an encrypted gp3 root volume, no SSH key. Returns it with its interface list.

    Every interface carries ``security_group`` and ``extra_security_groups``. No ``machine_image`` and no
    ``instance_profile``: an EKS managed node group's template (its AMI type picks the image; EKS refuses a template
    that names an instance profile or a subnet)."""
    lt = ec2.LaunchTemplate(
        scope, construct_id, machine_image=machine_image, instance_profile=instance_profile,
        require_imdsv2=True, http_tokens=ec2.LaunchTemplateHttpTokens.REQUIRED,
        http_put_response_hop_limit=IMDS_HOP_LIMIT,
        block_devices=[ec2.BlockDevice(device_name="/dev/xvda", volume=ec2.BlockDeviceVolume.ebs(
            root_volume_gib, volume_type=ec2.EbsDeviceVolumeType.GP3, encrypted=True, delete_on_termination=True))],
        user_data=user_data, placement_group=placement_group,
    )
    # read once: every read is a jsii round trip
    group_ids = [security_group.security_group_id, *(g.security_group_id for g in extra_security_groups)]
    interfaces = [
        {
            "NetworkCardIndex": slot.network_card,
            "DeviceIndex": slot.device_index,
            **({"InterfaceType": slot.interface_type} if slot.interface_type != "interface" else {}),
            **({"SubnetId": subnet_id} if subnet_id else {}),
            "Groups": group_ids,
            "DeleteOnTermination": True,
        }
        for slot in spec.network_interfaces()
    ]
    cfn = lt.node.default_child
    assert isinstance(cfn, ec2.CfnLaunchTemplate)
    cfn.add_property_override("LaunchTemplateData.NetworkInterfaces", interfaces)
    cfn.add_property_override("LaunchTemplateData.InstanceType", spec.instance_type)
    for key, value in (extra_data or {}).items():
        cfn.add_property_override(f"LaunchTemplateData.{key}", value)
    if spec.capacity_block_only:
        # cfn-lint builds its instance-type list from AWS's offerings data, which omits types sold only
        # through Capacity Blocks; AWS's DescribeInstanceTypes data has this type (see the catalog test).
        cfn.add_metadata("cfn-lint", {"config": {"ignore_checks": ["E3628"]}, "reason": (
            f"{spec.instance_type} is a real EC2 type (DescribeInstanceTypes, SupportedUsageClasses "
            "capacity-block/on-demand) sold only through Capacity Blocks, so cfn-lint's list lacks it")})
    elif spec.instance_type in CFN_LINT_LAGS:
        cfn.add_metadata("cfn-lint", {"config": {"ignore_checks": ["E3628"]}, "reason": (
            f"{spec.instance_type} is offered by AWS's own data (DescribeInstanceTypes, instance-type offerings) "
            "and missing from cfn-lint 1.58.0's per-region lists (neuronfleet.facts.catalog.CFN_LINT_LAGS)")})
    return lt, interfaces


def batch_compute_environment(
    scope: Construct, construct_id: str, *, spec: InstanceSpec, launch_template: ec2.LaunchTemplate,
    instance_profile: iam.InstanceProfile, subnet_ids: Sequence[str], maxv_cpus: int,
    security_group: ec2.ISecurityGroup,
    placement_group: ec2.PlacementGroup | None = None,
    overrides: Sequence[tuple[InstanceSpec, ec2.LaunchTemplate]] = (),
    update_timeout_minutes: int = DEFAULT_UPDATE_TIMEOUT_MINUTES,
    allocation_strategy: str = "BEST_FIT_PROGRESSIVE",
) -> batch.CfnComputeEnvironment:
    """A managed EC2 compute environment on the launch template, scaling from 0 vCPUs to ``maxv_cpus``.

    ``spec``/``launch_template`` is the first (default) type; ``overrides`` adds more types to the *same*
    environment, each with its own launch template (each type has its own EFA interface list), so
    ``maxv_cpus`` is the ceiling of all of them together.

    Security groups: the environment names ``security_group`` (the kit's EFA group, the same one every
    interface of the launch template carries), for two reasons (sources read 2026-11-23):

    - AWS Batch multi-node parallel jobs run in ECS ``awsvpc`` mode, and the interface ECS attaches to each
      MNP task takes the compute environment's security groups, or the VPC's default group when it names
      none (Batch user guide, "Compute environment considerations for MNP with AWS Batch",
      https://docs.aws.amazon.com/batch/latest/userguide/mnp-ce.html: "The elastic network interfaces that
      are created and attached to an MNP task will use the security groups specified in your compute
      environment"). Without it the rendezvous and torchrun traffic between nodes would depend on the default
      group's rules, which organisations often empty.
    - Where both the environment and the launch template name groups, Batch uses the environment's (botocore's
      batch model, ``ComputeResource.securityGroupIds`` and ``LaunchTemplateSpecification``): naming the same
      group in both keeps every EFA interface in it.

    L1 on purpose: the L2 builds its own security group unless given one and cannot take per-type launch
    templates with overrides in the way this kit builds them. Batch takes subnets from the compute environment
    (it ignores the launch template's).

    Redeploys and running jobs (sources read 2026-11-22):

    - A changed launch template (a new AMI, new user data) reaches Batch as a new version number: the
      environment names the exact version CloudFormation created (``LatestVersionNumber``), never ``$Latest``
      or ``$Default``. With those, Batch resolves the version only at creation and at infrastructure updates
      (botocore's batch model, LaunchTemplateSpecification ``version``), so a change would silently never
      reach the instances; a version number makes it one deliberate infrastructure update.
    - An infrastructure update replaces instances; what happens to running jobs is the ``UpdatePolicy``
      (https://docs.aws.amazon.com/batch/latest/userguide/updating-compute-environments.html):
      ``terminateJobsOnUpdate: false`` keeps them running, and ``jobExecutionTimeoutMinutes`` (Batch's
      default 30, at most 7,200) is how long Batch waits for them before it replaces their instances. The
      kit waits the most Batch allows unless told otherwise (``update_timeout_minutes``).
    - ``replaceComputeEnvironment: false`` makes CloudFormation update the environment in place under that
      policy rather than replace it; infrastructure updates need ``BEST_FIT_PROGRESSIVE`` (or a Spot
      strategy), not ``BEST_FIT`` (https://docs.aws.amazon.com/batch/latest/userguide/infrastructure-updates.html).
    - What makes a new launch-template version in the first place is the AMI: pin it (an ``ami_id``) and bump
      it on purpose; an AMI read from an SSM parameter is re-read at every deploy.
    """
    if not (BATCH_UPDATE_TIMEOUT_MINUTES[0] <= update_timeout_minutes <= BATCH_UPDATE_TIMEOUT_MINUTES[2]):
        raise InvalidSettings([Problem("update_timeout_minutes", update_timeout_minutes,
                                       f"{BATCH_UPDATE_TIMEOUT_MINUTES[0]} to {BATCH_UPDATE_TIMEOUT_MINUTES[2]} "
                                       "minutes (Batch UpdatePolicy jobExecutionTimeoutMinutes)")],
                              what="compute environment")
    if len(overrides) > BATCH_LAUNCH_TEMPLATE_OVERRIDES:
        raise InvalidSettings([Problem("overrides", len(overrides), f"at most {BATCH_LAUNCH_TEMPLATE_OVERRIDES} "
                                       "launch-template overrides (one per instance type) in a compute environment")],
                              what="compute environment")
    types = [spec.instance_type, *(s.instance_type for s, _ in overrides)]
    return batch.CfnComputeEnvironment(
        scope, construct_id, type="MANAGED", state="ENABLED", replace_compute_environment=False,
        update_policy=batch.CfnComputeEnvironment.UpdatePolicyProperty(
            terminate_jobs_on_update=False, job_execution_timeout_minutes=update_timeout_minutes),
        compute_resources=batch.CfnComputeEnvironment.ComputeResourcesProperty(
            type="EC2", allocation_strategy=allocation_strategy, minv_cpus=0, maxv_cpus=maxv_cpus,
            instance_types=types, subnets=list(subnet_ids), security_group_ids=[security_group.security_group_id],
            instance_role=instance_profile.instance_profile_arn,
            launch_template=batch.CfnComputeEnvironment.LaunchTemplateSpecificationProperty(
                launch_template_id=launch_template.launch_template_id,
                version=launch_template.latest_version_number,
                overrides=[batch.CfnComputeEnvironment.LaunchTemplateSpecificationOverrideProperty(
                    launch_template_id=lt.launch_template_id, version=lt.latest_version_number,
                    target_instance_types=[s.instance_type]) for s, lt in overrides] or None),
            placement_group=placement_group.placement_group_name if placement_group else None,
            ec2_configuration=[batch.CfnComputeEnvironment.Ec2ConfigurationObjectProperty(image_type="ECS_AL2023")],
        ),
    )


def job_queue(scope: Construct, construct_id: str, *,
              compute_environments: Sequence[batch.CfnComputeEnvironment]) -> batch.JobQueue:
    """A job queue over the compute environments, tried in the order given (at most 3: Batch's limit)."""
    if not 1 <= len(compute_environments) <= BATCH_COMPUTE_ENVIRONMENTS_PER_QUEUE:
        raise InvalidSettings([Problem("compute_environments", len(compute_environments),
                                       f"1 to {BATCH_COMPUTE_ENVIRONMENTS_PER_QUEUE} compute environments "
                                       "(what one AWS Batch job queue takes)")], what="job queue")
    return batch.JobQueue(scope, construct_id, priority=1, compute_environments=[
        batch.OrderedComputeEnvironment(
            compute_environment=batch.ManagedEc2EcsComputeEnvironment.from_managed_ec2_ecs_compute_environment_arn(
                scope, f"{construct_id}Env{i}", ce.attr_compute_environment_arn),
            order=i + 1)
        for i, ce in enumerate(compute_environments)
    ])


def ecs_machine_image(scope: Construct, *, ami_id: str | None, follow_latest: bool, parameter: str,
                      recorded: Mapping[str, str], data_file: str, field: str, what: str
                      ) -> tuple[ec2.IMachineImage, bool]:
    """The ECS-optimized AMI of a Batch compute environment and whether it is pinned (a redeploy never moves it):
    ``ami_id`` when given; the SSM ``parameter`` resolved at every deploy with ``follow_latest``; else the AMI
    ``recorded`` for the stack's region (``data_file``; a mapping over every recorded region when the stack is
    environment-agnostic). A region with no recorded AMI is refused on ``field``. The one home of this rule for the
    training clusters (Neuron AMI) and the GPU pool (GPU AMI)."""
    region = Stack.of(scope).region
    if ami_id:
        return ec2.MachineImage.generic_linux({region: ami_id}), True
    if follow_latest:
        return ec2.MachineImage.from_ssm_parameter(parameter), False
    if Token.is_unresolved(region):
        return ec2.MachineImage.generic_linux(dict(recorded)), True
    if region not in recorded:
        raise InvalidSettings([Problem(
            field, None, f"ami_id (no AMI is recorded for {region} in neuronfleet/facts/data/{data_file}), or "
                         f"follow_latest: true to resolve {parameter} at every deploy")], what=what)
    return ec2.MachineImage.generic_linux({region: recorded[region]}), True
