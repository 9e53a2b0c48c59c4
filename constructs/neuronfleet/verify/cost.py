"""The cost rows of docs/checks.md as checks: Cost Explorer, Data Exports, the Price List, the kit's overhead.

The judges are pure and tested on publishers' example answers (tests/data/aws_cli: get-cost-and-usage,
list-objects-v2, get-products, lookup-events, list-functions; tests/data/lambda: Lambda's own REPORT line); the Cost
Explorer rows are read by the cost function's own parser (``lambdas.cost.logic.rows``) and the Price List products by
the report's (``lambdas.cost.logic.pricelist``), so verify judges what the kit reads the way the kit reads it.
"""

from __future__ import annotations

import csv
import io
import json
import re
import zlib
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from ..lambdas.cost.logic.pricelist import MalformedProduct, choose, parse_product, wanted_attributes
from ..lambdas.cost.logic.rows import FEE_RECORD_TYPES, parse
from ..preflight.checks import Failed
from . import applies
from .outcomes import Finding, broken, holds, not_yet, unchecked
from .registry import Check, Context, unreadable

# ------------------------------------------------------------------------------------------------ capacity-block-fee

FEE_LAG = timedelta(days=3)
"""How long after a purchase the fee may take to show in Cost Explorer: lambdas/cost/logic/block_fees.py reads it
"a day or more" after, and Cost Explorer refreshes its data at least once every 24 hours; 3 days leave room."""


