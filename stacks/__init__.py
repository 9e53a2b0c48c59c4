"""The reference app's stacks: thin compositions of neuronfleet constructs."""

from .fleet import build_fleet
from .network_stack import NetworkStack

__all__ = ["NetworkStack", "build_fleet"]
