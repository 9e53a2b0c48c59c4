"""Organisation scale: spend from the CUR 2.0 Data Export, queried with Athena, as the same ledger rows.

The queries (also the workgroup's named queries) read the CUR 2.0 table (``COST_AND_USAGE_REPORT`` columns,
https://docs.aws.amazon.com/cur/latest/userguide/table-dictionary-cur2.html, read 2026-11-22): the tags are one
map column (``resource_tags``), keyed by the cost allocation tag's column-safe name. :class:`AthenaSpend` runs them
and answers with pages shaped like Cost Explorer's (``ResultsByTime``/``Groups``/``Keys``/``Metrics``), so the
collector writes the same rows from either source.

Capacity Block fees (usage type ``<region>-CapacityBlockFee:<type>``, line item type ``Fee`` assumed, as CE's
``Upfront``) are read on ``line_item_unblended_cost`` for both bases, with the ``Refund`` lines of the same usage type
netted in (and left out of the adjustments query): see rows.py. CUR's line item types (Credit, DiscountedUsage, Fee,
Refund, RIFee, Tax, Usage, and the SavingsPlan* types) are those of AWS's CUR user guide, "Line Item Details"
(lineItem/LineItemType: "Fee - Any upfront annual fee that you paid for subscriptions", "Refund - Negative charges
for which AWS refunded money to you"), read 2026-11-23; which type AWS gives a Capacity Block fee is not documented.

Cost bases from CUR line items: unblended = ``line_item_unblended_cost``; net amortized = Savings Plan covered usage
at ``savings_plan_savings_plan_effective_cost``, reservation usage at ``reservation_effective_cost``, Savings Plan
negation and upfront/recurring plan fees at 0 on the usage side, everything else at
``line_item_net_unblended_cost`` when the export has it (discounts netted), else unblended. That is the usual
amortisation of AWS's Cloud Intelligence Dashboards' CUR queries; it is not Cost Explorer's figure to the cent
(EDP/private-rate discounts appear only where the ``net_`` columns are present).

SQL dialect: Athena engine v3 (Trino). The tests run the same text in DuckDB after :func:`to_duckdb`, which
rewrites the two constructs that differ: Trino's ``element_at(map, key)`` (NULL for a missing key, where
``map[key]`` fails) is DuckDB's ``map[key]`` (NULL for a missing key since DuckDB 1.1), and Trino's
``regexp_like(s, pattern)`` is DuckDB's ``regexp_matches(s, pattern)`` (both match anywhere unless anchored; both
take RE2-style patterns). Everything else used here
(``split_part``, ``CAST(... AS DATE)``, ``DATE '...'`` literals, ``CASE``, ``COALESCE``, ``LIKE``, ``GROUP BY``
ordinals) means the same in both.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import date
from typing import Any

from neuronfleet_contract.cur import FLEET_TAG_COLUMN, QUERIES, render
from neuronfleet_contract.tags import FLEET_TAG

from ..logic.paging import PageGuard
from ..logic.rows import ADJUSTMENT_RECORD_TYPES

__all__ = ["FLEET_TAG_COLUMN", "QUERIES", "render"]
"""Also here: the queries the CurAnalytics construct saves (their home is neuronfleet_contract.cur)."""

MAX_RESULT_PAGES = 1000
"""GetQueryResults pages of one query at most (1,000 rows a page: botocore 1.44.5 athena model, MaxResults max
1000): a million rows of day x usage type x fleet, far above what the grouped queries return; a longer answer
or a repeated NextToken stops the run loudly."""

def to_duckdb(sql: str) -> str:
    """The Athena (Trino) text as DuckDB runs it (see the module docstring for the two rewrites)."""
    return re.sub(r"element_at\((\w+), ('[^']*')\)", r"\1[\2]", sql).replace("regexp_like(", "regexp_matches(")


def pages_of(records: Sequence[dict[str, Any]], *, adjustments: bool = False) -> list[dict[str, Any]]:
    """Query result records as one Cost Explorer-shaped page (so the collector parses them the same way)."""
    by_day: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        day = str(r.get("day"))[:10]
        first = r.get("record_type" if adjustments else "usage_type")  # a NULL or missing column: a bad row
        by_day.setdefault(day, []).append({"Keys": [first, f"{FLEET_TAG}${r.get('fleet') or ''}"], "Metrics": {
            "NetAmortizedCost": {"Amount": str(r.get("net_amortized_cost")), "Unit": "USD"},
            "UnblendedCost": {"Amount": str(r.get("unblended_cost")), "Unit": "USD"},
            "UsageQuantity": {"Amount": str(r.get("usage_quantity") or 0), "Unit": "N/A"}}})
    return [{"ResultsByTime": [{"TimePeriod": {"Start": d}, "Groups": g, "Estimated": False}
                               for d, g in sorted(by_day.items())]}]


assert set(ADJUSTMENT_RECORD_TYPES) == {"Credit", "Refund", "Tax"}  # the adjustments query's record types


class AthenaSpend:
    """Athena adapter with the CostExplorer adapter's interface: StartQueryExecution in the workgroup (its
    result location, encryption and bytes-scanned cutoff apply), GetQueryExecution until done, GetQueryResults
    pages. ``requests`` counts queries (Athena bills by bytes scanned, not by request)."""

    def __init__(self, client: Any, *, workgroup: str, table: str, fleet_tag_key: str = FLEET_TAG_COLUMN,
                 sleep: Callable[[float], None] = time.sleep, poll_seconds: float = 2.0,
                 timeout_seconds: float = 480) -> None:
        self._client, self._workgroup, self._table, self._key = client, workgroup, table, fleet_tag_key
        self._sleep, self._poll, self._timeout = sleep, poll_seconds, timeout_seconds
        self.requests = 0
        self.throttled = 0
        self.pages_read = 0
        """GetQueryResults pages read."""

    def pages(self, start: date, end: date, instance_types: Sequence[str] = ()) -> Iterator[dict[str, Any]]:
        yield from pages_of(self._run(render("spend_by_fleet_usage_type_day", table=self._table, start=start,
                                             end=end, fleet_tag_key=self._key)))

    def adjustment_pages(self, start: date, end: date) -> Iterator[dict[str, Any]]:
        yield from pages_of(self._run(render("adjustments_by_fleet_day", table=self._table, start=start, end=end,
                                             fleet_tag_key=self._key)), adjustments=True)

    def _run(self, sql: str) -> list[dict[str, Any]]:
        self.requests += 1
        qid = self._client.start_query_execution(QueryString=sql, WorkGroup=self._workgroup)["QueryExecutionId"]
        waited = 0.0
        while True:
            status = self._client.get_query_execution(QueryExecutionId=qid)["QueryExecution"]["Status"]
            if status["State"] == "SUCCEEDED":
                break
            if status["State"] in ("FAILED", "CANCELLED"):
                raise RuntimeError(f"Athena query {qid} {status['State']}: {status.get('StateChangeReason', '')}")
            if waited >= self._timeout:
                raise TimeoutError(f"Athena query {qid} still {status['State']} after {waited:.0f} s")
            self._sleep(self._poll)
            waited += self._poll
        records: list[dict[str, Any]] = []
        header: list[str] | None = None
        kwargs: dict[str, Any] = {"QueryExecutionId": qid}
        guard = PageGuard(f"Athena GetQueryResults of {qid}", cap=MAX_RESULT_PAGES)
        while True:
            page = self._client.get_query_results(**kwargs)
            guard.page()
            self.pages_read += 1
            for row in page["ResultSet"]["Rows"]:
                values = [d.get("VarCharValue") for d in row["Data"]]
                if header is None:
                    header = [str(v) for v in values]
                    continue
                records.append(dict(zip(header, values, strict=False)))
            if not page.get("NextToken"):
                return records
            kwargs["NextToken"] = guard.follow(page["NextToken"])
