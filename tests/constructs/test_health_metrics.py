"""The kit's own health metrics are per fleet (neuronfleet_contract.health).

Handler side: each handler, invoked through its Lambda entry point (Powertools' Metrics decorator prints the embedded
metric format on stdout), publishes its health counts with ``service`` and ``Fleet`` = the ``FLEET`` of its
environment, and with ``service`` alone when it has none. Construct side: an alarm made from each construct's
``metric_*`` method, synthesised, has exactly the dimensions the handler printed (parsed from its EMF, never copied
from the construct), in two fleets of one account (dev and prod, different dimensions) and in a construct given no
fleet. Reference app: each example fleet's health-publishing functions are told their fleet (the snapshots)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns
from botocore.exceptions import ClientError

from neuronfleet import (
    CapacityAlerts,
    CostMonitors,
    EndpointFailover,
    EndpointSettings,
    GpuPool,
    GpuVariant,
    InvalidSettings,
    NeuronEndpoint,
)
from neuronfleet.eks.capacity_alerts import NodegroupCapacityAlerts
from neuronfleet.lambdas.capacity_alert import handler as capacity_handler
from neuronfleet.lambdas.capacity_alert import nodegroup_handler
from neuronfleet.lambdas.cost import collector, waste
from neuronfleet.lambdas.failover import handler as failover_handler
from neuronfleet_contract.capacity_alert import CapacityAlertConfig, gpu_pool
from neuronfleet_contract.cost import COLLECTOR_METRICS, CollectorConfig
from neuronfleet_contract.environment import InvalidEnvironment
from neuronfleet_contract.failover import FailoverConfig
from neuronfleet_contract.health import HealthConfig
from neuronfleet_contract.nodegroup_capacity import NodegroupAlertConfig
from tests.conftest import ENV, EXAMPLE_FLEETS, ROOT, AzStack, network, new_app
from tests.publisher_examples import event

FLEETS = ("nf-dev", "nf-prod")
"""Two fleets in one account (ENV): the usual dev and prod."""
NO_FLEET = ""
"""A construct used outside the reference app, not given a fleet."""

POOL = {"queue_arn": "arn:aws:batch:us-east-2:111111111111:job-queue/gpu", "max_vcpus": 192, "cuda_only_workloads": [],
        "types": [{"instance_type": "p5.48xlarge", "gpus": 8, "gpu_name": "H100", "efa": 32, "vcpus": 192}]}


class Context:
    function_name, memory_limit_in_mb, aws_request_id = "fn", 256, "c6af9ac6-7b61-11e6-9a41-93e812345678"
    invoked_function_arn = "arn:aws:lambda:us-east-2:111111111111:function:fn"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


# ------------------------------------------------------------------------------------------- the handlers' output


@dataclass
class Box:
    """An announcements outbox that completed one message of an earlier run: the run counts it."""

    sent: list[str] = field(default_factory=lambda: ["an earlier run's message"])
    set_aside: list[str] = field(default_factory=list)

    def complete(self) -> None:
        return None

    def finish(self) -> None:
        return None


class Ledger:
    def outbox(self, alerts: Any, deadline: float | None = None) -> Box:
        return Box()


class Unreachable:
    """Any AWS adapter call fails as throttling does."""

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, name)
        return fail


def _printed(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """The EMF documents the handler printed (Powertools writes them on stdout, one JSON object a line)."""
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]


@dataclass(frozen=True)
class Published:
    namespace: str
    metrics: tuple[str, ...]
    dimensions: dict[str, str]


def _published(docs: list[dict[str, Any]], metric: str) -> Published:
    """The one EMF document that carries ``metric``: its namespace, metric names and its one dimension set (names
    from the directive, values from the document's root, as CloudWatch reads them)."""
    (doc,) = [d for d in docs if any(m["Name"] == metric for c in d["_aws"]["CloudWatchMetrics"] for m in c["Metrics"])]
    (directive,) = doc["_aws"]["CloudWatchMetrics"]
    (names,) = directive["Dimensions"]
    return Published(directive["Namespace"], tuple(m["Name"] for m in directive["Metrics"]),
                     {n: doc[n] for n in names})


def _environment(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], fleet: str) -> None:
    """The function's environment as its construct writes it: its settings' and, given a fleet, FLEET."""
    monkeypatch.delenv("FLEET", raising=False)
    for name, value in (env | HealthConfig(fleet=fleet).to_environment()).items():
        monkeypatch.setenv(name, value)


