"""The reference app through the pinned CDK CLI, as a user runs it (offline, no credentials)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import BUILTIN_VALIDATOR, ROOT, VENV_BIN

pytestmark = pytest.mark.slow


def cdk(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_EC2_METADATA_DISABLED="true", CDK_DISABLE_CLI_TELEMETRY="true",
               AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    return subprocess.run([str(VENV_BIN / "cdk"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def prod_synth(tmp_path_factory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("cdk.out")
    return cdk("synth", "--quiet", "-c", "env=prod", "-o", str(out)), out


def test_prod_synth_writes_one_template_per_stack_without_warnings(prod_synth) -> None:
    result, out = prod_synth
    assert result.returncode == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    stacks = sorted(k for k, v in manifest["artifacts"].items() if v["type"] == "aws:cloudformation:stack")
    assert stacks == ["nf-prod-alerts", "nf-prod-capacity", "nf-prod-cost", "nf-prod-fallback", "nf-prod-inference",
                      "nf-prod-network",
                      "nf-prod-train-finetune",
                      "nf-prod-train-pretrain"]
    assert sorted(p.name for p in out.glob("*.template.json")) == [f"{s}.template.json" for s in stacks]
    assert "WARNING" not in result.stderr and "warning" not in result.stderr.lower(), result.stderr
    # the user's synth runs CDK's built-in validator (the end-to-end tests that skip it rely on this: CLI_NO_REVALIDATION)
    report = json.loads((out / "validation-report.json").read_text())
    assert [(p["pluginName"], p["conclusion"], p["violations"]) for p in report["pluginReports"]] == [
        (BUILTIN_VALIDATOR, "success", [])]
    assert "end-of-life" not in result.stderr + result.stdout


def test_bad_fleet_file_stops_synth_and_writes_no_template(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "config" / "prod.yaml").read_text().replace("count: 8", "count: 6"))
    out = tmp_path / "out"
    result = cdk("synth", "--quiet", "-c", f"config={bad}", "-o", str(out))
    assert result.returncode != 0
    assert ("training_clusters[0].count: got 6; allowed: a multiple of 4 (trn2u.48xlarge comes in whole "
            "UltraServers of 4 instances)") in result.stderr
    assert "Nothing was synthesised." in result.stderr
    assert list(out.glob("*.template.json")) == []


def test_env_context_selects_the_fleet_file(tmp_path) -> None:
    result = cdk("synth", "--quiet", "-c", "env=nosuch", "-o", str(tmp_path))
    assert result.returncode != 0
    assert ("env: got 'nosuch'; allowed: one of batch, dev, eks, eval, org, pilot, prod, smoke (config/NAME.yaml)"
            in result.stderr)
