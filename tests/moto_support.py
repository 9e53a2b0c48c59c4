"""moto as it is (docs/DESIGN.md): the gap handling lives in the library (neuronfleet.offline), shared with the demo."""

from __future__ import annotations

from typing import Any

from neuronfleet.offline import botocore_variant_instance_types, offline_aws, sagemaker_instance_types_from_botocore

__all__ = ["alerts_inbox", "announcements_table", "botocore_variant_instance_types", "offline_aws",
           "sagemaker_instance_types_from_botocore"]


def announcements_table(dynamodb: Any, name: str = "announced") -> str:
    """The announcements ledger's table as AnnouncementLedger defines it (kind/subject; tests/constructs checks the
    construct against the same keys)."""
    dynamodb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                          KeySchema=[{"AttributeName": "kind", "KeyType": "HASH"},
                                     {"AttributeName": "subject", "KeyType": "RANGE"}],
                          AttributeDefinitions=[{"AttributeName": "kind", "AttributeType": "S"},
                                                {"AttributeName": "subject", "AttributeType": "S"}])
    return name


def alerts_inbox(sns: Any, sqs: Any) -> tuple[str, str]:
    """An SNS topic ``alerts`` with an SQS queue ``inbox`` subscribed, to read what a handler announces:
    (topic ARN, queue URL)."""
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    queue = sqs.create_queue(QueueName="inbox")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    return topic, queue
