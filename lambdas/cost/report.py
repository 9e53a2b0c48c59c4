"""Weekly unit economics and migration report: ledger + SageMaker invocations + token metrics -> S3, SNS.

Configuration: :class:`~.settings.ReportConfig` (read once per container). Tokens are read from its
``tokens_namespace`` (``WORKLOAD_NAMESPACE`` by default: metric Tokens, dimensions Fleet and Variant neuron|gpu).
The fleet's endpoints are found when the report runs: those tagged ``neuronfleet:fleet`` = the fleet, each modelled
from its endpoint configuration (discovery.py; the calls in inventory.FleetEndpoints).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from neuronfleet_contract import namespaces
from neuronfleet_contract.cost import BASIS, PRICE_STALE_DAYS, ReportConfig
from neuronfleet_contract.judge import VERDICT_METRIC, Verdict
from neuronfleet_contract.namespaces import JUDGE_NAMESPACE
from neuronfleet_contract.tags import FLEET_TAG
from neuronfleet_contract.variants import GPU_POOL_SHARE, GPU_VARIANT

from .adapters.inventory import FleetEndpoints
from .adapters.judge_records import JudgeRecordStore
from .adapters.outputs import ReportStore, Topic
from .adapters.pricelist import PriceCache, PriceListApi, plan_endpoint
from .adapters.spend_ledger import SpendLedger
from .adapters.verify_records import VerifyRecordStore
from .adapters.work import UnitCostMetrics, Work
from .logic.batch_spend import SOURCE as BATCH_SOURCE
from .logic.batch_spend import BatchJob, batch_spend
from .logic.confirmations import lines as confirmed_lines
from .logic.discovery import Discovered
from .logic.economics import (
    Counts,
    EndpointModel,
    Spend,
    attribute_hosting,
    measured_ratios,
    price_notes,
    recorded,
    show,
    summary_text,
    unit_costs,
    unit_economics,
    verdict,
)
from .logic.evaluation import Accelerators, estimate
from .logic.net import Overhead, net, overhead_of
from .logic.pricelist import LivePrices, resolve, wanted_types
from .logic.report_page import render_html
from .logic.rows import Basis, CostRow
from .logic.scale_to_zero import async_spend
from .logic.story import break_even, gpu_standby, headline, savings, spend_by_day_family

logger = Logger(service="neuronfleet-cost-report")


BASIS_LABEL = {"net_amortized": "net amortized cost (NetAmortizedCost: Savings Plans and reservations at their "
                                 "effective cost, upfront fees spread, discounts applied)",
               "unblended": "unblended cost (UnblendedCost: charges as billed; usage a Savings Plan covers nets "
                            "to about $0 through SavingsPlanNegation)"}


FLEET_GPU_USAGES = ("ec2", "capacity-block")
"""The fleet's own GPU instances on EC2 and their Capacity Block fees: in the kit, its GPU fallback pool (work it keeps
on GPU). Never priced on Neuron by the evaluation estimate; the same on both sides of the net."""


def list_prices(prices: Mapping[str, Mapping[str, Any]]) -> dict[str, Decimal]:
    """Instance type -> its hourly price in the report's price table (what GPU alone costs a warm standby's type)."""
    out = {}
    for t, p in prices.items():
        try:
            out[t] = Decimal(str(p["usd_per_hour"]))
        except (KeyError, TypeError, ArithmeticError):
            continue
    return {t: v for t, v in out.items() if v.is_finite() and v > 0}


def _usd(value: Decimal) -> str:
    return str(show(value))


def capacity_block_use(rows: Sequence[CostRow]) -> list[dict[str, Any]]:
    """Each Capacity Block seen in the period: its amortised fee and its fleet's instance-hours of its type on its
    days (instances in a block bill $0 of usage but report hours); a block nobody used shows 0 hours."""
    blocks: dict[str, list[CostRow]] = {}
    for r in rows:
        if r.usage == "capacity-block" and r.detail and r.detail != "unmatched":
            blocks.setdefault(r.detail, []).append(r)
    out = []
    for block_id, fee_rows in sorted(blocks.items()):
        first = fee_rows[0]
        days = {r.day for r in fee_rows}
        used = sum((r.usage_hours for r in rows if r.usage == "ec2" and r.fleet == first.fleet
                    and r.instance_type == first.instance_type and r.day in days), Decimal(0))
        out.append({"block_id": block_id, "fleet": first.fleet, "instance_type": first.instance_type,
                    "days": len(days), "fee_usd": _usd(sum((r.amount for r in fee_rows), Decimal(0))),
                    "used_instance_hours": str(used), "unused": used == 0})
    return out


def build(*, fleet: str, rows: Sequence[CostRow], start: date, end: date, invocations: Counts, tokens: Counts,
          prices: Mapping[str, Mapping[str, Any]], basis: Basis = "net_amortized", price_notes: Sequence[str] = (),
          models: Sequence[EndpointModel] = (), synthetic: str = "", accelerators: Accelerators | None = None,
          skipped: Mapping[str, str] | None = None, left_out: Mapping[str, Sequence[str]] | None = None,
          verdicts: Sequence[Verdict] = (), judged: Mapping[str, tuple[str, Decimal]] | None = None,
          judge_notes: Mapping[str, str] | None = None, throughput: Mapping[str, Decimal] | None = None,
          overhead: Overhead | None = None, queried: Sequence[str] = (), batch_jobs: Sequence[BatchJob] = ()
          ) -> dict[str, Any]:
    """The report. ``invocations``/``tokens``: (endpoint, variant, day) -> count; ``models``: the fleet's endpoints
    and their variants' types; ``skipped``: endpoints found but not modelled, and why; ``left_out``: per endpoint,
    what of its configuration its model leaves out; ``verdicts``: the pilot judge's records, per endpoint; ``judged``:
    per endpoint, the judge's latest Verdict metric (day, 1 go / 0 no-go), shown where no record is given;
    ``judge_notes``: per endpoint, why its judge's record gave no verdict (not judged yet, refused, malformed);
    ``throughput``: per endpoint, the Neuron instances one GPU instance replaces as the fleet file states it (the
    only figure a saving against a standby or shadow GPU variant is computed from: story.savings); ``overhead``: the
    kit's own running cost priced at synth (net.py); ``queried``: the days of the period Cost Explorer answered when
    the collector asked (the ledger's marks: a day with no spend is a recorded day); ``batch_jobs``: the fleet's batch
    jobs, each transform row attributed to the model of the one job on its instance type (logic/batch_spend.py). Figures
    are computed at full precision and rounded only where they are shown."""
    accelerators = accelerators or {}
    mine = [r.on(basis) for r in rows if r.fleet == fleet]
    usage = [r for r in mine if r.family]
    adjustments = [r for r in mine if not r.family]
    spend = Spend.of(usage)
    days = (end - start).days
    by_usage: dict[str, Decimal] = {}
    for r in usage:
        by_usage[r.usage] = by_usage.get(r.usage, Decimal(0)) + r.amount
    by_adjustment: dict[str, Decimal] = {}
    for r in adjustments:
        by_adjustment[r.usage] = by_adjustment.get(r.usage, Decimal(0)) + r.amount
    hosting, unattributed, hours = attribute_hosting(usage, models)
    kept = {m.endpoint for m in models if m.gpu_role in ("standby", "shadow")}
    kept_types = {t for m in models for t in (*m.neuron_types, *m.gpu_pool_types,
                                               *((m.gpu_type,) if m.gpu_role in ("standby", "shadow") else ())) if t}
    baseline_types = {m.gpu_type for m in models if m.gpu_role == "baseline"}
    standby = sum((v for (e, var, _), v in hosting.items() if (e in kept and var == GPU_VARIANT) or var == GPU_POOL_SHARE),
                  Decimal(0))
    # GPU work that could move: GPU rows of a team's own GPU endpoints and jobs and of the fleet's GPU baseline
    # variants. Not the fleet's own GPU instances on EC2 (its GPU fallback pool: work it keeps on GPU), not a GPU
    # standby, shadow or pool (kept beside the Neuron work, not work that moves): one saving per spend.
    movable = [r for r in usage if r.family == "gpu" and r.usage not in FLEET_GPU_USAGES
               and r.instance_type not in kept_types]
    in_period = [d for d in queried if start.isoformat() <= d < end.isoformat()]
    recorded_on = recorded(mine, in_period)
    recorded_n = len(recorded_on)
    report: dict[str, Any] = {
        "fleet": fleet,
        "basis": basis,
        "basis_description": BASIS_LABEL[basis],
        "period": {"start": start.isoformat(), "end": end.isoformat(), "days": days, "recorded_days": recorded_n,
                   "estimated_days": sorted({r.day for r in mine if r.estimated})},
        "spend_usd": {
            "total": _usd(sum((r.amount for r in usage), Decimal(0))),
            "by_family": {f: _usd(spend.family(f)) for f in ("trainium", "inferentia", "gpu")},
            "by_workload_family": {f"{w}/{f}": _usd(v) for (w, f), v in sorted(spend.by.items())},
            "by_usage": {k: _usd(v) for k, v in sorted(by_usage.items())},
            "gpu_standby_shadow_and_pools": _usd(standby),
        },
        "adjustments_usd": {k: _usd(v) for k, v in sorted(by_adjustment.items())},
        "capacity_blocks": capacity_block_use(mine),
        "endpoints": {"modelled": sorted(m.endpoint for m in models), "skipped": dict(sorted((skipped or {}).items())),
                      "left_out": {k: list(v) for k, v in sorted((left_out or {}).items())}},
        "unit_economics": unit_economics(models, hosting, invocations, tokens),
        "unattributed": unattributed,
        "verdict": verdict(Spend.of(movable), recorded_n, period_days=days),
        "evaluation_estimate": estimate(movable, prices, accelerators=accelerators,
                                        ratios=measured_ratios(models, hours, invocations)),
        "price_notes": list(price_notes),
        "sources": {"endpoints": f"the SageMaker endpoints tagged {FLEET_TAG}={fleet} when the report ran (Resource "
                                 "Groups Tagging API), each modelled from its endpoint configuration: variants' "
                                 "instance types and pools, the family of each from the instance catalog",
                    "spend": f"Cost Explorer {BASIS_LABEL[basis].split(' (')[0]} via the ledger; credits, refunds "
                             "and taxes apart (adjustments_usd); Capacity Block fees amortised per day over the block; "
                             "SageMaker hosting attributed to a model by its variant's instance type",
                    "inferences": "AWS/SageMaker Invocations per endpoint and variant (neuron, gpu), per day",
                    "scale_to_zero": "asynchronous endpoints' AsyncInf: hosting rows of the ledger, per model: spend, "
                                     "instance-hours, hours at zero instances, and the same endpoint always on at its "
                                     "billed rate (logic/scale_to_zero.py)",
                    "batch_transform": BATCH_SOURCE,
                    "recorded_days": "the days of the period Cost Explorer answered when the collector asked "
                                     "(the ledger's QUERIED marks: a day with no spend included, a day never asked "
                                     "not) and the days the ledger holds rows for; monthly rates scale from them",
                    "tokens": f"{namespaces.WORKLOAD_NAMESPACE} {namespaces.TOKENS_METRIC} (Fleet, Endpoint, Variant) "
                              "published by the workloads",
                    "prices": "each price's origin: the fleet file's override, else the AWS Price List Query API "
                              "(pricing:GetProducts, read when the report ran or cached up to a week), else the "
                              "neuronfleet catalog; each carries its source and date (see price_notes)"},
    }
    names = {m.endpoint: m.name for m in models}
    econ = report["unit_economics"]["models"]
    report["spend_usd"]["by_day_family"] = spend_by_day_family(usage)
    report["gpu_standby"] = gpu_standby(econ, names, recorded_n)
    report["pilot_verdicts"] = [{**v.to_json(), "model": names.get(v.endpoint, v.endpoint), "line": v.line()}
                                for v in verdicts]
    recorded_verdicts = {v.endpoint for v in verdicts}
    report["pilot_verdicts"] += [
        {"endpoint": e, "model": names.get(e, e), "go": value >= 1, "verdict": "go" if value >= 1 else "no-go",
         "failing": [], "variants": {}, "unit": None, "synthetic": False, "finished_at": day,
         "source": f"the judge's {VERDICT_METRIC} metric ({JUDGE_NAMESPACE}) on {day}"}
        for e, (day, value) in sorted((judged or {}).items()) if e not in recorded_verdicts]
    report["judge_records"] = [{"endpoint": e, "model": names.get(e, e), "note": note}
                               for e, note in sorted((judge_notes or {}).items())]
    listed = list_prices(prices)
    report["savings"] = savings(econ, names, verdicts, recorded_n, hours=hours, ratios=throughput, list_prices=listed)
    report["scale_to_zero"] = async_spend(usage, models, recorded_on)
    report["batch_transform"] = batch_spend(usage, batch_jobs)
    for m in econ:  # SageMaker publishes no Invocations for these: the report says so, never "$None/M"
        m["asynchronous"] = any(z["endpoint"] == m["endpoint"] for z in report["scale_to_zero"])
    report["break_even"] = break_even(econ, names, verdicts, hours=hours, ratios=throughput,
                                      claimed=[s["endpoint"] for s in report["savings"]], list_prices=listed)
    report["net"] = net(
        models=econ, savings=report["savings"], names=names, recorded_days=recorded_n,
        fleet_gpu_ec2_usd=sum((r.amount for r in usage if r.family == "gpu" and r.usage in FLEET_GPU_USAGES), Decimal(0)),
        trainium_training_usd=sum((r.amount for r in usage if r.family == "trainium" and r.workload == "training"),
                                  Decimal(0)),
        movable_gpu_usd=sum((r.amount for r in movable if r.instance_type not in baseline_types), Decimal(0)),
        total_usd=sum((r.amount for r in usage), Decimal(0)),
        overhead=overhead.lines if overhead else (), overhead_not_priced=overhead.not_priced if overhead else (),
        no_go=[v.endpoint for v in verdicts if v.outcome == "no-go"])
    report["story"] = headline(net=report["net"], savings=report["savings"], standby=report["gpu_standby"],
                               break_even=report["break_even"], estimate=report["evaluation_estimate"],
                               pilot=[(str(v["model"]), str(v["verdict"])) for v in report["pilot_verdicts"]],
                               synthetic=bool(synthetic))
    report["_unit_costs"] = unit_costs(models, hosting, invocations, tokens)
    if synthetic:
        report["synthetic"] = synthetic
    return report


def publish(report: dict[str, Any], *, store: ReportStore, topic: Topic, metrics: UnitCostMetrics | None = None,
            at: datetime | None = None) -> dict[str, str]:
    """JSON and HTML to the bucket, the unit costs to CloudWatch (the dashboard's figures), a summary to the topic."""
    exact = report.pop("_unit_costs", [])
    if metrics is not None and at is not None:
        metrics.publish(report["fleet"], exact, at)
    prefix = f"reports/{report['fleet']}/{report['period']['end']}"
    out = {"json": store.put(f"{prefix}/report.json", json.dumps(report, indent=1), "application/json"),
           "html": store.put(f"{prefix}/report.html", render_html(report), "text/html; charset=utf-8")}
    topic.announce(f"neuronfleet: migration report {report['fleet']}",
                   summary_text(report) + f"\n\nFull report: {out['html']}")
    return out


def run(*, today: date, fleet: str, period_days: int, prices: Mapping[str, Any], ledger: SpendLedger, usage: Work,
        s3: Any, bucket: str, sns: Any, topic_arn: str, endpoints: Discovered, basis: Basis = BASIS,
        stale_after_days: int = PRICE_STALE_DAYS, synthetic: str = "", accelerators: Accelerators | None = None,
        live: LivePrices | None = None, now: datetime | None = None, verdicts: Sequence[Verdict] = (),
        judge_notes: Mapping[str, str] | None = None, throughput: Mapping[str, Decimal] | None = None,
        overhead: Overhead | None = None, verified: VerifyRecordStore | None = None,
        batch_jobs: Sequence[BatchJob] = ()) -> dict[str, Any]:
    """The report over the fleet's ``endpoints`` (FleetEndpoints.models: found by their tag when the run starts),
    stored, published and announced. ``prices``: the function's price table (catalog and overrides); ``live``: the
    Price List lookup (None: none), asked for the types the report can use (pricelist.wanted_types); ``verified``:
    where ``neuronfleet verify`` records are read from (the report bucket's ``verify/<fleet>/``; None: the section
    "What is confirmed on this account" is left out); ``batch_jobs``: the fleet's batch jobs (ReportConfig.batch_jobs),
    by which its batch transform spend is attributed to models."""
    start = today - timedelta(days=period_days)
    days = [(start + timedelta(days=i)).isoformat() for i in range(period_days)]
    t0 = datetime.combine(start, datetime.min.time(), UTC)
    t1 = datetime.combine(today, datetime.min.time(), UTC)
    models = endpoints.models
    names = sorted({m.endpoint for m in models})
    rows = ledger.rows(days)
    queried = sorted(ledger.queried(days))
    wanted = wanted_types(prices, {r.instance_type for r in rows if r.fleet == fleet}, accelerators or {})
    found = live.lookup(wanted, now or datetime.now(UTC)) if live is not None else None
    table = resolve(prices, found.prices if found else {})
    used = {t: table[t] for t in sorted(set(wanted) | {t for t, p in table.items() if p["origin"] == "override"})
            if t in table}
    report = build(fleet=fleet, rows=rows, start=start, end=today,
                   invocations=usage.invocations(names, t0, t1), tokens=usage.tokens(fleet, names, t0, t1),
                   judged=usage.verdicts(fleet, names, t0, t1),
                   prices=table, basis=basis, models=models, synthetic=synthetic, accelerators=accelerators,
                   price_notes=price_notes(used, today=today, stale_after_days=stale_after_days,
                                           live_note=found.note() if found else ""),
                   skipped=endpoints.skipped, left_out=endpoints.notes, verdicts=verdicts, judge_notes=judge_notes,
                   throughput=endpoints.throughput if throughput is None else throughput, overhead=overhead,
                   queried=queried, batch_jobs=batch_jobs)
    report["price_origins"] = {t: p["origin"] for t, p in used.items()}
    if verified is not None:
        report["confirmed_on_account"] = confirmed_lines(verified.latest(bucket, fleet))
    if found is not None:
        report["price_list"] = {"requests": found.requests, "cached": sorted(found.from_cache),
                                "not_live": dict(sorted(found.failed.items()))}
    report["published"] = publish(report, store=ReportStore(s3, bucket), topic=Topic(sns, topic_arn),
                                  metrics=UnitCostMetrics(usage.client), at=t1)
    return report


@dataclass(frozen=True)
class Container:
    """What one Lambda container builds once: its settings, clients and adapters."""

    settings: ReportConfig
    endpoints: FleetEndpoints
    ledger: SpendLedger
    usage: Work
    s3: Any
    sns: Any
    live: LivePrices | None = None
    judges: JudgeRecordStore | None = None


def live_prices(settings: ReportConfig, table: Any) -> LivePrices | None:
    """The Price List lookup of this container (None when the settings turn it off): the endpoint nearest the
    function's region (botocore's list), botocore's standard retries for throttling, the ledger as its cache."""
    if not settings.live_prices:
        return None
    session = boto3.session.Session()
    region = session.region_name
    endpoint, why = plan_endpoint(region, session)
    api = None
    if endpoint is not None:
        from botocore.config import Config

        api = PriceListApi(session.client("pricing", region_name=endpoint,
                                          config=Config(retries={"mode": "standard", "max_attempts": 5})))
    return LivePrices(api=api, region=region or "", cache=PriceCache(table),
                      max_age=timedelta(days=settings.price_cache_days), unavailable=why)


@cache
def container() -> Container:
    settings = ReportConfig.from_environment()
    endpoints = FleetEndpoints(tagging=boto3.client("resourcegroupstaggingapi"), sagemaker=boto3.client("sagemaker"),
                               fleet=settings.fleet, on_skip=lambda name, reason: logger.warning(
                                   "endpoint skipped", extra={"endpoint": name, "reason": reason}))
    table = boto3.resource("dynamodb").Table(settings.ledger_table)
    s3 = boto3.client("s3")
    return Container(settings=settings, endpoints=endpoints, ledger=SpendLedger(table),
                     usage=Work(boto3.client("cloudwatch"), settings.tokens_namespace), s3=s3,
                     sns=boto3.client("sns"), live=live_prices(settings, table),
                     judges=JudgeRecordStore(s3) if settings.judges else None)


@logger.inject_lambda_context
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, str]:
    c = container()
    s = c.settings
    found = c.endpoints.models(s.accelerators)
    for name, notes in found.notes.items():
        logger.info("endpoint modelled in part", extra={"endpoint": name, "left_out": list(notes)})
    judged = c.judges.latest(s.judges) if c.judges is not None else None
    for name, note in (judged.notes if judged else {}).items():
        logger.info("no pilot verdict record", extra={"endpoint": name, "note": note})
    report = run(today=datetime.now(UTC).date(), fleet=s.fleet, period_days=s.period_days, endpoints=found,
                 prices=s.prices, ledger=c.ledger, usage=c.usage, s3=c.s3, bucket=s.report_bucket, sns=c.sns,
                 topic_arn=s.topic_arn, basis=s.basis, stale_after_days=s.stale_after_days,  # type: ignore[arg-type]
                 accelerators=s.accelerators, live=c.live, verdicts=judged.verdicts if judged else (),
                 judge_notes=judged.notes if judged else None, overhead=overhead_of(s.overhead_bill()),
                 verified=VerifyRecordStore(c.s3), batch_jobs=s.batch_jobs)
    logger.info("report published", extra={"published": report["published"], "verdict": report["verdict"]})
    return report["published"]
