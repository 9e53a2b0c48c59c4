"""`make demo` end to end (the script it runs), offline."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def test_demo_deploys_the_dev_fleet_into_moto_and_prints_the_migration_report() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py")], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    out = result.stdout
    assert out.count("CREATE_COMPLETE") == 5 and "5 stacks" in out
    assert "deployed into account 111111111111, us-east-2\n" in out  # config/dev.yaml's account and region
    assert "stand-ins for moto's gaps: 9 (neuronfleet.offline)" in out
    assert "created with the template's EndpointName" in out
    # moto's warnings are counted in the result, never printed
    assert "moto's warnings during the deploy: 20 (in the result, not printed)" in out
    assert "Warning" not in out + result.stderr and "Moto CloudFormation support" not in out + result.stderr
    assert "60 rows, 60 written, 4 Cost Explorer requests ($0.04)" in out  # 3 usage pages + 1 of credits/refunds/taxes
    assert "cost per million inferences Neuron $60.66  GPU $148.88" in out
    assert "verdict: GPU training spend $15811.20/month: expect 30-50% lower cost on Trainium." in out
    assert (ROOT / "cdk.out" / "demo-dev" / "migration-report.html").is_file()