def capacity_blocks_of(reservations: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The Capacity Blocks among capacity reservations (``ReservationType: capacity-block``)."""
    return [r for r in reservations if r.get("ReservationType") == "capacity-block"]


def block_fee(results: Sequence[Mapping[str, Any]], blocks: Sequence[Mapping[str, Any]], now: datetime) -> Finding:
    """``capacity-block-fee``: Cost Explorer's Upfront/Refund rows (``ResultsByTime`` grouped by usage type and the
    fleet tag), read by the cost function's parser, show a ``<region>-CapacityBlockFee:<type>`` fee for each type the
    fleet bought a block of; too soon after a purchase is ``not yet``."""
    if not blocks:
        return not_yet("the fleet bought no Capacity Block yet (no capacity reservation tagged with the fleet is a "
                       "block)", "run again 3 days after the first purchase (neuronfleet capacity buy, or the "
                       "lifecycle function's)")
    parsed = parse({"ResultsByTime": list(results)})
    fees = [r for r in parsed.rows if r.usage == "capacity-block" and (r.unblended or 0) > 0]
    booked = {r.instance_type for r in fees}
    missing = sorted({str(b.get("InstanceType")) for b in blocks} - booked)
    if not missing:
        usage_types = sorted({r.usage_type for r in fees})
        tagged = sorted({r.fleet for r in fees})
        return holds(f"fees booked as {', '.join(usage_types)}, record type Upfront, UnblendedCost "
                     f"{sum((r.unblended or Decimal(0)) for r in fees):,.2f} USD (fleet tag: {', '.join(tagged)})")
    bought = [b for b in blocks if str(b.get("InstanceType")) in missing]
    last = max(_when(b.get("CreateDate") or b.get("StartDate")) for b in bought)
    if now - last < FEE_LAG:
        return not_yet(f"no fee row yet for {', '.join(missing)} (bought {last:%Y-%m-%d %H:%M} UTC)",
                       f"run again after {last + FEE_LAG:%Y-%m-%d %H:%M} UTC (Cost Explorer books a fee a day or "
                       "more after the purchase)")
    others = sorted({str(g.get("Keys", ["?"])[0]) for p in results for g in p.get("Groups") or ()})
    return broken(f"no CapacityBlockFee:<type> row for {', '.join(missing)} {(now - last).days} days after the "
                  f"purchase; the Upfront/Refund usage types seen: {', '.join(others) or 'none'}",
                  "block training looks free and the report lists the fee as unmatched: the fee is booked under "
                  "another usage type. Report the usage types above (lambdas/cost/logic/rows.py reads "
                  "'<region>-CapacityBlockFee:<type>')")


def _when(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    raise ValueError(f"CreateDate: got {value!r}; allowed: a timestamp (boto3 gives a datetime)")


# ------------------------------------------------------------------------------------------------ data exports

EXPORT_FIRST_DELIVERY = timedelta(hours=24)
"""Data Exports delivers an export's first data up to 24 hours after it is created (AWS Data Exports user guide,
"Creating exports": "It can take up to 24 hours for AWS to start delivering exports to your Amazon S3 bucket")."""


def export_delivered(export: Mapping[str, Any], objects: Sequence[Mapping[str, Any]], now: datetime) -> Finding:
    """``data-exports-delivery``: the export (GetExport) has written objects under its destination's prefix
    (ListObjectsV2); none within 24 h of its creation is ``not yet``, none after is broken."""
    destination = export["Export"]["DestinationConfigurations"]["S3Destination"]
    where = f"s3://{destination['S3Bucket']}/{destination['S3Prefix']} ({destination['S3Region']})"
    data = [o for o in objects if str(o.get("Key", "")).endswith((".parquet", ".csv.gz", ".csv", ".gz"))]
    if data:
        newest = max(o["LastModified"] for o in data)
        return holds(f"{len(data)} export objects under {where}, the newest {newest:%Y-%m-%d %H:%M} UTC")
    status = export.get("ExportStatus") or {}
    created = status.get("CreatedAt")
    if isinstance(created, datetime) and now - created < EXPORT_FIRST_DELIVERY:
        return not_yet(f"nothing under {where} yet; the export was created {created:%Y-%m-%d %H:%M} UTC",
                       f"run again after {created + EXPORT_FIRST_DELIVERY:%Y-%m-%d %H:%M} UTC (Data Exports takes "
                       "up to 24 hours to deliver first)")
    return broken(f"nothing under {where} ({len(objects)} other objects) a day after the export's creation; its "
                  f"status: {status.get('StatusCode', 'not given')} {status.get('StatusReason', '')}".rstrip(),
                  "the Athena path reads nothing: Data Exports does not deliver to this bucket. Check the bucket "
                  "policy (bcm-data-exports.amazonaws.com, aws:SourceArn of the export) and, if it is right, put the "
                  "fleet in us-east-1 or use cost_monitors.source: cost-explorer")


# ------------------------------------------------------------------------------------------------ cur-resource-tags

TAGS_COLUMN = "resource_tags"
"""The CUR 2.0 column ``neuronfleet estimate --workload-tag`` reads (cost/exports.py CUR2_COLUMNS["tags"])."""


def csv_exports(exports: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The account's CUR 2.0 exports written as CSV (GetExport answers): the files ``neuronfleet estimate`` reads."""
    out = []
    for answer in exports:
        export = answer.get("Export") or {}
        s3 = (export.get("DestinationConfigurations") or {}).get("S3Destination") or {}
        output = s3.get("S3OutputConfigurations") or {}
        query = str((export.get("DataQuery") or {}).get("QueryStatement") or "")
        if output.get("Format") == "TEXT_OR_CSV" and "COST_AND_USAGE_REPORT" in query.upper():
            out.append(answer)
    return out


def first_lines(head: bytes) -> list[str]:
    """The whole lines at the start of an object's first bytes (gzip inflated as far as the bytes go; the last,
    cut line dropped)."""
    if head[:2] == b"\x1f\x8b":
        head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head)
    lines = head.decode("utf-8", errors="replace").split("\n")
    return [line.rstrip("\r") for line in lines[:-1]]


