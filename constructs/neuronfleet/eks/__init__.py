"""Trainium and Inferentia on Amazon EKS: :class:`NeuronEksCluster` (loads aws-cdk-lib on first use), the pins and
labels it works from (``pins``, ``labels``) and the Kubernetes objects it writes (``manifests``), which import
without aws-cdk-lib."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cluster import NeuronEksCluster


def __getattr__(name: str) -> Any:
    if name == "NeuronEksCluster":
        return import_module(".cluster", __name__).NeuronEksCluster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["NeuronEksCluster"]
