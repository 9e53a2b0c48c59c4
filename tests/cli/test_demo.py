"""`make demo` end to end (the script it runs), offline: the real CDK CLI against an embedded moto server."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def test_demo_deploys_the_dev_fleet_with_the_cdk_cli_and_prints_the_migration_report() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py")], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    out = result.stdout
    # the CLI's own output: bootstrap, then every stack deployed
    assert "Environment aws://111111111111/us-east-2 bootstrapped." in out + result.stderr
    for stack in ("network", "alerts", "train-dev", "inference", "cost"):
        assert f"✅  nf-dev-{stack}" in out + result.stderr
        assert re.search(rf"^    nf-dev-{stack} +CREATE_COMPLETE ", out, re.M)
    assert "5 stacks" in out
    assert "deployed into account 111111111111, us-east-2\n" in out  # config/dev.yaml's account and region
    assert "stand-ins for moto's gaps: 8 (neuronfleet.offline, server side)" in out
    assert "created with the template's EndpointName" in out
    assert "given them from its template after ExecuteChangeSet" in out
    # moto's warnings are counted in the result, never printed
    assert "Warning" not in out + result.stderr and "Moto CloudFormation support" not in out + result.stderr
    assert "Error on request" not in result.stderr
    assert re.search(r"60 rows, 60 written, \d+ Cost Explorer requests \(\$0\.0\d\)", out)
    assert "cost per million inferences Neuron $60.66  GPU $148.88" in out
    assert "verdict: GPU training spend $15811.20/month: expect 30-50% lower cost on Trainium." in out
    assert (ROOT / "cdk.out" / "demo-dev" / "migration-report.html").is_file()
