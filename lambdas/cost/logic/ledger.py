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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
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


class Ledger:
    """Adapter over the table (boto3 resource Table)."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def _query(self, **kwargs: Any) -> Iterable[dict[str, Any]]:
        while True:
            page = self._table.query(**kwargs)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def existing(self, days: Iterable[str]) -> dict[tuple[str, str], dict[str, Any]]:
        from boto3.dynamodb.conditions import Key

        found: dict[tuple[str, str], dict[str, Any]] = {}
        for day in sorted(set(days)):
            for it in self._query(KeyConditionExpression=Key("pk").eq(f"DAY#{day}")):
                found[(it["pk"], it["sk"])] = it
        return found

    def write(self, rows: Sequence[CostRow], updated_at: str) -> None:
        with self._table.batch_writer() as batch:
            for row in rows:
                batch.put_item(Item=item(row, updated_at))

    def delete(self, keys: Sequence[tuple[str, str]]) -> None:
        with self._table.batch_writer() as batch:
            for pk, sk in keys:
                batch.delete_item(Key={"pk": pk, "sk": sk})

    def rows(self, days: Iterable[str]) -> list[CostRow]:
        return [row_of(i) for i in self.existing(days).values()]

    # -- published totals ---------------------------------------------------------------------------------

    def published(self, fleet: str, days: Sequence[str]) -> dict[tuple[str, str], Published]:
        """(day, family) -> what CloudWatch holds for ``fleet``, for ``days`` (and whether it is unconfirmed)."""
        from boto3.dynamodb.conditions import Key

        if not days:
            return {}
        lo, hi = min(days), max(days) + "#~"
        out = {}
        for it in self._query(KeyConditionExpression=Key("pk").eq(f"PUBLISHED#{fleet}") & Key("sk").between(lo, hi)):
            day, family = it["sk"].split("#", 1)
            out[(day, family)] = Published(Decimal(str(it["value"])), str(it.get("sending", "")))
        return out

    def _transact(self, actions: list[dict[str, Any]]) -> None:
        for i in range(0, len(actions), TRANSACTION_ITEMS):
            self._table.meta.client.transact_write_items(TransactItems=actions[i:i + TRANSACTION_ITEMS])

    def _put(self, fleet: str, day: str, family: str, value: Decimal, condition: dict[str, Any],
             **extra: Any) -> dict[str, Any]:
        return {"Put": {"TableName": self._table.name, "Item": {
            "pk": f"PUBLISHED#{fleet}", "sk": f"{day}#{family}", "value": str(value), **extra}, **condition}}

    def claim_published(self, fleet: str, totals: Mapping[tuple[str, str], Decimal],
                        expected: Mapping[tuple[str, str], Decimal], run: str, updated_at: str) -> None:
        """Record the totals about to be published, marked ``sending`` by ``run``: all of them or none (one
        transaction, at most :data:`TRANSACTION_ITEMS`), each on condition it still holds the value read before."""
        if len(totals) > TRANSACTION_ITEMS:
            raise ValueError(f"claim_published: got {len(totals)} totals; allowed: at most {TRANSACTION_ITEMS}")
        actions = []
        for (day, family), value in sorted(totals.items()):
            before = expected.get((day, family))
            condition: dict[str, Any] = (
                {"ConditionExpression": "attribute_not_exists(pk)"} if before is None else
                {"ConditionExpression": "#v = :before", "ExpressionAttributeNames": {"#v": "value"},
                 "ExpressionAttributeValues": {":before": str(before)}})
            actions.append(self._put(fleet, day, family, value, condition, sending=run, updated_at=updated_at,
                                     **({"previous": str(before)} if before is not None else {})))
        self._transact(actions)

    def _mine(self, run: str) -> dict[str, Any]:
        return {"ConditionExpression": "sending = :run", "ExpressionAttributeValues": {":run": run}}

    def confirm_published(self, fleet: str, totals: Mapping[tuple[str, str], Decimal], run: str,
                          updated_at: str) -> None:
        """CloudWatch took ``run``'s claimed totals: drop the ``sending`` mark (on condition ``run`` still holds it)."""
        self._transact([self._put(fleet, day, family, value, self._mine(run), updated_at=updated_at)
                        for (day, family), value in sorted(totals.items())])

    def release_published(self, fleet: str, totals: Mapping[tuple[str, str], Decimal],
                          previous: Mapping[tuple[str, str], Decimal], run: str, updated_at: str) -> None:
        """CloudWatch refused ``run``'s batch: put back the totals it held before (none: no record)."""
        actions: list[dict[str, Any]] = []
        for day, family in sorted(totals):
            if (day, family) in previous:
                actions.append(self._put(fleet, day, family, previous[(day, family)], self._mine(run),
                                         updated_at=updated_at))
            else:
                actions.append({"Delete": {"TableName": self._table.name,
                                           "Key": {"pk": f"PUBLISHED#{fleet}", "sk": f"{day}#{family}"},
                                           **self._mine(run)}})
        self._transact(actions)

    # -- run lock and state ---------------------------------------------------------------------------------

    def lock(self, name: str, owner: str, now: datetime, seconds: int) -> None:
        """Take the lock ``name`` until now + seconds; Busy if another owner holds it unexpired."""
        from botocore.exceptions import ClientError

        try:
            self._table.put_item(
                Item={"pk": "LOCK", "sk": name, "owner": owner, "expires": int(now.timestamp()) + seconds},
                ConditionExpression="attribute_not_exists(pk) OR expires < :now",
                ExpressionAttributeValues={":now": int(now.timestamp())})
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise Busy(f"{name} is held by another run") from None
            raise

    def unlock(self, name: str, owner: str) -> None:
        from botocore.exceptions import ClientError

        try:
            self._table.delete_item(Key={"pk": "LOCK", "sk": name}, ConditionExpression="#o = :me",
                                    ExpressionAttributeNames={"#o": "owner"}, ExpressionAttributeValues={":me": owner})
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    def state(self, name: str) -> dict[str, Any] | None:
        got = self._table.get_item(Key={"pk": "STATE", "sk": name}).get("Item")
        return dict(got) if got else None

    def set_state(self, name: str, **values: Any) -> None:
        self._table.put_item(Item={"pk": "STATE", "sk": name, **values})

