"""EC2 adapter of the cost functions for Capacity Blocks: the account's blocks and their reservations, each tagged
with the fleet it belongs to (what a block is and how its fee is spread: :mod:`cost.logic.block_amortisation`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from botocore.exceptions import ClientError, ConnectionError, HTTPClientError
from neuronfleet_runtime import reservations
from neuronfleet_runtime.capacity_block_calls import CapacityBlocksApi

from neuronfleet_contract.tags import FLEET_TAG

from ..logic.block_amortisation import Block, utc
from ..logic.block_fees import Bought, bought_blocks, bought_extensions
from ..logic.paging import PageGuard
from ..logic.rows import UNTAGGED

MAX_PAGES = 100
"""DescribeCapacityBlocks pages at most (up to 1,000 blocks a page: botocore 1.44.5 ec2 model, MaxResults max 1000):
100,000 blocks, far above any account's; a repeated NextToken stops the run loudly."""


HISTORY_IDS = 100
"""Reservations per DescribeCapacityBlockExtensionHistory request (botocore 1.44.5 gives CapacityReservationIds no
maximum; 100, as for DescribeCapacityReservations here, keeps a request small)."""
UNREADABLE = (ClientError, HTTPClientError, ConnectionError, RuntimeError)
"""What makes the extension history unknown for a run (after botocore's own retries): an AWS error (throttling,
UnauthorizedOperation, a 5xx), no connection or a timeout, or the pager's stop (a repeated token, too many pages).
Never a stubbed test's assertion, nor a request the model refuses: those are defects, raised."""


def _tags(items: Iterable[Mapping[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items or () if "Key" in t}


@dataclass
class Extensions:
    """What the extension history says a run's blocks' extensions cost. ``unknown``: why it could not be read this
    run (empty when read): the run reports extension fees as unknown, never as $0."""

    bought: list[Bought] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    unknown: str = ""
    reservations: int = 0


class CapacityBlocks:
    """EC2 adapter: DescribeCapacityBlocks (paginated by NextToken) + DescribeCapacityReservations.

    Given the fleet's own reservations (``reservation_ids``, and the members of ``group_arns``: the
    capacity-reservation resource groups its clusters target, read with Resource Groups ``groups``), a block holding
    one of them belongs to ``fleet`` unless a tag on the block or its reservations says otherwise: UltraServer
    blocks are bought through such groups and need no tag of their own."""

    def __init__(self, client: Any, *, fleet: str | None = None, reservation_ids: Sequence[str] = (),
                 group_arns: Sequence[str] = (), groups: Any = None) -> None:
        self._client = client
        self._fleet, self._ids, self._group_arns, self._groups = fleet, tuple(reservation_ids), tuple(group_arns), groups
        self._held: list[dict[str, Any]] = []
        self._fleets: dict[str, str] = {}
        self._ends: dict[str, datetime] = {}

    def fleet_reservations(self) -> set[str]:
        """The reservations the fleet file names, directly or through its resource groups."""
        if self._group_arns and self._groups is None:
            raise ValueError("group_arns given without a Resource Groups client")
        return set(self._ids) | (reservations.group_members(self._groups, self._group_arns) if self._group_arns
                                 else set())

    def bought(self) -> tuple[list[Bought], list[str]]:
        """The blocks the kit bought among those :meth:`describe` read (their purchase tags: logic/block_fees.py),
        and problems with those tags."""
        return bought_blocks(r for r in self._held if r.get("StartDate"))

    def extensions(self, since: date | None = None) -> Extensions:
        """The extensions of the blocks :meth:`describe` read (the fleet's when given one; those ending on or after
        ``since``), from DescribeCapacityBlockExtensionHistory through the lifecycle's own reader
        (neuronfleet_runtime.capacity_block_calls, its pager), each with its block's fleet. A failure to read it
        (:data:`UNREADABLE`) is returned as ``unknown``, so the run still writes Cost Explorer's rows."""
        ids = sorted(r for r, f in self._fleets.items() if (not self._fleet or f == self._fleet)
                     and (since is None or self._ends[r].date() >= since))
        if not ids:
            return Extensions()
        api = CapacityBlocksApi(self._client)
        items: list[Mapping[str, Any]] = []
        try:
            for i in range(0, len(ids), HISTORY_IDS):
                items += api.extension_history(*ids[i:i + HISTORY_IDS])
        except UNREADABLE as exc:
            code = exc.response.get("Error", {}).get("Code", "") if isinstance(exc, ClientError) else ""
            return Extensions(unknown=f"DescribeCapacityBlockExtensionHistory of {len(ids)} reservation(s) failed: "
                                      f"{code or type(exc).__name__}: {exc}", reservations=len(ids))
        bought, problems = bought_extensions(items, self._fleets)
        return Extensions(bought=bought, problems=problems, reservations=len(ids))

    def describe(self) -> list[Block]:
        raw: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {}
        guard = PageGuard("EC2 DescribeCapacityBlocks", cap=MAX_PAGES)
        while True:
            page = self._client.describe_capacity_blocks(**kwargs)
            guard.page()
            raw += page.get("CapacityBlocks", [])
            if not page.get("NextToken"):
                break
            kwargs["NextToken"] = guard.follow(page["NextToken"])
        ids = sorted({r for b in raw for r in b.get("CapacityReservationIds", [])})
        held: dict[str, dict[str, Any]] = {}
        for i in range(0, len(ids), 100):
            page = self._client.describe_capacity_reservations(CapacityReservationIds=ids[i:i + 100])
            held |= {r["CapacityReservationId"]: r for r in page.get("CapacityReservations", [])}
        starts = {r: b.get("StartDate") for b in raw for r in b.get("CapacityReservationIds", [])}
        self._held = [{"StartDate": starts.get(k), **v} for k, v in held.items()]
        mine = self.fleet_reservations() if self._fleet else set()
        out = []
        for b in raw:
            rs = [held[r] for r in b.get("CapacityReservationIds", []) if r in held]
            tags = {k: v for r in rs for k, v in _tags(r.get("Tags")).items()} | _tags(b.get("Tags"))
            if self._fleet and FLEET_TAG not in tags and mine & set(b.get("CapacityReservationIds", [])):
                tags[FLEET_TAG] = self._fleet
            for r in b.get("CapacityReservationIds", []):
                self._fleets[r] = tags.get(FLEET_TAG) or UNTAGGED
                self._ends[r] = utc(b["EndDate"])
            types = {r.get("InstanceType", "") for r in rs} - {""}
            out.append(Block(block_id=b["CapacityBlockId"], instance_type=min(types) if types else "",
                             instance_count=sum(int(r.get("TotalInstanceCount", 0)) for r in rs),
                             start=utc(b["StartDate"]), end=utc(b["EndDate"]),
                             created=utc(b.get("CreateDate") or b["StartDate"]), state=str(b.get("State", "")),
                             tags=tags))
        return out
