"""neuronfleet: AWS CDK constructs that move ML work from NVIDIA GPUs to AWS Trainium and Inferentia.

The catalog and the fleet-file schema import without aws-cdk-lib (and so without starting Node.js);
the constructs load on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .catalog import CATALOG, AcceleratorFamily, InstanceCatalog, InstanceSpec, Price, UnknownInstanceType
from .config import Fleet, FleetConfigError, Problem, load_fleet, parse_fleet

if TYPE_CHECKING:
    from .network import FleetNetwork
    from .tagging import FAMILY_TAG, FLEET_TAG, PHASE_TAG, tag_family, tag_fleet

_LAZY = {"FleetNetwork": ".network", "FAMILY_TAG": ".tagging", "FLEET_TAG": ".tagging", "PHASE_TAG": ".tagging",
         "tag_family": ".tagging", "tag_fleet": ".tagging"}


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
