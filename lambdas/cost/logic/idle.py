"""Waste where the money goes, as lasting conditions of the fleet's own resources. Pure decisions, no AWS calls.

Each kind is a condition the announcements ledger opens when it starts and closes when it ends (said twice, never
hourly in between):

- ``idle-instance``: a running Neuron instance of the fleet whose every hourly NeuronCore utilisation average of the
  last N hours is below the threshold (the kit's own metric, node/utilisation.py);
- ``silent-instance``: a running Neuron instance of the fleet, up longer than N hours, with no utilisation datapoint
  in the last N hours: the publisher or neuron-monitor is not running, so idleness cannot be judged. Its own
  signal, never silence and never "fine". Not an instance whose utilisation the kit does not measure (below);
- ``unmeasured-instance``: a running Neuron instance of the fleet with no utilisation datapoint whose node group uses
  Neuron's DRA driver (its ``neuronfleet:neuron-devices`` tag says ``dra``): Neuron Monitor does not support the DRA
  driver, so the kit runs no publisher there (eks.manifests.utilisation_publisher). Announced as a fact, not a
  fault, instead of ``silent-instance``: its idleness is not judged, its spend still counts in the fleet's figures
  (they come from the bill);
- ``unused-reservation``: an active capacity reservation of the fleet (an ODCR, billed whether used or not, or a
  Capacity Block, paid upfront) with free slots (AvailableInstanceCount > 0);
- ``idle-endpoint``: a SageMaker variant of the fleet's endpoints with running instances and no invocation in the
  last N hours (not an asynchronous endpoint's: it publishes no Invocations and scales to zero on its own);
- ``gpu-standby``: a GPU variant held at weight 0 with running instances: the failover's insurance, idle by design,
  announced so its cost is seen (and again when it stops or starts serving);
- ``off-reservation``: a running instance of the fleet whose launch template targets a reservation (its
  ``neuronfleet:capacity`` tag says ``capacity-block`` or ``odcr``) but which holds none (DescribeInstances gives no
  ``CapacityReservationId``): it runs, and bills, On-Demand. The guard on an unconfirmed fact: AWS Batch's user guide
  lists instance market options among the launch-template settings it ignores, which is how the kit targets Capacity
  Blocks; this says at once, on a real account, when Batch did not honour it.

(Capacity Blocks ending are announced by the capacity alerts, lambdas/capacity_alert, timed from when their
instances stop.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from neuronfleet_contract.tags import DRA_DEVICES

IDLE_KIND = "idle-instance"
"""The kind of the lasting condition in the announcements ledger."""
SILENT_KIND = "silent-instance"
UNUSED_RESERVATION_KIND = "unused-reservation"
IDLE_ENDPOINT_KIND = "idle-endpoint"
GPU_STANDBY_KIND = "gpu-standby"
OFF_RESERVATION_KIND = "off-reservation"
UNMEASURED_KIND = "unmeasured-instance"
KINDS = (IDLE_KIND, SILENT_KIND, UNUSED_RESERVATION_KIND, IDLE_ENDPOINT_KIND, GPU_STANDBY_KIND, OFF_RESERVATION_KIND,
         UNMEASURED_KIND)

RESERVED_CAPACITIES = ("odcr", "capacity-block")


@dataclass(frozen=True)
class Instance:
    instance_id: str
    instance_type: str
    launched: datetime
    capacity: str = ""
    """What its launch template targets (the ``neuronfleet:capacity`` tag); empty when untagged."""
    reservation_id: str = ""
    """The capacity reservation it runs in (DescribeInstances ``CapacityReservationId``); empty when none."""
    lifecycle: str = ""
    """DescribeInstances ``InstanceLifecycle`` (``capacity-block``, ``spot``, ...; absent for On-Demand)."""
    devices: str = ""
    """Its Neuron device manager (the ``neuronfleet:neuron-devices`` tag: ``dra`` or ``device-plugin``, set on EKS
    node groups); empty when untagged (a Batch host: the device plugin's world, its publisher runs)."""

    @property
    def measured(self) -> bool:
        """Whether the kit publishes this instance's utilisation: not on a DRA node (Neuron Monitor does not support
        the DRA driver, so eks.manifests.utilisation_publisher runs nothing there)."""
        return self.devices != DRA_DEVICES


@dataclass(frozen=True)
class Reservation:
    reservation_id: str
    instance_type: str
    total: int
    available: int
    kind: str
    """``capacity-block`` or ``default`` (an On-Demand Capacity Reservation)."""
    end: datetime | None = None


@dataclass(frozen=True)
class VariantTraffic:
    endpoint: str
    variant: str
    instances: int
    weight: float
    invocations: float
    """Invocations in the last N hours."""
    asynchronous: bool = False
    """The variant of an asynchronous endpoint (DescribeEndpoint AsyncInferenceConfig): SageMaker publishes no
    ``Invocations`` for it ("Any metric not listed below is not published if the endpoint is enabled for
    asynchronous inference": developer guide, "Monitor asynchronous endpoints", read 2026-11-29), so 0 invocations
    says nothing; it scales to zero instances when its queue is empty, and its backlog-age alarm says when it does
    not drain. Never judged idle here."""


def idle_instances(hourly: Mapping[str, Sequence[float]], *, threshold: float, hours: int) -> list[tuple[str, float]]:
    """Instances whose every one of the last ``hours`` hourly averages is below ``threshold`` percent.
    An instance with fewer datapoints than ``hours`` is not judged idle (see :func:`silent_instances`)."""
    out = []
    for instance, values in sorted(hourly.items()):
        recent = list(values)[-hours:]
        if len(recent) == hours and max(recent) < threshold:
            out.append((instance, round(sum(recent) / hours, 1)))
    return out


def silent_instances(running: Sequence[Instance], hourly: Mapping[str, Sequence[float]], *, now: datetime,
                     hours: int) -> dict[str, str]:
    """Running instances up longer than ``hours`` with no utilisation datapoint in that window, but those whose
    utilisation the kit does not measure (:func:`unmeasured_instances` names them)."""
    return {i.instance_id: f"{i.instance_type}, running since {i.launched.isoformat()}, no NeuronCore utilisation "
                           f"datapoint in the last {hours} hours (is neuronfleet-utilisation.service running?)"
            for i in running
            if i.measured and now - i.launched >= timedelta(hours=hours) and not hourly.get(i.instance_id)}


def unmeasured_instances(running: Sequence[Instance], hourly: Mapping[str, Sequence[float]]) -> dict[str, str]:
    """Running instances of a DRA node group with no utilisation datapoint: not measured, by design (one line each,
    with the reason). One that does report (a publisher of the user's own) is judged as any other."""
    return {i.instance_id: f"{i.instance_type}, running since {i.launched.isoformat()}: NeuronCore utilisation not "
                           "measured, by design: its node group uses Neuron's DRA driver, which Neuron Monitor does "
                           "not support (no publisher runs there); not a fault, idleness not judged, its spend "
                           "still counted"
            for i in running if not i.measured and not hourly.get(i.instance_id)}


def off_reservation(running: Sequence[Instance]) -> dict[str, str]:
    """Instances meant for a reservation (their capacity tag) that hold none: they bill at the On-Demand rate."""
    return {i.instance_id: f"{i.instance_type} targets {i.capacity} but runs outside any capacity reservation "
                           "(no CapacityReservationId): billed On-Demand. AWS Batch's user guide lists instance "
                           "market options among the launch-template settings it ignores; check the compute "
                           "environment's instances against the reservation (aws ec2 describe-instances "
                           f"--instance-ids {i.instance_id} --query 'Reservations[].Instances[].CapacityReservationId')"
            for i in running
            if i.capacity in RESERVED_CAPACITIES and not i.reservation_id and i.lifecycle != "capacity-block"}


def unused_reservations(reservations: Sequence[Reservation]) -> dict[str, str]:
    out = {}
    for r in reservations:
        if r.available > 0:
            paid = "paid upfront" if r.kind == "capacity-block" else "billed whether used or not"
            out[r.reservation_id] = (f"{r.available} of {r.total} {r.instance_type} slots free ({r.kind}, {paid}"
                                     + (f", ends {r.end.isoformat()}" if r.end else "") + ")")
    return out


def endpoint_waste(variants: Sequence[VariantTraffic], *, hours: int) -> tuple[dict[str, str], dict[str, str]]:
    """(idle variants, GPU standbys): a weight-0 variant with instances is a standby, not an idle endpoint."""
    idle, standby = {}, {}
    for v in variants:
        if v.instances <= 0 or v.asynchronous:
            continue
        subject = f"{v.endpoint}/{v.variant}"
        if v.weight == 0:
            standby[subject] = (f"{v.instances} instance(s) at weight 0: the failover's standby, idle by design "
                                f"({v.invocations:g} invocations in the last {hours} hours)")
        elif v.invocations == 0:
            idle[subject] = f"{v.instances} instance(s), no invocation in the last {hours} hours"
    return idle, standby


TITLES = {IDLE_KIND: ("Neuron instance(s) went idle", "Neuron instance(s) no longer idle"),
          SILENT_KIND: ("Neuron instance(s) publish no utilisation", "Neuron instance(s) publishing utilisation again "
                                                                      "or stopped"),
          UNUSED_RESERVATION_KIND: ("reservation(s) with free slots", "reservation(s) fully used or ended"),
          IDLE_ENDPOINT_KIND: ("endpoint variant(s) idle", "endpoint variant(s) serving again or scaled in"),
          GPU_STANDBY_KIND: ("GPU standby(s) running", "GPU standby(s) no longer held at weight 0 or stopped"),
          OFF_RESERVATION_KIND: ("instance(s) running outside their reservation",
                                 "instance(s) outside their reservation stopped"),
          UNMEASURED_KIND: ("Neuron instance(s) whose utilisation is not measured (Neuron DRA driver)",
                            "unmeasured Neuron instance(s) stopped or publishing utilisation")}


def started_message(idle: Sequence[tuple[str, float]], *, threshold: float, hours: int) -> tuple[str, str]:
    lines = [f"- {i}: {avg}% average NeuronCore utilisation" for i, avg in idle]
    return (f"neuronfleet: {len(idle)} Neuron instance(s) went idle",
            f"NeuronCore utilisation below {threshold}% for the last {hours} hours on paid capacity:\n"
            + "\n".join(lines) + "\nEach is announced again only when it stops being idle.")


def ended_message(instances: Sequence[str], *, threshold: float) -> tuple[str, str]:
    return (f"neuronfleet: {len(instances)} Neuron instance(s) no longer idle",
            f"Back above {threshold}% NeuronCore utilisation, or no longer reporting (stopped):\n"
            + "\n".join(f"- {i}" for i in instances))


def started(kind: str, fleet: str, items: Mapping[str, str]) -> tuple[str, str]:
    return (f"neuronfleet {fleet}: {len(items)} {TITLES[kind][0]}",
            "\n".join(f"- {s}: {d}" for s, d in sorted(items.items()))
            + "\nEach is announced again only when the condition ends.")


def ended(kind: str, fleet: str, subjects: Sequence[str]) -> tuple[str, str]:
    return (f"neuronfleet {fleet}: {len(subjects)} {TITLES[kind][1]}", "\n".join(f"- {s}" for s in subjects))


SCHEDULED_EVENT = "Scheduled Event"
"""The detail-type of the events an EventBridge schedule sends (the Lambda developer guide's example, copied
verbatim in tests/data/events/scheduled-event.json): the only events the waste detector runs on."""


def malformed_schedule(event: object) -> str | None:
    """Why ``event`` is not an EventBridge schedule's event (naming the field, the value and what is allowed), or
    None. The detector reads nothing else from it."""
    if not isinstance(event, Mapping):
        return f"event: got {_show(event)}; allowed: a JSON object (an EventBridge schedule's event)"
    kind = event.get("detail-type")
    if kind != SCHEDULED_EVENT:
        got = "nothing" if "detail-type" not in event else _show(kind)
        return f"detail-type: got {got}; allowed: {SCHEDULED_EVENT!r} (the detector runs on its schedule)"
    if "detail" in event and not isinstance(event["detail"], Mapping):
        return f"detail: got {_show(event['detail'])}; allowed: a JSON object ({{}} for a schedule)"
    return None


def _show(value: object) -> str:
    text = repr(value)
    return f"{text if len(text) <= 80 else text[:77] + '...'} ({type(value).__name__})"
