"""Facts behind the CUR 2.0 export's region, the compute environments' security group, FSx backups and the MNP task
interface, pinned against AWS's own data as shipped in botocore 1.44.5, moto 5.2.5 and cfn-lint 1.58.0.

AWS pages (read 2026-11-23) cited in the code: Batch user guide "Compute environment considerations for MNP";
AWS Data Exports user guide "Setting up an Amazon S3 bucket for data exports"; FSx for Lustre user guide "Working
with backups" and "Using data repositories"; EC2 user guide "Maximize network bandwidth on Amazon EC2 instances with
multiple network cards".
"""

from __future__ import annotations

import gzip
import json
from importlib import resources
from pathlib import Path

import botocore
import cfnlint
import moto
import pytest
from botocore.session import get_session

from neuronfleet import CATALOG
from neuronfleet.settings.cost import AWS_PARTITION_REGIONS, CUR_EXPORT_REGION, cur_export_region
from neuronfleet.settings.training import FSX_NO_BACKUPS_WITH_S3_LINK

SESSION = get_session()


def _doc(service: str, shape: str, member: str | None = None) -> str:
    s = SESSION.get_service_model(service).shape_for(shape)
    return (s.members[member] if member else s).documentation


# ------------------------------------------------------------------------------------------ CUR 2.0 export region


def test_data_exports_api_is_served_from_us_east_1_only() -> None:
    doc = SESSION.get_service_model("bcm-data-exports").documentation
    assert "https://bcm-data-exports.us-east-1.api.aws" in doc and CUR_EXPORT_REGION == "us-east-1"
    # the destination bucket's region is a required field of its own: the bucket may be elsewhere
    destination = SESSION.get_service_model("bcm-data-exports").shape_for("S3Destination")
    assert "S3Region" in destination.required_members
    assert _doc("bcm-data-exports", "S3Destination", "S3Region") == "<p>The S3 bucket Region.</p>"


def _cfn_types(region: str) -> set[str]:
    path = Path(cfnlint.__file__).parent / "data" / "schemas" / "providers" / f"{region}.json"
    return set(json.loads(path.read_text()))


def test_cloudformation_has_the_export_type_in_us_east_1_and_not_in_us_east_2() -> None:
    """cfn-lint's per-region resource lists (what CDK's validator also refused in us-east-2)."""
    assert "AWS::BCMDataExports::Export" in _cfn_types("us-east-1")
    assert "AWS::BCMDataExports::Export" not in _cfn_types("us-east-2")


def test_the_aws_partition_regions_are_botocores() -> None:
    partitions = json.loads((Path(botocore.__file__).parent / "data" / "partitions.json").read_text())
    (aws,) = [p for p in partitions["partitions"] if p["id"] == "aws"]
    assert AWS_PARTITION_REGIONS.pattern == aws["regionRegex"]
    assert aws["outputs"]["implicitGlobalRegion"] == CUR_EXPORT_REGION
    for partition in partitions["partitions"]:
        for region in (r for r in partition["regions"] if not r.endswith("-global")):  # not pseudo-regions
            assert (cur_export_region(region) == CUR_EXPORT_REGION) == (partition["id"] == "aws"), region
    known = json.loads(resources.files("neuronfleet.facts.data").joinpath("regions.json").read_text())["regions"]
    assert {"us-west-2", "eu-west-1", "ap-south-2"} <= {r for r in known if cur_export_region(r)}
    assert not {"cn-north-1", "us-gov-west-1", "us-iso-east-1", "eusc-de-east-1"} & {r for r in known
                                                                                   if cur_export_region(r)}


# ------------------------------------------------------------------------------- Batch security groups, MNP card 0


def test_batch_uses_the_compute_environments_groups_over_the_launch_templates() -> None:
    text = "If security groups are specified using both <code>securityGroupIds</code> and <code>launchTemplate</code>, " \
           "the values in <code>securityGroupIds</code> are used."
    assert text in _doc("batch", "ComputeResource", "securityGroupIds")


def _moto_instance_types() -> dict[str, dict]:
    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    return json.loads(gzip.decompress(path.read_bytes()))  # type: ignore[no-any-return]


CARD0_FULL = {"trn2.48xlarge", "trn2u.48xlarge", "p5.48xlarge"}
"""Types whose network card 0 the kit's EFA layout fills (ENA primary at device 0 + EFA-only at device 1, and
DescribeInstanceTypes allows 2 interfaces on that card): an MNP task interface attached on card 0 would find no slot.
Unconfirmed whether ECS attaches it there (README, "Known limit (MNP task interface)")."""


@pytest.mark.parametrize("instance_type", sorted(CARD0_FULL | {"trn1.32xlarge", "trn1n.32xlarge", "p5en.48xlarge",
                                                               "p4d.24xlarge", "g6e.48xlarge"}))
def test_free_interface_slots_on_network_card_0(instance_type: str) -> None:
    data = _moto_instance_types()[instance_type]["NetworkInfo"]
    (card0,) = [c for c in data["NetworkCards"] if c["NetworkCardIndex"] == 0]
    used = sum(slot.network_card == 0 for slot in CATALOG.get(instance_type).network_interfaces())
    free = card0["MaximumNetworkInterfaces"] - used
    assert data["DefaultNetworkCardIndex"] == 0
    assert (free == 0) == (instance_type in CARD0_FULL), (instance_type, card0, used)


# ---------------------------------------------------------------------------------------------------- FSx backups


def test_fsx_for_lustre_backs_up_no_file_system_linked_to_a_data_repository() -> None:
    doc = SESSION.get_service_model("fsx").operation_model("CreateBackup").documentation
    assert "Are <i>not</i> linked to a data repository" in doc
    assert "linked to an S3 data repository" in FSX_NO_BACKUPS_WITH_S3_LINK
