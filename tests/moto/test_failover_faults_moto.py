"""The failover with its state store down (issue 37), and a GPU variant still changing at the start of a failover,
against moto. What is asserted is what a user sees: the endpoint's weights and capacity, the announcements.

The safe default (lambdas/failover/logic.py, ``decide_without_state``): while the state table cannot be read, or
refuses the step's record, the failover moves traffic to the GPU variant when the Neuron variant alarms and the GPU
variant is healthy with the instances for the load already in service; it raises no capacity and never moves traffic
back. With its table back, the next check takes the traffic over (announced) and goes on as usual."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from moto.sagemaker import models as sagemaker_models

from neuronfleet.lambdas.failover.handler import run
from neuronfleet.lambdas.failover.logic import Policy
from tests.fault_injection import Fault, Faulty, client_error, timeout
from tests.moto.test_failover_moto import (
    ACCOUNT,
    ADOPTED,
    CHAT,
    MOVED,
    REGION,
    SCHEDULE,
    T0,
    TABLE,
    alarm,
    alarm_event,
    aws,  # noqa: F401  (the fixture)
    check,
    floors,
    make_endpoint,
    messages,
    record,
    sagemaker_is,
    variants,
    weights,
)


def table_down(aws: dict[str, Any]) -> Faulty:  # noqa: F811
    """The failover's DynamoDB client, every call refused as DynamoDB does when the table is unavailable."""
    return Faulty(aws["dynamodb"], {(op, n): Fault(client_error("ResourceNotFoundException", op, status=400))
                                    for op in ("get_item", "put_item") for n in range(1, 50)})


def down(aws: dict[str, Any], client: Any = None) -> Any:  # noqa: F811
    """The adapters with the state table's client replaced."""
    from neuronfleet.lambdas.failover.adapters import States

    return replace(aws["adapters"], states=States(client or table_down(aws), TABLE))


def step(aws: dict[str, Any], adapters: Any, now: datetime = T0, event: dict[str, Any] | None = None) -> dict[str, str]:  # noqa: F811
    (result,) = run(event or alarm_event("chat-5xx"), config={"chat": CHAT}, aws=adapters, policy=Policy(), now=now,
                    lease_until=now + timedelta(minutes=2))
    return result


def gpu_status(*statuses: str, name: str = "chat") -> None:
    """The GPU variant's VariantStatus as DescribeEndpoint shows it while SageMaker changes it (botocore 1.44.5
    ProductionVariantSummary.VariantStatus: Creating, Updating, Deleting, ActivatingTraffic, Baking)."""
    endpoint = sagemaker_models.sagemaker_backends[ACCOUNT][REGION].endpoints[name]
    for variant in endpoint.production_variants:
        if variant["VariantName"] == "gpu":
            variant["VariantStatus"] = [{"Status": s, "StartTime": datetime(2026, 11, 28, tzinfo=UTC)}
                                        for s in statuses]


# ------------------------------------------------------------------------------------------ the state store down


def test_with_its_table_down_the_failover_still_moves_traffic_to_a_ready_gpu(aws) -> None:  # noqa: F811
    make_endpoint(aws, neuron_instances=3)  # 3 Neuron instances: the 1 GPU instance in service carries them
    alarm(aws, "chat-5xx", "ALARM")
    moved = step(aws, down(aws))
    assert moved["action"] == "to_gpu" and "state store unavailable" in moved["reason"]
    assert weights(aws) == {"neuron": 0.0, "gpu": 1.0}
    ((subject, message),) = messages(aws)
    assert subject == MOVED and "ResourceNotFoundException" in message and "Weights: gpu=1, neuron=0." in message
    for minute in (5, 10):  # still down: nothing more to do, nothing said again
        assert step(aws, down(aws), T0 + timedelta(minutes=minute), SCHEDULE)["action"] == "hold"
    assert messages(aws) == []
    alarm(aws, "chat-5xx", "OK")
    back = check(aws, T0 + timedelta(minutes=15))  # the table is back: the traffic on GPU is taken over, said
    assert back["action"] == "adopt" and record(aws).phase == "on-gpu"
    assert [s for s, _ in messages(aws)] == [ADOPTED] and weights(aws) == {"neuron": 0.0, "gpu": 1.0}


