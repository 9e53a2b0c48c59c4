"""The account's answers -> one ok / warning / blocking line per check, with the fix. Pure: no AWS call.

Each answer is the value the adapter read or a :class:`Failed` (throttled, access denied, not found, ...): a check
that could not be made is an ``unchecked`` line whose fix matches the cause (credentials, the IAM action to allow,
throttling, the network), never a traceback, never an ok and never a mere warning.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..cli.output import CheckLine
from ..facts.catalog import CATALOG
from ..facts.neuron import parse_image
from .needs import FleetNeeds
from .quotas import EC2_ON_DEMAND, SAGEMAKER_ENDPOINT_NAME, QuotaFact, ec2_quota

NOT_FOUND = "NotFound"


@cache
def botocore_error_names() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(throttling codes, network error names, credential error names) as the installed botocore (1.44.5) defines
    them: its standard retry mode's throttling codes (``botocore.retries.standard.ThrottledRetryableChecker``), the
    subclasses of its ``ConnectionError`` / ``HTTPClientError`` (no answer from the endpoint), and its credential
    and token exceptions. tests/cli/test_preflight.py pins them. Read on first use: botocore is not a dependency of
    the library (``neuronfleet preflight --help`` runs without it)."""
    import inspect

    import botocore.exceptions as exc
    from botocore.retries.standard import ThrottledRetryableChecker

    classes = [c for _n, c in inspect.getmembers(exc, inspect.isclass) if issubclass(c, Exception)]
    network = {c.__name__ for c in classes if issubclass(c, (exc.ConnectionError, exc.HTTPClientError))}
    credential_bases = (exc.NoCredentialsError, exc.PartialCredentialsError, exc.CredentialRetrievalError,
                        exc.UnknownCredentialError, exc.TokenRetrievalError, exc.SSOError, exc.NoAuthTokenError)
    credentials = {c.__name__ for c in classes if issubclass(c, credential_bases)}
    return (frozenset(ThrottledRetryableChecker._THROTTLED_ERROR_CODES), frozenset(network),
            frozenset(credentials))


CREDENTIAL_CODES = frozenset({
    "ExpiredToken", "ExpiredTokenException", "RequestExpired", "InvalidClientTokenId", "UnrecognizedClientException",
    "InvalidAccessKeyId", "SignatureDoesNotMatch", "IncompleteSignature", "MissingAuthenticationToken",
    "AuthFailure"})
"""AWS error codes that mean the request's credentials were refused (not the caller's permissions): the common
errors of AWS's query/JSON APIs (ExpiredTokenException, IncompleteSignature, InvalidClientTokenId,
MissingAuthenticationToken, ...: e.g. https://docs.aws.amazon.com/STS/latest/APIReference/CommonErrors.html) and
EC2's (AuthFailure, RequestExpired: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html),
read 2026-11-23. STS's own model in botocore 1.44.5 has ExpiredTokenException."""

ACCESS_DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation",
                                 "UnauthorizedAccess", "AuthorizationError"})
"""AWS error codes that mean the caller lacks an IAM permission (EC2: UnauthorizedOperation; most JSON APIs:
AccessDeniedException; query APIs: AccessDenied; same sources as :data:`CREDENTIAL_CODES`)."""

Cause = str
"""Why a call gave no answer: not found | credentials | access denied | throttled | network | error."""


@dataclass(frozen=True)
class Failed:
    """A call that gave no usable answer: ``code`` (the AWS error code, or NotFound, or the botocore exception's
    name), ``message``."""

    code: str
    message: str = ""

    @property
    def not_found(self) -> bool:
        return self.code == NOT_FOUND or self.code.endswith(("NotFound", "NotFoundException")) or \
            self.code in ("ImageNotFound", "ParameterNotFound")

    @property
    def cause(self) -> Cause:
        """What kept the call from answering, which decides the fix."""
        if self.not_found:
            return "not found"
        throttling, network, credential_exceptions = botocore_error_names()
        if self.code in CREDENTIAL_CODES or self.code in credential_exceptions:
            return "credentials"
        if self.code in ACCESS_DENIED_CODES:
            return "access denied"
        if self.code in throttling:
            return "throttled"
        if self.code in network:
            return "network"
        return "error"

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.message else self.code


CREDENTIALS_FIX = ("refresh the credentials (aws sso login, AWS_PROFILE, or AWS_ACCESS_KEY_ID + "
                   "AWS_SECRET_ACCESS_KEY [+ AWS_SESSION_TOKEN]), check them with aws sts get-caller-identity, "
                   "and run preflight again")
NETWORK_FIX = ("the AWS endpoint did not answer: check the network, a proxy (HTTPS_PROXY) or the VPC endpoint, "
               "and run preflight again")


