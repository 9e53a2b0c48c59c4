"""A warning when a resource the cost monitors must see carries no fleet tag (``tag_fleet`` was not applied)."""

from __future__ import annotations

from functools import cache

import jsii
from aws_cdk import Annotations, AspectPriority, Aspects, IAspect, TagManager
from constructs import Construct, IConstruct

from .tagging import FLEET_TAG

NO_FLEET_TAG = "neuronfleet:no-fleet-tag"
"""The warning's id (``Validations``/``cdk synth`` prints it; acknowledge it where a resource is left out on purpose)."""


@jsii.implements(IAspect)
class _FleetTagCheck:
    """Runs after the tag aspects (``AspectPriority.READONLY`` comes after ``MUTATING``, where ``Tags.of`` works), so
    it sees the tags the resource will be deployed with."""

    def __init__(self, owner: Construct, resource: IConstruct, what: str, found_by: str) -> None:
        self.owner, self.resource, self.what, self.found_by = owner, resource, what, found_by

    def visit(self, node: IConstruct) -> None:
        if node is not self.resource:  # jsii hands back the very object Python created: no round trip
            return
        tags = TagManager.of(node)  # an L1's or an L2's (LaunchTemplate keeps its own)
        if tags is not None and FLEET_TAG not in (tags.tag_values() or {}):
            Annotations.of(self.owner).add_warning_v2(NO_FLEET_TAG, (
                f"{self.what} carries no {FLEET_TAG} tag: the cost monitors find {self.found_by} by that tag, so they "
                f"never see it. Call neuronfleet.tag_fleet(stack, fleet=..., phase=...) on its stack (or scope)."))


def warn_without_fleet_tag(owner: Construct, resource: IConstruct, *, what: str, found_by: str) -> None:
    """Warn at synth (``Annotations`` warning ``neuronfleet:no-fleet-tag`` on ``owner``) when ``resource`` ends up
    without the fleet tag."""
    Aspects.of(resource).add(_FleetTagCheck(owner, resource, what, found_by), priority=_readonly())


@cache
def _readonly() -> float:
    return AspectPriority.READONLY
