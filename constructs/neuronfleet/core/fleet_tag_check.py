"""A warning when a resource the cost monitors must see carries no fleet tag (``tag_fleet`` was not applied)."""

from __future__ import annotations

from weakref import WeakKeyDictionary

import jsii
from aws_cdk import Annotations, Stack, TagManager
from constructs import Construct, IConstruct, IValidation

from .lookups import stack_of
from .tagging import FLEET_TAG

NO_FLEET_TAG = "neuronfleet:no-fleet-tag"
"""The warning's id (``Validations``/``cdk synth`` prints it; acknowledge it where a resource is left out on purpose)."""


@jsii.implements(IValidation)
class _FleetTagChecks:
    """Every fleet-tag check of one stack, as one validation of the stack: CDK runs validations after prepare, when
    every aspect (``Tags.of`` among them) has run, so each resource shows the tags it will be deployed with. One
    call from Node.js per stack (an aspect per resource was called back for the resource and each of its children)."""

    def __init__(self) -> None:
        self.checks: list[tuple[Construct, IConstruct, str, str]] = []

    def validate(self) -> list[str]:
        for owner, resource, what, found_by in self.checks:
            tags = TagManager.of(resource)  # an L1's or an L2's (LaunchTemplate keeps its own)
            if tags is not None and FLEET_TAG not in (tags.tag_values() or {}):
                Annotations.of(owner).add_warning_v2(NO_FLEET_TAG, (
                    f"{what} carries no {FLEET_TAG} tag: the cost monitors find {found_by} by that tag, so they "
                    f"never see it. Call neuronfleet.tag_fleet(stack, fleet=..., phase=...) on its stack (or scope)."))
        return []  # a warning, not an error


_CHECKS: WeakKeyDictionary[Stack, _FleetTagChecks] = WeakKeyDictionary()


def warn_without_fleet_tag(owner: Construct, resource: IConstruct, *, what: str, found_by: str) -> None:
    """Warn at synth (``Annotations`` warning ``neuronfleet:no-fleet-tag`` on ``owner``) when ``resource`` ends up
    without the fleet tag."""
    stack = stack_of(owner)
    checks = _CHECKS.get(stack)
    if checks is None:
        checks = _CHECKS[stack] = _FleetTagChecks()
        stack.node.add_validation(checks)
    checks.checks.append((owner, resource, what, found_by))
