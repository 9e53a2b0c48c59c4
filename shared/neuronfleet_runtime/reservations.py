"""The capacity reservations a fleet buys through capacity-reservation resource groups (Capacity Blocks of
UltraServers come that way): the one adapter that lists a group's members."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def group_members(client: Any, group_arns: Iterable[str]) -> set[str]:
    """The capacity reservation ids in the resource groups (Resource Groups ListGroupResources, paginated).

    Both lists of the response are read: ``Resources`` (each item's ``Identifier.ResourceArn``) and the deprecated
    ``ResourceIdentifiers`` (``ResourceArn``), which is all the AWS CLI's own example of the operation shows
    (aws/aws-cli awscli/examples/resource-groups/list-group-resources.rst at 07c4fe36, read 2026-11-23; both are
    members of botocore 1.44.5's ListGroupResourcesOutput)."""
    ids: set[str] = set()
    for arn in group_arns:
        for page in client.get_paginator("list_group_resources").paginate(Group=arn):
            arns = [(item.get("Identifier") or {}).get("ResourceArn", "") for item in page.get("Resources") or []]
            arns += [item.get("ResourceArn", "") for item in page.get("ResourceIdentifiers") or []]
            ids |= {a.rsplit("/", 1)[-1].strip() for a in arns if ":capacity-reservation/" in a}
    return ids
