"""`pip install .` gives a wheel named neuronfleet that works outside the repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, text=True)
    (built,) = out.glob("neuronfleet-*.whl")
    return built


def test_wheel_contains_the_library_its_data_and_the_lambda_sources(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"neuronfleet/__init__.py", "neuronfleet/catalog.py", "neuronfleet/config.py",
            "neuronfleet/py.typed", "neuronfleet/data/instance_type_offerings.json"} <= names
    lambda_sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "lambdas").rglob("*.py")}
    assert {f"neuronfleet/{p}" for p in lambda_sources} <= names
    assert not any(n.startswith(("constructs/", "stacks/", "tests/", "config/")) for n in names)


APP = """
import aws_cdk as cdk
from neuronfleet import (Capacity, CostMonitors, EndpointFailover, EndpointSettings, FleetAlerts, FleetNetwork,
                         GpuPool, GpuPoolSettings, GpuVariant, NetworkSettings, NeuronEndpoint, StaticAzStack,
                         TrainiumCluster, TrainiumClusterSettings)

app = cdk.App()
stack = StaticAzStack(app, "MyTeam", availability_zones=["us-east-2a", "us-east-2b"],
                      env=cdk.Environment(account="123456789012", region="us-east-2"))
net = FleetNetwork(stack, "Net", settings=NetworkSettings(availability_zones=["us-east-2a", "us-east-2b"],
                                                          training_az="us-east-2b"))
alerts = FleetAlerts(stack, "Alerts")
cluster = TrainiumCluster(stack, "Train", vpc=net.vpc, subnet=net.training_subnet, settings=TrainiumClusterSettings(
    instance_type="trn2.48xlarge", count=4, capacity=Capacity.capacity_block(reservation_id="cr-0123456789abcdef0")))
chat = NeuronEndpoint(stack, "Chat", vpc=net.vpc, subnets=net.compute_subnets, alarm_topic=alerts.topic,
                      settings=EndpointSettings(instance_type="ml.inf2.24xlarge", hf_model_id="org/model",
                                                tensor_parallel_degree=12,
                                                gpu_variant=GpuVariant(instance_type="ml.g6e.12xlarge")))
pool = GpuPool(stack, "Gpu", vpc=net.vpc, subnets=net.vpc.private_subnets,
               settings=GpuPoolSettings(instance_types=["g6e.48xlarge"], max_vcpus=192))
EndpointFailover(stack, "Failover", endpoints=[chat], topic=alerts.topic)
CostMonitors(stack, "Cost", fleet_name="my-team", topic=alerts.topic, endpoint_names=[chat.endpoint_name])
app.synth()
"""


def test_installs_in_a_fresh_venv_outside_the_repo(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
                   check=True, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    # a small app outside the repository, using the cluster, endpoint, fallback and cost-monitor constructs
    (tmp_path / "app.py").write_text(APP)
    out = tmp_path / "cdk.out"
    env = {**os.environ, "CDK_OUTDIR": str(out), "PYTHONPATH": ""}
    synth = subprocess.run([str(py), "app.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert synth.returncode == 0, synth.stderr[-3000:]
    template = json.loads((out / "MyTeam.template.json").read_text())
    kinds = {r["Type"] for r in template["Resources"].values()}
    assert {"AWS::EC2::LaunchTemplate", "AWS::Batch::JobQueue", "AWS::SageMaker::Endpoint", "AWS::Lambda::Function",
            "AWS::DynamoDB::Table", "AWS::Budgets::Budget"} - kinds == {"AWS::Budgets::Budget"}  # no budget given
    assets = [p for p in out.glob("asset.*") if p.is_dir()]
    assert assets and all((a / "failover" / "handler.py").is_file() for a in assets)  # the wheel's Lambda sources
    probe = (
        "import neuronfleet, constructs, pathlib;"
        "from neuronfleet import CATALOG;"
        "assert 'site-packages' in neuronfleet.__file__ and 'site-packages' in constructs.__file__;"
        "assert CATALOG.offered_in('trn2.48xlarge', 'us-east-2');"
        "print(neuronfleet.__version__, CATALOG.get('trn2u.48xlarge').efa_interfaces)"
    )
    result = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert result.stdout.split() == ["0.1.0", "16"]
