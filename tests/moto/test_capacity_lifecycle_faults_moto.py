"""The Capacity Block lifecycle function under faults (issue 37): a failure injected at each AWS call it makes, a
retry after each, and two overlapping runs, asserting what a user sees: what is announced (once), what is spent (one
extension, its fee held once in the fleet's budget) and what drains (the flag, "checkpoint now").

SNS, SQS, DynamoDB and S3 are moto's; EC2 is a small stateful stand-in (:class:`Ec2`: moto has no Capacity Blocks)
answering in botocore 1.44.5's shapes (tests/capacity_fixtures.py), with EC2's eventual consistency as a knob: a
purchase shows in its describes only ``lag`` after it was made (within EC2_CONSISTENCY_WINDOW, the bound the kit
assumes). Faults are tests/fault_injection.py's: before a call (it
did nothing) or after it (it took effect and its answer was lost)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError
from neuronfleet_runtime.announcements import REPEAT_NOTE, Unfinished
from neuronfleet_runtime.capacity_block_calls import CapacityBlocksApi

from neuronfleet.lambdas.capacity_lifecycle.adapters import Flag, Fleet, FleetBudget, Intents, Ledger, Topic
from neuronfleet.lambdas.capacity_lifecycle.handler import Tools, run
from neuronfleet_contract.capacity_lifecycle import CapacityPolicy, ClusterRef, LifecycleConfig, drain_key
from tests.capacity_fixtures import extension, extension_offering, reservation
from tests.fault_injection import Fault, Faulty, client_error
from tests.lifecycle_stubs import END, REGION, START, lifecycle_aws, said

QUEUE = "arn:aws:batch:us-east-2:111111111111:job-queue/pretrain"
DECIDING = END - timedelta(hours=5)          # within decide_before (6 h), before the drain
DRAINING = END - timedelta(minutes=70)       # 40 min before the stop (END - 30 min): the drain is on
FEE = Decimal("1920.00")
POLICY = CapacityPolicy(max_upfront_fee_usd=Decimal(10000), max_usd_per_instance_hour=Decimal(25),
                        allow_extension=True, extension_budget_usd=Decimal(4000))
EXTENDED = "neuronfleet: Capacity Block cr-1 extended"


def offering_id(rid: str, end: datetime) -> str:
    """EC2's id of the extension offering from ``end`` (an offer of another end is another offering)."""
    return f"cbe-{rid}-{end:%d%H}"


OFFER = offering_id("cr-1", END)


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with lifecycle_aws() as world:
        yield world


@dataclass
class Ec2:
    """EC2 as far as the lifecycle asks, with state: blocks (reservation id -> end), the extensions bought (each
    visible to describes ``lag`` after its purchase, by the clock of the run reading: ``now``), and what was paid
    for (``purchases``, the offering ids)."""

    ends: dict[str, datetime] = field(default_factory=lambda: {"cr-1": END})
    lag: timedelta = timedelta(0)
    offer: Callable[[str, datetime], dict[str, Any]] | None = None
    bought: list[tuple[datetime, dict[str, Any]]] = field(default_factory=list)
    now: datetime = DECIDING
    purchases: list[str] = field(default_factory=list)

    def _seen(self, rid: str) -> list[dict[str, Any]]:
        return [x for at, x in self.bought if at <= self.now and x["CapacityReservationId"] == rid]

    def block_id(self, rid: str) -> str:
        return f"cb-{rid}"

    def describe_capacity_reservations(self, CapacityReservationIds: list[str], **_: Any) -> dict[str, Any]:
        return {"CapacityReservations": [
            reservation(rid, start=START, end=self.ends[rid], state="active", block_id=self.block_id(rid))
            for rid in CapacityReservationIds if rid in self.ends]}

    def describe_capacity_blocks(self, CapacityBlockIds: list[str], **_: Any) -> dict[str, Any]:
        return {"CapacityBlocks": [
            {"CapacityBlockId": self.block_id(rid), "AvailabilityZone": "us-east-2b", "CapacityReservationIds": [rid],
             "StartDate": START, "EndDate": end, "State": "active"}
            for rid, end in self.ends.items() if self.block_id(rid) in CapacityBlockIds]}

    def describe_capacity_block_extension_history(self, CapacityReservationIds: list[str],
                                                  **_: Any) -> dict[str, Any]:
        return {"CapacityBlockExtensions": [x for rid in CapacityReservationIds for x in self._seen(rid)]}

    def describe_capacity_block_extension_offerings(self, CapacityReservationId: str,
                                                    CapacityBlockExtensionDurationHours: int) -> dict[str, Any]:
        end = self.ends[CapacityReservationId]
        make = self.offer or (lambda rid, end: extension_offering(offering_id(rid, end), block_start=START,
                                                                  block_end=end, fee=str(FEE)))
        return {"CapacityBlockExtensionOfferings": [make(CapacityReservationId, end)]}

    def purchase_capacity_block_extension(self, CapacityBlockExtensionOfferingId: str,
                                          CapacityReservationId: str) -> dict[str, Any]:
        self.purchases.append(CapacityBlockExtensionOfferingId)
        item = extension(CapacityReservationId, CapacityBlockExtensionOfferingId,
                         start=self.ends[CapacityReservationId], fee=str(FEE))
        self.bought.append((self.now + self.lag, item))
        return {"CapacityBlockExtensions": [item]}

    def describe_capacity_block_status(self, CapacityBlockIds: list[str]) -> dict[str, Any]:
        return {"CapacityBlockStatuses": [{"CapacityBlockId": b, "InterconnectStatus": "ok", "TotalCapacity": 4,
                                           "TotalAvailableCapacity": 4, "TotalUnavailableCapacity": 0}
                                          for b in CapacityBlockIds]}


