"""Cost Explorer pages -> ledger rows. Pure: no AWS calls.

A page is a GetCostAndUsage response grouped by INSTANCE_TYPE and the fleet tag. Malformed groups (no
amount, a non-numeric amount, an instance type of no accelerator family, no date) become BadRows with
the reason; the good rows of the same page are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

FLEET_TAG = "neuronfleet:fleet"
UNTAGGED = "(untagged)"
SERVICES = {"Amazon Elastic Compute Cloud - Compute": "ec2", "Amazon SageMaker": "sagemaker"}

_FAMILIES = (
    (re.compile(r"^(ml\.)?trn\d+[a-z]*\."), "trainium"),
    (re.compile(r"^(ml\.)?inf\d+[a-z]*\."), "inferentia"),
    (re.compile(r"^(ml\.)?(p\d+[a-z]*|g\d+[a-z]*)\."), "gpu"),
)


def family_of(instance_type: str) -> str | None:
    """trainium | inferentia | gpu for accelerator instance types (EC2 or ``ml.`` SageMaker names), else None."""
    for pattern, family in _FAMILIES:
        if pattern.match(instance_type):
            return family
    return None


@dataclass(frozen=True)
class CostRow:
    day: str
    fleet: str
    service: str
    instance_type: str
    family: str
    amount: Decimal
    usage_hours: Decimal

    @property
    def key(self) -> tuple[str, str]:
        return f"DAY#{self.day}", f"FLEET#{self.fleet}#SVC#{self.service}#TYPE#{self.instance_type}"


@dataclass(frozen=True)
class BadRow:
    day: str
    keys: tuple[str, ...]
    reason: str


def parse_page(page: Mapping[str, Any]) -> tuple[list[CostRow], list[BadRow]]:
    """Rows of one GetCostAndUsage page. SageMaker instance types carry the ``ml.`` prefix."""
    good: list[CostRow] = []
    bad: list[BadRow] = []
    for period in page.get("ResultsByTime", []):
        day = str((period.get("TimePeriod") or {}).get("Start", ""))
        for group in period.get("Groups", []):
            row, problem = _row(day, group)
            if row is not None:
                good.append(row)
            else:
                bad.append(BadRow(day=day, keys=tuple(group.get("Keys", [])), reason=problem))
    return good, bad


def _row(day: str, group: Mapping[str, Any]) -> tuple[CostRow | None, str]:
    keys = list(group.get("Keys", []))
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
        return None, f"TimePeriod.Start: got {day!r}; allowed: a date YYYY-MM-DD"
    if len(keys) != 2:
        return None, f"Keys: got {keys!r}; allowed: [instance type, '{FLEET_TAG}$<fleet>']"
    instance_type, tag = keys
    family = family_of(instance_type)
    if family is None:
        return None, (f"instance type: got {instance_type!r}; allowed: a Trainium (trn*), Inferentia (inf*) or "
                      "GPU (p*, g*) type")
    metrics = group.get("Metrics") or {}
    cost = (metrics.get("UnblendedCost") or {}).get("Amount")
    if cost is None:
        return None, "Metrics.UnblendedCost.Amount: got nothing; allowed: a decimal number of USD"
    try:
        amount = Decimal(str(cost))
        hours = Decimal(str((metrics.get("UsageQuantity") or {}).get("Amount", "0")))
    except InvalidOperation:
        return None, f"Metrics.UnblendedCost.Amount: got {cost!r}; allowed: a decimal number of USD"
    if not amount.is_finite() or not hours.is_finite():
        return None, f"Metrics.UnblendedCost.Amount: got {cost!r}; allowed: a finite decimal number"
    fleet = tag.split("$", 1)[1] if "$" in tag else ""
    service = "sagemaker" if instance_type.startswith("ml.") else "ec2"
    return CostRow(day=day, fleet=fleet or UNTAGGED, service=service, instance_type=instance_type,
                   family=family, amount=amount, usage_hours=hours), ""


def totals(rows: Iterable[CostRow]) -> dict[tuple[str, str, str], Decimal]:
    """Spend per (day, fleet, family)."""
    out: dict[tuple[str, str, str], Decimal] = {}
    for r in rows:
        key = (r.day, r.fleet, r.family)
        out[key] = out.get(key, Decimal(0)) + r.amount
    return out
