#!/usr/bin/env python3
"""neuronfleet NeuronCore utilisation publisher (Python standard library only; runs on every Neuron host).

    /opt/aws/neuron/bin/neuron-monitor | python3 /opt/neuronfleet/utilisation.py \
        --namespace NeuronFleet/Neuron --region us-east-2 --cores 64

Reads neuron-monitor's JSON reports (one complete JSON document per line on stdin), averages NeuronCore
utilisation over each ``--period`` (60 s) and publishes one datapoint per period to CloudWatch with
``PutMetricData``, signed with Signature Version 4 by the instance role's credentials from IMDSv2: no AWS CLI, no
boto3, no CloudWatch agent (the ECS-optimized Neuron AMI is built on AL2023 minimal and installs none of them; see
docs/cost.md, "NeuronCore utilisation"). The metric is the kit's own, documented in neuronfleet.lambdas.namespaces:

  namespace   NeuronFleet/Neuron (``--namespace``)
  metric      NeuronCoreUtilization, unit Percent, 0-100
  dimensions  InstanceId (the report's ``instance_info.instance_id``); the waste detector scopes it to a fleet
              through the instances' ``neuronfleet:fleet`` tag
  value       the sum of every in-use NeuronCore's utilisation over the host's NeuronCores (the report's
              ``neuron_hardware_info``: devices x cores per device; ``--cores`` when it has none), so idle cores
              count as 0; a report with no Neuron runtime running is 0 % (an idle host), never a gap.

A gap therefore means the publisher or neuron-monitor is not running: the waste detector reports a running
instance with no datapoints as its own signal ("silent"), never as idle or as fine.

The report format (source: Neuron's "Neuron Monitor User Guide", aws-neuron/aws-neuron-sdk
tools/neuron-sys-tools/neuron-monitor-user-guide.rst at 81ce03ae (2026-08-21), "The JSON output format",
"instance_info", "neuron_hardware_info", "neuroncore_counters"; read 2026-11-23; its examples are copied verbatim
in tests/data/neuron_monitor): ``instance_info`` ("always present in the output") names the instance in
``instance_id``; ``neuron_runtime_data[].report.neuroncore_counters.neuroncores_in_use`` maps a NeuronCore index to
``{"neuroncore_utilization": <percent during the captured period>, ...}`` for the cores active when the data was
captured; ``neuron_runtime_data[].error`` and each group's ``error`` carry collection errors. (Neuron 1.x's guide
named the host ``instance_data``; no 2.x report does.)

Sending (CloudWatch's JSON protocol, which botocore's cloudwatch service model lists among its ``protocols``:
``X-Amz-Target: GraniteServiceVersion20100801.PutMetricData``, ``application/x-amz-json-1.0``): a datapoint that
cannot be sent (throttled after the retries, network down, 5xx, no credentials) stays queued and goes with the
next period's request; the queue keeps the newest ``MAX_PENDING`` (60: an hour) and drops older ones with a log
line. Expired or rejected credentials are fetched again from IMDSv2 and the request retried once. The signer and
the IMDSv2 credentials are sigv4.py's (beside this file on the host, so the two travel together).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # neuronfleet.node.utilisation (mypy reads this branch)
    from .sigv4 import Credentials, ImdsCredentials, SendError, signed_headers, urllib_http
else:  # python3 /opt/neuronfleet/utilisation.py: sigv4.py beside it, first on sys.path
    from sigv4 import Credentials, ImdsCredentials, SendError, signed_headers, urllib_http

if TYPE_CHECKING:
    from .sigv4 import Http

METRIC = "NeuronCoreUtilization"
UNIT = "Percent"
SERVICE = "monitoring"
"""CloudWatch's endpoint prefix and SigV4 signing name (botocore cloudwatch service-2.json ``endpointPrefix``)."""
TARGET = "GraniteServiceVersion20100801.PutMetricData"
"""botocore cloudwatch service-2.json: ``targetPrefix`` + operation (JSON protocol, ``jsonVersion`` 1.0)."""
CONTENT_TYPE = "application/x-amz-json-1.0"
MAX_PENDING = 60
"""Datapoints kept while CloudWatch cannot be reached (one a period: an hour); older ones are dropped and logged.
PutMetricData takes up to 1,000 datapoints a request and timestamps up to two weeks old."""
RETRIES = 3


