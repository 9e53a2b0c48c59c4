"""The waste detector's off-reservation signal: an instance whose launch template targets a reservation but which
runs outside one (the run-time guard on AWS Batch honouring instance market options, unconfirmed offline)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.stub import Stubber

from neuronfleet.lambdas.cost.adapters.inventory import FleetInventory
from neuronfleet.lambdas.cost.logic.idle import OFF_RESERVATION_KIND, TITLES, Instance, off_reservation, started

LAUNCHED = datetime(2026, 11, 20, 8, tzinfo=UTC)


def test_only_instances_meant_for_a_reservation_that_hold_none_are_flagged() -> None:
    running = [
        Instance("i-block-ok", "trn2.48xlarge", LAUNCHED, capacity="capacity-block", reservation_id="cr-1",
                 lifecycle="capacity-block"),
        Instance("i-block-off", "trn2.48xlarge", LAUNCHED, capacity="capacity-block"),
        Instance("i-odcr-ok", "trn1.32xlarge", LAUNCHED, capacity="odcr", reservation_id="cr-2"),
        Instance("i-odcr-off", "trn1.32xlarge", LAUNCHED, capacity="odcr"),
        Instance("i-on-demand", "trn1.32xlarge", LAUNCHED, capacity="on-demand"),
        Instance("i-untagged", "inf2.xlarge", LAUNCHED),
    ]
    flagged = off_reservation(running)
    assert sorted(flagged) == ["i-block-off", "i-odcr-off"]
    assert flagged["i-block-off"].startswith("trn2.48xlarge targets capacity-block but runs outside any capacity "
                                             "reservation (no CapacityReservationId): billed On-Demand")
    assert "--instance-ids i-block-off" in flagged["i-block-off"]
    subject, _ = started(OFF_RESERVATION_KIND, "nf-prod", flagged)
    assert subject == f"neuronfleet nf-prod: 2 {TITLES[OFF_RESERVATION_KIND][0]}"


def _instance(instance_id: str, **extra: Any) -> dict[str, Any]:
    return {"InstanceId": instance_id, "InstanceType": "trn2.48xlarge", "LaunchTime": LAUNCHED, **extra}


def test_the_inventory_reads_the_tag_the_reservation_and_the_lifecycle_as_ec2_answers_them() -> None:
    """DescribeInstances answered through a botocore Stubber, which checks the answer against EC2's model."""
    ec2 = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(ec2)
    stubber.add_response("describe_instances", {"Reservations": [{"Instances": [
        _instance("i-in-block", CapacityReservationId="cr-0123456789abcdef0", InstanceLifecycle="capacity-block",
                  Tags=[{"Key": "neuronfleet:fleet", "Value": "nf"},
                        {"Key": "neuronfleet:capacity", "Value": "capacity-block"}]),
        _instance("i-outside", Tags=[{"Key": "neuronfleet:capacity", "Value": "capacity-block"}]),
        _instance("i-no-tags"),
    ]}]})
    with stubber:
        running = FleetInventory(ec2=ec2, sagemaker=None, cloudwatch=None, tagging=None, fleet="nf",
                                 namespace="NeuronFleet/Neuron", metric="NeuronCoreUtilization"
                                 ).running_neuron_instances()
    assert [(i.instance_id, i.capacity, i.reservation_id, i.lifecycle) for i in running] == [
        ("i-in-block", "capacity-block", "cr-0123456789abcdef0", "capacity-block"),
        ("i-outside", "capacity-block", "", ""),
        ("i-no-tags", "", "", "")]
    assert list(off_reservation(running)) == ["i-outside"]
