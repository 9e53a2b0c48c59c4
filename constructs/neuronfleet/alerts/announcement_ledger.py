"""AnnouncementLedger: the DynamoDB table behind "announce once" (neuronfleet_runtime.announcements)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..core.nag import acknowledge

GRANTED_ACTIONS = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query")


class AnnouncementLedger(Construct):
    """What a function has announced: once-only warnings and the lasting conditions it has said started.

    Keys ``kind`` (partition) and ``subject`` (sort), TTL on ``expires``; on demand, point-in-time recovery on.
    The same keys hold the claims and, under ``kind`` = ``#outbox``, the messages not yet sent (the handlers'
    outbox: neuronfleet_runtime.announcements); items written by earlier versions read as announced, so the schema
    is unchanged. Losing it costs at most one repeated announcement per open condition, and the messages not yet
    sent, so it is destroyed with its stack.

    Example::

        ledger = AnnouncementLedger(self, "Announced")
        ledger.grant(fn.role)   # PutItem, UpdateItem, DeleteItem, Query on this table only
        ledger.table.table_name
    """

    def __init__(self, scope: Construct, construct_id: str, *,
                 removal_policy: RemovalPolicy = RemovalPolicy.DESTROY) -> None:
        """``removal_policy``: the table's; DESTROY by default (see above: losing it costs at most one repeat)."""
        super().__init__(scope, construct_id)
        self.table = dynamodb.Table(
            self, "Table", partition_key=dynamodb.Attribute(name="kind", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="subject", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST, time_to_live_attribute="expires",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True),
            removal_policy=removal_policy)
        acknowledge(self.table, "DynamoDBInBackupPlan", "CKV_AWS_119")  # core.nag.ACKNOWLEDGED: PITR is on

    def grant(self, role: iam.IGrantable) -> iam.Grant:
        """Record, publish-mark and list announcements on this table only: conditional PutItem and DeleteItem (the
        claims and messages, written together by TransactWriteItems, which IAM authorises as its Put, Update and
        Delete actions: DynamoDB developer guide, "Using IAM with DynamoDB transactions",
        https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html, read
        2026-11-23), UpdateItem (take a message, mark it sent, hand it back) and Query."""
        return self.table.grant(role, *GRANTED_ACTIONS)
