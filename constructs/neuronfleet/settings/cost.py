"""Settings of :class:`neuronfleet.CostMonitors`."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ..lambdas.cost.settings import CollectorSettings, ReportSettings, WasteSettings
from ._base import Int, Number, Settings


class BudgetThreshold(Settings):
    what: ClassVar[str] = "budget threshold"
    kind: Literal["FORECASTED", "ACTUAL"]
    percent: Number = Field(gt=0, le=1000)


class CostMonitorSettings(Settings):
    """Budget, idle thresholds and the collector's and report's windows (defaults: the handlers' own settings)."""

    what: ClassVar[str] = "cost monitors"
    monthly_budget_usd: Number | None = Field(default=None, gt=0, le=1e12)
    """An AWS Budget on the fleet's tag, alerting on the fleet topic (none: no budget)."""
    idle_utilisation_percent: Number = Field(default=WasteSettings.idle_percent, ge=0, le=100)
    idle_hours: Int = Field(default=WasteSettings.idle_hours, ge=1, le=72)
    lookback_days: Int = Field(default=CollectorSettings.lookback_days, ge=1, le=90)
    """Days the daily collector re-reads at least (Cost Explorer revises recent days); the current month, and the
    previous one during the first ``month_close_days`` of a month, are always re-read."""
    month_close_days: Int = Field(default=CollectorSettings.month_close_days, ge=0, le=15)
    """Days into a month during which the previous month is still re-read (month-end Savings Plan and credit
    application; AWS documents no fixed day, 5 is an assumption)."""
    backfill_days: Int = Field(default=60, ge=0, le=365)
    """Days the first run reads (Cost Explorer's daily data goes back about 13 months); CloudWatch takes the last
    14 of them, the ledger and the report all."""
    basis: Literal["net_amortized", "unblended"] = "net_amortized"
    """The cost the dashboard and the report use: net_amortized (what finance reports: Savings Plans and
    reservations at their effective cost) or unblended (as billed). Both are in the ledger."""
    source: Literal["cost-explorer", "athena"] = "cost-explorer"
    """Where the collector reads spend: cost-explorer (one account, $0.01 a page) or athena (a CUR 2.0 Data Export
    queried with Athena, for an organisation: deploy in the payer account)."""
    athena_bytes_scanned_cutoff: Int = Field(default=10 * 2**30, ge=10_000_000, le=2**50)
    """With source athena: the workgroup stops any query that would scan more bytes than this."""
    price_stale_days: Int = Field(default=ReportSettings.stale_after_days, ge=1, le=3650)
    """A price read longer ago than this is flagged stale in the report."""
    report_period_days: Int = Field(default=ReportSettings.period_days, ge=1, le=366)
    budget_thresholds: tuple[BudgetThreshold, ...] = (
        BudgetThreshold(kind="FORECASTED", percent=80), BudgetThreshold(kind="FORECASTED", percent=100),
        BudgetThreshold(kind="ACTUAL", percent=100))
