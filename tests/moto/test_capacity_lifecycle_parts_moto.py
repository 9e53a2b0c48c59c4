"""A fleet split between several lifecycle functions (CapacityLifecycle.parts), against moto (SNS, DynamoDB, S3) with
EC2 and Batch stubbed on botocore 1.44.5's shapes, as tests/moto/test_capacity_lifecycle_moto.py does for one.

Each function ("part") runs the same handler over its own clusters and shares the fleet's announcements table. What
is fleet-wide stays so: a block two parts' clusters share (one resource group) is extended once and within its
budget whether the parts run one after the other in the same 10-minute pass, at the same moment, or a run is
retried; nothing is announced twice; and each part asks AWS only about its own clusters (the Stubbers refuse any call
they were not given)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from botocore.exceptions import ClientError
from neuronfleet_runtime.announcements import Unfinished

from neuronfleet.lambdas.capacity_lifecycle.adapters import FleetBudget, Intents
from neuronfleet_contract.capacity_lifecycle import CapacityPolicy, ClusterRef, LifecycleConfig
from tests.capacity_fixtures import extension
from tests.lifecycle_stubs import END, GPU_QUEUE, REGION, LifecycleRun, lifecycle_aws, said

DECIDING = END - timedelta(hours=5)     # within decide_before (6 h), before the drain
BUDGET = Decimal(4000)
POLICY = CapacityPolicy(max_upfront_fee_usd=Decimal(10000), max_usd_per_instance_hour=Decimal(25),
                        allow_extension=True, extension_budget_usd=BUDGET)


def cluster(name: str, reservation_id: str) -> ClusterRef:
    return ClusterRef(name=name, queue_arn=f"arn:aws:batch:us-east-2:111111111111:job-queue/{name}",
                      instance_type="trn2.48xlarge", drain_bucket="nf-data", reservation_ids=(reservation_id,))


# two clusters of a fleet, in two parts (two functions), drawing from the same block cr-1
PRETRAIN, FINETUNE = cluster("pretrain", "cr-1"), cluster("finetune", "cr-1")


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with lifecycle_aws() as world:
        yield world


class Part(LifecycleRun):
    """One lifecycle function of the fleet (its own clients, as each Lambda has), over ``clusters``, one run's
    stubbed EC2 and Batch answers queued in the order the handler asks."""

    def __init__(self, aws: dict[str, Any], *clusters: ClusterRef, intents: type[Intents] = Intents) -> None:
        self.clusters = clusters
        self.purchases = 0
        super().__init__(aws, LifecycleConfig(fleet="nf-rainier", topic_arn=aws["topic"], ledger_table=aws["table"],
                                              policy=POLICY, clusters=clusters, gpu_queue_arn=GPU_QUEUE,
                                              gpu_instance_type="p5.48xlarge"), intents=intents)

    def blocks(self, rid: str = "cr-1", block_id: str = "cb-block-1") -> Part:
        self._blocks(rid, END, block_id)
        return self

    def running(self, c: ClusterRef) -> Part:
        self._running(c.queue_arn, [f"{c.name}-1"])
        return self

    def history(self, items: list[dict[str, Any]], rid: str = "cr-1") -> Part:
        self._history(items, rid)
        return self

    def offers(self, *fees: str, rid: str = "cr-1") -> Part:
        self._offers(fees, rid)
        return self

    def purchase(self, offering: str, fee: str, rid: str = "cr-1") -> Part:
        self.e.add_response("purchase_capacity_block_extension", {"CapacityBlockExtensions": [
            extension(rid, offering, start=END, fee=fee)]},
            {"CapacityBlockExtensionOfferingId": offering, "CapacityReservationId": rid})
        self.purchases += 1
        return self

    def status(self, state: str = "ok", block_id: str = "cb-block-1") -> Part:
        self._status(state, block_id)
        return self


def a_pass(part: Part, c: ClusterRef, *, history: list[dict[str, Any]] | None = None,
           then: Callable[[Part], Part] = lambda p: p) -> Part:
    """The calls of one cluster's pass, from its blocks to its interconnect (no held-job fallback in POLICY)."""
    p = part.blocks().running(c)
    if history is not None:
        p.history(history)
    return then(p).status()


def bought(fee: str = "1920.00", offering: str = "cbe-1") -> dict[str, Any]:
    return extension("cr-1", offering, start=END, fee=fee)


def test_two_parts_in_the_same_pass_extend_a_shared_block_once_within_its_budget(aws):
    a = a_pass(Part(aws, PRETRAIN), PRETRAIN, history=[],
               then=lambda p: p.offers("2400.00", "1920.00").looks().purchase("cbe-1", "1920.00"))
    out_a = a.go(DECIDING)
    assert "extended by cbe-1 (already: False)" in out_a["clusters"]["pretrain"]
    # the other part, a minute later in the same 10-minute pass: AWS's history has the pending extension
    b = a_pass(Part(aws, FINETUNE), FINETUNE, history=[bought()])
    out_b = b.go(DECIDING + timedelta(minutes=1))
    assert list(out_b["clusters"]) == ["finetune"] and list(out_a["clusters"]) == ["pretrain"]
    assert any("payment is pending" in d for d in out_b["clusters"]["finetune"])
    assert a.purchases + b.purchases == 1   # Stubber: b was given no purchase answer, and asked for none
    assert [n["Subject"] for n in said(aws)] == ["neuronfleet: Capacity Block cr-1 extended"]


