"""The announcements outbox's facts and pure parts, and the refusal of malformed events by the capacity alerts and
the waste detector, derived from the publishers' own examples (tests/data/events). The outbox under faults:
tests/moto/test_announcements_moto.py."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import botocore.session
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError
from neuronfleet_runtime import announcements

from neuronfleet.lambdas.capacity_alert import logic as capacity
from neuronfleet.lambdas.cost import waste
from neuronfleet.lambdas.cost.logic import idle
from neuronfleet_contract.capacity_alert import gpu_pool
from tests.publisher_examples import EVENTS, event

POOL = gpu_pool({"queue_arn": "arn:aws:batch:us-east-2:111111111111:job-queue/gpu", "max_vcpus": 192,
                 "types": [{"instance_type": "p5.48xlarge", "gpus": 8, "gpu_name": "H100", "efa": 32, "vcpus": 192}]})
NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)


def _model(service: str) -> Any:
    return botocore.session.get_session().get_service_model(service)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


# ---------------------------------------------------------------- facts, pinned on botocore 1.44.5


def test_one_transaction_takes_at_most_what_dynamodb_allows() -> None:
    assert _model("dynamodb").shape_for("TransactWriteItemList").metadata["max"] == announcements.MAX_TRANSACTION_ITEMS
    assert announcements.MAX_CLAIMS == announcements.MAX_TRANSACTION_ITEMS - 1  # and the message


def test_dynamodb_gives_the_cancellation_reasons_in_the_order_of_the_items_and_retries_are_idempotent() -> None:
    """The outbox drops the subjects whose reason is ConditionalCheckFailed by position; botocore's own retries of a
    transaction carry its ClientRequestToken."""
    model = _model("dynamodb")
    assert ("Transaction cancellation reasons are ordered in the order of requested items, if an item has no error "
            "it will have None code") in _text(model.shape_for("TransactionCanceledException").documentation)
    token = model.operation_model("TransactWriteItems").input_shape.members["ClientRequestToken"]
    assert "Providing a ClientRequestToken makes the call to TransactWriteItems idempotent" in _text(token.documentation)
    assert token.metadata["max"] == 36  # a str(uuid4())


def test_sns_deduplicates_only_fifo_topics_so_the_publish_stays_at_least_once() -> None:
    doc = _model("sns").operation_model("Publish").input_shape.members["MessageDeduplicationId"].documentation
    assert "This parameter applies only to FIFO (first-in-first-out) topics." in _text(doc)


def test_a_run_that_does_not_know_its_deadline_holds_a_lease_as_long_as_lambdas_longest_timeout() -> None:
    timeout = _model("lambda").operation_model("CreateFunction").input_shape.members["Timeout"]
    assert "the maximum allowed value is 900 seconds" in _text(timeout.documentation)
    assert announcements.LAMBDA_MAX_TIMEOUT == 900


# ---------------------------------------------------------------- pure parts


def test_changes_between_what_holds_and_what_is_open() -> None:
    got = announcements.changes({"i-1": "5%", "i-3": "2%"}, ["i-1", "i-2"])
    assert got.started == {"i-3": "2%"} and got.ended == ["i-2"]


@pytest.mark.parametrize(("error", "certain"), [
    (ClientError({"Error": {"Code": "NotFound"}, "ResponseMetadata": {"HTTPStatusCode": 404}}, "Publish"), True),
    (ClientError({"Error": {"Code": "Throttled"}, "ResponseMetadata": {"HTTPStatusCode": 400}}, "Publish"), True),
    (ClientError({"Error": {"Code": "InternalError"}, "ResponseMetadata": {"HTTPStatusCode": 500}}, "Publish"), False),
    (ClientError({"Error": {"Code": "X"}, "ResponseMetadata": {"HTTPStatusCode": 499}}, "Publish"), True),
    (ClientError({"Error": {"Code": "X"}, "ResponseMetadata": {"HTTPStatusCode": 500}}, "Publish"), False),
    (ReadTimeoutError(endpoint_url="https://sns"), False),
    (EndpointConnectionError(endpoint_url="https://sns"), True),
    (RuntimeError("?"), False),
])
def test_only_an_answer_that_sns_refused_is_certainly_not_sent(error, certain) -> None:
    assert announcements.certainly_not_sent(error) is certain


# ---------------------------------------------------------------- malformed events: capacity alerts


def test_every_example_the_capacity_alerts_subscribe_to_is_well_formed() -> None:
    assert len(list(EVENTS.glob("*.json"))) > 1, EVENTS
    for path in sorted(EVENTS.glob("*.json")):
        if path.stem != "cloudwatch-alarm-state-change":  # the failover's
            assert capacity.malformed(event(path.stem)) is None, path.name


def test_the_fields_checked_are_the_ones_the_examples_carry() -> None:
    """Every member the check requires or allows is in the publishers' examples of that event (none invented)."""
    examples = {capacity.QUEUE_BLOCKED: ["batch-job-queue-blocked"], capacity.JOB_STATE: ["batch-job-state-change"],
                capacity.LAUNCH_UNSUCCESSFUL: ["autoscaling-launch-unsuccessful"],
                capacity.CAPACITY_BLOCK_ENDING[0]: ["capacity-block-reservation-expiration-warning",
                                                    "ec2-capacity-reservation-scheduled"],
                capacity.SCHEDULED: ["scheduled-event"]}
    assert set(examples) <= set(capacity.EVENT_FIELDS)
    for kind, names in examples.items():
        required, optional = capacity.EVENT_FIELDS[kind]
        members = {m for name in names for m in event(name)["detail"]}
        assert set(required) <= set(event(names[0])["detail"]) and set(optional) <= members, kind


