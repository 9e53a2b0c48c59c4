"""Cost-allocation tags. The cost monitors group spend by these keys (activate them in Billing)."""

from __future__ import annotations

from aws_cdk import Tags
from constructs import IConstruct

from neuronfleet_contract.tags import CAPACITY_TAG, FAMILY_TAG, FLEET_TAG, PHASE_TAG

__all__ = ["CAPACITY_TAG", "FAMILY_TAG", "FLEET_TAG", "PHASE_TAG", "tag_capacity", "tag_family", "tag_fleet"]


def tag_fleet(scope: IConstruct, *, fleet: str, phase: str, extra: dict[str, str] | None = None) -> None:
    """Tag everything below ``scope`` with the fleet name and migration phase (and any extra tags)."""
    tags = Tags.of(scope)
    tags.add(FLEET_TAG, fleet)
    tags.add(PHASE_TAG, phase)
    for key, value in (extra or {}).items():
        tags.add(key, value)


def tag_family(scope: IConstruct, family: str) -> None:
    """Tag everything below ``scope`` with its accelerator family (trainium | inferentia | gpu: an
    ``neuronfleet.facts.catalog.AcceleratorFamily``, a str; core sits below facts and does not import it)."""
    Tags.of(scope).add(FAMILY_TAG, str(family))


def tag_capacity(scope: IConstruct, capacity_type: str) -> None:
    """Tag everything below ``scope`` (a launch template: its instances) with the capacity it targets, so the waste
    detector can tell an instance that runs outside its reservation (``on-demand``, ``odcr``, ``capacity-block``)."""
    Tags.of(scope).add(CAPACITY_TAG, capacity_type)
