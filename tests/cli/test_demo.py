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
    assert "stand-ins for moto's gaps: 7 (neuronfleet.offline, server side)" in out
    # the compute environment names its security group: moto's launch-template-groups stand-in is no longer needed
    assert "security groups" not in out.split("stand-ins for moto's gaps")[1].split("moto's warnings")[0]
    assert "created with the template's EndpointName" in out
    assert "given them from its template after ExecuteChangeSet" in out
    # moto's warnings are counted in the result, never printed
    assert "Warning" not in out + result.stderr and "Moto CloudFormation support" not in out + result.stderr
    assert "Error on request" not in result.stderr
    assert re.search(r"90 rows, 90 written, \d+ Cost Explorer requests \(\$0\.0\d\)", out)
    # synthetic usage from config/dev.yaml's own types and endpoints, and said to be synthetic
    assert "synthetic: training: dev 1 x trn1.2xlarge, 24 h a day" in out
    assert "synthetic: endpoint chat-dev: 1 x ml.inf2.xlarge, 1M inferences a day" in out
    assert "migration report of nf-dev (SYNTHETIC usage:" in out
    for gpu in ("g6e", "p4d"):  # the old fixed scenario, which was not the dev fleet
        assert gpu not in out.split("feeding the cost monitors")[1]
    # the model as the fleet file names it (the endpoint's neuronfleet:model tag), not the generated endpoint name
    # a cost per million says what it is: recorded (the fleet's spend over its metrics)
    assert ("per model: chat-dev: Neuron $18.20/M inferences recorded (the fleet's spend over its Invocations metric)"
            in out)
    # the evaluation phase: a synthetic GPU baseline (the GPU endpoint a team would move from), priced on Neuron; it
    # is outside the fleet, and said so (the page then lists it as no endpoint's spend, the estimate's GPU work)
    assert ("synthetic: GPU baseline: 1 x ml.g5.xlarge around the clock, a GPU endpoint outside the fleet (as a team "
            "would serve chat-dev on GPU today)") in out
    # the same 720 inf2.xlarge hours read the same on both sides: spend at full precision, as Cost Explorer answers
    # (daily amounts rounded to cents made it $546.00 against the estimate's $545.90)
    assert "synthetic spend inferentia  $545.90\n" in out and "synthetic spend gpu         $724.32\n" in out
    assert "evaluation estimate: ml.g5.xlarge (inference) -> ml.inf2.xlarge: $724.32 -> $545.90 (assumed" in out
    assert re.search(r"the story of nf-dev \(evaluation\), SYNTHETIC figures: Synthetic: the GPU work recorded "
                     r"\(\$724\.32\) would cost \$545\.90 on Neuron, 24\.63% less", out)
    page = (ROOT / "cdk.out" / "demo-dev" / "migration-report.html").read_text()
    assert ("$724.32 not attributed to a model: no endpoint of this fleet is configured on this type; GPU work outside "
            "the fleet") in page
    assert "$546.00" not in page


def test_the_prod_demo_speaks_of_the_prod_fleet_and_says_its_usage_is_synthetic() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | {"ENV": "prod"}
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py")], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    out = result.stdout.split("feeding the cost monitors")[1]
    assert "synthetic: training: pretrain 8 x trn2u.48xlarge" in out
    assert "synthetic: training: finetune 4 x trn2.48xlarge" in out
    assert "synthetic: GPU fallback pool: 2 x p5.48xlarge" in out
    assert "synthetic: endpoint chat: 2 x ml.inf2.48xlarge, GPU standby 1 x ml.p5.48xlarge" in out
    assert "migration report of nf-prod (SYNTHETIC usage:" in out
    assert "g6e" not in out and "p4d" not in out and "trn1" not in out
    # the standby is insurance and its failover day apart, never savings; the verdict is on GPU spend that could move
    assert "GPU standby $38307.84 over 29 days (insurance, not savings)" in out
    assert "failover days: 1, $1320.96, 50000 inferences" in out
    assert "verdict: No GPU inference spend to move (monthly rate from 30 of 30 recorded days)" in out
    assert "evaluation estimate: p5.48xlarge (training) -> trn2.48xlarge" in out
    # the production phase: the saving against GPU from the pilot judge's verdict (fixture answers, said so), and
    # the hot standby set against the Neuron spend it protects
    assert "pilot judge: nfprodinference-chat-" in out and "[synthetic: fixture answers]" in out
    # the judge's figures are single-stream and said so; the saving rests on config/prod.yaml's own throughput ratio
    # (one p5.48xlarge does what 4 inf2.48xlarge do): 1440 inf2 hours / 4 x $55.04, not the judge's 3.53x (71.70%)
    assert "single-stream (one request at a time, 20 prompts, list prices): $33.81 vs $119.44 per million tokens" in out
    assert ("saving: chat: Neuron $18693.07/month against GPU $19814.40/month: $1121.33 (5.66%), from the fleet file's "
            "throughput ratio: one ml.p5.48xlarge does the work of 4 ml.inf2.48xlarge") in out
    assert "71.70" not in out and "3.53x" not in out
    assert ("GPU standby: chat: hot on ml.p5.48xlarge, $39628.80/month against $18693.07/month of Neuron serving it "
            "protects (67.95%)") in out
    assert re.search(r"the story of nf-prod \(production\), SYNTHETIC figures: Synthetic: Neuron serves chat for "
                     r"\$18693\.07 a month where the same work on GPU would cost \$19814\.40 \(at the fleet file's "
                     r"throughput ratio for chat, 4 Neuron instances per GPU instance; break-even at 4\.24\): "
                     r"\$1121\.33 a month saved \(5\.66%\)", out)


def test_the_pilot_demo_reports_the_judges_record_as_the_deployed_report_reads_it() -> None:
    """`ENV=pilot make demo`: the deployed judge runs on fixtures and writes latest.json into its records bucket (in the
    inference stack); the report finds it through its own deployed configuration (JUDGE_RECORDS, the bucket name
    imported from the inference stack) and its adapter, and shows the verdict with its measured costs (synthetic,
    said so)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | {"ENV": "pilot"}
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py")], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    out = result.stdout
    assert re.search(r"the report reads 1 pilot judge record\(s\) named in its configuration: "
                     r"s3://nf-pilot-inference-chatjudgerecords[0-9a-z-]+/judge/nfpilotinference-chat-[0-9a-f]{8}/"
                     r"latest\.json", out)
    assert re.search(r"pilot judge: nfpilotinference-chat-[0-9a-f]{8}: GO: .*\$[\d,.]+ vs \$[\d,.]+ per million "
                     r"tokens \(Neuron vs GPU\).*\[synthetic: fixture answers\]", out)
    assert re.search(r"the story of nf-pilot \(pilot\), SYNTHETIC figures: Synthetic: .*pilot: chat go\.", out)
    # the judge's cost per million is single-stream (6 prompts, one at a time): shown, labelled, never a saving;
    # pilot.yaml states no throughput ratio, so no saving is claimed for chat (the recorded figure is labelled too)
    assert "single-stream (one request at a time, 6 prompts, list prices): $73.92 vs $110.76 per million tokens" in out
    assert "per model: chat: Neuron $0.6231/M tokens recorded (the fleet's spend over its Tokens metric)" in out
    assert "saving: chat" not in out and "Neuron serves chat" not in out
