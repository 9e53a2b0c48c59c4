"""The kit's own running cost, without a synth: every overhead price pinned with its source, date and region; the
schedule arithmetic; the wire format the report function reads (round trip, size, malformed values)."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

import pytest

from neuronfleet.facts.overhead_prices import (
    hours_per_month,
    not_priced,
    overhead_prices,
    read_on,
    unsourced,
)
from neuronfleet_contract.environment import InvalidEnvironment
from neuronfleet_contract.overhead import (
    LABELS,
    REASONS,
    VARIABLE,
    OverheadBill,
    PricedLine,
    UnpricedLine,
    decode,
    encode,
)

READ = date(2026, 11, 28)

PINNED = {
    # key: (usd, unit, region, standing, source_key, words the source must contain)
    "nat-gateway-hour": ("0.045", "hour", "us-east-2", "quoted", "vpc-q",
                         ("https://aws.amazon.com/vpc/pricing/", "US East (Ohio)", "api-evangelist", "2026-09-20")),
    "nat-gateway-gb": ("0.045", "GB", "us-east-2", "quoted", "vpc-q",
                       ("$0.045 per GB", "api-evangelist", "clickstream-analytics-on-aws")),
    "public-ipv4-hour": ("0.005", "hour", "us-east-1", "quoted", "ipv4-q",
                         ("https://aws.amazon.com/vpc/pricing/", "USE1-PublicIPv4:InUseAddress", "71085696288")),
    "interface-endpoint-az-hour": ("0.01", "endpoint-AZ-hour", "us-east-1", "aws", "privatelink",
                                   ("https://aws.amazon.com/privatelink/pricing/", "in each Availability Zone",
                                    "$0.01 per AZ Hour")),
    "kms-key-month": ("1.00", "key-month", "all (the page names no regional rate)", "aws", "kms",
                      ("https://aws.amazon.com/kms/pricing/", "costs $1/month (prorated hourly)")),
    "alarm-metric-month": ("0.10", "alarm-metric-month", "not named by the source", "quoted", "cw-q",
                           ("https://aws.amazon.com/cloudwatch/pricing/", "c3x.dev", "standard resolution")),
    "dashboard-month": ("3.00", "dashboard-month", "not named by the source", "quoted", "cw-q",
                        ("https://aws.amazon.com/cloudwatch/pricing/", "$3.00 per dashboard per month")),
    "lambda-request": ("0.0000002", "request", "not named by the source", "aws", "lambda",
                       ("how-aws-pricing-works/lambda.html", "$0.20 per 1 million requests")),
    "lambda-gb-second": ("0.00001667", "GB-second", "not named by the source", "aws", "lambda",
                         ("how-aws-pricing-works/lambda.html", "$0.00001667 for every GB-second")),
    "eks-cluster-hour": ("0.10", "cluster-hour", "us-east-1", "quoted", "eks-q",
                         ("USE1-AmazonEKS-Hours:perCluster", "$0.10 per hour")),
}


def test_every_price_is_pinned_with_its_source_date_and_region() -> None:
    prices = overhead_prices()
    assert set(prices) == set(PINNED)
    for key, (usd, unit, region, standing, source_key, words) in PINNED.items():
        p = prices[key]
        assert (p.usd, p.unit, p.region, p.standing, p.source_key) == (Decimal(usd), unit, region, standing,
                                                                        source_key), key
        assert p.as_of == READ, key
        for word in words:
            assert word in p.source, (key, word)
        assert key in LABELS, f"{key} has no label in neuronfleet_contract.overhead.LABELS"
    assert read_on() == READ


def test_quoted_prices_say_so_in_their_source_key() -> None:
    assert {p.standing == "quoted" for p in overhead_prices().values()} == {True, False}  # both kinds checked
    for key, p in overhead_prices().items():
        assert p.source_key.endswith("-q") == (p.standing == "quoted"), key


def test_assumptions_are_stated_with_the_price() -> None:
    prices = overhead_prices()
    assert "0 GB basis" in prices["nat-gateway-gb"].basis
    assert "upper bound" in prices["lambda-gb-second"].basis and "x86_64 only" in prices["lambda-gb-second"].basis
    assert "first year" in prices["kms-key-month"].basis


def test_hours_per_month_is_730() -> None:
    assert hours_per_month() == Decimal(730)


def test_fsx_for_lustre_is_unsourced_and_says_why() -> None:
    missing = unsourced()
    assert set(missing) == {f"fsx-lustre:PERSISTENT_2:SSD:{t}" for t in (125, 250, 500, 1000)}
    assert "https://aws.amazon.com/fsx/lustre/pricing/" in missing["fsx-lustre:PERSISTENT_2:SSD:250"]
    assert not set(missing) & set(overhead_prices())


def test_not_priced_types_carry_a_reason_the_wire_knows() -> None:
    listed = not_priced()
    for kind, (code, why) in listed.items():
        assert code in REASONS, kind
        assert why, kind
    assert listed["AWS::Logs::LogGroup"][0] == "usage" and "usage-based" in listed["AWS::Logs::LogGroup"][1]
    assert listed["AWS::EC2::VPCEndpoint:Gateway"][0] == "free"
    for kind in ("AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::SNS::Topic", "AWS::SQS::Queue"):
        assert listed[kind][0] == "usage", kind


# ---- schedules ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("expression", "runs"), [
    ("rate(5 minutes)", Decimal(730 * 12)),
    ("rate(1 minute)", Decimal(730 * 60)),
    ("rate(1 hour)", Decimal(730)),
    ("rate(2 hours)", Decimal(365)),
    ("rate(1 day)", Decimal(730) / 24),
    ("cron(0 6 * * ? *)", Decimal(730) / 24),                 # daily
    ("cron(0 7 ? * MON *)", Decimal(730) / 24 / 7),           # weekly
    ("cron(0 13 ? * MON-FRI *)", Decimal(730) / 24 * 5 / 7),  # weekdays
    ("cron(0/15 * * * ? *)", Decimal(730) * 4),               # every 15 minutes
    ("cron(0 8,20 1 * ? *)", Decimal(2)),                     # twice on the 1st
    ("cron(0 0 ? JAN-JUN MON *)", Decimal(730) / 24 / 7 / 2),
])
def test_invocations_per_month(expression: str, runs: Decimal) -> None:
    from neuronfleet.cost.overhead import invocations_per_month

    assert invocations_per_month(expression) == runs


@pytest.mark.parametrize("expression", ["at(2026-12-01T00:00:00)", "cron(0 0 L * ? *)", "cron(0 0 ? * 2#1 *)",
                                        "rate(0 minutes)", "cron(0 0 1 * MON *)", "cron(0 0 * *)", "every day"])
def test_schedules_it_cannot_count_are_none(expression: str) -> None:
    from neuronfleet.cost.overhead import invocations_per_month

    assert invocations_per_month(expression) is None


# ---- the wire format ----------------------------------------------------------------------------------------------

def _bill() -> OverheadBill:
    return OverheadBill(region="us-east-2", read=READ, priced=(
        PricedLine("nat-gateway-hour", 3, Decimal(2190), Decimal("98.55"), "vpc-q"),
        PricedLine("kms-key-month", 3, Decimal(3), Decimal("3.00"), "kms"),
        PricedLine("lambda-gb-second", 5, Decimal("413101.79"), Decimal("6.89"), "lambda"),
    ), unpriced=(
        UnpricedLine("AWS::Logs::LogGroup", 6, None, "usage"),
        UnpricedLine("fsx-lustre:PERSISTENT_2:SSD:250", 2, Decimal(6000), "unsourced"),
    ))


def test_round_trip() -> None:
    text = encode(_bill())
    back = decode(text)
    assert back.region == "us-east-2" and back.read == READ
    assert back.total_usd == Decimal("108.44")
    assert [(p.key, p.count, p.monthly_usd, p.source_key) for p in back.priced] == [
        ("nat-gateway-hour", 3, Decimal("98.55"), "vpc-q"), ("kms-key-month", 3, Decimal("3.00"), "kms"),
        ("lambda-gb-second", 5, Decimal("6.89"), "lambda")]
    assert back.priced[2].quantity == Decimal(413102)  # whole units a month on the wire
    assert [(u.key, u.count, u.quantity, u.reason) for u in back.unpriced] == [
        ("AWS::Logs::LogGroup", 6, None, "usage"), ("fsx-lustre:PERSISTENT_2:SSD:250", 2, Decimal(6000), "unsourced")]
    assert back.priced[0].what == "NAT gateway hours" and back.unpriced[0].why == REASONS["usage"]
    assert "AWS::" not in text and " " not in text
    assert json.loads(text)["t"] == "108.44"


def test_a_prod_sized_bill_fits_beside_the_report_functions_variables() -> None:
    bill = OverheadBill(region="us-east-2", read=READ,
                        priced=tuple(PricedLine(k, 33, Decimal(24090), Decimal("240.90"), "privatelink-q")
                                     for k in LABELS),
                        unpriced=tuple(UnpricedLine(k, 10, None, "usage") for k in not_priced()))
    assert len(encode(bill).encode()) < 1300  # the report function's other variables take about 2.7 KB of 4 KB


@pytest.mark.parametrize(("text", "says"), [
    (None, "the variable is not set"),
    ("{not json", "it is not JSON"),
    ("[1]", "not a JSON object"),
    ('{"v":2}', "version v is 2"),
    ('{"v":1,"r":"","d":"2026-11-28","t":"0.00","p":[],"u":[]}', "region r is ''"),
    ('{"v":1,"r":"us-east-2","d":"28/11/2026","t":"0.00","p":[],"u":[]}', "price date d is '28/11/2026'"),
    ('{"v":1,"r":"us-east-2","d":"2026-11-28","t":"0.00","p":{},"u":[]}', "p is {}, not a list"),
    ('{"v":1,"r":"us-east-2","d":"2026-11-28","t":"1.00","p":[["kms-key-month",1,"1","1.00"]],"u":[]}',
     "p[0] is"),
    ('{"v":1,"r":"us-east-2","d":"2026-11-28","t":"1.00","p":[["kms-key-month",1,"1","one","kms"]],"u":[]}',
     "p[0] monthly USD is 'one', not a decimal"),
    ('{"v":1,"r":"us-east-2","d":"2026-11-28","t":"1.00","p":[["kms-key-month",1,"1",1.0,"kms"]],"u":[]}',
     "p[0] monthly USD is 1.0, not a decimal string"),
    ('{"v":1,"r":"us-east-2","d":"2026-11-28","t":"1.00","p":[["kms-key-month",-1,"1","1.00","kms"]],"u":[]}',
     "p[0] count is -1"),
    ('{"v":1,"r":"us-east-2","d":"2026-11-28","t":"-1.00","p":[["kms-key-month",1,"1","-1.00","kms"]],"u":[]}',
     "not a finite amount of at least 0"),
    ('{"v":1,"r":"us-east-2","d":"2026-11-28","t":"2.00","p":[["kms-key-month",1,"1","1.00","kms"]],"u":[]}',
     "total t is '2.00' but its lines sum to 1.00"),
    ('{"v":1,"r":"us-east-2","d":"2026-11-28","t":"0.00","p":[],"u":[["S3::Bucket",1,null,"cheap"]]}',
     "u[0] reason is 'cheap'"),
])
def test_a_malformed_value_is_refused_naming_the_variable_and_what_is_wrong(text: str | None, says: str) -> None:
    with pytest.raises(InvalidEnvironment) as caught:
        decode(text)
    message = str(caught.value)
    assert message.startswith(f"environment variable {VARIABLE}: got ")
    assert says in message
    assert '"v": 1' in message  # what is allowed
