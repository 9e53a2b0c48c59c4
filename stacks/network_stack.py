from __future__ import annotations

from typing import Any

from constructs import Construct

from neuronfleet import FleetNetwork, NetworkSettings, StaticAzStack


class NetworkStack(StaticAzStack):
    """The fleet's VPC (FleetNetwork)."""

    def __init__(self, scope: Construct, construct_id: str, *, network: NetworkSettings, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, availability_zones=network.availability_zones, **kwargs)
        self.network = FleetNetwork(self, "Network", settings=network)
