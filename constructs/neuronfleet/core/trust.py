"""Service trusts and the confused deputy (issue 36, finding 8; docs/security.md, "Service trusts"): which service
principals the kit's roles trust, the condition each role's trust carries, and why a principal carries none. One
home: every construct that builds a role for a service asks here; tests/constructs/test_security_bounds.py holds every
example fleet's templates to :data:`TRUSTS`.

A condition on a key the service does not send denies every assumption, so a principal gets a condition only where
the service's own documentation says which keys it sends; elsewhere it is left as AWS documents the trust, and the
reason is said.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam


@dataclass(frozen=True)
class ServiceTrust:
    """What the kit does with one service principal's trust: the condition keys it sets (none: ``why_none`` says
    why) and the source it rests on."""

    service: str
    keys: tuple[str, ...]
    source: str
    why_none: str = ""


SAGEMAKER = ServiceTrust(
    "sagemaker.amazonaws.com", ("aws:SourceArn",),
    "Amazon SageMaker Developer Guide, 'Cross-service confused deputy prevention', SageMaker Inference "
    "(awsdocs/amazon-sagemaker-developer-guide doc_source/security-confused-deputy-prevention.md @ b7eb5235, read "
    "2026-11-28): ArnLike aws:SourceArn arn:<partition>:sagemaker:<region>:<account>:*, 'Do not replace the "
    "aws:SourceArn in this template with the full ARN of a specific model or endpoint'; the account is in the ARN, "
    "so no aws:SourceAccount")
PODS = ServiceTrust(
    "pods.eks.amazonaws.com", ("aws:RequestTag/kubernetes-namespace", "aws:RequestTag/kubernetes-service-account"),
    "Amazon EKS User Guide, 'Create IAM role with trust policy required by EKS Pod Identity', Setting Conditions "
    "(read 2026-11-28): EKS Pod Identity tags its session (sts:TagSession) with the pod's namespace and service "
    "account, and a trust may require them with aws:RequestTag/kubernetes-namespace and "
    "aws:RequestTag/kubernetes-service-account; no aws:SourceAccount or aws:SourceArn is documented for it")
SCHEDULER = ServiceTrust(
    "scheduler.amazonaws.com", ("aws:SourceAccount", "aws:SourceArn"),
    "Amazon EventBridge Scheduler User Guide, 'Troubleshooting quotas in EventBridge Scheduler' (read 2026-11-28): "
    "since 2023-09-07 Scheduler assumes an execution role with the schedule group's ARN as aws:SourceArn "
    "(arn:<partition>:scheduler:<region>:<account>:schedule-group/<group>)")
LAMBDA = ServiceTrust(
    "lambda.amazonaws.com", (),
    "AWS Lambda Developer Guide, 'Defining Lambda function permissions with an execution role' and 'Using source "
    "function ARN to control function access behavior' (read 2026-11-28)",
    why_none="Lambda assumes a function's execution role when it invokes that function ('Lambda automatically "
             "assumes your execution role'), and aws:SourceArn 'applies only to policies where your Lambda function "
             "is the target resource': Lambda documents no source key for the execution role's trust. A function "
             "gets the role only by a caller of this account passing it (iam:PassRole, which does not cross "
             "accounts)")
EC2 = ServiceTrust(
    "ec2.amazonaws.com", (), "IAM User Guide, 'Use an IAM role to grant permissions to applications running on Amazon "
    "EC2 instances' (read 2026-11-28)",
    why_none="an instance gets the role through an instance profile its launcher passes (iam:PassRole, this account "
             "only); EC2 documents no aws:SourceArn or aws:SourceAccount for the instance profile's trust")
ECS_TASKS = ServiceTrust(
    "ecs-tasks.amazonaws.com", (), "none read here: docs/checks.md",
    why_none="Batch jobs' roles (task roles and execution roles) assumed by ECS for Batch-managed tasks: no AWS "
             "source stored here says which source keys ECS sends when AWS Batch starts the task, and a key it does "
             "not send denies every job; kept as AWS Batch documents the job role, with the check in "
             "docs/checks.md. The role is passed only by a caller of this account (iam:PassRole)")
VPC_FLOW_LOGS = ServiceTrust(
    "vpc-flow-logs.amazonaws.com", (), "none read here: docs/checks.md",
    why_none="built by aws-cdk-lib's ec2.FlowLog; the Amazon VPC User Guide's own flow-log role example was not "
             "read here (third-party copies only), so no key is added; the check is in docs/checks.md")
APPLICATION_AUTOSCALING = ServiceTrust(
    "application-autoscaling.amazonaws.com", (), "none read here: docs/checks.md",
    why_none="built by aws-cdk-lib's ScalableTarget; for a SageMaker variant Application Auto Scaling acts through "
             "its service-linked role (AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint), and this role "
             "holds no permission")
EKS = ServiceTrust(
    "eks.amazonaws.com", (), "none read here: docs/checks.md",
    why_none="the cluster role, built by aws-cdk-lib's eks_v2.Cluster; its trust is EKS's documented one and the "
             "cluster's ARN is not known before the role exists; no source key added without EKS's documentation")

TRUSTS: dict[str, ServiceTrust] = {t.service: t for t in (
    SAGEMAKER, PODS, SCHEDULER, LAMBDA, EC2, ECS_TASKS, VPC_FLOW_LOGS, APPLICATION_AUTOSCALING, EKS)}
"""Every service principal a kit role trusts, and what its trust carries."""


def sagemaker_principal(stack: Stack) -> iam.IPrincipal:
    """``sagemaker.amazonaws.com``, only for SageMaker resources of the stack's account and region
    (:data:`SAGEMAKER`)."""
    return iam.ServicePrincipal(SAGEMAKER.service, conditions={"ArnLike": {
        "aws:SourceArn": stack.format_arn(service="sagemaker", resource="*", arn_format=ArnFormat.NO_RESOURCE_NAME)}})


def scheduler_principal(stack: Stack, *, group: str = "default") -> iam.IPrincipal:
    """``scheduler.amazonaws.com``, only for schedules of ``group`` in the stack's account and region
    (:data:`SCHEDULER`)."""
    return iam.ServicePrincipal(SCHEDULER.service, conditions={
        "StringEquals": {"aws:SourceAccount": stack.account},
        "ArnEquals": {"aws:SourceArn": stack.format_arn(service="scheduler", resource="schedule-group",
                                                         resource_name=group,
                                                         arn_format=ArnFormat.SLASH_RESOURCE_NAME)}})


def pod_identity_conditions(*, namespace: str, service_account: str) -> dict[str, Any]:
    """The trust condition of a Pod Identity role worn by one service account (:data:`PODS`)."""
    if not namespace or not service_account:
        raise ValueError(f"namespace, service_account: got {namespace!r}, {service_account!r}; allowed: both named "
                         "(the Pod Identity role's trust requires them)")
    return {"StringEquals": {"aws:RequestTag/kubernetes-namespace": namespace,
                             "aws:RequestTag/kubernetes-service-account": service_account}}


def confine_pod_identity_role(role: iam.IRole, *, namespace: str, service_account: str) -> None:
    """Add :func:`pod_identity_conditions` to a Pod Identity role aws-cdk-lib built (eks_v2.ServiceAccount: one
    trust statement, ``pods.eks.amazonaws.com`` with sts:AssumeRole and sts:TagSession), on its CloudFormation
    resource: aws-cdk-lib takes no condition for it."""
    cfn = role.node.default_child
    if not isinstance(cfn, iam.CfnRole):
        raise TypeError(f"role: got {role!r}; allowed: a role built in this app (an iam.Role)")
    cfn.add_property_override("AssumeRolePolicyDocument.Statement.0.Condition",
                              pod_identity_conditions(namespace=namespace, service_account=service_account))
