"""Cost-allocation tags. The cost monitors group spend by these keys (activate them in Billing)."""

from __future__ import annotations

from aws_cdk import Tags
from constructs import IConstruct

from neuronfleet_contract.tags import (
    CAPACITY_TAG,
    DEVICE_PLUGIN_DEVICES,
    DEVICES_TAG,
    DRA_DEVICES,
    FAMILY_TAG,
    FLEET_TAG,
    PHASE_TAG,
)

__all__ = ["CAPACITY_TAG", "DEVICES_TAG", "FAMILY_TAG", "FLEET_TAG", "PHASE_TAG", "tag_capacity", "tag_devices",
           "tag_family", "tag_fleet"]


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


def tag_devices(scope: IConstruct, *, dra: bool) -> None:
    """Tag everything below ``scope`` (an EKS node group's launch template: its instances) with the Neuron device
    manager of its nodes (``dra`` or ``device-plugin``), so the waste detector reports a DRA node, on which the kit
    runs no utilisation publisher, as not measured rather than silent (neuronfleet_contract.tags.DEVICES_TAG)."""
    Tags.of(scope).add(DEVICES_TAG, DRA_DEVICES if dra else DEVICE_PLUGIN_DEVICES)
