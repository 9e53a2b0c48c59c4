"""`make demo`: the whole kit, offline, no AWS account.

1. validates config/dev.yaml (ENV=NAME for another fleet file) and synthesises every stack through the
   pinned CDK CLI;
2. starts an embedded moto server on localhost (neuronfleet.offline.moto_server: moto's gaps stood in on the
   server side and reported) and runs the real CLI against it: `cdk bootstrap`, then
   `cdk deploy --all --require-approval never`, whose own per-stack output is shown;
3. feeds the cost monitors a month of synthetic usage: a GPU baseline (g6e inference, p4d training)
   migrating to Neuron (inf2 inference, trn1 training) on day 11 and day 16, through Cost Explorer pages,
   SageMaker invocation and token metrics;
4. runs the spend collector and the migration report against the ledger, bucket and topic the CLI deployed,
   and prints what was created and the report.
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


def cdk(*args: str, env: dict[str, str]) -> None:
    """The pinned CDK CLI (Node.js from the venv), its own output on the terminal."""
    env = {**env, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "CDK_DISABLE_CLI_TELEMETRY": "true"}
    print(f"    $ cdk {' '.join(args)}", flush=True)
    subprocess.run([str(BIN / "cdk"), *args], cwd=ROOT, env=env, check=True)


def synth(env_name: str) -> Path:
    out = ROOT / "cdk.out" / f"demo-{env_name}"
    cdk("synth", "--quiet", "-c", f"env={env_name}", "-o", str(out), env=dict(os.environ))
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

    step("cdk synth: every stack, offline (pinned CDK CLI, Node.js from PyPI, cdk-nag-clean constructs)")
    out = synth(env_name)

    import requests

    from neuronfleet.lambdas.cost import collector, report
    from neuronfleet.lambdas.cost.cost_explorer import CostExplorer
    from neuronfleet.lambdas.cost.ledger import Ledger
    from neuronfleet.offline import moto_server

    # an embedded moto server on localhost serving the fleet's account; the CLI gets fake credentials and this
    # endpoint only, so no real account can be reached
    with moto_server(account=fleet.account, region=fleet.region) as server:
        cli = server.cli_env()
        step(f"cdk bootstrap into an embedded moto server ({server.url}, account {server.account})")
        cdk("bootstrap", "--app", str(out), f"aws://{server.account}/{server.region}", env=cli)
        step("cdk deploy --all (the CLI's own output)")
        cdk("deploy", "--app", str(out), "--all", "--require-approval", "never", env=cli)
        result = server.deployed()
        step("what the CLI deployed, as moto holds it")
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
        print(f"    stand-ins for moto's gaps: {len(result.stand_ins)} (neuronfleet.offline, server side)")
        for text in result.stand_ins:
            print(f"      - {text}")
        print(f"    moto's warnings during the deploy: {len(result.warnings)} (in the result, not printed)")
        if not result.ok:
            return 1
        # moto's warnings after the deploy (the handlers below run against it) are not the demo's subject
        warnings.simplefilter("ignore")
        logging.getLogger("moto").setLevel(logging.ERROR)

        outputs = {k: v for s in result.stacks for k, v in s.outputs.items()}
        endpoint = next((v for k, v in outputs.items() if k.endswith("EndpointName")), "none")
        today = datetime.now(UTC).date()

        step(f"feeding the cost monitors a month of usage (endpoint {endpoint}: GPU until day 10, then Neuron)")
        pages, points = month_of_usage(fleet.name, endpoint, today)
        requests.post(f"{server.url}/moto-api/static/ce/cost-and-usage-results",
                      json={"results": pages, "account_id": server.account}, timeout=10)
        cloudwatch = server.client("cloudwatch")
        for p in points:
            cloudwatch.put_metric_data(**p)

        step("running the spend collector (Cost Explorer -> ledger -> CloudWatch), configured as deployed")
        # the handlers run in this process against the deployed resources, with the deployed functions'
        # configuration (moto runs Lambda code only in Docker, which this machine does not have)
        functions = {f["Handler"]: f for f in server.client("lambda").list_functions()["Functions"]}
        deployed = functions["cost.collector.handler"]["Environment"]["Variables"]
        ledger = Ledger(server.resource("dynamodb").Table(deployed["LEDGER_TABLE"]))
        summary = collector.collect(
            today=today, lookback_days=30, instance_types=json.loads(deployed["INSTANCE_TYPES"]),
            ce=CostExplorer(server.client("ce", "us-east-1")), ledger=ledger,
            metrics=collector.SpendMetrics(cloudwatch, deployed["METRICS_NAMESPACE"]), now=datetime.now(UTC),
            on_bad_row=lambda b: print(f"    bad row: {b.reason}"))
        print(f"    {summary.rows} rows, {summary.new} written, {summary.ce_requests} Cost Explorer requests "
              f"(${summary.ce_requests * 0.01:.2f}), {summary.metric_datapoints} metric datapoints")

        step("running the migration report (ledger + invocations + tokens -> S3 and SNS), configured as deployed")
        cfg = functions["cost.report.handler"]["Environment"]["Variables"]
        s3 = server.client("s3")
        rep = report.run(today=today, fleet=cfg["FLEET"], period_days=int(cfg["PERIOD_DAYS"]),
                         endpoints=json.loads(cfg["ENDPOINTS"]), prices=json.loads(cfg["PRICES"]), ledger=ledger,
                         usage=report.Usage(cloudwatch, cfg["TOKENS_NAMESPACE"]), s3=s3,
                         bucket=cfg["REPORT_BUCKET"], sns=server.client("sns"), topic_arn=cfg["ALERTS_TOPIC_ARN"])
        html_key = rep["published"]["html"].split("/", 3)[3]
        page = s3.get_object(Bucket=cfg["REPORT_BUCKET"], Key=html_key)["Body"].read()
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