class Batch:
    """One RUNNING job on the cluster's queue (a block with work on it); ``faults``: the n-th ListJobs (from 1)
    fails (botocore's paginator is not a client method tests/fault_injection.Faulty can reach)."""

    def __init__(self, faults: dict[tuple[str, int], Fault] | None = None) -> None:
        self.faults, self.calls = dict(faults or {}), 0

    def get_paginator(self, name: str) -> Any:
        batch = self

        class Pages:
            def paginate(self, jobQueue: str, jobStatus: str) -> list[dict[str, Any]]:
                batch.calls += 1
                fault = batch.faults.get(("list_jobs", batch.calls))
                if fault is not None:
                    raise fault.error
                return [{"jobSummaryList": [{"jobId": "job-1", "jobName": "train"}] if jobStatus == "RUNNING"
                         else []}]
        return Pages()


@dataclass
class World:
    aws: dict[str, Any]
    ec2: Ec2 = field(default_factory=Ec2)
    clusters: tuple[ClusterRef, ...] = (ClusterRef(name="pretrain", queue_arn=QUEUE, instance_type="trn2.48xlarge",
                                                   drain_bucket="nf-data", reservation_ids=("cr-1",)),)

    def run(self, at: datetime, *, faults: dict[str, dict[tuple[str, int], Fault]] | None = None,
            before: dict[str, dict[tuple[str, int], Callable[[], Any]]] | None = None) -> dict[str, Any]:
        """One run of the function at ``at`` (its clocks too); ``faults``/``before`` per client: ec2, dynamodb,
        s3, sns. Unfinished is returned, not raised (Lambda would report the error and retry)."""
        faults, before = faults or {}, before or {}
        wrap = {name: Faulty(client, faults.get(name), before.get(name)) for name, client in
                (("ec2", self.ec2), ("dynamodb", self.aws["ddb"]), ("s3", self.aws["s3"]), ("sns", self.aws["sns"]))}
        self.last: dict[str, Any] = wrap
        self.ec2.now = at
        clock = at.timestamp
        api = CapacityBlocksApi(wrap["ec2"], sleep=lambda s: None, clock=lambda: at)
        settings = LifecycleConfig(fleet="nf-prod", topic_arn=self.aws["topic"], ledger_table=self.aws["table"],
                                   policy=POLICY, clusters=self.clusters)
        ddb, table = wrap["dynamodb"], self.aws["table"]
        batch = Batch(faults.get("batch"))
        tools = Tools(settings=settings, api=api, fleet=Fleet(api, batch), flag=Flag(wrap["s3"]),
                      intents=Intents(ddb, table, clock=clock), gpu=None, alerts=Topic(wrap["sns"], self.aws["topic"]),
                      ledger=Ledger(ddb, table, clock=clock, sleep=lambda s: None), budget=FleetBudget(ddb, table))
        self.last["batch"] = batch
        try:
            return run({"detail-type": "Scheduled Event", "source": "aws.events"}, tools, now=at,
                       patience=timedelta(0))
        except Unfinished as e:
            return {"unfinished": e.problems}

    def spent(self) -> Decimal:
        return FleetBudget(self.aws["ddb"], self.aws["table"]).spent(DECIDING.strftime("%Y-%m"))