def test_with_its_table_down_no_capacity_is_raised_and_traffic_stays(aws) -> None:  # noqa: F811
    make_endpoint(aws, neuron_instances=6)  # needs 2 GPU instances, 1 in service
    alarm(aws, "chat-5xx", "ALARM")
    held = step(aws, down(aws))
    assert held["action"] == "hold" and "no capacity is raised without the state store" in held["reason"]
    assert weights(aws) == {"neuron": 1.0, "gpu": 0.0}
    assert floors(aws)["gpu"] == (1, 3) and variants(aws)["gpu"][2] == 1  # nothing left raised with no record
    assert messages(aws) == []  # said by the blind alarm (FailoverErrors), not by a step
    assert check(aws, T0 + timedelta(minutes=5))["action"] == "raise_gpu"  # the table back: the usual failover


@pytest.mark.parametrize("error", [client_error("ProvisionedThroughputExceededException", "GetItem"),
                                   client_error("InternalServerError", "GetItem", status=500), timeout()],
                         ids=["throttled", "500", "timeout"])
def test_an_unreadable_state_item_is_the_safe_default_too(aws, error) -> None:  # noqa: F811
    make_endpoint(aws, neuron_instances=3)
    alarm(aws, "chat-5xx", "ALARM")
    flaky = Faulty(aws["dynamodb"], {("get_item", 1): Fault(error)})
    assert step(aws, down(aws, flaky))["action"] == "to_gpu"
    assert weights(aws) == {"neuron": 0.0, "gpu": 1.0} and [s for s, _ in messages(aws)] == [MOVED]


def test_with_its_table_down_a_gpu_variant_still_starting_takes_no_traffic(aws) -> None:  # noqa: F811
    make_endpoint(aws, neuron_instances=3)
    alarm(aws, "chat-5xx", "ALARM")
    gpu_status("Creating")
    held = step(aws, down(aws))
    assert held["action"] == "hold" and "still changing" in held["reason"]
    assert weights(aws) == {"neuron": 1.0, "gpu": 0.0} and messages(aws) == []


def test_with_its_table_down_a_failing_gpu_takes_no_traffic(aws) -> None:  # noqa: F811
    make_endpoint(aws, neuron_instances=3)
    alarm(aws, "chat-5xx", "ALARM")
    alarm(aws, "chat-gpu-5xx", "ALARM")
    assert step(aws, down(aws))["action"] == "hold"
    assert weights(aws) == {"neuron": 1.0, "gpu": 0.0} and messages(aws) == []


@pytest.mark.parametrize(("where", "method", "after", "said_now"), [
    ("alarms", "get", False, []),  # nothing known: nothing done, the retry moves it
    ("endpoints", "set_weights", False, []),  # SageMaker refused: the retry moves it
    ("endpoints", "set_weights", True, []),  # moved, its answer lost: said when the table is back (the take-over)
    ("topic", "announce", False, []),  # moved, SNS refused: likewise
])
def test_a_failure_in_the_safe_default_then_a_retry(aws, where, method, after, said_now) -> None:  # noqa: F811
    make_endpoint(aws, neuron_instances=3)
    alarm(aws, "chat-5xx", "ALARM")
    adapters = down(aws)
    broken = replace(adapters, **{where: Faulty(getattr(adapters, where),
                                                {(method, 1): Fault(client_error("ThrottlingException", method),
                                                                    after=after)})})
    assert step(aws, broken)["action"] == "error"
    assert messages(aws) == said_now
    retry = step(aws, down(aws), T0 + timedelta(minutes=1))
    assert weights(aws) == {"neuron": 0.0, "gpu": 1.0}
    moved_by_retry = retry["action"] == "to_gpu"
    assert moved_by_retry == (not after and where != "topic")
    alarm(aws, "chat-5xx", "OK")
    assert check(aws, T0 + timedelta(minutes=5))["action"] == "adopt"
    said = [s for s, _ in messages(aws)]
    assert said == ([MOVED, ADOPTED] if moved_by_retry else [ADOPTED])  # the move said at least once, never twice


