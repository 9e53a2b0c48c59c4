"""neuronfleet: AWS CDK constructs that move ML work from NVIDIA GPUs to AWS Trainium and Inferentia.

Every construct, its settings and the fleet-file loader import from here. The catalog, the settings and the
fleet-file schema import without aws-cdk-lib (and so without starting Node.js); the constructs load on first use.

Only the error classes load with the package (``Problem``, ``InvalidSettings``, ``FleetConfigError``: no pydantic).
Every other name loads on first use (PEP 562 ``__getattr__`` over :data:`_LAZY`): the settings and the fleet-file
schema build about 30 pydantic models, which a command that never reads a fleet file (``neuronfleet --help``,
``judge prompts``, ``report``) should not pay for, and the constructs import aws-cdk-lib. ``from neuronfleet import
X``, ``neuronfleet.X`` and ``from neuronfleet import *`` work as before; ``dir(neuronfleet)`` lists every name.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .core.problems import FleetConfigError, InvalidSettings, Problem

if TYPE_CHECKING:
    from .alerts.topic import FleetAlerts
    from .capacity.alerts import CapacityAlerts
    from .capacity.lifecycle import CapacityLifecycle
    from .core.functions import FleetFunction
    from .core.limits import CloudFormationLimits
    from .core.stack import StaticAzStack
    from .core.tagging import FAMILY_TAG, FLEET_TAG, PHASE_TAG, tag_family, tag_fleet
    from .cost.cur import CurAnalytics, CurExport
    from .cost.monitors import CostMonitors
    from .eks.cluster import NeuronEksCluster
    from .facts.catalog import CATALOG, AcceleratorFamily, InstanceCatalog, InstanceSpec, Price, UnknownInstanceType
    from .fallback.gpu_pool import GpuPool
    from .fleetfile.schema import Fleet, load_fleet, parse_fleet
    from .inference.batch_transform import NeuronBatchTransform
    from .inference.endpoint import NeuronEndpoint
    from .inference.failover import EndpointFailover
    from .judge.pilot_judge import PilotJudge
    from .network.fleet_network import FleetNetwork
    from .settings import (
        AmiSettings,
        AsyncInferenceSettings,
        BatchJobSettings,
        BudgetThreshold,
        Capacity,
        CostMonitorSettings,
        CutoverSettings,
        EndpointAlarms,
        EndpointSettings,
        GpuPoolSettings,
        GpuVariant,
        JudgeTolerances,
        NetworkSettings,
        PilotJudgeSettings,
        ScheduledScaling,
        TrainiumClusterSettings,
    )
    from .sharing.pool import SharingPool
    from .training.cluster import TrainiumCluster

_LAZY = {
    # the catalog (JSON data), the fleet-file loader and the settings (pydantic models): no aws-cdk-lib
    **dict.fromkeys(["CATALOG", "AcceleratorFamily", "InstanceCatalog", "InstanceSpec", "Price",
                     "UnknownInstanceType"], ".facts.catalog"),
    **dict.fromkeys(["Fleet", "load_fleet", "parse_fleet"], ".fleetfile.schema"),
    **dict.fromkeys(["AmiSettings", "AsyncInferenceSettings", "BatchJobSettings", "BudgetThreshold", "Capacity",
                     "CostMonitorSettings", "CutoverSettings", "EndpointAlarms", "EndpointSettings", "GpuPoolSettings",
                     "GpuVariant", "JudgeTolerances", "NetworkSettings", "PilotJudgeSettings", "ScheduledScaling",
                     "TrainiumClusterSettings"], ".settings"),
    # the constructs: aws-cdk-lib
    "FleetAlerts": ".alerts.topic", "CostMonitors": ".cost.monitors", "CapacityAlerts": ".capacity.alerts",
    "CapacityLifecycle": ".capacity.lifecycle",
    "CloudFormationLimits": ".core.limits",
    "EndpointFailover": ".inference.failover", "CurAnalytics": ".cost.cur", "CurExport": ".cost.cur",
    "GpuPool": ".fallback.gpu_pool", "FleetFunction": ".core.functions", "NeuronEndpoint": ".inference.endpoint",
    "NeuronBatchTransform": ".inference.batch_transform",
    "FleetNetwork": ".network.fleet_network", "StaticAzStack": ".core.stack", "TrainiumCluster": ".training.cluster",
    "NeuronEksCluster": ".eks.cluster", "PilotJudge": ".judge.pilot_judge", "SharingPool": ".sharing.pool",
    "FAMILY_TAG": ".core.tagging", "FLEET_TAG": ".core.tagging", "PHASE_TAG": ".core.tagging",
    "tag_family": ".core.tagging", "tag_fleet": ".core.tagging",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value  # found once: later look-ups do not come here
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "CATALOG",
    "FAMILY_TAG",
    "FLEET_TAG",
    "PHASE_TAG",
    "AcceleratorFamily",
    "AmiSettings",
    "AsyncInferenceSettings",
    "BatchJobSettings",
    "BudgetThreshold",
    "Capacity",
    "CapacityAlerts",
    "CapacityLifecycle",
    "CloudFormationLimits",
    "CostMonitorSettings",
    "CostMonitors",
    "CurAnalytics",
    "CurExport",
    "CutoverSettings",
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
    "JudgeTolerances",
    "NetworkSettings",
    "NeuronBatchTransform",
    "NeuronEksCluster",
    "NeuronEndpoint",
    "PilotJudge",
    "PilotJudgeSettings",
    "Price",
    "Problem",
    "ScheduledScaling",
    "SharingPool",
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