def subjects(aws: dict[str, Any]) -> list[str]:
    """What the topic delivered since the last look: each announcement once. A message the outbox publishes again
    because SNS's answer to an earlier publish was lost says it may be a repeat (REPEAT_NOTE: the one documented SNS
    window); it counts only when the subject was not delivered without it."""
    got = said(aws) + said(aws)
    plain = [m["Subject"] for m in got if REPEAT_NOTE.strip() not in m["Message"]]
    return plain + [s for s in dict.fromkeys(m["Subject"] for m in got if REPEAT_NOTE.strip() in m["Message"])
                    if s not in plain]


def reached(client: Any, operation: str, n: int) -> bool:
    return (client.calls if isinstance(client, Batch) else client.calls[operation]) >= n


def ids(calls: list[tuple[str, str, int, bool]]) -> list[str]:
    return [f"{c}.{o}#{n}{'-lost' if a else ''}" for c, o, n, a in calls]


RETRIES = (timedelta(minutes=1), timedelta(minutes=16), timedelta(minutes=26))
"""Lambda's retry of a failed run (a minute later), then the schedule's next passes after the intent's 15-minute
lease."""


# ------------------------------------------------------------------------------------------------ a lost purchase


def test_a_purchase_whose_answer_is_lost_with_ec2_behind_is_bought_once_and_announced_once(aws):
    """Issue 37: the extension history one read behind once bought a second extension. Here every describe lags the
    purchase by 12 reads: the run whose answer was lost stops (no second attempt inside EC2's consistency window),
    its Lambda retry and the next passes buy nothing more, and the extension is announced once EC2 shows it."""
    w = World(aws, Ec2(lag=timedelta(minutes=4)))
    lost = {"ec2": {("purchase_capacity_block_extension", 1): Fault(ReadTimeoutError(endpoint_url="ec2"),
                                                                    after=True)}}
    first = w.run(DECIDING, faults=lost)
    assert "no second attempt before" in " ".join(first["unfinished"])
    assert w.ec2.purchases == [OFFER] and subjects(aws) == [] and w.spent() == FEE
    for later in RETRIES:
        w.run(DECIDING + later)
    assert w.ec2.purchases == [OFFER] and w.spent() == FEE
    assert subjects(aws) == [EXTENDED]


def test_a_lost_answer_is_confirmed_by_the_reservations_end_when_the_history_never_shows_it(aws):
    """The history keeps nothing (its lag never ends) but the reservation's end moved: that is enough."""
    w = World(aws, Ec2(lag=timedelta(days=30)))
    lost = {"ec2": {("purchase_capacity_block_extension", 1): Fault(ReadTimeoutError(endpoint_url="ec2"),
                                                                    after=True)}}
    w.run(DECIDING, faults=lost)
    w.ec2.ends["cr-1"] = END + timedelta(hours=24)   # EC2 moved the end date (EXTENSION_MOVES_END)
    for later in RETRIES:
        w.run(DECIDING + later)
    assert w.ec2.purchases == [OFFER] and w.spent() == FEE


# ------------------------------------------------------------------------------------------------ each call fails


