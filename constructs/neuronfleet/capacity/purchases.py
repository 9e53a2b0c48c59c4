"""CapacityPurchaseAnnouncements: every Capacity Block purchase or extension in the account and region, whoever made
it, announced once on the fleet's topic (lambdas/capacity_lifecycle/purchases.py)."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet_contract.capacity_alert import ANNOUNCEMENTS_METRIC, MALFORMED_METRIC
from neuronfleet_contract.capacity_lifecycle import (
    CLOUDTRAIL_API_CALL,
    EC2_EVENT_SOURCE,
    PURCHASE_EVENTS,
    PURCHASES_SERVICE,
    PurchaseAnnouncerConfig,
)
from neuronfleet_contract.namespaces import CAPACITY_NAMESPACE

from ..alerts.announcement_ledger import AnnouncementLedger
from ..alerts.health_alarms import fleet_health, health_alarm, health_metric
from ..alerts.topic import grant_publish
from ..core.args import duck
from ..core.functions import FleetFunction

DESCRIPTION = "neuronfleet: every Capacity Block purchase or extension in the account, announced once"


class CapacityPurchaseAnnouncements(Construct):
    """Announces on ``topic`` every ``PurchaseCapacityBlock`` and ``PurchaseCapacityBlockExtension`` call made in the
    stack's account and region, by anyone (the kit's lifecycle function, ``neuronfleet capacity``, the console,
    another team's script): who (the caller's ARN), what (offering and reservation ids), the price when the event
    holds it (else how to read it). It is how an unexpected purchase becomes known the minute CloudTrail records it:
    IAM can bound who may buy and which reservations, but no condition key bounds the amount (capacity/iam.py).

    EventBridge receives CloudTrail's API-call events only while a trail with logging is on in the account (EventBridge
    user guide, "AWS service events delivered via AWS CloudTrail"): the kit creates none (an organisation's trail
    serves). The function has its own announcements table, which the lifecycle role cannot write. A malformed event is
    refused and counted (``MalformedEvents``), and alarms into the topic (:attr:`malformed_alarm`).

    Example::

        CapacityPurchaseAnnouncements(self, "Purchases", topic=alerts.topic, fleet="nf-prod")
    """

    def __init__(self, scope: Construct, construct_id: str, *, topic: sns.ITopic, fleet: str = "") -> None:
        super().__init__(scope, construct_id)
        duck("topic", topic, "topic_arn", "an sns.ITopic (e.g. alerts.topic)", what="CapacityPurchaseAnnouncements")
        self.health = fleet_health(fleet)
        self.ledger = AnnouncementLedger(self, "Announced")
        self.function = FleetFunction(
            self, "Function", handler="capacity_lifecycle.purchases.handler", topic=topic, description=DESCRIPTION,
            environment=PurchaseAnnouncerConfig(topic_arn=topic.topic_arn,
                                                ledger_table=self.ledger.table.table_name).to_environment()
            | self.health.to_environment())
        grant_publish(topic, self.function.role)
        self.ledger.grant(self.function.role)
        self.rule = events.Rule(
            self, "Purchases", description="Capacity Block purchases and extensions in the account (CloudTrail)",
            event_pattern=events.EventPattern(source=["aws.ec2"], detail_type=[CLOUDTRAIL_API_CALL], detail={
                "eventSource": [EC2_EVENT_SOURCE], "eventName": list(PURCHASE_EVENTS)}),
            targets=[self.function.event_target()])
        self.malformed_alarm = health_alarm(
            self, "MalformedEventsAlarm", self.metric_malformed_events(), topic=topic,
            description="neuronfleet capacity purchases: a CloudTrail purchase event was refused as malformed "
                        "(MalformedEvents): a Capacity Block purchase may have gone unannounced; its log has the event")

    def metric_malformed_events(self, **options: Any) -> cloudwatch.Metric:
        """Events the announcer refused (``MalformedEvents``; hourly sums by default), of this fleet."""
        return health_metric(CAPACITY_NAMESPACE, MALFORMED_METRIC, service=PURCHASES_SERVICE, health=self.health,
                             options=options)

    def metric_announcements(self, **options: Any) -> cloudwatch.Metric:
        """Purchases announced (``CapacityAnnouncements``; hourly sums by default), of this fleet."""
        return health_metric(CAPACITY_NAMESPACE, ANNOUNCEMENTS_METRIC, service=PURCHASES_SERVICE,
                             health=self.health, options=options)
