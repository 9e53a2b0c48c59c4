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

from dataclasses import dataclass, field

from . import environment
from .environment import variable

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
class HealthConfig(environment.Configured):
    """What a function needs to publish its health metrics per fleet: its fleet's name ("" for none)."""

    fleet: str = field(default="", metadata=variable(
        FLEET_VARIABLE, allowed="the fleet's name", written=lambda h: bool(h.fleet)))
    """The fleet (``FLEET``; unset: none, the metrics carry ``service`` alone)."""
