"""Batch transform in the money: each batch job's spend over the report's period, by its model, from the ledger's
transform rows. Pure: no AWS calls.

**What the rows carry.** The collector's Cost Explorer query is grouped by USAGE_TYPE and the fleet tag, the two
group-bys GetCostAndUsage allows (adapters/cost_explorer.py): a transform row is (day, fleet, ``Transform:``/
``Tsform:ml.<type>``) with its spend and instance-hours, never a job's or a model's name, although each transform job
carries the ``neuronfleet:model`` tag. So a row is attributed by its instance type, as SageMaker hosting is
(economics.attribute_hosting): a type exactly one of the fleet's batch jobs (:class:`BatchJob`) runs on is that job's
model's; a type two jobs share, or no known job runs on, is listed with its spend as not attributed to a model, and
why. Every transform row lands in exactly one line (one per instance type), and transform rows never reach an
endpoint's line (attribute_hosting and async_spend read ``sagemaker-hosting`` rows only).

**Unconfirmed usage type**: the kit counts both ``Transform:`` and ``Tsform:`` (rows.py; docs/checks.md
``transform-usage-type``); if SageMaker bills another, the spend is in neither this section nor the fleet's inference.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from neuronfleet_contract.cost import BatchJob  # what ReportConfig.batch_jobs carries (BATCH_JOBS)

from .economics import show
from .rows import CostRow

TRANSFORM_USAGE = "sagemaker-transform"
CHECK_ID = "transform-usage-type"
"""verify's manual check of the usage type (docs/checks.md)."""
NO_JOBS = "the report's configuration names no batch job of this fleet"
"""Why a transform row has no model when the report was given no batch jobs."""


def batch_spend(rows: Iterable[CostRow], jobs: Sequence[BatchJob], *, no_jobs: str = NO_JOBS) -> list[dict[str, Any]]:
    """One line per instance type of the fleet's transform rows in ``rows``: its spend, instance-hours and days, the
    model of the one batch job that runs on that type, or ``model`` None and why (module docstring)."""
    owners: dict[str, list[BatchJob]] = {}
    for j in jobs:
        owners.setdefault(j.instance_type, []).append(j)
    spend: dict[str, Decimal] = {}
    hours: dict[str, Decimal] = {}
    days: dict[str, set[str]] = {}
    for r in rows:
        if r.usage != TRANSFORM_USAGE:
            continue
        spend[r.instance_type] = spend.get(r.instance_type, Decimal(0)) + r.amount
        hours[r.instance_type] = hours.get(r.instance_type, Decimal(0)) + r.usage_hours
        days.setdefault(r.instance_type, set()).add(r.day)
    out = []
    for t in sorted(spend):
        who = owners.get(t, [])
        figures = f"${show(spend[t])} for {show(hours[t])} instance-hours on {t} over {len(days[t])} day(s) with runs"
        entry: dict[str, Any] = {"instance_type": t, "spend_usd": show(spend[t]), "instance_hours": show(hours[t]),
                                 "days": len(days[t]), "job": None, "model": None}
        if len(who) == 1:
            entry |= {"job": who[0].name, "model": who[0].model,
                      "line": f"{who[0].model}: {figures} (batch job {who[0].name})"}
        else:
            why = (f"shared by batch jobs {', '.join(sorted(j.name for j in who))}: Cost Explorer has no per-job "
                   "figure" if who else no_jobs if not jobs else "no batch job of this fleet is configured on this type")
            entry["line"] = f"model not known: {figures}, not attributed to a model ({why})"
        out.append(entry)
    return out


SOURCE = ("the ledger's Transform:/Tsform: rows (Cost Explorer, grouped by usage type and the fleet tag: no per-job "
          "figure), attributed to a model by the instance type when exactly one batch job of the fleet runs on it "
          f"(usage type unconfirmed: neuronfleet verify --check {CHECK_ID})")
