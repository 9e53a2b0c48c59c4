"""neuronfleet.cost.overhead.bill_of_materials on construct trees: the reference prod fleet's bill counts what its
synthesized templates hold (counts taken from the template JSON itself, so a resource the walker misses fails here),
and the arithmetic on a small stack of known shape."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_

from neuronfleet.cost.overhead import OverheadBill, bill_of_materials
from neuronfleet.facts.overhead_prices import OverheadPrice, not_priced, overhead_prices
from neuronfleet_contract.overhead import decode

HOURS = Decimal(730)


@pytest.fixture(scope="module")
def prod(synth_fleet: Callable[[str], Any]) -> tuple[Any, OverheadBill]:
    fleet = synth_fleet("prod")
    return fleet, bill_of_materials(*fleet.stacks.values())


def _resources(fleet: Any) -> list[dict[str, Any]]:
    return [r for name in fleet.stacks for r in fleet.template_json(name)["Resources"].values()]


def _count(bill: OverheadBill, key: str) -> int:
    item = bill.item(key)
    return item.count if item else 0


def test_prod_counts_what_its_templates_hold(prod: tuple[Any, OverheadBill]) -> None:
    fleet, bill = prod
    resources = _resources(fleet)
    kinds = Counter(r["Type"] for r in resources)
    assert kinds["AWS::EC2::NatGateway"] == 3 == _count(bill, "nat-gateway-hour") == _count(bill, "nat-gateway-gb")
    assert bill.item("nat-gateway-hour").quantity == 3 * HOURS
    assert bill.item("nat-gateway-gb").quantity == 0 and bill.item("nat-gateway-gb").monthly_usd == 0
    assert kinds["AWS::EC2::EIP"] == _count(bill, "public-ipv4-hour") == 3
    assert kinds["AWS::KMS::Key"] == _count(bill, "kms-key-month") > 0
    assert kinds["AWS::CloudWatch::Dashboard"] == _count(bill, "dashboard-month")
    assert kinds["AWS::CloudWatch::Alarm"] == _count(bill, "alarm-metric-month") > 0
    metrics = sum(len([m for m in r["Properties"]["Metrics"] if "MetricStat" in m]) if "Metrics" in r["Properties"]
                  else 1 for r in resources if r["Type"] == "AWS::CloudWatch::Alarm")
    assert bill.item("alarm-metric-month").quantity == metrics


def test_prod_interface_endpoints_are_priced_per_az(prod: tuple[Any, OverheadBill]) -> None:
    fleet, bill = prod
    interface = [r["Properties"] for r in _resources(fleet)
                 if r["Type"] == "AWS::EC2::VPCEndpoint" and r["Properties"].get("VpcEndpointType") == "Interface"]
    gateway = [r for r in _resources(fleet)
               if r["Type"] == "AWS::EC2::VPCEndpoint" and r["Properties"].get("VpcEndpointType", "Gateway") == "Gateway"]
    item = bill.item("interface-endpoint-az-hour")
    assert item is not None and item.count == len(interface) > 0
    azs = sum(len(p["SubnetIds"]) for p in interface)
    assert azs == 3 * len(interface)  # prod's three AZs
    assert item.quantity == azs * HOURS
    assert item.monthly_usd == (azs * HOURS * Decimal("0.01")).quantize(Decimal("0.01"))
    assert "read for us-east-1" in item.note
    assert _count(bill, "AWS::EC2::VPCEndpoint:Gateway") == len(gateway)


def test_prod_fsx_capacities_are_each_training_clusters(prod: tuple[Any, OverheadBill]) -> None:
    fleet, bill = prod
    systems = [r["Properties"] for r in _resources(fleet) if r["Type"] == "AWS::FSx::FileSystem"]
    by_key = Counter()
    for p in systems:
        lustre = p["LustreConfiguration"]
        by_key[f"fsx-lustre:{lustre['DeploymentType']}:{p.get('StorageType', 'SSD')}:"
               f"{lustre['PerUnitStorageThroughput']}"] += p["StorageCapacity"]
    assert sorted(p["StorageCapacity"] for p in systems) == [1200, 4800]  # finetune, pretrain
    for key, capacity in by_key.items():
        item = bill.item(key)
        assert item is not None and item.quantity == capacity and item.unit == "GB-month"
        assert item.monthly_usd is None and item.reason == "unsourced" and "fsx/lustre/pricing" in item.not_priced


def test_prod_functions_are_priced_on_their_schedules(prod: tuple[Any, OverheadBill]) -> None:
    fleet, bill = prod
    scheduled, functions = set(), 0
    for name in fleet.stacks:
        template = fleet.template_json(name)["Resources"]
        functions += sum(r["Type"] == "AWS::Lambda::Function" for r in template.values())
        for r in template.values():
            if r["Type"] in ("AWS::Events::Rule", "AWS::Scheduler::Schedule") and "ScheduleExpression" in r["Properties"]:
                for t in r["Properties"].get("Targets", []) or [r["Properties"].get("Target", {})]:
                    att = t.get("Arn", {}).get("Fn::GetAtt") if isinstance(t.get("Arn"), dict) else None
                    if att and template.get(att[0], {}).get("Type") == "AWS::Lambda::Function":
                        scheduled.add((name, att[0]))
    assert scheduled and _count(bill, "lambda-request") == _count(bill, "lambda-gb-second") == len(scheduled)
    assert _count(bill, "AWS::Lambda::Function") == functions - len(scheduled)


def test_prod_lists_what_it_does_not_price_with_counts(prod: tuple[Any, OverheadBill]) -> None:
    fleet, bill = prod
    kinds = Counter(r["Type"] for r in _resources(fleet))
    for kind, (code, why) in not_priced().items():
        if kind in kinds:
            item = bill.item(kind)
            assert item is not None and item.count == kinds[kind] and item.monthly_usd is None, kind
            assert (item.reason, item.not_priced) == (code, why)
    assert bill.item("AWS::Logs::LogGroup").reason == "usage"


def test_prod_total_and_its_wire_form(prod: tuple[Any, OverheadBill]) -> None:
    _, bill = prod
    assert bill.total_monthly_usd == sum(i.monthly_usd for i in bill.items if i.monthly_usd is not None)
    assert bill.region == "us-east-2"
    value = bill.to_environment()["OVERHEAD_BILL"]
    back = decode(value)
    assert back.total_usd == bill.total_monthly_usd
    assert {p.key for p in back.priced} == {i.key for i in bill.items if i.priced}
    assert {u.key for u in back.unpriced} == {i.key for i in bill.items if not i.priced}
    assert len(value.encode()) < 1000
    short = bill.to_environment(unpriced=False)["OVERHEAD_BILL"]
    assert decode(short).unpriced == () and decode(short).total_usd == bill.total_monthly_usd
    assert len(short.encode()) < 520


# ---- arithmetic on a stack of known shape -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small() -> OverheadBill:
    app = cdk.App()
    stack = cdk.Stack(app, "Small", env=cdk.Environment(account="111111111111", region="us-east-2"))
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=["us-east-2a", "us-east-2b"], nat_gateways=2)
    vpc.add_interface_endpoint("Sts", service=ec2.InterfaceVpcEndpointAwsService.STS)
    fsx.LustreFileSystem(stack, "Lustre", vpc=vpc, vpc_subnet=vpc.private_subnets[0], storage_capacity_gib=1200,
                         lustre_configuration=fsx.LustreConfiguration(
                             deployment_type=fsx.LustreDeploymentType.PERSISTENT_2, per_unit_storage_throughput=250))
    capacity = cdk.CfnParameter(stack, "Capacity", type="Number")
    fsx.CfnFileSystem(stack, "Unknown", file_system_type="LUSTRE", subnet_ids=["subnet-1"],
                      storage_capacity=capacity.value_as_number,
                      lustre_configuration=fsx.CfnFileSystem.LustreConfigurationProperty(
                          deployment_type="PERSISTENT_2", per_unit_storage_throughput=250))
    kms.Key(stack, "Key", enable_key_rotation=True)
    code = lambda_.Code.from_inline("def handler(event, context):\n    return None\n")
    hourly = lambda_.Function(stack, "Hourly", runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler",
                              code=code, memory_size=512, timeout=cdk.Duration.seconds(10))
    events.Rule(stack, "EveryHour", schedule=events.Schedule.rate(cdk.Duration.hours(1)),
                targets=[targets.LambdaFunction(hourly)])
    lambda_.Function(stack, "OnEvents", runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler", code=code)
    test_price = OverheadPrice(key="fsx-lustre:PERSISTENT_2:SSD:250", usd=Decimal("0.2"), unit="GB-month",
                               region="us-east-2", standing="quoted", source_key="test-q", source="a test's price",
                               as_of=overhead_prices()["kms-key-month"].as_of)
    return bill_of_materials(stack, prices={**overhead_prices(), test_price.key: test_price})


@pytest.mark.parametrize(("key", "count", "quantity", "monthly"), [
    ("nat-gateway-hour", 2, 2 * HOURS, "65.70"),          # 2 x 730 h x 0.045
    ("public-ipv4-hour", 2, 2 * HOURS, "7.30"),           # the NAT gateways' Elastic IPs, 2 x 730 h x 0.005
    ("interface-endpoint-az-hour", 1, 2 * HOURS, "14.60"),  # one endpoint in 2 AZs, 1,460 h x 0.01
    ("fsx-lustre:PERSISTENT_2:SSD:250", 1, Decimal(1200), "240.00"),  # 1,200 GB x the test's 0.2
    ("kms-key-month", 1, Decimal(1), "1.00"),
    ("lambda-request", 1, HOURS, "0.00"),                 # 730 runs x 0.0000002
    ("lambda-gb-second", 1, HOURS * 10 * Decimal("0.5"), "0.06"),  # 730 x 10 s x 0.5 GB x 0.00001667
])
def test_arithmetic(small: OverheadBill, key: str, count: int, quantity: Decimal, monthly: str) -> None:
    item = small.item(key)
    assert item is not None
    assert (item.count, item.quantity, item.monthly_usd) == (count, quantity, Decimal(monthly))
    assert item.source and item.as_of is not None


def test_total_is_the_sum_of_the_priced_lines(small: OverheadBill) -> None:
    assert small.total_monthly_usd == Decimal("328.66")


def test_unresolved_values_are_counted_not_guessed(small: OverheadBill) -> None:
    item = small.item("fsx-lustre:unknown")
    assert item is not None and item.count == 1 and item.quantity is None and item.reason == "unknown"
    assert "quantity unknown at synth" in item.what


def test_a_function_on_events_only_is_listed_not_priced(small: OverheadBill) -> None:
    item = small.item("AWS::Lambda::Function")
    assert item is not None and item.count == 1 and item.reason == "events" and item.monthly_usd is None


def test_no_scope_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one scope"):
        bill_of_materials()
