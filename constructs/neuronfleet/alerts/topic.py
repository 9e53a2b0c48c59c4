"""FleetAlerts: the SNS topic every alarm, failover and cost monitor of a fleet announces on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import ArnFormat, CfnOutput, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subs
from constructs import Construct

from ..core import rules
from ..core.args import check_argument, string_list
from ..core.nag import acknowledge_wildcards

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
- EventBridge: no rule of the kit targets the topic (every rule goes through a Lambda), so the key does not admit
  it unless asked (``eventbridge=True``, for a rule a user points at the topic; its ``sns:Publish`` statement comes
  from CDK's ``SnsTopic`` target). That statement cannot be conditioned: EventBridge's KMS requests carry no
  ``aws:SourceAccount``/``aws:SourceArn`` (SNS developer guide, as AWS's MDAA ``grantCloudWatchAlarmsTopicAccess``
  notes, read 2026-11-23), and a condition that does not match drops every notification.
- The key admits Budgets without source conditions: AWS's Budgets guide gives them for the topic policy's
  ``sns:Publish`` (kept above) and none for the key; no AWS page read here says Budgets' KMS requests carry them.
"""

UNSUBSCRIBE_PROTECTION = (
    "Each address gets a confirmation e-mail: do not click its link. Copy it, take the Token parameter from it and run "
    "aws sns confirm-subscription --topic-arn <topic ARN> --token <token> --authenticate-on-unsubscribe true "
    "(or paste the link into the SNS console's Confirm subscription). Then only this account can unsubscribe the "
    "address; the unsubscribe link of a forwarded alert no longer works. Check: aws sns get-subscription-attributes "
    "--subscription-arn <ARN> shows ConfirmationWasAuthenticated true.")
"""How an e-mail subscription is made one that only the account can end (SNS API reference, ConfirmSubscription
``AuthenticateOnUnsubscribe``: "only the topic owner and the subscription owner can unsubscribe the endpoint. The
unsubscribe action requires Amazon Web Services authentication"; GetSubscriptionAttributes
``ConfirmationWasAuthenticated``; botocore 1.44.5, pinned by tests/unit/test_isolation_facts.py). CloudFormation
cannot do it: AWS::SNS::Subscription only subscribes, and the token of an e-mail subscription reaches the mailbox
alone. A topic policy cannot either: ``sns:Unsubscribe`` is not among the actions a topic policy takes (SNS developer
guide, "Amazon SNS API permissions: Actions and resources reference", read 2026-11-23)."""


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

    def __init__(self, scope: Construct, construct_id: str, *, emails: Sequence[str] | str = (),
                 alarm_name_prefix: str = "", eventbridge: bool = False) -> None:
        """``emails``: addresses to subscribe (one string is one address)."""
        super().__init__(scope, construct_id)
        emails = string_list("emails", emails, what="FleetAlerts")
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
        # Budgets (and EventBridge if asked): unconditioned, see BUDGETS/EVENTS above
        self.key.add_to_resource_policy(iam.PolicyStatement(
            principals=[iam.ServicePrincipal(BUDGETS), *([iam.ServicePrincipal(EVENTS)] if eventbridge else [])],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"], resources=["*"]))
        self.topic = sns.Topic(self, "Topic", master_key=self.key, enforce_ssl=True,
                               display_name="neuronfleet alerts")
        for email in emails:
            self.topic.add_subscription(subs.EmailSubscription(email))
        if emails:  # the one step CloudFormation cannot take (UNSUBSCRIBE_PROTECTION)
            CfnOutput(self, "ProtectSubscriptions", value=UNSUBSCRIBE_PROTECTION.replace(
                "<topic ARN>", self.topic.topic_arn), description="Confirm each e-mail subscription with authentication")
        for service, source in self.publishers.items():
            self.topic.add_to_resource_policy(iam.PolicyStatement(
                principals=[iam.ServicePrincipal(service)], actions=["sns:Publish"],
                resources=[self.topic.topic_arn], conditions=_from(stack.account, source)))

    def grant_publish(self, grantee: iam.IGrantable) -> iam.Grant:
        """Publish to the topic: ``sns:Publish`` on it and the KMS data-key permission on its key (aws-cdk-lib's
        ``Topic.grant_publish``)."""
        return grant_publish(self.topic, grantee)

    def metric(self, metric_name: str, **options: Any) -> cloudwatch.Metric:
        """A metric of the topic in ``AWS/SNS`` (``cloudwatch.MetricOptions`` keywords: ``period``, ``statistic``,
        ``label``, ...)."""
        return self.topic.metric(metric_name, **options)

    def metric_number_of_notifications_failed(self, **options: Any) -> cloudwatch.Metric:
        """Notifications SNS could not deliver (``cloudwatch.MetricOptions`` keywords)."""
        return self.topic.metric_number_of_notifications_failed(**options)


def _from(account: str, source_arn: str) -> dict[str, dict[str, str]]:
    """Confused-deputy conditions: the service acts for this account, from a source matching ``source_arn``."""
    return {"StringEquals": {"aws:SourceAccount": account}, "ArnLike": {"aws:SourceArn": source_arn}}


def grant_publish(topic: sns.ITopic, role: iam.IGrantable) -> iam.Grant:
    """topic.grant_publish, with the KMS data-key permission it brings acknowledged for cdk-nag."""
    grant = topic.grant_publish(role)
    if isinstance(role, Construct):  # a role or user: where the statement lands
        acknowledge_wildcards(role, "Publishing to the KMS-encrypted alerts topic needs kms:GenerateDataKey* on its "
                                    "key (granted on that key only)", actions=("kms:GenerateDataKey*",))
    return grant
