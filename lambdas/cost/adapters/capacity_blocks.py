"""EC2 adapter of the cost functions for Capacity Blocks: the account's blocks and their reservations, each tagged
with the fleet it belongs to (what a block is and how its fee is spread: :mod:`cost.logic.capacity_blocks`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from neuronfleet_runtime import reservations

from neuronfleet_contract.tags import FLEET_TAG

from ..logic.block_fees import Bought, bought_blocks
from ..logic.capacity_blocks import Block, utc
from ..logic.paging import PageGuard

MAX_PAGES = 100
"""DescribeCapacityBlocks pages at most (up to 1,000 blocks a page: botocore 1.44.5 ec2 model, MaxResults max 1000):
100,000 blocks, far above any account's; a repeated NextToken stops the run loudly."""


def _tags(items: Iterable[Mapping[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items or () if "Key" in t}


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
            types = {r.get("InstanceType", "") for r in rs} - {""}
            out.append(Block(block_id=b["CapacityBlockId"], instance_type=min(types) if types else "",
                             instance_count=sum(int(r.get("TotalInstanceCount", 0)) for r in rs),
                             start=utc(b["StartDate"]), end=utc(b["EndDate"]),
                             created=utc(b.get("CreateDate") or b["StartDate"]), state=str(b.get("State", "")),
                             tags=tags))
        return out
