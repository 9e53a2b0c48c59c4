from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet import Fleet
from neuronfleet.cost import CostMonitors


class CostStack(Stack):
    """The fleet's cost monitors (CostMonitors)."""

    def __init__(self, scope: Construct, construct_id: str, *, fleet: Fleet, alerts_topic: sns.ITopic,
                 endpoint_names: Sequence[str], **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        cm = fleet.cost_monitors
        self.monitors = CostMonitors(
            self, "CostMonitors", fleet_name=fleet.name, topic=alerts_topic, catalog=fleet.catalog,
            endpoint_names=endpoint_names, monthly_budget_usd=cm.monthly_budget_usd,
            idle_utilisation_percent=cm.idle_utilisation_percent, idle_hours=cm.idle_hours)
        CfnOutput(self, "LedgerTable", value=self.monitors.ledger.table_name)
        CfnOutput(self, "ReportBucket", value=self.monitors.report_bucket.bucket_name)
        CfnOutput(self, "DashboardName", value=self.monitors.dashboard.dashboard_name)
