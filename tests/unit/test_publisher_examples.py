"""Every parser of an outside format, run on the publisher's own example (copied verbatim into tests/data/aws_cli and
tests/data/events, sources in their README.md) and on variations derived from it (values changed, keys kept).
Responses with a botocore shape are checked against botocore 1.44.5's model first: a fixture the model
contradicts fails."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from botocore.validate import validate_parameters
from neuronfleet_runtime import reservations

from neuronfleet.lambdas.capacity_alert import logic as capacity
from neuronfleet.lambdas.capacity_alert.adapters import FleetBlocks
from neuronfleet.lambdas.cost.adapters.athena import AthenaSpend, pages_of
from neuronfleet.lambdas.cost.adapters.cost_explorer import adjustments_query, usage_query
from neuronfleet.lambdas.cost.logic.block_amortisation import Block, amortise
from neuronfleet.lambdas.cost.logic.rows import CostRow, parse
from neuronfleet.lambdas.failover.handler import watched
from neuronfleet.lambdas.failover.logic import EndpointBounds
from neuronfleet_contract.capacity_alert import gpu_pool
from neuronfleet_contract.failover import WatchedEndpoint
from tests.publisher_examples import (
    AWS_CLI,
    EVENTS,
    cli_outputs,
    event,
    git_blob_sha,
    output_blocks,
    output_shape,
    response,
    response_errors,
)

REGION = "us-east-2"
POOL = gpu_pool({"queue_arn": "arn:aws:batch:us-east-2:111111111111:job-queue/gpu", "max_vcpus": 192,
                 "types": [{"instance_type": "p5.48xlarge", "gpus": 8, "gpu_name": "H100", "efa": 32, "vcpus": 192}]})
NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)

ATHENA_REPAIRS = {"athena-get-query-results": {245: '                    "Data": [', 246: "    "}}
"""The only lines of AWS's examples taken out: two stray lines that make the get-query-results output invalid JSON
(the get-query-execution output holds a raw newline in a string: read with ``strict=False``)."""


@pytest.fixture(autouse=True)
def credentials(monkeypatch) -> None:
    """Stubbed clients still sign their requests: fake credentials, so botocore looks nowhere else for them."""
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(var, "testing")


def repaired(name: str) -> list[Any]:
    lines = (AWS_CLI / f"{name}.rst").read_text().split("\n")
    for number, text in ATHENA_REPAIRS.get(name, {}).items():
        assert lines[number - 1] == text, (name, number, lines[number - 1])
    kept = [line for i, line in enumerate(lines, 1) if i not in ATHENA_REPAIRS.get(name, {})]
    return [json.loads(b, strict=False) for b in output_blocks("\n".join(kept))]


# ---------------------------------------------------------------- provenance and shapes

def _readme_rows(folder: str) -> dict[str, str]:
    """file name -> the rest of its README table row."""
    text = (AWS_CLI.parent / folder / "README.md").read_text()
    return {m[1]: m[2] for m in re.finditer(r"^\| `([^`]+)` \|(.*)$", text, re.M)}


def test_every_aws_cli_example_is_the_publishers_file_byte_for_byte() -> None:
    rows = _readme_rows("aws_cli")
    files = sorted(p.name for p in AWS_CLI.glob("*.rst"))
    assert sorted(rows) == files
    for name in files:  # the git blob id of aws/aws-cli's file at the commit the README names
        assert git_blob_sha(AWS_CLI / name) in rows[name], name


def test_every_event_example_names_its_source() -> None:
    rows = _readme_rows("events")
    assert sorted(rows) == sorted(p.name for p in EVENTS.glob("*.json"))
    assert all("http" in row or "awsdocs/" in row for row in rows.values())


@pytest.mark.parametrize(("name", "service", "operation"), [
    ("ce-get-cost-and-usage", "ce", "GetCostAndUsage"),
    ("ec2-describe-capacity-reservations", "ec2", "DescribeCapacityReservations"),
    ("resource-groups-list-group-resources", "resource-groups", "ListGroupResources"),
    ("athena-get-query-results", "athena", "GetQueryResults"),
    ("athena-get-query-execution", "athena", "GetQueryExecution"),
    ("resourcegroupstaggingapi-get-resources", "resourcegroupstaggingapi", "GetResources"),
    ("cloudwatch-describe-alarms", "cloudwatch", "DescribeAlarms"),
    ("cloudwatch-get-metric-data", "cloudwatch", "GetMetricData"),
])
def test_the_examples_fit_botocores_output_shapes(name, service, operation) -> None:
    outputs = repaired(name)
    assert outputs
    for out in outputs:
        assert response_errors(service, operation, out) == []


def test_the_shape_check_catches_what_botocore_contradicts() -> None:
    (page,) = cli_outputs("ce-get-cost-and-usage")
    wrong = copy.deepcopy(page)
    wrong["ResultsByTime"][0]["Estimated"] = "false"
    wrong["ResultsByTime"][0]["Groups"][0]["Metrics"]["UnblendedCost"]["Amount"] = 40.35
    wrong["ResultsByTime"][0]["Groups"][0]["Metric"] = {}
    errors = response_errors("ce", "GetCostAndUsage", wrong)
    assert len(errors) == 3 and any("Estimated: got 'false'; the shape is a boolean" in e for e in errors)
    (crs,) = cli_outputs("ec2-describe-capacity-reservations")[:1]
    crs["CapacityReservations"][0]["State"] = "running"
    (error,) = response_errors("ec2", "DescribeCapacityReservations", crs)
    assert "got 'running'; CapacityReservationState allows" in error


# ---------------------------------------------------------------- Cost Explorer GetCostAndUsage

def _ce_page() -> dict[str, Any]:
    (page,) = cli_outputs("ce-get-cost-and-usage")
    return page  # type: ignore[no-any-return]


def test_cost_explorers_own_example_parses_with_nothing_bad() -> None:
    parsed = parse(response("ce", "GetCostAndUsage", _ce_page()))
    assert (parsed.rows, parsed.bad, parsed.ignored, parsed.days) == ([], [], 2, {"2017-09-01"})  # S3: not ours


def derived_ce_page(groups: list[tuple[str, str, dict[str, str]]], *, estimated: bool = False) -> dict[str, Any]:
    """The example page with its values changed: a day, our group-bys (usage type, fleet tag) and the metrics the
    collector asks for (Metrics is keyed by the metric names of the request)."""
    page = _ce_page()
    page["GroupDefinitions"] = [{"Type": "DIMENSION", "Key": "USAGE_TYPE"}, {"Type": "TAG", "Key": "neuronfleet:fleet"}]
    period = page["ResultsByTime"][0]
    period |= {"Estimated": estimated, "TimePeriod": {"Start": "2026-11-01", "End": "2026-11-02"}}
    template = period["Groups"][0]
    period["Groups"] = []
    for usage_type, fleet, amounts in groups:
        g = copy.deepcopy(template)
        g["Keys"] = [usage_type, f"neuronfleet:fleet${fleet}"]
        unit = g["Metrics"].pop("UsageQuantity")
        g["Metrics"] = {name: {"Amount": amount, "Unit": unit["Unit"] if name == "UsageQuantity" else "USD"}
                        for name, amount in amounts.items()}
        period["Groups"].append(g)
    return response("ce", "GetCostAndUsage", page)  # type: ignore[no-any-return]


def test_derived_usage_rows_carry_both_bases_hours_and_the_estimated_flag() -> None:
    page = derived_ce_page([
        ("USE2-BoxUsage:trn2.48xlarge", "nf-prod", {"NetAmortizedCost": "325.0000000001", "UnblendedCost": "536.41",
                                                    "UsageQuantity": "12"}),
        ("USE2-Host:ml.inf2.xlarge", "", {"NetAmortizedCost": "18.2", "UnblendedCost": "18.2",
                                         "UsageQuantity": "24.0000001"}),
        ("USE2-EBS:VolumeUsage.gp3", "nf-prod", {"NetAmortizedCost": "8", "UnblendedCost": "8", "UsageQuantity": "1"}),
    ], estimated=True)
    parsed = parse(page)
    assert parsed.bad == [] and parsed.ignored == 1
    trn, inf = parsed.rows
    assert (trn.amount, trn.unblended, trn.usage_hours, trn.fleet, trn.estimated) == \
        (Decimal("325.0000000001"), Decimal("536.41"), Decimal("12"), "nf-prod", True)
    assert (inf.usage, inf.fleet, inf.usage_hours) == ("sagemaker-hosting", "(untagged)", Decimal("24.0000001"))


def test_a_capacity_block_fee_is_read_on_unblended_cost_when_net_amortized_reads_zero() -> None:
    """An upfront fee may read 0 on NetAmortizedCost; the fee, net of refunds, is UnblendedCost (cloudcost-exporter).
    Before: the fee row was written at $0 on the default basis and the block's training was free."""
    page = derived_ce_page([("USE2-CapacityBlockFee:trn2.48xlarge", "nf-prod",
                             {"NetAmortizedCost": "0", "UnblendedCost": "11628.29", "UsageQuantity": "1"})])
    (fee,) = parse(page).rows
    assert (fee.usage, fee.cost("net_amortized"), fee.cost("unblended"), fee.usage_hours) == \
        ("capacity-block", Decimal("11628.29"), Decimal("11628.29"), Decimal(0))


