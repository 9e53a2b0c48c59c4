"""The thin boto3 adapter preflight reads the account through: one method per question, each answer a value or a
:class:`~neuronfleet.preflight.checks.Failed` (throttled after botocore's standard retries, access denied, not
found, no credentials): a call that fails never raises, so one check cannot stop the others."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..facts.neuron import parse_image
from .checks import NOT_FOUND, Failed
from .needs import FleetNeeds


def failed(exc: Exception) -> Failed:
    """A botocore error as a :class:`Failed` (its AWS error code and message)."""
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        error = response.get("Error") or {}
        return Failed(str(error.get("Code") or type(exc).__name__), str(error.get("Message") or ""))
    return Failed(type(exc).__name__, str(exc))


class Account:
    """Clients made by ``client(service, region)`` (default: boto3 with standard retries)."""

    def __init__(self, region: str, client: Callable[[str, str], Any] | None = None,
                 dlc_account: Callable[[str], str] | None = None) -> None:
        self.region = region
        self._client = client or _boto3_client
        self._clients: dict[tuple[str, str], Any] = {}
        self._dlc_account = dlc_account or _dlc_account

    def client(self, service: str, region: str | None = None) -> Any:
        key = (service, region or self.region)
        if key not in self._clients:
            self._clients[key] = self._client(*key)
        return self._clients[key]

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as exc:  # ClientError, BotoCoreError, NoCredentialsError, an endpoint's surprise: an answer
            return failed(exc)

    def caller(self) -> str | Failed:
        """Who the credentials are (STS GetCallerIdentity's ``Arn``): asked first, so a run without usable
        credentials stops at once instead of failing every check."""
        result: str | Failed = self._call(lambda: str(self.client("sts").get_caller_identity()["Arn"]))
        return result

    def service_quotas(self, service: str) -> list[dict[str, Any]] | Failed:
        def run() -> list[dict[str, Any]]:
            pages = self.client("service-quotas").get_paginator("list_service_quotas").paginate(ServiceCode=service)
            return [q for page in pages for q in page.get("Quotas", [])]
        result: list[dict[str, Any]] | Failed = self._call(run)
        return result

    def offerings(self, instance_types: Iterable[str]) -> set[tuple[str, str]] | Failed:
        types = sorted(set(instance_types))

        def run() -> set[tuple[str, str]]:
            pages = self.client("ec2").get_paginator("describe_instance_type_offerings").paginate(
                LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": types}])
            return {(o["InstanceType"], o["Location"]) for p in pages for o in p.get("InstanceTypeOfferings", [])}
        result: set[tuple[str, str]] | Failed = self._call(run) if types else set()
        return result

    def reservation(self, reservation_id: str) -> dict[str, Any] | Failed:
        def run() -> dict[str, Any] | Failed:
            got = self.client("ec2").describe_capacity_reservations(CapacityReservationIds=[reservation_id])
            found = got.get("CapacityReservations") or []
            return dict(found[0]) if found else Failed(NOT_FOUND)
        result: dict[str, Any] | Failed = self._call(run)
        return result

    def group_members(self, group_arn: str) -> list[str] | Failed:
        from neuronfleet_runtime.reservations import group_members

        result: list[str] | Failed = self._call(lambda: sorted(group_members(self.client("resource-groups"),
                                                                             [group_arn])))
        return result

    def dlc_account(self) -> str:
        """The AWS Deep Learning Containers registry account of the region (aws-cdk-lib's region facts)."""
        return self._dlc_account(self.region)

    def image(self, reference: str) -> bool | Failed | None:
        """Whether the image exists (ECR BatchGetImage in its registry's region); None: not an ECR image."""
        ref = parse_image(reference)
        if ref.dlc:
            account, region = self._dlc_account(self.region), self.region
        elif ref.ecr_account_region:
            account, region = ref.ecr_account_region
        else:
            return None
        image_id = {"imageTag": ref.tag or "latest"}
        if "@" in reference:
            image_id = {"imageDigest": reference.rsplit("@", 1)[1]}

        def run() -> bool | Failed:
            got = self.client("ecr", region).batch_get_image(registryId=account, repositoryName=ref.repository,
                                                             imageIds=[image_id])
            if got.get("images"):
                return True
            failures = got.get("failures") or [{}]
            code = str(failures[0].get("failureCode") or NOT_FOUND)
            return Failed(code, str(failures[0].get("failureReason") or ""))
        result: bool | Failed = self._call(run)
        return result

    def parameter(self, name: str) -> str | Failed:
        result: str | Failed = self._call(
            lambda: str(self.client("ssm").get_parameter(Name=name)["Parameter"]["Value"]))
        return result

    def ami_state(self, ami_id: str) -> str | Failed:
        def run() -> str | Failed:
            images = self.client("ec2").describe_images(ImageIds=[ami_id]).get("Images") or []
            return str(images[0].get("State", "")) if images else Failed(NOT_FOUND)
        result: str | Failed = self._call(run)
        return result


def _boto3_client(service: str, region: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(service, region_name=region, config=Config(retries={"mode": "standard", "max_attempts": 4}))


def _dlc_account(region: str) -> str:
    """The AWS Deep Learning Containers registry account of ``region``, from aws-cdk-lib's region facts (the kit's
    one home for it: neuronfleet.facts.images); loads aws-cdk-lib (Node.js) only when an image needs it."""
    bin_dir = Path(sys.prefix) / "bin"
    if (bin_dir / "node").exists() and not os.environ.get("PATH", "").startswith(str(bin_dir)):
        os.environ["PATH"] = os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])  # the venv's own Node
    from aws_cdk.region_info import RegionInfo

    return str(RegionInfo.get(region).dlc_repository_account)


def gather(needs: FleetNeeds, account: Account, progress: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """Every answer the checks need, one call per question."""
    progress("reading Service Quotas (ec2, sagemaker) ...")
    answers: dict[str, Any] = {"ec2_quotas": account.service_quotas("ec2"),
                               "sagemaker_quotas": account.service_quotas("sagemaker") if needs.endpoints else []}
    progress("reading instance type offerings per AZ ...")
    answers["offerings"] = account.offerings(n.instance_type for n in needs.instances)
    progress("reading capacity reservations ...")
    groups = {n.resource_group_arn: account.group_members(n.resource_group_arn)
              for n in needs.reservations if n.resource_group_arn}
    ids = {n.reservation_id for n in needs.reservations if n.reservation_id}
    ids |= {rid for members in groups.values() if not isinstance(members, Failed) for rid in members}
    answers["groups"] = groups
    answers["reservations"] = {rid: account.reservation(rid) for rid in sorted(ids)}
    progress("reading images and AMIs ...")
    images = {n.reference: account.image(n.reference) for n in needs.images}
    answers["images"] = {ref: got for ref, got in images.items() if got is not None}
    answers["dlc_account"] = account.dlc_account() if any(parse_image(n.reference).dlc for n in needs.images) \
        else None
    answers["parameters"] = {n.parameter: account.parameter(n.parameter) for n in needs.amis if n.parameter}
    answers["amis"] = {n.ami_id: account.ami_state(n.ami_id) for n in needs.amis if n.ami_id}
    return answers
