"""What the fleet has announced and is about to announce: the one adapter that makes an announcement happen once.

One DynamoDB table (partition key ``kind``, sort key ``subject``, TTL attribute ``expires``; AnnouncementLedger)
holds two sorts of item:

- **claims** (partition: ``once`` or a lasting condition's kind; sort key: the warning's key or the condition's
  subject): a once-only warning made (a Capacity Block's 24-hour warning, AWS's expiration event delivered twice),
  or a lasting condition open (an idle instance, a blocked queue). ``outbox`` names the message that announced it.
  Items written before the outbox (no ``outbox``) read as announced.
- **messages** (partition ``#outbox``, sort key ``<created>#<uuid>``, so oldest first): the SNS subject and
  message to publish, ``state`` (``pending``, ``sent`` or ``set-aside``), the run that may publish it (``owner``) until
  ``lease_until`` (epoch seconds), ``takes`` (runs that took it) and ``released`` (runs that handed it back
  certain that SNS did not take it).

An announcement is an outbox (:class:`Outbox`, one per run):

1. **record**: one DynamoDB transaction writes the claims (a conditional put per started subject, a conditional
   delete per ended one) and the message, ``pending`` and owned by this run until its deadline: all of them or
   none (TransactWriteItems, with a ClientRequestToken so botocore's own retries are idempotent). A subject whose
   condition fails (already claimed, or already ended, by another run or an earlier try; DynamoDB lists the
   cancellation reasons in the order of the items: botocore's model) leaves the transaction, which is retried with
   the others and their message rebuilt; two overlapping runs thus never record the same subject twice. More
   subjects than one transaction takes (:data:`MAX_CLAIMS`) go in several messages.
2. **publish** the message from the record: SNS Publish, the only step outside DynamoDB.
3. **mark it sent** (conditional on this run still owning it). A mark DynamoDB refuses (after botocore's own
   retries) is tried again at the run's end (:meth:`Outbox.finish`, :data:`MARK_TRIES` tries with backoff, never
   past the run's deadline): the run knows SNS took the message, and only a recorded mark keeps a later run from
   publishing it again. A failed publish hands the message back (owner cleared): the retry, or any later run,
   publishes it.
4. Every run first **completes** the pending messages of earlier runs whose lease has passed, oldest first, each
   taken by a conditional update (only one of two overlapping runs takes it).
5. A message SNS refuses **as such** (:data:`UNPUBLISHABLE`: too large for the topic, an invalid parameter: the
   same request would be refused on every try) is **set aside**: its state becomes ``set-aside`` with SNS's answer
   (``last_error``), it is never taken again and holds back no other message or run, and one short notice says so
   on the topic (once per message: a once-claim ``set-aside#<message id>``; a notice is never itself noticed).
   Its text stays in the table until its ``expires``. The run counts it (:attr:`Outbox.set_aside`) for its
   handler's metric.

What stays at-least-once: SNS standard topics have no deduplication (``MessageDeduplicationId`` applies only to
FIFO topics: botocore's SNS model; the fleet's topic is standard), so the step between SNS accepting Publish and
the sent mark cannot be made atomic. This is the one window: if a run stops there (its Lambda times out or
crashes, or DynamoDB refuses every try of the mark until the run's deadline), or SNS's answer is lost (a timeout
or a 5xx), the first run after the lease (the owning invocation's deadline plus :data:`LEASE_MARGIN`) publishes
the message again, once per such stop, and says in it that it may repeat an earlier one (:data:`REPEAT_NOTE`).
Nothing else is sent twice (a mark refused for a while, or a message taken by two overlapping runs, is not), and
nothing recorded is lost before its ``expires`` (a message set aside is kept, not published).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

ONCE = "once"
"""The claims' kind of once-only warnings."""
OUTBOX = "#outbox"
"""The partition of the messages; no condition kind may start with ``#``."""

MAX_TRANSACTION_ITEMS = 100
"""TransactWriteItems takes at most 100 actions (botocore 1.44.5, dynamodb TransactWriteItemList ``max``; read
2026-11-23; tests/unit/test_announcements.py pins it)."""
MAX_CLAIMS = MAX_TRANSACTION_ITEMS - 1
"""Claims recorded with one message (the message is the transaction's last action)."""