def _failover(fleet: str, monkeypatch: pytest.MonkeyPatch, bad_event: bool) -> None:
    endpoints = {"chat": {"alarms": ["chat-latency"], "latency_limit_ms": 8000, "neuron": {"min": 2, "max": 8},
                          "gpu": {"min": 1, "max": 2}, "neuron_instances_per_gpu_instance": 4}}
    _environment(monkeypatch, {"FAILOVER_ENDPOINTS": json.dumps(endpoints), "FAILOVER_TABLE": "failover",
                               "ALERTS_TOPIC_ARN": "arn:aws:sns:us-east-2:111111111111:alerts"}, fleet)
    aws = failover_handler.Adapters(endpoints=Unreachable(), alarms=Unreachable(), states=Unreachable(),  # type: ignore[arg-type]
                                    scaling=Unreachable(), canary=Unreachable(), topic=Unreachable())  # type: ignore[arg-type]
    container = failover_handler.Container(settings=FailoverConfig.from_environment(), aws=aws)
    monkeypatch.setattr(failover_handler, "container", lambda: container)
    failover_handler.metrics.clear_metrics()
    if bad_event:
        (result,) = failover_handler.handler(event("scheduled-event") | {"source": "aws.ec2"}, Context())
        assert result["action"] == "refused"
    else:  # the schedule checks every endpoint; chat cannot be described (throttled): an error, counted
        (result,) = failover_handler.handler(event("scheduled-event"), Context())
        assert result["action"] == "error" and "ThrottlingException" in result["reason"]


def _capacity(fleet: str, monkeypatch: pytest.MonkeyPatch, bad_event: bool) -> None:
    settings = CapacityAlertConfig(pool=gpu_pool(POOL), topic_arn="arn:aws:sns:us-east-2:111111111111:alerts",
                                   ledger_table="announced")
    _environment(monkeypatch, settings.to_environment(), fleet)
    container = capacity_handler.Container(settings=CapacityAlertConfig.from_environment(), alerts=None,  # type: ignore[arg-type]
                                           ledger=Ledger(), blocks=SimpleNamespace(blocks=lambda: []))  # type: ignore[arg-type]
    monkeypatch.setattr(capacity_handler, "container", lambda: container)
    capacity_handler.metrics.clear_metrics()
    bad = event("batch-job-queue-blocked") | {"detail": "RUNNABLE"}
    out = capacity_handler.handler(bad if bad_event else event("scheduled-event"), Context())
    assert ("refused" in out) == bad_event and out["announced"] == ([] if bad_event else ["an earlier run's message"])


