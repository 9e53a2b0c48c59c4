"""An EKS Capacity Block node group following its UltraServer block, end to end in the lifecycle function: moto's EKS
(its UpdateNodegroupConfig sets the scaling config: moto/eks/models.py update_nodegroup_config), S3 (the drain flag),
DynamoDB (the ledger and the intents) and SNS; EC2 stubbed on botocore 1.44.5's shapes (moto has no Capacity
Blocks). The cases the Batch path's drain covers: the block delivered (out once), the drain (the flag, said once),
the deadline (in once), two overlapping runs, a retry, a failure at each EKS call (UpdateNodegroupConfig before and
after it took effect, DescribeNodegroup), a refused flag, a malformed event: nothing said twice, nothing decided on
an error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3
import pytest
from neuronfleet_runtime.announcements import Unfinished

from neuronfleet.lambdas.capacity_lifecycle.adapters import Intents, Nodegroups
from neuronfleet.lambdas.capacity_lifecycle.handler import run
from neuronfleet_contract.capacity_lifecycle import CapacityPolicy, LifecycleConfig, NodegroupRef, drain_key
from tests.capacity_fixtures import reservation
from tests.fault_injection import Fault, Faulty, client_error, timeout
from tests.lifecycle_stubs import DRAIN_BUCKET, END, REGION, START, LifecycleRun, lifecycle_aws, said

CLUSTER, NODEGROUP = "nf-eks-pretrain", "UltraNodes-0123"
GROUP = NodegroupRef(name="ultra", cluster=CLUSTER, nodegroup=NODEGROUP, instance_type="trn2u.48xlarge", count=8,
                     drain_bucket=DRAIN_BUCKET, ultraserver_size=4, reservation_ids=("cr-u1",))
POLICY = CapacityPolicy(max_upfront_fee_usd=Decimal(0), max_usd_per_instance_hour=Decimal(0))
DELIVERED = {"source": "aws.ec2", "detail-type": "Capacity Block Delivered", "detail": {}}
SCHEDULED = {"source": "aws.events", "detail-type": "Scheduled Event"}
ACTIVE = END - timedelta(hours=10)
DRAIN = END - timedelta(minutes=100)      # within 105 minutes of the end: the drain is on (60 + 45)
DEADLINE = END - timedelta(minutes=70)    # the flag's deadline: 60 + 10


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with lifecycle_aws() as world:
        eks = boto3.client("eks", region_name=REGION)
        eks.create_cluster(name=CLUSTER, roleArn="arn:aws:iam::111111111111:role/eks",
                           resourcesVpcConfig={"subnetIds": ["subnet-1"]})
        eks.create_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP, subnets=["subnet-1"],
                             nodeRole="arn:aws:iam::111111111111:role/node", capacityType="CAPACITY_BLOCK",
                             scalingConfig={"minSize": 0, "maxSize": 8, "desiredSize": 0})
        world["eks"] = eks
        yield world


class Pass(LifecycleRun):
    """One run over the node group alone: its block (one UltraServer, cr-u1) stubbed, EKS from moto (``eks``: a
    Faulty around it to fail a call)."""

    def __init__(self, aws: dict[str, Any], *, eks: Any = None, intents: type[Intents] = Intents,
                 state: str = "active") -> None:
        super().__init__(aws, LifecycleConfig(
            fleet="nf-eks", topic_arn=aws["topic"], ledger_table=aws["table"], policy=POLICY, clusters=(),
            node_groups=(GROUP,)), intents=intents)
        self.tools.eks = Nodegroups(eks if eks is not None else aws["eks"])
        self.e.add_response("describe_capacity_reservations", {"CapacityReservations": [
            reservation("cr-u1", instance_type="trn2u.48xlarge", count=4, start=START, end=END, state=state,
                        block_id="cb-u1")]}, {"CapacityReservationIds": ["cr-u1"]})
        self.e.add_response("describe_capacity_blocks", {"CapacityBlocks": [
            {"CapacityBlockId": "cb-u1", "AvailabilityZone": "us-east-2b", "CapacityReservationIds": ["cr-u1"],
             "StartDate": START, "EndDate": END, "State": state, "UltraserverType": "u-trn2x64"}]},
            {"CapacityBlockIds": ["cb-u1"]})

    def at(self, when: datetime, event: Any = SCHEDULED) -> dict[str, Any]:
        self.api.clock = lambda: when
        with self.e:
            out = run(event, self.tools, now=when)
        self.e.assert_no_pending_responses()
        return out


def desired(aws: dict[str, Any]) -> int:
    return int(aws["eks"].describe_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP)["nodegroup"][
        "scalingConfig"]["desiredSize"])


def flag(aws: dict[str, Any]) -> dict[str, Any] | None:
    try:
        body = aws["s3"].get_object(Bucket=DRAIN_BUCKET, Key=drain_key("ultra"))["Body"].read()
    except aws["s3"].exceptions.NoSuchKey:
        return None
    return dict(json.loads(body))


def subjects(aws: dict[str, Any]) -> list[str]:
    return [n["Subject"] for n in said(aws)]


def test_the_block_delivered_scales_the_node_group_out_once(aws):
    out = Pass(aws).at(ACTIVE, DELIVERED)
    assert desired(aws) == 4   # the block's one UltraServer, not the group's 8
    scaling = aws["eks"].describe_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP)["nodegroup"]["scalingConfig"]
    assert (scaling["minSize"], scaling["maxSize"]) == (0, 8)   # only the desired size is the lifecycle's
    assert out["node_groups"][f"{CLUSTER}/ultra"][0] == "scale out to 4 (block(s) cr-u1 active)"
    assert subjects(aws) == [f"neuronfleet: node group {CLUSTER}/ultra scaled out to 4"]
    again = Pass(aws).at(ACTIVE + timedelta(minutes=10))   # the next pass: at its blocks' size, nothing said
    assert again["node_groups"][f"{CLUSTER}/ultra"] == ["no scaling (at its blocks' size)"]
    assert subjects(aws) == [] and flag(aws) is None


def test_a_scheduled_block_is_not_scaled_out(aws):
    Pass(aws, state="scheduled").at(START - timedelta(hours=1))
    assert desired(aws) == 0 and subjects(aws) == []


def test_the_drain_flag_then_the_scale_in_at_its_deadline_each_said_once(aws):
    Pass(aws).at(ACTIVE)
    said(aws)
    Pass(aws).at(DRAIN)
    assert desired(aws) == 4   # still checkpointing: no scale-in before the deadline
    assert flag(aws) == {"deadline": DEADLINE.isoformat(), "reason": f"the block ends (EKS node group {CLUSTER}/ultra)",
                         "blocks": ["cr-u1"]}
    assert subjects(aws) == [f"neuronfleet: checkpoint now, {CLUSTER}/ultra drains"[:100]]
    Pass(aws).at(DRAIN + timedelta(minutes=10))
    assert subjects(aws) == [] and desired(aws) == 4
    out = Pass(aws).at(DEADLINE)
    assert desired(aws) == 0 and out["node_groups"][f"{CLUSTER}/ultra"][-1].startswith("scaled in 4 -> 0")
    assert subjects(aws) == [f"neuronfleet: node group {CLUSTER}/ultra scaled in to 0"]
    Pass(aws).at(DEADLINE + timedelta(minutes=10))    # scaled in: the flag stays, nothing said again
    assert subjects(aws) == [] and flag(aws) is not None and desired(aws) == 0


def test_a_late_first_pass_tells_the_jobs_before_it_scales_in(aws):
    """A pass that first sees the drain at its deadline (the function deployed late, or a run lost) writes the flag
    and says the drain before the scale-in."""
    aws["eks"].update_nodegroup_config(clusterName=CLUSTER, nodegroupName=NODEGROUP, scalingConfig={"desiredSize": 4})
    Pass(aws).at(DEADLINE + timedelta(minutes=5))
    assert subjects(aws) == [f"neuronfleet: checkpoint now, {CLUSTER}/ultra drains"[:100],
                             f"neuronfleet: node group {CLUSTER}/ultra scaled in to 0"]
    assert flag(aws) is not None and desired(aws) == 0


def test_the_flag_is_lowered_once_the_block_has_ended(aws):
    Pass(aws).at(ACTIVE)
    Pass(aws).at(DRAIN)
    assert flag(aws) is not None
    Pass(aws).at(END + timedelta(minutes=5))
    assert flag(aws) is None


def test_two_overlapping_runs_scale_once(aws):
    """A run holding the node group's scaling lease (an overlapping run mid-call) keeps the other from calling."""
    holder = Intents(aws["ddb"], aws["table"])
    assert holder.take(f"scale#{CLUSTER}/ultra", expires=END)
    faulty = Faulty(aws["eks"])
    out = Pass(aws, eks=faulty).at(ACTIVE)
    assert faulty.calls["update_nodegroup_config"] == 0 and desired(aws) == 0
    assert "scale out: another run is scaling it" in out["node_groups"][f"{CLUSTER}/ultra"]
    assert subjects(aws) == []
    holder.release(f"scale#{CLUSTER}/ultra")   # the other run done: the next pass scales, said once
    Pass(aws).at(ACTIVE + timedelta(minutes=10))
    assert desired(aws) == 4 and len(subjects(aws)) == 1


