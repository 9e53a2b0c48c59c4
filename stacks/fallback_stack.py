from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import CfnOutput
from aws_cdk import aws_batch as batch
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet import FleetNetwork
from neuronfleet.config import FallbackConfig
from neuronfleet.fallback import CapacityAlerts, GpuPool

from .base import FleetStack


class FallbackStack(FleetStack):
    """The GPU fallback pool (GpuPool, 0 instances while idle) and the Trainium capacity alerts."""

    def __init__(self, scope: Construct, construct_id: str, *, network: FleetNetwork, fallback: FallbackConfig,
                 alerts_topic: sns.ITopic, trainium_queues: Sequence[batch.IJobQueue],
                 availability_zones: list[str], **kwargs: Any) -> None:
        super().__init__(scope, construct_id, availability_zones=availability_zones, **kwargs)
        self.pool = GpuPool(
            self, "GpuPool", vpc=network.vpc,
            subnets=network.vpc.select_subnets(subnet_group_name=network.compute_subnets.subnet_group_name).subnets,
            instance_types=fallback.instance_types, max_vcpus=fallback.max_vcpus,
            cuda_only_workloads=fallback.cuda_only_workloads)
        self.capacity_alerts = CapacityAlerts(self, "CapacityAlerts", pool=self.pool, topic=alerts_topic,
                                              trainium_queues=trainium_queues)
        CfnOutput(self, "GpuJobQueueArn", value=self.pool.job_queue.job_queue_arn,
                  description="CUDA jobs: aws batch submit-job --job-queue <this>")
        CfnOutput(self, "RoutingParameter", value=self.pool.routing.parameter_name)
