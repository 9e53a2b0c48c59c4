from __future__ import annotations

from typing import Any

from constructs import Construct

from neuronfleet import FleetNetwork
from neuronfleet.config import NetworkConfig
from neuronfleet.network import RETENTION_BY_DAYS

from .base import FleetStack


class NetworkStack(FleetStack):
    """The fleet's VPC (FleetNetwork)."""

    def __init__(self, scope: Construct, construct_id: str, *, network: NetworkConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, availability_zones=network.availability_zones, **kwargs)
        self.network = FleetNetwork(
            self,
            "Network",
            availability_zones=network.availability_zones,
            training_az=network.training_az,
            cidr=network.cidr,
            nat_gateways=network.nat_gateways,
            interface_endpoints=network.interface_endpoints,
            flow_logs_retention=RETENTION_BY_DAYS[network.flow_logs_retention_days],
        )
