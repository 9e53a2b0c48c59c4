"""The waste detector's instance signals (lambdas/cost/logic/idle.py). Off-reservation: an instance whose launch
template targets a reservation but which runs outside one (the run-time guard on AWS Batch honouring instance market
options, unconfirmed offline). Silent or not measured: a running instance with no utilisation datapoint is silent
(a fault: its publisher is not running), unless its node group uses Neuron's DRA driver, where the kit runs no
publisher on purpose (Neuron Monitor does not support DRA): then it is said once to be not measured, never silent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from neuronfleet.lambdas.cost.adapters.inventory import FleetInventory
from neuronfleet.lambdas.cost.logic.idle import (
    OFF_RESERVATION_KIND,
    TITLES,
    UNMEASURED_KIND,
    Instance,
    idle_instances,
    off_reservation,
    silent_instances,
    started,
    unmeasured_instances,
)
from neuronfleet_contract.tags import DEVICES_TAG

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


NOW = LAUNCHED + timedelta(hours=7)
"""Every instance below is up 7 hours, longer than the 6-hour window, unless its row says otherwise."""


@pytest.mark.parametrize(("devices", "hourly", "launched", "silent", "unmeasured", "idle"), [
    # a DRA node publishes nothing, on purpose: not silent, said once to be not measured, never judged idle
    ("dra", None, LAUNCHED, False, True, False),
    ("dra", [], LAUNCHED, False, True, False),
    ("dra", None, NOW - timedelta(minutes=5), False, True, False),       # just launched: not measured either
    # a DRA node that does report (a publisher of the user's own) is judged as any other
    ("dra", [5.0] * 6, LAUNCHED, False, False, True),
    ("dra", [85.0] * 6, LAUNCHED, False, False, False),
    # a device-plugin node (EKS) and a Batch host (untagged) with no data: silent, their publisher should run
    ("device-plugin", None, LAUNCHED, True, False, False),
    ("device-plugin", [], LAUNCHED, True, False, False),
    ("", None, LAUNCHED, True, False, False),
    ("device-plugin", None, NOW - timedelta(hours=5), False, False, False),  # under the window: not yet judged
    ("device-plugin", [5.0] * 6, LAUNCHED, False, False, True),
    ("", [85.0] * 6, LAUNCHED, False, False, False),
])
def test_no_utilisation_is_silent_but_on_a_dra_node_where_it_is_not_measured(
        devices: str, hourly: list[float] | None, launched: datetime, silent: bool, unmeasured: bool,
        idle: bool) -> None:
    running = [Instance("i-0abc", "trn2u.48xlarge", launched, capacity="capacity-block", devices=devices)]
    data = {} if hourly is None else {"i-0abc": hourly}
    assert ("i-0abc" in silent_instances(running, data, now=NOW, hours=6)) is silent
    assert ("i-0abc" in unmeasured_instances(running, data)) is unmeasured
    assert ("i-0abc" in dict(idle_instances(data, threshold=20, hours=6))) is idle


def test_a_fleet_of_both_says_the_dra_node_once_as_not_measured_and_the_device_plugin_node_as_silent() -> None:
    running = [Instance("i-dra", "trn2u.48xlarge", LAUNCHED, capacity="capacity-block", devices="dra"),
               Instance("i-plugin", "trn1.32xlarge", LAUNCHED, capacity="odcr", reservation_id="cr-1",
                        devices="device-plugin"),
               Instance("i-busy", "trn1.32xlarge", LAUNCHED, devices="device-plugin")]
    hourly = {"i-busy": [70.0] * 6}
    silent = silent_instances(running, hourly, now=NOW, hours=6)
    assert list(silent) == ["i-plugin"]
    assert silent["i-plugin"].endswith("(is neuronfleet-utilisation.service running?)")
    unmeasured = unmeasured_instances(running, hourly)
    assert list(unmeasured) == ["i-dra"]
    line = unmeasured["i-dra"]
    assert line == (f"trn2u.48xlarge, running since {LAUNCHED.isoformat()}: NeuronCore utilisation not measured, "
                    "by design: its node group uses Neuron's DRA driver, which Neuron Monitor does not support (no "
                    "publisher runs there); not a fault, idleness not judged, its spend still counted")
    assert "\n" not in line and "neuronfleet-utilisation.service" not in line
    subject, message = started(UNMEASURED_KIND, "nf-eks", unmeasured)
    assert subject == "neuronfleet nf-eks: 1 Neuron instance(s) whose utilisation is not measured (Neuron DRA driver)"
    assert message.count("i-dra") == 1 and message.count("not measured") == 1
    assert "i-plugin" not in message and "i-busy" not in message


def test_the_inventory_reads_the_device_manager_tag_and_keeps_every_neuron_instance() -> None:
    """The DRA node stays in the inventory (the detector says it is not measured; nothing is dropped)."""
    ec2 = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(ec2)
    stubber.add_response("describe_instances", {"Reservations": [{"Instances": [
        _instance("i-dra", Tags=[{"Key": "neuronfleet:fleet", "Value": "nf"}, {"Key": DEVICES_TAG, "Value": "dra"}]),
        _instance("i-plugin", Tags=[{"Key": DEVICES_TAG, "Value": "device-plugin"}]),
        _instance("i-batch"),
    ]}]})
    with stubber:
        running = FleetInventory(ec2=ec2, sagemaker=None, cloudwatch=None, tagging=None, fleet="nf",
                                 namespace="NeuronFleet/Neuron", metric="NeuronCoreUtilization"
                                 ).running_neuron_instances()
    assert [(i.instance_id, i.devices, i.measured) for i in running] == [
        ("i-dra", "dra", False), ("i-plugin", "device-plugin", True), ("i-batch", "", True)]
    assert DEVICES_TAG == "neuronfleet:neuron-devices"
