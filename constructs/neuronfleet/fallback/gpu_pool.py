"""GPU fallback: an idle GPU pool on AWS Batch."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from ..core.args import renamed, settings_argument, wrong_type
from ..core.fleet_tag_check import warn_without_fleet_tag
from ..core.nag import acknowledge_wildcards
from ..core.problems import InvalidSettings, Problem
from ..core.region import check_in_region
from ..core.tagging import tag_family
from ..facts.catalog import CATALOG, AcceleratorFamily, InstanceSpec, gpu_ecs_amis
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


class GpuPool(Construct):
    """GPU capacity on AWS Batch that costs nothing while idle (0 vCPUs minimum).

    One Batch compute environment holding every type (one launch template per type, each with that type's
    EFA interfaces, joined as launch-template overrides), so ``max_vcpus`` is the ceiling of the whole pool;
    one job queue in front of it. Every EFA card attached on types that have EFA (32 on p5.48xlarge). Same
    security, IMDSv2, tagging and redeploy rules as the Trainium cluster (running jobs are waited for, see
    ``neuronfleet.training.batch.batch_compute_environment``). ``routing`` (an SSM parameter) tells schedulers which
    workloads are CUDA-only.

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
                 vpc_subnets: ec2.SubnetSelection | None = None, settings: GpuPoolSettings | None = None,
                 subnets: Sequence[ec2.ISubnet] | ec2.SubnetSelection | None = None) -> None:
        """``vpc_subnets``: where the pool's instances launch (default: the VPC's private subnets, aws-cdk-lib's
        default selection); ``subnets`` is its deprecated name (a list of subnets or a selection)."""
        super().__init__(scope, construct_id)
        settings = GpuPoolSettings() if settings is None else settings_argument(settings, GpuPoolSettings,
                                                                                what="GpuPool")
        check_in_region(self, settings.what, settings.region_problems)
        selection = renamed("subnets", subnets, "vpc_subnets", vpc_subnets, what="GpuPool")
        if subnets is not None and not isinstance(selection, ec2.SubnetSelection) and \
                not isinstance(selection, str | dict) and hasattr(selection, "__iter__"):
            selection = ec2.SubnetSelection(subnets=list(selection))  # the deprecated form: a list of subnets
        if selection is not None and not isinstance(selection, ec2.SubnetSelection):
            raise wrong_type("vpc_subnets", selection, "an ec2.SubnetSelection (e.g. net.compute_subnets, or "
                             "ec2.SubnetSelection(subnets=[...]))", what="GpuPool")
        chosen = _select(vpc, selection or ec2.SubnetSelection())
        if not chosen:
            raise InvalidSettings([Problem("vpc_subnets", [], "at least one (private) subnet")], what=settings.what)
        self.settings = settings
        self.specs: list[InstanceSpec] = [CATALOG.get(t) for t in settings.instance_types]
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

    def grant_submit_jobs(self, grantee: iam.IGrantable) -> iam.Grant:
        """``batch:SubmitJob`` on the pool's job queue with any job definition of this account and region (the pool
        brings none: CUDA jobs bring their own) (Batch user guide, "Resource: Restrict to job definition prefix on job
        submission", https://docs.aws.amazon.com/batch/latest/userguide/iam-example-restrict-job-submission.html,
        read 2026-11-23: "you must provide both job queue and job definition resource types"; the request's
        job-definition ARN carries the revision)."""
        stack = Stack.of(self)
        definitions = stack.format_arn(service="batch", resource="job-definition", resource_name="*")
        grant = iam.Grant.add_to_principal(grantee=grantee, actions=["batch:SubmitJob"], resource_arns=[
            self.job_queue.job_queue_arn, definitions])
        if isinstance(grantee, Construct):
            acknowledge_wildcards(grantee, "batch:SubmitJob to the GPU pool's queue with the caller's own job "
                                           "definitions (any of this account and region)", resources=(definitions,))
        return grant

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
