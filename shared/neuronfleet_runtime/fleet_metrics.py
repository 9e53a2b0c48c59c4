"""The kit's health metrics in a handler: the ``Fleet`` dimension of its Powertools metrics, set each invocation
(neuronfleet_contract.health says what is published with and without a fleet)."""

from __future__ import annotations

from typing import Any

from neuronfleet_contract.health import FLEET_DIMENSION, HealthConfig


def per_fleet(metrics: Any) -> str:
    """Put the function's fleet (``FLEET``) on every metric ``metrics`` (a Powertools ``Metrics``) flushes this
    invocation; without a fleet, make sure none is (Powertools keeps its dimensions in class-wide state, cleared only
    by a flush that had metrics). Call it first in the handler, inside ``@metrics.log_metrics``, before any metric is
    added. Returns the fleet ("" for none). Reading one variable: no cache, so a changed environment is seen."""
    fleet = HealthConfig.from_environment().fleet
    if fleet:
        metrics.add_dimension(name=FLEET_DIMENSION, value=fleet)
    else:
        metrics.dimension_set.pop(FLEET_DIMENSION, None)
    return fleet
