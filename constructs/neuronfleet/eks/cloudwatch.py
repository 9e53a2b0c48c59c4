"""CloudWatchObservability: the ``amazon-cloudwatch-observability`` EKS add-on on a NeuronEksCluster, for Neuron
metrics per node, per pod and per UltraServer (Container Insights with enhanced observability) and every container's
logs in CloudWatch Logs (what the UltraServer split alarm reads: eks.job_alarms).

The agent's identity is EKS Pod Identity (the add-on's own association, a role with CloudWatchAgentServerPolicy
worn only by ``amazon-cloudwatch/cloudwatch-agent``). The application log group is created before the add-on so that
its retention is the kit's and a metric filter can be attached to it at deploy time (Fluent Bit's
``auto_create_group`` would otherwise make it, with no retention, after the stack). Sources and what is unconfirmed:
neuronfleet.facts.eks_observability.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, RemovalPolicy, Validations
from aws_cdk import aws_eks as eks_l1
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from ..core.nag import acknowledge
from ..core.trust import confine_pod_identity_role
from ..facts.eks_observability import (
    ADDON_NAMESPACE,
    ADDON_SERVICE_ACCOUNT,
    AGENT_POLICY,
    APPLICATION_LOG_GROUP,
    CLOUDWATCH_ADDON,
    CLOUDWATCH_ADDON_VERSION,
)

LOG_RETENTION = logs.RetentionDays.ONE_MONTH
"""How long containers' logs are kept (the kit's choice)."""


class CloudWatchObservability(Construct):
    """The add-on, its Pod Identity role and the application log group of ``cluster``.

    Example::

        obs = CloudWatchObservability(self, "Observability", cluster=neuron_cluster.cluster)
        obs.application_logs   # /aws/containerinsights/<cluster>/application
        obs.addon              # aws_eks.CfnAddon
    """

    def __init__(self, scope: Construct, construct_id: str, *, cluster: eks.Cluster) -> None:
        super().__init__(scope, construct_id)
        self.application_logs = logs.LogGroup(
            self, "ApplicationLogs", log_group_name=APPLICATION_LOG_GROUP.format(cluster=cluster.cluster_name),
            retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY)
        acknowledge(self.application_logs, "CloudWatchLogGroupEncrypted", "CKV_AWS_158")
        self.role = iam.Role(
            self, "AgentRole", description="CloudWatch Observability add-on: its agent's metrics and logs",
            assumed_by=iam.SessionTagsPrincipal(iam.ServicePrincipal("pods.eks.amazonaws.com")),
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(AGENT_POLICY)])
        confine_pod_identity_role(self.role, namespace=ADDON_NAMESPACE, service_account=ADDON_SERVICE_ACCOUNT)
        Validations.of(self.role).acknowledge(Acknowledgment(
            id=f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{AGENT_POLICY}]",
            reason="the managed policy AWS documents for the CloudWatch agent of Container Insights"))
        self.addon = eks_l1.CfnAddon(
            self, "Addon", addon_name=CLOUDWATCH_ADDON, cluster_name=cluster.cluster_name,
            addon_version=CLOUDWATCH_ADDON_VERSION, resolve_conflicts="OVERWRITE",
            pod_identity_associations=[eks_l1.CfnAddon.PodIdentityAssociationProperty(
                role_arn=self.role.role_arn, service_account=ADDON_SERVICE_ACCOUNT)])
        self.addon.node.add_dependency(self.application_logs)
