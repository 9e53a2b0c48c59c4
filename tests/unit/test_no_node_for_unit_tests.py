"""Unit tests need no Node.js: the shared conftest loads aws-cdk-lib (and so jsii's Node process) only when a test
asks for a CDK helper (tests/cdk_support.py)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_the_conftest_and_a_unit_test_module_load_no_aws_cdk() -> None:
    code = ("import sys; import tests.conftest, tests.unit.test_rules; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aws_cdk', 'jsii')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_cdk_helpers_still_import_from_the_conftest() -> None:
    code = "import sys; from tests.conftest import ENV, AzStack; print(ENV.region, 'jsii' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["us-east-2", "True"]
