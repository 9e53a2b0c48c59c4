#!/usr/bin/env python3
"""neuronfleet pre-job health gate (Python standard library only; runs on the node, in the job container).

Checks the node against what the instance catalog expects (passed in by the job definition as environment
variables) before a training job starts, and exits with a code the job's retry strategy understands:

   0  healthy
  75  hardware fault (EX_TEMPFAIL): a Neuron or EFA device missing, uncorrected ECC errors, or the collective
      check failed. The Batch retry strategy retries on this code.
  76  topology (EX_PROTOCOL, set by launch.py): the job's nodes do not form whole UltraServers. Not retried.
  78  configuration (EX_CONFIG): an expectation is missing, or the host's Neuron driver is outside the window the
      image's Neuron runtime library runs with (a runtime/driver mismatch: nrt_init() would fail, which is not a
      hardware fault). Not retried (the job definition's first evaluateOnExit): another attempt on the same AMI
      would fail the same way.

Environment (set by neuronfleet's job definition):
  NEURONFLEET_EXPECT_NEURON_DEVICES  Neuron devices (/dev/neuron*): the catalog's accelerators
  NEURONFLEET_EXPECT_EFA_DEVICES     EFA devices (/dev/infiniband/uverbs*): the catalog's EFA interfaces
  NEURONFLEET_RUNTIME_LIB            the Neuron runtime library the image carries (optional, e.g. 2.32.31.0)
  NEURONFLEET_DRIVER_MIN             the lowest Neuron driver line it runs with (optional, e.g. 2.27)
  NEURONFLEET_DRIVER_BELOW           the first driver line it does not run with (optional, e.g. 2.29)
  NEURONFLEET_COLLECTIVE_CHECK       "auto" (default: run nccom-test if present), "required" or "off"
  NEURONFLEET_NPROC_PER_NODE         ranks of the collective check (the node's logical NeuronCores)
  NEURONFLEET_HOST_ROOT              prefix for /dev and /sys (tests only; default "/")

Where the facts come from (read 2026-11-22):
  - Neuron sysfs: /sys/devices/virtual/neuron_device/neuron<N>/stats/hardware/{mem,sram}_ecc_uncorrected
    (Neuron sysfs user guide, tools/neuron-sys-tools/neuron-sysfs-user-guide.rst)
  - nccom-test: "quick environment sanity checks before running more complex workloads"; -r ranks,
    --check validates correctness (tools/neuron-sys-tools/nccom-test.rst)
  - EFA devices in a Batch container: /dev/infiniband/uverbs<N> (AWS Batch user guide, "Elastic Fabric Adapter")
  - the host's driver: /sys/module/neuron/version (the kernel's module version file of the neuron module); the
    window comes from Neuron's runtime release notes, as data (neuronfleet/facts/data/neuron_compat.json
    ``driver_runtime``): e.g. "Neuron Driver 2.29 requires Neuron Runtime Library 2.33 or later ... nrt_init() to
    fail" (Neuron 2.31.0), "Neuron Runtime Library 2.32 is not backward-compatible with Neuron Driver 2.26 or
    earlier" (Neuron 2.30.0)
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


def _line(text: str) -> tuple[int, ...]:
    """major.minor: the release notes' rules speak in driver and runtime lines (``Driver 2.29``)."""
    return _version(text)[:2]


def driver_finding(env: Mapping[str, str], root: Path) -> Finding | str | None:
    """The host's driver against the window the image's runtime runs with: a configuration finding, a line that
    passed, or None when the job carries no window."""
    low, below = env.get("NEURONFLEET_DRIVER_MIN", ""), env.get("NEURONFLEET_DRIVER_BELOW", "")
    runtime = env.get("NEURONFLEET_RUNTIME_LIB", "") or "the image's"
    if not (low or below):
        return None
    have = driver_version(root)
    if have is None:
        return f"Neuron driver: unknown ({DRIVER_VERSION} unreadable): runtime {runtime} not checked against it"
    window = " and ".join(b for b in (f">= {low}" if low else "", f"< {below}" if below else "") if b)
    if (low and _line(have) < _line(low)) or (below and _line(have) >= _line(below)):
        fix = ("an image whose runtime library runs on it, or an AMI with an older driver" if below and
               _line(have) >= _line(below) else "an AMI with a newer driver, or an image built for this one")
        return Finding("config", f"runtime/driver mismatch: Neuron driver {have} on the host; the image's Neuron "
                                 f"runtime library {runtime} runs with drivers {window} (Neuron's runtime release "
                                 f"notes: nrt_init() fails otherwise). Not a hardware fault: use {fix}")
    return f"Neuron driver: {have} (runtime {runtime} runs with drivers {window})"


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
    driver = driver_finding(env, root)
    if isinstance(driver, Finding):
        findings.append(driver)
    elif driver:
        passed.append(driver)
    if not any(f.kind == "hardware" for f in findings):
        result = collective_check(env, runner, which)
        if isinstance(result, Finding):
            findings.append(result)
        else:
            passed.append(result)
    return findings, passed


def exit_code(findings: Sequence[Finding]) -> int:
    """A configuration finding wins over a hardware one: retrying on another host cannot fix the configuration
    (a runtime/driver mismatch fails on every host of the AMI), so the job must not spend its attempts."""
    if any(f.kind == "config" for f in findings):
        return EXIT_CONFIG
    return EXIT_HARDWARE_FAULT if findings else EXIT_OK


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
    elif code == EXIT_CONFIG:
        print(f"neuronfleet health gate [{host}]: configuration error: exit {code} (not retried: another attempt "
              "would fail the same way)", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(run())
