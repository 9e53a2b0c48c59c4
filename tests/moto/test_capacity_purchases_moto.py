"""Every Capacity Block purchase or extension in the account announced once (issue 36, "an announcement of every
purchase or extension in the account"): the parser on AWS's own CloudTrail-via-EventBridge example and on purchase
events built from it (AWS publishes none of these two event names: tests/data/events/README.md), who/what/price in
the message, once per CloudTrail event whatever EventBridge retries, a malformed event refused and counted. moto's
SNS, SQS and DynamoDB."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from neuronfleet_runtime.announcements import Ledger
from neuronfleet_runtime.topic import Topic

from neuronfleet.lambdas.capacity_lifecycle import purchases
from neuronfleet.lambdas.capacity_lifecycle.purchases import Malformed, parse, run
from neuronfleet_contract.capacity_lifecycle import FEE_TAG, PurchaseAnnouncerConfig
from tests.lifecycle_stubs import lifecycle_aws, said
from tests.publisher_examples import event

REGION = "us-east-2"
NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)
ROLE = "arn:aws:sts::333333333333:assumed-role/nf-prod-capacity-CapacityLifecycleFunctionRole/fn"
AWS_EXAMPLE = "cloudtrail-api-call-s3-putobject"


def purchase_event(name: str, *, request: Any, response: Any, event_id: str = "e-1",
                   error: tuple[str, str] | None = None) -> dict[str, Any]:
    """AWS's example (tests/data/events/cloudtrail-api-call-s3-putobject.json) as an EC2 purchase: its values changed,
    its request and response elements replaced (shapes: botocore's ec2 request/result members, lower camel as EC2's
    CloudTrail records write them in the CloudTrail user guide's EC2 examples)."""
    e = copy.deepcopy(event(AWS_EXAMPLE))
    e["source"], e["account"], e["region"] = "aws.ec2", "333333333333", REGION
    d = e["detail"]
    d.update({"eventSource": "ec2.amazonaws.com", "eventName": name, "awsRegion": REGION, "eventID": event_id,
              "recipientAccountId": "333333333333", "requestParameters": request, "responseElements": response,
              "resources": []})
    d["userIdentity"] = {"type": "AssumedRole", "principalId": "AROAEXAMPLE:fn", "arn": ROLE,
                         "accountId": "333333333333"}
    d.pop("additionalEventData")
    if error:
        d["errorCode"], d["errorMessage"] = error
    return e


EXTENSION = {"CapacityBlockExtensionOfferingId": "cbe-0123456789abcdef0", "CapacityReservationId": "cr-1"}
EXTENDED = {"capacityBlockExtensionSet": {"items": [{
    "capacityReservationId": "cr-1", "capacityBlockExtensionOfferingId": "cbe-0123456789abcdef0",
    "capacityBlockExtensionStatus": "payment-pending", "upfrontFee": "1920.00", "currencyCode": "USD"}]}}
BLOCK = {"PurchaseCapacityBlockRequest": {"CapacityBlockOfferingId": "cb-0123456789abcdef0",
                                          "InstancePlatform": "Linux/UNIX", "TagSpecification": {"items": [{
                                              "ResourceType": "capacity-reservation", "Tag": [
                                                  {"Key": FEE_TAG, "Value": "15360.00"}]}]}}}
BOUGHT = {"capacityReservationSet": {"items": [{"capacityReservationId": "cr-u1"}, {"capacityReservationId": "cr-u2"}]}}


def test_aws_example_is_read_and_refused_for_what_it_is_an_s3_call():
    with pytest.raises(Malformed, match=r"^detail.eventSource: got 's3.amazonaws.com'; allowed: 'ec2.amazonaws.com'"):
        parse(event(AWS_EXAMPLE))


def test_an_extension_says_who_what_and_the_price_from_the_response():
    call = parse(purchase_event("PurchaseCapacityBlockExtension", request=EXTENSION, response=EXTENDED))
    assert (call.who, call.offering_ids, call.reservation_ids) == (ROLE, ("cbe-0123456789abcdef0",), ("cr-1",))
    assert call.price == "$1920.00 USD (upfront, from the response elements)"
    subject, message = purchases.say(call)
    assert subject == "neuronfleet: Capacity Block extension purchased by fn"
    assert f"Who: {ROLE}" in message and "Reservation(s): cr-1" in message and "event e-1" in message


def test_a_block_purchase_has_no_fee_in_aws_answer_so_it_says_the_tag_or_where_to_read_it():
    tagged = parse(purchase_event("PurchaseCapacityBlock", request=BLOCK, response=BOUGHT))
    assert tagged.offering_ids == ("cb-0123456789abcdef0",) and tagged.reservation_ids == ("cr-u1", "cr-u2")
    assert tagged.price.startswith(f"$15360.00 (the {FEE_TAG} tag the buyer set")
    untagged = parse(purchase_event("PurchaseCapacityBlock", request={"capacityBlockOfferingId": "cb-9"},
                                    response=None))
    assert untagged.price.startswith("not in the event: EC2's answer to PurchaseCapacityBlock is the capacity "
                                     "reservations, with no fee") and untagged.reservation_ids == ()
    lost = parse(purchase_event("PurchaseCapacityBlockExtension", request=EXTENSION, response=None))
    assert lost.price.endswith("describe-capacity-block-extension-history --capacity-reservation-ids cr-1")


def test_botocore_confirms_what_the_price_messages_say():
    import botocore.session

    ec2 = botocore.session.get_session().get_service_model("ec2")
    block, extension = ec2.shape_for("PurchaseCapacityBlockResult"), ec2.shape_for("CapacityBlockExtension")
    assert not [m for m in block.members if "Fee" in m or "Price" in m]
    assert not [m for name in ("CapacityReservation", "CapacityBlock") for m in ec2.shape_for(name).members
                if "Fee" in m or "Price" in m]
    assert {"UpfrontFee", "CurrencyCode"} <= set(extension.members)
    result = ec2.shape_for("PurchaseCapacityBlockExtensionResult").members["CapacityBlockExtensions"]
    assert result.serialization["name"] == "capacityBlockExtensionSet"


def test_a_refused_attempt_is_announced_as_one():
    call = parse(purchase_event("PurchaseCapacityBlockExtension", request=EXTENSION, response=None,
                                error=("Client.UnauthorizedOperation", "You are not authorized")))
    subject, message = purchases.say(call)
    assert subject.startswith("neuronfleet: Capacity Block extension purchase attempt refused by fn")
    assert "AWS refused it: Client.UnauthorizedOperation You are not authorized" in message


@pytest.mark.parametrize(("bad", "says"), [
    (["not", "an", "event"], "event: got list"),
    ({"detail-type": "EC2 Instance State-change Notification"}, "detail-type: got 'EC2 Instance State-change"),
    ({"detail-type": "AWS API Call via CloudTrail", "detail": "x"}, "detail: got str"),
    ("name", "detail.eventName: got 'RunInstances'; allowed: one of PurchaseCapacityBlock"),
    ("id", "detail.eventID: got None; allowed: CloudTrail's id of the event"),
    ("who", "detail.userIdentity: got str; allowed: a JSON object"),
])
def test_a_malformed_event_is_refused_naming_the_member(bad, says):
    good = purchase_event("PurchaseCapacityBlockExtension", request=EXTENSION, response=EXTENDED)
    if bad == "name":
        good["detail"]["eventName"] = "RunInstances"
        bad = good
    elif bad == "id":
        good["detail"].pop("eventID")
        bad = good
    elif bad == "who":
        good["detail"]["userIdentity"] = "root"
        bad = good
    with pytest.raises(Malformed, match=r"^" + __import__("re").escape(says)):
        parse(bad)


# ------------------------------------------------------------------------------------------------ announced once


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with lifecycle_aws() as world:   # moto's SNS topic with an SQS inbox and an announcements table
        yield world


def test_each_purchase_event_is_announced_once_whatever_eventbridge_retries(aws):
    ledger, topic = Ledger(aws["ddb"], aws["table"]), Topic(aws["sns"], aws["topic"])
    first = purchase_event("PurchaseCapacityBlockExtension", request=EXTENSION, response=EXTENDED, event_id="e-1")
    other = purchase_event("PurchaseCapacityBlock", request=BLOCK, response=BOUGHT, event_id="e-2")
    for e in (first, first, other, first, other):   # EventBridge delivers at least once
        run(e, ledger=ledger, alerts=topic, now=NOW)
    assert [n["Subject"] for n in said(aws)] == ["neuronfleet: Capacity Block extension purchased by fn",
                                                 "neuronfleet: Capacity Block purchased by fn"]


class Context:
    function_name, memory_limit_in_mb, aws_request_id = "purchases", 256, "req-1"
    invoked_function_arn = f"arn:aws:lambda:{REGION}:111111111111:function:purchases"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def test_the_deployed_handler_refuses_and_counts_a_malformed_event_in_its_namespace(aws, monkeypatch, capsys):
    settings = PurchaseAnnouncerConfig(topic_arn=aws["topic"], ledger_table=aws["table"])
    for name, value in {**settings.to_environment(), "FLEET": "nf-prod"}.items():
        monkeypatch.setenv(name, value)
    purchases.container.cache_clear()
    purchases.metrics.clear_metrics()
    try:
        bad = purchase_event("PurchaseCapacityBlock", request=BLOCK, response=BOUGHT)
        bad["detail"]["eventName"] = "PurchaseReservedInstancesOffering"
        out = purchases.handler(bad, Context())
    finally:
        purchases.container.cache_clear()
    assert out["refused"].startswith("detail.eventName: got 'PurchaseReservedInstancesOffering'")
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    (emf,) = [line for line in lines if "_aws" in line]
    (directive,) = emf["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "NeuronFleet/Capacity" and emf["service"] == "neuronfleet-capacity-purchases"
    assert emf["Fleet"] == "nf-prod" and emf["MalformedEvents"] == [1.0]
    assert said(aws) == []
