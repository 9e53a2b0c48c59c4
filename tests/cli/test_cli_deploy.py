"""The real CDK CLI against an embedded moto server (neuronfleet.offline.moto_server), dev and prod end to end:
`cdk bootstrap`, `cdk deploy --all`, `cdk diff`, a second deploy of a changed stack, `cdk destroy --all`; and a
template moto cannot take fails the CLI with moto's reason (never a false success).

The stand-ins are the in-process deploy's (one `prepare_template` for both modes): the dev fleet's list here is the
in-process list without what the real `cdk bootstrap` creates, plus the gaps only the CLI meets (SERVER_GAPS).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from neuronfleet.offline import SERVER_GAPS, MotoServer, deploy_assembly, moto_server, offline_aws
from tests.conftest import CLI_NO_REVALIDATION, ROOT, VENV_BIN

pytestmark = [pytest.mark.slow, pytest.mark.enable_socket]

# what CloudFormation keeps on DeleteStack (DeletionPolicy Retain: ledger, buckets, keys, log groups) is all
# `cdk destroy` may leave; everything else must be gone
RETAINED_KINDS = {"s3:bucket": "AWS::S3::Bucket", "dynamodb:table": "AWS::DynamoDB::Table", "kms:key": "AWS::KMS::Key",
                  "logs:log-group": "AWS::Logs::LogGroup"}


def cdk(server: MotoServer, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = server.cli_env() | CLI_NO_REVALIDATION  # the bad app below: moto's refusal is the subject, not its template
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
    result = subprocess.run([str(VENV_BIN / "cdk"), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=600)
    if check:
        assert result.returncode == 0, f"cdk {' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def synth(out: Path, *context: str) -> Path:
    # the example fleets' templates, validated once by the session (CLI_NO_REVALIDATION)
    subprocess.run([str(VENV_BIN / "cdk"), "synth", "--quiet", *context, "-o", str(out)], cwd=ROOT, check=True,
                   capture_output=True, timeout=600, env=os.environ | CLI_NO_REVALIDATION)
    return out


def retained(assembly: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for template in assembly.glob("*.template.json"):
        for res in json.loads(template.read_text()).get("Resources", {}).values():
            if res.get("DeletionPolicy") == "Retain":
                counts[res["Type"]] += 1
    return counts


def assert_destroy_leaves_only_retained(server: MotoServer, before: set[str], assembly: Path) -> None:
    left = server.inventory() - before
    kinds = Counter(item.rsplit(":", 1)[0] if item.count(":") == 2 else ":".join(item.split(":")[:2])
                    for item in left)
    assert set(kinds) <= set(RETAINED_KINDS), sorted(left)
    kept = retained(assembly)
    for kind, n in kinds.items():
        # (the extra key once counted here was moto's AWS-managed aws/dynamodb key, which AWS creates on first use
        # of a table encrypted with it and never deletes; inventory() leaves AWS-managed keys out)
        assert n <= kept[RETAINED_KINDS[kind]], (kind, n, sorted(left))
    stacks = server.client("cloudformation").describe_stacks()["Stacks"]
    assert [s["StackName"] for s in stacks] == ["CDKToolkit"]


def test_dev_bootstrap_deploy_diff_update_destroy_and_a_template_moto_cannot_take(tmp_path) -> None:
    out = synth(tmp_path / "dev", "-c", "env=dev")
    changed_file = tmp_path / "dev-changed.yaml"
    changed_file.write_text((ROOT / "config" / "dev.yaml").read_text().replace(
        "flow_logs_retention_days: 7", "flow_logs_retention_days: 14"))
    changed = synth(tmp_path / "dev-changed", "-c", f"config={changed_file}")

    with offline_aws(account="111111111111", region="us-east-2"):
        in_process = deploy_assembly(out)
    assert in_process.ok

    with moto_server(account="111111111111", region="us-east-2") as server:
        cdk(server, "bootstrap", "--app", str(out), "aws://111111111111/us-east-2")
        before = server.inventory()
        deploy = cdk(server, "deploy", "--app", str(out), "--all", "--require-approval", "never")
        result = server.deployed()
        assert sorted((s.name, s.status) for s in result.stacks) == sorted(
            (f"nf-dev-{n}", "CREATE_COMPLETE") for n in ("network", "alerts", "train-dev", "inference", "cost"))
        assert all(f"✅  {s.name}" in deploy.stdout + deploy.stderr for s in result.stacks)
        # outputs and exports of change-set-created stacks, imports resolved
        network = next(s for s in result.stacks if s.name == "nf-dev-network")
        assert network.outputs and all(v.startswith(("vpc-", "subnet-")) for v in network.outputs.values())
        exports = server.client("cloudformation").list_exports()["Exports"]
        assert len(exports) >= 3
        # one list of stand-ins: the in-process deploy's, less what `cdk bootstrap` really creates, plus the CLI's
        shared = [s for s in in_process.stand_ins if not s.startswith("CDK bootstrap")]
        assert sorted(s for s in result.stand_ins if s not in SERVER_GAPS.values()) == sorted(shared)
        assert SERVER_GAPS["outputs"] in result.stand_ins
        assert {tuple(s.skipped) for s in result.stacks} == {tuple(s.skipped) for s in in_process.stacks}

        # cdk diff: nothing against what was deployed; the change against the changed fleet
        unchanged = cdk(server, "diff", "--app", str(out))
        assert unchanged.stdout.count("There were no differences") + unchanged.stderr.count(
            "There were no differences") == 5
        diff = cdk(server, "diff", "--app", str(changed), "nf-dev-network")
        text = diff.stdout + diff.stderr
        assert "[~] AWS::Logs::LogGroup Network/FlowLogs" in text and "RetentionInDays" in text
        # a second deploy of the changed stack: UPDATE_COMPLETE, and what moto could not update is reported
        cdk(server, "deploy", "--app", str(changed), "nf-dev-network", "--require-approval", "never")
        network = server.client("cloudformation").describe_stacks(StackName="nf-dev-network")["Stacks"][0]
        assert network["StackStatus"] == "UPDATE_COMPLETE"
        assert SERVER_GAPS["no_update"].format(type="AWS::Logs::LogGroup") in server.result.stand_ins

        cdk(server, "destroy", "--app", str(changed), "--all", "--force")
        assert_destroy_leaves_only_retained(server, before, changed)
        assert SERVER_GAPS["delete"] in server.result.stand_ins

        # a template moto cannot take: the CLI's own failure with moto's reason, and the stack rolled back
        app = tmp_path / "bad_app.py"
        app.write_text(BAD_APP)
        bad = cdk(server, "deploy", "--app", f"{sys.executable} {app}", "--require-approval", "never", "-o",
                  str(tmp_path / "bad"), check=False)
        text = bad.stdout + bad.stderr
        assert bad.returncode != 0, text
        assert "Bad failed to deploy" in text and "ml.bogus.xlarge" in text and "ROLLBACK_COMPLETE" in text, text
        stack = server.client("cloudformation").describe_stacks(StackName="Bad")["Stacks"][0]
        assert stack["StackStatus"] == "ROLLBACK_COMPLETE"
        assert "Config" in stack["StackStatusReason"] and "ml.bogus.xlarge" in stack["StackStatusReason"]
        assert SERVER_GAPS["failed"] in server.result.stand_ins


BAD_APP = """
import aws_cdk as cdk
from aws_cdk import aws_iam as iam, aws_sagemaker as sagemaker