def tags_cells(lines: Sequence[str], where: str) -> Finding:
    """``cur-resource-tags``: the ``resource_tags`` cells of a CUR 2.0 CSV's first rows are JSON objects (as
    ``neuronfleet estimate --workload-tag`` reads them); a cell that is not is broken."""
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    if TAGS_COLUMN not in (reader.fieldnames or []):
        return unchecked(f"{where} has no {TAGS_COLUMN} column ({len(reader.fieldnames or [])} columns)",
                         f"add {TAGS_COLUMN} to the export's query (neuronfleet estimate --workload-tag needs it)")
    cells = [str(row.get(TAGS_COLUMN) or "").strip() for row in reader]
    tagged = [c for c in cells if c and c != "{}"]
    if not tagged:
        return not_yet(f"no tagged line among the first {len(cells)} rows of {where}",
                       "run again when the export holds tagged resources' lines, or check a later object by hand")
    for cell in tagged:
        try:
            value = json.loads(cell)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            return broken(f"{where}: a {TAGS_COLUMN} cell reads {cell[:120]!r}, not a JSON object",
                          "neuronfleet estimate --workload-tag finds no tag and leaves the rows unknown: report the "
                          "cell (cost/exports.py reads the column as JSON)")
    return holds(f"{where}: {len(tagged)} {TAGS_COLUMN} cells are JSON objects, e.g. {tagged[0][:80]}")


# ------------------------------------------------------------------------------------------------ the Price List

def one_product(instance_type: str, region: str, texts: Sequence[str], today: date) -> Finding:
    """``price-list-filters``: the report's own filters (lambdas/cost/logic/pricelist.py) single out one price for
    ``instance_type``; none, or several different prices, are broken (the report falls back to the catalog)."""
    answer = choose(instance_type, region, texts, read_on=today.isoformat())
    if answer.entry is None:
        aside = f" ({'; '.join(answer.set_aside[:2])})" if answer.set_aside else ""
        return broken(f"{instance_type} in {region}: {answer.reason}{aside}",
                      "the report falls back to the catalog price and says so. Compare the products with the "
                      "filters (aws pricing get-products ...) and report the attribute that differs")
    return holds(f"{instance_type} in {region}: {len(texts)} products, one price {answer.entry['usd_per_hour']} "
                 f"USD/h ({answer.entry['source']})")


def rates(texts: Sequence[str]) -> list[tuple[str, str, Decimal, str]]:
    """(SKU, unit, USD, usage type) of every non-zero On-Demand price dimension of the products."""
    out = []
    for text in texts:
        try:
            product = parse_product(text)
        except MalformedProduct:
            continue
        for term in product.on_demand:
            for d in term.dimensions:
                if d.usd is not None and d.usd > 0:
                    out.append((product.sku, d.unit, d.usd, product.attributes.get("usagetype", "")))
    return out


def fsx_rates(texts: Sequence[str], region: str) -> Finding:
    """``fsx-price``: the Price List's FSx for Lustre PERSISTENT_2 rates per GB-month in ``region``; the kit leaves
    them unpriced until a source is added, so the finding gives them (and holds when there are some)."""
    found = [r for r in rates(texts) if r[1].lower() in ("gb-mo", "gb-month")]
    if not found:
        return unchecked(f"the Price List answered {len(texts)} AmazonFSx products for Persistent_2 in {region}, "
                         "none with a USD rate per GB-Mo", "read the FSx for Lustre pricing page for the region, "
                         "then add the rate with its source to facts/data/overhead_prices.json")
    shown = "; ".join(f"{usage} {usd} USD/{unit}" for _, unit, usd, usage in sorted(found, key=lambda r: r[3])[:6])
    return holds(f"{region}: {shown}. The bill leaves the file systems unpriced: add the rate of your throughput "
                 "with this source (aws pricing get-products, read today) to facts/data/overhead_prices.json")


