"""neuron-monitor reports built from the Neuron Monitor User Guide's own examples (tests/data/neuron_monitor).

The guide shows the report as fragments: the output structure, ``instance_info``, ``neuron_hardware_info`` and
``neuroncore_counters``, each copied verbatim into ``user-guide-*.txt``. :func:`documented_report` assembles them
into one report the way the structure block lays them out (``neuron_runtime_data[0].report.neuroncore_counters``),
after two mechanical edits the guide's ``[...]`` placeholders need to become JSON: the placeholder lines are
removed and the trailing comma they leave is dropped. The variations below change only what their names say.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "neuron_monitor"


def fragment(name: str) -> dict[str, Any]:
    """``user-guide-<name>.txt`` (a ``"key": {...}`` fragment) as a dict, placeholders removed."""
    text = (DATA / f"user-guide-{name}.txt").read_text()
    text = "\n".join(line for line in text.splitlines() if line.strip() != "[...]")
    text = re.sub(r",(\s*[}\]])", r"\1", text)
    return dict(json.loads("{" + text + "}"))


def documented_report() -> dict[str, Any]:
    """One report: the documented runtime entry (pid, address, tag, error) with the documented
    ``neuroncore_counters``, the documented ``instance_info`` and ``neuron_hardware_info``."""
    structure = (DATA / "user-guide-output-format.txt").read_text()
    assert '"pid": 0,' in structure and '"neuron_runtime_tag", "my_app_1",' in structure  # what is copied below
    return {
        "neuron_runtime_data": [{"pid": 0, "address": "", "neuron_runtime_tag": "my_app_1", "error": "",
                                 "report": fragment("neuroncore_counters")}],
        "system_data": {},
        **fragment("instance_info"),
        **fragment("neuron_hardware_info"),
    }


def busy(percent: float = 90.0) -> dict[str, Any]:
    """Every NeuronCore of the documented host (16 devices x 4) in use at ``percent``, shaped as core "0"."""
    report = documented_report()
    counters = report["neuron_runtime_data"][0]["report"]["neuroncore_counters"]
    template = counters["neuroncores_in_use"]["0"]
    cores = report["neuron_hardware_info"]["neuron_device_count"] * \
        report["neuron_hardware_info"]["neuroncore_per_device_count"]
    counters["neuroncores_in_use"] = {str(i): {**copy.deepcopy(template), "neuroncore_utilization": percent}
                                      for i in range(cores)}
    return report


def no_runtime() -> dict[str, Any]:
    """No Neuron application running: an empty ``neuron_runtime_data``."""
    report = documented_report()
    report["neuron_runtime_data"] = []
    return report


def runtime_error(message: str = "Failed to connect to runtime") -> dict[str, Any]:
    """The runtime entry carries a collection error and no counters."""
    report = documented_report()
    report["neuron_runtime_data"][0].update(error=message, report={})
    return report


def without_instance() -> dict[str, Any]:
    report = documented_report()
    del report["instance_info"]
    return report


def as_neuron_1x() -> dict[str, Any]:
    """The host under Neuron 1.x's name, ``instance_data``, which 2.x reports do not use."""
    report = documented_report()
    report["instance_data"] = report.pop("instance_info")
    return report


def lines(*reports: dict[str, Any]) -> list[str]:
    """As neuron-monitor streams them: one complete JSON document per line."""
    return [json.dumps(r) for r in reports]