TRANSIENT = client_error("InternalError", "Op", status=500)
EXTENSION_CALLS = [
    ("ec2", "describe_capacity_reservations", 1, False), ("ec2", "describe_capacity_blocks", 1, False),
    ("batch", "list_jobs", 1, False), ("batch", "list_jobs", 2, False),   # the cluster's STARTING, RUNNING jobs
    ("ec2", "describe_capacity_block_extension_history", 1, False),
    ("ec2", "describe_capacity_block_extension_offerings", 1, False),
    ("ec2", "describe_capacity_block_extension_history", 2, False),   # the look before buying
    ("ec2", "describe_capacity_reservations", 2, False), ("ec2", "describe_capacity_blocks", 2, False),
    ("ec2", "purchase_capacity_block_extension", 1, False), ("ec2", "purchase_capacity_block_extension", 1, True),
    ("ec2", "describe_capacity_block_status", 1, False),
    ("dynamodb", "transact_write_items", 1, False), ("dynamodb", "transact_write_items", 1, True),  # budget hold
    ("dynamodb", "query", 1, False),                                                              # budget read
    ("dynamodb", "put_item", 1, False), ("dynamodb", "put_item", 1, True),                        # intent
    ("dynamodb", "update_item", 1, False), ("dynamodb", "update_item", 1, True),                  # attempt record
    ("dynamodb", "transact_write_items", 2, False), ("dynamodb", "transact_write_items", 2, True),  # announcement
    ("sns", "publish", 1, False), ("sns", "publish", 1, True),
    ("dynamodb", "update_item", 2, False),                                                        # marked sent
    ("dynamodb", "update_item", 3, False),                                                        # intent done
]


@pytest.mark.parametrize(("client", "operation", "n", "after"), EXTENSION_CALLS, ids=ids(EXTENSION_CALLS))
def test_an_extension_pass_failing_at_any_call_then_retried_buys_once_holds_once_and_says_it_once(
        aws, client, operation, n, after):
    w = World(aws)
    w.run(DECIDING, faults={client: {(operation, n): Fault(TRANSIENT, after=after)}})
    assert reached(w.last[client], operation, n), "the fault was not reached"
    for later in RETRIES:
        w.run(DECIDING + later)
    assert w.ec2.purchases == [OFFER]
    assert w.spent() == FEE
    assert subjects(aws) == [EXTENDED]
    assert aws["s3"].list_objects_v2(Bucket="nf-data").get("KeyCount") == 0   # nothing drains


DRAIN_CALLS = [
    ("ec2", "describe_capacity_block_extension_history", 1, False),
    ("s3", "put_object", 1, False), ("s3", "put_object", 1, True),
    ("dynamodb", "transact_write_items", 1, False), ("dynamodb", "transact_write_items", 1, True),
    ("sns", "publish", 1, False), ("sns", "publish", 1, True), ("dynamodb", "update_item", 1, False),
]


@pytest.mark.parametrize(("client", "operation", "n", "after"), DRAIN_CALLS, ids=ids(DRAIN_CALLS))
def test_a_drain_failing_at_any_call_then_retried_flags_the_deadline_and_says_it_once(
        aws, client, operation, n, after):
    w = World(aws)
    w.run(DRAINING, faults={client: {(operation, n): Fault(TRANSIENT, after=after)}})
    assert reached(w.last[client], operation, n), "the fault was not reached"
    for later in (timedelta(minutes=1), timedelta(minutes=10)):
        w.run(DRAINING + later)
    assert subjects(aws) == ["neuronfleet: checkpoint now, pretrain drains"]
    flag = aws["s3"].get_object(Bucket="nf-data", Key=drain_key("pretrain"))["Body"].read()
    assert b'"deadline": "2026-11-30T11:20:00+00:00"' in flag
    assert w.ec2.purchases == []


# ------------------------------------------------------------------------------------------------ overlapping runs


OVERLAPS = [("ec2", "describe_capacity_block_extension_offerings", 1), ("ec2", "describe_capacity_blocks", 2),
            ("ec2", "purchase_capacity_block_extension", 1), ("dynamodb", "transact_write_items", 1),
            ("dynamodb", "put_item", 1), ("dynamodb", "update_item", 1), ("dynamodb", "transact_write_items", 2),
            ("sns", "publish", 1), ("dynamodb", "update_item", 3)]


@pytest.mark.parametrize(("client", "operation", "n"), OVERLAPS, ids=[f"{c}.{o}#{n}" for c, o, n in OVERLAPS])
def test_a_whole_run_overlapping_another_at_any_call_buys_once_and_says_it_once(aws, client, operation, n):
    """Run B (EventBridge's Capacity Block event, say) runs its whole pass while run A is at ``operation``."""
    w = World(aws)
    other: dict[str, Any] = {}
    w.run(DECIDING, before={client: {(operation, n): lambda: other.setdefault("b", World(aws, w.ec2).run(DECIDING))}})
    assert "b" in other, "the overlap was not reached"
    for later in RETRIES:
        w.run(DECIDING + later)
    assert w.ec2.purchases == [OFFER] and w.spent() == FEE
    assert subjects(aws) == [EXTENDED]


