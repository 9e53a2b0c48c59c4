from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import CfnOutput
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet import CapacityAlerts, FleetNetwork, GpuPool, GpuPoolSettings, StaticAzStack, TrainiumCluster


class FallbackStack(StaticAzStack):
    """The GPU fallback pool (GpuPool, 0 instances while idle) and the Trainium capacity alerts (``fleet``: the
    fleet's name, the ``Fleet`` dimension of their metrics)."""

    def __init__(self, scope: Construct, construct_id: str, *, network: FleetNetwork, pool: GpuPoolSettings,
                 alerts_topic: sns.ITopic, clusters: Sequence[TrainiumCluster], fleet: str = "",
                 **kwargs: Any) -> None:
        super().__init__(scope, construct_id, availability_zones=network.settings.availability_zones, **kwargs)
        network.require_aws_api_access("a GPU pool")
        self.pool = GpuPool(self, "GpuPool", vpc=network.vpc, vpc_subnets=network.compute_subnets, settings=pool)
        self.capacity_alerts = CapacityAlerts(self, "CapacityAlerts", pool=self.pool, topic=alerts_topic,
                                              clusters=clusters, fleet=fleet)
        CfnOutput(self, "GpuJobQueueArn", value=self.pool.job_queue.job_queue_arn,
                  description="CUDA jobs: aws batch submit-job --job-queue <this>")
        CfnOutput(self, "RoutingParameter", value=self.pool.routing.parameter_name)
