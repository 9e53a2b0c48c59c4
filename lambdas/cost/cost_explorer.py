"""Cost Explorer adapter: GetCostAndUsage with pagination and backoff, counting every (billed) request."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import date
from typing import Any

from botocore.exceptions import ClientError

from .rows import FLEET_TAG, SERVICES

REGION = "us-east-1"
"""Cost Explorer's only endpoint."""
THROTTLED = {"ThrottlingException", "LimitExceededException", "TooManyRequestsException", "RequestLimitExceeded"}


class CostExplorer:
    """GetCostAndUsage with pagination and backoff; counts every request made (each is billed)."""

    def __init__(self, client: Any, *, sleep: Callable[[float], None] = time.sleep, max_attempts: int = 6,
                 base_delay: float = 1.0) -> None:
        self._client = client
        self._sleep = sleep
        self._max_attempts = max_attempts
        self._base_delay = base_delay
        self.requests = 0
        self.throttled = 0

    def pages(self, start: date, end: date, instance_types: Sequence[str]) -> Iterator[dict[str, Any]]:
        query: dict[str, Any] = {
            "TimePeriod": {"Start": start.isoformat(), "End": end.isoformat()},
            "Granularity": "DAILY",
            "Metrics": ["UnblendedCost", "UsageQuantity"],
            "GroupBy": [{"Type": "DIMENSION", "Key": "INSTANCE_TYPE"}, {"Type": "TAG", "Key": FLEET_TAG}],
            "Filter": {"And": [
                {"Dimensions": {"Key": "SERVICE", "Values": sorted(SERVICES)}},
                {"Dimensions": {"Key": "INSTANCE_TYPE", "Values": sorted(instance_types)}},
            ]},
        }
        while True:
            page = self._call(query)
            yield page
            token = page.get("NextPageToken")
            if not token:
                return
            query = {**query, "NextPageToken": token}

    def _call(self, query: dict[str, Any]) -> dict[str, Any]:
        for attempt in range(self._max_attempts):
            self.requests += 1
            try:
                return self._client.get_cost_and_usage(**query)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in THROTTLED or attempt == self._max_attempts - 1:
                    raise
                self.throttled += 1
                self._sleep(self._base_delay * 2**attempt * (1 + random.random() / 2))
        raise AssertionError("unreachable")