def _unreadable(check: str, failed: Failed, permission: str, by_hand: str) -> CheckLine:
    """A check that could not run: ``unchecked`` (never an ok, never a warning), the fix matching the cause."""
    fix = {
        "credentials": CREDENTIALS_FIX,
        "access denied": f"allow {permission} to the caller, or check by hand: {by_hand}",
        "throttled": f"throttled after botocore's standard retries: run preflight again in a minute, or check by "
                     f"hand: {by_hand}",
        "network": NETWORK_FIX,
    }.get(failed.cause, f"check by hand: {by_hand}")
    return CheckLine("unchecked", check, f"could not check: {failed.cause} ({failed})", fix)


RESERVATION_OK_STATES = ("active", "scheduled", "payment-pending")
"""Capacity reservation states a deploy can go ahead with (a Capacity Block is scheduled until it starts;
botocore 1.44.5 CapacityReservationState enum)."""
RESERVATION_WAIT_STATES = ("pending", "assessing", "delayed")
"""States on the way to active (a warning: check again before the deploy); every other state of the enum
(expired, cancelled, failed, payment-failed, unsupported, cancelling, unavailable) blocks."""

ON_DEMAND_COUNTED = ("on-demand", "odcr", "pool")
"""Capacity counted against the On-Demand vCPU quota. Capacity Block instances are not counted here: whether they
use On-Demand quota is not confirmed by a source read (docs/cli.md says so)."""


def quota_lines(needs: FleetNeeds, ec2: Sequence[Mapping[str, Any]] | Failed,
                sagemaker: Sequence[Mapping[str, Any]] | Failed) -> list[CheckLine]:
    out: list[CheckLine] = []
    fixed: dict[str, int] = defaultdict(int)
    pool: dict[str, tuple[int, int]] = {}
    for need in needs.instances:
        fact = ec2_quota(need.instance_type)
        if fact is None or need.capacity not in ON_DEMAND_COUNTED:
            continue
        if need.capacity == "pool":
            one = CATALOG.get(need.instance_type).vcpus if need.instance_type in CATALOG else 0
            smallest, total = pool.get(fact.name, (0, 0))
            pool[fact.name] = (max(smallest, one), max(total, need.vcpus))
        else:
            fixed[fact.name] += need.vcpus
    facts = {f.name: f for f in EC2_ON_DEMAND.values()}
    for name in sorted(set(fixed) | set(pool)):
        check = f"quota {name} ({needs.region})"
        if isinstance(ec2, Failed):
            out.append(_unreadable(check, ec2, "servicequotas:ListServiceQuotas",
                                   f"Service Quotas console -> Amazon EC2 -> '{name}'"))
            continue
        one, most = pool.get(name, (0, 0))
        out.append(_quota_line(check, facts[name], ec2, required=fixed[name] + one, wanted=fixed[name] + most,
                               unit="vCPUs"))
    per_type: dict[str, int] = defaultdict(int)
    for e in needs.endpoints:
        per_type[e.instance_type] += e.instances
    for instance_type, count in sorted(per_type.items()):
        name = SAGEMAKER_ENDPOINT_NAME.format(instance_type=instance_type)
        check = f"quota {name} ({needs.region})"
        if isinstance(sagemaker, Failed):
            out.append(_unreadable(check, sagemaker, "servicequotas:ListServiceQuotas",
                                   f"Service Quotas console -> Amazon SageMaker -> '{name}'"))
            continue
        out.append(_quota_line(check, QuotaFact("sagemaker", name, "", ""), sagemaker, required=count,
                               wanted=count, unit="instances"))
    return out


def _quota_line(check: str, fact: QuotaFact, quotas: Sequence[Mapping[str, Any]], *, required: int, wanted: int,
                unit: str) -> CheckLine:
    found = [q for q in quotas if q.get("QuotaName") == fact.name]
    if not found:
        return CheckLine("warning", check, f"no quota named '{fact.name}' in the account's list (the name is the "
                                           "kit's, from third-party pages: unconfirmed)",
                         f"Service Quotas console -> {fact.service} -> search '{fact.name.split(' ')[0]}', and "
                         f"check it allows {wanted} {unit}")
    quota = found[0]
    value = int(float(quota.get("Value", 0)))
    code = str(quota.get("QuotaCode", ""))
    seen = f"{value} {unit} ({code}{'' if not fact.code or code == fact.code else f'; the kit recorded {fact.code}'})"
    fix = (f"aws service-quotas request-service-quota-increase --service-code {fact.service} --quota-code {code} "
           f"--desired-value {wanted}")
    if value < required:
        return CheckLine("blocking", check, f"{seen}; the fleet needs {required} {unit}", fix)
    if value < wanted:
        return CheckLine("warning", check, f"{seen}: enough to start ({required}), not for the GPU pool's maximum "
                                           f"({wanted})", fix)
    return CheckLine("ok", check, f"{seen} >= {wanted} needed")


