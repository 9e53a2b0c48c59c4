"""CloudFormation pseudo parameters (``AWS::Partition``, ...), read from aws-cdk-lib once per process.

``aws_cdk.Aws.PARTITION`` and its siblings are static properties: each access is a round trip to the jsii
kernel (Node.js) that returns the same token string. A fleet of a hundred endpoints reads them thousands of
times, so the kit reads each once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from aws_cdk import Aws


@dataclass(frozen=True)
class Pseudo:
    partition: str
    region: str
    account_id: str
    url_suffix: str


@cache
def pseudo() -> Pseudo:
    """The pseudo-parameter tokens (``${Token[AWS.Partition...]}`` strings, resolved by CloudFormation)."""
    return Pseudo(partition=Aws.PARTITION, region=Aws.REGION, account_id=Aws.ACCOUNT_ID, url_suffix=Aws.URL_SUFFIX)
