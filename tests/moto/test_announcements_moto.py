"""The announcements outbox (neuronfleet_runtime.announcements) under injected faults, against moto's DynamoDB and SNS: a
fault at each step (the claim's transaction throttled or timed out before or after it took effect, a later
transaction of a batch, SNS refusing or losing its answer, the hand-back failing, the sent mark failing, the Lambda
stopping after publishing, two overlapping runs) ends with every announcement made once, or, in the one documented
window, made again once and saying so; the table consistent (no claim without its message)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws
from neuronfleet_runtime import announcements
from neuronfleet_runtime.announcements import (
    LEASE_MARGIN,
    MARK_MARGIN,
    MARK_TRIES,
    MAX_CLAIMS,
    ONCE,
    OUTBOX,
    REPEAT_NOTE,
    Ledger,
    Outcome,
    Unfinished,
)
from neuronfleet_runtime.topic import Topic

from tests.fault_injection import (
    Clock,
    FailingTopic,
    Fault,
    Faulty,
    LambdaStopped,
    StoppingTopic,
    client_error,
    timeout,
)
from tests.moto_support import alerts_inbox, announcements_table

REGION = "us-east-2"
T0 = 1_795_000_000.0  # the runs' wall clock (epoch seconds); leases are timed on it
EXPIRES = datetime(2026, 12, 1, tzinfo=UTC)
SAY = ("neuronfleet: Capacity Block cr-1 stops in under 2h", "Checkpoint and drain.")


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
        topic, inbox = alerts_inbox(sns, sqs)
        ddb = boto3.client("dynamodb", region_name=REGION)
        yield {"sns": sns, "sqs": sqs, "topic": Topic(sns, topic), "inbox": inbox, "ddb": ddb,
               "table": announcements_table(ddb), "clock": Clock(T0)}


def ledger(aws: dict[str, Any], client: Any = None) -> Ledger:
    return Ledger(client or aws["ddb"], aws["table"], clock=aws["clock"], sleep=lambda _: None)


def inbox(aws: dict[str, Any]) -> list[dict[str, str]]:
    """What reached the topic's subscriber (and empties it)."""
    out = []
    while got := aws["sqs"].receive_message(QueueUrl=aws["inbox"], MaxNumberOfMessages=10).get("Messages", []):
        for m in got:
            aws["sqs"].delete_message(QueueUrl=aws["inbox"], ReceiptHandle=m["ReceiptHandle"])
            out.append(json.loads(m["Body"]))
    return out


