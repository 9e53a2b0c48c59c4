"""FleetAlerts: the SNS topic every alarm, failover and cost monitor of a fleet announces on."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subs
from constructs import Construct

from . import rules
from ._nag import acknowledge_wildcards
from .settings import check_argument

ALARMS = "cloudwatch.amazonaws.com"
BUDGETS = "budgets.amazonaws.com"
EVENTS = "events.amazonaws.com"
"""The services that publish to the topic as themselves (read 2026-11-22):

- CloudWatch alarms need ``sns:Publish`` in the topic's resource policy once it has one (AWS Knowledge Center,
  "cloudwatch-receive-sns-for-alarm-trigger"), and ``kms:Decrypt``/``kms:GenerateDataKey*`` on an encrypted topic's
  key (SNS developer guide, sns-key-management.html#compatibility-with-aws-services); both take ``aws:SourceAccount``
  and an ``aws:SourceArn`` alarm pattern (as AWS's MDAA ``grantCloudWatchAlarmsTopicAccess`` does).
- AWS Budgets: ``sns:Publish`` with ``aws:SourceAccount`` and ``aws:SourceArn`` ``arn:<partition>:budgets::<account>:*``
  (AWS Budgets user guide, "Creating an Amazon SNS topic for budget notifications").
- EventBridge: no rule of the kit targets the topic (every rule goes through a Lambda); a rule a user points at
  it gets its ``sns:Publish`` statement from CDK's ``SnsTopic`` target. The key admits EventBridge without
  conditions, because its KMS requests do not carry ``aws:SourceAccount``/``aws:SourceArn`` (SNS developer guide);
  the key admits Budgets unconditioned too (AWS documents no source keys on its KMS requests).
"""


class FleetAlerts(Construct):
    """An encrypted, TLS-only SNS topic with optional e-mail subscriptions, that CloudWatch alarms and AWS Budgets
    of this account may publish to.

    Encrypted with a customer-managed KMS key (rotated): the AWS-managed ``alias/aws/sns`` key would silently drop
    alarm notifications. The topic's resource policy (which CDK writes to enforce TLS, and which then replaces SNS's
    default policy) admits CloudWatch alarms of this account and region, narrowed to names starting with
    ``alarm_name_prefix`` if given, and AWS Budgets of this account. Alarms in any stack of the fleet reach it.

    Example::

        alerts = FleetAlerts(self, "Alerts", emails=["ml-platform@example.com"])
        alarm.add_alarm_action(cw_actions.SnsAction(alerts.topic))
    """

    def __init__(self, scope: Construct, construct_id: str, *, emails: Sequence[str] = (),
                 alarm_name_prefix: str = "") -> None:
        super().__init__(scope, construct_id)
        for i, email in enumerate(emails):
            check_argument(f"emails[{i}]", email, rules.email)
        stack = Stack.of(self)
        alarms = stack.format_arn(service="cloudwatch", resource="alarm", resource_name=f"{alarm_name_prefix}*",
                                  arn_format=ArnFormat.COLON_RESOURCE_NAME)
        budgets = stack.format_arn(service="budgets", region="", resource="*")
        self.publishers = {ALARMS: alarms, BUDGETS: budgets}
        """Who may publish (service -> the aws:SourceArn pattern it must come from)."""
        self.key = kms.Key(self, "Key", enable_key_rotation=True, pending_window=Duration.days(30),
                           description="Fleet alerts topic (CloudWatch alarms, AWS Budgets, EventBridge publish)")
        self.key.add_to_resource_policy(iam.PolicyStatement(
            principals=[iam.ServicePrincipal(ALARMS)], actions=["kms:Decrypt", "kms:GenerateDataKey*"],
            resources=["*"], conditions=_from(stack.account, alarms)))
        # Budgets and EventBridge: unconditioned, as AWS documents them (EventBridge's KMS requests carry no source
        # keys; no AWS page says Budgets' do, and a condition that does not match drops every notification)
        self.key.add_to_resource_policy(iam.PolicyStatement(
            principals=[iam.ServicePrincipal(BUDGETS), iam.ServicePrincipal(EVENTS)],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"], resources=["*"]))
        self.topic = sns.Topic(self, "Topic", master_key=self.key, enforce_ssl=True,
                               display_name="neuronfleet alerts")
        for email in emails:
            self.topic.add_subscription(subs.EmailSubscription(email))
        for service, source in self.publishers.items():
            self.topic.add_to_resource_policy(iam.PolicyStatement(
                principals=[iam.ServicePrincipal(service)], actions=["sns:Publish"],
                resources=[self.topic.topic_arn], conditions=_from(stack.account, source)))


def _from(account: str, source_arn: str) -> dict[str, dict[str, str]]:
    """Confused-deputy conditions: the service acts for this account, from a source matching ``source_arn``."""
    return {"StringEquals": {"aws:SourceAccount": account}, "ArnLike": {"aws:SourceArn": source_arn}}


def grant_publish(topic: sns.ITopic, role: iam.IRole) -> iam.Grant:
    """topic.grant_publish, with the KMS data-key permission it brings acknowledged for cdk-nag."""
    grant = topic.grant_publish(role)
    acknowledge_wildcards(role, "Publishing to the KMS-encrypted alerts topic needs kms:GenerateDataKey* on its "
                                "key (granted on that key only)", actions=("kms:GenerateDataKey*",))
    return grant