LAMBDA_MAX_TIMEOUT = 900.0
"""Seconds: "the maximum allowed value is 900 seconds" (botocore 1.44.5, lambda CreateFunction ``Timeout``; its
model allows 5,400 only for Lambda Managed Instances, which the kit does not use). The lease of a run that does
not know its deadline."""
LEASE_MARGIN = 10.0
"""Seconds added to a run's deadline: clock skew between the Lambda hosts that read and write a lease."""
CONFLICT_TRIES = 3
"""Tries of a transaction DynamoDB cancels for a reason other than a failed condition (TransactionConflict with
an overlapping run, throttling), with a short backoff."""

PENDING, SENT, SET_ASIDE = "pending", "sent", "set-aside"
MARK_TRIES = 5
"""Tries of a refused sent mark at the run's end (backoff 0.5 s, doubling), never past the run's deadline less
:data:`MARK_MARGIN`."""
MARK_MARGIN = 2.0
"""Seconds before its deadline a run stops retrying a refused mark (its Lambda must still return)."""
UNPUBLISHABLE = frozenset({"InvalidParameter", "ParameterValueInvalid", "ValidationException"})
"""SNS Publish's answers that refuse the request itself (botocore 1.44.5 sns Publish errors: InvalidParameterException
``InvalidParameter``, InvalidParameterValueException ``ParameterValueInvalid``, ValidationException; each 400, sender
fault; read 2026-11-28). A message over the topic's ``MaximumMessageSize`` (256 KiB by default, up to 1 MiB) is
refused with ``InvalidParameter`` (the same model's Publish ``Message`` documentation). Throttling, authorization,
KMS and NotFound answers are not here: they pass once the account or the topic is mended."""
SET_ASIDE_KEY = "set-aside#"
"""Once-claim key prefix of the notice that a message was set aside (followed by the message's id)."""
REPEAT_NOTE = ("\n\n[neuronfleet: this may repeat an announcement: a run that was publishing it stopped before "
               "recording that it was sent.]")


class Publisher(Protocol):
    """Where announcements go (the fleet's SNS topic: neuronfleet_runtime/topic.py)."""

    def announce(self, subject: str, message: str) -> None: ...


class Outcome(StrEnum):
    """What recording one announcement came to."""

    SENT = "sent"
    """recorded by this run and published"""
    PENDING = "pending"
    """recorded by this run; publishing failed: the retry or the next run publishes it"""
    ALREADY = "already"
    """nothing to say: claimed already (or, for an end, not open)"""
    UNRECORDED = "unrecorded"
    """DynamoDB failed: nothing recorded; the retry computes and records it again"""
    SET_ASIDE = "set-aside"
    """recorded by this run; SNS refused the message itself: set aside, announced by a short notice, never retried"""


