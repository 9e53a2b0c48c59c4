"""The kit's own health metrics, per fleet: the dimensions its functions publish them under and their constructs'
metrics (alarms, dashboards) filter on, and the one variable that names the fleet.

The failover (``FailoverErrors``, ``MalformedEvents``), the capacity alerts and the EKS node-group alerts
(``CapacityAnnouncements``, ``MalformedEvents``), the spend collector (``CostExplorerRequests``, ``BadRows``,
``RowsWritten``, ``RowsRetracted``, ``UnconfirmedSpend``, ``UnpublishableSpend``) and the waste detector
(``MalformedEvents``) count them with Powertools' embedded metric format (namespaces in
:mod:`neuronfleet_contract.namespaces`). Powertools adds ``service`` (the function's Powertools service) to every
metric of a ``Metrics(namespace=..., service=...)`` when it serialises them (aws-lambda-powertools 3.37.0,
``AmazonCloudWatchEMFProvider.serialize_metric_set``); the handler adds ``Fleet`` each invocation. So a function
given a fleet publishes ``{"service": <service>, "Fleet": <fleet>}``: two fleets in one account (dev and prod)
publish two metrics, and each fleet's alarms see only its own.

A function given no fleet (``FLEET`` unset: a construct used outside the reference app without ``fleet=``)
publishes ``{"service": <service>}`` alone, as the kit did before metrics were per fleet, and its construct's
metrics filter on exactly that: such functions of one account share one metric. Give every construct its fleet to
keep them apart.

Pure: no boto3, no Powertools, no CDK.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

from . import environment

FLEET_DIMENSION = "Fleet"
"""The dimension that names the fleet (as in the spend, unit-cost and judge metrics: neuronfleet_contract.namespaces)."""
SERVICE_DIMENSION = "service"
"""The dimension Powertools adds to every metric of a ``Metrics`` given a service."""
FLEET_VARIABLE = "FLEET"
"""The function's environment variable naming its fleet (the same variable the cost functions read)."""


def health_dimensions(service: str, fleet: str = "") -> dict[str, str]:
    """The dimensions of a function's health metrics (name -> value): ``service`` and, when it has one, ``Fleet``.
    One home for the handler that publishes and the construct that alarms."""
    return {SERVICE_DIMENSION: service} | ({FLEET_DIMENSION: fleet} if fleet else {})


@dataclass(frozen=True)
class Health:
    """What a function needs to publish its health metrics per fleet: its fleet's name ("" for none)."""

    fleet: str = ""
    """The fleet (``FLEET``; unset: none, the metrics carry ``service`` alone)."""

    def to_environment(self) -> dict[str, str]:
        """``{"FLEET": fleet}``, or nothing without a fleet."""
        return {FLEET_VARIABLE: str(self.fleet)} if self.fleet else {}

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Self:
        """The fleet in ``env`` (the process environment by default); InvalidEnvironment if ``FLEET`` is set blank."""
        source = os.environ if env is None else env
        if FLEET_VARIABLE not in source:
            return cls()
        return cls(fleet=environment.Variables(source).text(FLEET_VARIABLE, allowed="the fleet's name"))
