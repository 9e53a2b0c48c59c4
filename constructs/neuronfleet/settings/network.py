"""Settings of :class:`neuronfleet.FleetNetwork`."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import ClassVar

from pydantic import Field

from ..core import rules
from ..core.problems import Problem
from ..facts.catalog import LOG_RETENTION_DAYS
from ._base import Bool, NonNegativeInt, Settings


class NetworkSettings(Settings):
    """The VPC: private compute subnets in every AZ. A training cluster launches in the subnet of its capacity's AZ
    (Capacity Blocks and ODCRs are single-AZ, and a large fleet buys them in several AZs), or in ``training_az``'s
    when its capacity names no AZ."""

    what: ClassVar[str] = "network"
    availability_zones: tuple[str, ...] = Field(min_length=2, max_length=6)
    training_az: str
    cidr: str = "10.40.0.0/16"
    nat_gateways: NonNegativeInt = 1
    """0: no NAT, no public subnets (isolated compute subnets; nothing reaches the internet)."""
    interface_endpoints: Bool = True
    flow_logs_retention_days: NonNegativeInt = 30

    def _problems(self) -> Iterator[Problem]:
        try:
            cidr = ipaddress.IPv4Network(self.cidr)
            if not 16 <= cidr.prefixlen <= 20:
                yield Problem("cidr", self.cidr, "an IPv4 CIDR from /16 to /20")
        except ValueError:
            yield Problem("cidr", self.cidr, "an IPv4 CIDR such as 10.40.0.0/16")
        if len(set(self.availability_zones)) != len(self.availability_zones):
            yield Problem("availability_zones", list(self.availability_zones), "distinct AZs")
        if self.training_az not in self.availability_zones:
            yield Problem("training_az", self.training_az,
                          "one of availability_zones: " + ", ".join(self.availability_zones))
        if self.nat_gateways > len(self.availability_zones):
            yield Problem("nat_gateways", self.nat_gateways,
                          f"0 to {len(self.availability_zones)} (one per AZ at most)")
        if self.flow_logs_retention_days not in LOG_RETENTION_DAYS:
            yield Problem("flow_logs_retention_days", self.flow_logs_retention_days,
                          "a CloudWatch Logs retention: " + ", ".join(map(str, LOG_RETENTION_DAYS)))

    def capacity_az_problems(self, availability_zone: str | None) -> Iterator[Problem]:
        """A training capacity's AZ (``capacity.availability_zone``) outside the network: its cluster would have no
        subnet there (the one rule for the construct API and the fleet file)."""
        if availability_zone and availability_zone not in self.availability_zones:
            yield Problem("capacity.availability_zone", availability_zone,
                          f"one of network.availability_zones ({', '.join(self.availability_zones)}): the "
                          "cluster's training subnet is the network's subnet in the reservation's AZ")

    def region_problems(self, region: str) -> Iterator[Problem]:
        """AZs that are not AZs of ``region`` (AWS's own zone list)."""
        for i, az in enumerate(self.availability_zones):
            try:
                rules.availability_zone(az, region)
            except ValueError as exc:
                yield Problem(f"availability_zones[{i}]", az, str(exc))

    @property
    def reaches_aws_apis(self) -> bool:
        """Whether AWS Batch container instances in the compute subnets can reach ECS, ECR, CloudWatch Logs and
        STS: through a NAT gateway, or through the interface endpoints
        (``neuronfleet.network.fleet_network.INTERFACE_ENDPOINTS``; the S3 gateway endpoint for image layers is always
        there)."""
        return self.has_egress or self.interface_endpoints

    def aws_api_access_problems(self, what: str) -> Iterator[Problem]:
        """The problem of using these subnets for ``what`` (a Batch cluster or pool) when they reach no AWS API."""
        if not self.reaches_aws_apis:
            yield Problem("interface_endpoints", self.interface_endpoints,
                          f"true when nat_gateways is 0 and the fleet has {what}: in isolated subnets the ECS agent of "
                          "AWS Batch instances reaches ECS (ecs, ecs-agent, ecs-telemetry), ECR and CloudWatch Logs "
                          "only through interface endpoints; without them instances bill while jobs stay RUNNABLE. "
                          "Or give the network a NAT gateway (nat_gateways: 1)")

    @property
    def has_egress(self) -> bool:
        """Whether the compute subnets reach the internet (a model hub, say)."""
        return self.nat_gateways > 0
