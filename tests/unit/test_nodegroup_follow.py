"""An EKS Capacity Block node group following its blocks (lambdas/capacity_lifecycle logic.follow): a table of the
instants the Batch path's drain already covers (before the block, active, the checkpoint window, the deadline, the
end) on an instance block and on an UltraServer block, several blocks in one node group, a node group EKS is
updating, and the node group's environment (NODE_GROUPS) refused naming the member. The facts the design rests on
are pinned against botocore 1.44.5's eks model where it carries them."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import botocore.session
import pytest

from neuronfleet.lambdas.capacity_lifecycle.logic import (
    Block,
    Follow,
    Scaling,
    checkpoint_deadline,
    follow,
    follow_key,
    scaled_text,
    whole,
)
from neuronfleet_contract import capacity_lifecycle as cl
from neuronfleet_contract.capacity_lifecycle import CapacityPolicy, LifecycleConfig, NodegroupRef
from neuronfleet_contract.environment import InvalidEnvironment

END = datetime(2026, 11, 30, 12, tzinfo=UTC)
START = END - timedelta(days=2)
POLICY = CapacityPolicy(max_upfront_fee_usd=Decimal(0), max_usd_per_instance_hour=Decimal(0))
"""The default checkpoint lead (45 minutes) and deadline margin (10 minutes)."""


def ultra(rid: str = "cr-u1", end: datetime = END, count: int = 4, state: str = "active") -> Block:
    return Block(rid, "trn2u.48xlarge", count, START, end, state, kind="ultraserver", block_id="cb-" + rid)


def instances(rid: str = "cr-i1", end: datetime = END, count: int = 2, state: str = "active") -> Block:
    return Block(rid, "trn2.48xlarge", count, START, end, state, block_id="cb-" + rid)


def at(minutes_before_end: int) -> datetime:
    return END - timedelta(minutes=minutes_before_end)


def group(desired: int, maximum: int = 8, status: str = "ACTIVE") -> Scaling:
    return Scaling(desired=desired, minimum=0, maximum=maximum, status=status)


# (case, blocks, node group's scaling, count, UltraServer size, minutes before the end) -> (desired asked, direction,
# blocks draining (the flag raised and announced), the flag kept as it is)
CASES = [
    ("before the block: nothing, no flag", [ultra(state="scheduled")], group(0), 8, 4, 3 * 24 * 60,
     None, "", (), False),
    ("UltraServer block delivered: out to its 4", [ultra()], group(0), 8, 4, 600, 4, "out", (), False),
    ("two UltraServer blocks active: out to 8", [ultra(), ultra("cr-u2")], group(0), 8, 4, 600, 8, "out", (), False),
    ("never above count", [ultra(), ultra("cr-u2"), ultra("cr-u3")], group(0), 8, 4, 600, 8, "out", (), False),
    ("never above the node group's maxSize", [ultra(), ultra("cr-u2")], group(0, maximum=4), 8, 4, 600, 4, "out",
     (), False),
    ("whole UltraServers only", [ultra(count=6)], group(0), 8, 4, 600, 4, "out", (), False),
    ("already at its blocks' size: nothing", [ultra()], group(4), 8, 4, 600, None, "", (), False),
    ("instance block: out to its 2", [instances()], group(0, maximum=2), 2, 1, 600, 2, "out", (), False),
    ("UltraServer, 105 min before the end: the drain starts (60 + 45), no scale-in yet", [ultra()], group(4), 8, 4,
     105, None, "", ("cr-u1",), False),
    ("UltraServer, 106 min before: no drain yet", [ultra()], group(4), 8, 4, 106, None, "", (), False),
    ("UltraServer, 71 min before: still checkpointing", [ultra()], group(4), 8, 4, 71, None, "", ("cr-u1",), False),
    ("UltraServer, 70 min before: the deadline (60 + 10), in to 0", [ultra()], group(4), 8, 4, 70, 0, "in",
     ("cr-u1",), False),
    ("instance block, 75 min before: the drain starts (30 + 45)", [instances()], group(2), 2, 1, 75, None, "",
     ("cr-i1",), False),
    ("instance block, 40 min before: in to 0", [instances()], group(2), 2, 1, 40, 0, "in", ("cr-i1",), False),
    ("scaled in, block not ended: the flag stays, nothing said", [ultra()], group(0), 8, 4, 65, None, "", (), True),
    ("drain with no nodes at all: nothing said", [ultra()], group(0), 8, 4, 90, None, "", (), True),
    ("one block ends, the other stays: in to the other's 4", [ultra(), ultra("cr-u2", end=END + timedelta(days=1))],
     group(8), 8, 4, 70, 4, "in", ("cr-u1",), False),
    ("the block ended: nothing, the flag lowered", [ultra()], group(4), 8, 4, -5, None, "", (), False),
    ("more nodes than blocks before any deadline: left alone", [ultra(state="scheduled")], group(4), 8, 4, 600,
     None, "", (), False),
    ("EKS is updating the node group: the scale-out waits", [ultra()], group(0, status="UPDATING"), 8, 4, 600,
     None, "", (), False),
    ("EKS is updating at the deadline: the scale-in waits, the drain goes on", [ultra()],
     group(4, status="UPDATING"), 8, 4, 70, None, "", ("cr-u1",), False),
    ("a degraded node group is still scaled", [ultra()], group(0, status="DEGRADED"), 8, 4, 600, 4, "out", (),
     False),
]


@pytest.mark.parametrize(("case", "blocks", "scaling", "count", "size", "minutes", "desired", "direction",
                          "draining", "keep_flag"), CASES, ids=[c[0] for c in CASES])
def test_a_capacity_block_node_group_follows_its_blocks(case, blocks, scaling, count, size, minutes, desired,
                                                        direction, draining, keep_flag):
    f = follow(blocks, scaling, count=count, size=size, policy=POLICY, now=at(minutes))
    assert (f.desired, f.direction, tuple(b.reservation_id for b in f.draining), f.keep_flag) == (
        desired, direction, draining, keep_flag), f.why


def test_the_scale_in_comes_at_the_flags_deadline_before_the_stop_and_before_eks_own():
    """The deadline the flag carries (logic.drain_deadline: the stop less DEADLINE_MARGIN) is when the node group is
    scaled in: for an UltraServer block 70 minutes before the end, 30 before EKS's own scale-down (EKS_SCALEDOWN,
    40 minutes) and 10 before EC2 starts stopping the instances (60)."""
    b = ultra()
    assert checkpoint_deadline(b) == END - timedelta(minutes=70)
    assert checkpoint_deadline(b) < END - cl.EKS_SCALEDOWN.value
    assert checkpoint_deadline(b) < b.stops_at
    assert follow([b], group(4), count=8, size=4, policy=POLICY, now=checkpoint_deadline(b)).desired == 0
    before = checkpoint_deadline(b) - timedelta(seconds=1)
    assert follow([b], group(4), count=8, size=4, policy=POLICY, now=before).desired is None


def test_a_longer_checkpoint_lead_starts_the_drain_earlier():
    policy = CapacityPolicy(max_upfront_fee_usd=Decimal(0), max_usd_per_instance_hour=Decimal(0),
                            checkpoint_lead=timedelta(minutes=90))
    assert follow([ultra()], group(4), count=8, size=4, policy=policy, now=at(150)).draining
    assert not follow([ultra()], group(4), count=8, size=4, policy=POLICY, now=at(150)).draining


def test_whole_rounds_down_to_ultraservers():
    assert [whole(n, 4) for n in (0, 3, 4, 7, 8)] == [0, 0, 4, 4, 8]
    assert whole(3, 1) == 3


def test_each_scaling_is_said_once_per_node_group_direction_and_blocks():
    a, b = ultra(), ultra("cr-u2")
    assert follow_key("nf/ultra", "out", [a, b]) == follow_key("nf/ultra", "out", [b, a])
    assert len({follow_key("nf/ultra", "out", [a]), follow_key("nf/ultra", "in", [a]),
                follow_key("nf/other", "out", [a]), follow_key("nf/ultra", "out", [a, b]),
                follow_key("nf/ultra", "out", [ultra(end=END + timedelta(days=1))])}) == 5


def test_what_a_scaling_says():
    out = Follow(4, "out", (), "block(s) cr-u1 active", cause=(ultra(),))
    subject, message = scaled_text("nf-eks/ultra", out, 0, out.cause, flag="s3://d/neuronfleet/drain/ultra.json")
    assert subject == "neuronfleet: node group nf-eks/ultra scaled out to 4"
    assert "desired size 0 -> 4" in message and "s3://d/neuronfleet/drain/ultra.json" in message
    down = Follow(0, "in", (ultra(),), "checkpoint deadline of cr-u1 passed", cause=(ultra(),))
    subject, message = scaled_text("nf-eks/ultra", down, 4, down.cause, flag="s3://d/neuronfleet/drain/ultra.json")
    assert subject == "neuronfleet: node group nf-eks/ultra scaled in to 0"
    assert "desired size 4 -> 0" in message and "cr-u1 (stops 2026-11-30 11:00 UTC)" in message


# ------------------------------------------------------------------------------------------------ facts vs botocore

EKS = botocore.session.get_session().get_service_model("eks")


def _doc(shape: str, member: str | None = None) -> str:
    s = EKS.shape_for(shape)
    text = (s.members[member] if member else s).documentation
    return re.sub(r"\s+", " ", re.sub("<[^>]+>", " ", text or ""))


def test_an_update_may_carry_the_desired_size_alone():
    """botocore 1.44.5 eks NodegroupScalingConfig: 'When updating a node group, you can specify any or none of the
    properties' (adapters.Nodegroups.scale sends desiredSize only); a smaller desired size terminates nodes."""
    assert "When updating a node group, you can specify any or none of the properties." in _doc(
        "NodegroupScalingConfig")
    assert "the necessary number of worker nodes are terminated" in _doc("NodegroupScalingConfig", "desiredSize")
    request = EKS.operation_model("UpdateNodegroupConfig").input_shape
    assert set(request.required_members) == {"clusterName", "nodegroupName"} and "scalingConfig" in request.members


