"""The thin boto3 adapter ``neuronfleet verify`` reads the deployed fleet through: describe/list/get calls only, one
method per question, each answer a value or a :class:`~neuronfleet.preflight.checks.Failed` (a call that fails never
raises, so one check cannot stop the others). Built on preflight's :class:`~neuronfleet.preflight.account.Account`
(its clients, its retries, its reading of a failure)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from neuronfleet_contract.tags import FLEET_TAG

from ..preflight.account import Account
from ..preflight.checks import Failed

READ_ONLY_PREFIXES = ("describe_", "list_", "get_", "simulate_principal_policy", "lookup_events")
"""The only kinds of call this adapter makes (a test holds every call of the module to them)."""


class Reads(Account):
    """The fleet's deployed parts, read with the caller's credentials."""

    def __init__(self, region: str, fleet: str, client: Callable[[str, str], Any] | None = None) -> None:
        super().__init__(region, client)
        self.fleet = fleet

    def _fleet_filter(self) -> list[dict[str, Any]]:
        return [{"Name": f"tag:{FLEET_TAG}", "Values": [self.fleet]}]

    def instances(self, extra: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]] | Failed:
        """The fleet's running EC2 instances (tag ``neuronfleet:fleet``), narrowed by ``extra`` filters."""
        def run() -> list[dict[str, Any]]:
            pages = self.client("ec2").get_paginator("describe_instances").paginate(Filters=[
                *self._fleet_filter(), {"Name": "instance-state-name", "Values": ["running"]}, *extra])
            return [i for page in pages for r in page.get("Reservations", []) for i in r.get("Instances", [])]
        result: list[dict[str, Any]] | Failed = self._call(run)
        return result

    def compute_environments(self) -> list[dict[str, Any]] | Failed:
        """The account's AWS Batch compute environments that carry the fleet's tag."""
        def run() -> list[dict[str, Any]]:
            pages = self.client("batch").get_paginator("describe_compute_environments").paginate()
            return [e for page in pages for e in page.get("computeEnvironments", [])
                    if (e.get("tags") or {}).get(FLEET_TAG) == self.fleet]
        result: list[dict[str, Any]] | Failed = self._call(run)
        return result

    def metrics(self, namespace: str, metric: str) -> list[dict[str, Any]] | Failed:
        """CloudWatch's series of ``metric`` in ``namespace`` (ListMetrics: those with a point in the last 2 weeks)."""
        def run() -> list[dict[str, Any]]:
            pages = self.client("cloudwatch").get_paginator("list_metrics").paginate(
                Namespace=namespace, MetricName=metric)
            return [m for page in pages for m in page.get("Metrics", [])]
        result: list[dict[str, Any]] | Failed = self._call(run)
        return result

    def console_output(self, instance_id: str) -> str | Failed:
        """An instance's latest console output as text (EC2 answers it base64-encoded; the AWS CLI decodes it)."""
        def run() -> str:
            answer = self.client("ec2").get_console_output(InstanceId=instance_id, Latest=True)
            return decode_console(answer.get("Output") or "")
        result: str | Failed = self._call(run)
        return result


def decode_console(output: str) -> str:
    """EC2's ``Output`` member (base64 of the console's bytes) as text; a value that is not base64 (a stand-in that
    answers plain text) is taken as it is."""
    try:
        return base64.b64decode(output, validate=True).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return output
