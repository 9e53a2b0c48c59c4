"""What the capacity-alert function is told: built by CapacityAlerts, read once per container by the handler.

Pure: no boto3, no Powertools, no CDK. ``to_environment`` only encodes (its values may be CDK tokens);
``from_environment`` checks.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Self

from neuronfleet_contract import environment

from .logic import GpuPool, GpuType

_POOL_ALLOWED = ('a JSON object {"queue_arn": str, "max_vcpus": int, "cuda_only_workloads": [str, ...], "types": '
                 '[{"instance_type": str, "gpus": int, "gpu_name": str, "efa": int, "vcpus": int}, ...]} with at '
                 "least one type")


@dataclass(frozen=True)
class CapacityAlertSettings:
    pool: GpuPool
    """What the GPU fallback pool can take (``GPU_POOL``, JSON: GpuPool.describe() of the construct library)."""
    topic_arn: str
    """The fleet's SNS topic (``ALERTS_TOPIC_ARN``)."""
    ledger_table: str
    """What has been announced (``ANNOUNCEMENTS_TABLE``, DynamoDB; see lambdas/neuronfleet_runtime/announcements.py)."""
    reservation_ids: tuple[str, ...] = ()
    """The fleet's capacity reservations by id (``FLEET_RESERVATIONS``, JSON list)."""
    resource_group_arns: tuple[str, ...] = ()
    """Capacity-reservation resource groups whose members are the fleet's (``FLEET_RESERVATION_GROUPS``: their
    shared ARN prefix once, then the names, so that a fleet of many clusters fits Lambda's 4 KB)."""
    ultraserver_types: tuple[str, ...] = ()
    """Instance types sold as UltraServer blocks (``ULTRASERVER_TYPES``): their instances stop earlier."""

    def to_environment(self, *, to_json: Callable[[Any], str] = json.dumps) -> dict[str, str]:
        """The function's environment. Pass ``to_json=Stack.of(scope).to_json_string`` when values are tokens."""
        pool = self.pool
        return {"GPU_POOL": to_json({
                    "queue_arn": pool.queue_arn, "max_vcpus": pool.max_vcpus,
                    "cuda_only_workloads": list(pool.cuda_only_workloads),
                    "types": [{"instance_type": t.instance_type, "gpus": t.gpus, "gpu_name": t.gpu_name, "efa": t.efa,
                               "vcpus": t.vcpus} for t in pool.types]}),
                "ALERTS_TOPIC_ARN": str(self.topic_arn), "ANNOUNCEMENTS_TABLE": str(self.ledger_table),
                "FLEET_RESERVATIONS": to_json(list(self.reservation_ids)),
                "FLEET_RESERVATION_GROUPS": to_json(environment.shared_prefix(list(self.resource_group_arns))),
                "ULTRASERVER_TYPES": to_json(list(self.ultraserver_types))}

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Self:
        """The settings in ``env`` (the process environment by default); InvalidEnvironment if one is wrong."""
        read = environment.Variables(os.environ if env is None else env)
        listed = "a JSON list of non-blank strings"
        return cls(pool=read.json("GPU_POOL", gpu_pool, allowed=_POOL_ALLOWED),
                   topic_arn=read.text("ALERTS_TOPIC_ARN", allowed="the ARN of the fleet's SNS topic"),
                   ledger_table=read.text("ANNOUNCEMENTS_TABLE", allowed="the name of the announcements table"),
                   reservation_ids=read.json("FLEET_RESERVATIONS", environment.strings, allowed=listed, default=()),
                   resource_group_arns=read.json("FLEET_RESERVATION_GROUPS", environment.prefixed_strings,
                                                 allowed=listed + ', or {"prefix": "arn:...:group/", "names": [...]}',
                                                 default=()),
                   ultraserver_types=read.json("ULTRASERVER_TYPES", environment.strings, allowed=listed, default=()))


def gpu_pool(doc: Mapping[str, Any]) -> GpuPool:
    """The pool a ``GPU_POOL`` document describes; ValueError, TypeError or KeyError when it is malformed."""
    types = tuple(GpuType(instance_type=_text(t["instance_type"]), gpus=_whole(t["gpus"]), gpu_name=_text(t["gpu_name"]),
                          efa=_whole(t["efa"]), vcpus=_whole(t["vcpus"], minimum=1)) for t in doc["types"])
    if not types:
        raise ValueError("types is empty")
    return GpuPool(queue_arn=_text(doc["queue_arn"]), types=types, max_vcpus=_whole(doc["max_vcpus"], minimum=1),
                   cuda_only_workloads=environment.strings(doc.get("cuda_only_workloads", [])))


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{value!r} is not a non-blank string")
    return value


def _whole(value: Any, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{value!r} is not a whole number of at least {minimum}")
    return value
