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

from neuronfleet import CostMonitors, CostMonitorSettings, CurAnalytics, CurExport, InvalidSettings
from neuronfleet_contract.cur import QUERIES
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
    with pytest.raises(InvalidSettings, match="CurAnalytics: bytes_scanned_cutoff: got 1000; allowed: at least "
                                              "10,000,000 bytes"):
        CurAnalytics(stack, "Cur", export_name="x", bytes_scanned_cutoff=1000)


# --- outside us-east-1: the export in a us-east-1 stack of its own (construct API and the reference app) ----------

ACCOUNT = "111111111111"


def _topic(stack: cdk.Stack) -> sns.Topic:
    return sns.Topic(stack, "Topic", enforce_ssl=True, master_key=None)


def _cross_region(app: cdk.App, *, account: str | None = ACCOUNT) -> tuple[cdk.Stack, cdk.Stack, CostMonitors]:
    cost = cdk.Stack(app, "OrgCost", env=cdk.Environment(account=account, region="us-west-2"))
    monitors = CostMonitors(cost, "Cost", fleet_name="nf-org", topic=_topic(cost),
                            settings=CostMonitorSettings(source="athena"))
    export = cdk.Stack(app, "OrgCurExport", env=cdk.Environment(account=account, region="us-east-1"))
    return cost, export, monitors


@pytest.fixture(scope="module")
def cross_region() -> tuple[dict[str, Any], dict[str, Any], Any]:
    app = new_app()
    _, export, monitors = _cross_region(app)
    assert monitors.cur is not None and monitors.cur.export is None  # us-west-2: no export of its own
    CurExport(export, "CurExport", analytics=monitors.cur)
    assembly = app.synth()  # cdk-nag gate
    return (assembly.get_stack_by_name("OrgCost").template, assembly.get_stack_by_name("OrgCurExport").template,
            assembly)


def test_the_export_is_in_us_east_1_and_writes_to_the_bucket_in_the_collectors_region(cross_region) -> None:
    cost, export, _ = cross_region
    assert [r["Type"] for r in cost["Resources"].values()].count("AWS::BCMDataExports::Export") == 0
    assert [r["Type"] for r in export["Resources"].values()] == ["AWS::BCMDataExports::Export"]
    (resource,) = export["Resources"].values()
    destination = resource["Properties"]["Export"]["DestinationConfigurations"]["S3Destination"]
    # one name, generated by CDK and written into both templates (no cross-stack reference, no custom resource)
    (bucket,) = [r for k, r in cost["Resources"].items() if r["Type"] == "AWS::S3::Bucket" and "CurExports" in k]
    assert isinstance(destination["S3Bucket"], str) and destination["S3Bucket"] == bucket["Properties"]["BucketName"]
    assert (destination["S3Region"], destination["S3Prefix"]) == ("us-west-2", "cur2")
    assert not any(r["Type"].startswith(("Custom::", "AWS::CloudFormation::CustomResource", "AWS::Lambda"))
                   for r in export["Resources"].values())
    assert "Fn::ImportValue" not in json.dumps(export)
    # Glue reads where the export writes: <prefix>/<export name>/data/, in the same bucket
    (table,) = [r["Properties"] for r in cost["Resources"].values() if r["Type"] == "AWS::Glue::Table"]
    assert "/cur2/nf-org-cur2/data/" in json.dumps(table["TableInput"]["StorageDescriptor"]["Location"])


def test_the_export_stack_deploys_after_the_bucket_and_its_policy(cross_region) -> None:
    _, _, assembly = cross_region
    artifact = assembly.get_stack_by_name("OrgCurExport")
    assert [d.id for d in artifact.dependencies if not d.id.endswith(".assets")] == ["OrgCost"]