def rate_matches(key: str, kit: Decimal, texts: Sequence[str], region: str) -> Finding:
    """``region-overhead-rates`` and ``quoted-rates``: the Price List's rate for the region against the kit's
    (``overhead_prices.json``): equal holds; different is broken (the bill is off by the difference); none found is
    unchecked."""
    found = sorted({usd for _, _, usd, _ in rates(texts)})
    if not found:
        return unchecked(f"{key}: the Price List answered no priced product in {region} ({len(texts)} products)",
                         "read the service's pricing page for the region")
    if kit in found:
        return holds(f"{key}: {kit} USD in {region}, as the kit prices it")
    return broken(f"{key}: the Price List gives {', '.join(str(u) for u in found)} USD in {region}; the kit prices "
                  f"{kit}", "the overhead bill is off by the difference: set the rate with this source (aws pricing "
                  "get-products, read today) in facts/data/overhead_prices.json")


# ------------------------------------------------------------------------------------------------ function durations

REPORT = re.compile(r"^REPORT RequestId: \S+\s+Duration: [\d.]+ ms\s+Billed Duration: (?P<billed>\d+(?:\.\d+)?) ms")
"""Lambda's REPORT line (AWS Lambda developer guide, python-logging: tests/data/lambda)."""


def billed_ms(messages: Sequence[str]) -> list[float]:
    """Billed Duration (ms) of each REPORT line among log messages."""
    return [float(m["billed"]) for m in (REPORT.match(x.strip()) for x in messages) if m]


def durations(measured: Mapping[str, tuple[int, Sequence[float]]]) -> Finding:
    """``function-durations``: function -> (timeout s, Billed Durations ms). The overhead bill prices each run at
    the whole timeout (an upper bound): the finding gives what the runs take; a run that reached its timeout is
    broken (it timed out: the bound was hit and the function failed)."""
    ran = {k: v for k, v in measured.items() if v[1]}
    if not ran:
        return not_yet(f"no REPORT line in the logs of {len(measured)} functions yet",
                       "run again after the scheduled functions ran (the first day after deploy)")
    timed_out = {k: v for k, v in ran.items() if max(v[1]) >= v[0] * 1000}
    if timed_out:
        name, (timeout, billed) = next(iter(timed_out.items()))
        return broken(f"{name} ran {max(billed) / 1000:.0f} s, its whole timeout ({timeout} s)",
                      "the function timed out: its work did not finish. Read its log for the run; raise its timeout "
                      "or report it")
    parts = [f"{k}: mean {sum(b) / len(b) / 1000:.1f} s, max {max(b) / 1000:.1f} s of {t} s"
             for k, (t, b) in sorted(ran.items())]
    share = sum(sum(b) for _, b in ran.values()) / sum(t * 1000 * len(b) for t, b in ran.values())
    return holds(f"the runs take {share:.0%} of the timeouts the overhead bill prices ({'; '.join(parts[:4])}"
                 + (f" and {len(parts) - 4} more" if len(parts) > 4 else "") + ")")


# ------------------------------------------------------------------------------------------------ service source keys

SERVICES = ("ecs-tasks.amazonaws.com", "vpc-flow-logs.amazonaws.com")
"""The service principals whose AssumeRole calls the row asks about (Batch jobs' ECS tasks, VPC Flow Logs)."""
SOURCE_KEYS = ("sourceaccount", "sourcearn")