def test_the_states_the_lifecycle_scales_in_are_eks_own():
    states = EKS.shape_for("NodegroupStatus").enum
    assert set(cl.EKS_ACTIVE_STATES) <= set(states)
    assert set(states) - set(cl.EKS_ACTIVE_STATES) == {"CREATING", "UPDATING", "DELETING", "CREATE_FAILED",
                                                        "DELETE_FAILED"}
    assert "ResourceInUseException" in {e.name for e in EKS.operation_model("UpdateNodegroupConfig").error_shapes}


def test_the_eks_facts_carry_their_source_and_date():
    for fact in (cl.EKS_SCALE_UP, cl.EKS_SCALEDOWN, cl.EKS_DRAINS_ON_SCALE_IN):
        assert fact.read == "2026-11-29" and "latest/ug/" in fact.source
    assert cl.EKS_SCALEDOWN.value == timedelta(minutes=40) and "40 minutes prior" in cl.EKS_SCALEDOWN.source
    assert "f60041409f8255b59682a2ca39382a2278e0e38b" in cl.EKS_SCALEDOWN.source
    assert "Capacity Scaledown Before Reservation End" in cl.EKS_SCALEDOWN.source
    assert cl.EKS_DRAINS_ON_SCALE_IN.confirmed is False   # docs/checks.md eks-capacity-block-scaling


