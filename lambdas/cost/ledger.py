"""The DynamoDB ledger: the rows of spend, the totals already published to CloudWatch, a run lock.

- Rows (``pk = DAY#<day>``): idempotent writes; a late correction replaces a row; a row Cost Explorer no longer
  returns for a day it was asked about is retracted (deleted), e.g. spend that moved from untagged to a fleet.
- Published totals (``pk = PUBLISHED#<fleet>``, ``sk = <day>#<family>``): what CloudWatch already holds. The
  metrics are derived from the ledger: each run publishes ledger total - published total and records the new
  total only after PutMetricData succeeded, so a failed publish is repaired by the next run.
- Run lock (``pk = LOCK``): a conditional put with an expiry, so two overlapping runs never both publish.
- Collector state (``pk = STATE``): whether the first run (the backfill) completed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from .rows import CostRow


class Busy(Exception):
    """Another run holds the collector's lock."""


@dataclass
class Plan:
    new: list[CostRow] = field(default_factory=list)
    replaced: list[CostRow] = field(default_factory=list)
    retracted: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0

    @property
    def writes(self) -> list[CostRow]:
        return self.new + self.replaced


def _same(held: Mapping[str, Any], row: CostRow) -> bool:
    return (Decimal(str(held["amount"])) == row.amount
            and Decimal(str(held.get("unblended", held["amount"]))) == row.cost("unblended")
            and Decimal(str(held.get("usage_hours", "0"))) == row.usage_hours
            and bool(held.get("estimated", False)) == row.estimated)


def plan(rows: Iterable[CostRow], existing: Mapping[tuple[str, str], Mapping[str, Any]],
         scope: Iterable[str] = (), fleet: str | None = None) -> Plan:
    """Which rows to write, and which held rows to retract, given what the ledger holds (keyed by (pk, sk)).

    ``scope``: the Cost Explorer days this run asked about; a held row derived from one of them (its
    ``source_day``, else its day) that this run did not produce is retracted. ``fleet``: only that fleet's
    held rows are candidates (None: every fleet's)."""
    out = Plan()
    latest: dict[tuple[str, str], CostRow] = {}
    for row in rows:  # the same key twice in one run: the later page wins
        latest[row.key] = row
    for key, row in latest.items():
        held = existing.get(key)
        if held is None:
            out.new.append(row)
        elif not _same(held, row):
            out.replaced.append(row)
        else:
            out.unchanged += 1
    asked = set(scope)
    for key, held in existing.items():
        if key in latest or (fleet is not None and held.get("fleet") != fleet):
            continue
        if (held.get("source_day") or held.get("day")) in asked:
            out.retracted.append(key)
    return out


def item(row: CostRow, updated_at: str) -> dict[str, Any]:
    pk, sk = row.key
    return {"pk": pk, "sk": sk, "day": row.day, "fleet": row.fleet, "service": row.service, "usage": row.usage,
            "instance_type": row.instance_type, "family": row.family, "amount": str(row.amount),
            "unblended": str(row.cost("unblended")), "usage_hours": str(row.usage_hours), "currency": "USD",
            "estimated": row.estimated, "source_day": row.source_day or row.day, "detail": row.detail,
            "source": "cost-explorer", "updated_at": updated_at}


def row_of(i: Mapping[str, Any]) -> CostRow:
    return CostRow(day=i["day"], fleet=i["fleet"], service=i["service"], instance_type=i["instance_type"],
                   family=i["family"], amount=Decimal(str(i["amount"])),
                   usage_hours=Decimal(str(i.get("usage_hours", "0"))), usage=i.get("usage", "ec2"),
                   unblended=Decimal(str(i.get("unblended", i["amount"]))), estimated=bool(i.get("estimated", False)),
                   source_day=i.get("source_day", i["day"]), detail=i.get("detail", ""))


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

    def published(self, fleet: str, days: Sequence[str]) -> dict[tuple[str, str], Decimal]:
        """(day, family) -> the total CloudWatch holds for ``fleet``, for ``days``."""
        from boto3.dynamodb.conditions import Key

        if not days:
            return {}
        lo, hi = min(days), max(days) + "#~"
        out = {}
        for it in self._query(KeyConditionExpression=Key("pk").eq(f"PUBLISHED#{fleet}") & Key("sk").between(lo, hi)):
            day, family = it["sk"].split("#", 1)
            out[(day, family)] = Decimal(str(it["value"]))
        return out

    def mark_published(self, fleet: str, totals: Mapping[tuple[str, str], Decimal],
                       expected: Mapping[tuple[str, str], Decimal], updated_at: str) -> None:
        """Record what CloudWatch now holds; each write conditional on the value read before publishing."""
        for (day, family), value in sorted(totals.items()):
            before = expected.get((day, family))
            condition: dict[str, Any] = (
                {"ConditionExpression": "attribute_not_exists(pk)"} if before is None else
                {"ConditionExpression": "#v = :before", "ExpressionAttributeNames": {"#v": "value"},
                 "ExpressionAttributeValues": {":before": str(before)}})
            self._table.put_item(Item={"pk": f"PUBLISHED#{fleet}", "sk": f"{day}#{family}", "value": str(value),
                                       "updated_at": updated_at}, **condition)

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
