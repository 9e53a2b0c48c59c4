from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, RemovalPolicy, Stack
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet import FleetNetwork, GpuPool, StaticAzStack, TrainiumClusterSettings
from neuronfleet.eks import NeuronEksCluster
from neuronfleet.eks.capacity_alerts import NodegroupCapacityAlerts
from neuronfleet.eks.job_alarms import EksJobAlarms
from neuronfleet.settings.eks import NeuronEksClusterSettings
from neuronfleet.settings.sharing import SharingSettings
from neuronfleet.sharing.pool import SharingPool
from neuronfleet.training.lustre import lustre_storage


class EksTrainingStack(StaticAzStack):
    """One training cluster scheduled by Amazon EKS (NeuronEksCluster) in the fleet's compute subnets, with the Batch
    path's shared storage (a versioned data bucket, FSx for Lustre linked to it, in the training subnet of the
    entry's capacity) mounted in training's pods and training's Pod Identity role given the data bucket (serving's
    role none of it)."""

    def __init__(self, scope: Construct, construct_id: str, *, network: FleetNetwork,
                 cluster: NeuronEksClusterSettings, storage: TrainiumClusterSettings,
                 sharing: SharingSettings | None = None, alerts_topic: sns.ITopic | None = None,
                 fleet: str = "", gpu_pool: GpuPool | None = None, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, availability_zones=network.settings.availability_zones, **kwargs)
        network.require_aws_api_access("an EKS cluster")
        shared = [sharing.shared_node_group(cluster)] if sharing is not None and alerts_topic else []
        self.cluster = c = NeuronEksCluster(self, "Eks", vpc=network.vpc, vpc_subnets=network.compute_subnets,
                                            settings=cluster, shared_node_groups=shared)
        self.storage = lustre_storage(
            Construct(self, "Storage"), vpc=network.vpc, subnet=network.training_subnet_for(storage.capacity),
            clients=c.security_group, storage_gib=storage.fsx_storage_gib,
            throughput_mib_per_tib=storage.fsx_throughput_mib_per_tib,
            backup_retention_days=storage.fsx_backup_retention_days, removal_policy=RemovalPolicy.RETAIN)
        c.mount(self.storage.file_system, open_ports=False, storage_gib=storage.fsx_storage_gib)
        c.grant_training_data(self.storage.data_bucket)  # training's role only; serving's gets no data bucket
        self.lifecycle_targets = c.lifecycle_targets(self.storage.data_bucket)
        """Its Capacity Block node groups, which the fleet's CapacityLifecycle makes follow their blocks (stacks/fleet.py
        connects them as it connects the Batch clusters; the drain flags live in this data bucket)."""
        name = c.cluster.cluster_name
        CfnOutput(self, "ClusterName", value=name)
        CfnOutput(self, "UpdateKubeconfig", value=f"aws eks update-kubeconfig --name {name} --region "
                                                   f"{Stack.of(self).region}",
                  description="then: kubectl get nodes -L neuronfleet/node-group (docs/eks.md)")
        CfnOutput(self, "WorkloadRoleArn", value=c.training_role.role_arn,
                  description="EKS Pod Identity role of training's service account (namespace neuronfleet-training)")
        CfnOutput(self, "ServingRoleArn", value=c.serving_role.role_arn,
                  description="EKS Pod Identity role of serving's service account (namespace neuronfleet-serving): "
                              "grant it its model with NeuronEksCluster.grant_serving_model_read")
        CfnOutput(self, "DataBucketName", value=self.storage.data_bucket.bucket_name)
        CfnOutput(self, "FileSystemId", value=self.storage.file_system.file_system_id)
        self.capacity_alerts: NodegroupCapacityAlerts | None = None
        if alerts_topic is not None:  # a Neuron node group that cannot get nodes: announced once (docs/eks.md)
            self.capacity_alerts = NodegroupCapacityAlerts(self, "NodegroupCapacity", cluster=c, topic=alerts_topic,
                                                           pool=gpu_pool, fleet=fleet)
        self.pool: SharingPool | None = None
        if sharing is not None and alerts_topic is not None:
            schedule = sharing.pool_schedule(cluster, cluster.node_groups[0].name)  # the entry's name
            self.pool = SharingPool(self, "Pool", cluster=c, node_group=sharing.shared_node_group(cluster),
                                    schedule=schedule, topic=alerts_topic, deployment=sharing.deployment,
                                    fleet=fleet)
        self.job_alarms: EksJobAlarms | None = None
        if alerts_topic is not None:  # an UltraServer split, training pending past its deadline (docs/eks.md)
            self.job_alarms = EksJobAlarms(   # Kueue's: the pool's and the placement queues' (one release)
                self, "JobAlarms", cluster=c, topic=alerts_topic, kueue=c.kueue,
                training_queues=[*([self.pool.names["training_queue"]] if self.pool else []),
                                 *c.placement_queues.values()])
