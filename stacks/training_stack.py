from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput
from constructs import Construct

from neuronfleet import FleetNetwork
from neuronfleet.config import TrainingClusterConfig
from neuronfleet.training import Capacity, TrainiumCluster

from .base import FleetStack


class TrainingStack(FleetStack):
    """One Trainium training cluster (TrainiumCluster) in the fleet's training subnet."""

    def __init__(self, scope: Construct, construct_id: str, *, network: FleetNetwork,
                 cluster: TrainingClusterConfig, availability_zones: list[str], **kwargs: Any) -> None:
        super().__init__(scope, construct_id, availability_zones=availability_zones, **kwargs)
        cap = cluster.capacity
        capacity = Capacity.on_demand() if cap.type == "on-demand" else Capacity(
            kind=cap.type, reservation_id=cap.reservation_id, resource_group_arn=cap.resource_group_arn,
            availability_zone=cap.availability_zone or network.training_subnet.availability_zone)
        self.cluster = TrainiumCluster(
            self, "Cluster",
            vpc=network.vpc, subnet=network.training_subnet,
            instance_type=cluster.instance_type, count=cluster.count, capacity=capacity,
            placement_group=cap.placement_group,
            ami_parameter=cluster.ami.ssm_parameter, ami_id=cluster.ami.ami_id,
            root_volume_gib=cluster.root_volume_gib,
            fsx_storage_gib=cluster.fsx_storage_gib,
            fsx_throughput_mib_per_tib=cluster.fsx_throughput_mib_per_tib,
            training_image=cluster.training_image,
        )
        c = self.cluster
        CfnOutput(self, "JobQueueArn", value=c.job_queue.job_queue_arn,
                  description="aws batch submit-job --job-queue <this>")
        CfnOutput(self, "JobDefinitionArn", value=c.job_definition.job_definition_arn,
                  description=f"multi-node parallel job template: {cluster.count} x {cluster.instance_type}")
        CfnOutput(self, "LaunchTemplateId", value=c.launch_template.launch_template_id or "",
                  description="the cluster's launch template (EFA interfaces, capacity): usable from EKS/Slurm")
        CfnOutput(self, "DataBucketName", value=c.data_bucket.bucket_name)
        CfnOutput(self, "FileSystemId", value=c.file_system.file_system_id)