# ------------------------------------------------------------------------------------------- reports


@dataclass(frozen=True)
class Sample:
    instance_id: str
    percent: float
    """Utilisation of the whole host: in-use cores' sum over all cores."""
    errors: tuple[str, ...] = ()


def host_cores(report: Mapping, default: int) -> int:
    """The host's NeuronCores as the report's ``neuron_hardware_info`` states them (devices x cores per device, at
    the current logical NeuronCore configuration); ``default`` when it has none or an error."""
    hw = report.get("neuron_hardware_info") or {}
    devices, per_device = hw.get("neuron_device_count"), hw.get("neuroncore_per_device_count")
    if not hw.get("error") and isinstance(devices, int) and isinstance(per_device, int) and devices * per_device > 0:
        return devices * per_device
    return default


def sample(report: Mapping, cores: int) -> Sample | None:
    """One neuron-monitor report as a host-wide utilisation sample; None when the report names no instance."""
    instance = (report.get("instance_info") or {}).get("instance_id") or ""
    if not instance:
        return None
    cores = host_cores(report, cores)
    total, errors = 0.0, []
    seen: set[tuple[int, str]] = set()
    for i, runtime in enumerate(report.get("neuron_runtime_data") or []):
        if runtime.get("error"):
            errors.append(f"runtime {i}: {runtime['error']}")
        counters = (runtime.get("report") or {}).get("neuroncore_counters") or {}
        if counters.get("error"):
            errors.append(f"runtime {i} neuroncore_counters: {counters['error']}")
        for index, core in (counters.get("neuroncores_in_use") or {}).items():
            value = core.get("neuroncore_utilization") if isinstance(core, dict) else None
            if isinstance(value, (int, float)) and (i, index) not in seen:
                seen.add((i, index))
                total += min(max(float(value), 0.0), 100.0)
    return Sample(instance, min(total / cores, 100.0) if cores > 0 else 0.0, tuple(errors))


def reports(lines: Iterable[str], on_error: Callable[[str], None]) -> Iterator[dict]:
    for n, line in enumerate(lines, start=1):
        line = line.strip()
        if not line:
            continue
        try:
            doc = json.loads(line)
        except ValueError as exc:
            on_error(f"line {n}: not JSON ({exc})")
            continue
        if isinstance(doc, dict):
            yield doc


def datum(instance_id: str, values: list[float], at: float) -> dict:
    """One PutMetricData datum (JSON protocol: the timestamp in epoch seconds, as botocore serialises it)."""
    return {"MetricName": METRIC, "Unit": UNIT, "Value": round(sum(values) / len(values), 3),
            "Timestamp": int(at), "Dimensions": [{"Name": "InstanceId", "Value": instance_id}]}


# ------------------------------------------------------------------------------------- transport


def endpoint(region: str) -> str:
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"https://{SERVICE}.{region}.{suffix}/"


AUTH_ERRORS = ("ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId", "UnrecognizedClientException",
               "InvalidSignatureException", "SignatureDoesNotMatch", "IncompleteSignature")
THROTTLING = ("Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException")


def _error_code(status: int, body: bytes) -> str:
    try:
        raw = json.loads(body or b"{}")
    except ValueError:
        raw = {}
    code = str(raw.get("__type") or raw.get("code") or raw.get("Code") or f"HTTP {status}")
    return code.rsplit("#", 1)[-1]