def test_the_bucket_admits_exports_made_in_us_east_1_by_this_account(cross_region) -> None:
    cost, _, _ = cross_region
    statements = [s for r in cost["Resources"].values() if r["Type"] == "AWS::S3::BucketPolicy"
                  for s in r["Properties"]["PolicyDocument"]["Statement"]
                  if "bcm-data-exports" in json.dumps(s.get("Principal", {}))]
    assert len(statements) == 2
    for s in statements:
        arns = json.dumps(s["Condition"]["StringLike"]["aws:SourceArn"])
        assert ":cur:us-east-1:" in arns and ":bcm-data-exports:us-east-1:" in arns


def test_analytics_outside_us_east_1_without_an_export_stop_synth() -> None:
    app = cdk.App()
    _cross_region(app)
    with pytest.raises(RuntimeError, match=r"CurAnalytics OrgCost/Cost/Cur \(in us-west-2\) has no CUR 2.0 export: "
                                           r"add CurExport\(<a stack in us-east-1, same account>"):
        app.synth()


def test_an_export_outside_us_east_1_is_refused_with_the_region_rule() -> None:
    app = cdk.App()
    cost, _, monitors = _cross_region(app)
    elsewhere = cdk.Stack(app, "Ohio", env=cdk.Environment(account=ACCOUNT, region="us-east-2"))
    with pytest.raises(InvalidSettings) as info:
        CurExport(elsewhere, "CurExport", analytics=monitors.cur)
    (problem,) = info.value.problems
    assert (problem.path, problem.value) == ("region", "us-east-2")
    assert problem.allowed.startswith("us-east-1: AWS::BCMDataExports::Export and the Data Exports API are served "
                                      "from us-east-1 only")
    with pytest.raises(InvalidSettings, match="region: got 'us-west-2'; allowed: us-east-1"):
        CurAnalytics(cost, "Forced", export_name="nf-forced", export_here=True)


def test_an_export_needs_one_concrete_account_and_one_export_per_bucket() -> None:
    app = cdk.App()
    _, export, monitors = _cross_region(app, account=None)
    with pytest.raises(InvalidSettings, match=r"account: got None; allowed: a 12-digit account on stack OrgCurExport"):
        CurExport(export, "CurExport", analytics=monitors.cur)
    app = cdk.App()
    _, export, monitors = _cross_region(app)
    other = cdk.Stack(app, "Other", env=cdk.Environment(account="222222222222", region="us-east-1"))
    with pytest.raises(InvalidSettings, match=r"account: got '222222222222'; allowed: 111111111111, the account of"):
        CurExport(other, "CurExport", analytics=monitors.cur)
    CurExport(export, "CurExport", analytics=monitors.cur)
    with pytest.raises(InvalidSettings, match=r"analytics: got 'OrgCost/Cost/Cur'; allowed: a CurAnalytics without"):
        CurExport(export, "Again", analytics=monitors.cur)


# --- the example fleet: config/org.yaml (us-west-2, source athena) ------------------------------------------------


def test_org_fleet_puts_its_export_in_a_us_east_1_stack_of_its_own(synth_fleet) -> None:
    org = synth_fleet("org")
    assert org.fleet.region == "us-west-2" and org.fleet.cost_monitors.source == "athena"
    assert {short: (s.region, s.account) for short, s in org.stacks.items()} == {
        "network": ("us-west-2", "444444444444"), "alerts": ("us-west-2", "444444444444"),
        "cost": ("us-west-2", "444444444444"), "cur-export": ("us-east-1", "444444444444")}
    org.template("cur-export").resource_count_is("AWS::BCMDataExports::Export", 1)
    org.template("cost").resource_count_is("AWS::BCMDataExports::Export", 0)
    org.template("cost").resource_count_is("AWS::Athena::WorkGroup", 1)
    (fn,) = [f for f in properties(org.template("cost"), "AWS::Lambda::Function").values()
             if f["Handler"] == "cost.collector.handler"]
    assert fn["Environment"]["Variables"]["SPEND_SOURCE"] == "athena"