def _keys(value: Any) -> set[str]:
    if isinstance(value, Mapping):
        return {str(k).lower() for k in value} | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def source_keys(events: Sequence[Mapping[str, Any]], fleet: str) -> Finding:
    """``service-source-keys``: CloudTrail's AssumeRole records (LookupEvents' ``CloudTrailEvent``) of the fleet's
    roles (their names start with the fleet's stacks', ``<fleet>-``) by ECS tasks and VPC Flow Logs, and whether
    each carries a source account and ARN (in ``requestParameters`` or ``additionalEventData``)."""
    seen: dict[str, list[set[str]]] = {}
    for event in events:
        try:
            record = json.loads(str(event.get("CloudTrailEvent") or "{}"))
        except ValueError:
            continue
        who = (record.get("userIdentity") or {}).get("invokedBy") or record.get("sourceIPAddress")
        role = str((record.get("requestParameters") or {}).get("roleArn") or "")
        if who in SERVICES and role.split("/")[-1].startswith(f"{fleet}-"):
            keys = _keys(record.get("requestParameters")) | _keys(record.get("additionalEventData"))
            seen.setdefault(str(who), []).append(keys)
    if not seen:
        return not_yet(f"no AssumeRole by {' or '.join(SERVICES)} of a {fleet}- role in CloudTrail's lookup",
                       "run again after a training job ran and the flow log delivered (CloudTrail keeps 90 days)")
    parts = []
    for who, records in sorted(seen.items()):
        both = sum(1 for k in records if all(any(s in key for key in k) for s in SOURCE_KEYS))
        parts.append(f"{who}: {both} of {len(records)} AssumeRole records carry a source account and ARN")
    if any("0 of" in p for p in parts):
        return broken("; ".join(parts), "nothing breaks today (the kit sets no source key in these trusts); do not "
                      "add aws:SourceAccount/aws:SourceArn conditions to these roles' trust: the service does not "
                      "send them")
    return holds("; ".join(parts))


# ------------------------------------------------------------------------------------------------ the checks



def _run_fee(context: Context) -> Finding:
    reservations = context.reads.fleet_reservations()
    if isinstance(reservations, Failed):
        return unreadable(reservations, BLOCK_FEE)
    blocks = capacity_blocks_of(reservations)
    if not blocks:
        return block_fee([], [], context.now)
    first = min(_when(b.get("CreateDate") or b.get("StartDate")) for b in blocks).date()
    start = max(first - timedelta(days=1), context.now.date() - timedelta(days=365))
    results = context.reads.costs_by_usage_type(start.isoformat(), (context.now.date() + timedelta(days=1)).isoformat(),
                                                FEE_RECORD_TYPES)
    return unreadable(results, BLOCK_FEE) if isinstance(results, Failed) else block_fee(results, blocks, context.now)




def export_name(fleet: Any) -> str:
    """The kit's export of the fleet (cost/monitors.py: ``<fleet>-cur2``)."""
    return f"{fleet.name}-cur2"


def _run_export(context: Context) -> Finding:
    export = context.reads.export(export_name(context.fleet))
    if isinstance(export, Failed):
        if export.cause == "not found":
            return not_yet(f"no Data Export named {export_name(context.fleet)} (in us-east-1)",
                           "run again after the cost stacks are deployed")
        return unreadable(export, EXPORT_DELIVERY)
    destination = export["Export"]["DestinationConfigurations"]["S3Destination"]
    objects = context.reads.objects(destination["S3Bucket"], destination["S3Prefix"], destination["S3Region"])
    return unreadable(objects, EXPORT_DELIVERY) if isinstance(objects, Failed) else \
        export_delivered(export, objects, context.now)


def _run_tags(context: Context) -> Finding:
    exports = context.reads.exports()
    if isinstance(exports, Failed):
        return unreadable(exports, CUR_RESOURCE_TAGS)
    found = csv_exports(exports)
    if not found:
        return not_yet(f"no CUR 2.0 CSV Data Export in the account ({len(exports)} exports; the kit's own is "
                       "Parquet)", "run again after the team creates the CSV export it gives neuronfleet estimate, "
                       f"or check that file by hand: {CUR_RESOURCE_TAGS.by_hand}")
    for answer in found:
        s3 = answer["Export"]["DestinationConfigurations"]["S3Destination"]
        objects = context.reads.objects(s3["S3Bucket"], s3["S3Prefix"], s3["S3Region"])
        if isinstance(objects, Failed):
            return unreadable(objects, CUR_RESOURCE_TAGS)
        data = sorted((o for o in objects if str(o.get("Key", "")).endswith((".csv", ".csv.gz"))),
                      key=lambda o: o["LastModified"])
        if not data:
            continue
        key = str(data[-1]["Key"])
        head = context.reads.object_start(s3["S3Bucket"], key, s3["S3Region"])
        if isinstance(head, Failed):
            return unreadable(head, CUR_RESOURCE_TAGS)
        return tags_cells(first_lines(head), f"s3://{s3['S3Bucket']}/{key}")
    return not_yet(f"{len(found)} CSV exports, no CSV object delivered yet",
                   "run again a day after the export's creation (Data Exports delivers within 24 hours)")


