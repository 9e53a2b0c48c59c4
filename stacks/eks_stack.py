from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from neuronfleet import FleetNetwork, StaticAzStack
from neuronfleet.eks import NeuronEksCluster
from neuronfleet.settings.eks import NeuronEksClusterSettings


class EksTrainingStack(StaticAzStack):
    """One training cluster scheduled by Amazon EKS (NeuronEksCluster) in the fleet's compute subnets."""

    def __init__(self, scope: Construct, construct_id: str, *, network: FleetNetwork,
                 cluster: NeuronEksClusterSettings, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, availability_zones=network.settings.availability_zones, **kwargs)
        network.require_aws_api_access("an EKS cluster")
        self.cluster = c = NeuronEksCluster(self, "Eks", vpc=network.vpc, vpc_subnets=network.compute_subnets,
                                            settings=cluster)
        name = c.cluster.cluster_name
        CfnOutput(self, "ClusterName", value=name)
        CfnOutput(self, "UpdateKubeconfig", value=f"aws eks update-kubeconfig --name {name} --region "
                                                   f"{Stack.of(self).region}",
                  description="then: kubectl get nodes -L neuronfleet/node-group (docs/eks.md)")
        CfnOutput(self, "WorkloadRoleArn", value=c.workload_role.role_arn,
                  description="EKS Pod Identity role of the neuronfleet-training service account")
