"""``neuronfleet preflight -c PATH``: what a deploy of the fleet file would run into on the real account."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from ..cli.output import (
    BadInput,
    CheckLine,
    Said,
    check_lines_payload,
    check_lines_text,
    emit,
    exit_code_of,
    json_option,
    progress,
)
from ..core import rules
from ..core.problems import Problem
from .checks import (
    NETWORK_FIX,
    Failed,
    ami_lines,
    image_lines,
    offering_lines,
    quota_lines,
    reservation_lines,
)
from .needs import FleetNeeds, needs_of


def lines_of(needs: FleetNeeds, answers: dict[str, Any]) -> list[CheckLine]:
    """Every check's lines, in a fixed order (quotas, offerings, reservations, images, AMIs); a permission fix names
    the caller (``answers["caller"]``, its ARN) when known."""
    lines = [*quota_lines(needs, answers["ec2_quotas"], answers["sagemaker_quotas"]),
             *offering_lines(needs, answers["offerings"]),
             *reservation_lines(needs, answers["reservations"], answers["groups"]),
             *image_lines(needs, answers["images"], answers.get("dlc_account")),
             *ami_lines(needs, answers["parameters"], answers["amis"])]
    caller = answers.get("caller")
    if caller:
        lines = [replace(line, fix=line.fix.replace(" to the caller", f" to {caller}")) for line in lines]
    return lines


def caller_problem(failed: Failed, region: str) -> Problem:
    """Why preflight cannot start: no usable credentials, or STS unreachable: one problem, the fix for its cause."""
    said = Said(f"{'none usable' if failed.cause == 'credentials' else 'no answer'} ({failed})")
    if failed.cause == "network":
        return Problem(f"AWS STS endpoint in {region}", said, NETWORK_FIX)
    return Problem("AWS credentials", said, "credentials the AWS SDK finds (aws sso login, AWS_PROFILE, or "
                   "AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY); check them with aws sts get-caller-identity, then run "
                   "preflight again")


@click.command(short_help="Check the account before a deploy (quotas, offerings, reservations, images, AMIs).",
               help="""Check the AWS account against a fleet file before a deploy, with your credentials (read-only
calls): EC2 On-Demand vCPU quotas and SageMaker endpoint-instance quotas vs what the fleet needs, instance-type
offerings in the fleet's AZs, capacity reservations and Capacity Blocks (exist, active or scheduled, in the
cluster's AZ, enough instances), ECR images and SSM AMI parameters / AMIs. One line per check: ok, warning,
blocking or UNCHECKED (could not run: credentials, access denied, throttled, network), with the fix for its cause.
Exit 0: every check ran and none blocks; 1: something blocks or some checks could not run; 2: bad usage, or no
usable AWS credentials (checked first with STS GetCallerIdentity: nothing else is called).""")
@click.option("-c", "--config", "config", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="The fleet file (YAML), e.g. config/prod.yaml.")
@click.option("--region", help="Check another region than the fleet file's.")
@json_option
def preflight(config: Path, region: str | None, as_json: bool) -> int:
    from ..fleetfile.schema import load_fleet  # pydantic: when the command runs, not for --help
    from .account import Account, gather

    if region:
        try:
            rules.region(region)
        except ValueError as exc:
            raise BadInput.of("--region", region, str(exc), what="preflight") from None
    fleet = load_fleet(config)
    needs = needs_of(fleet)
    if region:
        needs.region = region
    account = Account(needs.region)
    caller = account.caller()
    if isinstance(caller, Failed):
        raise BadInput([caller_problem(caller, needs.region)], "preflight")
    progress(f"checking as {caller}")
    answers = {**gather(needs, account, progress=progress), "caller": caller}
    lines = lines_of(needs, answers)
    emit({"config": str(config), "region": needs.region, "caller": caller, **check_lines_payload(lines)},
         f"preflight of {config} in {needs.region}\n" + check_lines_text(lines), as_json=as_json)
    return exit_code_of(lines)
