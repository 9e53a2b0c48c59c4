from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from neuronfleet import FleetAlerts


class AlertsStack(Stack):
    """The fleet's alerts topic (FleetAlerts): endpoint alarms, failover and cost monitors announce here."""

    def __init__(self, scope: Construct, construct_id: str, *, emails: Sequence[str], **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.alerts = FleetAlerts(self, "Alerts", emails=emails)
        CfnOutput(self, "AlertsTopicArn", value=self.alerts.topic.topic_arn)
