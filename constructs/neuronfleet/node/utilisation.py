#!/usr/bin/env python3
"""neuronfleet NeuronCore utilisation publisher (Python standard library only; runs on every Neuron host).

    neuron-monitor | python3 /opt/neuronfleet/utilisation.py --namespace NeuronFleet/Neuron --region us-east-2 \
        --cores 64

Reads neuron-monitor's JSON reports (one complete JSON document per line on stdin), averages NeuronCore
utilisation over each ``--period`` (60 s) and publishes one datapoint per period with the AWS CLI
(``aws cloudwatch put-metric-data``). The metric is the kit's own, defined here and documented in
neuronfleet.lambdas.namespaces:

  namespace   NeuronFleet/Neuron (``--namespace``)
  metric      NeuronCoreUtilization, unit Percent, 0-100
  dimensions  InstanceId (neuron-monitor's instance_data.instance_id); the waste detector scopes it to a fleet
              through the instances' ``neuronfleet:fleet`` tag
  value       the sum of every in-use NeuronCore's utilisation over the host's NeuronCores (``--cores``), so idle
              cores count as 0; a report with no Neuron runtime running is 0 % (an idle host), never a gap.

A gap therefore means the publisher or neuron-monitor is not running: the waste detector reports a running
instance with no datapoints as its own signal ("silent"), never as idle or as fine.

The JSON format (source: Neuron's "Neuron Monitor User Guide", aws-neuron/aws-neuron-sdk
neuron-guide/neuron-tools/neuron-monitor-user-guide.rst, "The JSON output format" and "neuroncore_counters",
read 2026-11-22): ``neuron_runtime_data[].report.neuroncore_counters.neuroncores_in_use`` maps a NeuronCore index to
``{"neuroncore_utilization": <percent during the captured period>, ...}`` for the cores active when the data was
captured; ``neuron_runtime_data[].error`` and each metric group's ``error`` carry collection errors;
``instance_data.instance_id`` names the instance. Neuron's Prometheus companion exports the same figure as
``neuroncore_utilization_ratio`` (0-1); the kit publishes percent.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

METRIC = "NeuronCoreUtilization"
UNIT = "Percent"


@dataclass(frozen=True)
class Sample:
    instance_id: str
    percent: float
    """Utilisation of the whole host: in-use cores' sum over all cores."""
    errors: tuple[str, ...] = ()


def sample(report: dict, cores: int) -> Sample | None:
    """One neuron-monitor report as a host-wide utilisation sample; None when the report names no instance."""
    instance = (report.get("instance_data") or {}).get("instance_id") or ""
    if not instance:
        return None
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
            if isinstance(value, int | float) and (i, index) not in seen:
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
    return {"MetricName": METRIC, "Unit": UNIT, "Value": round(sum(values) / len(values), 3),
            "Timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)),
            "Dimensions": [{"Name": "InstanceId", "Value": instance_id}]}


def aws_cli_sender(namespace: str, region: str) -> Callable[[dict], None]:
    def send(d: dict) -> None:
        subprocess.run(["aws", "cloudwatch", "put-metric-data", "--region", region, "--namespace", namespace,
                        "--metric-data", json.dumps([d])], check=True, capture_output=True, timeout=30)
    return send


def run(lines: Iterable[str], *, cores: int, period: float, send: Callable[[dict], None],
        clock: Callable[[], float] = time.time, on_error: Callable[[str], None] = lambda m: print(m, file=sys.stderr)
        ) -> int:
    """Publish one averaged datapoint per ``period``; the number published."""
    window: list[float] = []
    instance, started, sent = "", clock(), 0
    for report in reports(lines, on_error):
        s = sample(report, cores)
        if s is None:
            on_error("report without instance_data.instance_id: skipped")
            continue
        for e in s.errors:
            on_error(e)
        instance = s.instance_id
        window.append(s.percent)
        now = clock()
        if now - started >= period:
            try:
                send(datum(instance, window, now))
                sent += 1
            except (subprocess.SubprocessError, OSError) as exc:
                on_error(f"put-metric-data failed: {exc}")
            window, started = [], now
    if window and instance:
        send(datum(instance, window, clock()))
        sent += 1
    return sent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="neuron-monitor JSON on stdin -> CloudWatch NeuronCoreUtilization")
    p.add_argument("--namespace", required=True)
    p.add_argument("--region", required=True)
    p.add_argument("--cores", type=int, required=True, help="the host's NeuronCores (logical at its LNC)")
    p.add_argument("--period", type=float, default=60.0)
    a = p.parse_args(argv)
    run(sys.stdin, cores=a.cores, period=a.period, send=aws_cli_sender(a.namespace, a.region))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