@pytest.mark.parametrize(("name", "change", "reason"), [
    ("batch-job-queue-blocked", {"detail": "RUNNABLE"},
     "detail of a 'Batch Job Queue Blocked' event: got 'RUNNABLE' (str); allowed: a JSON object with jobQueue"),
    ("capacity-block-delivered", {"detail": []},
     "detail of a 'Capacity Block Delivered' event: got [] (list); allowed: a JSON object with capacity-reservation-id"),
    ("batch-job-state-change", {"detail": {"status": "RUNNING"}},
     "detail.jobQueue of a 'Batch Job State Change' event: got nothing; allowed: a non-blank string"),
    ("autoscaling-launch-unsuccessful", {"detail-type": 7},
     "detail-type: got 7 (int); allowed: a non-blank string naming the event"),
])
def test_a_malformed_event_is_refused_by_decide_naming_the_field(name, change, reason) -> None:
    (action,) = capacity.decide(event(name) | change, pool=POOL, now=NOW)
    assert action == capacity.Refuse(reason)


def test_an_optional_member_may_be_null_or_absent_but_not_another_type() -> None:
    e = event("autoscaling-launch-unsuccessful")
    assert capacity.malformed(e | {"detail": e["detail"] | {"StatusMessage": None, "Cause": None}}) is None
    assert capacity.malformed(e | {"detail": {"AutoScalingGroupName": "g"}}) is None
    assert capacity.malformed(e | {"detail": e["detail"] | {"Cause": 3}}) == (
        "detail.Cause of a 'EC2 Instance Launch Unsuccessful' event: got 3 (int); allowed: a string or null")


def test_an_event_of_another_kind_is_ignored_not_refused_if_it_is_an_object_with_a_name() -> None:
    other = event("cloudwatch-alarm-state-change")
    assert capacity.malformed(other | {"detail": "anything"}) is None
    (action,) = capacity.decide(other, pool=POOL, now=NOW)
    assert isinstance(action, capacity.Ignore)


# ---------------------------------------------------------------- malformed events: the waste detector


def test_the_schedules_own_example_runs_the_waste_detector() -> None:
    assert idle.malformed_schedule(event("scheduled-event")) is None
    assert idle.malformed_schedule(event("scheduled-event") | {"detail": {"extra": 1}}) is None


@pytest.mark.parametrize(("bad", "reason"), [
    (lambda e: e | {"detail": "{}"}, "detail: got '{}' (str); allowed: a JSON object ({} for a schedule)"),
    (lambda e: e | {"detail": [{}]}, "detail: got [{}] (list); allowed: a JSON object"),
    (lambda e: {k: v for k, v in e.items() if k != "detail-type"}, "detail-type: got nothing; allowed: 'Scheduled Event'"),
    (lambda e: e | {"detail-type": "Batch Job Queue Blocked"},
     "detail-type: got 'Batch Job Queue Blocked' (str); allowed: 'Scheduled Event'"),
    (lambda e: [e], "event: got [{'version': '0'"),
    (lambda e: json.dumps(e), "event: got '{"),
])
def test_the_waste_detector_refuses_anything_else_logged_and_counted_never_a_crash(bad, reason, capsys,
                                                                                    caplog) -> None:
    """Refused before the container is built: no settings, no AWS client, no AttributeError."""
    waste.metrics.clear_metrics()
    out = waste.handler(bad(event("scheduled-event")), Context())
    assert out == []
    (refusal,) = [r for r in caplog.records if r.getMessage() == "malformed event refused"]
    assert refusal.levelname == "ERROR" and refusal.reason.startswith(reason)  # type: ignore[attr-defined]
    (emf,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    (directive,) = emf["_aws"]["CloudWatchMetrics"]
    assert (directive["Namespace"], emf["service"]) == ("NeuronFleet/Waste", "neuronfleet-waste")
    assert [m["Name"] for m in directive["Metrics"]] == [waste.MALFORMED_METRIC] == ["MalformedEvents"]
    assert emf["MalformedEvents"] == [1.0]


class Context:
    function_name, memory_limit_in_mb, aws_request_id = "waste", 256, "req-1"
    invoked_function_arn = "arn:aws:lambda:us-east-2:111111111111:function:waste"

    def get_remaining_time_in_millis(self) -> int:
        return 120_000