@pytest.mark.parametrize("fault", [
    Fault(client_error("ResourceInUseException", "UpdateNodegroupConfig", status=409)),
    Fault(client_error("ServerException", "UpdateNodegroupConfig", status=500)),
    Fault(timeout("eks")),
], ids=["in use", "server error", "timeout"])
def test_a_refused_update_says_nothing_and_the_retry_scales(aws, fault):
    faulty = Faulty(aws["eks"], faults={("update_nodegroup_config", 1): fault})
    with pytest.raises(Unfinished, match=f"{CLUSTER}/ultra: scale out to 4"):
        Pass(aws, eks=faulty).at(ACTIVE, DELIVERED)
    assert desired(aws) == 0 and subjects(aws) == []
    Pass(aws).at(ACTIVE + timedelta(minutes=10))   # the lease was handed back: the next pass scales at once
    assert desired(aws) == 4 and len(subjects(aws)) == 1


def test_a_lost_answer_of_an_update_that_took_effect_is_not_repeated(aws):
    faulty = Faulty(aws["eks"], faults={("update_nodegroup_config", 1): Fault(timeout("eks"), after=True)})
    with pytest.raises(Unfinished):
        Pass(aws, eks=faulty).at(ACTIVE)
    assert desired(aws) == 4
    again = Faulty(aws["eks"])
    Pass(aws, eks=again).at(ACTIVE + timedelta(minutes=10))
    assert again.calls["update_nodegroup_config"] == 0