def offering_lines(needs: FleetNeeds, offered: set[tuple[str, str]] | Failed) -> list[CheckLine]:
    out: list[CheckLine] = []
    for need in needs.instances:
        check = f"offering {need.instance_type} for {need.purpose}"
        if isinstance(offered, Failed):
            out.append(_unreadable(check, offered, "ec2:DescribeInstanceTypeOfferings",
                                   f"aws ec2 describe-instance-type-offerings --location-type availability-zone "
                                   f"--filters Name=instance-type,Values={need.instance_type} --region {needs.region}"))
            continue
        missing = [az for az in need.azs if (need.instance_type, az) not in offered]
        block_only = need.instance_type in CATALOG and CATALOG.get(need.instance_type).capacity_block_only
        if not missing:
            out.append(CheckLine("ok", check, f"offered in {', '.join(need.azs)}"))
        elif need.capacity == "capacity-block" or block_only:
            out.append(CheckLine("warning", check, f"not listed in {', '.join(missing)} (a type sold through "
                                                   "Capacity Blocks can be missing from the offerings list)",
                                 f"aws ec2 describe-capacity-block-offerings --instance-type {need.instance_type} "
                                 f"--region {needs.region} (the block's AZ must be {', '.join(need.azs)})"))
        elif need.capacity == "pool" and len(missing) < len(need.azs):
            out.append(CheckLine("ok", check, f"offered in {', '.join(a for a in need.azs if a not in missing)} "
                                              f"(not in {', '.join(missing)}: the pool launches elsewhere)"))
        else:
            where = [a for a in sorted({a for t, a in offered if t == need.instance_type})]
            out.append(CheckLine("warning" if need.capacity == "pool" else "blocking", check,
                                 f"not offered in {', '.join(missing)}",
                                 "move it to an AZ that offers it" + (f" ({', '.join(where)})" if where else
                                                                      " (none in this region)")))
    return out


def reservation_lines(needs: FleetNeeds, reservations: Mapping[str, Mapping[str, Any] | Failed],
                      groups: Mapping[str, list[str] | Failed]) -> list[CheckLine]:
    out: list[CheckLine] = []
    for need in needs.reservations:
        if need.resource_group_arn:
            members = groups.get(need.resource_group_arn, Failed(NOT_FOUND))
            check = f"reservations of {need.purpose} (group {need.resource_group_arn.rsplit('/', 1)[-1]})"
            if isinstance(members, Failed):
                out.append(CheckLine("blocking", check, "the resource group does not exist", "create it and add the "
                                     "reservations, or fix resource_group_arn") if members.not_found else
                           _unreadable(check, members, "resource-groups:ListGroupResources",
                                       f"aws resource-groups list-group-resources --group {need.resource_group_arn}"))
                continue
            if not members:
                out.append(CheckLine("blocking", check, "the group holds no capacity reservation",
                                     "buy the Capacity Blocks / reservations and add them to the group"))
                continue
            ids = sorted(members)
        else:
            ids = [need.reservation_id] if need.reservation_id else []
            check = f"reservation of {need.purpose}"
        total = 0
        for rid in ids:
            got = reservations.get(rid, Failed(NOT_FOUND))
            line_check = f"{check}: {rid}"
            if isinstance(got, Failed):
                out.append(CheckLine("blocking", line_check, "not found in the account and region",
                                     "fix the id, or buy it") if got.not_found else
                           _unreadable(line_check, got, "ec2:DescribeCapacityReservations",
                                       f"aws ec2 describe-capacity-reservations --capacity-reservation-ids {rid}"))
                continue
            out.append(_reservation_line(line_check, need.instance_type, need.az, got))
            if got.get("State") in RESERVATION_OK_STATES:
                total += int(got.get("TotalInstanceCount", 0))
        if ids and total < need.count and not any(line.status != "ok" for line in out if line.check.startswith(check)):
            out.append(CheckLine("blocking", check, f"{total} instances reserved; the cluster has {need.count}",
                                 f"reserve {need.count - total} more, or lower count to {total}"))
    return out