def test_two_parts_at_the_same_moment_buy_once(aws):
    """Part B runs its whole pass while part A is buying (A holds the intent; AWS's history is still empty)."""
    b = a_pass(Part(aws, FINETUNE), FINETUNE, history=[], then=lambda p: p.offers("1920.00"))
    outcome: dict[str, Any] = {}
    a = Part(aws, PRETRAIN)
    extend = a.api.extend

    def extend_while_b_runs(reservation_id, offer, **kw):
        outcome["b"] = b.go(DECIDING)
        return extend(reservation_id, offer, **kw)

    a.api.extend = extend_while_b_runs  # type: ignore[method-assign]
    a_pass(a, PRETRAIN, history=[], then=lambda p: p.offers("1920.00").looks().purchase("cbe-0", "1920.00"))
    out_a = a.go(DECIDING)
    assert "extension: another run holds it, or it is done" in outcome["b"]["clusters"]["finetune"]
    assert "extended by cbe-0 (already: False)" in out_a["clusters"]["pretrain"]
    assert a.purchases + b.purchases == 1
    assert [n["Subject"] for n in said(aws)] == ["neuronfleet: Capacity Block cr-1 extended"]


class FailingDone(Intents):
    """DynamoDB refuses to mark the intent done (after botocore's retries): the run stops after buying."""

    def done(self, subject: str, *, note: str) -> None:
        raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"},
                           "ResponseMetadata": {"HTTPStatusCode": 400}}, "UpdateItem")


def test_a_run_retried_after_buying_buys_nothing_more_and_the_extension_is_announced_once(aws):
    """The intent's 'done' is refused after the purchase: the announcement does not wait on that write (it is made
    first), the run ends Unfinished, and no retry buys or says anything again."""
    a = a_pass(Part(aws, PRETRAIN, intents=FailingDone), PRETRAIN, history=[],
               then=lambda p: p.offers("1920.00").looks().purchase("cbe-0", "1920.00"))
    with pytest.raises(Unfinished, match=r"pretrain: cr-1: ClientError.*ProvisionedThroughputExceeded"):
        a.go(DECIDING)
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: Capacity Block cr-1 extended"
    assert "Extension cbe-0 bought" in note["Message"] and "$1920.00 USD" in note["Message"]
    # Lambda's retry of the same part, then the other part sharing the block, then the next pass: each sees the
    # pending extension; nobody buys or says it again
    retries = [a_pass(Part(aws, PRETRAIN), PRETRAIN, history=[bought(offering="cbe-0")]),
               a_pass(Part(aws, FINETUNE), FINETUNE, history=[bought(offering="cbe-0")]),
               a_pass(Part(aws, PRETRAIN), PRETRAIN, history=[bought(offering="cbe-0")])]
    for minutes, part in zip((1, 2, 10), retries, strict=True):
        part.go(DECIDING + timedelta(minutes=minutes))
    assert said(aws) == []
    assert a.purchases + sum(p.purchases for p in retries) == 1


def test_a_block_whose_budget_is_spent_is_refused_by_every_part_and_announced_once(aws):
    spent = [bought(fee="3000.00", offering="cbe-old") | {"CapacityBlockExtensionStatus": "payment-succeeded"}]
    outs = [a_pass(Part(aws, c), c, history=spent, then=lambda p: p.offers("1920.00")).go(DECIDING + timedelta(
        minutes=i)) for i, c in enumerate((PRETRAIN, FINETUNE))]
    assert all(any("none within the policy" in d for d in o["clusters"][n]) for o, n in zip(
        outs, ("pretrain", "finetune"), strict=True))
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: Capacity Block cr-1 not extended"
    assert f"($4920.00 with this block's earlier extensions); allowed: at most ${BUDGET} per block" in note["Message"]


def test_an_impaired_interconnect_two_parts_see_is_announced_once(aws):
    for i, c in enumerate((PRETRAIN, FINETUNE, PRETRAIN, FINETUNE)):
        Part(aws, c).blocks().running(c).status("impaired").go(END - timedelta(days=1, minutes=-i))
    (note,) = said(aws)
    assert note["Subject"] == "neuronfleet: Capacity Block cb-block-1 interconnect impaired"


