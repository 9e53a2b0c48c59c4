"""``neuronfleet preflight -c PATH``: what a deploy of the fleet file would run into on the real account."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from neuronfleet import load_fleet

from ..cli.output import CheckLine, check_lines_payload, check_lines_text, emit, exit_code_of, json_option, progress
from .checks import ami_lines, image_lines, offering_lines, quota_lines, reservation_lines
from .needs import FleetNeeds, needs_of


def lines_of(needs: FleetNeeds, answers: dict[str, Any]) -> list[CheckLine]:
    """Every check's lines, in a fixed order (quotas, offerings, reservations, images, AMIs)."""
    return [*quota_lines(needs, answers["ec2_quotas"], answers["sagemaker_quotas"]),
            *offering_lines(needs, answers["offerings"]),
            *reservation_lines(needs, answers["reservations"], answers["groups"]),
            *image_lines(needs, answers["images"]),
            *ami_lines(needs, answers["parameters"], answers["amis"])]


@click.command(short_help="Check the account before a deploy (quotas, offerings, reservations, images, AMIs).",
               help="""Check the AWS account against a fleet file before a deploy, with your credentials (read-only
calls): EC2 On-Demand vCPU quotas and SageMaker endpoint-instance quotas vs what the fleet needs, instance-type
offerings in the fleet's AZs, capacity reservations and Capacity Blocks (exist, active or scheduled, in the
cluster's AZ, enough instances), ECR images and SSM AMI parameters / AMIs. One line per check: ok, warning or
blocking, with the fix. A check that cannot be made (throttled, access denied) is a warning. Exit 1 when any line
is blocking.""")
@click.option("-c", "--config", "config", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="The fleet file (YAML), e.g. config/prod.yaml.")
@click.option("--region", help="Check another region than the fleet file's.")
@json_option
def preflight(config: Path, region: str | None, as_json: bool) -> int:
    from .account import Account, gather

    fleet = load_fleet(config)
    needs = needs_of(fleet)
    if region:
        needs.region = region
    answers = gather(needs, Account(needs.region), progress=progress)
    lines = lines_of(needs, answers)
    emit({"config": str(config), "region": needs.region, **check_lines_payload(lines)},
         f"preflight of {config} in {needs.region}\n" + check_lines_text(lines), as_json=as_json)
    return exit_code_of(lines)
