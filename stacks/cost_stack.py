from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet import CostMonitors, CostMonitorSettings, InstanceCatalog


class CostStack(Stack):
    """The fleet's cost monitors (CostMonitors)."""

    def __init__(self, scope: Construct, construct_id: str, *, fleet_name: str, settings: CostMonitorSettings,
                 catalog: InstanceCatalog, alerts_topic: sns.ITopic, endpoint_names: Sequence[str],
                 price_overrides: Mapping[str, Any] | None = None, endpoint_models: Sequence[Any] = (),
                 reservation_ids: Sequence[str] = (), reservation_groups: Sequence[str] = (),
                 **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.monitors = CostMonitors(self, "CostMonitors", fleet_name=fleet_name, topic=alerts_topic, catalog=catalog,
                                     endpoint_names=endpoint_names, settings=settings, price_overrides=price_overrides,
                                     endpoint_models=endpoint_models, reservation_ids=reservation_ids,
                                     reservation_groups=reservation_groups)
        CfnOutput(self, "LedgerTable", value=self.monitors.ledger.table_name)
        CfnOutput(self, "ReportBucket", value=self.monitors.report_bucket.bucket_name)
        CfnOutput(self, "DashboardName", value=self.monitors.dashboard.dashboard_name)
