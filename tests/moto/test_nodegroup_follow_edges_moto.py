"""A Capacity Block node group following its blocks, at three edges the suite let through (2026-11-29 mutation review),
end to end in the lifecycle function as tests/moto/test_nodegroup_lifecycle_moto.py (moto's EKS, S3, DynamoDB, SNS;
EC2 stubbed on botocore 1.44.5's shapes):

- one block after another: the second block's scale-out is announced too (each scaling is said once per its blocks,
  not once per node group and direction);
- a block larger than the node group (two UltraServers bought for a group of one, its maxSize raised outside the
  stack): the group's own ``count`` bounds the scale-out;
- the drain's and the scalings' ledger claims outlive the block (DynamoDB's TTL may delete an item once its
  ``expires`` has passed: a claim gone while the drain still runs would let the next pass announce it again).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

from neuronfleet.lambdas.capacity_lifecycle.adapters import Nodegroups
from neuronfleet.lambdas.capacity_lifecycle.handler import run
from neuronfleet_contract.capacity_lifecycle import LifecycleConfig, NodegroupRef
from tests.capacity_fixtures import reservation
from tests.lifecycle_stubs import DRAIN_BUCKET, END, START, LifecycleRun, said
from tests.moto import test_nodegroup_lifecycle_moto as lifecycle

CLUSTER, NODEGROUP = lifecycle.CLUSTER, lifecycle.NODEGROUP
POLICY = lifecycle.POLICY
SCHEDULED = lifecycle.SCHEDULED
NEXT_START = END + timedelta(hours=2)       # the next block: two hours after the first one ends, for a day
NEXT_END = NEXT_START + timedelta(days=1)


def group(count: int = 4, ids: tuple[str, ...] = ("cr-u1", "cr-u2")) -> NodegroupRef:
    return NodegroupRef(name="ultra", cluster=CLUSTER, nodegroup=NODEGROUP, instance_type="trn2u.48xlarge",
                        count=count, drain_bucket=DRAIN_BUCKET, ultraserver_size=4, reservation_ids=ids)


aws = lifecycle.aws
"""The lifecycle's node-group fixture: moto's EKS with the node group at 0 of maxSize 8."""
desired = lifecycle.desired


class Pass(LifecycleRun):
    """One run over the node group, EC2 answering ``blocks``: (reservation, instances, start, end) each, active."""

    def __init__(self, aws: dict[str, Any], ref: NodegroupRef | tuple[NodegroupRef, ...],
                 blocks: list[tuple[str, int, datetime, datetime]]) -> None:
        refs = ref if isinstance(ref, tuple) else (ref,)
        super().__init__(aws, LifecycleConfig(
            fleet="nf-eks", topic_arn=aws["topic"], ledger_table=aws["table"], policy=POLICY, clusters=(),
            node_groups=refs))
        self.tools.eks = Nodegroups(aws["eks"])
        for one in refs:   # each node group's blocks are read in turn
            self.e.add_response("describe_capacity_reservations", {"CapacityReservations": [
                reservation(rid, instance_type="trn2u.48xlarge", count=n, start=s, end=e, state="active",
                            block_id=f"cb-{rid}") for rid, n, s, e in blocks]},
                {"CapacityReservationIds": sorted(one.reservation_ids)})
            self.e.add_response("describe_capacity_blocks", {"CapacityBlocks": [
                {"CapacityBlockId": f"cb-{rid}", "AvailabilityZone": "us-east-2b", "CapacityReservationIds": [rid],
                 "StartDate": s, "EndDate": e, "State": "active", "UltraserverType": "u-trn2x64"}
                for rid, _, s, e in blocks]}, {"CapacityBlockIds": sorted(f"cb-{rid}" for rid, *_ in blocks)})

    def at(self, when: datetime) -> dict[str, Any]:
        self.api.clock = lambda: when
        with self.e:
            out = run(SCHEDULED, self.tools, now=when)
        self.e.assert_no_pending_responses()
        return out


def subjects(aws: dict[str, Any]) -> list[str]:
    return [n["Subject"] for n in said(aws)]


FIRST = ("cr-u1", 4, START, END)
SECOND = ("cr-u2", 4, NEXT_START, NEXT_END)
OUT = f"neuronfleet: node group {CLUSTER}/ultra scaled out to 4"


def test_the_next_blocks_scale_out_is_announced_too(aws) -> None:
    Pass(aws, group(), [FIRST]).at(END - timedelta(hours=10))
    assert desired(aws) == 4 and subjects(aws) == [OUT]
    Pass(aws, group(), [FIRST]).at(END - timedelta(minutes=65))   # past the checkpoint deadline (60 + 10): in
    assert desired(aws) == 0
    said(aws)
    Pass(aws, group(), [SECOND]).at(NEXT_START + timedelta(minutes=5))
    assert desired(aws) == 4 and subjects(aws) == [OUT]


def test_a_block_larger_than_the_node_group_scales_it_to_its_count(aws) -> None:
    """Two UltraServers (8 instances) on a group of one (count 4) whose maxSize is 8: 4 nodes, never 8."""
    out = Pass(aws, group(count=4, ids=("cr-u1",)), [("cr-u1", 8, START, END)]).at(END - timedelta(hours=10))
    assert desired(aws) == 4 and out["node_groups"][f"{CLUSTER}/ultra"][0].startswith("scale out to 4 ")


def _claims(aws: dict[str, Any]) -> dict[str, datetime]:
    items = aws["ddb"].scan(TableName=aws["table"])["Items"]
    return {i["subject"]["S"]: datetime.fromtimestamp(int(i["expires"]["N"]), tz=END.tzinfo)
            for i in items if i["kind"]["S"] == "once"}


def test_the_drain_and_scaling_claims_outlive_the_block(aws) -> None:
    ref = group(ids=("cr-u1",))
    for when in (END - timedelta(hours=10), END - timedelta(minutes=100), END - timedelta(minutes=65)):
        Pass(aws, ref, [FIRST]).at(when)   # out, the drain (its flag and notice), in at the deadline
    claims = _claims(aws)
    assert sorted(k.split("#")[0] for k in claims) == ["drain", "follow", "follow"]
    assert all(expires >= END for expires in claims.values()), claims


def test_two_clusters_node_groups_of_one_name_each_announce_their_drain(aws) -> None:
    """A node group named ``ultra`` in two EKS clusters, their blocks ending together: two drains, each announced
    (the ledger's key names the cluster too: NodegroupRef.label)."""
    other = "nf-eks-finetune"
    aws["eks"].create_cluster(name=other, roleArn="arn:aws:iam::111111111111:role/eks",
                              resourcesVpcConfig={"subnetIds": ["subnet-1"]})
    aws["eks"].create_nodegroup(clusterName=other, nodegroupName=NODEGROUP, subnets=["subnet-1"],
                                nodeRole="arn:aws:iam::111111111111:role/node", capacityType="CAPACITY_BLOCK",
                                scalingConfig={"minSize": 0, "maxSize": 8, "desiredSize": 4})
    aws["eks"].update_nodegroup_config(clusterName=CLUSTER, nodegroupName=NODEGROUP, scalingConfig={"desiredSize": 4})
    refs = (group(ids=("cr-u1",)), dataclasses.replace(group(ids=("cr-u1",)), cluster=other))
    Pass(aws, refs, [FIRST]).at(END - timedelta(minutes=100))   # the drain is on (60 + 45), no scale-in yet
    assert sorted(subjects(aws)) == sorted(f"neuronfleet: checkpoint now, {c}/ultra drains"[:100]
                                           for c in (CLUSTER, other))
