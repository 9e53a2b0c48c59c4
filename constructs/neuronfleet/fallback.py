"""GPU fallback: an idle GPU pool on AWS Batch."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from ._region import check_in_region
from .catalog import CATALOG, AcceleratorFamily, InstanceSpec
from .compute import batch_compute_environment, batch_instance_role, efa_launch_template, efa_security_group, job_queue
from .problems import InvalidSettings, Problem
from .settings import GpuPoolSettings
from .tagging import tag_family


class GpuPool(Construct):
    """GPU capacity on AWS Batch that costs nothing while idle (0 vCPUs minimum).

    One compute environment per instance type, tried in the order given, behind one job queue; every EFA
    card attached on types that have EFA (32 on p5.48xlarge). Same security, IMDSv2 and tagging rules as
    the Trainium cluster. ``routing`` (an SSM parameter) tells schedulers which workloads are CUDA-only.

    Example::

        pool = GpuPool(self, "Gpu", vpc=net.vpc, subnets=net.vpc.select_subnets(subnet_group_name="compute").subnets,
                       settings=GpuPoolSettings(instance_types=["p5.48xlarge", "g6e.48xlarge"], max_vcpus=384,
                                                cuda_only_workloads=["custom-cuda-kernels"]))
        pool.job_queue.job_queue_arn
    """

    def __init__(self, scope: Construct, construct_id: str, *, vpc: ec2.IVpc, subnets: Sequence[ec2.ISubnet],
                 settings: GpuPoolSettings | None = None) -> None:
        super().__init__(scope, construct_id)
        settings = settings or GpuPoolSettings()
        check_in_region(self, settings.what, settings.region_problems)
        if not subnets:
            raise InvalidSettings([Problem("subnets", [], "at least one (private) subnet")], what=settings.what)
        self.settings = settings
        self.specs: list[InstanceSpec] = [CATALOG.get(t) for t in settings.instance_types]
        self.max_vcpus = settings.max_vcpus
        self.cuda_only_workloads = settings.cuda_only_workloads
        tag_family(self, AcceleratorFamily.GPU)
        self._environments(vpc, subnets)
        self.routing = ssm.StringParameter(
            self, "Routing", description="neuronfleet: where CUDA-only workloads run",
            string_value=Stack.of(self).to_json_string({
                "gpu_queue_arn": self.job_queue.job_queue_arn, "cuda_only_workloads": list(self.cuda_only_workloads),
                "instance_types": list(settings.instance_types)}))

    def _environments(self, vpc: ec2.IVpc, subnets: Sequence[ec2.ISubnet]) -> None:
        """One launch template and Batch compute environment per type, in priority order, behind one queue."""
        settings = self.settings
        self.security_group = efa_security_group(
            self, "EfaSecurityGroup", vpc=vpc, description="GPU fallback pool: EFA within the group, HTTPS out")
        self.role, self.instance_profile = batch_instance_role(self, "InstanceRole",
                                                               description="GPU fallback instances")
        image = ec2.MachineImage.from_ssm_parameter(settings.ami_parameter)
        self.launch_templates: dict[str, ec2.LaunchTemplate] = {}
        self.compute_environments: list[batch.CfnComputeEnvironment] = []
        for spec in self.specs:
            cid = "".join(part.capitalize() for part in spec.instance_type.replace(".", "-").split("-"))
            lt, _ = efa_launch_template(
                self, f"{cid}LaunchTemplate", spec=spec, machine_image=image, instance_profile=self.instance_profile,
                security_group=self.security_group, root_volume_gib=settings.root_volume_gib)
            self.launch_templates[spec.instance_type] = lt
            self.compute_environments.append(batch_compute_environment(
                self, f"{cid}ComputeEnvironment", spec=spec, launch_template=lt, instance_profile=self.instance_profile,
                subnet_ids=[s.subnet_id for s in subnets], maxv_cpus=settings.max_vcpus))
        self.job_queue = job_queue(self, "JobQueue", compute_environments=self.compute_environments)

    def describe(self) -> dict[str, object]:
        """What the pool can take, for the capacity alerts (JSON-serialisable; tokens allowed)."""
        return {
            "queue_arn": self.job_queue.job_queue_arn, "max_vcpus": self.max_vcpus,
            "cuda_only_workloads": list(self.cuda_only_workloads),
            "types": [{"instance_type": s.instance_type, "gpus": s.accelerators, "gpu_name": s.accelerator_name,
                       "efa": s.efa_interfaces, "vcpus": s.vcpus} for s in self.specs],
        }
