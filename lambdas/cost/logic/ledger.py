"""The DynamoDB ledger: the rows of spend, the totals already published to CloudWatch, a run lock.

- Rows (``pk = DAY#<day>``): idempotent writes; a late correction replaces a row; a row Cost Explorer no longer
  returns for a day it was asked about is retracted (deleted), e.g. spend that moved from untagged to a fleet.
- Published totals (``pk = PUBLISHED#<fleet>``, ``sk = <day>#<family>``): what CloudWatch holds. The metrics are
  derived from the ledger: each run publishes ledger total - published total (the dashboard reads the day's Sum).
  The new totals are **claimed before** PutMetricData (one transaction per batch of at most
  :data:`TRANSACTION_ITEMS`, conditional on the totals read, marked ``sending`` with the run's id), then confirmed.
  So a claim that fails publishes nothing; a publish CloudWatch refuses (an error answer, or no connection made)
  releases the claim and the next run sends it; a confirmation that fails leaves totals CloudWatch already holds,
  never sent twice. Only a publish whose outcome is unknown (a read timeout after sending) stays ``sending``: it is
  not sent again (a double count is worse than a gap the run names) and every later run lists it as unconfirmed.
- Run lock (``pk = LOCK``): a conditional put with an expiry, so two overlapping runs never both publish.
- Collector state (``pk = STATE``): whether the first run (the backfill) completed.
- Days answered (``pk = QUERIED``, ``sk = <day>``): each day Cost Explorer's answer held a period for
  (``ResultsByTime[].TimePeriod.Start``) when the collector asked, a day with no group (no spend) included: the
  report's recorded days (economics.recorded). A day asked twice is one item (the put is idempotent); a day never
  asked has none, so a run the collector missed never lengthens the period; a day a bad row came from this run is
  not marked by it (its spend may be incomplete), nor any day when a bad row's day is unknown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from .rows import CostRow, publishable


class Busy(Exception):
    """Another run holds the collector's lock."""


TRANSACTION_ITEMS = 100
"""TransactWriteItems takes at most 100 actions (botocore 1.44.5 dynamodb model, TransactWriteItemList max 100;
DynamoDB API reference, TransactWriteItems, read 2026-11-23). Its Put actions need only ``dynamodb:PutItem``, its
Delete actions ``dynamodb:DeleteItem`` (DynamoDB developer guide, "Using IAM with DynamoDB transactions")."""


@dataclass(frozen=True)
class Published:
    """What the ledger says CloudWatch holds for one (day, family): ``value``; ``sending``: the run that claimed it
    and has not confirmed it (empty when confirmed)."""

    value: Decimal
    sending: str = ""


@dataclass
class Plan:
    new: list[CostRow] = field(default_factory=list)
    replaced: list[CostRow] = field(default_factory=list)
    retracted: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0
    kept: int = 0
    """Held rows not retracted because a bad row this run came from their day (a malformed answer never deletes
    what the ledger knew)."""
    duplicates: int = 0
    """Rows of one key more than once in the run (the same group repeated): one is kept."""

    @property
    def writes(self) -> list[CostRow]:
        return self.new + self.replaced


def _same(held: Mapping[str, Any], row: CostRow) -> bool:
    return (Decimal(str(held["amount"])) == row.amount
            and Decimal(str(held.get("unblended", held["amount"]))) == row.cost("unblended")
            and Decimal(str(held.get("usage_hours", "0"))) == row.usage_hours
            and bool(held.get("estimated", False)) == row.estimated)


def plan(rows: Iterable[CostRow], existing: Mapping[tuple[str, str], Mapping[str, Any]],
         scope: Iterable[str] = (), fleet: str | None = None, bad_days: Iterable[str] = ()) -> Plan:
    """Which rows to write, and which held rows to retract, given what the ledger holds (keyed by (pk, sk)).

    ``scope``: the Cost Explorer days this run asked about; a held row derived from one of them (its
    ``source_day``, else its day: a Capacity Block's amortised days are retracted only with their fee's day) that
    this run did not produce is retracted. ``fleet``: only that fleet's held rows are candidates (None: every
    fleet's). ``bad_days``: days a bad row came from (``""``: a bad row of no known day); held rows derived from
    them are kept, unless CloudWatch could not take their amount (:func:`~.rows.publishable`)."""
    out = Plan()
    latest: dict[tuple[str, str], CostRow] = {}
    for row in rows:  # the same key twice in one run: the same group repeated; the later page's is kept
        out.duplicates += row.key in latest
        latest[row.key] = row
    for key, row in latest.items():
        held = existing.get(key)
        if held is None:
            out.new.append(row)
        elif not _same(held, row):
            out.replaced.append(row)
        else:
            out.unchanged += 1
    asked, bad = set(scope), set(bad_days)
    for key, held in existing.items():
        if key in latest or (fleet is not None and held.get("fleet") != fleet):
            continue
        origin = held.get("source_day") or held.get("day")
        if origin not in asked:
            continue
        if ("" in bad or origin in bad) and _readable(held):
            out.kept += 1
        else:
            out.retracted.append(key)
    return out


def _readable(held: Mapping[str, Any]) -> bool:
    """Whether a held row's amounts are numbers CloudWatch accepts (a row an older collector stored with 1E+400
    is not: it is retracted, never kept)."""
    try:
        return all(publishable(Decimal(str(held.get(k, "0")))) for k in ("amount", "unblended"))
    except InvalidOperation:
        return False


QUERIED_PK = "QUERIED"
"""The partition of the days Cost Explorer answered (module docstring)."""


def answered_days(asked: Iterable[str], answered: Iterable[str], bad_days: Iterable[str] = ()) -> list[str]:
    """The days a run marks as recorded: those of its window (``asked``) its usage query's answer held a period for
    (``answered``: rows.Parsed.days of every page), less the days a bad row came from; none when a bad row's day is
    unknown (``""`` in ``bad_days``)."""
    bad = set(bad_days)
    if "" in bad:
        return []
    return sorted((set(asked) & set(answered)) - bad)


def queried_item(day: str, updated_at: str) -> dict[str, Any]:
    return {"pk": QUERIED_PK, "sk": day, "day": day, "source": "cost-explorer", "updated_at": updated_at}


def item(row: CostRow, updated_at: str) -> dict[str, Any]:
    pk, sk = row.key
    return {"pk": pk, "sk": sk, "day": row.day, "fleet": row.fleet, "service": row.service, "usage": row.usage,
            "instance_type": row.instance_type, "family": row.family, "amount": str(row.amount),
            "unblended": str(row.cost("unblended")), "usage_hours": str(row.usage_hours), "currency": "USD",
            "estimated": row.estimated, "source_day": row.source_day or row.day, "detail": row.detail,
            "usage_type": row.usage_type, "source": "cost-explorer", "updated_at": updated_at}


def row_of(i: Mapping[str, Any]) -> CostRow:
    return CostRow(day=i["day"], fleet=i["fleet"], service=i["service"], instance_type=i["instance_type"],
                   family=i["family"], amount=Decimal(str(i["amount"])),
                   usage_hours=Decimal(str(i.get("usage_hours", "0"))), usage=i.get("usage", "ec2"),
                   unblended=Decimal(str(i.get("unblended", i["amount"]))), estimated=bool(i.get("estimated", False)),
                   source_day=i.get("source_day", i["day"]), detail=i.get("detail", ""),
                   usage_type=i.get("usage_type", ""))
