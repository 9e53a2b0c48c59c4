"""``neuronfleet verify`` against the smoke fleet deployed into moto (neuronfleet.offline, as the demo deploys): every
check runs, through the command and check by check, and reports an outcome; none fails as a bug.

moto is no account: what it answers decides each outcome, so the outcomes here are moto's (moto 5.2.5), pinned so
that a change in a check or in moto shows. Said as such: no instance runs, so the instance checks read ``not yet``;
moto's DescribeComputeEnvironments leaves out the ``tags`` member botocore's shape has, and its tagging API finds no
Lambda function, so the compute environment and the functions read as not deployed yet (``not yet``); the services
moto does not serve (the Price List, CloudTrail's LookupEvents, Data Exports) give ``unchecked`` naming the cause;
the endpoint moto keeps is InService (``holds``).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from neuronfleet.cli.main import main
from neuronfleet.offline import deploy_assembly, offline_aws
from neuronfleet.verify import CHECKS
from neuronfleet.verify.commands import run_checks
from neuronfleet.verify.reads import Reads
from neuronfleet.verify.registry import Context
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def deployed(synth_fleet) -> Any:
    smoke = synth_fleet("smoke")
    fleet = smoke.fleet
    with offline_aws(account=fleet.account, region=fleet.region):
        deploy_assembly(smoke.assembly.directory)
        yield fleet


def test_every_check_that_applies_runs_against_the_moto_deployment_and_none_fails_as_a_bug(deployed) -> None:
    reads = Reads(deployed.region, deployed.name)
    assert reads.caller() == f"arn:aws:sts::{deployed.account}:user/moto"
    found, skipped = run_checks(CHECKS, Context(fleet=deployed, reads=reads, now=datetime.now(UTC)))
    findings = {check.id: finding for check, finding in found}
    assert len(findings) + len(skipped) == len(CHECKS) == 59 and len(findings) == 22  # smoke's parts: 22 checks
    bugs = {i: f.seen for i, f in findings.items() if f.seen.startswith("the check failed")}
    assert bugs == {}
    outcomes = Counter(f.outcome for f in findings.values())
    assert outcomes["broken"] == 0, {i: f for i, f in findings.items() if f.outcome == "broken"}
    # what moto shows of the smoke fleet: its endpoint InService
    assert findings["execution-role-source-arn"].outcome == "holds", findings["execution-role-source-arn"]
    # no instance runs in moto, its Batch describe has no tags, its tagging API no functions: these wait
    for check_id in ("utilisation-metric", "node-fetch", "node-user-data", "batch-compute-environment",
                     "function-durations", "scalable-target-right"):
        assert findings[check_id].outcome == "not yet", (check_id, findings[check_id])
    # what moto does not serve is unchecked with its cause, never a pass
    for check_id in ("price-list-filters", "fsx-price", "service-source-keys"):
        assert findings[check_id].outcome == "unchecked" and "could not read" in findings[check_id].seen, check_id
    manual = {c.id for c in CHECKS if c.run is None} & set(findings)
    assert manual and all(findings[i].seen.startswith("not made by verify") for i in manual)


def test_the_command_reports_each_check_that_applies_to_smoke(deployed, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["verify", "-c", str(ROOT / "config" / "smoke.yaml"), "--json"])
    out = json.loads(capsys.readouterr().out)
    found, skipped = run_checks(CHECKS, Context(fleet=deployed, reads=Reads(deployed.region, deployed.name),
                                                now=datetime.now(UTC)))
    assert [c["id"] for c in out["checks"]] == [c.id for c, _ in found]
    assert [c["id"] for c in out["not_applying"]] == [c.id for c, _ in skipped]
    assert len(out["checks"]) + len(out["not_applying"]) == 59
    assert code == (1 if any(c["outcome"] in ("broken", "unchecked") for c in out["checks"]) else 0)
    assert all(c["seen"] and (c["outcome"] == "holds" or c["fix"]) for c in out["checks"])
