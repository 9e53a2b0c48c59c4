"""neuronfleet: AWS CDK constructs that move ML work from NVIDIA GPUs to AWS Trainium and Inferentia."""

from .catalog import CATALOG, AcceleratorFamily, InstanceCatalog, InstanceSpec, Price, UnknownInstanceType
from .config import Fleet, FleetConfigError, Problem, load_fleet, parse_fleet
from .network import FleetNetwork
from .tagging import FAMILY_TAG, FLEET_TAG, PHASE_TAG, tag_family, tag_fleet

__all__ = [
    "CATALOG",
    "FAMILY_TAG",
    "FLEET_TAG",
    "PHASE_TAG",
    "AcceleratorFamily",
    "Fleet",
    "FleetConfigError",
    "FleetNetwork",
    "InstanceCatalog",
    "InstanceSpec",
    "Price",
    "Problem",
    "UnknownInstanceType",
    "load_fleet",
    "parse_fleet",
    "tag_family",
    "tag_fleet",
]
__version__ = "0.1.0"
