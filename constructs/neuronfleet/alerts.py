"""FleetAlerts: the SNS topic every alarm, failover and cost monitor of a fleet announces on."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subs
from constructs import Construct

from . import rules
from ._nag import acknowledge_wildcards
from .settings import check_argument

PUBLISHING_SERVICES = ("cloudwatch.amazonaws.com", "events.amazonaws.com", "budgets.amazonaws.com")
"""Services that publish to the encrypted topic and so need its key."""


class FleetAlerts(Construct):
    """An encrypted, TLS-only SNS topic with optional e-mail subscriptions.

    Encrypted with a customer-managed KMS key (rotated) whose policy lets CloudWatch alarms and
    EventBridge and AWS Budgets publish: the AWS-managed ``alias/aws/sns`` key would silently drop alarm notifications.

    Example::

        alerts = FleetAlerts(self, "Alerts", emails=["ml-platform@example.com"])
        alarm.add_alarm_action(cw_actions.SnsAction(alerts.topic))
    """

    def __init__(self, scope: Construct, construct_id: str, *, emails: Sequence[str] = ()) -> None:
        super().__init__(scope, construct_id)
        for i, email in enumerate(emails):
            check_argument(f"emails[{i}]", email, rules.email)
        self.key = kms.Key(self, "Key", enable_key_rotation=True, pending_window=Duration.days(30),
                           description="Fleet alerts topic (CloudWatch alarms and EventBridge publish)")
        for service in PUBLISHING_SERVICES:
            self.key.add_to_resource_policy(iam.PolicyStatement(
                principals=[iam.ServicePrincipal(service)],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"], resources=["*"],
            ))
        self.topic = sns.Topic(self, "Topic", master_key=self.key, enforce_ssl=True,
                               display_name="neuronfleet alerts")
        for email in emails:
            self.topic.add_subscription(subs.EmailSubscription(email))
        # AWS Budgets publishes through the topic's resource policy (alarms and EventBridge rules need none)
        self.topic.add_to_resource_policy(iam.PolicyStatement(
            principals=[iam.ServicePrincipal("budgets.amazonaws.com")], actions=["sns:Publish"],
            resources=[self.topic.topic_arn],
            conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}}))


def grant_publish(topic: sns.ITopic, role: iam.IRole) -> iam.Grant:
    """topic.grant_publish, with the KMS data-key permission it brings acknowledged for cdk-nag."""
    grant = topic.grant_publish(role)
    acknowledge_wildcards(role, "Publishing to the KMS-encrypted alerts topic needs kms:GenerateDataKey* on its "
                                "key (granted on that key only)", actions=("kms:GenerateDataKey*",))
    return grant
