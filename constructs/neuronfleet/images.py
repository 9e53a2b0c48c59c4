"""AWS Deep Learning Container images: the registry account comes from CDK's regional facts."""

from __future__ import annotations

from aws_cdk import Aws, Stack
from aws_cdk.region_info import FactName
from constructs import IConstruct


def dlc_account(scope: IConstruct) -> str:
    """The DLC registry account of the stack's region (a CloudFormation mapping when the region is a token).

    CDK's region-info facts (``FactName.DLC_REPOSITORY_ACCOUNT``) hold it per region: 763104351884 in most
    commercial regions, others in opt-in regions and China.
    """
    return Stack.of(scope).regional_fact(FactName.DLC_REPOSITORY_ACCOUNT)


def dlc_image(scope: IConstruct, repo_tag: str) -> str:
    """``repository:tag`` of a Deep Learning Container as a full ECR URI; a full URI is returned as given."""
    if "/" in repo_tag:
        return repo_tag
    return f"{dlc_account(scope)}.dkr.ecr.{Aws.REGION}.{Aws.URL_SUFFIX}/{repo_tag}"


def dlc_repository_arn(scope: IConstruct, repository: str) -> str:
    return f"arn:{Aws.PARTITION}:ecr:{Aws.REGION}:{dlc_account(scope)}:repository/{repository}"
