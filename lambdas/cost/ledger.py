"""The DynamoDB ledger: idempotent writes (a rerun changes nothing; a late correction replaces the row)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .rows import CostRow


@dataclass
class Plan:
    new: list[CostRow] = field(default_factory=list)
    replaced: list[CostRow] = field(default_factory=list)
    unchanged: int = 0

    @property
    def writes(self) -> list[CostRow]:
        return self.new + self.replaced


def plan(rows: Iterable[CostRow], existing: Mapping[tuple[str, str], Mapping[str, Any]]) -> Plan:
    """Which rows to write given what the ledger holds (keyed by (pk, sk))."""
    out = Plan()
    latest: dict[tuple[str, str], CostRow] = {}
    for row in rows:  # the same key twice in one run: the later page wins
        latest[row.key] = row
    for key, row in latest.items():
        held = existing.get(key)
        if held is None:
            out.new.append(row)
        elif Decimal(str(held["amount"])) != row.amount or Decimal(str(held.get("usage_hours", "0"))) != row.usage_hours:
            out.replaced.append(row)
        else:
            out.unchanged += 1
    return out


def item(row: CostRow, updated_at: str) -> dict[str, Any]:
    pk, sk = row.key
    return {"pk": pk, "sk": sk, "day": row.day, "fleet": row.fleet, "service": row.service,
            "instance_type": row.instance_type, "family": row.family, "amount": str(row.amount),
            "usage_hours": str(row.usage_hours), "currency": "USD", "source": "cost-explorer",
            "updated_at": updated_at}


class Ledger:
    """Adapter over the table (boto3 resource Table)."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def existing(self, days: Sequence[str]) -> dict[tuple[str, str], dict[str, Any]]:
        from boto3.dynamodb.conditions import Key

        found: dict[tuple[str, str], dict[str, Any]] = {}
        for day in days:
            kwargs: dict[str, Any] = {"KeyConditionExpression": Key("pk").eq(f"DAY#{day}")}
            while True:
                page = self._table.query(**kwargs)
                for it in page.get("Items", []):
                    found[(it["pk"], it["sk"])] = it
                if "LastEvaluatedKey" not in page:
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return found

    def write(self, rows: Sequence[CostRow], updated_at: str) -> None:
        with self._table.batch_writer() as batch:
            for row in rows:
                batch.put_item(Item=item(row, updated_at))

    def rows(self, days: Sequence[str]) -> list[CostRow]:
        return [CostRow(day=i["day"], fleet=i["fleet"], service=i["service"], instance_type=i["instance_type"],
                        family=i["family"], amount=Decimal(str(i["amount"])),
                        usage_hours=Decimal(str(i.get("usage_hours", "0"))))
                for i in self.existing(days).values()]