# ------------------------------------------------------------------------------------------------ the environment

NODEGROUP = NodegroupRef(name="ultra", cluster="nf-eks-pretrain", nodegroup="UltraNodes-abc", count=8,
                         instance_type="trn2u.48xlarge", drain_bucket="nf-data", ultraserver_size=4,
                         group_arns=("arn:aws:resource-groups:us-east-2:444444444444:group/blocks",))
CONFIG = LifecycleConfig(fleet="nf-eks", topic_arn="arn:aws:sns:us-east-2:444444444444:alerts",
                         ledger_table="announced", policy=POLICY, clusters=(), node_groups=(NODEGROUP,),
                         policy_parameter="/neuronfleet/nf-eks/capacity-policy")


def _read(**changed: str | None) -> LifecycleConfig:
    env = {k: v for k, v in {**CONFIG.to_environment(), **changed}.items() if v is not None}
    return LifecycleConfig.from_environment(env, read_parameter=lambda name: POLICY.to_json())


def test_a_fleet_of_node_groups_only_round_trips_through_the_environment():
    env = CONFIG.to_environment()
    assert env["CLUSTERS"] == "[]" and json.loads(env["NODE_GROUPS"])[0]["nodegroup"] == "UltraNodes-abc"
    assert _read().node_groups == (NODEGROUP,) and NODEGROUP.label == "nf-eks-pretrain/ultra"


