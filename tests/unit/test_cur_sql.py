"""The Athena (CUR 2.0) queries run on CUR 2.0-shaped sample data in DuckDB, offline, and their rows parse into
the same ledger rows the Cost Explorer path writes."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import duckdb
import pytest

from neuronfleet.lambdas.cost.adapters.athena import QUERIES, pages_of, render, to_duckdb
from neuronfleet.lambdas.cost.logic.rows import parse

# CUR 2.0 columns the queries read (names and types from the CUR 2.0 table dictionary)
SCHEMA = """CREATE TABLE cur (
    line_item_usage_start_date TIMESTAMP, line_item_product_code VARCHAR, line_item_line_item_type VARCHAR,
    line_item_usage_type VARCHAR, line_item_usage_amount DOUBLE, line_item_unblended_cost DOUBLE,
    line_item_net_unblended_cost DOUBLE, savings_plan_savings_plan_effective_cost DOUBLE,
    reservation_effective_cost DOUBLE, resource_tags MAP(VARCHAR, VARCHAR))"""

PROD = {"user_neuronfleet_fleet": "nf-prod"}
OTHER = {"user_neuronfleet_fleet": "nf-other"}
LINES: list[tuple[Any, ...]] = [
    # day, product, line item type, usage type, amount, unblended, net unblended, SP effective, RI effective, tags
    ("2026-11-01 00:00:00", "AmazonEC2", "SavingsPlanCoveredUsage", "USE2-BoxUsage:trn2.48xlarge", 12, 536.41, None,
     325.0, None, PROD),
    ("2026-11-01 12:00:00", "AmazonEC2", "SavingsPlanCoveredUsage", "USE2-BoxUsage:trn2.48xlarge", 12, 536.42, None,
     325.0, None, PROD),
    ("2026-11-01 00:00:00", "AmazonEC2", "SavingsPlanNegation", "USE2-BoxUsage:trn2.48xlarge", 24, -1072.83, None,
     None, None, PROD),
    ("2026-11-01 00:00:00", "AmazonSageMaker", "Usage", "USE2-Host:ml.inf2.xlarge", 24, 30.0, 27.0, None, None, PROD),
    ("2026-11-01 00:00:00", "AmazonSageMaker", "Usage", "USE2-Train:ml.trn1.32xlarge", 10, 400.0, None, None, None,
     PROD),
    ("2026-11-01 00:00:00", "AmazonEC2", "Fee", "USE2-CapacityBlockFee:p5.48xlarge", 1, 996.67, None, None, None,
     PROD),
    ("2026-11-01 00:00:00", "AmazonEC2", "Usage", "USE2-BoxUsage:p5.48xlarge", 24, 0.0, None, None, None, PROD),
    ("2026-11-01 00:00:00", "AmazonEC2", "Usage", "USE2-BoxUsage:p5.48xlarge", 10, 550.4, None, None, None, OTHER),
    ("2026-11-01 00:00:00", "AmazonEC2", "Usage", "USE2-BoxUsage:m5.large", 24, 2.3, None, None, None, PROD),
    ("2026-11-01 00:00:00", "AmazonEC2", "Usage", "USE2-EBS:VolumeUsage.gp3", 100, 8.0, None, None, None, PROD),
    ("2026-11-02 00:00:00", "AmazonEC2", "Usage", "USE2-BoxUsage:trn2.48xlarge", 24, 1072.83, None, None, None, {}),
    # a cancelled block's refund (same usage type, negative: grafana/cloudcost-exporter) nets its fee in the usage
    # query; a refund of instance usage stays an adjustment
    ("2026-11-02 00:00:00", "AmazonEC2", "Refund", "USE2-CapacityBlockFee:p5.48xlarge", 0, -996.67, None, None, None,
     PROD),
    ("2026-11-01 00:00:00", "AmazonEC2", "Refund", "USE2-BoxUsage:trn2.48xlarge", 0, -50.0, None, None, None, PROD),
    ("2026-11-01 00:00:00", "AWS", "Credit", "", 0, -300.0, None, None, None, PROD),
    ("2026-11-01 00:00:00", "AmazonEC2", "Tax", "", 0, 12.0, None, None, None, PROD),
    ("2026-10-31 00:00:00", "AmazonEC2", "Usage", "USE2-BoxUsage:trn2.48xlarge", 24, 999.0, None, None, None, PROD),
]


@pytest.fixture(scope="module")
def db() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(SCHEMA)
    con.executemany("INSERT INTO cur VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", LINES)
    return con


def run(db: duckdb.DuckDBPyConnection, name: str) -> list[dict[str, Any]]:
    sql = to_duckdb(render(name, table="cur", start=date(2026, 11, 1), end=date(2026, 11, 3)))
    cur = db.execute(sql)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def test_the_dialect_rewrite_is_the_documented_one() -> None:
    sql = render("spend_by_fleet_usage_type_day", table="cur_db.cur2", start=date(2026, 11, 1), end=date(2026, 11, 3))
    assert "element_at(resource_tags, 'user_neuronfleet_fleet')" in sql and "regexp_like(" in sql
    duck = to_duckdb(sql)
    assert "resource_tags['user_neuronfleet_fleet']" in duck and "regexp_matches(" in duck and "element_at" not in duck
    assert to_duckdb(sql).replace("resource_tags['user_neuronfleet_fleet']", "x") == \
        sql.replace("element_at(resource_tags, 'user_neuronfleet_fleet')", "x").replace("regexp_like(", "regexp_matches(")


def test_usage_query_gives_both_bases_per_day_usage_type_and_fleet(db) -> None:
    got = {(str(r["day"]), r["usage_type"], r["fleet"]): (round(r["net_amortized_cost"], 2),
                                                           round(r["unblended_cost"], 2), r["usage_quantity"])
           for r in run(db, "spend_by_fleet_usage_type_day")}
    assert got == {
        # a Savings Plan covers the trn2 hours: unblended nets to 0, amortized is the plan's effective cost
        ("2026-11-01", "USE2-BoxUsage:trn2.48xlarge", "nf-prod"): (650.0, 0.0, 24.0),
        ("2026-11-01", "USE2-Host:ml.inf2.xlarge", "nf-prod"): (27.0, 30.0, 24.0),  # discount netted
        ("2026-11-01", "USE2-Train:ml.trn1.32xlarge", "nf-prod"): (400.0, 400.0, 10.0),
        ("2026-11-01", "USE2-CapacityBlockFee:p5.48xlarge", "nf-prod"): (996.67, 996.67, 1.0),
        ("2026-11-01", "USE2-BoxUsage:p5.48xlarge", "nf-prod"): (0.0, 0.0, 24.0),  # in the block: $0 usage
        ("2026-11-01", "USE2-BoxUsage:p5.48xlarge", "nf-other"): (550.4, 550.4, 10.0),
        ("2026-11-02", "USE2-BoxUsage:trn2.48xlarge", ""): (1072.83, 1072.83, 24.0),  # untagged
        ("2026-11-02", "USE2-CapacityBlockFee:p5.48xlarge", "nf-prod"): (-996.67, -996.67, 0.0),  # the refund
    }  # m5.large and EBS are not accelerator time; 10-31 is outside the window; credits and taxes apart


def test_adjustments_query_keeps_credits_and_taxes_apart(db) -> None:
    got = {(r["record_type"], r["fleet"]): r["unblended_cost"] for r in run(db, "adjustments_by_fleet_day")}
    assert got == {("Credit", "nf-prod"): -300.0, ("Refund", "nf-prod"): -50.0, ("Tax", "nf-prod"): 12.0}


def test_family_kind_query(db) -> None:
    got = {(r["fleet"], r["family"], r["kind"]): round(r["net_amortized_cost"], 2)
           for r in run(db, "spend_by_fleet_family_kind_day") if str(r["day"]) == "2026-11-01"}
    assert got == {("nf-prod", "trainium", "ec2"): 650.0, ("nf-prod", "inferentia", "sagemaker-hosting"): 27.0,
                   ("nf-prod", "trainium", "sagemaker-training"): 400.0, ("nf-prod", "gpu", "capacity-block"): 996.67,
                   ("nf-prod", "gpu", "ec2"): 0.0, ("nf-other", "gpu", "ec2"): 550.4}


def test_results_become_the_same_ledger_rows_as_cost_explorer(db) -> None:
    records = [{k: str(v) for k, v in r.items()} for r in run(db, "spend_by_fleet_usage_type_day")]  # Athena: text
    (page,) = pages_of(records)
    parsed = parse(page)
    assert parsed.bad == []
    by = {(r.day, r.usage, r.instance_type, r.fleet): r for r in parsed.rows}
    trn = by[("2026-11-01", "ec2", "trn2.48xlarge", "nf-prod")]
    assert (trn.amount, trn.unblended, trn.usage_hours) == (Decimal("650.0"), Decimal("0.0"), Decimal("24.0"))
    assert by[("2026-11-01", "capacity-block", "p5.48xlarge", "nf-prod")].amount == Decimal("996.67")
    assert by[("2026-11-02", "ec2", "trn2.48xlarge", "(untagged)")].family == "trainium"
    adj = parse(pages_of([{k: str(v) for k, v in r.items()} for r in run(db, "adjustments_by_fleet_day")],
                         adjustments=True)[0], adjustments=True)
    assert sorted((r.usage, r.amount) for r in adj.rows) == [
        ("credit", Decimal("-300.0")), ("refund", Decimal("-50.0")), ("tax", Decimal("12.0"))]
    refund = by[("2026-11-02", "capacity-block", "p5.48xlarge", "nf-prod")]
    assert (refund.cost("net_amortized"), refund.cost("unblended")) == (Decimal("-996.67"), Decimal("-996.67"))


@pytest.mark.parametrize(("table", "key"), [("cur; DROP TABLE x", "user_neuronfleet_fleet"), ("cur", "a'b")])
def test_render_refuses_unsafe_identifiers(table: str, key: str) -> None:
    with pytest.raises(ValueError, match="got"):
        render("spend_by_fleet_usage_type_day", table=table, start=date(2026, 11, 1), end=date(2026, 11, 2),
               fleet_tag_key=key)


def test_every_named_query_runs(db) -> None:
    assert QUERIES
    for name in QUERIES:
        assert run(db, name), name


def test_the_athena_cutoff_floor_is_botocores() -> None:
    """One home for Athena's smallest per-query cutoff (core.rules), read by the settings and CurAnalytics alike."""
    import botocore.session

    from neuronfleet.core.rules import ATHENA_MIN_BYTES_SCANNED_CUTOFF

    model = botocore.session.get_session().get_service_model("athena")
    shape = model.shape_for("WorkGroupConfiguration").members["BytesScannedCutoffPerQuery"]
    assert ATHENA_MIN_BYTES_SCANNED_CUTOFF == shape.metadata["min"] == 10_000_000
