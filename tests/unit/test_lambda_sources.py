"""Rules over the Lambda sources: the environment is read only in settings modules' from_environment, settings
need no AWS libraries, one metric-namespace scheme, and the handlers import as deployed (lambdas/ as code root)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from neuronfleet_contract import namespaces

ROOT = Path(__file__).resolve().parents[2]
LAMBDAS = ROOT / "lambdas"
SHARED = ROOT / "shared"
CONTRACT = SHARED / "neuronfleet_contract"
SOURCES = sorted(p for folder in (LAMBDAS, SHARED) for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def environment_reads(source: str, *, inside: str | None = "from_environment") -> list[tuple[int, str]]:
    """(line, what) of every read of the process environment (os.environ, os.getenv, ``from os import
    environ``...) that is not inside a function named ``inside`` (None: wherever it is)."""
    tree = ast.parse(source)
    allowed = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == inside
               for n in ast.walk(f)}
    found = []
    for node in ast.walk(tree):
        hit = None
        if isinstance(node, ast.Attribute) and node.attr in READERS:
            hit = f"os.{node.attr}"
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and any(a.name in READERS for a in node.names):
            hit = "from os import ..."
        elif isinstance(node, ast.Name) and node.id in READERS:
            hit = node.id
        if hit and id(node) not in allowed:
            found.append((node.lineno, hit))
    return found


READERS = ("environ", "environb", "getenv", "getenvb")


def test_the_check_finds_a_stray_environment_read() -> None:
    assert environment_reads("import os\nX = os.environ['A']\n") == [(2, "os.environ")]
    assert environment_reads("import os\ndef f():\n    return os.getenv('A')\n") == [(3, "os.getenv")]
    assert environment_reads("from os import environ\n") == [(1, "from os import ...")]
    ok = "import os\ndef from_environment(env=None):\n    return env or os.environ\n"
    assert environment_reads(ok) == []
    assert environment_reads(ok, inside=None) == [(3, "os.environ")]


def test_the_environment_is_read_only_in_the_settings_modules_from_environment() -> None:
    stray = {}
    for path in SOURCES:
        settings = path.parent.name == "neuronfleet_contract"  # the settings classes live in the contract
        reads = environment_reads(path.read_text(), inside="from_environment" if settings else None)
        if reads:
            stray[path.relative_to(ROOT).as_posix()] = reads
    assert stray == {}, f"read the environment only in a settings module's from_environment: {stray}"


def test_every_handler_has_a_settings_module() -> None:
    """In the contract: the construct builds it, the handler reads it."""
    for package in ("failover", "capacity_alert", "cost"):
        assert (CONTRACT / f"{package}.py").is_file()


def test_settings_need_no_aws_libraries() -> None:
    code = ("import sys; import neuronfleet_contract.failover, neuronfleet_contract.capacity_alert, "
            "neuronfleet_contract.cost, neuronfleet_contract.cur, neuronfleet_contract.namespaces, "
            "neuronfleet_contract.alarms, neuronfleet_contract.tags, neuronfleet_contract.variants; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'boto3', 'botocore', 'aws_lambda_powertools', "
            "'aws_cdk', 'jsii'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_one_namespace_scheme_with_one_home() -> None:
    tree = ast.parse((CONTRACT / "namespaces.py").read_text())
    body = tree.body
    constants = {}
    for node, doc in zip(body, [*body[1:], None], strict=True):
        name = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(name, ast.Name) and name.id.endswith("_NAMESPACE"):
            assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant), f"{name.id} has no docstring"
            assert "Published by" in doc.value.value
            constants[name.id] = ast.literal_eval(node.value)
    assert len(set(constants.values())) == len(constants) >= 6
    assert all(v.startswith("NeuronFleet/") for v in constants.values())
    assert {k: getattr(namespaces, k) for k in constants} == constants
    literals = [f"{p.relative_to(ROOT)}:{n.lineno}" for p in SOURCES if p.name != "namespaces.py"
                for n in ast.walk(ast.parse(p.read_text()))
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and "NeuronFleet/" in n.value]
    assert literals == [], "use the constants of neuronfleet_contract.namespaces"


ENVIRONMENT = {
    "AWS_DEFAULT_REGION": "us-east-2", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
    "FAILOVER_ENDPOINTS": json.dumps({"chat": {"alarms": ["chat-latency"], "latency_limit_ms": 8000,
                                               "neuron": {"min": 2, "max": 8}, "gpu": {"min": 1, "max": 2},
                                               "neuron_instances_per_gpu_instance": 4}}),
    "ALERTS_TOPIC_ARN": "arn:aws:sns:us-east-2:123456789012:a",
    "GPU_POOL": json.dumps({"queue_arn": "q", "max_vcpus": 192, "types": [
        {"instance_type": "p5.48xlarge", "gpus": 8, "gpu_name": "H100", "efa": 32, "vcpus": 192}]}),
    "LEDGER_TABLE": "ledger", "INSTANCE_TYPES": '["trn2.48xlarge"]', "FLEET": "nf", "REPORT_BUCKET": "b",
    "PRICES": "{}", "ANNOUNCEMENTS_TABLE": "announced", "FAILOVER_TABLE": "failover",
}


@pytest.mark.slow
def test_handlers_import_and_configure_as_deployed(tmp_path: Path) -> None:
    """In the function the asset's root is the code root: ``failover.handler``, not
    ``neuronfleet.lambdas.failover.handler``, with the shared packages beside it (a root laid out as the assets are:
    the handler packages of lambdas/ and the packages of shared/)."""
    root = tmp_path / "code"
    for folder in (LAMBDAS, SHARED):
        shutil.copytree(folder, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "__init__.py").unlink()  # lambdas/ is a package in the wheel (neuronfleet.lambdas); a code root is none
    code = """
import sys
mods = {}
for name in ("failover.handler", "capacity_alert.handler", "cost.collector", "cost.report", "cost.waste"):
    __import__(name)
    module = sys.modules[name]
    c = module.container()
    mods[name] = type(c.settings).__name__
from neuronfleet_contract import namespaces
assert sys.modules["failover.handler"].namespaces is namespaces
assert sys.modules["failover.handler"].metrics.namespace == namespaces.FAILOVER_NAMESPACE
assert sys.modules["capacity_alert.handler"].metrics.namespace == namespaces.CAPACITY_NAMESPACE
assert not [m for m in sys.modules if m.split(".")[0] == "neuronfleet"], "imported the wheel's copy"
import os, neuronfleet_runtime
for shared in (namespaces, neuronfleet_runtime):
    assert os.path.dirname(os.path.dirname(shared.__file__)) == os.getcwd(), shared.__file__  # the code root's own
print(mods)
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHONPATH"))} | ENVIRONMENT
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str({"failover.handler": "FailoverConfig",
                                      "capacity_alert.handler": "CapacityAlertConfig",
                                      "cost.collector": "CollectorConfig", "cost.report": "ReportConfig",
                                      "cost.waste": "WasteConfig"})