# ------------------------------------------------------------------------------------------------ announced when seen


def test_a_failed_extension_payment_is_announced_when_seen_not_at_the_drain_and_costs_nothing(aws):
    w = World(aws)
    w.run(DECIDING)
    assert subjects(aws) == [EXTENDED] and w.spent() == FEE
    _, item = w.ec2.bought[0]
    item["CapacityBlockExtensionStatus"] = "payment-failed"   # AWS could not take the payment
    for later in (timedelta(minutes=10), timedelta(minutes=20)):
        w.run(DECIDING + later)
    (note,) = [m for m in said(aws)]
    assert note["Subject"] == "neuronfleet: Capacity Block cr-1 extension payment failed"
    assert "nothing was bought and no fee is due" in note["Message"] and "from 2026-11-30 10:45 UTC" in note["Message"]
    assert w.spent() == 0 and w.ec2.purchases == [OFFER]   # its hold given back; not bought again


def test_a_refused_flag_write_does_not_hold_back_checkpoint_now(aws):
    w = World(aws)
    denied = client_error("AccessDenied", "PutObject", status=403)
    out = w.run(DRAINING, faults={"s3": {("put_object", 1): Fault(denied)}})
    assert any("drain flag: ClientError" in p for p in out["unfinished"])
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: checkpoint now, pretrain drains"
    assert "could NOT be written" in note["Message"] and "AccessDenied" in note["Message"]
    w.run(DRAINING + timedelta(minutes=10))   # the next run writes it, and says nothing again
    assert said(aws) == [] and aws["s3"].get_object(Bucket="nf-data", Key=drain_key("pretrain"))


# ------------------------------------------------------------------------------------------------ blocks apart


TWO_BLOCKS = (ClusterRef(name="pretrain", queue_arn=QUEUE, instance_type="trn2.48xlarge", drain_bucket="nf-data",
                         reservation_ids=("cr-1", "cr-2")),)


def test_one_blocks_unreadable_extension_offer_never_skips_another_blocks_drain(aws):
    """cr-1 ends in 5 hours (its extension is decided: its offer is unreadable), cr-2 in 70 minutes (it drains)."""
    unreadable = extension_offering("cbe-bad", block_start=START, block_end=END)
    del unreadable["UpfrontFee"]
    w = World(aws, Ec2(ends={"cr-1": END, "cr-2": DECIDING + timedelta(minutes=70)},
                       offer=lambda rid, end: unreadable), clusters=TWO_BLOCKS)
    for minutes in (0, 10):
        out = w.run(DECIDING + timedelta(minutes=minutes))
        assert any("cr-1: MalformedOffer" in p and "UpfrontFee" in p for p in out["unfinished"])
    assert subjects(aws) == ["neuronfleet: checkpoint now, pretrain drains"]
    flag = aws["s3"].get_object(Bucket="nf-data", Key=drain_key("pretrain"))["Body"].read()
    assert b'"blocks": ["cr-2"]' in flag and w.ec2.purchases == []


def test_several_blocks_draining_flag_the_first_ones_deadline(aws):
    w = World(aws, Ec2(ends={"cr-1": END, "cr-2": END + timedelta(minutes=10)}), clusters=TWO_BLOCKS)
    w.run(END - timedelta(minutes=60))   # both drain: cr-1 from 75 min before its end, cr-2 from 65
    flag = aws["s3"].get_object(Bucket="nf-data", Key=drain_key("pretrain"))["Body"].read()
    assert b'"deadline": "2026-11-30T11:20:00+00:00"' in flag and b'"blocks": ["cr-1", "cr-2"]' in flag
    (note,) = said(aws)
    assert "checkpoint by 2026-11-30 11:20 UTC" in note["Message"]


def test_a_block_extended_once_is_extended_again_at_its_new_end(aws):
    w = World(aws)
    w.run(DECIDING)
    w.ec2.ends["cr-1"] = END + timedelta(hours=24)
    _, item = w.ec2.bought[0]
    item["CapacityBlockExtensionStatus"] = "payment-succeeded"
    w.run(DECIDING + timedelta(hours=24))
    assert w.ec2.purchases == [OFFER, offering_id("cr-1", END + timedelta(hours=24))]
    assert subjects(aws) == [EXTENDED, EXTENDED]