def items(aws: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return aws["ddb"].query(TableName=aws["table"], KeyConditionExpression="#k = :k",
                            ExpressionAttributeNames={"#k": "kind"},
                            ExpressionAttributeValues={":k": {"S": kind}})["Items"]


def consistent(aws: dict[str, Any]) -> None:
    """Every claim names a message that exists, and every message's claims exist (or were ended by it)."""
    messages = {m["subject"]["S"]: m for m in items(aws, OUTBOX)}
    for page in aws["ddb"].get_paginator("scan").paginate(TableName=aws["table"]):
        for item in page["Items"]:
            if item["kind"]["S"] != OUTBOX:
                assert item["outbox"]["S"] in messages, item
                about = [a["S"] for a in messages[item["outbox"]["S"]]["about"]["L"]]
                assert f"start {item['kind']['S']} {item['subject']['S']}" in about


def ddb_error(aws: dict[str, Any], code: str, operation: str) -> Exception:
    return client_error(code, operation, client=aws["ddb"])


# ---------------------------------------------------------------- the path without faults


def test_a_once_announcement_is_recorded_with_its_message_published_and_marked_sent(aws) -> None:
    box = ledger(aws).outbox(aws["topic"])
    assert box.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.SENT
    assert box.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.ALREADY
    again = ledger(aws).outbox(aws["topic"])
    assert again.complete() == [] and again.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.ALREADY
    assert [(m["Subject"], m["Message"]) for m in inbox(aws)] == [SAY]
    (claim,) = items(aws, ONCE)
    (message,) = items(aws, OUTBOX)
    assert claim["outbox"] == message["subject"] and claim["expires"] == {"N": str(int(EXPIRES.timestamp()))}
    assert message["state"] == {"S": "sent"} and "owner" not in message and "lease_until" not in message
    assert ledger(aws).messages() == []
    box.finish()
    again.finish()


def test_a_claim_written_before_the_outbox_reads_as_announced(aws) -> None:
    """Items of earlier versions (no ``outbox``): the table's schema is unchanged and they stay announced."""
    aws["ddb"].put_item(TableName=aws["table"], Item={"kind": {"S": "idle-instance"}, "subject": {"S": "i-old"},
                                                      "expires": {"N": "1795000000"}})
    box = ledger(aws).outbox(aws["topic"])
    assert ledger(aws).open_subjects("idle-instance") == ["i-old"]
    assert box.start("idle-instance", "i-old", expires=EXPIRES, say=SAY) == Outcome.ALREADY
    assert box.end("idle-instance", "i-old", expires=EXPIRES, say=("ended", "i-old")) == Outcome.SENT
    assert ledger(aws).open_subjects("idle-instance") == [] and len(inbox(aws)) == 1


def test_a_kind_may_not_take_the_outboxs_partition(aws) -> None:
    box = ledger(aws).outbox(aws["topic"])
    with pytest.raises(ValueError, match=r"announcement kind '#outbox': allowed: a non-blank name not starting"):
        box.start(OUTBOX, "x", expires=EXPIRES, say=SAY)


# ---------------------------------------------------------------- DynamoDB faults on the claim


@pytest.mark.parametrize("error", ["ProvisionedThroughputExceededException", "ThrottlingException", "timeout"])
def test_a_claim_refused_or_timed_out_before_it_took_effect_records_nothing_and_the_retry_announces_once(
        aws, error) -> None:
    fault = timeout() if error == "timeout" else ddb_error(aws, error, "TransactWriteItems")
    faulty = Faulty(aws["ddb"], {("transact_write_items", 1): Fault(fault)})
    box = ledger(aws, faulty).outbox(aws["topic"])
    assert box.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.UNRECORDED
    with pytest.raises(Unfinished, match="recording start of once"):
        box.finish()
    assert items(aws, ONCE) == [] and items(aws, OUTBOX) == [] and inbox(aws) == []
    retry = ledger(aws).outbox(aws["topic"])
    assert retry.complete() == [] and retry.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.SENT
    assert [m["Subject"] for m in inbox(aws)] == [SAY[0]]
    consistent(aws)


def test_a_claim_whose_answer_is_lost_after_it_took_effect_is_handed_back_and_the_retry_announces_it_once(
        aws) -> None:
    faulty = Faulty(aws["ddb"], {("transact_write_items", 1): Fault(timeout(), after=True)})
    box = ledger(aws, faulty).outbox(aws["topic"])
    assert box.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.UNRECORDED
    (message,) = items(aws, OUTBOX)  # the transaction took effect: claim and message, handed back unpublished
    assert "owner" not in message and message["lease_until"] == {"N": "0"} and message["released"] == {"N": "1"}
    assert inbox(aws) == []
    retry = ledger(aws).outbox(aws["topic"])  # at once: no lease to wait for
    assert retry.complete() == [SAY[0]] and retry.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.ALREADY
    (got,) = inbox(aws)
    assert got["Message"] == SAY[1]  # not marked as a possible repeat: SNS never had it
    retry.finish()
    consistent(aws)


def test_a_transaction_conflict_with_an_overlapping_run_is_retried(aws) -> None:
    conflict = client_error("TransactionCanceledException", "TransactWriteItems", client=aws["ddb"],
                            CancellationReasons=[{"Code": "TransactionConflict"}, {"Code": "None"}])
    faulty = Faulty(aws["ddb"], {("transact_write_items", 1): Fault(conflict)})
    box = ledger(aws, faulty).outbox(aws["topic"])
    assert box.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.SENT
    assert faulty.calls["transact_write_items"] == 2 and len(inbox(aws)) == 1
    box.finish()


def test_conflicts_that_last_give_up_after_three_tries_with_nothing_recorded(aws) -> None:
    conflict = client_error("TransactionCanceledException", "TransactWriteItems", client=aws["ddb"],
                            CancellationReasons=[{"Code": "TransactionConflict"}, {"Code": "None"}])
    faulty = Faulty(aws["ddb"], {("transact_write_items", n): Fault(conflict) for n in (1, 2, 3)})
    box = ledger(aws, faulty).outbox(aws["topic"])
    assert box.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.UNRECORDED
    assert faulty.calls["transact_write_items"] == announcements.CONFLICT_TRIES == 3
    assert items(aws, ONCE) == [] and inbox(aws) == []


# ---------------------------------------------------------------- batches (start_all / end_all)


def said_for(subjects: list[str]) -> tuple[str, str]:
    return f"{len(subjects)} idle", "\n".join(subjects)


def test_a_batch_claimed_in_part_by_an_overlapping_run_records_and_names_only_the_rest(aws) -> None:
    other = ledger(aws).outbox(aws["topic"])
    assert other.start("idle-instance", "i-2", expires=EXPIRES, say=said_for(["i-2"])) == Outcome.SENT
    box = ledger(aws).outbox(aws["topic"])
    assert box.start_all("idle-instance", ["i-1", "i-2", "i-3"], expires=EXPIRES, say=said_for) == ["i-1", "i-3"]
    assert [m["Message"] for m in inbox(aws)] == ["i-2", "i-1\ni-3"]
    assert sorted(ledger(aws).open_subjects("idle-instance")) == ["i-1", "i-2", "i-3"]
    consistent(aws)


def test_a_later_transaction_of_a_batch_failing_leaves_no_orphan_and_the_retry_announces_the_rest_once(aws) -> None:
    subjects = [f"i-{n:03}" for n in range(MAX_CLAIMS + 5)]  # two transactions: 99 claims, then 5
    faulty = Faulty(aws["ddb"], {("transact_write_items", 2): Fault(
        ddb_error(aws, "ProvisionedThroughputExceededException", "TransactWriteItems"))})
    box = ledger(aws, faulty).outbox(aws["topic"])
    assert box.start_all("idle-instance", subjects, expires=EXPIRES, say=said_for) == subjects[:MAX_CLAIMS]
    with pytest.raises(Unfinished):
        box.finish()
    assert sorted(ledger(aws).open_subjects("idle-instance")) == subjects[:MAX_CLAIMS]  # the 5: no claim at all
    consistent(aws)
    lo = ledger(aws)
    retry = lo.outbox(aws["topic"])
    missing = announcements.changes(dict.fromkeys(subjects, ""), lo.open_subjects("idle-instance")).started
    assert retry.start_all("idle-instance", list(missing), expires=EXPIRES, say=said_for) == subjects[MAX_CLAIMS:]
    told = [line for m in inbox(aws) for line in m["Message"].split("\n")]
    assert sorted(told) == subjects  # each once
    consistent(aws)


@pytest.mark.parametrize(("count", "subjects"), [(MAX_CLAIMS, ["99 idle"]), (MAX_CLAIMS + 1, ["99 idle", "1 idle"])])
def test_one_message_holds_at_most_one_transactions_claims(aws, count, subjects) -> None:
    box = ledger(aws).outbox(aws["topic"])
    wanted = [f"i-{n:03}" for n in range(count)]
    assert box.start_all("idle-instance", wanted, expires=EXPIRES, say=said_for) == wanted
    assert sorted(m["Subject"] for m in inbox(aws)) == sorted(subjects)
    assert len(items(aws, OUTBOX)) == len(subjects)
    consistent(aws)


def test_ends_of_a_batch_are_atomic_too_and_an_end_already_recorded_by_another_run_is_dropped(aws) -> None:
    box = ledger(aws).outbox(aws["topic"])
    box.start_all("idle-instance", ["i-1", "i-2", "i-3"], expires=EXPIRES, say=said_for)
    other = ledger(aws).outbox(aws["topic"])
    assert other.end("idle-instance", "i-1", expires=EXPIRES, say=("ended", "i-1")) == Outcome.SENT
    faulty = Faulty(aws["ddb"], {("transact_write_items", 1): Fault(
        ddb_error(aws, "ThrottlingException", "TransactWriteItems"))})
    failing = ledger(aws, faulty).outbox(aws["topic"])
    assert failing.end_all("idle-instance", ["i-1", "i-2", "i-3"], expires=EXPIRES, say=said_for) == []
    assert sorted(ledger(aws).open_subjects("idle-instance")) == ["i-2", "i-3"]  # nothing half-ended
    retry = ledger(aws).outbox(aws["topic"])
    assert retry.end_all("idle-instance", ["i-1", "i-2", "i-3"], expires=EXPIRES, say=said_for) == ["i-2", "i-3"]
    assert [m["Message"] for m in inbox(aws)] == ["i-1\ni-2\ni-3", "i-1", "i-2\ni-3"]
    assert ledger(aws).open_subjects("idle-instance") == []


# ---------------------------------------------------------------- SNS faults


def test_sns_refusing_a_publish_leaves_it_pending_and_the_retry_publishes_it_once_without_a_note(aws) -> None:
    refused = FailingTopic(aws["topic"], client_error("Throttled", "Publish", status=400))
    box = ledger(aws).outbox(refused)
    assert box.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.PENDING
    with pytest.raises(Unfinished, match="publishing 'neuronfleet: Capacity Block cr-1 stops in under 2h'"):
        box.finish()
    (message,) = ledger(aws).messages()
    assert message["state"] == {"S": "pending"} and "owner" not in message and message["released"] == {"N": "1"}
    assert "injected Throttled" in message["last_error"]["S"]
    retry = ledger(aws).outbox(aws["topic"])
    assert retry.complete() == [SAY[0]] and retry.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.ALREADY
    assert [(m["Subject"], m["Message"]) for m in inbox(aws)] == [SAY]
    assert ledger(aws).messages() == []
    retry.finish()


@pytest.mark.parametrize("error", ["timeout", "InternalError"])
def test_sns_losing_its_answer_is_the_documented_window_one_repeat_that_says_so(aws, error) -> None:
    lost = timeout("sns") if error == "timeout" else client_error("InternalError", "Publish", status=500)
    box = ledger(aws).outbox(FailingTopic(aws["topic"], lost, published=True))
    assert box.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.PENDING
    retry = ledger(aws).outbox(aws["topic"])
    assert retry.complete() == [SAY[0]]
    assert [m["Message"] for m in inbox(aws)] == [SAY[1], SAY[1] + REPEAT_NOTE]
    assert ledger(aws).outbox(aws["topic"]).complete() == [] and inbox(aws) == []


def test_the_hand_back_failing_too_loses_nothing_the_message_waits_for_the_lease(aws) -> None:
    refused = FailingTopic(aws["topic"], client_error("Throttled", "Publish", status=400))
    faulty = Faulty(aws["ddb"], {("update_item", 1): Fault(ddb_error(aws, "ThrottlingException", "UpdateItem"))})
    box = ledger(aws, faulty).outbox(refused, deadline=T0 + 60)
    assert box.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.PENDING
    with pytest.raises(Unfinished, match=r"handing back .* it waits for this run's lease"):
        box.finish()
    aws["clock"].now = T0 + 60 + LEASE_MARGIN  # exactly the lease's end: still the stopped run's
    assert ledger(aws).outbox(aws["topic"]).complete() == [] and inbox(aws) == []
    aws["clock"].now += 0.001
    assert ledger(aws).outbox(aws["topic"]).complete() == [SAY[0]]
    (got,) = inbox(aws)  # once; it says it may repeat (the run that held it could not say it had not sent it)
    assert got["Message"] == SAY[1] + REPEAT_NOTE


def refused_marks(aws: dict[str, Any], count: int) -> Faulty:
    """DynamoDB refusing the first ``count`` UpdateItem calls (after botocore's own retries: one error each)."""
    return Faulty(aws["ddb"], {("update_item", n): Fault(ddb_error(aws, "ThrottlingException", "UpdateItem"))
                               for n in range(1, count + 1)})


@pytest.mark.parametrize("refusals", [1, MARK_TRIES])
def test_a_sent_mark_refused_for_a_while_is_tried_again_and_no_later_run_repeats_the_message(aws, refusals) -> None:
    """The run knows SNS took the message: it tries the mark again at its end (backoff on the run's clock) and the
    message is never published again."""
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        aws["clock"].now += seconds

    box = Ledger(refused_marks(aws, refusals), aws["table"], clock=aws["clock"], sleep=sleep).outbox(
        aws["topic"], deadline=T0 + 60)
    assert box.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.SENT
    box.finish()  # nothing left for the next run
    assert waits == [0.5 * 2 ** n for n in range(refusals - 1)]
    aws["clock"].now = T0 + 60 + LEASE_MARGIN + 1
    assert ledger(aws).outbox(aws["topic"]).complete() == []
    assert [m["Message"] for m in inbox(aws)] == [SAY[1]]
    assert ledger(aws).messages() == []


def test_a_sent_mark_refused_until_the_runs_end_is_the_documented_window_one_repeat_after_the_lease(aws) -> None:
    box = ledger(aws, refused_marks(aws, 1 + MARK_TRIES)).outbox(aws["topic"], deadline=T0 + 60)
    assert box.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.SENT
    with pytest.raises(Unfinished, match="It was published; after this run's lease the next run publishes it again"):
        box.finish()
    aws["clock"].now = T0 + 30  # a retry within the lease: nothing
    assert ledger(aws).outbox(aws["topic"]).complete() == []
    aws["clock"].now = T0 + 60 + LEASE_MARGIN + 1
    assert ledger(aws).outbox(aws["topic"]).complete() == [SAY[0]]
    assert ledger(aws).outbox(aws["topic"]).complete() == []
    assert [m["Message"] for m in inbox(aws)] == [SAY[1], SAY[1] + REPEAT_NOTE]


def test_the_marks_retries_stop_before_the_runs_deadline(aws) -> None:
    """A run near its end does not sleep past its deadline (less MARK_MARGIN) to retry a mark."""
    def sleep(seconds: float) -> None:
        aws["clock"].now += seconds

    box = Ledger(refused_marks(aws, 10), aws["table"], clock=aws["clock"], sleep=sleep).outbox(
        aws["topic"], deadline=T0 + MARK_MARGIN + 1.0)
    box.once("cr-1#2h", expires=EXPIRES, say=SAY)
    with pytest.raises(Unfinished, match="marking"):
        box.finish()
    assert aws["clock"].now <= T0 + 1.0  # slept 0.5 s: the next wait (1 s) would pass deadline - MARK_MARGIN


# ---------------------------------------------------------------- a message SNS refuses as such

TOO_LARGE = ("neuronfleet: queue blocked", "x" * (256 * 1024 + 1))  # moto refuses it as SNS does (InvalidParameter)
NOTICE = "neuronfleet: an announcement could not be published"


def test_the_errors_that_set_a_message_aside_are_snss_own_for_a_refused_request() -> None:
    import botocore.session

    model = botocore.session.get_session().get_service_model("sns")
    publish = model.operation_model("Publish")
    codes = {e.metadata["error"]["code"] for e in publish.error_shapes if e.metadata["error"]["httpStatusCode"] == 400
             and e.name in ("InvalidParameterException", "InvalidParameterValueException", "ValidationException")}
    assert codes == set(announcements.UNPUBLISHABLE)
    assert "256 KiB in size (262,144 bytes" in publish.input_shape.members["Message"].documentation


def test_a_message_sns_refuses_is_set_aside_announced_once_and_blocks_no_later_run(aws) -> None:
    box = ledger(aws).outbox(aws["topic"])
    assert box.once("big", expires=EXPIRES, say=TOO_LARGE) == Outcome.SET_ASIDE
    assert box.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.SENT  # the next one still goes out
    box.finish()  # nothing for a retry to do
    assert box.set_aside == [TOO_LARGE[0]]
    got = inbox(aws)
    assert [m["Subject"] for m in got] == [NOTICE, SAY[0]]
    assert "set aside" in got[0]["Message"] and "'neuronfleet: queue blocked'" in got[0]["Message"]
    assert f"{len(TOO_LARGE[1]) } bytes" in got[0]["Message"]
    for minutes in (1, 5, 60 * 24 * 7):  # every later run: nothing to publish, nothing failing
        aws["clock"].now = T0 + 60 * minutes
        later = ledger(aws).outbox(aws["topic"])
        assert later.complete() == [] and later.once("big", expires=EXPIRES, say=TOO_LARGE) == Outcome.ALREADY
        later.finish()
    assert inbox(aws) == []
    (kept,) = [m for m in items(aws, OUTBOX) if m["state"]["S"] == "set-aside"]
    assert kept["message"]["S"] == TOO_LARGE[1] and "Message too long" in kept["last_error"]["S"]
    assert "owner" not in kept and "lease_until" not in kept
    consistent(aws)


def test_a_pending_message_sns_refuses_is_set_aside_by_the_run_completing_it_and_the_others_go_out(aws) -> None:
    stopped = ledger(aws).outbox(StoppingTopic(aws["topic"], published=False), deadline=T0)
    with pytest.raises(LambdaStopped):
        stopped.once("big", expires=EXPIRES, say=TOO_LARGE)
    stopped2 = ledger(aws).outbox(StoppingTopic(aws["topic"], published=False), deadline=T0)
    with pytest.raises(LambdaStopped):
        stopped2.once("cr-1#2h", expires=EXPIRES, say=SAY)
    aws["clock"].now = T0 + LEASE_MARGIN + 1
    later = ledger(aws).outbox(aws["topic"])
    assert later.complete() == [SAY[0]]  # the large one first (oldest), set aside; the other published
    later.finish()
    assert later.set_aside == [TOO_LARGE[0]]
    assert sorted(m["Subject"] for m in inbox(aws)) == sorted([NOTICE, SAY[0]])
    assert ledger(aws).outbox(aws["topic"]).complete() == [] and inbox(aws) == []


def test_setting_aside_refused_by_dynamodb_is_done_by_the_next_run_after_the_lease_and_noticed_once(aws) -> None:
    faulty = Faulty(aws["ddb"], {("update_item", 1): Fault(ddb_error(aws, "ThrottlingException", "UpdateItem"))})
    box = ledger(aws, faulty).outbox(aws["topic"], deadline=T0 + 60)
    assert box.once("big", expires=EXPIRES, say=TOO_LARGE) == Outcome.PENDING
    with pytest.raises(Unfinished, match="setting aside 'neuronfleet: queue blocked'"):
        box.finish()
    assert inbox(aws) == []
    aws["clock"].now = T0 + 30  # within the lease
    assert ledger(aws).outbox(aws["topic"]).complete() == []
    aws["clock"].now = T0 + 60 + LEASE_MARGIN + 1
    later = ledger(aws).outbox(aws["topic"])
    assert later.complete() == [] and later.set_aside == [TOO_LARGE[0]]
    later.finish()
    assert [m["Subject"] for m in inbox(aws)] == [NOTICE]
    assert ledger(aws).outbox(aws["topic"]).complete() == [] and inbox(aws) == []


def test_two_runs_completing_the_same_unpublishable_message_notice_it_once(aws) -> None:
    stopped = ledger(aws).outbox(StoppingTopic(aws["topic"], published=False), deadline=T0)
    with pytest.raises(LambdaStopped):
        stopped.once("big", expires=EXPIRES, say=TOO_LARGE)
    aws["clock"].now = T0 + LEASE_MARGIN + 1
    b_set_aside: list[list[str]] = []

    def run_b() -> None:  # the whole of run B between run A's read of the outbox and A's take
        b = ledger(aws).outbox(aws["topic"])
        assert b.complete() == []
        b.finish()
        b_set_aside.append(b.set_aside)

    a = ledger(aws, Faulty(aws["ddb"], before={("update_item", 1): run_b})).outbox(aws["topic"])
    assert a.complete() == [] and a.set_aside == []  # its take lost: the message is no longer pending
    a.finish()
    assert b_set_aside == [[TOO_LARGE[0]]]
    assert [m["Subject"] for m in inbox(aws)] == [NOTICE]


def test_a_notice_that_sns_refuses_is_set_aside_without_a_notice_of_its_own(aws) -> None:
    refusing = FailingTopic(aws["topic"], client_error("InvalidParameter", "Publish", status=400))
    box = ledger(aws).outbox(refusing)
    assert box.once("big", expires=EXPIRES, say=TOO_LARGE) == Outcome.SET_ASIDE
    box.finish()
    assert box.set_aside == [TOO_LARGE[0], NOTICE]  # the notice refused too: set aside, and no third message
    assert inbox(aws) == [] and ledger(aws).messages() == []


# ---------------------------------------------------------------- the Lambda stopping, overlapping runs


@pytest.mark.parametrize("published", [True, False])
def test_a_run_that_stops_mid_publish_is_completed_after_its_lease_once(aws, published) -> None:
    box = ledger(aws).outbox(StoppingTopic(aws["topic"], published=published), deadline=T0 + 60)
    with pytest.raises(LambdaStopped):
        box.once("cr-1#2h", expires=EXPIRES, say=SAY)
    aws["clock"].now = T0 + 45  # the retry, while the stopped run's lease lasts: no second message, no second claim
    retry = ledger(aws).outbox(aws["topic"])
    assert retry.complete() == [] and retry.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.ALREADY
    aws["clock"].now = T0 + 60 + LEASE_MARGIN + 1
    later = ledger(aws).outbox(aws["topic"])
    assert later.complete() == [SAY[0]]
    assert [m["Message"] for m in inbox(aws)] == [SAY[1]] * published + [SAY[1] + REPEAT_NOTE]
    assert ledger(aws).outbox(aws["topic"]).complete() == [] and inbox(aws) == []
    consistent(aws)


def test_a_run_without_a_known_deadline_holds_its_messages_for_lambdas_longest_timeout(aws) -> None:
    box = ledger(aws).outbox(StoppingTopic(aws["topic"], published=False))
    with pytest.raises(LambdaStopped):
        box.once("cr-1#2h", expires=EXPIRES, say=SAY)
    aws["clock"].now = T0 + 900 + LEASE_MARGIN
    assert ledger(aws).outbox(aws["topic"]).complete() == []
    aws["clock"].now += 1
    assert ledger(aws).outbox(aws["topic"]).complete() == [SAY[0]]


def test_two_overlapping_runs_announce_once(aws) -> None:
    """Run B runs whole between run A's claim and A's publish: B sees the claim, leaves A's message alone."""
    results: dict[str, Any] = {}

    class Overlapped:
        def announce(self, subject: str, message: str) -> None:
            other = ledger(aws).outbox(aws["topic"])
            results["completed"] = other.complete()
            results["b"] = other.once("cr-1#2h", expires=EXPIRES, say=SAY)
            aws["topic"].announce(subject, message)

    a = ledger(aws).outbox(Overlapped())
    assert a.once("cr-1#2h", expires=EXPIRES, say=SAY) == Outcome.SENT
    assert results == {"completed": [], "b": Outcome.ALREADY}
    assert len(inbox(aws)) == 1 and ledger(aws).messages() == []


def test_two_runs_completing_the_same_pending_message_publish_it_once(aws) -> None:
    """A pending message (its run stopped before publishing); run A reads it, run B takes and publishes it before
    A's take: A's conditional take fails and A publishes nothing."""
    stopped = ledger(aws).outbox(StoppingTopic(aws["topic"], published=False), deadline=T0)
    with pytest.raises(LambdaStopped):
        stopped.once("cr-1#2h", expires=EXPIRES, say=SAY)
    aws["clock"].now = T0 + LEASE_MARGIN + 1
    b_completed: list[str] = []
    faulty = Faulty(aws["ddb"], before={
        ("update_item", 1): lambda: b_completed.extend(ledger(aws).outbox(aws["topic"]).complete())})
    a = ledger(aws, faulty).outbox(aws["topic"])
    assert a.complete() == [] and b_completed == [SAY[0]]
    assert len(inbox(aws)) == 1
    a.finish()  # losing the race is not a problem
