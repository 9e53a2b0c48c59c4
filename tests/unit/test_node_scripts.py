"""The node scripts (health gate, launcher) over host layouts in tests/data/neuron_hosts."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from neuronfleet.facts import neuron
from neuronfleet.node import BOOTSTRAP, HOST_DIR, SCRIPTS, health_gate, launch, script_text

HOSTS = Path(__file__).resolve().parents[1] / "data" / "neuron_hosts"
SDK_2_30 = "pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04"
TRN2_ENV = {"NEURONFLEET_EXPECT_NEURON_DEVICES": "16", "NEURONFLEET_EXPECT_EFA_DEVICES": "16",
            "NEURONFLEET_NPROC_PER_NODE": "64",
            # what the job definition passes for the sdk2.30.0 image: its runtime and the driver window from the data
            **neuron.runtime_environment("trn2.48xlarge", SDK_2_30, None)}
TORCHNEURON_ENV = {**{k: v for k, v in TRN2_ENV.items() if "DRIVER" not in k and "RUNTIME" not in k},
                   **neuron.runtime_environment("trn2.48xlarge", neuron.DEFAULT_TRAINING_IMAGE, None)}


def expand(pattern: str) -> list[str]:
    m = re.search(r"\{(\d+)\.\.(\d+)\}", pattern)
    if not m:
        return [pattern]
    return [p for i in range(int(m.group(1)), int(m.group(2)) + 1)
            for p in expand(pattern[:m.start()] + str(i) + pattern[m.end():])]


def materialise(files: dict[str, str], root: Path) -> Path:
    """Write a recorded layout under root: brace ranges first, then single files (which override them)."""
    for key in sorted(files, key=lambda k: "{" not in k):
        for rel in expand(key):
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[key])
    return root


def host(name: str, tmp_path: Path) -> Path:
    return materialise(json.loads((HOSTS / f"{name}.json").read_text())["files"], tmp_path / name)


def nodes(name: str, tmp_path: Path) -> list[launch.NodeRecord]:
    out = []
    for n in json.loads((HOSTS / f"{name}.json").read_text())["nodes"]:
        root = materialise(n["files"], tmp_path / f"node{n['index']}")
        out.append(launch.read_identity(root, 4, n["index"], n["address"]))
    return out


def no_nccom(_: str) -> None:
    return None


# ----------------------------------------------------------------------------------------------- health gate


def test_healthy_trn2_passes_and_runs_the_collective_check(tmp_path) -> None:
    calls: list[list[str]] = []
    findings, passed = health_gate.check(TRN2_ENV, host("trn2-healthy", tmp_path),
                                         runner=lambda cmd, timeout: calls.append(list(cmd)) or 0,
                                         which=lambda _: "/opt/aws/neuron/bin/nccom-test")
    assert findings == []
    assert health_gate.exit_code(findings) == 0
    assert calls == [["nccom-test", "-r", "64", "allr", "-b", "1M", "-e", "1M", "-n", "5", "-w", "1", "--check"]]
    assert "Neuron devices: 16" in passed and "EFA devices: 16" in passed


@pytest.mark.parametrize(("layout", "message"), [
    ("trn2-missing-neuron-device", "Neuron devices: found 15, the instance type has 16"),
    ("trn2-missing-efa-device", "EFA devices: found 15, the instance type has 16"),
    ("trn2-ecc-errors", "uncorrected ECC errors: neuron7 mem_ecc_uncorrected=3"),
])
def test_hardware_faults_exit_75(tmp_path, layout, message) -> None:
    findings, _ = health_gate.check(TRN2_ENV, host(layout, tmp_path), which=no_nccom)
    assert [f.message for f in findings if f.kind == "hardware"] == [message]
    assert health_gate.exit_code(findings) == health_gate.EXIT_HARDWARE_FAULT == 75


def test_a_failing_collective_check_is_a_hardware_fault(tmp_path) -> None:
    findings, _ = health_gate.check(TRN2_ENV, host("trn2-healthy", tmp_path), runner=lambda cmd, timeout: 1,
                                    which=lambda _: "/usr/bin/nccom-test")
    assert health_gate.exit_code(findings) == 75 and "collective check failed" in findings[0].message


def test_the_job_carries_the_images_runtime_and_the_driver_window_from_the_data() -> None:
    assert {k: v for k, v in TRN2_ENV.items() if k.startswith(("NEURONFLEET_DRIVER", "NEURONFLEET_RUNTIME"))} == {
        "NEURONFLEET_RUNTIME_LIB": "2.32.31.0", "NEURONFLEET_DRIVER_MIN": "2.27", "NEURONFLEET_DRIVER_BELOW": "2.29"}
    assert TORCHNEURON_ENV["NEURONFLEET_RUNTIME_LIB"] == "2.35.30.0" and "NEURONFLEET_DRIVER_BELOW" not in TORCHNEURON_ENV


@pytest.mark.parametrize(("layout", "message"), [
    ("trn2-driver-2.30", "runtime/driver mismatch: Neuron driver 2.30.2.0 on the host; the image's Neuron runtime "
                         "library 2.32.31.0 runs with drivers >= 2.27 and < 2.29"),
    ("trn2-old-driver", "runtime/driver mismatch: Neuron driver 2.26.5.0 on the host; the image's Neuron runtime "
                        "library 2.32.31.0 runs with drivers >= 2.27 and < 2.29"),
])
def test_a_runtime_driver_mismatch_is_a_configuration_error_not_a_hardware_fault(tmp_path, layout, message) -> None:
    findings, _ = health_gate.check(TRN2_ENV, host(layout, tmp_path), which=no_nccom)
    assert [(f.kind, f.message[:len(message)]) for f in findings] == [("config", message)]
    assert health_gate.exit_code(findings) == health_gate.EXIT_CONFIG == 78


def test_a_mismatch_wins_over_a_hardware_fault_so_the_job_is_not_retried(tmp_path) -> None:
    findings, _ = health_gate.check(TRN2_ENV, host("trn2-driver-2.30-ecc-errors", tmp_path), which=no_nccom)
    assert sorted(f.kind for f in findings) == ["config", "hardware"]
    assert health_gate.exit_code(findings) == 78


@pytest.mark.parametrize(("layout", "env"), [("trn2-driver-2.28", TRN2_ENV), ("trn2-driver-2.30", TORCHNEURON_ENV)])
def test_a_driver_inside_the_images_window_passes(tmp_path, layout, env) -> None:
    findings, passed = health_gate.check(env, host(layout, tmp_path), which=no_nccom)
    assert findings == []
    assert any(p.startswith("Neuron driver: 2.") for p in passed)


def test_missing_expectations_are_configuration_errors_not_retried(tmp_path) -> None:
    findings, _ = health_gate.check({}, host("trn2-healthy", tmp_path), which=no_nccom)
    assert health_gate.exit_code(findings) == 78
    required = {**TRN2_ENV, "NEURONFLEET_COLLECTIVE_CHECK": "required"}
    findings, _ = health_gate.check(required, host("trn2-healthy", tmp_path), which=no_nccom)
    assert health_gate.exit_code(findings) == 78


@pytest.mark.parametrize(("layout", "code", "line"), [
    ("trn2-missing-efa-device", 75, "HARDWARE: EFA devices: found 15, the instance type has 16"),
    ("trn2-driver-2.30", 78, "CONFIG: runtime/driver mismatch: Neuron driver 2.30.2.0 on the host"),
])
def test_the_gate_runs_as_a_script_with_its_exit_code(tmp_path, layout, code, line) -> None:
    root = host(layout, tmp_path)
    env = {**TRN2_ENV, "NEURONFLEET_HOST_ROOT": str(root), "NEURONFLEET_COLLECTIVE_CHECK": "off", "PATH": ""}
    script = Path(health_gate.__file__)
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=False)
    assert run.returncode == code, run.stderr
    assert line in run.stderr


# -------------------------------------------------------------------------------------------- UltraServers


def test_two_ultraservers_are_ordered_by_ultraserver_then_node(tmp_path) -> None:
    records = nodes("trn2u-two-ultraservers", tmp_path)
    ordered = launch.order(records, 4)
    # server 0f1e... sorts before a1b2...; inside each, node ids 0..3
    assert [(r.server_id[:4], r.node_id, r.index) for r in ordered] == [
        ("0f1e", 0, 3), ("0f1e", 1, 7), ("0f1e", 2, 0), ("0f1e", 3, 5),
        ("a1b2", 0, 2), ("a1b2", 1, 4), ("a1b2", 2, 6), ("a1b2", 3, 1)]
    me = next(r for r in records if r.index == 0)
    assert launch.ultraserver_env(ordered, me, 4) == {
        "NEURON_GLOBAL_TOPOID": "2", "NEURON_GLOBAL_TOPOID0_HOST": "10.42.1.30", "NEURON_RT_ULTRASERVER_MODE": "1",
        "NEURON_RT_ULTRASERVER_SERVER_ID": "0f1e2d3c4b5a6978", "NEURON_RT_ULTRASERVER_NODE_ID": "2"}


@pytest.mark.parametrize(("layout", "message"), [
    ("trn2u-split-ultraserver", "UltraServer 0f1e2d3c4b5a6978: this job has 2 of its 4 nodes (job nodes 0, 3); "
                                "a job must take whole UltraServers"),
    ("trn2u-node-not-in-ultraserver", "node 3 (10.42.1.30) reports no UltraServer"),
])
def test_nodes_that_do_not_form_whole_ultraservers_are_refused(tmp_path, layout, message) -> None:
    with pytest.raises(launch.TopologyError, match=re.escape(message)):
        launch.order(nodes(layout, tmp_path), 4)


def test_a_node_count_that_is_not_whole_ultraservers_is_refused(tmp_path) -> None:
    records = nodes("trn2u-two-ultraservers", tmp_path)[:6]
    with pytest.raises(launch.TopologyError, match="6 nodes do not form whole UltraServers of 4"):
        launch.order(records, 4)


def _us_env(index: int, **extra: str) -> dict[str, str]:
    return {"AWS_BATCH_JOB_NUM_NODES": "8", "AWS_BATCH_JOB_NODE_INDEX": str(index), "AWS_BATCH_JOB_ID": "job-1#3",
            "NEURONFLEET_ULTRASERVER_SIZE": "4", "NEURONFLEET_NPROC_PER_NODE": "64", **extra}


def test_launcher_rendezvous_on_the_shared_folder_gives_torchrun_its_rank(tmp_path) -> None:
    """Every node publishes itself; each computes the same order; node 0 of Batch gets rank 2."""
    data = json.loads((HOSTS / "trn2u-two-ultraservers.json").read_text())["nodes"]
    shared = tmp_path / "fsx"
    plans = {}
    for n in data:  # publish all but the last, then plan from the last one (which then finds all 8)
        root = materialise(n["files"], tmp_path / f"node{n['index']}")
        me = launch.read_identity(root, 4, n["index"], n["address"])
        launch.publish_and_gather(shared / "job-1" / "1", me, 1, timeout_s=0)
    for n in data:
        env = _us_env(n["index"], NEURONFLEET_RENDEZVOUS_DIR=str(shared))
        plans[n["index"]] = launch.plan(env, tmp_path / f"node{n['index']}", n["address"], ["train.py", "--x"])
    cmd, extra = plans[0]
    assert cmd == ["torchrun", "--nnodes=8", "--nproc-per-node=64", "--node-rank=2", "--master-addr=10.42.1.30",
                   "--master-port=29500", "train.py", "--x"]
    assert extra["NEURON_GLOBAL_TOPOID"] == "2"
    assert sorted(int(p[0][3].removeprefix("--node-rank=")) for p in plans.values()) == list(range(8))
    assert {p[0][4] for p in plans.values()} == {"--master-addr=10.42.1.30"}


def test_launcher_exits_76_with_a_clear_message_on_a_split_ultraserver(tmp_path, capsys) -> None:
    data = json.loads((HOSTS / "trn2u-split-ultraserver.json").read_text())["nodes"]
    shared = tmp_path / "fsx"
    for n in data:
        root = materialise(n["files"], tmp_path / f"node{n['index']}")
        launch.publish_and_gather(shared / "job-1" / "1", launch.read_identity(root, 4, n["index"], n["address"]), 1,
                                  timeout_s=0)
    env = {**_us_env(0, NEURONFLEET_RENDEZVOUS_DIR=str(shared)), "AWS_BATCH_JOB_NUM_NODES": "4",
           "NEURONFLEET_HOST_ROOT": str(tmp_path / "node0"), "NEURONFLEET_NODE_ADDRESS": "10.42.1.17"}
    code = launch.main(["--skip-health-gate", "--dry-run", "--", "train.py"], env=env)
    assert code == health_gate.EXIT_TOPOLOGY == 76
    assert "a job must take whole UltraServers" in capsys.readouterr().err


def test_missing_nodes_time_out_as_a_host_fault(tmp_path) -> None:
    me = launch.NodeRecord(0, "10.0.0.1", "a1b2c3d4e5f60718", 0, (1,))
    with pytest.raises(TimeoutError, match="1 of 4 nodes published"):
        launch.publish_and_gather(tmp_path, me, 4, timeout_s=0, poll_s=0)


def test_non_ultraserver_types_keep_the_batch_node_index(tmp_path) -> None:
    env = {"AWS_BATCH_JOB_NUM_NODES": "4", "AWS_BATCH_JOB_NODE_INDEX": "3", "NEURONFLEET_NPROC_PER_NODE": "32",
           "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "10.0.0.9"}
    cmd, extra = launch.plan(env, tmp_path, "10.0.0.12", ["train.py"])
    assert cmd[:5] == ["torchrun", "--nnodes=4", "--nproc-per-node=32", "--node-rank=3", "--master-addr=10.0.0.9"]
    assert extra == {}


def test_scripts_are_standard_library_only_and_shipped_as_package_data() -> None:
    allowed = set(sys.stdlib_module_names) | {"health_gate", "sigv4", "__future__"}
    for name in {*SCRIPTS, *BOOTSTRAP}:
        text = script_text(name)
        imported: set[str] = set()
        for line in text.splitlines():
            m = re.match(r"\s*(?:from|import) ([\w.]+)", line)
            if m and not m.group(1).startswith("."):
                imported.add(m.group(1).split(".")[0])
        assert imported <= allowed, (name, imported - allowed)
    assert HOST_DIR == "/opt/neuronfleet"
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"neuronfleet.node"' in pyproject
