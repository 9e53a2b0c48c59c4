"""The cost monitors as synthesised from config/prod.yaml."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from tests.conftest import properties


@pytest.fixture(scope="module")
def prod(synth_fleet):
    return synth_fleet("prod")


@pytest.fixture(scope="module")
def cost(prod) -> Template:
    return prod.template("cost")


def _fn(t: Template, handler: str) -> tuple[str, dict[str, Any]]:
    (hit,) = [(k, f) for k, f in properties(t, "AWS::Lambda::Function").items() if f["Handler"] == handler]
    return hit


def _statements(t: Template, role_prefix: str) -> list[dict[str, Any]]:
    return [s for k, p in properties(t, "AWS::IAM::Policy").items() if k.startswith(role_prefix)
            for s in p["PolicyDocument"]["Statement"]]


def test_ledger_is_retained_with_point_in_time_recovery(cost) -> None:
    cost.has_resource("AWS::DynamoDB::Table", {
        "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
        "Properties": Match.object_like({"BillingMode": "PAY_PER_REQUEST",
                                         "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                                         "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                                                       {"AttributeName": "sk", "KeyType": "RANGE"}]})})


def test_three_handlers_on_their_schedules(cost) -> None:
    schedules = {json.dumps(r["Targets"][0]["Arn"]): r["ScheduleExpression"]
                 for r in properties(cost, "AWS::Events::Rule").values()}
    expected = {"cost.collector.handler": "cron(0 6 * * ? *)", "cost.report.handler": "cron(0 7 ? * MON *)",
                "cost.waste.handler": "rate(1 hour)"}
    assert len(schedules) >= len(expected), schedules
    for handler, expression in expected.items():
        logical, _ = _fn(cost, handler)
        (got,) = [e for arn, e in schedules.items() if logical in arn]
        assert got == expression


def test_collector_queries_with_the_catalog_types_and_publishes_to_its_namespace(cost, prod) -> None:
    _, fn = _fn(cost, "cost.collector.handler")
    env = fn["Environment"]["Variables"]
    types = json.loads(env["INSTANCE_TYPES"])
    assert "trn2u.48xlarge" in types and "ml.inf2.48xlarge" in types and "ml.p5.48xlarge" in types
    assert env["METRICS_NAMESPACE"] == "NeuronFleet/Cost" and env["LOOKBACK_DAYS"] == "3"
    # scoped to its own fleet, on the fleet file's basis, with a first-run backfill
    assert (env["FLEET"], env["COST_BASIS"], env["BACKFILL_DAYS"], env["MONTH_CLOSE_DAYS"]) == \
        ("nf-prod", "net_amortized", "60", "5")
    statements = _statements(cost, "CostMonitorsCollector")
    actions = sorted(a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"]))
    assert actions == ["ce:GetCostAndUsage", "cloudwatch:PutMetricData", "dynamodb:BatchWriteItem",
                       "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query",
                       "ec2:DescribeCapacityBlockExtensionHistory",  # extensions bought, not yet booked
                       "ec2:DescribeCapacityBlocks", "ec2:DescribeCapacityReservations",
                       "logs:CreateLogStream", "logs:PutLogEvents",
                       "resource-groups:ListGroupResources",  # the fleet's Capacity Block groups (prod's pretrain)
                       "sqs:SendMessage"]  # sqs: its dead-letter queue
    (ddb,) = [s for s in statements if "dynamodb:PutItem" in s["Action"]]
    assert "Fn::GetAtt" in json.dumps(ddb["Resource"])  # its own ledger only
    (put,) = [s for s in statements if s["Action"] == "cloudwatch:PutMetricData"]
    assert put["Condition"] == {"StringEquals": {"cloudwatch:namespace": "NeuronFleet/Cost"}}


def test_report_carries_prices_with_source_and_date_and_writes_only_reports(cost) -> None:
    _, fn = _fn(cost, "cost.report.handler")
    from neuronfleet_contract.cost import ReportConfig, _prices

    variables = fn["Environment"]["Variables"]
    # the built-in table travels in the function's code: prod's fleet file overrides no price, so none is carried
    assert _prices(json.loads(variables["PRICES"])) == {} and variables["PRICE_REGION"] == "us-east-2"
    plain = {k: v if isinstance(v, str) else "token" for k, v in variables.items()}
    prices = ReportConfig.from_environment(plain).prices  # what the function reads: the whole table
    assert set(prices["trn2.48xlarge"]) >= {"usd_per_hour", "source", "as_of", "region", "sourced"}
    assert prices["trn2.48xlarge"]["sourced"] == "false"  # no public On-Demand rate
    assert prices["p5.48xlarge"]["region"] == "us-east-1"  # Karpenter's copy of AWS's Price List is us-east-1's
    assert "us-east-2" in prices["p5.48xlarge"]["note"]  # prod runs in us-east-2: said
    assert prices["ml.g5.xlarge"]["usd_per_hour"] == "1.4084"  # the built-in SageMaker rates (an AWS sample's)
    assert fn["Environment"]["Variables"]["COST_BASIS"] == "net_amortized"
    (put,) = [s for s in _statements(cost, "CostMonitorsReport") if s["Action"] == "s3:PutObject"]
    assert json.dumps(put["Resource"]).endswith('/reports/*"]]}')


def test_budget_per_fleet_with_forecast_notifications_to_the_topic(cost) -> None:
    (budget,) = properties(cost, "AWS::Budgets::Budget").values()
    data = budget["Budget"]
    assert (data["BudgetType"], data["TimeUnit"], data["BudgetLimit"]) == ("COST", "MONTHLY",
                                                                          {"Amount": 450000, "Unit": "USD"})
    assert data["CostFilters"] == {"TagKeyValue": ["user:neuronfleet:fleet$nf-prod"]}
    kinds = [(n["Notification"]["NotificationType"], n["Notification"]["Threshold"])
             for n in budget["NotificationsWithSubscribers"]]
    assert kinds == [("FORECASTED", 80), ("FORECASTED", 100), ("ACTUAL", 100)]
    assert all(n["Subscribers"][0]["SubscriptionType"] == "SNS" for n in budget["NotificationsWithSubscribers"])


def test_alerts_topic_lets_budgets_publish(prod) -> None:
    alerts = prod.template("alerts")
    alerts.has_resource_properties("AWS::SNS::TopicPolicy", {"PolicyDocument": {"Statement": Match.array_with([
        Match.object_like({"Principal": {"Service": "budgets.amazonaws.com"}, "Action": "sns:Publish"})])}})
    (key,) = properties(alerts, "AWS::KMS::Key").values()
    services = {json.dumps(s["Principal"]) for s in key["KeyPolicy"]["Statement"]}
    assert any("budgets.amazonaws.com" in s for s in services) and any("cloudwatch.amazonaws.com" in s for s in services)


def test_dashboard_shows_spend_unit_cost_and_utilisation(cost, prod) -> None:
    (dash,) = properties(cost, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dash["DashboardBody"])
    for needle in ("daily spend by accelerator family", "Cost per million inferences", "NeuronCore utilisation",
                   "NeuronFleet/Cost"):
        assert needle in body, needle
    # no endpoint is named at synth: the unit costs are a search over what the report publishes
    assert prod.stacks["inference"].endpoints["Chat"].endpoint_name not in body


def test_the_dashboards_unit_costs_are_the_reports_not_spend_that_includes_ec2_training(cost) -> None:
    """The Spend metric has no workload dimension: GPU spend / GPU invocations put EC2 training spend in the
    numerator. The dashboard now draws the unit costs the report computed and published, per model."""
    (dash,) = properties(cost, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dash["DashboardBody"])
    widget = body[body.index("Cost per million inferences per model"):]
    widget = widget[:widget.index("NeuronCore utilisation")]
    assert "NeuronFleet/Economics" in widget and "CostPerMillionInferences" in widget
    assert "NeuronFleet/Cost" not in widget and "Spend" not in widget and "1000000 *" not in widget
    # every endpoint the report found and published, whatever their number: a search on the fleet's unit costs
    parts = dash["DashboardBody"]["Fn::Join"][1]
    widgets = json.loads("".join(p if isinstance(p, str) else "region" for p in parts))["widgets"]
    (unit_costs,) = [w["properties"] for w in widgets if w["properties"].get("title", "").startswith("Cost per million")]
    assert unit_costs["metrics"] == [[{
        "expression": "SEARCH('{NeuronFleet/Economics,Endpoint,Fleet,Variant} Fleet=\"nf-prod\" "
                      "MetricName=\"CostPerMillionInferences\"', 'Average', 604800)",
        "label": "${PROP('Dim.Endpoint')} ${PROP('Dim.Variant')}", "period": 604800}]]
    # the report may write its unit costs there and nowhere else
    (put,) = [s for s in _statements(cost, "CostMonitorsReport") if s["Action"] == "cloudwatch:PutMetricData"]
    assert put["Condition"] == {"StringEquals": {"cloudwatch:namespace": "NeuronFleet/Economics"}}


def test_handler_errors_alarm_and_dead_letter_queues(cost) -> None:
    alarms = [a for a in properties(cost, "AWS::CloudWatch::Alarm").values() if a["MetricName"] == "Errors"]
    assert len(alarms) == 3 and all(len(a["AlarmActions"]) == 1 for a in alarms)
    for fn in properties(cost, "AWS::Lambda::Function").values():
        assert "DeadLetterConfig" in fn
    cost.resource_count_is("AWS::SQS::Queue", 3)


def test_the_report_reads_each_model_from_the_endpoint_configuration_as_the_settings_describe_it(prod) -> None:
    """What the report finds at run time (discovery.endpoint_model on the deployed endpoint configuration, here the
    synthesised one: CloudFormation's properties are the API's) is what the fleet file says (cost.endpoint_model):
    chat on ml.inf2.48xlarge with its p5en pool and its warm p5 standby (the last pool) as capacity fallback."""
    from neuronfleet.cost.monitors import endpoint_model
    from neuronfleet.facts.catalog import CATALOG, accelerators_of
    from neuronfleet.lambdas.cost.logic.discovery import endpoint_model as discovered

    inference = prod.template_json("inference")["Resources"]
    models = {}
    for cid, endpoint in prod.stacks["inference"].endpoints.items():
        (res,) = [r for k, r in inference.items() if r["Type"] == "AWS::SageMaker::EndpointConfig" and k.startswith(cid)]
        cfg = json.loads(json.dumps(res["Properties"]))  # model names are tokens; the types and weights are literal
        models[cid], notes = discovered("ep", cfg, accelerators_of(CATALOG))
        assert notes == ()
        assert models[cid] == endpoint_model("ep", endpoint.settings), cid
    assert models["Chat"].gpu_role == "" and models["Chat"].gpu_pool_types == ("ml.p5en.48xlarge", "ml.p5.48xlarge")
    assert models["Chat"].neuron_types == ("ml.inf2.48xlarge",) and models["Embed"].gpu_type == ""


def test_every_endpoint_carries_the_fleet_tag_the_cost_monitors_find_it_by(prod) -> None:
    endpoints = [r for name in prod.stacks for r in prod.template_json(name)["Resources"].values()
                 if r["Type"] == "AWS::SageMaker::Endpoint"]
    assert len(endpoints) == 2
    for e in endpoints:
        assert {"Key": "neuronfleet:fleet", "Value": "nf-prod"} in e["Properties"]["Tags"]


def test_the_cost_stack_depends_on_no_inference_stack(prod) -> None:
    assert [s.stack_name for s in prod.stacks["cost"].dependencies] == ["nf-prod-alerts"]  # the topic
    imports = re.findall(r'"Fn::ImportValue": "([^"]+)"', json.dumps(prod.template_json("cost")))
    assert imports and all(i.startswith("nf-prod-alerts:") for i in imports), imports


def test_the_report_and_the_waste_detector_find_the_endpoints_with_least_privilege(cost) -> None:
    for prefix, handler in (("CostMonitorsReport", "cost.report.handler"), ("CostMonitorsWaste", "cost.waste.handler")):
        env = _fn(cost, handler)[1]["Environment"]["Variables"]
        assert "ENDPOINTS" not in env and "MODELS" not in env
        by_action = {a: json.dumps(s["Resource"]) for s in _statements(cost, prefix)
                     for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
        assert by_action["tag:GetResources"] == '"*"'  # no resource-level permissions (acknowledged for cdk-nag)
        # any endpoint of the fleet's account and region (names are found at run time); reads only
        assert by_action["sagemaker:DescribeEndpoint"] == '"arn:aws:sagemaker:us-east-2:333333333333:endpoint/*"'
    report = {a: json.dumps(s["Resource"]) for s in _statements(cost, "CostMonitorsReport")
              for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert report["sagemaker:DescribeEndpointConfig"] == '"arn:aws:sagemaker:us-east-2:333333333333:endpoint-config/*"'
    waste = {a for s in _statements(cost, "CostMonitorsWaste")
             for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert "sagemaker:DescribeEndpointConfig" not in waste  # the detector reads variants, not configurations


def test_the_report_reads_the_price_list_and_caches_prices_under_its_own_keys_only(cost, prod) -> None:
    env = _fn(cost, "cost.report.handler")[1]["Environment"]["Variables"]
    assert (env["LIVE_PRICES"], env["PRICE_CACHE_DAYS"]) == ("true", "7")
    statements = _statements(cost, "CostMonitorsReport")
    (get,) = [s for s in statements if "pricing:GetProducts" in s["Action"]]
    assert get["Resource"] == "*" and "Condition" not in get  # the Price List has no resource-level permissions
    (write,) = [s for s in statements if s["Action"] == "dynamodb:BatchWriteItem"]
    assert write["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["PRICE#*"]}}
    assert "Fn::GetAtt" in json.dumps(write["Resource"])  # its own ledger; never the spend rows (DAY#...)
    from pathlib import Path

    stack = prod.stacks["cost"].stack_name
    metadata = json.loads((Path(prod.assembly.directory) / f"{stack}.metadata.json").read_text())
    (acks,) = [e["data"] for e in metadata[f"/{stack}/CostMonitors/Report/Role"]
               if e["type"] == "aws:cdk:acknowledged-rules" and "Annotation::AwsSolutions-IAM5[Resource::*]" in e["data"]]
    reason = acks["Annotation::AwsSolutions-IAM5[Resource::*]"]
    assert reason.endswith("; nor has pricing:GetProducts (the AWS Price List Query API: public list prices, no "
                           "resource to name)")


def test_the_waste_detector_is_scoped_to_the_fleet_and_may_read_what_it_judges(cost) -> None:
    _, fn = _fn(cost, "cost.waste.handler")
    env = fn["Environment"]["Variables"]
    assert env["FLEET"] == "nf-prod"
    assert "RESERVATION_IDS" in env and "ENDPOINTS" not in env  # the endpoints are found by the fleet tag
    actions = {a for s in _statements(cost, "CostMonitorsWaste")
               for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert {"ec2:DescribeInstances", "ec2:DescribeCapacityReservations", "sagemaker:DescribeEndpoint",
            "tag:GetResources", "cloudwatch:GetMetricData"} <= actions
    assert "cloudwatch:ListMetrics" not in actions  # no more listing every instance of the region


def test_the_report_environment_stays_under_lambdas_4_kb_and_unpacks_to_the_price_table(cost, prod) -> None:
    from neuronfleet.facts.catalog import CATALOG, accelerators_of
    from neuronfleet.facts.prices import price_table
    from neuronfleet_contract.cost import ReportConfig

    _, fn = _fn(cost, "cost.report.handler")
    env = fn["Environment"]["Variables"]
    # what Lambda counts: names and values (tokens rendered as their CloudFormation text, which is longer)
    assert sum(len(k) + len(json.dumps(v)) for k, v in env.items()) < 4096
    plain = {k: v if isinstance(v, str) else "token" for k, v in env.items()}
    assert "ENDPOINTS" not in env and "MODELS" not in env  # found at run time, by the fleet tag
    settings = ReportConfig.from_environment(plain)
    assert settings.prices == price_table(CATALOG, "us-east-2")  # the catalog's table, read from the function's code
    assert settings.accelerators == accelerators_of(CATALOG) and env["ACCELERATORS"] == "{}"


def test_the_collector_reads_the_extension_history_on_the_only_resource_the_action_takes(cost, prod) -> None:
    """DescribeCapacityBlockExtensionHistory has no resource type (Service Authorization Reference): granted on *,
    and cdk-nag's IAM5 finding on the collector's role is acknowledged with that source."""
    from pathlib import Path

    from neuronfleet.cost.monitors import EXTENSION_HISTORY_ACTION

    (ec2,) = [s for s in _statements(cost, "CostMonitorsCollector") if EXTENSION_HISTORY_ACTION.value in s["Action"]]
    assert ec2["Resource"] == "*" and "Condition" not in ec2
    assert "list_amazonec2.html" in EXTENSION_HISTORY_ACTION.source and "no resource type" in \
        EXTENSION_HISTORY_ACTION.source
    stack = prod.stacks["cost"].stack_name
    metadata = json.loads((Path(prod.assembly.directory) / f"{stack}.metadata.json").read_text())
    (acks,) = [e["data"] for e in metadata[f"/{stack}/CostMonitors/Collector/Role"]
               if e["type"] == "aws:cdk:acknowledged-rules" and "Annotation::AwsSolutions-IAM5[Resource::*]" in e["data"]]
    assert acks["Annotation::AwsSolutions-IAM5[Resource::*]"].endswith(
        f"; nor has ec2:DescribeCapacityBlockExtensionHistory ({EXTENSION_HISTORY_ACTION.source}, read 2026-11-26)")