app = cdk.App()
stack = cdk.Stack(app, "Bad")
role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
model = sagemaker.CfnModel(stack, "Model", execution_role_arn=role.role_arn,
                           primary_container={"image": "763104351884.dkr.ecr.us-east-2.amazonaws.com/djl:latest"})
sagemaker.CfnEndpointConfig(stack, "Config", production_variants=[{
    "variantName": "v", "modelName": model.attr_model_name, "instanceType": "ml.bogus.xlarge",
    "initialInstanceCount": 1}])
app.synth()
"""


def test_prod_bootstrap_deploy_diff_destroy(tmp_path) -> None:
    out = synth(tmp_path / "prod", "-c", "env=prod")
    with moto_server(account="333333333333", region="us-east-2") as server:
        cdk(server, "bootstrap", "--app", str(out), "aws://333333333333/us-east-2")
        before = server.inventory()
        deploy = cdk(server, "deploy", "--app", str(out), "--all", "--require-approval", "never")
        result = server.deployed()
        assert len(result.stacks) == 8 and result.ok, [(s.name, s.status, s.reason) for s in result.stacks]
        assert all(f"✅  {s.name}" in deploy.stdout + deploy.stderr for s in result.stacks)
        unchanged = cdk(server, "diff", "--app", str(out))
        assert (unchanged.stdout + unchanged.stderr).count("There were no differences") == 8
        cdk(server, "destroy", "--app", str(out), "--all", "--force")
        assert_destroy_leaves_only_retained(server, before, out)