class Unfinished(RuntimeError):
    """A run left announcements for the next one (recording or publishing failed). Raised by
    :meth:`Outbox.finish` after everything else was done, so the Lambda reports an error and is retried."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__(f"{len(self.problems)} announcement problem(s), left for the retry or the next run: "
                         + "; ".join(self.problems))


@dataclass(frozen=True)
class Changes:
    """Conditions that started and ended since the last look."""

    started: dict[str, str]
    """subject -> what to say about it"""
    ended: list[str]


def changes(current: Mapping[str, str], already_open: Iterable[str]) -> Changes:
    """Pure: compare the conditions holding now with the ones announced as open."""
    known = set(already_open)
    return Changes(started={s: d for s, d in sorted(current.items()) if s not in known},
                   ended=sorted(known - set(current)))


def certainly_not_sent(error: BaseException) -> bool:
    """True when a failed Publish certainly did not reach SNS: SNS refused it (a 4xx answer), the request was
    invalid, or no connection was made. A timeout, a lost connection or a 5xx may follow a publish SNS took."""
    from botocore.exceptions import ClientError, EndpointConnectionError, ParamValidationError  # only when failing:
    # the settings modules that import this package's siblings stay free of AWS libraries

    if isinstance(error, ClientError):
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return 400 <= int(status) < 500
    return isinstance(error, (EndpointConnectionError, ParamValidationError))


def unpublishable(error: BaseException) -> bool:
    """True when SNS refused the message itself (:data:`UNPUBLISHABLE`, or botocore refused its parameters before
    sending): publishing it again would be refused again."""
    from botocore.exceptions import ClientError, ParamValidationError

    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", "")) in UNPUBLISHABLE
    return isinstance(error, ParamValidationError)


class Ledger:
    """The table (see the module). ``clock`` (epoch seconds) times leases; ``sleep`` backs off conflicts."""

    def __init__(self, client: Any, table: str, *, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = client
        self.table = table
        self.clock = clock
        self.sleep = sleep

    def outbox(self, topic: Publisher, *, deadline: float | None = None) -> Outbox:
        """One run's announcements through ``topic``; ``deadline`` (epoch seconds) is when the run's Lambda
        invocation ends (its lease), :data:`LAMBDA_MAX_TIMEOUT` from now when unknown."""
        return Outbox(self, topic, deadline=deadline)

    def open_subjects(self, kind: str) -> list[str]:
        """The subjects of ``kind`` recorded as started and not yet as ended (announced, or about to be)."""
        return [item["subject"]["S"] for item in self._query(kind, projection="#s")]

    def messages(self, *, unsent_only: bool = True) -> list[dict[str, Any]]:
        """The outbox's messages (DynamoDB items), oldest first; by default only those still to publish (pending:
        neither sent nor set aside)."""
        items = self._query(OUTBOX)
        return [i for i in items if i.get("state", {}).get("S") == PENDING] if unsent_only else items

    def _query(self, kind: str, *, projection: str | None = None) -> list[dict[str, Any]]:
        args: dict[str, Any] = {"TableName": self.table, "KeyConditionExpression": "#k = :k",
                                "ExpressionAttributeValues": {":k": {"S": kind}},
                                "ExpressionAttributeNames": {"#k": "kind"}}
        if projection:
            args |= {"ProjectionExpression": projection,
                     "ExpressionAttributeNames": {"#k": "kind", "#s": "subject"}}
        items: list[dict[str, Any]] = []
        for page in self.client.get_paginator("query").paginate(**args):
            items.extend(page.get("Items", []))
        return items


class Outbox:
    """One run's announcements (see the module): record, publish, mark sent; complete earlier runs' messages.
    Methods do not raise for AWS failures: they note them, go on, and :meth:`finish` raises :class:`Unfinished`.
    ``sent`` holds the SNS subjects this run published, in order; ``set_aside`` those it set aside (SNS refused the
    message itself)."""

    def __init__(self, ledger: Ledger, topic: Publisher, *, deadline: float | None = None) -> None:
        self._ledger, self._topic = ledger, topic
        self._client, self._table = ledger.client, ledger.table
        self.owner = uuid.uuid4().hex
        started = ledger.clock()
        self.deadline = started + LAMBDA_MAX_TIMEOUT if deadline is None else deadline
        self.lease_until = self.deadline + LEASE_MARGIN
        self.sent: list[str] = []
        self.set_aside: list[str] = []
        self.problems: list[str] = []
        self._unmarked: list[tuple[str, str, str]] = []
        """(message id, SNS subject, why) of messages published whose sent mark DynamoDB refused"""

    # ------------------------------------------------------------------ what the handlers call

    def once(self, key: str, *, expires: datetime, say: tuple[str, str]) -> Outcome:
        """Announce ``say`` (SNS subject, message) unless ``key`` was claimed before (until ``expires``)."""
        return self._one("start", ONCE, key, expires, say)

    def start(self, kind: str, subject: str, *, expires: datetime, say: tuple[str, str]) -> Outcome:
        """Announce that condition ``subject`` of ``kind`` started, unless it is open already."""
        return self._one("start", kind, subject, expires, say)

    def end(self, kind: str, subject: str, *, expires: datetime, say: tuple[str, str]) -> Outcome:
        """Announce that the open condition ``subject`` of ``kind`` ended; of two overlapping runs only one does."""
        return self._one("end", kind, subject, expires, say)

    def start_all(self, kind: str, subjects: Iterable[str], *, expires: datetime,
                  say: Callable[[list[str]], tuple[str, str]]) -> list[str]:
        """Open the conditions not open yet and announce them, ``say(subjects)`` per message; the ones recorded."""
        return self._all("start", kind, subjects, expires, say)

    def end_all(self, kind: str, subjects: Iterable[str], *, expires: datetime,
                say: Callable[[list[str]], tuple[str, str]]) -> list[str]:
        """Close the open ones among ``subjects`` and announce them; the ones recorded."""
        return self._all("end", kind, subjects, expires, say)

    def complete(self) -> list[str]:
        """Publish the messages earlier runs left pending whose lease has passed, oldest first; their SNS subjects.
        A message whose last taker may have published it says so (:data:`REPEAT_NOTE`)."""
        try:
            items = self._ledger.messages()
        except Exception as e:
            self.problems.append(f"reading the outbox: {e}")
            return []
        done = []
        for item in items:
            took = self._take(item)
            if took is None:
                continue
            subject, message = item["topic_subject"]["S"], item["message"]["S"]
            notice = any(a.get("S", "").startswith(f"start {ONCE} {SET_ASIDE_KEY}")
                         for a in item.get("about", {}).get("L", []))
            if self._publish(item["subject"]["S"], subject, message + (REPEAT_NOTE if took else ""),
                             expires=int(item.get("expires", {}).get("N", "0")), notice=notice):
                done.append(subject)
        return done

    def finish(self) -> None:
        """Try again the sent marks DynamoDB refused (see the module, step 3), then raise :class:`Unfinished` if
        anything was left for the next run."""
        self._mark_again()
        if self.problems:
            raise Unfinished(self.problems)

    def _mark_again(self) -> None:
        """The refused marks, tried again with backoff until they pass, another run has taken the message (this
        run's lease had passed), :data:`MARK_TRIES` tries or the run's deadline; what is left is a problem (the one
        window: the next run after the lease publishes it again, saying so)."""
        wait, tries = 0.5, 0
        while self._unmarked and tries < MARK_TRIES:
            tries += 1
            still = []
            for message_id, subject, why in self._unmarked:
                try:
                    self._mark_sent(message_id)
                except self._client.exceptions.ConditionalCheckFailedException:
                    self._unmarked_problem(message_id, subject, "another run took it: this run's lease had passed")
                except Exception as e:
                    still.append((message_id, subject, f"{why}; then, {tries} more tries: {e}"))
            self._unmarked = still
            if not still or tries == MARK_TRIES or self._ledger.clock() + wait > self.deadline - MARK_MARGIN:
                break
            self._ledger.sleep(wait)
            wait *= 2
        for message_id, subject, why in self._unmarked:
            self._unmarked_problem(message_id, subject, why)
        self._unmarked = []

    def _unmarked_problem(self, message_id: str, subject: str, why: str) -> None:
        self.problems.append(
            f"marking {subject!r} sent ({message_id}): {why}. It was published; after this run's lease the next "
            "run publishes it again, saying it may be a repeat")

    # ------------------------------------------------------------------ record

    def _one(self, op: str, kind: str, subject: str, expires: datetime, say: tuple[str, str]) -> Outcome:
        before = (len(self.problems), len(self.sent), len(self.set_aside))
        recorded = self._all(op, kind, [subject], expires, lambda _: say)
        if not recorded:
            return Outcome.UNRECORDED if len(self.problems) > before[0] else Outcome.ALREADY
        if len(self.set_aside) > before[2]:
            return Outcome.SET_ASIDE
        return Outcome.SENT if len(self.sent) > before[1] else Outcome.PENDING

    def _all(self, op: str, kind: str, subjects: Iterable[str], expires: datetime,
             say: Callable[[list[str]], tuple[str, str]]) -> list[str]:
        if not kind or kind.startswith("#"):
            raise ValueError(f"announcement kind {kind!r}: allowed: a non-blank name not starting with '#' "
                             f"({OUTBOX!r} is the outbox's)")
        wanted = list(dict.fromkeys(subjects))
        recorded: list[str] = []
        for i in range(0, len(wanted), MAX_CLAIMS):
            recorded += self._record(op, kind, wanted[i:i + MAX_CLAIMS], expires, say)
        return recorded

    def _record(self, op: str, kind: str, subjects: list[str], expires: datetime,
                say: Callable[[list[str]], tuple[str, str]]) -> list[str]:
        """Record ``subjects`` and their message in one transaction, dropping those whose condition fails; publish
        it. The subjects recorded ([] when none could be, or DynamoDB failed: noted)."""
        tries = 0
        while subjects:
            subject, message = say(subjects)
            now = self._ledger.clock()
            message_id = f"{datetime.fromtimestamp(now, UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')}#{uuid.uuid4().hex}"
            try:
                self._client.transact_write_items(
                    TransactItems=[*(self._claim_action(op, kind, s, expires, message_id, now) for s in subjects),
                                   {"Put": {"TableName": self._table, "ConditionExpression": "attribute_not_exists(#k)",
                                            "ExpressionAttributeNames": {"#k": "kind"},
                                            "Item": self._message_item(message_id, op, kind, subjects, subject,
                                                                       message, expires, now)}}],
                    ClientRequestToken=str(uuid.uuid4()))
            except self._client.exceptions.TransactionCanceledException as e:
                reasons = e.response.get("CancellationReasons") or []
                failed = {s for s, r in zip(subjects, reasons, strict=False)
                          if r.get("Code") == "ConditionalCheckFailed"}
                if failed:
                    subjects = [s for s in subjects if s not in failed]
                    continue
                tries += 1
                if tries >= CONFLICT_TRIES:
                    self.problems.append(f"recording {op} of {kind} {subjects}: cancelled {tries} times: {e}")
                    return []
                self._ledger.sleep(0.1 * 2 ** tries)
                continue
            except Exception as e:
                # nothing was recorded, or (a lost answer) all of it: then hand the message back, unpublished
                self.problems.append(f"recording {op} of {kind} {subjects}: {e}")
                self._release(message_id, subject, certain=True, error=str(e), maybe_absent=True)
                return []
            self._publish(message_id, subject, message, expires=int(expires.timestamp()),
                          notice=kind == ONCE and all(s.startswith(SET_ASIDE_KEY) for s in subjects))
            return subjects
        return []

    def _claim_action(self, op: str, kind: str, subject: str, expires: datetime, message_id: str,
                      now: float) -> dict[str, Any]:
        key = {"kind": {"S": kind}, "subject": {"S": subject}}
        if op == "end":
            return {"Delete": {"TableName": self._table, "Key": key, "ConditionExpression": "attribute_exists(#k)",
                               "ExpressionAttributeNames": {"#k": "kind"}}}
        return {"Put": {"TableName": self._table, "ConditionExpression": "attribute_not_exists(#k)",
                        "ExpressionAttributeNames": {"#k": "kind"},
                        "Item": key | {"expires": _epoch(expires), "outbox": {"S": message_id},
                                       "since": {"N": str(int(now))}}}}

    def _message_item(self, message_id: str, op: str, kind: str, subjects: list[str], subject: str, message: str,
                      expires: datetime, now: float) -> dict[str, Any]:
        return {"kind": {"S": OUTBOX}, "subject": {"S": message_id}, "expires": _epoch(expires),
                "topic_subject": {"S": subject}, "message": {"S": message},
                "about": {"L": [{"S": f"{op} {kind} {s}"} for s in subjects]},
                "state": {"S": PENDING}, "owner": {"S": self.owner}, "lease_until": {"N": repr(self.lease_until)},
                "takes": {"N": "1"}, "released": {"N": "0"}, "created": {"N": repr(now)}}

    # ------------------------------------------------------------------ publish, mark, take, release

    def _publish(self, message_id: str, subject: str, message: str, *, expires: int, notice: bool) -> bool:
        """Publish, then mark sent (a refused mark is tried again at :meth:`finish`). A message SNS refuses as such
        is set aside (see the module, step 5); ``notice``: this message is itself such a notice (never noticed)."""
        try:
            self._topic.announce(subject, message)
        except Exception as e:
            if unpublishable(e):
                self._set_aside(message_id, subject, message, error=str(e), expires=expires, notice=notice)
                return False
            self.problems.append(f"publishing {subject!r}: {e}")
            self._release(message_id, subject, certain=certainly_not_sent(e), error=str(e))
            return False
        self.sent.append(subject)
        try:
            self._mark_sent(message_id)
        except self._client.exceptions.ConditionalCheckFailedException:
            self._unmarked_problem(message_id, subject, "another run took it: this run's lease had passed")
        except Exception as e:
            self._unmarked.append((message_id, subject, str(e)))
        return True

    def _mark_sent(self, message_id: str) -> None:
        self._update(message_id, "SET #st = :sent, sent_at = :now REMOVE #o, lease_until",
                     "#o = :me AND #st = :pending", {":sent": {"S": SENT}, ":now": {"N": repr(self._ledger.clock())},
                                                     ":me": {"S": self.owner}, ":pending": {"S": PENDING}})

    def _set_aside(self, message_id: str, subject: str, message: str, *, error: str, expires: int,
                   notice: bool) -> None:
        """SNS refused the message itself: record it as set aside (kept, never taken again) and say so once."""
        try:
            self._update(message_id, "SET #st = :aside, last_error = :err, set_aside_at = :now REMOVE #o, lease_until",
                         "#o = :me AND #st = :pending",
                         {":aside": {"S": SET_ASIDE}, ":err": {"S": error[:1000]},
                          ":now": {"N": repr(self._ledger.clock())}, ":me": {"S": self.owner},
                          ":pending": {"S": PENDING}})
        except self._client.exceptions.ConditionalCheckFailedException:
            return  # another run owns it now (this run's lease passed): it sets it aside
        except Exception as e:
            self.problems.append(f"setting aside {subject!r} ({message_id}), which SNS refused ({error}): {e}; "
                                 "the next run after this run's lease tries again")
            return
        self.set_aside.append(subject)
        if notice:
            return
        until = datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        text = (f"SNS refused announcement {message_id} ({len(message.encode())} bytes, subject {subject!r}) and "
                f"would refuse it again: {error[:300]}. It is set aside: never published, never retried, and it "
                f"holds back no other announcement. Its text stays in the announcements table {self._table} (kind "
                f"{OUTBOX!r}, subject {message_id!r}) until {until}.")
        when = datetime.fromtimestamp(max(expires, int(self._ledger.clock()) + 86_400), UTC)
        self.once(f"{SET_ASIDE_KEY}{message_id}", expires=when,
                  say=("neuronfleet: an announcement could not be published", text))

    def _release(self, message_id: str, subject: str, *, certain: bool, error: str,
                 maybe_absent: bool = False) -> None:
        """Hand a message back after a failed publish, so the retry takes it at once; ``certain`` when SNS
        certainly did not take it (else its next publish says it may be a repeat). ``maybe_absent``: the message
        may not exist (its transaction failed), which is fine."""
        count = ", released = released + :one" if certain else ""
        values = {":zero": {"N": "0"}, ":me": {"S": self.owner}, ":err": {"S": error[:1000]}}
        if certain:
            values[":one"] = {"N": "1"}
        try:
            self._update(message_id, f"SET lease_until = :zero, last_error = :err{count} REMOVE #o", "#o = :me",
                         values)
        except self._client.exceptions.ConditionalCheckFailedException:
            if not maybe_absent:
                self.problems.append(f"handing back {subject!r} ({message_id}): another run owns it")
        except Exception as e:
            self.problems.append(f"handing back {subject!r} ({message_id}): {e}; it waits for this run's lease "
                                 f"(until {datetime.fromtimestamp(self.lease_until, UTC).isoformat()})")

    def _take(self, item: Mapping[str, Any]) -> bool | None:
        """Own a pending message whose lease has passed. None if another run has it (or took it first); else True
        when a run took it before and never handed it back (it may have published it), False when not."""
        now = self._ledger.clock()
        if float(item.get("lease_until", {}).get("N", "0")) >= now and "owner" in item:
            return None
        takes, released = int(item.get("takes", {}).get("N", "0")), int(item.get("released", {}).get("N", "0"))
        try:
            self._update(item["subject"]["S"], "SET #o = :me, lease_until = :lease, takes = :next",
                         "#st = :pending AND takes = :takes",
                         {":me": {"S": self.owner}, ":lease": {"N": repr(self.lease_until)},
                          ":next": {"N": str(takes + 1)}, ":takes": {"N": str(takes)}, ":pending": {"S": PENDING}})
        except self._client.exceptions.ConditionalCheckFailedException:
            return None
        except Exception as e:
            self.problems.append(f"taking pending message {item['subject']['S']}: {e}")
            return None
        return takes > released

    def _update(self, message_id: str, expression: str, condition: str, values: dict[str, Any]) -> None:
        self._client.update_item(
            TableName=self._table, Key={"kind": {"S": OUTBOX}, "subject": {"S": message_id}},
            UpdateExpression=expression, ConditionExpression=condition,
            ExpressionAttributeNames={k: v for k, v in (("#o", "owner"), ("#st", "state"))
                                      if k in expression or k in condition},
            ExpressionAttributeValues=values)


def _epoch(when: datetime) -> dict[str, str]:
    return {"N": str(int(when.timestamp()))}
