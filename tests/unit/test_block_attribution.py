"""Capacity Block fees belong to the fleet whose clusters target the block: by the reservation ids its fleet file
names or the members of its capacity-reservation resource groups (UltraServer blocks are bought that way), unless a
tag on the block or its reservations says otherwise. EC2 and Resource Groups stubbed against botocore's models."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from neuronfleet.lambdas.cost.adapters.block_reservations import CapacityBlocks
from neuronfleet_contract.cost import CollectorConfig

REGION = "us-east-2"
GROUP = "arn:aws:resource-groups:us-east-2:333333333333:group/nf-prod-trn2u-blocks"
START = datetime(2026, 11, 1, 11, 30, tzinfo=UTC)


@pytest.fixture(autouse=True)
def credentials(monkeypatch) -> None:
    """Stubbed clients still sign their requests: fake credentials, so botocore looks nowhere else for them."""
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(var, "testing")


def _block(block_id: str, cr: str, tags: dict[str, str] | None = None) -> dict[str, Any]:
    return {"CapacityBlockId": block_id, "CapacityReservationIds": [cr], "StartDate": START,
            "EndDate": START + timedelta(days=7), "CreateDate": START - timedelta(days=2), "State": "active",
            "Tags": [{"Key": k, "Value": v} for k, v in (tags or {}).items()]}


def _reservation(cr: str) -> dict[str, Any]:
    return {"CapacityReservationId": cr, "InstanceType": "trn2u.48xlarge", "TotalInstanceCount": 4, "Tags": []}


def blocks_of(fleet: str | None, *, ids: tuple[str, ...] = (), groups: dict[str, list[str]] | None = None,
              blocks: list[dict[str, Any]]) -> dict[str, str]:
    ec2, rg = boto3.client("ec2", region_name=REGION), boto3.client("resource-groups", region_name=REGION)
    with Stubber(ec2) as ec2_stub, Stubber(rg) as rg_stub:
        ec2_stub.add_response("describe_capacity_blocks", {"CapacityBlocks": blocks})
        crs = sorted({cr for b in blocks for cr in b["CapacityReservationIds"]})
        ec2_stub.add_response("describe_capacity_reservations",
                              {"CapacityReservations": [_reservation(cr) for cr in crs]}, {"CapacityReservationIds": crs})
        for group, members in (groups or {}).items():
            rg_stub.add_response("list_group_resources", {"Resources": [{"Identifier": {
                "ResourceArn": f"arn:aws:ec2:{REGION}:333333333333:capacity-reservation/{m}",
                "ResourceType": "AWS::EC2::CapacityReservation"}} for m in members]}, {"Group": group})
        found = CapacityBlocks(ec2, fleet=fleet, reservation_ids=ids, group_arns=list(groups or {}), groups=rg).describe()
    return {b.block_id: b.fleet for b in found}


def test_untagged_blocks_in_the_fleets_group_or_named_by_id_are_the_fleets() -> None:
    got = blocks_of("nf-prod", ids=("cr-0000000000000000b",), groups={GROUP: ["cr-0000000000000000a"]}, blocks=[
        _block("cb-ultra", "cr-0000000000000000a"),      # an UltraServer block in the fleet's resource group
        _block("cb-byid", "cr-0000000000000000b"),       # named by id in the fleet file
        _block("cb-other", "cr-0000000000000000c"),      # someone else's, untagged: stays untagged
        _block("cb-tagged", "cr-0000000000000000d", {"neuronfleet:fleet": "nf-pilot"}),  # a tag wins
    ])
    assert got == {"cb-ultra": "nf-prod", "cb-byid": "nf-prod", "cb-other": "(untagged)", "cb-tagged": "nf-pilot"}


def test_a_tag_on_the_block_wins_over_the_group() -> None:
    got = blocks_of("nf-prod", groups={GROUP: ["cr-0000000000000000a"]},
                    blocks=[_block("cb-ultra", "cr-0000000000000000a", {"neuronfleet:fleet": "nf-pilot"})])
    assert got == {"cb-ultra": "nf-pilot"}


def test_without_a_fleet_nothing_is_attributed() -> None:
    assert blocks_of(None, blocks=[_block("cb-x", "cr-0000000000000000a")]) == {"cb-x": "(untagged)"}


def test_groups_without_a_client_fail_loudly() -> None:
    with pytest.raises(ValueError, match="without a Resource Groups client"):
        CapacityBlocks(boto3.client("ec2", region_name=REGION), fleet="f", group_arns=[GROUP]).fleet_reservations()


def test_the_collector_settings_carry_the_fleets_reservations() -> None:
    settings = CollectorConfig(ledger_table="l", instance_types=("trn2u.48xlarge",), fleet="nf-prod",
                               reservation_ids=("cr-0000000000000000b",), resource_group_arns=(GROUP,))
    assert CollectorConfig.from_environment(settings.to_environment()) == settings
    assert "FLEET_RESERVATIONS" not in CollectorConfig(ledger_table="l", instance_types=("x",)).to_environment()


def test_a_repeated_next_token_from_describe_capacity_blocks_stops_the_run_naming_it() -> None:
    from neuronfleet.lambdas.cost.logic.paging import PagingError

    ec2 = boto3.client("ec2", region_name=REGION)
    with Stubber(ec2) as stub:
        stub.add_response("describe_capacity_blocks", {"CapacityBlocks": [], "NextToken": "n1"})
        stub.add_response("describe_capacity_blocks", {"CapacityBlocks": [], "NextToken": "n1"}, {"NextToken": "n1"})
        with pytest.raises(PagingError, match="EC2 DescribeCapacityBlocks: next-page token 'n1' repeated after page 2"):
            CapacityBlocks(ec2).describe()