def test_overlapping_runs_with_the_table_down_move_and_say_it_once(aws) -> None:  # noqa: F811
    """B runs entirely while A is between deciding and moving: A reads the endpoint again before it acts."""
    make_endpoint(aws, neuron_instances=3)
    alarm(aws, "chat-5xx", "ALARM")
    inner: list[dict[str, str]] = []
    adapters = down(aws)
    a = replace(adapters, endpoints=Faulty(adapters.endpoints, before={
        ("get", 2): lambda: inner.append(step(aws, down(aws)))}))
    outer = step(aws, a)
    assert inner[0]["action"] == "to_gpu" and outer["action"] == "hold"
    assert [s for s, _ in messages(aws)] == [MOVED] and weights(aws) == {"neuron": 0.0, "gpu": 1.0}


def test_a_step_refused_by_the_table_is_taken_by_the_safe_default_not_lost(aws) -> None:  # noqa: F811
    """The item reads, DynamoDB refuses the step's record (throttled): the move happens now, not 5 minutes later."""
    make_endpoint(aws, neuron_instances=3)
    alarm(aws, "chat-5xx", "ALARM")
    refusing = Faulty(aws["dynamodb"], {("put_item", 1): Fault(
        client_error("ProvisionedThroughputExceededException", "PutItem"))})
    assert step(aws, down(aws, refusing))["action"] == "to_gpu"
    assert weights(aws) == {"neuron": 0.0, "gpu": 1.0} and [s for s, _ in messages(aws)] == [MOVED]


def test_a_step_whose_record_write_timed_out_is_not_taken_twice(aws) -> None:  # noqa: F811
    """A timeout may have written the step (its answer lost): no safe default then, the lease decides (as before)."""
    make_endpoint(aws, neuron_instances=3)
    alarm(aws, "chat-5xx", "ALARM")
    lost = Faulty(aws["dynamodb"], {("put_item", 1): Fault(timeout(), after=True)})
    assert step(aws, down(aws, lost))["action"] == "error"
    assert weights(aws) == {"neuron": 1.0, "gpu": 0.0}
    done = check(aws, T0 + timedelta(minutes=5))
    assert done["action"] == "to_gpu" and [s for s, _ in messages(aws)] == [MOVED]


# ------------------------------------------------------------------------------------------ a GPU variant still changing


@pytest.mark.parametrize("status", ["Creating", "Updating", "ActivatingTraffic"])
def test_a_gpu_variant_still_changing_takes_no_traffic_at_failover_start(aws, status) -> None:  # noqa: F811
    make_endpoint(aws, neuron_instances=3)  # its 1 GPU instance would carry the load, once SageMaker is done
    alarm(aws, "chat-5xx", "ALARM")
    gpu_status(status)
    first = check(aws, T0, alarm_event("chat-5xx"))
    assert first["action"] != "to_gpu" and weights(aws) == {"neuron": 1.0, "gpu": 0.0}
    gpu_status()
    sagemaker_is(gpu=1)
    assert check(aws, T0 + timedelta(minutes=5))["action"] == "to_gpu"
    assert weights(aws) == {"neuron": 0.0, "gpu": 1.0}


def test_the_busy_variant_reads_from_describe_endpoint(aws) -> None:  # noqa: F811
    make_endpoint(aws, neuron_instances=3)
    gpu_status("Creating")
    got = aws["adapters"].endpoints.get("chat")
    assert got.variants["gpu"].busy and not got.variants["neuron"].busy
