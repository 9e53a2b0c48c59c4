from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet import CostMonitors, CostMonitorSettings, CurAnalytics, CurExport, InstanceCatalog
from neuronfleet.cost.monitors import BatchJob


class CostStack(Stack):
    """The fleet's cost monitors (CostMonitors). They find the fleet's endpoints by tag when they run; the report
    reads the latest verdict of each pilot judge in ``judges``: this stack depends on the inference stacks that hold
    judges (it imports their records buckets' names), on no other."""

    def __init__(self, scope: Construct, construct_id: str, *, fleet_name: str, settings: CostMonitorSettings,
                 catalog: InstanceCatalog, alerts_topic: sns.ITopic,
                 price_overrides: Mapping[str, Any] | None = None, reservation_ids: Sequence[str] = (),
                 reservation_groups: Sequence[str] = (), judges: Sequence[Any] = (),
                 batch_jobs: Sequence[BatchJob] = (), **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.monitors = CostMonitors(self, "CostMonitors", fleet_name=fleet_name, topic=alerts_topic, catalog=catalog,
                                     settings=settings, price_overrides=price_overrides, reservation_ids=reservation_ids,
                                     reservation_groups=reservation_groups, judges=judges, batch_jobs=batch_jobs)
        CfnOutput(self, "LedgerTable", value=self.monitors.ledger.table_name)
        CfnOutput(self, "ReportBucket", value=self.monitors.report_bucket.bucket_name)
        CfnOutput(self, "DashboardName", value=self.monitors.dashboard.dashboard_name)


class CurExportStack(Stack):
    """The fleet's CUR 2.0 Data Export (CurExport), in us-east-1 where AWS serves Data Exports, writing to the cost
    stack's bucket in the fleet's region (same account). It depends on the cost stack."""

    def __init__(self, scope: Construct, construct_id: str, *, analytics: CurAnalytics, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.export = CurExport(self, "CurExport", analytics=analytics)
        CfnOutput(self, "ExportName", value=analytics.export_name)
