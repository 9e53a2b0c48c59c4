"""Settings objects: every rule and every default of the constructs, in one place.

The constructs take them (``settings=``), the fleet file parses YAML into them. No aws-cdk-lib import here.
"""

from ._base import Name, Settings
from .cost import BudgetThreshold, CostMonitorSettings
from .cutover import CutoverSettings
from .fallback import GPU_ECS_AMI_PARAMETER, GpuPoolSettings
from .inference import AsyncInferenceSettings, EndpointAlarms, EndpointSettings, GpuVariant, ScheduledScaling
from .judge import JudgeTolerances, PilotJudgeSettings
from .network import NetworkSettings
from .training import AmiSettings, Capacity, TrainiumClusterSettings, offered_in, reservations
from .transform import BatchJobSettings

__all__ = [
    "GPU_ECS_AMI_PARAMETER",
    "AmiSettings",
    "AsyncInferenceSettings",
    "BatchJobSettings",
    "BudgetThreshold",
    "Capacity",
    "CostMonitorSettings",
    "CutoverSettings",
    "EndpointAlarms",
    "EndpointSettings",
    "GpuPoolSettings",
    "GpuVariant",
    "JudgeTolerances",
    "Name",
    "NetworkSettings",
    "PilotJudgeSettings",
    "ScheduledScaling",
    "Settings",
    "TrainiumClusterSettings",
    "offered_in",
    "reservations",
]
