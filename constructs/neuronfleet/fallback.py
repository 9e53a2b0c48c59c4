"""GPU fallback: an idle GPU pool on AWS Batch, Neuron->GPU endpoint failover, Trainium capacity alerts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from aws_cdk import Duration, Stack
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from ._region import check_in_region
from .alerts import grant_publish
from .catalog import CATALOG, AcceleratorFamily, InstanceSpec
from .compute import batch_compute_environment, batch_instance_role, efa_launch_template, efa_security_group, job_queue
from .functions import FleetFunction
from .inference import GPU_VARIANT, NeuronEndpoint
from .lambdas.capacity_alert.settings import CapacityAlertSettings, gpu_pool
from .lambdas.failover.logic import MIN_DWELL, RECOVERY
from .lambdas.failover.settings import FailoverSettings
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


class EndpointFailover(Construct):
    """Shifts an endpoint's traffic from its Neuron variant to its GPU variant when the Neuron variant's
    alarms fire, and back once they have been OK for ``recovery`` (hysteresis: no flapping). Each shift is
    logged, counted (``FAILOVER_NAMESPACE``, neuronfleet.lambdas.namespaces) and announced on the topic.

    The function may describe and re-weight only the endpoints given, and read only their alarms.
    """

    def __init__(self, scope: Construct, construct_id: str, *, endpoints: Sequence[NeuronEndpoint],
                 topic: sns.ITopic, recovery: Duration | None = None, min_dwell: Duration | None = None,
                 check_every: Duration | None = None) -> None:
        super().__init__(scope, construct_id)
        no_gpu = [e.node.id for e in endpoints if e.gpu_variant is None or e.gpu_variant.shadow]
        if not endpoints or no_gpu:
            raise ValueError(f"endpoints without a live '{GPU_VARIANT}' variant cannot fail over: "
                             f"{', '.join(no_gpu) or 'none given'}; give each a GpuVariant(shadow=False)")
        watched = {e.endpoint_name: [a.alarm_name for a in e.alarms.values()] for e in endpoints}
        self.function = FleetFunction(
            self, "Function", handler="failover.handler.handler", alarm_topic=topic,
            description="neuronfleet: Neuron->GPU endpoint traffic failover",
            environment=FailoverSettings(
                endpoints=watched, topic_arn=topic.topic_arn,
                recovery=timedelta(minutes=recovery.to_minutes()) if recovery else RECOVERY,
                min_dwell=timedelta(minutes=min_dwell.to_minutes()) if min_dwell else MIN_DWELL,
            ).to_environment(to_json=Stack.of(self).to_json_string))
        role = self.function.role
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["sagemaker:DescribeEndpoint", "sagemaker:UpdateEndpointWeightsAndCapacities"],
            resources=[e.endpoint_arn for e in endpoints]))
        alarms = [a for e in endpoints for a in e.alarms.values()]
        role.add_to_principal_policy(iam.PolicyStatement(actions=["cloudwatch:DescribeAlarms"],
                                                         resources=[a.alarm_arn for a in alarms]))
        grant_publish(topic, role)
        self.alarm_rule = events.Rule(
            self, "OnAlarm", description="Neuron variant alarm changed state",
            event_pattern=events.EventPattern(source=["aws.cloudwatch"], detail_type=["CloudWatch Alarm State Change"],
                                              resources=[a.alarm_arn for a in alarms]),
            targets=[targets.LambdaFunction(self.function.function, retry_attempts=2)])
        self.schedule_rule = events.Rule(
            self, "Recheck", description="Re-check failed-over endpoints for fail-back (hysteresis)",
            schedule=events.Schedule.rate(check_every or Duration.minutes(5)),
            targets=[targets.LambdaFunction(self.function.function, retry_attempts=2)])


class CapacityAlerts(Construct):
    """Announces failed or ending Trainium capacity with what the GPU pool can take instead.

    Watches: Capacity Block expiration warnings and failed/expired/delayed reservations (EC2), instance
    launches refused for capacity (EC2 Auto Scaling, which AWS Batch uses), and Batch jobs on the Trainium
    queues held RUNNABLE for capacity (``statusReason`` starting ``CAPACITY:``).
    """

    def __init__(self, scope: Construct, construct_id: str, *, pool: GpuPool, topic: sns.ITopic,
                 trainium_queues: Sequence[batch.IJobQueue] = ()) -> None:
        super().__init__(scope, construct_id)
        self.function = FleetFunction(
            self, "Function", handler="capacity_alert.handler.handler", alarm_topic=topic,
            description="neuronfleet: Trainium capacity events -> GPU fallback announcement",
            environment=CapacityAlertSettings(pool=gpu_pool(pool.describe()), topic_arn=topic.topic_arn,
                                              ).to_environment(to_json=Stack.of(self).to_json_string))
        grant_publish(topic, self.function.role)
        target = targets.LambdaFunction(self.function.function, retry_attempts=2)
        self.rules = [
            events.Rule(self, "ReservationEvents", description="Capacity Block ending, reservation failed/expired",
                        targets=[target], event_pattern=events.EventPattern(source=["aws.ec2"], detail_type=[
                            "Capacity Block Reservation Expiration Warning", "Capacity Block Expiration Warning",
                            "EC2 Capacity Reservation Failed", "EC2 Capacity Reservation Expired",
                            "EC2 Capacity Reservation Delayed"])),
            events.Rule(self, "LaunchUnsuccessful", description="Instances not launched for lack of capacity",
                        targets=[target], event_pattern=events.EventPattern(
                            source=["aws.autoscaling"], detail_type=["EC2 Instance Launch Unsuccessful"],
                            detail={"StatusMessage": events.Match.wildcard("*InsufficientInstanceCapacity*")})),
        ]
        if trainium_queues:
            self.rules.append(events.Rule(
                self, "JobsStuck", description="Trainium Batch jobs held RUNNABLE for capacity", targets=[target],
                event_pattern=events.EventPattern(source=["aws.batch"], detail_type=["Batch Job State Change"], detail={
                    "status": ["RUNNABLE"], "statusReason": events.Match.prefix("CAPACITY:"),
                    "jobQueue": [q.job_queue_arn for q in trainium_queues]})))
