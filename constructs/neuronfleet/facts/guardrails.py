"""SageMaker's deployment guardrails as data (``data/deployment_guardrails.json``, each bound with its source): what a
cutover's DeploymentConfig may ask, and what SageMaker refuses or silently ignores. No aws-cdk-lib import."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "deployment_guardrails.json"


@dataclass(frozen=True)
class Guardrails:
    traffic_routing_types: tuple[str, ...]
    capacity_size_types: tuple[str, ...]
    wait_interval_s: tuple[int, int]
    """TrafficRoutingConfig / RollingUpdatePolicy WaitIntervalInSeconds (the baking period of each step)."""
    termination_wait_s: tuple[int, int]
    """BlueGreenUpdatePolicy.TerminationWaitInSeconds (the final baking period before the old fleet goes)."""
    max_execution_timeout_s: tuple[int, int]
    max_rollback_alarms: int
    canary_max_percent: int
    linear_step_percent: tuple[int, int]
    rolling_batch_percent: tuple[int, int]
    rolling_excluded: tuple[str, ...]
    guardrails_excluded: tuple[str, ...]
    sources: dict[str, str]
    read: str
    raw: dict[str, Any]


@cache
def guardrails() -> Guardrails:
    d = json.loads(DATA.read_text())
    pair = lambda k: (int(d[k][0]), int(d[k][1]))  # noqa: E731
    return Guardrails(
        traffic_routing_types=tuple(d["traffic_routing_types"]), capacity_size_types=tuple(d["capacity_size_types"]),
        wait_interval_s=pair("wait_interval_s"), termination_wait_s=pair("termination_wait_s"),
        max_execution_timeout_s=pair("max_execution_timeout_s"), max_rollback_alarms=int(d["max_rollback_alarms"]),
        canary_max_percent=int(d["canary_max_percent"]), linear_step_percent=pair("linear_step_percent"),
        rolling_batch_percent=pair("rolling_batch_percent"), rolling_excluded=tuple(d["rolling_excluded"]),
        guardrails_excluded=tuple(d["guardrails_excluded"]), sources=dict(d["sources"]), read=d["read"], raw=d)
