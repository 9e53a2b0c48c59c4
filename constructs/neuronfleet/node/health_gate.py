#!/usr/bin/env python3
"""neuronfleet pre-job health gate (Python standard library only; runs on the node, in the job container).

Checks the node against what the instance catalog expects (passed in by the job definition as environment
variables) before a training job starts, and exits with a code the job's retry strategy understands:

   0  healthy
  75  hardware fault (EX_TEMPFAIL): a Neuron or EFA device missing, uncorrected ECC errors, or the collective
      check failed. The Batch retry strategy retries on this code.
  76  topology (EX_PROTOCOL, set by launch.py): the job's nodes do not form whole UltraServers. Not retried.
  78  configuration (EX_CONFIG): an expectation is missing or the host's Neuron driver is older than the image
      needs. Not retried: another attempt on the same AMI would fail the same way.

Environment (set by neuronfleet's job definition):
  NEURONFLEET_EXPECT_NEURON_DEVICES  Neuron devices (/dev/neuron*): the catalog's accelerators
  NEURONFLEET_EXPECT_EFA_DEVICES     EFA devices (/dev/infiniband/uverbs*): the catalog's EFA interfaces
  NEURONFLEET_MIN_DRIVER             lowest Neuron driver the image runs with (optional)
  NEURONFLEET_COLLECTIVE_CHECK       "auto" (default: run nccom-test if present), "required" or "off"
  NEURONFLEET_NPROC_PER_NODE         ranks of the collective check (the node's logical NeuronCores)
  NEURONFLEET_HOST_ROOT              prefix for /dev and /sys (tests only; default "/")

Where the facts come from (read 2026-11-22):
  - Neuron sysfs: /sys/devices/virtual/neuron_device/neuron<N>/stats/hardware/{mem,sram}_ecc_uncorrected
    (Neuron sysfs user guide, tools/neuron-sys-tools/neuron-sysfs-user-guide.rst)
  - nccom-test: "quick environment sanity checks before running more complex workloads"; -r ranks,
    --check validates correctness (tools/neuron-sys-tools/nccom-test.rst)
  - EFA devices in a Batch container: /dev/infiniband/uverbs<N> (AWS Batch user guide, "Elastic Fabric Adapter")
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

EXIT_OK = 0
EXIT_HARDWARE_FAULT = 75
EXIT_TOPOLOGY = 76
EXIT_CONFIG = 78

SYSFS_DEVICES = "sys/devices/virtual/neuron_device"
DRIVER_VERSION = "sys/module/neuron/version"
COLLECTIVE_TIMEOUT_S = 300


@dataclass(frozen=True)
class Finding:
    kind: str  # "hardware" | "config"
    message: str


def _count(root: Path, pattern: str) -> int:
    folder, _, glob = pattern.rpartition("/")
    base = root / folder
    return sum(1 for p in base.glob(glob) if re.fullmatch(r"[a-z]+\d+", p.name)) if base.is_dir() else 0


def neuron_devices(root: Path) -> int:
    return _count(root, "dev/neuron*")


def efa_devices(root: Path) -> int:
    return _count(root, "dev/infiniband/uverbs*")


def ecc_errors(root: Path) -> list[str]:
    """Devices whose uncorrected ECC counters are above zero."""
    out = []
    for dev in sorted((root / SYSFS_DEVICES).glob("neuron*")):
        for counter in ("mem_ecc_uncorrected", "sram_ecc_uncorrected"):
            path = dev / "stats" / "hardware" / counter
            try:
                value = int(path.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            if value > 0:
                out.append(f"{dev.name} {counter}={value}")
    return out


def driver_version(root: Path) -> str | None:
    try:
        return (root / DRIVER_VERSION).read_text().strip() or None
    except OSError:
        return None


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def _int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name, "")
    return int(raw) if raw.isdigit() else None


Runner = Callable[[Sequence[str], int], int]


def _run(cmd: Sequence[str], timeout: int) -> int:
    try:
        return subprocess.run(list(cmd), timeout=timeout, check=False).returncode
    except subprocess.TimeoutExpired:
        return 124


def collective_check(env: Mapping[str, str], runner: Runner = _run,
                     which: Callable[[str], str | None] = shutil.which) -> Finding | str:
    """A short single-node all-reduce with a correctness check (nccom-test); a finding, or what was done."""
    mode = env.get("NEURONFLEET_COLLECTIVE_CHECK", "auto")
    if mode == "off":
        return "collective check: off"
    ranks = _int(env, "NEURONFLEET_NPROC_PER_NODE")
    if which("nccom-test") is None or not ranks or ranks < 2:
        if mode == "required":
            return Finding("config", "collective check required but nccom-test (aws-neuronx-tools) is not in the "
                                     "image or NEURONFLEET_NPROC_PER_NODE < 2")
        return "collective check: skipped (nccom-test not in the image, or a single NeuronCore)"
    cmd = ["nccom-test", "-r", str(ranks), "allr", "-b", "1M", "-e", "1M", "-n", "5", "-w", "1", "--check"]
    code = runner(cmd, COLLECTIVE_TIMEOUT_S)
    if code != 0:
        return Finding("hardware", f"collective check failed: {' '.join(cmd)} exited {code}")
    return f"collective check: {' '.join(cmd)}: ok"


def check(env: Mapping[str, str], root: Path, runner: Runner = _run,
          which: Callable[[str], str | None] = shutil.which) -> tuple[list[Finding], list[str]]:
    """Every check; returns the findings and a line per check that passed."""
    findings: list[Finding] = []
    passed: list[str] = []
    for label, name, count in (("Neuron devices", "NEURONFLEET_EXPECT_NEURON_DEVICES", neuron_devices),
                               ("EFA devices", "NEURONFLEET_EXPECT_EFA_DEVICES", efa_devices)):
        expected = _int(env, name)
        if expected is None:
            findings.append(Finding("config", f"{name} is not set to a whole number: nothing to check {label} "
                                              "against"))
            continue
        got = count(root)
        if got != expected:
            findings.append(Finding("hardware", f"{label}: found {got}, the instance type has {expected}"))
        else:
            passed.append(f"{label}: {got}")
    errors = ecc_errors(root)
    if errors:
        findings.append(Finding("hardware", "uncorrected ECC errors: " + ", ".join(errors)))
    wanted = env.get("NEURONFLEET_MIN_DRIVER", "")
    have = driver_version(root)
    if wanted and have and _version(have) < _version(wanted):
        findings.append(Finding("config", f"Neuron driver {have} on the host; the image needs {wanted} or later: "
                                          "use a newer AMI"))
    elif wanted:
        passed.append(f"Neuron driver: {have or 'unknown (sys/module/neuron/version unreadable)'}")
    if not any(f.kind == "hardware" for f in findings):
        result = collective_check(env, runner, which)
        if isinstance(result, Finding):
            findings.append(result)
        else:
            passed.append(result)
    return findings, passed


def exit_code(findings: Sequence[Finding]) -> int:
    if any(f.kind == "hardware" for f in findings):
        return EXIT_HARDWARE_FAULT
    return EXIT_CONFIG if findings else EXIT_OK


def run(env: Mapping[str, str] | None = None, runner: Runner = _run,
        which: Callable[[str], str | None] = shutil.which) -> int:
    env = os.environ if env is None else env
    root = Path(env.get("NEURONFLEET_HOST_ROOT", "/"))
    findings, passed = check(env, root, runner, which)
    host = os.uname().nodename
    for line in passed:
        print(f"neuronfleet health gate [{host}]: {line}", flush=True)
    for f in findings:
        print(f"neuronfleet health gate [{host}]: {f.kind.upper()}: {f.message}", file=sys.stderr, flush=True)
    code = exit_code(findings)
    if code == EXIT_HARDWARE_FAULT:
        print(f"neuronfleet health gate [{host}]: hardware fault: exit {code} (the job's retry strategy retries it)",
              file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(run())
