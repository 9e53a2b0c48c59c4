from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Stack
from constructs import Construct


class FleetStack(Stack):
    """A stack whose AZs come from the fleet file, not from a context lookup.

    An environment-specific stack asks AWS for its AZs (``availability-zones`` context provider) as soon
    as a VPC names AZs; answering from the fleet file keeps synth offline and credential-free.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, availability_zones: Sequence[str], **kwargs: Any
    ) -> None:
        self._fleet_azs = list(availability_zones)
        super().__init__(scope, construct_id, **kwargs)

    @property
    def availability_zones(self) -> list[str]:
        return list(self._fleet_azs)