def _reservation_line(check: str, instance_type: str, az: str, r: Mapping[str, Any]) -> CheckLine:
    state, got_az, got_type = r.get("State"), r.get("AvailabilityZone"), r.get("InstanceType")
    kind = "Capacity Block" if r.get("ReservationType") == "capacity-block" else "reservation"
    if got_type != instance_type:
        return CheckLine("blocking", check, f"a {kind} of {got_type}; the cluster runs {instance_type}",
                         "use a reservation of the cluster's type")
    if got_az != az:
        return CheckLine("blocking", check, f"in {got_az}; the cluster is in {az}",
                         f"set network.training_az (or capacity.availability_zone) to {got_az}")
    if state in RESERVATION_WAIT_STATES:
        return CheckLine("warning", check, f"state {state}: not active yet", "check again before the deploy")
    if state not in RESERVATION_OK_STATES:
        return CheckLine("blocking", check, f"state {state}", "use an active or scheduled reservation")
    when = f", starts {r.get('StartDate')}" if state != "active" and r.get("StartDate") else ""
    return CheckLine("ok", check, f"{kind} {state}{when}, {r.get('TotalInstanceCount')} x {got_type} in {got_az}")


def ecr_host(account: str, region: str) -> str:
    """A private ECR registry's host (``<account>.dkr.ecr.<region>.amazonaws.com``; ``.com.cn`` in China)."""
    return f"{account}.dkr.ecr.{region}.amazonaws.com{'.cn' if region.startswith('cn-') else ''}"


def image_check_by_hand(reference: str, region: str, dlc_account: str | None = None) -> str:
    """What a user pastes to check an image: ``docker manifest inspect`` on the FULL reference (a DLC shorthand
    ``repo:tag`` gets its registry host: pasted bare, Docker would ask Docker Hub), after logging Docker in to a
    private ECR registry the way aws-cli's get-login-password example does (tests/data/aws_cli)."""
    ref = parse_image(reference)
    if ref.dlc:
        if not dlc_account:
            return f"docker manifest inspect <the DLC account of {region}>.dkr.ecr.{region}.amazonaws.com/{reference}"
        account, registry_region, full = dlc_account, region, f"{ecr_host(dlc_account, region)}/{reference}"
    elif ref.ecr_account_region:
        (account, registry_region), full = ref.ecr_account_region, reference
    else:
        return f"docker manifest inspect {reference}"
    return (f"aws ecr get-login-password --region {registry_region} | docker login --username AWS "
            f"--password-stdin {ecr_host(account, registry_region)} && docker manifest inspect {full}")


def image_lines(needs: FleetNeeds, found: Mapping[str, bool | Failed], dlc_account: str | None = None
                ) -> list[CheckLine]:
    out: list[CheckLine] = []
    for need in needs.images:
        check = f"image of {need.purpose}: {need.reference}"
        got = found.get(need.reference)
        by_hand = image_check_by_hand(need.reference, needs.region, dlc_account)
        if got is None:
            out.append(CheckLine("warning", check, "not checked (not in ECR: ECR Public or another registry)",
                                 by_hand))
        elif isinstance(got, Failed) and not got.not_found:
            out.append(_unreadable(check, got, "ecr:BatchGetImage", by_hand))
        elif got is True:
            out.append(CheckLine("ok", check, "found"))
        else:
            out.append(CheckLine("blocking", check, "no such image or repository",
                                 "push the image, or fix the reference in the fleet file"))
    return out


def ami_lines(needs: FleetNeeds, parameters: Mapping[str, str | Failed], images: Mapping[str, str | Failed]
              ) -> list[CheckLine]:
    out: list[CheckLine] = []
    for need in needs.amis:
        if need.parameter:
            check = f"AMI parameter of {need.purpose}: {need.parameter}"
            got = parameters.get(need.parameter, Failed(NOT_FOUND))
            if isinstance(got, Failed):
                out.append(CheckLine("blocking", check, "no such SSM parameter in the region",
                                     "fix the parameter name") if got.not_found else
                           _unreadable(check, got, "ssm:GetParameter", f"aws ssm get-parameter --name {need.parameter}"))
            else:
                out.append(CheckLine("ok", check, f"resolves to {got}"))
            continue
        check = f"AMI of {need.purpose}: {need.ami_id or 'none recorded'}"
        if not need.ami_id:
            out.append(CheckLine("blocking", check, f"the kit records no AMI for {needs.region}",
                                 "pin ami_id, or set follow_latest: true"))
            continue
        state = images.get(need.ami_id, Failed(NOT_FOUND))
        if isinstance(state, Failed):
            out.append(CheckLine("blocking", check, "no such AMI in the region (or not shared with the account)",
                                 "pin an AMI that exists here, or set follow_latest: true") if state.not_found else
                       _unreadable(check, state, "ec2:DescribeImages", f"aws ec2 describe-images --image-ids {need.ami_id}"))
        elif state != "available":
            out.append(CheckLine("blocking", check, f"state {state}", "use an available AMI"))
        else:
            out.append(CheckLine("ok", check, "available"))
    return out
