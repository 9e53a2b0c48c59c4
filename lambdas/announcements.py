"""What the fleet has already announced: the one adapter that makes an announcement happen once.

Two uses, one DynamoDB table (partition key ``kind``, sort key ``subject``, TTL attribute ``expires``):

- **once**: a warning that must go out exactly once however often it is computed (a Capacity Block's
  24-hour warning, AWS's own expiration event delivered twice, a retried or overlapping run). The claim is a
  conditional put; a claim whose announcement fails to publish is released, so the retry announces it.
- **conditions**: a state that lasts (an idle instance, a blocked queue, an Auto Scaling group that cannot
  launch). It is announced when it starts and when it ends, never in between.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

ONCE = "once"


@dataclass(frozen=True)
class Changes:
    """Conditions that started and ended since the last look."""

    started: dict[str, str]
    """subject -> what to say about it"""
    ended: list[str]


def changes(current: Mapping[str, str], already_open: Iterable[str]) -> Changes:
    """Pure: compare the conditions holding now with the ones announced as open."""
    known = set(already_open)
    return Changes(started={s: d for s, d in sorted(current.items()) if s not in known},
                   ended=sorted(known - set(current)))


class Ledger:
    def __init__(self, client: Any, table: str) -> None:
        self._client = client
        self._table = table

    def claim(self, key: str, *, expires: datetime, kind: str = ONCE) -> bool:
        """True the first time ``key`` is claimed (until it expires), False ever after."""
        try:
            self._client.put_item(TableName=self._table, Item=self._item(kind, key, expires),
                                  ConditionExpression="attribute_not_exists(kind)")
        except self._client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def release(self, key: str, *, kind: str = ONCE) -> bool:
        """Forget ``key``; True if it was there."""
        old = self._client.delete_item(TableName=self._table, Key={"kind": {"S": kind}, "subject": {"S": key}},
                                       ReturnValues="ALL_OLD")
        return bool(old.get("Attributes"))

    def open_subjects(self, kind: str) -> list[str]:
        """The subjects of ``kind`` announced as started and not yet as ended."""
        subjects: list[str] = []
        for page in self._client.get_paginator("query").paginate(
                TableName=self._table, KeyConditionExpression="kind = :k",
                ExpressionAttributeValues={":k": {"S": kind}}, ProjectionExpression="subject"):
            subjects.extend(item["subject"]["S"] for item in page.get("Items", []))
        return subjects

    def once(self, key: str, *, expires: datetime, announce: Callable[[], None]) -> bool:
        """Run ``announce`` if ``key`` was never claimed; a failed announcement releases the claim (and raises),
        so a retry announces it. True if it announced."""
        return self.start(ONCE, key, expires=expires, announce=announce)

    def start(self, kind: str, subject: str, *, expires: datetime, announce: Callable[[], None]) -> bool:
        """Announce that condition ``subject`` of ``kind`` started, unless it is already open. True if announced."""
        return bool(self.start_all(kind, [subject], expires=expires, announce=lambda _: announce()))

    def end(self, kind: str, subject: str, *, expires: datetime, announce: Callable[[], None]) -> bool:
        """Announce that an open condition ended; of two overlapping runs only one does. True if announced."""
        return bool(self.end_all(kind, [subject], expires=expires, announce=lambda _: announce()))

    def start_all(self, kind: str, subjects: Iterable[str], *, expires: datetime,
                  announce: Callable[[list[str]], None]) -> list[str]:
        """Open the conditions not open yet and announce those (in one message); the ones this call opened."""
        claimed = [s for s in subjects if self.claim(s, expires=expires, kind=kind)]
        if claimed:
            try:
                announce(claimed)
            except Exception:
                for s in claimed:
                    self.release(s, kind=kind)
                raise
        return claimed

    def end_all(self, kind: str, subjects: Iterable[str], *, expires: datetime,
                announce: Callable[[list[str]], None]) -> list[str]:
        """Close the open ones among ``subjects`` and announce those; the ones this call closed."""
        released = [s for s in subjects if self.release(s, kind=kind)]
        if released:
            try:
                announce(released)
            except Exception:
                for s in released:
                    self.claim(s, expires=expires, kind=kind)
                raise
        return released

    @staticmethod
    def _item(kind: str, subject: str, expires: datetime) -> dict[str, Any]:
        return {"kind": {"S": kind}, "subject": {"S": subject}, "expires": {"N": str(int(expires.timestamp()))}}
