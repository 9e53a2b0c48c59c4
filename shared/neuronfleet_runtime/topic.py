"""The fleet's SNS topic: the one adapter every handler announces through."""

from __future__ import annotations

from typing import Any

SUBJECT_LIMIT = 100
"""SNS rejects a Subject longer than 100 characters."""


class Topic:
    def __init__(self, client: Any, arn: str) -> None:
        self._client = client
        self._arn = arn

    def announce(self, subject: str, message: str) -> None:
        self._client.publish(TopicArn=self._arn, Subject=subject[:SUBJECT_LIMIT], Message=message)