def priced_types(fleet: Any) -> list[str]:
    """The accelerator types the fleet's report prices: its training clusters' and endpoints' (and GPU variants')."""
    types = {c.instance_type for c in fleet.training_clusters}
    for e in fleet.endpoints:
        types.add(e.instance_type)
        if e.gpu_variant is not None:
            types.add(e.gpu_variant.instance_type)
    return sorted(types)


def _run_price_filters(context: Context) -> Finding:
    findings = []
    for instance_type in priced_types(context.fleet):
        wanted = wanted_attributes(instance_type, context.fleet.region)
        service = "AmazonSageMaker" if instance_type.startswith("ml.") else "AmazonEC2"
        texts = context.reads.products(service, wanted)
        if isinstance(texts, Failed):
            return unreadable(texts, PRICE_LIST_FILTERS)
        findings.append(one_product(instance_type, context.fleet.region, texts, context.now.date()))
    return _worst(findings, "the fleet prices no accelerator type")


def _worst(findings: Sequence[Finding], none: str) -> Finding:
    for outcome in ("broken", "unchecked", "not yet"):
        found = [f for f in findings if f.outcome == outcome]
        if found:
            return found[0]
    return holds("; ".join(f.seen for f in findings)) if findings else not_yet(none, "nothing to check")




def _run_fsx(context: Context) -> Finding:
    texts = context.reads.products("AmazonFSx", {"regionCode": context.fleet.region,
                                                 "deploymentOption": "Persistent_2"})
    return unreadable(texts, FSX_PRICE) if isinstance(texts, Failed) else fsx_rates(texts, context.fleet.region)


REGION_RATES_READ = (("interface-endpoint-az-hour", "AmazonVPC", "VpcEndpoint-Hours"),
                     ("eks-cluster-hour", "AmazonEKS", "AmazonEKS-Hours:perCluster"))
"""(price key, service code, usage type without its region prefix) of the rates read for us-east-1 only: the usage
types as overhead_prices.json's sources and docs/checks.md name them (USE1-AmazonEKS-Hours:perCluster,
USE2-VpcEndpoint-Hours). Public IPv4 is not read: no source here names its usage type."""


def _run_rates(context: Context, check: Check, read: Sequence[tuple[str, str, str]]) -> Finding:
    from ..facts.overhead_prices import overhead_prices

    prices = overhead_prices()
    findings = []
    for key, service, usage in read:
        texts = context.reads.products(service, {"regionCode": context.fleet.region}, {"usagetype": usage})
        if isinstance(texts, Failed):
            return unreadable(texts, check)
        findings.append(rate_matches(key, prices[key].usd, texts, context.fleet.region))
    return _worst(findings, "no rate to read")


QUOTED_RATES_READ = (("alarm-metric-month", "AmazonCloudWatch", "AlarmMonitorUsage"),
                     ("dashboard-month", "AmazonCloudWatch", "DashboardsUsageHour"),
                     ("nat-gateway-hour", "AmazonEC2", "NatGateway-Hours"),
                     ("nat-gateway-gb", "AmazonEC2", "NatGateway-Bytes"))
"""The quoted rates asked of the Price List by a fragment of their usage type (CONTAINS: the region prefix left
out). These usage-type names are not confirmed by a source read here (the NAT gateway's are the ones billing data
shows, CloudWatch's a guess): a name that matches nothing gives ``unchecked`` with the pricing page to read, never a
wrong rate, and a rate found is compared with the kit's."""

