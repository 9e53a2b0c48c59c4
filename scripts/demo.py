"""`make demo`: the whole kit, offline, no AWS account.

1. validates config/dev.yaml (ENV=NAME for another fleet file) and synthesises every stack through the
   pinned CDK CLI;
2. deploys every stack into an embedded moto (neuronfleet.offline: moto's gaps stood in and reported);
3. feeds the cost monitors a month of synthetic usage: a GPU baseline (g6e inference, p4d training)
   migrating to Neuron (inf2 inference, trn1 training) on day 11 and day 16, through Cost Explorer pages,
   SageMaker invocation and token metrics;
4. runs the spend collector and the migration report against the deployed ledger, bucket and topic, and
   prints what was created and the report.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import warnings
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))

STARTED = time.perf_counter()


def step(text: str) -> None:
    print(f"==> [{time.perf_counter() - STARTED:5.1f}s] {text}", flush=True)


def synth(env_name: str) -> Path:
    out = ROOT / "cdk.out" / f"demo-{env_name}"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "CDK_DISABLE_CLI_TELEMETRY": "true"}
    subprocess.run([str(BIN / "cdk"), "synth", "--quiet", "-c", f"env={env_name}", "-o", str(out)],
                   cwd=ROOT, env=env, check=True)
    return out


def month_of_usage(fleet: str, endpoint: str, today: date) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Cost Explorer pages (one per 10 days) and CloudWatch datapoints for 30 days."""
    from neuronfleet import CATALOG

    def cost(instance_type: str, count: int, hours: float = 24) -> dict[str, Any]:
        price = CATALOG.get(instance_type.removeprefix("ml.")).price.usd_per_hour
        usage_type = f"Host:{instance_type}" if instance_type.startswith("ml.") else f"BoxUsage:{instance_type}"
        return {"Keys": [usage_type, f"neuronfleet:fleet${fleet}"], "Metrics": {
            "NetAmortizedCost": {"Amount": f"{price * hours * count:.2f}", "Unit": "USD"},
            "UnblendedCost": {"Amount": f"{price * hours * count:.2f}", "Unit": "USD"},
            "UsageQuantity": {"Amount": f"{hours * count:g}", "Unit": "Hrs"}}}

    pages, points = [], []
    start = today - timedelta(days=30)
    for block in range(3):
        results = []
        for d in range(block * 10, block * 10 + 10):
            day = start + timedelta(days=d)
            serving = [cost("ml.g6e.xlarge", 4)] if d < 10 else [cost("ml.inf2.xlarge", 4)]
            training = [cost("p4d.24xlarge", 2)] if d < 15 else [cost("trn1.32xlarge", 2)]
            results.append({"TimePeriod": {"Start": day.isoformat(), "End": (day + timedelta(days=1)).isoformat()},
                            "Groups": serving + training, "Total": {}, "Estimated": False})
            variant = "gpu" if d < 10 else "neuron"
            ts = datetime.combine(day, datetime.min.time(), UTC) + timedelta(hours=12)
            points.append({"Namespace": "AWS/SageMaker", "MetricData": [{
                "MetricName": "Invocations", "Value": 1_200_000, "Timestamp": ts,
                "Dimensions": [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": variant}]}]})
            points.append({"Namespace": "NeuronFleet/Workload", "MetricData": [{
                "MetricName": "Tokens", "Value": 300_000_000, "Timestamp": ts,
                "Dimensions": [{"Name": "Fleet", "Value": fleet}, {"Name": "Variant", "Value": variant}]}]})
        page: dict[str, Any] = {"ResultsByTime": results, "DimensionValueAttributes": []}
        if block < 2:
            page["NextPageToken"] = f"page{block + 2}"
        pages.append(page)
    return pages, points


def main() -> int:
    env_name = os.environ.get("ENV", "dev")
    from neuronfleet import load_fleet

    path = ROOT / "config" / f"{env_name}.yaml"
    step(f"validating {path.relative_to(ROOT)}")
    fleet = load_fleet(path)
    print(f"    fleet {fleet.name}, phase {fleet.phase}, account {fleet.account}, {fleet.region}, "
          f"training AZ {fleet.network.training_az}")

    step("synthesising every stack offline (pinned CDK CLI, Node.js from PyPI, cdk-nag-clean constructs)")
    out = synth(env_name)

    import boto3
    import requests

    from neuronfleet.lambdas.cost import collector, report
    from neuronfleet.lambdas.cost.cost_explorer import CostExplorer
    from neuronfleet.lambdas.cost.ledger import Ledger
    from neuronfleet.offline import deploy_assembly, offline_aws

    # an embedded moto serving the fleet's account and region, with fake credentials: no real account can be reached
    with offline_aws(account=fleet.account, region=fleet.region):
        step("deploying every stack into an embedded moto (CloudFormation API)")
        result = deploy_assembly(out)
        for s in result.stacks:
            kinds = Counter({k: v for k, v in s.resources.items()})
            top = ", ".join(f"{n} {k.removeprefix('AWS::')}" for k, n in kinds.most_common(5))
            print(f"    {s.name:28s} {s.status:16s} {sum(s.resources.values()):3d} resources ({top}, ...)")
            if s.status != "CREATE_COMPLETE":
                print(f"      reason: {s.reason}")
        where = sorted({f"account {s.account}, {s.region}" for s in result.stacks})
        print(f"    {len(result.stacks)} stacks, {result.resource_count()} resources in moto, deployed into "
              f"{'; '.join(where)}")
        skipped = sorted(set().union(*(s.skipped for s in result.stacks)))
        print(f"    moto skips (covered by template tests): {', '.join(skipped)}")
        print(f"    stand-ins for moto's gaps: {len(result.stand_ins)} (neuronfleet.offline)")
        for text in result.stand_ins:
            print(f"      - {text}")
        print(f"    moto's warnings during the deploy: {len(result.warnings)} (in the result, not printed)")
        if not result.ok:
            return 1
        # moto's warnings after the deploy (the handlers below run against it) are not the demo's subject
        warnings.simplefilter("ignore")
        logging.getLogger("moto").setLevel(logging.ERROR)

        cfn = boto3.client("cloudformation")
        outputs = {o["OutputKey"]: o["OutputValue"] for s in cfn.describe_stacks()["Stacks"]
                   for o in s.get("Outputs", [])}
        endpoint = next((v for k, v in outputs.items() if k.endswith("EndpointName")), "none")
        today = datetime.now(UTC).date()

        step(f"feeding the cost monitors a month of usage (endpoint {endpoint}: GPU until day 10, then Neuron)")
        pages, points = month_of_usage(fleet.name, endpoint, today)
        requests.post("http://motoapi.amazonaws.com/moto-api/static/ce/cost-and-usage-results",
                      json={"results": pages, "account_id": os.environ["MOTO_ACCOUNT_ID"]}, timeout=10)
        cloudwatch = boto3.client("cloudwatch")
        for p in points:
            cloudwatch.put_metric_data(**p)

        step("running the spend collector (Cost Explorer -> ledger -> CloudWatch), configured as deployed")
        # the handlers run in this process against the deployed resources, with the deployed functions'
        # configuration (moto runs Lambda code only in Docker, which this machine does not have)
        functions = {f["Handler"]: f for f in boto3.client("lambda").list_functions()["Functions"]}
        deployed = functions["cost.collector.handler"]["Environment"]["Variables"]
        ledger = Ledger(boto3.resource("dynamodb").Table(deployed["LEDGER_TABLE"]))
        summary = collector.collect(
            today=today, lookback_days=30, instance_types=json.loads(deployed["INSTANCE_TYPES"]),
            ce=CostExplorer(boto3.client("ce", region_name="us-east-1")), ledger=ledger,
            metrics=collector.SpendMetrics(cloudwatch, deployed["METRICS_NAMESPACE"]), now=datetime.now(UTC),
            on_bad_row=lambda b: print(f"    bad row: {b.reason}"))
        print(f"    {summary.rows} rows, {summary.new} written, {summary.ce_requests} Cost Explorer requests "
              f"(${summary.ce_requests * 0.01:.2f}), {summary.metric_datapoints} metric datapoints")

        step("running the migration report (ledger + invocations + tokens -> S3 and SNS), configured as deployed")
        cfg = functions["cost.report.handler"]["Environment"]["Variables"]
        rep = report.run(today=today, fleet=cfg["FLEET"], period_days=int(cfg["PERIOD_DAYS"]),
                         endpoints=json.loads(cfg["ENDPOINTS"]), prices=json.loads(cfg["PRICES"]), ledger=ledger,
                         usage=report.Usage(cloudwatch, cfg["TOKENS_NAMESPACE"]), s3=boto3.client("s3"),
                         bucket=cfg["REPORT_BUCKET"], sns=boto3.client("sns"), topic_arn=cfg["ALERTS_TOPIC_ARN"])
        html_key = rep["published"]["html"].split("/", 3)[3]
        page = boto3.client("s3").get_object(Bucket=cfg["REPORT_BUCKET"], Key=html_key)["Body"].read()
    local = out / "migration-report.html"
    local.write_bytes(page)

    step("migration report")
    spend = rep["spend_usd"]
    print(f"    period {rep['period']['start']} to {rep['period']['end']}; total ${spend['total']}")
    for family, value in spend["by_family"].items():
        print(f"    spend {family:11s} ${value}")
    for unit in ("inferences", "tokens"):
        e = rep["unit_economics"][unit]
        print(f"    cost per million {unit:10s} Neuron ${e['neuron_usd_per_million']}  GPU ${e['gpu_usd_per_million']}"
              f"  savings vs GPU baseline ${e.get('savings_usd')} ({e.get('savings_percent')}%)")
    for line in rep["verdict"]:
        print(f"    verdict: {line}")
    est = rep["evaluation_estimate"]
    print(f"    evaluation estimate: the GPU work (${est['gpu_spend_usd']}) on Neuron ${est['neuron_estimate_usd']} "
          f"({est['savings_percent']}% less, 1:1 instance-hour assumption)")
    print(f"    full report: {rep['published']['html']} (copy at {local.relative_to(ROOT)})")
    step("done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