def test_each_part_drains_its_own_clusters_once_whatever_starts_it(aws):
    """Two parts, one cluster each on its own block: each run twice (the schedule and EC2's warning event)."""
    own = {"pretrain": cluster("pretrain", "cr-1"), "finetune": cluster("finetune", "cr-2")}
    drain_at = END - timedelta(minutes=70)
    for minutes in (0, 1):
        for name, block in (("pretrain", "cb-1"), ("finetune", "cb-2")):
            c = own[name]
            p = Part(aws, c).blocks(c.reservation_ids[0], block).running(c).history([], rid=c.reservation_ids[0])
            out = p.status(block_id=block).go(drain_at + timedelta(minutes=minutes))
            assert list(out["clusters"]) == [name]
    assert sorted(n["Subject"] for n in said(aws)) == ["neuronfleet: checkpoint now, finetune drains",
                                                       "neuronfleet: checkpoint now, pretrain drains"]
    keys = sorted(o["Key"] for o in aws["s3"].list_objects_v2(Bucket="nf-data")["Contents"])
    assert keys == ["neuronfleet/drain/finetune.json", "neuronfleet/drain/pretrain.json"]


# ------------------------------------------------------------------------------------------------ fleet-wide budget


def _own_block(aws: dict[str, Any], c: ClusterRef, *, then: Callable[[Part], Part]) -> Part:
    rid = c.reservation_ids[0]
    block = f"cb-{rid}"
    p = Part(aws, c).blocks(rid, block).running(c).history([], rid=rid)
    return then(p).status(block_id=block)


def test_two_parts_on_two_blocks_share_one_fleet_wide_budget(aws):
    """Finding 1: the budget was per block, so a fleet of N blocks could spend N budgets. Now all the fleet's
    extensions of a month hold one budget (here the default: one block's, $4000): pretrain's extension ($2400) is
    bought, finetune's (another block, $2400, within its own block's budget) is refused, said once."""
    pretrain, finetune = cluster("pretrain", "cr-1"), cluster("finetune", "cr-2")
    a = _own_block(aws, pretrain, then=lambda p: p.offers("2400.00").looks().purchase("cbe-0", "2400.00"))
    assert "extended by cbe-0 (already: False)" in a.go(DECIDING)["clusters"]["pretrain"]
    for minutes in (1, 11):   # the other function, twice: refused both times, said once, nothing bought
        b = _own_block(aws, finetune, then=lambda p: p.offers("2400.00", rid="cr-2"))
        out = b.go(DECIDING + timedelta(minutes=minutes))["clusters"]["finetune"]
        assert "no extension: fleet_extension_budget_usd: $2400.00 held this month + $2400.00; allowed: at most " \
               "$4000" in out
    assert [n["Subject"] for n in said(aws)] == ["neuronfleet: Capacity Block cr-1 extended",
                                                 "neuronfleet: Capacity Block cr-2 not extended: fleet budget"]
    assert FleetBudget(aws["ddb"], aws["table"]).spent("2026-11") == Decimal("2400.00")


def test_holds_are_conditional_so_the_last_of_the_budget_is_spent_once(aws):
    """The condition is DynamoDB's, evaluated with the write (nothing is read first): whichever of two overlapping
    runs writes second sees the first's hold. The same extension held twice (a retry) counts once."""
    budget, limit = FleetBudget(aws["ddb"], aws["table"]), Decimal(4000)
    assert budget.hold("a", Decimal(2400), limit, now=DECIDING).held
    again = budget.hold("a", Decimal(2400), limit, now=DECIDING)
    assert again.held and again.again and again.spent == Decimal(2400)
    other = budget.hold("b", Decimal(2400), limit, now=DECIDING)
    assert not other.held and other.spent == Decimal(2400)
    assert budget.hold("c", Decimal(1600), limit, now=DECIDING).held            # exactly the rest
    assert not budget.hold("d", Decimal("0.01"), limit, now=DECIDING).held
    assert budget.spent("2026-11") == Decimal(4000)
    assert budget.hold("e", Decimal(2400), limit, now=DECIDING + timedelta(days=5)).held   # December: a new month
    assert not budget.hold("f", Decimal(4001), limit, now=DECIDING).held        # more than the whole budget


def test_an_extension_aws_refuses_gives_its_hold_back(aws):
    def refused(p: Part) -> Part:
        p.offers("2400.00").looks().e.add_client_error(
            "purchase_capacity_block_extension", service_error_code="InvalidParameterValue", http_status_code=400)
        return p

    out = _own_block(aws, PRETRAIN, then=refused).go(DECIDING)
    assert any(d.startswith("extension refused by AWS") for d in out["clusters"]["pretrain"])
    assert FleetBudget(aws["ddb"], aws["table"]).spent("2026-11") == Decimal(0)


def test_a_purchase_whose_outcome_stays_unknown_keeps_its_hold(aws):
    """The purchase's answer lost (a 5xx) and no source shows it yet: no second attempt inside EC2's consistency
    window, the run stops (Unfinished: Lambda retries it) and the fee stays counted, since AWS may have sold it."""
    def lost(p: Part) -> Part:
        p.offers("2400.00").looks().e.add_client_error("purchase_capacity_block_extension",
                                                       service_error_code="InternalError", http_status_code=500)
        return p.looks()

    with pytest.raises(Unfinished, match="no second attempt before"):
        _own_block(aws, PRETRAIN, then=lost).go(DECIDING)
    assert FleetBudget(aws["ddb"], aws["table"]).spent("2026-11") == Decimal(2400)
