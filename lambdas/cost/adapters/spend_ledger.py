"""The cost ledger's DynamoDB adapter: rows of spend, totals published to CloudWatch, the run lock (the rules of
each in :mod:`..logic.ledger`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from ..logic.ledger import QUERIED_PK, TRANSACTION_ITEMS, Busy, Published, item, queried_item, row_of
from ..logic.rows import CostRow


class SpendLedger:
    """The cost ledger's adapter over its DynamoDB table (boto3 resource Table); what it holds and why:
    :mod:`cost.logic.ledger`."""

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

    def mark_queried(self, days: Iterable[str], updated_at: str) -> None:
        """Record the days Cost Explorer answered (ledger.answered_days): one item a day, rewritten when asked again."""
        with self._table.batch_writer() as batch:
            for day in sorted(set(days)):
                batch.put_item(Item=queried_item(day, updated_at))

    def queried(self, days: Sequence[str]) -> set[str]:
        """Which of ``days`` Cost Explorer answered when the collector asked (marked by :meth:`mark_queried`)."""
        from boto3.dynamodb.conditions import Key

        if not days:
            return set()
        wanted = set(days)
        found = self._query(KeyConditionExpression=Key("pk").eq(QUERIED_PK) & Key("sk").between(min(days), max(days)))
        return {str(i["sk"]) for i in found} & wanted

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

