"""The capacity reservations a fleet buys through capacity-reservation resource groups (Capacity Blocks of
UltraServers come that way): the one adapter that lists a group's members."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def group_members(client: Any, group_arns: Iterable[str]) -> set[str]:
    """The capacity reservation ids in the resource groups (Resource Groups ListGroupResources, paginated)."""
    ids: set[str] = set()
    for arn in group_arns:
        for page in client.get_paginator("list_group_resources").paginate(Group=arn):
            for item in page.get("Resources", []):
                resource_arn = item.get("Identifier", {}).get("ResourceArn", "")
                if ":capacity-reservation/" in resource_arn:
                    ids.add(resource_arn.rsplit("/", 1)[-1])
    return ids