def test_a_failed_scale_in_is_tried_again_at_the_next_pass(aws):
    aws["eks"].update_nodegroup_config(clusterName=CLUSTER, nodegroupName=NODEGROUP, scalingConfig={"desiredSize": 4})
    faulty = Faulty(aws["eks"], faults={("update_nodegroup_config", 1): Fault(
        client_error("ServerException", "UpdateNodegroupConfig", status=500))})
    with pytest.raises(Unfinished, match="scale in to 0"):
        Pass(aws, eks=faulty).at(DEADLINE)
    assert desired(aws) == 4 and flag(aws) is not None   # the jobs were told all the same
    assert subjects(aws) == [f"neuronfleet: checkpoint now, {CLUSTER}/ultra drains"[:100]]
    Pass(aws).at(DEADLINE + timedelta(minutes=10))
    assert desired(aws) == 0 and subjects(aws) == [f"neuronfleet: node group {CLUSTER}/ultra scaled in to 0"]


@pytest.mark.parametrize("fault", [Fault(client_error("ServerException", "DescribeNodegroup", status=500)),
                                   Fault(timeout("eks"))], ids=["server error", "timeout"])
def test_an_unreadable_node_group_decides_nothing(aws, fault):
    aws["eks"].update_nodegroup_config(clusterName=CLUSTER, nodegroupName=NODEGROUP, scalingConfig={"desiredSize": 4})
    faulty = Faulty(aws["eks"], faults={("describe_nodegroup", 1): fault})
    with pytest.raises(Unfinished, match=f"{CLUSTER}/ultra: "):
        Pass(aws, eks=faulty).at(DEADLINE)
    assert faulty.calls["update_nodegroup_config"] == 0 and desired(aws) == 4
    assert flag(aws) is None and subjects(aws) == []


def test_a_refused_flag_is_said_and_the_scale_in_still_comes(aws):
    aws["eks"].update_nodegroup_config(clusterName=CLUSTER, nodegroupName=NODEGROUP, scalingConfig={"desiredSize": 4})
    p = Pass(aws)
    p.tools.flag.s3 = Faulty(aws["s3"], faults={("put_object", 1): Fault(
        client_error("AccessDenied", "PutObject", status=403))})
    with pytest.raises(Unfinished, match="drain flag: ClientError"):
        p.at(DEADLINE)
    notes = said(aws)
    assert "could NOT be written" in notes[0]["Message"] and desired(aws) == 0


def test_a_malformed_event_is_refused_and_nothing_is_called(aws):
    faulty = Faulty(aws["eks"])
    p = Pass(aws, eks=faulty)
    out = run(["not", "an", "event"], p.tools, now=ACTIVE)
    assert out == {"refused": "event: got list; allowed: a JSON object (an EventBridge event)"}
    assert sum(faulty.calls.values()) == 0 and desired(aws) == 0 and subjects(aws) == []


def test_a_malformed_scaling_answer_decides_nothing(aws):
    class Broken:
        def __init__(self, eks: Any) -> None:
            self.eks = eks

        def describe_nodegroup(self, **kwargs: Any) -> dict[str, Any]:
            answer = self.eks.describe_nodegroup(**kwargs)
            answer["nodegroup"]["scalingConfig"].pop("desiredSize")
            return dict(answer)

        def update_nodegroup_config(self, **kwargs: Any) -> Any:
            raise AssertionError("nothing is decided on a malformed answer")

    with pytest.raises(Unfinished, match=r"scalingConfig\.desiredSize: got None; allowed: a whole number"):
        Pass(aws, eks=Broken(aws["eks"])).at(ACTIVE)
    assert desired(aws) == 0
