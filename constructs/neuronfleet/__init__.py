"""neuronfleet: AWS CDK constructs that move ML work from NVIDIA GPUs to AWS Trainium and Inferentia.

Every construct, its settings and the fleet-file loader import from here. The catalog, the settings and the
fleet-file schema import without aws-cdk-lib (and so without starting Node.js); the constructs load on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .catalog import CATALOG, AcceleratorFamily, InstanceCatalog, InstanceSpec, Price, UnknownInstanceType
from .config import Fleet, FleetConfigError, load_fleet, parse_fleet
from .problems import InvalidSettings, Problem
from .settings import (
    AmiSettings,
    BudgetThreshold,
    Capacity,
    CostMonitorSettings,
    EndpointAlarms,
    EndpointSettings,
    GpuPoolSettings,
    GpuVariant,
    NetworkSettings,
    ScheduledScaling,
    TrainiumClusterSettings,
)

if TYPE_CHECKING:
    from .alerts import FleetAlerts
    from .capacity import CapacityAlerts
    from .cost import CostMonitors
    from .cur import CurAnalytics, CurExport
    from .failover import EndpointFailover
    from .fallback import GpuPool
    from .functions import FleetFunction
    from .inference import NeuronEndpoint
    from .network import FleetNetwork
    from .stack import StaticAzStack
    from .tagging import FAMILY_TAG, FLEET_TAG, PHASE_TAG, tag_family, tag_fleet
    from .training import TrainiumCluster

_LAZY = {
    "FleetAlerts": ".alerts", "CostMonitors": ".cost", "CapacityAlerts": ".capacity", "EndpointFailover": ".failover",
    "CurAnalytics": ".cur", "CurExport": ".cur",
    "GpuPool": ".fallback", "FleetFunction": ".functions", "NeuronEndpoint": ".inference",
    "FleetNetwork": ".network", "StaticAzStack": ".stack", "TrainiumCluster": ".training",
    "FAMILY_TAG": ".tagging", "FLEET_TAG": ".tagging", "PHASE_TAG": ".tagging", "tag_family": ".tagging",
    "tag_fleet": ".tagging",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CATALOG",
    "FAMILY_TAG",
    "FLEET_TAG",
    "PHASE_TAG",
    "AcceleratorFamily",
    "AmiSettings",
    "BudgetThreshold",
    "Capacity",
    "CapacityAlerts",
    "CostMonitorSettings",
    "CostMonitors",
    "CurAnalytics",
    "CurExport",
    "EndpointAlarms",
    "EndpointFailover",
    "EndpointSettings",
    "Fleet",
    "FleetAlerts",
    "FleetConfigError",
    "FleetFunction",
    "FleetNetwork",
    "GpuPool",
    "GpuPoolSettings",
    "GpuVariant",
    "InstanceCatalog",
    "InstanceSpec",
    "InvalidSettings",
    "NetworkSettings",
    "NeuronEndpoint",
    "Price",
    "Problem",
    "ScheduledScaling",
    "StaticAzStack",
    "TrainiumCluster",
    "TrainiumClusterSettings",
    "UnknownInstanceType",
    "load_fleet",
    "parse_fleet",
    "tag_family",
    "tag_fleet",
]
__version__ = "0.1.0"