def _nodegroups(fleet: str, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = NodegroupAlertConfig(cluster_name="training", node_groups=("pretrain",), ledger_table="announced",
                                    topic_arn="arn:aws:sns:us-east-2:111111111111:alerts")
    _environment(monkeypatch, settings.to_environment(), fleet)
    container = nodegroup_handler.Container(settings=NodegroupAlertConfig.from_environment(), alerts=None,  # type: ignore[arg-type]
                                            ledger=Ledger(), groups=SimpleNamespace(names=()))  # type: ignore[arg-type]
    monkeypatch.setattr(nodegroup_handler, "container", lambda: container)
    nodegroup_handler.metrics.clear_metrics()
    assert nodegroup_handler.handler(event("scheduled-event"), Context())["announced"] == ["an earlier run's message"]


def _collector(fleet: str, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = CollectorConfig(ledger_table="ledger", instance_types=("trn2.48xlarge",), fleet=fleet or None)
    _environment(monkeypatch, settings.to_environment(), fleet)
    container = collector.Container(settings=CollectorConfig.from_environment(), ce_client=None, ledger=None,  # type: ignore[arg-type]
                                    spend=None, blocks=None)  # type: ignore[arg-type]
    monkeypatch.setattr(collector, "container", lambda: container)
    summary = collector.RunSummary(days=["2026-11-25"], ce_requests=2, ce_throttled=0, rows=1, new=1, replaced=0,
                                   unchanged=0, bad_rows=1, metric_datapoints=1, unconfirmed=["2026-11-24"],
                                   unpublishable=["2026-11-23 trainium"])
    monkeypatch.setattr(collector, "collect", lambda **kwargs: summary)  # the run itself: tests/moto/test_cost_moto
    collector.metrics.clear_metrics()
    collector.handler(event("scheduled-event"), Context())


def _waste(fleet: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A malformed event is refused before the container is built: FLEET is all the function reads."""
    _environment(monkeypatch, {}, fleet)
    waste.metrics.clear_metrics()
    assert waste.handler(event("scheduled-event") | {"detail-type": "Batch Job Queue Blocked"}, Context()) == []


HANDLERS: dict[str, Callable[[str, pytest.MonkeyPatch], None]] = {
    "failover:FailoverErrors": lambda f, m: _failover(f, m, bad_event=False),
    "failover:MalformedEvents": lambda f, m: _failover(f, m, bad_event=True),
    "capacity:CapacityAnnouncements": lambda f, m: _capacity(f, m, bad_event=False),
    "capacity:MalformedEvents": lambda f, m: _capacity(f, m, bad_event=True),
    "nodegroups:CapacityAnnouncements": _nodegroups,
    **{f"collector:{name}": _collector for name in COLLECTOR_METRICS},
    "waste:MalformedEvents": _waste,
}
"""Each health metric (``<function>:<metric>``) and how its handler is made to publish it."""


def emitted(pair: str, fleet: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Published:
    capsys.readouterr()
    HANDLERS[pair](fleet, monkeypatch)
    return _published(_printed(capsys), pair.split(":")[1])


@pytest.mark.parametrize("pair", sorted(HANDLERS))
def test_each_handler_publishes_its_fleet_and_without_one_its_service_alone(pair, monkeypatch, capsys) -> None:
    service = {"failover": "neuronfleet-failover", "capacity": "neuronfleet-capacity",
               "nodegroups": "neuronfleet-capacity", "collector": "neuronfleet-cost-collector",
               "waste": "neuronfleet-waste"}[pair.split(":")[0]]
    for fleet in FLEETS:
        assert emitted(pair, fleet, monkeypatch, capsys).dimensions == {"service": service, "Fleet": fleet}
    # no fleet after a fleet: nothing left over in Powertools' class-wide dimensions
    assert emitted(pair, NO_FLEET, monkeypatch, capsys).dimensions == {"service": service}


def test_a_blank_fleet_is_refused_naming_the_variable() -> None:
    with pytest.raises(InvalidEnvironment, match=r"environment variable FLEET: got ' '; allowed: the fleet's name"):
        HealthConfig.from_environment({"FLEET": " "})
    assert HealthConfig.from_environment({}) == HealthConfig()
    assert HealthConfig.from_environment({"FLEET": "nf-dev"}).fleet == "nf-dev"
    assert HealthConfig().to_environment() == {} and HealthConfig("nf-dev").to_environment() == {"FLEET": "nf-dev"}


# -------------------------------------------------------------------------------------------- the constructs' alarms


class Cluster:
    """A NeuronEksCluster as NodegroupCapacityAlerts reads it (its node groups' names and ARNs, the cluster's name):
    the dimensions do not depend on the cluster, and a real one costs a kubectl layer per fleet."""

    def __init__(self) -> None:
        self.cluster = SimpleNamespace(cluster_name="training")
        self.node_groups = {"pretrain": SimpleNamespace(
            nodegroup_name="pretrain", nodegroup_arn="arn:aws:eks:us-east-2:111111111111:nodegroup/training/pretrain/x")}


ALARMED: dict[str, Callable[[dict[str, Any]], Any]] = {
    "failover:FailoverErrors": lambda c: c["failover"].metric_failover_errors(),
    "failover:MalformedEvents": lambda c: c["failover"].metric_malformed_events(),
    "capacity:CapacityAnnouncements": lambda c: c["capacity"].metric_announcements(),
    "capacity:MalformedEvents": lambda c: c["capacity"].metric_malformed_events(),
    "nodegroups:CapacityAnnouncements": lambda c: c["nodegroups"].metric_announcements(),
    **{f"collector:{name}": (lambda c, n=name: c["cost"].metric_collector(n)) for name in COLLECTOR_METRICS},
    "waste:MalformedEvents": lambda c: c["cost"].metric_waste_malformed_events(),
}
"""Each health metric and the construct method a user alarms on it with."""


def _fleet_stack(app: cdk.App, fleet: str) -> dict[str, Any]:
    stack = AzStack(app, f"Health{fleet.title().replace('-', '') or 'NoFleet'}", env=ENV)
    net = network(stack)
    topic = sns.Topic(stack, "Alerts", enforce_ssl=True,
                      master_key=cdk.aws_kms.Key(stack, "TopicKey", enable_key_rotation=True))
    chat = NeuronEndpoint(stack, "Chat", vpc=net.vpc, vpc_subnets=net.compute_subnets, topic=topic,
                          settings=EndpointSettings(
                              instance_type="ml.inf2.48xlarge", tensor_parallel_degree=24, batch_size=8,
                              sequence_length=8192, min_instances=2, max_instances=8,
                              model_data_url="s3://models/llama-70b-neuron/model.tar.gz",
                              gpu_variant=GpuVariant(instance_type="ml.p5.48xlarge", min_instances=1, max_instances=2,
                                                     model_data_url="s3://models/llama-70b-hf/m.tar.gz",
                                                     neuron_instances_per_gpu_instance=4)))
    built = {
        "stack": stack,
        "failover": EndpointFailover(stack, "Failover", endpoints=[chat], topic=topic, fleet=fleet),
        "capacity": CapacityAlerts(stack, "Capacity", pool=GpuPool(stack, "Pool", vpc=net.vpc), topic=topic,
                                   fleet=fleet),
        "nodegroups": NodegroupCapacityAlerts(stack, "Nodegroups", cluster=Cluster(), topic=topic,  # type: ignore[arg-type]
                                              fleet=fleet),
        # CostMonitors always has its fleet (fleet_name): no "no fleet" case
        "cost": CostMonitors(stack, "Cost", fleet_name=fleet, topic=topic) if fleet else None,
    }
    failover = built["failover"]
    built["own"] = {"failover:FailoverErrors": stack.get_logical_id(failover.blind_alarm.node.default_child),
                    "failover:MalformedEvents": stack.get_logical_id(failover.malformed_alarm.node.default_child),
                    "capacity:MalformedEvents": stack.get_logical_id(
                        built["capacity"].malformed_alarm.node.default_child)}
    if built["cost"] is not None:
        for name, alarm in built["cost"].collector_alarms.items():
            built["own"][f"collector:{name}"] = stack.get_logical_id(alarm.node.default_child)
    built["topic"] = stack.get_logical_id(topic.node.default_child)
    built["alarms"] = {}
    for pair, metric in ALARMED.items():
        if pair.startswith(("collector", "waste")) and not fleet:
            continue
        alarm = metric(built).create_alarm(stack, pair.replace(":", ""), threshold=1, evaluation_periods=1)
        built["alarms"][pair] = stack.get_logical_id(alarm.node.default_child)
    return built


@pytest.fixture(scope="module")
def synthesised() -> dict[str, dict[str, Any]]:
    """dev, prod and a fleet-less set of the constructs, each in a stack of one account (ENV), one app."""
    app = new_app()
    built = {fleet: _fleet_stack(app, fleet) for fleet in (*FLEETS, NO_FLEET)}
    assembly = app.synth()
    for b in built.values():
        b["template"] = assembly.get_stack_by_name(b["stack"].stack_name).template
    return built


@dataclass(frozen=True)
class Alarmed:
    namespace: str
    metric: str
    dimensions: dict[str, str]
    functions_fleet: set[str | None]


def _alarm(built: dict[str, Any], pair: str) -> Alarmed:
    resources = built["template"]["Resources"]
    props = resources[built["alarms"][pair]]["Properties"]
    assert resources[built["alarms"][pair]]["Type"] == "AWS::CloudWatch::Alarm"
    dims = {d["Name"]: d["Value"] for d in props["Dimensions"]}
    assert len(dims) == len(props["Dimensions"])
    handler = {"failover": "failover.handler.handler", "capacity": "capacity_alert.handler.handler",
               "nodegroups": "capacity_alert.nodegroup_handler.handler", "collector": "cost.collector.handler",
               "waste": "cost.waste.handler"}[pair.split(":")[0]]
    fleets = {r["Properties"]["Environment"]["Variables"].get("FLEET") for r in resources.values()
              if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Handler") == handler}
    return Alarmed(props["Namespace"], props["MetricName"], dims, fleets)


@pytest.mark.parametrize("pair", sorted(ALARMED))
def test_each_alarm_sees_exactly_what_its_handler_publishes(pair, synthesised, monkeypatch, capsys) -> None:
    """Per fleet (dev and prod in one account, and a construct given none): the synthesised alarm's namespace,
    metric and Dimensions are those of the EMF the handler printed when given the environment the construct wrote."""
    seen: dict[str, dict[str, str]] = {}
    for fleet, built in synthesised.items():
        if pair not in built["alarms"]:
            continue
        alarm = _alarm(built, pair)
        (told,) = alarm.functions_fleet  # what the construct told its function: FLEET, or nothing
        assert told == (fleet or None)
        published = emitted(pair, told or NO_FLEET, monkeypatch, capsys)
        assert (alarm.namespace, alarm.metric) == (published.namespace, pair.split(":")[1])
        assert alarm.metric in published.metrics
        assert alarm.dimensions == published.dimensions
        assert alarm.dimensions.get("Fleet") == (fleet or None)
        seen[fleet] = alarm.dimensions
    assert seen["nf-dev"] != seen["nf-prod"]  # dev's counts never reach prod's alarm
    assert {k: v for k, v in seen["nf-dev"].items() if k != "Fleet"} == \
           {k: v for k, v in seen["nf-prod"].items() if k != "Fleet"}


@pytest.mark.parametrize(("pair", "periods", "period", "ok"), [
    ("failover:FailoverErrors", 3, 300, True), ("failover:MalformedEvents", 1, 3600, False),
    ("capacity:MalformedEvents", 1, 3600, False), ("collector:BadRows", 1, 3600, False),
    ("collector:UnpublishableSpend", 1, 3600, False), ("collector:UnconfirmedSpend", 1, 3600, False)])
def test_the_kits_own_health_alarms_see_what_their_handler_publishes_and_tell_the_topic(
        pair, periods, period, ok, synthesised, monkeypatch, capsys) -> None:
    from neuronfleet.cost.monitors import COLLECTOR_ALARMS
    from neuronfleet_contract.cost import COLLECTOR_METRICS

    assert set(COLLECTOR_ALARMS) <= set(COLLECTOR_METRICS)
    checked = [fleet for fleet, built in synthesised.items() if pair in built["own"]]
    assert set(checked) >= {"nf-dev", "nf-prod"}
    """EndpointFailover alarms on its own health (blind to an endpoint in every 5-minute period of 15 minutes, or any
    refused event), CapacityAlerts on any refused event, CostMonitors on a collector run whose figures are
    incomplete: per fleet, on exactly the dimensions the handler publishes, into the topic."""
    for fleet, built in synthesised.items():
        if pair not in built["own"]:  # CostMonitors always has its fleet: no fleet-less case
            continue
        alarm = _alarm({**built, "alarms": built["own"]}, pair)
        (told,) = alarm.functions_fleet
        assert told == (fleet or None) and alarm.dimensions.get("Fleet") == (fleet or None)
        published = emitted(pair, told or NO_FLEET, monkeypatch, capsys)
        assert (alarm.namespace, alarm.metric, alarm.dimensions) == (
            published.namespace, pair.split(":")[1], published.dimensions)
        props = built["template"]["Resources"][built["own"][pair]]["Properties"]
        topic = [{"Ref": built["topic"]}]
        assert (props["Statistic"], props["Period"], props["EvaluationPeriods"], props["Threshold"],
                props["ComparisonOperator"], props["TreatMissingData"]) == (
            "Sum", period, periods, 1, "GreaterThanOrEqualToThreshold", "notBreaching")
        assert props.get("DatapointsToAlarm", 1) == periods
        assert props["AlarmActions"] == topic and props.get("OKActions") == (topic if ok else None)


def test_a_construct_refuses_a_fleet_that_is_not_a_fleet_name() -> None:
    app = cdk.App()
    stack = AzStack(app, "S", env=ENV)
    with pytest.raises(InvalidSettings, match=r"fleet: got 'Nf Prod'.*lower-case letters"):
        NodegroupCapacityAlerts(stack, "N", cluster=Cluster(), topic=sns.Topic(stack, "T"),  # type: ignore[arg-type]
                                fleet="Nf Prod")


# ------------------------------------------------------------------------------------------- the reference app


HEALTH_HANDLERS = ("failover.handler.handler", "capacity_alert.handler.handler",
                   "capacity_alert.nodegroup_handler.handler", "cost.collector.handler", "cost.waste.handler")


def _example_functions() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for fleet in EXAMPLE_FLEETS:
        for path in sorted((ROOT / "tests" / "data" / "templates" / fleet).glob("*.json")):
            for r in json.loads(path.read_text())["Resources"].values():
                if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Handler") in HEALTH_HANDLERS:
                    yield fleet, r["Properties"]["Handler"], r["Properties"]["Environment"]["Variables"]


def test_the_reference_app_tells_every_health_publishing_function_its_fleet() -> None:
    """The snapshots (equal to the synthesised templates: test_template_snapshots): each example fleet's failover,
    capacity alerts, node-group alerts, collector and waste detector run with FLEET = the fleet file's name."""
    from tests.conftest import fleet_file

    found = list(_example_functions())
    handlers = {h for _, h, _ in found}
    # every one of them is in some example fleet; the failover of prod with its hot standby (tests/conftest.py
    # HOT_PROD) runs here, told its fleet (smoke's hot standby is a one-run fleet's)
    assert handlers | {"failover.handler.handler"} == set(HEALTH_HANDLERS)
    from tests.cdk_support import SynthesizedFleet
    from tests.conftest import HOT_PROD

    hot = SynthesizedFleet(fleet_file(HOT_PROD))
    (failover,) = [r["Properties"] for r in hot.template_json("inference")["Resources"].values()
                   if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Handler") == "failover.handler.handler"]
    assert failover["Environment"]["Variables"]["FLEET"] == hot.fleet.name
    for fleet, handler, env in found:
        assert env.get("FLEET") == fleet_file(fleet).name, (fleet, handler)
