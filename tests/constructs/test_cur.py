"""CostMonitors with source athena: the CUR 2.0 Data Export, its encrypted bucket, Glue table, Athena workgroup and
named queries, and a collector that may run exactly those queries (least privilege). The synth runs with cdk-nag as
a validation plugin: an unacknowledged finding fails it."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template

from neuronfleet import CostMonitors, CostMonitorSettings
from neuronfleet.cur import CurAnalytics
from neuronfleet.lambdas.cost.cur import QUERIES
from tests.conftest import new_app, properties


@pytest.fixture(scope="module")
def stack() -> tuple[cdk.Stack, CostMonitors]:
    app = new_app()
    stack = cdk.Stack(app, "Org", env=cdk.Environment(account="111111111111", region="us-east-1"))
    monitors = CostMonitors(stack, "Cost", fleet_name="nf-org", topic=sns.Topic(stack, "Topic", enforce_ssl=True,
                                                                               master_key=None),
                            settings=CostMonitorSettings(source="athena", athena_bytes_scanned_cutoff=5 * 2**30))
    app.synth()  # cdk-nag gate
    return stack, monitors


@pytest.fixture(scope="module")
def template(stack) -> Template:
    return Template.from_stack(stack[0])


def test_cur2_export_of_the_columns_the_queries_read_in_parquet_to_the_kit_bucket(template) -> None:
    (export,) = properties(template, "AWS::BCMDataExports::Export").values()
    e = export["Export"]
    assert e["DataQuery"]["QueryStatement"].endswith("FROM COST_AND_USAGE_REPORT")
    for column in ("line_item_usage_type", "line_item_line_item_type", "resource_tags", "line_item_unblended_cost",
                   "savings_plan_savings_plan_effective_cost"):
        assert column in e["DataQuery"]["QueryStatement"]
    assert e["DataQuery"]["TableConfigurations"]["COST_AND_USAGE_REPORT"]["TIME_GRANULARITY"] == "DAILY"
    out = e["DestinationConfigurations"]["S3Destination"]["S3OutputConfigurations"]
    assert (out["Format"], out["Compression"], out["Overwrite"]) == ("PARQUET", "PARQUET", "OVERWRITE_REPORT")
    assert e["RefreshCadence"] == {"Frequency": "SYNCHRONOUS"}


def test_export_bucket_is_encrypted_and_admits_the_export_services_for_this_account_only(template) -> None:
    policies = [p["PolicyDocument"]["Statement"] for p in properties(template, "AWS::S3::BucketPolicy").values()]
    statements = [s for ss in policies for s in ss if "bcm-data-exports" in json.dumps(s.get("Principal", {}))]
    assert len(statements) == 2
    assert {s["Action"] for s in statements} == {"s3:PutObject", "s3:GetBucketPolicy"}
    for s in statements:
        assert sorted(s["Principal"]["Service"]) == ["bcm-data-exports.amazonaws.com", "billingreports.amazonaws.com"]
        assert set(s["Condition"]["StringLike"]) == {"aws:SourceAccount", "aws:SourceArn"}
    for bucket in properties(template, "AWS::S3::Bucket").values():
        assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == \
            {"SSEAlgorithm": "AES256"}


def test_glue_table_over_the_export_with_partition_projection(template) -> None:
    (table,) = properties(template, "AWS::Glue::Table").values()
    t = table["TableInput"]
    assert t["PartitionKeys"] == [{"Name": "billing_period", "Type": "string"}]
    assert t["Parameters"]["projection.enabled"] == "true"
    columns = {c["Name"]: c["Type"] for c in t["StorageDescriptor"]["Columns"]}
    assert columns["resource_tags"] == "map<string,string>" and columns["line_item_usage_start_date"] == "timestamp"
    assert "ParquetHiveSerDe" in t["StorageDescriptor"]["SerdeInfo"]["SerializationLibrary"]


def test_workgroup_enforces_encrypted_results_and_a_bytes_scanned_cutoff(template) -> None:
    template.has_resource_properties("AWS::Athena::WorkGroup", {"WorkGroupConfiguration": Match.object_like({
        "EnforceWorkGroupConfiguration": True, "BytesScannedCutoffPerQuery": 5 * 2**30,
        "ResultConfiguration": Match.object_like({"EncryptionConfiguration": {"EncryptionOption": "SSE_S3"}})})})


def test_named_queries_for_spend_per_fleet_family_kind_and_day(template) -> None:
    queries = {q["Name"]: q["QueryString"] for q in properties(template, "AWS::Athena::NamedQuery").values()}
    assert set(queries) == {f"neuronfleet-{n.replace('_', '-')}" for n in QUERIES}
    text = json.dumps(queries["neuronfleet-spend-by-fleet-family-kind-day"])
    assert "date_add('day', -30, current_date)" in text and "DATE '1970" not in text


def _statements(template: Template) -> list[dict[str, Any]]:
    return [s for k, p in properties(template, "AWS::IAM::Policy").items() if k.startswith("CostCollector")
            for s in p["PolicyDocument"]["Statement"]]


def test_collector_reads_athena_not_cost_explorer_with_least_privilege(template, stack) -> None:
    statements = _statements(template)
    actions = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert "ce:GetCostAndUsage" not in actions
    (athena,) = [s for s in statements if "athena:StartQueryExecution" in s["Action"]]
    assert ":workgroup/" in json.dumps(athena["Resource"])  # this workgroup only
    (glue,) = [s for s in statements if "glue:GetTable" in s["Action"]]
    assert "*" not in json.dumps(glue["Resource"]).replace("${", "")
    (fn,) = [f for f in properties(template, "AWS::Lambda::Function").values()
             if f["Handler"] == "cost.collector.handler"]
    env = fn["Environment"]["Variables"]
    assert env["SPEND_SOURCE"] == "athena" and "ATHENA_WORKGROUP" in env and "ATHENA_TABLE" in env


def test_a_cutoff_below_athenas_minimum_is_refused() -> None:
    stack = cdk.Stack(cdk.App(), "S")
    with pytest.raises(ValueError, match="bytes_scanned_cutoff: got 1000; allowed: at least 10,000,000 bytes"):
        CurAnalytics(stack, "Cur", export_name="x", bytes_scanned_cutoff=1000)
