"""CapacityPurchaseAnnouncements' template: EventBridge's CloudTrail purchase events reach its function, which has its
own announcements table (the lifecycle role cannot write it), may buy nothing, and alarms on a refused event."""

from __future__ import annotations

import json

import pytest
from aws_cdk import Stack
from aws_cdk.assertions import Template

from neuronfleet import FleetAlerts
from neuronfleet.capacity.purchases import CapacityPurchaseAnnouncements
from tests.conftest import ENV, new_app, properties

HANDLER = "capacity_lifecycle.purchases.handler"


@pytest.fixture(scope="module")
def template() -> Template:
    stack = Stack(new_app(), "Purchases", env=ENV)
    topic = FleetAlerts(stack, "Alerts", emails=["ml-platform@example.com"]).topic
    CapacityPurchaseAnnouncements(stack, "Purchases", topic=topic, fleet="nf-test")
    return Template.from_stack(stack)


def test_every_capacity_block_purchase_in_the_account_reaches_the_function(template):
    (rule,) = [r for r in properties(template, "AWS::Events::Rule").values()
               if (r.get("EventPattern") or {}).get("detail-type") == ["AWS API Call via CloudTrail"]]
    assert rule["EventPattern"] == {"source": ["aws.ec2"], "detail-type": ["AWS API Call via CloudTrail"], "detail": {
        "eventSource": ["ec2.amazonaws.com"],
        "eventName": ["PurchaseCapacityBlock", "PurchaseCapacityBlockExtension"]}}


def test_it_has_its_own_table_and_may_buy_nothing(template):
    (fn,) = [p for p in properties(template, "AWS::Lambda::Function").values() if p.get("Handler") == HANDLER]
    env = fn["Environment"]["Variables"]
    assert env["FLEET"] == "nf-test" and "Ref" in env["ANNOUNCEMENTS_TABLE"]
    role = fn["Role"]["Fn::GetAtt"][0]
    statements = [s for p in properties(template, "AWS::IAM::Policy").values() if {"Ref": role} in p["Roles"]
                  for s in p["PolicyDocument"]["Statement"]]
    actions = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert not [a for a in actions if a.startswith("ec2:")]
    (table,) = properties(template, "AWS::DynamoDB::Table")
    assert env["ANNOUNCEMENTS_TABLE"] == {"Ref": table}
    assert json.dumps(statements).count(table) >= 1


def test_a_refused_event_alarms_on_the_fleets_own_metric(template):
    (alarm,) = [a for a in properties(template, "AWS::CloudWatch::Alarm").values()
                if a.get("MetricName") == "MalformedEvents"]
    assert alarm["Namespace"] == "NeuronFleet/Capacity"
    assert {d["Name"]: d["Value"] for d in alarm["Dimensions"]} == {"service": "neuronfleet-capacity-purchases",
                                                                    "Fleet": "nf-test"}
