"""Cost Explorer adapter: GetCostAndUsage with pagination and backoff, counting every (billed) request.

Two queries per run for the whole account, never one per fleet (each page is billed $0.01, endpoint us-east-1
only, two group-bys at most: botocore 1.44.5 ce model, GetCostAndUsage GroupBy):

- usage: grouped by USAGE_TYPE and the fleet tag, record types of usage (and Upfront for Capacity Block fees, with
  the Refunds of "EC2 - Other", so a cancelled block's refund nets its fee in the same group), NetAmortizedCost,
  UnblendedCost and UsageQuantity in the same request;
- adjustments: grouped by RECORD_TYPE and the fleet tag, record types Credit, Refund and Tax, kept apart; refunds of
  "EC2 - Other" are left to the usage query (counted once; those that are not accelerator time, EBS or NAT, are
  not the kit's spend and are ignored there).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import date
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from neuronfleet_contract.tags import FLEET_TAG

from ..logic.paging import PageGuard
from ..logic.rows import ADJUSTMENT_RECORD_TYPES, FEE_SERVICE, SERVICES, USAGE_RECORD_TYPES

REGION = "us-east-1"
"""Cost Explorer's only endpoint."""
USD_PER_REQUEST = Decimal("0.01")
"""Each Cost Explorer API request, each page of a paginated answer included, is billed $0.01 (AWS Cost Explorer
pricing, https://aws.amazon.com/aws-cost-management/aws-cost-explorer/pricing/, read 2026-11-22)."""
MAX_PAGES = 500
"""The most pages one query may take ($5.00 at $0.01 a page). Why a cap: a query whose tokens never end (a repeated
token is caught apart) would run to the Lambda's 10-minute timeout, 600 to 2,000 billed requests at 0.3 to 1 s each.
Why 500: Cost Explorer documents no page size ("more results than the maximum page size"); the collector benchmark's
100,000 groups (an organisation of hundreds of fleets over 30 days) take 100 pages of 1,000, so 500 leaves five times
that. A longer answer stops loudly naming the cap; ``max_pages`` raises it."""
THROTTLED = {"ThrottlingException", "LimitExceededException", "TooManyRequestsException", "RequestLimitExceeded"}
METRICS = ["NetAmortizedCost", "UnblendedCost", "UsageQuantity"]


def usage_query(start: date, end: date, instance_types: Sequence[str]) -> dict[str, Any]:
    return {
        "TimePeriod": {"Start": start.isoformat(), "End": end.isoformat()},
        "Granularity": "DAILY",
        "Metrics": METRICS,
        "GroupBy": [{"Type": "DIMENSION", "Key": "USAGE_TYPE"}, {"Type": "TAG", "Key": FLEET_TAG}],
        "Filter": {"And": [
            {"Dimensions": {"Key": "SERVICE", "Values": sorted(SERVICES)}},
            {"Or": [
                {"And": [{"Dimensions": {"Key": "RECORD_TYPE", "Values": list(USAGE_RECORD_TYPES)}},
                         {"Dimensions": {"Key": "INSTANCE_TYPE", "Values": sorted(instance_types)}}]},
                # Capacity Block fee rows are asked for by record type: whether Cost Explorer gives them an
                # INSTANCE_TYPE is not documented; other Upfront rows are ignored by usage type when parsed.
                {"Dimensions": {"Key": "RECORD_TYPE", "Values": ["Upfront"]}},
                {"And": [{"Dimensions": {"Key": "RECORD_TYPE", "Values": ["Refund"]}},
                         {"Dimensions": {"Key": "SERVICE", "Values": [FEE_SERVICE]}}]},
            ]},
        ]},
    }


def adjustments_query(start: date, end: date) -> dict[str, Any]:
    return {
        "TimePeriod": {"Start": start.isoformat(), "End": end.isoformat()},
        "Granularity": "DAILY",
        "Metrics": METRICS,
        "GroupBy": [{"Type": "DIMENSION", "Key": "RECORD_TYPE"}, {"Type": "TAG", "Key": FLEET_TAG}],
        "Filter": {"Or": [
            {"Dimensions": {"Key": "RECORD_TYPE", "Values": [t for t in ADJUSTMENT_RECORD_TYPES if t != "Refund"]}},
            {"And": [{"Dimensions": {"Key": "RECORD_TYPE", "Values": ["Refund"]}},
                     {"Not": {"Dimensions": {"Key": "SERVICE", "Values": [FEE_SERVICE]}}}]},
        ]},
    }


class CostExplorer:
    """GetCostAndUsage with pagination and backoff; counts every request made (each is billed)."""

    def __init__(self, client: Any, *, sleep: Callable[[float], None] = time.sleep, max_attempts: int = 6,
                 base_delay: float = 1.0, max_pages: int = MAX_PAGES) -> None:
        self._client = client
        self._sleep = sleep
        self._max_attempts = max_attempts
        self._base_delay = base_delay
        self._max_pages = max_pages
        self.requests = 0
        """Every request made (each billed), retries of throttled ones included."""
        self.pages_read = 0
        """Pages read, over both queries."""
        self.throttled = 0


    def pages(self, start: date, end: date, instance_types: Sequence[str]) -> Iterator[dict[str, Any]]:
        """The usage query's pages."""
        return self.query(usage_query(start, end, instance_types))

    def adjustment_pages(self, start: date, end: date) -> Iterator[dict[str, Any]]:
        """The adjustments query's pages (credits, refunds, taxes)."""
        return self.query(adjustments_query(start, end))

    def query(self, query: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every page of ``query``; a repeated NextPageToken or more pages than ``max_pages`` stop it with a
        :class:`~.paging.PagingError` naming the token (nothing of the run is written: the collector reads every page
        before it writes)."""
        guard = PageGuard("Cost Explorer GetCostAndUsage", cap=self._max_pages, usd_per_page=USD_PER_REQUEST)
        while True:
            page = self._call(query)
            guard.page()
            self.pages_read += 1
            yield page
            token = page.get("NextPageToken") if isinstance(page, dict) else None
            if token is None or token == "":
                return
            query = {**query, "NextPageToken": guard.follow(token)}

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