def _run_region_rates(context: Context) -> Finding:
    return _run_rates(context, REGION_RATES, REGION_RATES_READ)


def _run_quoted_rates(context: Context) -> Finding:
    return _run_rates(context, QUOTED_RATES, QUOTED_RATES_READ)


SCHEDULED_HANDLERS = ("cost.collector.handler", "cost.report.handler", "cost.waste.handler",
                      "capacity_lifecycle.handler.handler", "capacity_alert.handler.handler",
                      "capacity_alert.nodegroup_handler.handler", "failover.handler.handler", "judge.handler.handler",
                      "pool_schedule.handler.handler")
"""The kit's functions run on a schedule (EventBridge rules in cost/monitors.py, capacity/lifecycle.py,
capacity/alerts.py, eks/capacity_alerts.py, inference/failover.py, judge/pilot_judge.py; EventBridge Scheduler in
sharing/pool.py): the ones the overhead bill prices at their whole timeout per scheduled run (cost/overhead.py)."""
DURATION_WINDOW = timedelta(days=7)


def _run_durations(context: Context) -> Finding:
    functions = context.reads.functions()
    if isinstance(functions, Failed):
        return unreadable(functions, FUNCTION_DURATIONS)
    measured: dict[str, tuple[int, list[float]]] = {}
    for function in (f for f in functions if f.get("Handler") in SCHEDULED_HANDLERS):
        group = (function.get("LoggingConfig") or {}).get("LogGroup") or f"/aws/lambda/{function['FunctionName']}"
        events = context.reads.log_events(group, '"REPORT RequestId"', context.now - DURATION_WINDOW)
        if isinstance(events, Failed) and events.cause != "not found":
            return unreadable(events, FUNCTION_DURATIONS)
        messages = [str(e.get("message", "")) for e in events] if not isinstance(events, Failed) else []
        measured[str(function["FunctionName"])] = (int(function.get("Timeout") or 3), billed_ms(messages))
    if not measured:
        return not_yet("no scheduled function of the fleet is deployed", "run again after deploy")
    return durations(measured)


LOOKBACK = timedelta(days=7)


def _run_source_keys(context: Context) -> Finding:
    events = context.reads.assume_role_events(context.now - LOOKBACK, context.now)
    return unreadable(events, SERVICE_SOURCE_KEYS) if isinstance(events, Failed) else \
        source_keys(events, context.fleet.name)


BLOCK_FEE = Check(
    "capacity-block-fee", "a Capacity Block fee reads as <region>-CapacityBlockFee:<type>, record type Upfront, on "
    "UnblendedCost", "Cost Explorer: record types Upfront and Refund, group by usage type, daily, Unblended",
    run=_run_fee, permission="ec2:DescribeCapacityReservations, ce:GetCostAndUsage", applies=applies.blocks)
EXPORT_DELIVERY = Check(
    "data-exports-delivery", "Data Exports delivers into a bucket outside us-east-1",
    "a day after deploy, aws s3 ls s3://<bucket>/cur2/", run=_run_export,
    permission="bcm-data-exports:ListExports, bcm-data-exports:GetExport, s3:ListBucket", applies=applies.athena)
PRICE_LIST_FILTERS = Check(
    "price-list-filters", "the Price List filters single out one product per type",
    "aws pricing get-products --region us-east-1 --service-code AmazonEC2 --filters "
    "Type=TERM_MATCH,Field=instanceType,Value=trn1.32xlarge Type=TERM_MATCH,Field=regionCode,Value=us-east-2 "
    "Type=TERM_MATCH,Field=operatingSystem,Value=Linux Type=TERM_MATCH,Field=tenancy,Value=Shared "
    "Type=TERM_MATCH,Field=preInstalledSw,Value=NA Type=TERM_MATCH,Field=capacitystatus,Value=Used "
    "Type=TERM_MATCH,Field=marketoption,Value=OnDemand returns one product", run=_run_price_filters,
    permission="pricing:GetProducts")