def test_a_batch_only_fleet_writes_no_node_groups():
    from dataclasses import replace

    from neuronfleet_contract.capacity_lifecycle import ClusterRef

    batch = replace(CONFIG, node_groups=(), clusters=(ClusterRef("c", "q", "trn2.48xlarge", "d"),))
    assert "NODE_GROUPS" not in batch.to_environment()


def test_neither_a_cluster_nor_a_node_group_is_refused_naming_clusters():
    with pytest.raises(InvalidEnvironment) as raised:
        _read(NODE_GROUPS=None)
    assert raised.value.variable == "CLUSTERS" and "beside a NODE_GROUPS" in str(raised.value)


def _group(**changed: object) -> str:
    doc = json.loads(CONFIG.to_environment()["NODE_GROUPS"])
    doc[0].update(changed)
    return json.dumps(doc)


@pytest.mark.parametrize(("value", "says"), [
    ("{}", "expected a list"),
    ('["ultra"]', "[0] is not an object"),
    (_group(cluster=" "), "[0].cluster: got ' ', not a non-blank string"),
    (_group(nodegroup=None), "[0].nodegroup: got None, not a non-blank string"),
    (_group(count=0), "[0].count: got 0, not a whole number of at least 1"),
    (_group(count=True), "[0].count: got True, not a whole number of at least 1"),
    (_group(count=6), "[0].count: got 6, not whole UltraServers of 4"),
    (_group(ultraserver_size="4"), "[0].ultraserver_size: got '4', not a whole number of at least 1"),
    (_group(group_arns=[""]), "expected a list of non-blank strings"),
    (json.dumps(json.loads(_group()) * 2), "node groups ['nf-eks-pretrain/ultra'] repeat"),
])
def test_a_malformed_node_group_is_refused_naming_the_member(value, says):
    with pytest.raises(InvalidEnvironment) as raised:
        _read(NODE_GROUPS=value)
    assert raised.value.variable == "NODE_GROUPS" and says in str(raised.value)


# ------------------------------------------------------------------------------------------------ verify's row


def test_verify_lists_the_real_account_check_for_fleets_with_an_eks_capacity_block_node_group():
    from neuronfleet import load_fleet
    from neuronfleet.verify import CHECKS
    from tests.conftest import ROOT

    (check,) = [c for c in CHECKS if c.id == "eks-capacity-block-scaling"]
    assert check.run is None and check.by_hand.startswith("aws eks describe-nodegroup")
    assert check.not_applying(load_fleet(ROOT / "config" / "eks.yaml")) == ""
    assert check.not_applying(load_fleet(ROOT / "config" / "prod.yaml")) == (
        "the fleet has no EKS node group on Capacity Blocks")
