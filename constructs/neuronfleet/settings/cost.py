"""Settings of :class:`neuronfleet.CostMonitors`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import ClassVar, Literal

from pydantic import Field

from neuronfleet_contract.cost import (
    BASIS,
    IDLE_HOURS,
    IDLE_PERCENT,
    LIVE_PRICES,
    LOOKBACK_DAYS,
    MONTH_CLOSE_DAYS,
    PERIOD_DAYS,
    PRICE_CACHE_DAYS,
    PRICE_STALE_DAYS,
    SPEND_SOURCE,
)

from ..core import rules
from ..core.problems import Problem
from ._base import Bool, Int, Number, Settings

CUR_EXPORT_REGION = "us-east-1"
"""Where a CUR 2.0 Data Export (``AWS::BCMDataExports::Export``) is created, whatever the fleet's region.

Sources (read 2026-11-23): botocore 1.44.5's bcm-data-exports model ("The Data Exports API provides the following
endpoint: https://bcm-data-exports.us-east-1.api.aws"); AWS Data Exports user guide, "Setting up an Amazon S3 bucket
for data exports" (https://docs.aws.amazon.com/cur/latest/userguide/dataexports-s3-bucket.html: the bucket policy
admits exports ``arn:aws:bcm-data-exports:us-east-1:<account>:export/*``); cfn-lint 1.58.0's region schemas list
the type in us-east-1 and not in us-east-2, where CDK's validator refuses it. The destination bucket may be in
another region (the export's required ``S3Region``). tests/unit/test_cur_mnp_facts.py pins these."""

AWS_PARTITION_REGIONS = re.compile(r"^(us|eu|ap|sa|ca|me|af|il|mx)\-\w+\-\d+$")
"""The regions of the ``aws`` partition (botocore 1.44.5 ``data/partitions.json`` ``regionRegex``): those whose
export the kit creates in :data:`CUR_EXPORT_REGION`. Other partitions (China, GovCloud, ISO) are not covered."""


def cur_export_region(region: str) -> str | None:
    """The region that holds the CUR 2.0 export of a fleet in ``region`` (None: none the kit knows)."""
    return CUR_EXPORT_REGION if AWS_PARTITION_REGIONS.match(region) else None


def cur_export_placement_problems(region: str) -> Iterator[Problem]:
    """The export itself must be created in :data:`CUR_EXPORT_REGION` (the construct API's rule: the reference app
    always places it there)."""
    if region != CUR_EXPORT_REGION:
        yield Problem("region", region, (
            f"{CUR_EXPORT_REGION}: AWS::BCMDataExports::Export and the Data Exports API are served from "
            f"{CUR_EXPORT_REGION} only; create the export in a stack of its own there (CurExport(stack_in_"
            f"{CUR_EXPORT_REGION.replace('-', '_')}, ..., analytics=cur)), its bucket and Athena stay in {region}"))


class BudgetThreshold(Settings):
    what: ClassVar[str] = "budget threshold"
    kind: Literal["FORECASTED", "ACTUAL"]
    percent: Number = Field(gt=0, le=1000)


class CostMonitorSettings(Settings):
    """Budget, idle thresholds and the collector's and report's windows (defaults: the handlers' own settings)."""

    what: ClassVar[str] = "cost monitors"
    monthly_budget_usd: Number | None = Field(default=None, gt=0, le=1e12)
    """An AWS Budget on the fleet's tag, alerting on the fleet topic (none: no budget)."""
    idle_utilisation_percent: Number = Field(default=IDLE_PERCENT, ge=0, le=100)
    idle_hours: Int = Field(default=IDLE_HOURS, ge=1, le=72)
    lookback_days: Int = Field(default=LOOKBACK_DAYS, ge=1, le=90)
    """Days the daily collector re-reads at least (Cost Explorer revises recent days); the current month, and the
    previous one during the first ``month_close_days`` of a month, are always re-read."""
    month_close_days: Int = Field(default=MONTH_CLOSE_DAYS, ge=0, le=15)
    """Days into a month during which the previous month is still re-read (month-end Savings Plan and credit
    application; AWS documents no fixed day, 5 is an assumption)."""
    backfill_days: Int = Field(default=60, ge=0, le=365)
    """Days the first run reads (Cost Explorer's daily data goes back about 13 months); CloudWatch takes the last
    14 of them, the ledger and the report all."""
    basis: Literal["net_amortized", "unblended"] = BASIS
    """The cost the dashboard and the report use: net_amortized (what finance reports: Savings Plans and
    reservations at their effective cost) or unblended (as billed). Both are in the ledger."""
    source: Literal["cost-explorer", "athena"] = SPEND_SOURCE
    """Where the collector reads spend: cost-explorer (one account, $0.01 a page) or athena (a CUR 2.0 Data Export
    queried with Athena, for an organisation: deploy in the payer account)."""
    athena_bytes_scanned_cutoff: Int = Field(default=10 * 2**30, ge=rules.ATHENA_MIN_BYTES_SCANNED_CUTOFF, le=2**50)
    """With source athena: the workgroup stops any query that would scan more bytes than this."""
    price_stale_days: Int = Field(default=PRICE_STALE_DAYS, ge=1, le=3650)
    """A price read longer ago than this is flagged stale in the report."""
    live_prices: Bool = LIVE_PRICES
    """The report reads current On-Demand prices (EC2 and SageMaker hosting) from the AWS Price List Query API
    (pricing:GetProducts) when it runs; the fleet file's prices override them, the catalog is the fallback."""
    price_cache_days: Int = Field(default=PRICE_CACHE_DAYS, ge=1, le=90)
    """Days a live price is kept (in the function's container and the cost ledger) before it is read again."""
    report_period_days: Int = Field(default=PERIOD_DAYS, ge=1, le=366)
    budget_thresholds: tuple[BudgetThreshold, ...] = (
        BudgetThreshold(kind="FORECASTED", percent=80), BudgetThreshold(kind="FORECASTED", percent=100),
        BudgetThreshold(kind="ACTUAL", percent=100))

    def region_problems(self, region: str) -> Iterator[Problem]:
        """With source athena, the fleet's region must be one whose CUR 2.0 export the kit can create
        (:func:`cur_export_region`): the fleet file and CostMonitors give the same message."""
        if self.source == "athena" and cur_export_region(region) is None:
            yield Problem("source", "athena", (
                f"cost-explorer in {region}: the kit creates a CUR 2.0 Data Export in {CUR_EXPORT_REGION} for "
                f"fleets of the aws partition only, and {region} is not in it"))