def test_a_capacity_block_fee_without_unblended_cost_is_a_bad_row_naming_the_metric() -> None:
    page = derived_ce_page([("USE2-CapacityBlockFee:trn2.48xlarge", "", {"NetAmortizedCost": "11628.29"})])
    (bad,) = parse(page).bad
    assert bad.reason == "Metrics.UnblendedCost.Amount: got nothing; allowed: a decimal number of USD"


def _malformed(change: Any) -> dict[str, Any]:
    """A derived page with two good groups, then ``change`` applied to it: the malformed page Cost Explorer (or a
    proxy, or a future API change) might answer, which botocore's shape would refuse, so it is not validated."""
    page = derived_ce_page([
        ("USE2-BoxUsage:trn2.48xlarge", "nf-prod", {"NetAmortizedCost": "100", "UnblendedCost": "100",
                                                    "UsageQuantity": "2"}),
        ("USE2-BoxUsage:p5.48xlarge", "nf-prod", {"NetAmortizedCost": "55.04", "UnblendedCost": "55.04",
                                                  "UsageQuantity": "1"})])
    page = copy.deepcopy(page)
    change(page)
    return page


def _set(path: str, value: Any) -> Any:
    def change(page: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        target: Any = page
        for p in parents:
            target = target[p]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value
    return change


@pytest.mark.parametrize(("path", "value", "reason", "good"), [
    ("ResultsByTime", None, "ResultsByTime: got None; allowed: a list of periods", 0),
    ("ResultsByTime.0", "x", "ResultsByTime[0]: got 'x'; allowed: an object", 0),
    ("ResultsByTime.0.Groups", None, "ResultsByTime[0].Groups: got None; allowed: a list of groups", 0),
    ("ResultsByTime.0.TimePeriod", None, "ResultsByTime[0].TimePeriod.Start: got None; allowed: a date", 0),
    ("ResultsByTime.0.Groups.0.Keys", None, "Keys: got None; allowed: [usage type, 'neuronfleet:fleet$<fleet>']", 1),
    ("ResultsByTime.0.Groups.0.Keys", ["USE2-BoxUsage:trn2.48xlarge", None], "Keys: got ['USE2-BoxUsage:trn2.48x", 1),
    ("ResultsByTime.0.Groups.0", None, "Groups[]: got None; allowed: an object with Keys and Metrics", 1),
    ("ResultsByTime.0.Groups.0.Metrics", ["x"], "Metrics: got ['x']; allowed: an object keyed by metric name", 1),
    ("ResultsByTime.0.Groups.0.Metrics.UnblendedCost", "12", "Metrics.UnblendedCost: got '12'; allowed: an object", 1),
    ("ResultsByTime.0.Groups.0.Metrics.UnblendedCost.Amount", KeyError,
     "Metrics.UnblendedCost.Amount: got nothing; allowed: a decimal number of USD", 1),
    ("ResultsByTime.0.Groups.0.Metrics.NetAmortizedCost.Amount", "12,50",
     "Metrics.NetAmortizedCost.Amount: got '12,50'; allowed: a decimal number of USD", 1),
    ("ResultsByTime.0.Groups.0.Metrics.NetAmortizedCost.Amount", True,
     "Metrics.NetAmortizedCost.Amount: got True; allowed: a decimal number of USD", 1),
    ("ResultsByTime.0.Groups.0.Metrics.NetAmortizedCost.Amount", {"v": 1},
     "Metrics.NetAmortizedCost.Amount: got {'v': 1}; allowed: a decimal number of USD", 1),
    ("ResultsByTime.0.Groups.0.Metrics.UsageQuantity.Amount", "Infinity",
     "Metrics.UsageQuantity.Amount: got 'Infinity'; allowed: a finite decimal number", 1),
])
def test_every_shape_error_is_a_bad_row_naming_the_field_never_an_exception(path, value, reason, good) -> None:
    """Before: a null ResultsByTime, Groups or Keys raised TypeError and ended the run; now the page's other groups
    are kept (``good``) and the bad row says which field, what it held and what is allowed."""
    parsed = parse(_malformed(_set(path, value)))
    (bad,) = parsed.bad
    assert bad.reason.startswith(reason), bad.reason
    assert len(parsed.rows) == good


@pytest.mark.parametrize(("raw", "expected"), [(False, False), (True, True), ("false", False), ("true", True)])
def test_estimated_reads_booleans_and_exactly_the_json_spellings(raw, expected) -> None:
    """Before: ``Estimated: "false"`` read True (a non-empty string); now the string "false" reads false."""
    parsed = parse(_malformed(_set("ResultsByTime.0.Estimated", raw)))
    assert parsed.bad == [] and [r.estimated for r in parsed.rows] == [expected, expected]


def test_estimated_absent_reads_false_and_any_other_value_is_a_bad_row_for_each_group() -> None:
    assert {r.estimated for r in parse(_malformed(_set("ResultsByTime.0.Estimated", KeyError))).rows} == {False}
    for raw in ("False", "TRUE", "yes", 0, 1, None, ""):
        parsed = parse(_malformed(_set("ResultsByTime.0.Estimated", raw)))
        assert parsed.rows == [] and len(parsed.bad) == 2, raw
        assert parsed.bad[0].reason == f"ResultsByTime[0].Estimated: got {raw!r}; allowed: true or false"
        assert parsed.bad[0].day == "2026-11-01" and parsed.bad[0].keys == ("USE2-BoxUsage:trn2.48xlarge",
                                                                             "neuronfleet:fleet$nf-prod")


def test_cloudwatchs_value_range_is_pinned_from_botocores_model() -> None:
    """rows.METRIC_VALUE_LIMITS keeps the stricter of AWS's two texts; the current one is botocore's, pinned here."""
    from neuronfleet.lambdas.cost.logic.rows import METRIC_VALUE_LIMITS

    cw = boto3.client("cloudwatch", region_name=REGION).meta.service_model
    text = ("Values must be in the range of -2^360 to 2^360. In addition, special values (for example, NaN, "
            "+Infinity, -Infinity) are not supported.")
    assert text in cw.shape_for("MetricDatum").members["Value"].documentation
    assert text in cw.operation_model("PutMetricData").documentation
    lo, hi = METRIC_VALUE_LIMITS
    assert (lo, hi) == (Decimal("8.515920e-109"), Decimal("1.174271e+108"))
    assert Decimal(2) ** -359 <= lo * Decimal("1.000001") and hi <= Decimal(2) ** 359 <= hi * Decimal("1.000001")
    assert hi < Decimal(2) ** 360  # inside what botocore's text allows


@pytest.mark.parametrize(("amount", "bad"), [
    ("1E+400", True), ("1.174271e+108", False), ("1.174272e+108", True), ("-1.174271e+108", False),
    ("8.515920e-109", False), ("8.515919e-109", True), ("-8.515919e-109", True), ("0", False), ("-0", False),
    ("0E-200", False), ("NaN", True), ("-Infinity", True), ("1E-120", True)])
def test_an_amount_cloudwatch_would_refuse_is_a_bad_row_at_the_boundaries(amount, bad) -> None:
    """Before: 1E+400 passed (Decimal thinks it finite), was stored, and every later PutMetricData failed."""
    page = derived_ce_page([("USE2-BoxUsage:trn2.48xlarge", "nf-prod",
                             {"NetAmortizedCost": amount, "UnblendedCost": "1", "UsageQuantity": "1"})])
    parsed = parse(page)
    assert (len(parsed.bad), len(parsed.rows)) == ((1, 0) if bad else (0, 1))
    if bad:
        assert parsed.bad[0].reason.startswith(f"Metrics.NetAmortizedCost.Amount: got '{amount}'; allowed: ")


def test_usage_types_of_one_instance_type_and_day_are_separate_rows_with_separate_keys() -> None:
    """EC2's billing codes (On-Demand, Spot, Dedicated Host, unused Capacity Reservation hours shared and dedicated,
    and the $0 reservation rows) and another region's prefix: one row each, never one ledger key."""
    usage_types = ["USE2-BoxUsage:p5.48xlarge", "USE2-SpotUsage:p5.48xlarge", "USE2-HostBoxUsage:p5.48xlarge",
                   "USE2-UnusedBox:p5.48xlarge", "USE2-UnusedDed:p5.48xlarge", "USE2-Reservation:p5.48xlarge",
                   "USE2-DedicatedRes:p5.48xlarge", "USW2-BoxUsage:p5.48xlarge", "BoxUsage:p5.48xlarge"]
    page = derived_ce_page([(u, "nf-prod", {"NetAmortizedCost": "1", "UnblendedCost": "1", "UsageQuantity": "1"})
                            for u in usage_types])
    parsed = parse(page)
    assert parsed.bad == [] and [r.usage_type for r in parsed.rows] == usage_types
    assert {(r.usage, r.instance_type, r.family) for r in parsed.rows} == {("ec2", "p5.48xlarge", "gpu")}
    assert len({r.key for r in parsed.rows}) == len(usage_types)


def test_the_queries_fit_botocores_request_shape_and_ask_for_block_refunds_once() -> None:
    ce = boto3.client("ce", region_name="us-east-1").meta.service_model.operation_model("GetCostAndUsage")
    usage = usage_query(date(2026, 11, 1), date(2026, 11, 4), ["trn2.48xlarge"])
    adjustments = adjustments_query(date(2026, 11, 1), date(2026, 11, 4))
    for query in (usage, adjustments):
        validate_parameters(query, ce.input_shape)  # raises on a request botocore would refuse
    refund_in_usage = {"And": [{"Dimensions": {"Key": "RECORD_TYPE", "Values": ["Refund"]}},
                               {"Dimensions": {"Key": "SERVICE", "Values": ["EC2 - Other"]}}]}
    assert refund_in_usage in usage["Filter"]["And"][1]["Or"]
    assert adjustments["Filter"]["Or"][1]["And"][1] == {"Not": refund_in_usage["And"][1]}


def test_a_refund_on_a_later_day_nets_the_fee_and_a_fee_is_matched_on_the_blocks_start_day() -> None:
    """cloudcost-exporter reads the fee on the block's start day; the kit tries that day, then the purchase day."""
    start = datetime(2026, 11, 3, 11, 30, tzinfo=UTC)
    block = Block("cb-1", "trn2.48xlarge", 1, start, start + timedelta(days=1), created=start - timedelta(days=2))

    def fee(day: str, amount: str) -> CostRow:
        return CostRow(day=day, fleet="nf-prod", service="ec2", instance_type="trn2.48xlarge", family="trainium",
                       amount=Decimal(amount), unblended=Decimal(amount), usage_hours=Decimal(0),
                       usage="capacity-block", source_day=day)

    spread, unmatched = amortise([fee("2026-11-03", "2400"), fee("2026-11-09", "-2400")], [block])
    assert [(r.day, r.amount) for r in spread] == [("2026-11-03", Decimal("1250.000000")),
                                                  ("2026-11-04", Decimal("1150.000000"))]
    assert [(r.day, r.amount, r.detail) for r in unmatched] == [("2026-11-09", Decimal("-2400"), "unmatched")]
    assert sum(r.amount for r in spread + unmatched) == 0
    (by_purchase,) = {r.detail for r in amortise([fee("2026-11-01", "2400")], [block])[0]}
    assert by_purchase == "cb-1"


# ---------------------------------------------------------------- EC2 DescribeCapacityReservations

def _reservations_page(which: int = 1) -> dict[str, Any]:
    return cli_outputs("ec2-describe-capacity-reservations")[which - 1]  # type: ignore[no-any-return]


def test_the_examples_reservations_are_not_capacity_blocks_and_inventory_reads_the_active_one() -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    page = response("ec2", "DescribeCapacityReservations", _reservations_page())
    ids = [r["CapacityReservationId"] for r in page["CapacityReservations"]]
    with Stubber(ec2) as stub:
        stub.add_response("describe_capacity_reservations", page, {"CapacityReservationIds": ids})
        blocks = FleetBlocks(ec2, None, reservation_ids=ids, resource_group_arns=[], ultraserver_types=[]).blocks()
    assert blocks == []  # c5.large/c4.large On-Demand reservations, no ReservationType, no EndDate


def derived_block_reservation(rid: str, instance_type: str, count: int, end: str, state: str = "active") -> Any:
    """The example's first reservation with a Capacity Block's values (its keys, plus ReservationType and EndDate,
    both members of botocore's CapacityReservation shape)."""
    page = _reservations_page()
    r = page["CapacityReservations"][0]
    r |= {"CapacityReservationId": rid, "InstanceType": instance_type, "TotalInstanceCount": count,
          "AvailableInstanceCount": 0, "State": state, "EndDateType": "limited", "EndDate": end,
          "InstanceMatchCriteria": "targeted", "ReservationType": "capacity-block",
          "CapacityReservationArn": f"arn:aws:ec2:{REGION}:123456789111:capacity-reservation/{rid}"}
    page["CapacityReservations"] = [r]
    return response("ec2", "DescribeCapacityReservations", page)


@pytest.mark.parametrize(("instance_type", "kind"), [("trn2.48xlarge", "instances"), ("trn2u.48xlarge", "ultraserver")])
def test_a_derived_capacity_block_reservation_becomes_a_block(instance_type, kind) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    page = derived_block_reservation("cr-0123456789abcdef0", instance_type, 4, "2026-11-30T11:30:00+00:00")
    with Stubber(ec2) as stub:
        stub.add_response("describe_capacity_reservations", page, {"CapacityReservationIds": ["cr-0123456789abcdef0"]})
        (block,) = FleetBlocks(ec2, None, reservation_ids=["cr-0123456789abcdef0"], resource_group_arns=[],
                               ultraserver_types=["trn2u.48xlarge"]).blocks()
    assert (block.reservation_id, block.count, block.kind, block.end) == \
        ("cr-0123456789abcdef0", 4, kind, datetime(2026, 11, 30, 11, 30, tzinfo=UTC))


# ---------------------------------------------------------------- Resource Groups ListGroupResources

GROUP = "arn:aws:resource-groups:us-east-2:123456789012:group/tbq-WebServer"


def _members(page: dict[str, Any]) -> set[str]:
    rg = boto3.client("resource-groups", region_name=REGION)
    with Stubber(rg) as stub:
        stub.add_response("list_group_resources", response("resource-groups", "ListGroupResources", page),
                          {"Group": GROUP})
        return reservations.group_members(rg, [GROUP])


def test_the_examples_instance_is_not_a_capacity_reservation() -> None:
    (page,) = cli_outputs("resource-groups-list-group-resources")
    assert _members(page) == set()


def test_a_reservation_listed_only_in_the_deprecated_resource_identifiers_is_a_member() -> None:
    """The CLI's example answers with ResourceIdentifiers alone; before, only Resources was read and the group
    seemed empty: the fleet's UltraServer blocks were nobody's."""
    (page,) = cli_outputs("resource-groups-list-group-resources")
    page["ResourceIdentifiers"][0] |= {
        "ResourceArn": "arn:aws:ec2:us-west-2:123456789012:capacity-reservation/cr-0123456789abcdef0",
        "ResourceType": "AWS::EC2::CapacityReservation"}
    assert _members(page) == {"cr-0123456789abcdef0"}
    both = {"Resources": [{"Identifier": page["ResourceIdentifiers"][0]}], **page}
    assert _members(both) == {"cr-0123456789abcdef0"}


# ---------------------------------------------------------------- Athena (CUR 2.0 rows)

CUR_COLUMNS = ["day", "usage_type", "fleet", "net_amortized_cost", "unblended_cost", "usage_quantity"]


def _athena(results: dict[str, Any]) -> list[dict[str, Any]]:
    athena = boto3.client("athena", region_name="us-east-1")
    (execution,) = repaired("athena-get-query-execution")
    with Stubber(athena) as stub:
        stub.add_response("start_query_execution", {"QueryExecutionId": execution["QueryExecution"]["QueryExecutionId"]})
        stub.add_response("get_query_execution", response("athena", "GetQueryExecution", execution))
        stub.add_response("get_query_results", response("athena", "GetQueryResults", results))
        return AthenaSpend(athena, workgroup="AthenaAdmin", table="cur")._run("SELECT 1")


def test_athenas_own_result_set_reads_as_records_under_its_header() -> None:
    (results,) = repaired("athena-get-query-results")
    records = _athena(results)
    assert len(records) == 10 and records[0] == {"date": "2014-07-05", "location": "SFO4", "browser": "Safari",
                                                 "uri": "/test-image-2.jpeg", "status": "200"}


def test_a_repeated_athena_next_token_stops_the_run_naming_it() -> None:
    from neuronfleet.lambdas.cost.logic.paging import PagingError

    (results,) = repaired("athena-get-query-results")
    looping = response("athena", "GetQueryResults", {**results, "NextToken": "tok"})
    athena = boto3.client("athena", region_name="us-east-1")
    (execution,) = repaired("athena-get-query-execution")
    qid = execution["QueryExecution"]["QueryExecutionId"]
    with Stubber(athena) as stub:
        stub.add_response("start_query_execution", {"QueryExecutionId": qid})
        stub.add_response("get_query_execution", response("athena", "GetQueryExecution", execution))
        stub.add_response("get_query_results", looping, {"QueryExecutionId": qid})
        stub.add_response("get_query_results", looping, {"QueryExecutionId": qid, "NextToken": "tok"})
        with pytest.raises(PagingError, match=f"Athena GetQueryResults of {qid}: next-page token 'tok' repeated "
                                              "after page 2"):
            AthenaSpend(athena, workgroup="AthenaAdmin", table="cur")._run("SELECT 1")


def derived_cur_results(rows: list[list[str | None]]) -> dict[str, Any]:
    """The example result set with the usage query's columns and values (a None is SQL NULL: a Datum without
    VarCharValue)."""
    (results,) = repaired("athena-get-query-results")
    header, row = results["ResultSet"]["Rows"][0], results["ResultSet"]["Rows"][1]
    out_rows = [{"Data": [{"VarCharValue": c} for c in CUR_COLUMNS]}]
    for values in rows:
        out_rows.append({"Data": [{"VarCharValue": v} if v is not None else {} for v in values]})
    assert len(header["Data"]) == 5 and len(row["Data"]) == 5  # the example's keys, one column more
    info = results["ResultSet"]["ResultSetMetadata"]["ColumnInfo"]
    results["ResultSet"]["Rows"] = out_rows
    results["ResultSet"]["ResultSetMetadata"]["ColumnInfo"] = [
        dict(info[1], Name=c, Label=c, Type="date" if c == "day" else "varchar" if c in ("usage_type", "fleet")
             else "double") for c in CUR_COLUMNS]
    return results


def test_cur_rows_through_athenas_result_format_become_ledger_rows() -> None:
    records = _athena(derived_cur_results([
        ["2026-11-01", "USE2-BoxUsage:trn2.48xlarge", "nf-prod", "650.0", "0.0", "24.0"],
        ["2026-11-01", "USE2-CapacityBlockFee:p5.48xlarge", "nf-prod", "996.67", "996.67", "1.0"],
        ["2026-11-02", "USE2-Host:ml.inf2.xlarge", "", "27.0", "30.0", None],
    ]))
    parsed = parse(pages_of(records)[0])
    assert parsed.bad == []
    by = {(r.day, r.usage): r for r in parsed.rows}
    assert by[("2026-11-01", "ec2")].amount == Decimal("650.0")
    assert by[("2026-11-01", "capacity-block")].cost("net_amortized") == Decimal("996.67")
    assert (by[("2026-11-02", "sagemaker-hosting")].fleet, by[("2026-11-02", "sagemaker-hosting")].usage_hours) == \
        ("(untagged)", Decimal(0))


def test_a_null_cost_from_athena_is_a_bad_row_naming_the_metric() -> None:
    records = _athena(derived_cur_results([["2026-11-01", "USE2-BoxUsage:trn2.48xlarge", "nf-prod", None, "1", "1"]]))
    (bad,) = parse(pages_of(records)[0]).bad
    assert bad.reason.startswith("Metrics.NetAmortizedCost.Amount: got 'None'; allowed: a decimal number")


# ---------------------------------------------------------------- EventBridge events

def test_the_rules_match_the_names_the_examples_carry() -> None:
    assert event("capacity-block-delivered")["detail_type"] in capacity.CAPACITY_BLOCK_DELIVERED
    assert event("capacity-block-reservation-expiration-warning")["detail_type"] in capacity.CAPACITY_BLOCK_ENDING
    assert event("batch-job-queue-blocked")["detail-type"] == capacity.QUEUE_BLOCKED
    assert event("batch-job-state-change")["detail-type"] == capacity.JOB_STATE
    assert event("autoscaling-launch-unsuccessful")["detail-type"] == capacity.LAUNCH_UNSUCCESSFUL
    assert event("ec2-capacity-reservation-scheduled")["detail-type"].rsplit(" ", 1)[0] == "EC2 Capacity Reservation"
    assert {event(n)["source"] for n in ("capacity-block-delivered", "ec2-capacity-reservation-scheduled")} == {"aws.ec2"}


@pytest.mark.parametrize(("name", "key", "subject"), [
    ("capacity-block-delivered", "[ODCR ID]#delivered", "neuronfleet: Capacity Block [ODCR ID] is active"),
    ("capacity-block-reservation-expiration-warning", "[ODCR ID]#aws-warning",
     "neuronfleet: Capacity Block [ODCR ID] ending"),
])
def test_ec2s_capacity_block_examples_are_understood_as_documented(name, key, subject) -> None:
    """The guide's examples spell the name ``detail_type``; before, they were ignored as 'not a capacity event'."""
    (action,) = capacity.decide(event(name), pool=POOL, now=NOW)
    assert isinstance(action, capacity.Once) and (action.key, action.say.subject) == (key, subject)
    assert "[ODCR End Date]" in action.say.message


def test_a_derived_capacity_block_warning_names_the_block_and_its_end() -> None:
    e = event("capacity-block-reservation-expiration-warning")
    e["detail"] |= {"capacity-reservation-id": "cr-0123456789abcdef0", "end-date": "2026-11-23T12:40:00Z"}
    (action,) = capacity.decide(e, pool=POOL, now=NOW)
    assert isinstance(action, capacity.Once) and action.key == "cr-0123456789abcdef0#aws-warning"
    assert "ends at 2026-11-23T12:40:00Z" in action.say.message and "p5.48xlarge" in action.say.message


def test_a_future_dated_reservations_state_events() -> None:
    scheduled = event("ec2-capacity-reservation-scheduled")
    (ignored,) = capacity.decide(scheduled, pool=POOL, now=NOW)
    assert isinstance(ignored, capacity.Ignore)  # scheduled is not trouble
    failed = scheduled | {"detail-type": "EC2 Capacity Reservation Failed"}
    failed["detail"] = scheduled["detail"] | {"state": "failed"}
    (action,) = capacity.decide(failed, pool=POOL, now=NOW)
    assert isinstance(action, capacity.Once) and action.key == "cr-1234567890abcdefg#failed"


def test_batchs_queue_blocked_example_and_a_capacity_reason() -> None:
    e = event("batch-job-queue-blocked")
    (start,) = capacity.decide(e, pool=POOL, now=NOW)
    assert isinstance(start, capacity.Start)
    assert start.subject == "arn:aws:batch:us-east-1:123456789012:job-queue/PexjEHappyPathCanary2JobQueue"
    assert "RUNNABLE: {{blocked-reason}}" in start.say.message and "event-test" in start.say.message
    e["detail"]["statusReason"] = ("CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity "
                                   "requested for instance type [trn2.48xlarge]")
    (start,) = capacity.decide(e, pool=POOL, now=NOW)
    assert "RUNNABLE: CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY" in start.say.message


def test_batchs_job_state_example_is_runnable_and_a_started_job_unblocks_its_queue() -> None:
    e = event("batch-job-state-change")
    (ignored,) = capacity.decide(e, pool=POOL, now=NOW)
    assert isinstance(ignored, capacity.Ignore) and "is RUNNABLE" in ignored.reason
    e["detail"]["status"] = "STARTING"
    (end,) = capacity.decide(e, pool=POOL, now=NOW)
    assert isinstance(end, capacity.End) and end.subject.endswith("job-queue/PexjEHappyPathCanary2JobQueue")


def test_auto_scalings_launch_unsuccessful_example_and_a_capacity_refusal() -> None:
    e = event("autoscaling-launch-unsuccessful")
    (start,) = capacity.decide(e, pool=POOL, now=NOW)
    assert isinstance(start, capacity.Start) and start.subject == "my-auto-scaling-group"
    assert start.say.subject == "neuronfleet: Trainium instances fail to launch"  # "message-text": not capacity
    e["detail"]["StatusMessage"] = ("We currently do not have sufficient trn2.48xlarge capacity in the Availability "
                                    "Zone you requested (us-west-2b).")
    (start,) = capacity.decide(e, pool=POOL, now=NOW)
    assert start.say.subject == "neuronfleet: no Trainium capacity to launch"


def test_cloudwatchs_alarm_state_change_example_selects_the_endpoint_watching_that_alarm() -> None:
    cap = EndpointBounds(neuron_min=1, neuron_max=2, gpu_min=1, gpu_max=2, neuron_instances_per_gpu_instance=1.0)
    config = {"chat": WatchedEndpoint(alarms=("ServerCpuTooHigh",), capacity=cap, latency_limit_ms=500.0),
              "other": WatchedEndpoint(alarms=("other-5xx",), capacity=cap, latency_limit_ms=500.0)}
    assert watched(event("cloudwatch-alarm-state-change"), config) == ["chat"]


def test_output_shapes_exist_for_every_operation_the_adapters_call() -> None:
    for service, operation in (("sagemaker", "DescribeEndpoint"), ("ec2", "DescribeCapacityBlocks"),
                               ("sagemaker", "DescribeEndpointConfig")):
        assert output_shape(service, operation).members  # no publisher example found: see tests/data/aws_cli/README
