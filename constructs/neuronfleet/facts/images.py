"""AWS Deep Learning Container images: the registry account comes from CDK's regional facts."""

from __future__ import annotations

from functools import cache
from weakref import WeakKeyDictionary

from aws_cdk import Stack
from aws_cdk.region_info import FactName
from constructs import IConstruct

from ..core.lookups import stack_of
from ..core.pseudo import pseudo
from .neuron import ImageRef

_ACCOUNTS: WeakKeyDictionary[Stack, str] = WeakKeyDictionary()
"""Stack -> its DLC account (a string or a mapping token): one jsii round trip per stack, not per image."""


@cache
def _fact_name() -> str:
    return FactName.DLC_REPOSITORY_ACCOUNT


def dlc_account(scope: IConstruct) -> str:
    """The DLC registry account of the stack's region (a CloudFormation mapping when the region is a token).

    CDK's region-info facts (``FactName.DLC_REPOSITORY_ACCOUNT``) hold it per region: 763104351884 in most
    commercial regions, others in opt-in regions and China.
    """
    stack = stack_of(scope)
    account = _ACCOUNTS.get(stack)
    if account is None:
        account = _ACCOUNTS[stack] = stack.regional_fact(_fact_name())
    return account


def dlc_image(scope: IConstruct, repo_tag: str) -> str:
    """``repository:tag`` of a Deep Learning Container as a full ECR URI; a full URI is returned as given."""
    if "/" in repo_tag:
        return repo_tag
    return f"{dlc_account(scope)}.dkr.ecr.{pseudo().region}.{pseudo().url_suffix}/{repo_tag}"


def dlc_repository_arn(scope: IConstruct, repository: str) -> str:
    return f"arn:{pseudo().partition}:ecr:{pseudo().region}:{dlc_account(scope)}:repository/{repository}"


def ecr_repository_arn(scope: IConstruct, ref: ImageRef) -> str | None:
    """The ECR repository an image reference pulls from (a DLC's, or a private registry's); None for ECR Public and
    other registries (they need no ECR permission)."""
    if ref.dlc:
        return dlc_repository_arn(scope, ref.repository)
    if ref.ecr_account_region:
        account, region = ref.ecr_account_region
        return f"arn:{pseudo().partition}:ecr:{region}:{account}:repository/{ref.repository}"
    return None
