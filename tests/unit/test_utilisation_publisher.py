"""The kit's NeuronCore utilisation publisher (node/utilisation.py) on neuron-monitor reports in the documented
format (tests/data/neuron_monitor/README.md says where they come from)."""

from __future__ import annotations

import itertools
from pathlib import Path

from neuronfleet.node import SCRIPTS
from neuronfleet.node.utilisation import METRIC, UNIT, run

DATA = Path(__file__).parents[1] / "data" / "neuron_monitor"


def publish(name: str, cores: int = 64, period: float = 60.0) -> tuple[list[dict], list[str]]:
    sent: list[dict] = []
    errors: list[str] = []
    clock = itertools.count(0, 30).__next__  # each report 30 s after the last
    run((DATA / name).read_text().splitlines(), cores=cores, period=period, send=sent.append,
        clock=lambda: float(clock()), on_error=errors.append)
    return sent, errors


def test_a_busy_host_publishes_its_utilisation_under_the_kits_name_unit_and_dimension() -> None:
    sent, errors = publish("trn2-busy.jsonl")
    assert errors == []
    assert [d["Value"] for d in sent] == [90.0, 90.0]  # one datapoint per 60 s, then the rest at the end
    assert {(d["MetricName"], d["Unit"]) for d in sent} == {(METRIC, UNIT)} == {("NeuronCoreUtilization", "Percent")}
    assert sent[0]["Dimensions"] == [{"Name": "InstanceId", "Value": "i-0a1b2c3d4e5f60718"}]


def test_cores_not_in_use_count_as_idle() -> None:
    sent, _ = publish("trn2-idle.jsonl")
    assert {d["Value"] for d in sent} == {0.625}  # 8 cores at 5 % over 64


def test_a_host_with_no_neuron_runtime_publishes_zero_not_nothing() -> None:
    sent, _ = publish("trn2-no-runtime.jsonl")
    assert sent and {d["Value"] for d in sent} == {0.0}


def test_errors_are_reported_and_the_good_reports_still_count() -> None:
    sent, errors = publish("trn2-errors.jsonl")
    assert [d["Value"] for d in sent] == [round(50 / 64, 3)]
    assert errors[0] == "runtime 0: Failed to connect to runtime"
    assert errors[1].startswith("line 2: not JSON")
    assert errors[2] == "report without instance_data.instance_id: skipped"


def test_the_publisher_is_shipped_with_the_node_scripts() -> None:
    assert "utilisation.py" in SCRIPTS
    source = (Path(__file__).parents[2] / "constructs" / "neuronfleet" / "node" / "utilisation.py").read_text()
    assert "import boto3" not in source  # standard library only: the host needs only python3 and the AWS CLI