class CloudWatchSender:
    """PutMetricData over CloudWatch's JSON protocol, signed with SigV4 (standard library only)."""

    def __init__(self, namespace: str, region: str, *, credentials: ImdsCredentials | None = None,
                 http: Http = urllib_http, url: str | None = None, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.namespace, self.region, self.http, self.clock, self.sleep = namespace, region, http, clock, sleep
        self.url = url or endpoint(region)
        self.credentials = credentials or ImdsCredentials(http=http, clock=clock)

    def request(self, data: list[dict], creds: Credentials) -> tuple[dict[str, str], bytes]:
        body = json.dumps({"Namespace": self.namespace, "MetricData": data}).encode()
        headers = {"Content-Type": CONTENT_TYPE, "X-Amz-Target": TARGET, "x-amzn-query-mode": "true"}
        return signed_headers("POST", self.url, headers, body, creds, self.region, SERVICE, self.clock()), body

    def _once(self, data: list[dict], creds: Credentials) -> None:
        headers, body = self.request(data, creds)
        try:
            status, answer = self.http("POST", self.url, headers, body, 30)
        except OSError as exc:
            raise SendError(f"PutMetricData: {exc}", retryable=True) from exc
        if status == 200:
            return
        code = _error_code(status, answer)
        raise SendError(f"PutMetricData: HTTP {status} {code}", auth=code in AUTH_ERRORS or status == 403,
                        retryable=code in THROTTLING or status in (429,) or status >= 500)

    def __call__(self, data: list[dict]) -> None:
        refreshed = False
        creds = self.credentials.get()
        for attempt in range(RETRIES):
            try:
                self._once(data, creds)
                return
            except SendError as exc:
                if exc.auth and not refreshed:
                    creds, refreshed = self.credentials.refresh(), True
                    continue
                if not exc.retryable or attempt == RETRIES - 1:
                    raise
                self.sleep(min(2 ** attempt, 10))
        raise SendError("PutMetricData: credentials refreshed but still rejected", auth=True)


# -------------------------------------------------------------------------------------------- loop


class Publisher:
    """Queues datapoints and sends every queued one with each new period (oldest first); a failed send keeps
    them for the next period, up to ``max_pending``."""

    def __init__(self, send: Callable[[list[dict]], None], on_error: Callable[[str], None],
                 max_pending: int = MAX_PENDING) -> None:
        self.send, self.on_error, self.max_pending = send, on_error, max_pending
        self.pending: list[dict] = []
        self.sent = 0
        self.dropped = 0

    def publish(self, d: dict | None = None) -> None:
        if d is not None:
            self.pending.append(d)
        if len(self.pending) > self.max_pending:
            lost = len(self.pending) - self.max_pending
            self.dropped += lost
            self.pending = self.pending[lost:]
            self.on_error(f"dropped {lost} datapoint(s) older than the last {self.max_pending} unsent")
        if not self.pending:
            return
        try:
            self.send(list(self.pending))
        except (SendError, OSError, ValueError) as exc:
            self.on_error(f"{exc}: {len(self.pending)} datapoint(s) kept for the next period")
            return
        self.sent += len(self.pending)
        self.pending = []


def run(lines: Iterable[str], *, cores: int, period: float, send: Callable[[list[dict]], None],
        clock: Callable[[], float] = time.time, on_error: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
        max_pending: int = MAX_PENDING) -> Publisher:
    """Publish one averaged datapoint per ``period``; returns the publisher (``sent``, ``pending``, ``dropped``)."""
    publisher = Publisher(send, on_error, max_pending)
    window: list[float] = []
    instance, started = "", clock()
    for report in reports(lines, on_error):
        s = sample(report, cores)
        if s is None:
            on_error("report without instance_info.instance_id: skipped")
            continue
        for e in s.errors:
            on_error(e)
        instance = s.instance_id
        window.append(s.percent)
        now = clock()
        if now - started >= period:
            publisher.publish(datum(instance, window, now))
            window, started = [], now
    if window and instance:
        publisher.publish(datum(instance, window, clock()))
    elif publisher.pending:
        publisher.publish()
    return publisher


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="neuron-monitor JSON on stdin -> CloudWatch NeuronCoreUtilization")
    p.add_argument("--namespace", required=True)
    p.add_argument("--region", required=True)
    p.add_argument("--cores", type=int, required=True,
                   help="the host's NeuronCores (logical at its LNC), when a report has no neuron_hardware_info")
    p.add_argument("--period", type=float, default=60.0)
    p.add_argument("--endpoint", default=None, help="CloudWatch endpoint URL (default: the region's)")
    a = p.parse_args(argv)
    run(sys.stdin, cores=a.cores, period=a.period, send=CloudWatchSender(a.namespace, a.region, url=a.endpoint))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