CUR_RESOURCE_TAGS = Check(
    "cur-resource-tags", "a CUR 2.0 CSV export (a team's own, for neuronfleet estimate; the kit's export is Parquet) "
    "writes resource_tags as a JSON object in its cell",
    "aws s3 cp s3://<bucket>/<prefix>/data/... - | zcat | head -2 shows the resource_tags cell",
    run=_run_tags, permission="bcm-data-exports:ListExports, bcm-data-exports:GetExport, s3:ListBucket, "
    "s3:GetObject")
FSX_PRICE = Check(
    "fsx-price", "FSx for Lustre PERSISTENT_2 SSD rates per GB-month",
    "aws pricing get-products --region us-east-1 --service-code AmazonFSx --filters "
    "Type=TERM_MATCH,Field=regionCode,Value=us-east-2 Type=TERM_MATCH,Field=deploymentOption,Value=Persistent_2",
    run=_run_fsx, permission="pricing:GetProducts", applies=applies.batch)
REGION_RATES = Check(
    "region-overhead-rates", "the us-east-2 rates of interface endpoints, public IPv4 and EKS clusters",
    "aws pricing get-products --region us-east-1 --service-code AmazonVPC --filters "
    "Type=TERM_MATCH,Field=usagetype,Value=USE2-VpcEndpoint-Hours",
    run=lambda c: _run_region_rates(c), permission="pricing:GetProducts")
QUOTED_RATES = Check(
    "quoted-rates", "CloudWatch alarm and dashboard rates and the NAT gateway rates",
    "the CloudWatch and VPC pricing pages for US East (Ohio)",
    run=lambda c: _run_quoted_rates(c), permission="pricing:GetProducts")
FUNCTION_DURATIONS = Check(
    "function-durations", "how long the scheduled functions run",
    "aws logs filter-log-events --log-group-name <each scheduled function's log group> --filter-pattern "
    "'\"REPORT RequestId\"' (Billed Duration)", run=_run_durations,
    permission="tag:GetResources, lambda:ListFunctions, logs:FilterLogEvents")
SERVICE_SOURCE_KEYS = Check(
    "service-source-keys", "ECS and VPC Flow Logs send aws:SourceAccount/aws:SourceArn when they assume their roles",
    "CloudTrail AssumeRole events of the job role and the flow-log role: additionalEventData/requestParameters show "
    "the source account and ARN", run=_run_source_keys, permission="cloudtrail:LookupEvents")
ASYNC_USAGE_TYPE = Check(
    "async-usage-type", "SageMaker bills an asynchronous endpoint on Inferentia/Trainium as <region>-AsyncInf:ml.<type>",
    "aws ce get-cost-and-usage --time-period Start=<day after the endpoint ran>,End=<the day after> --granularity DAILY "
    "--metrics UnblendedCost UsageQuantity --filter '{\"Dimensions\":{\"Key\":\"SERVICE\",\"Values\":"
    "[\"Amazon SageMaker\"]}}' --group-by Type=DIMENSION,Key=USAGE_TYPE shows <region>-AsyncInf:ml.inf2.xlarge",
    manual="it needs billed hours of an asynchronous endpoint, which Cost Explorer shows up to a day later",
    applies=lambda fleet: "" if any(e.invocation == "async" for e in fleet.endpoints)
    else "the fleet has no asynchronous endpoint")

CHECKS: tuple[Check, ...] = (BLOCK_FEE, EXPORT_DELIVERY, PRICE_LIST_FILTERS, CUR_RESOURCE_TAGS, FSX_PRICE,
                             REGION_RATES, QUOTED_RATES, FUNCTION_DURATIONS, SERVICE_SOURCE_KEYS, ASYNC_USAGE_TYPE)
