"""StaticAzStack: a stack whose AZs are given, so that synth needs no AWS account and no network."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Stack
from constructs import Construct


class StaticAzStack(Stack):
    """A stack whose availability zones are the ones given, not looked up.

    An environment-specific stack asks AWS for its AZs (the ``availability-zones`` context provider) as soon
    as a VPC names AZs; answering from the caller's list keeps synth offline and credential-free.

    Example::

        stack = StaticAzStack(app, "Net", availability_zones=["us-east-2a", "us-east-2b"],
                              env=Environment(account="111111111111", region="us-east-2"))
    """

    def __init__(self, scope: Construct | None, construct_id: str | None, *, availability_zones: Sequence[str],
                 **kwargs: Any) -> None:
        self._static_azs = list(availability_zones)
        super().__init__(scope, construct_id, **kwargs)

    @property
    def availability_zones(self) -> list[str]:
        return list(self._static_azs)
