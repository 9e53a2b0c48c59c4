from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput
from constructs import Construct

from neuronfleet import FleetNetwork, StaticAzStack, TrainiumCluster
from neuronfleet.fleetfile.schema import TrainingClusterEntry


class TrainingStack(StaticAzStack):
    """One Trainium training cluster (TrainiumCluster) in the fleet's training subnet."""

    def __init__(self, scope: Construct, construct_id: str, *, network: FleetNetwork,
                 cluster: TrainingClusterEntry, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, availability_zones=network.settings.availability_zones, **kwargs)
        network.require_aws_api_access("a training cluster")
        self.cluster = c = TrainiumCluster(self, "Cluster", vpc=network.vpc,
                                           subnet=network.training_subnet_for(cluster.capacity),
                                           settings=cluster, drain_name=cluster.name)
        CfnOutput(self, "JobQueueArn", value=c.job_queue.job_queue_arn,
                  description="aws batch submit-job --job-queue <this>")
        CfnOutput(self, "JobDefinitionArn", value=c.job_definition.job_definition_arn,
                  description=f"multi-node parallel job template: {cluster.count} x {cluster.instance_type}")
        CfnOutput(self, "LaunchTemplateId", value=c.launch_template.launch_template_id or "",
                  description="the cluster's launch template (EFA interfaces, capacity): usable from EKS/Slurm")
        CfnOutput(self, "DataBucketName", value=c.data_bucket.bucket_name)
        CfnOutput(self, "FileSystemId", value=c.file_system.file_system_id)
