"""Each handler's settings: environment -> settings -> environment round trips, defaults in one home, and
clear errors (the variable, the value, what is allowed) for a missing or malformed variable."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from neuronfleet.lambdas.failover.logic import EndpointBounds, Policy
from neuronfleet_contract import environment
from neuronfleet_contract.accelerators import builtin as builtin_accelerators
from neuronfleet_contract.alarms import default_alarms
from neuronfleet_contract.capacity_alert import CapacityAlertConfig, GpuPoolQueue, GpuType
from neuronfleet_contract.cost import CollectorConfig, ReportConfig, WasteConfig
from neuronfleet_contract.environment import InvalidEnvironment
from neuronfleet_contract.failover import FailoverConfig, WatchedEndpoint
from neuronfleet_contract.namespaces import NEURON_CORE_UTILIZATION, NEURON_NAMESPACE, SPEND_NAMESPACE, WORKLOAD_NAMESPACE
from neuronfleet_contract.prices import builtin_table

TOPIC = "arn:aws:sns:us-east-2:123456789012:alerts"
TOKEN = "${Token[TOKEN.123]}"
"""What a CDK token looks like as a string: to_environment must pass it through untouched."""

POOL = GpuPoolQueue(queue_arn="arn:aws:batch:us-east-2:123456789012:job-queue/gpu", max_vcpus=384,
               cuda_only_workloads=("custom-cuda-kernels",),
               types=(GpuType(instance_type="p5.48xlarge", gpus=8, gpu_name="H100", efa=32, vcpus=192),
                      GpuType(instance_type="g6e.48xlarge", gpus=8, gpu_name="L40S", efa=4, vcpus=192)))
CAPACITY = EndpointBounds(neuron_min=2, neuron_max=8, gpu_min=1, gpu_max=2, neuron_instances_per_gpu_instance=4)
CHAT = WatchedEndpoint(alarms=("chat-latency", "chat-5xx"), capacity=CAPACITY, latency_limit_ms=8000)
PRICE = {"usd_per_hour": "55.04", "source": "https://aws.amazon.com/ec2/pricing/on-demand/", "as_of": "2025-10-01"}

EXAMPLES: list[Any] = [
    FailoverConfig(endpoints={"chat": CHAT}, topic_arn=TOPIC, state_table="failover"),
    FailoverConfig(endpoints={"chat": CHAT, "embed": WatchedEndpoint(alarms=("b", "c"), capacity=CAPACITY,
                                                                     latency_limit_ms=250.5, gpu_alarms=("d",))},
                     topic_arn=TOPIC, state_table="failover", capacity_timeout=timedelta(minutes=30), min_dwell=timedelta(0),
                     canary_window=timedelta(minutes=20), canary_weight=0.1, canary_min_invocations=100,
                     canary_max_error_percent=0.5),
    CapacityAlertConfig(pool=POOL, topic_arn=TOPIC, ledger_table="announced"),
    CapacityAlertConfig(pool=GpuPoolQueue(queue_arn="q", types=POOL.types[:1], max_vcpus=192), topic_arn=TOPIC,
                        ledger_table="announced", reservation_ids=("cr-0123456789abcdef0",),
                        resource_group_arns=("arn:aws:resource-groups:us-east-2:111111111111:group/blocks",),
                        ultraserver_types=("trn2u.48xlarge",)),
    CollectorConfig(ledger_table="ledger", instance_types=("trn2.48xlarge", "ml.inf2.xlarge")),
    CollectorConfig(ledger_table="ledger", instance_types=("p5.48xlarge",), lookback_days=14,
                    metrics_namespace="Team/Cost", fleet="nf-prod", basis="unblended", backfill_days=30,
                    month_close_days=0, capacity_blocks=False, source="athena", athena_workgroup="nf-cur2-wg",
                    athena_table="cur_db.cur2"),
    ReportConfig(fleet="nf-prod", ledger_table="ledger", report_bucket="reports", topic_arn=TOPIC,
                 prices={"p5.48xlarge": PRICE}),
    ReportConfig(fleet="nf-prod", ledger_table="ledger", report_bucket="reports", topic_arn=TOPIC, prices={},
                 period_days=7, tokens_namespace="Team/Work", accelerators={"inf2.xlarge": ("inferentia", 32)},
                 live_prices=False, price_cache_days=2),
    WasteConfig(topic_arn=TOPIC, ledger_table="announced", fleet="nf-prod"),
    WasteConfig(topic_arn=TOPIC, ledger_table="announced", neuron_namespace="Team/Neuron", utilization_metric="Busy",
                idle_percent=12.5, idle_hours=3, fleet="nf-prod", reservation_ids=("cr-1",)),
]


@pytest.mark.parametrize("settings", EXAMPLES, ids=lambda s: type(s).__name__)
def test_settings_round_trip_through_the_environment(settings: Any) -> None:
    env = settings.to_environment()
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    assert type(settings).from_environment(env) == settings
    again = type(settings).from_environment(env).to_environment()
    assert type(settings).from_environment(again) == settings


@pytest.mark.parametrize("settings", EXAMPLES[::2], ids=lambda s: type(s).__name__)
def test_from_environment_reads_the_process_environment_by_default(settings: Any, monkeypatch) -> None:
    for name, value in settings.to_environment().items():
        monkeypatch.setenv(name, value)
    assert type(settings).from_environment() == settings


def test_environment_variable_names_are_the_ones_the_constructs_set() -> None:
    assert set(EXAMPLES[0].to_environment()) == {
        "FAILOVER_ENDPOINTS", "ALERTS_TOPIC_ARN", "FAILOVER_TABLE", "MIN_DWELL_MINUTES", "CAPACITY_TIMEOUT_MINUTES",
        "CANARY_WINDOW_MINUTES", "CANARY_WEIGHT", "CANARY_MIN_INVOCATIONS", "CANARY_MAX_ERROR_PERCENT"}
    assert set(EXAMPLES[2].to_environment()) == {"GPU_POOL", "ALERTS_TOPIC_ARN", "ANNOUNCEMENTS_TABLE", "FLEET_RESERVATIONS",
                                                 "FLEET_RESERVATION_GROUPS", "ULTRASERVER_TYPES"}
    assert set(EXAMPLES[4].to_environment()) == {"LEDGER_TABLE", "INSTANCE_TYPES", "LOOKBACK_DAYS", "METRICS_NAMESPACE",
                                                 "COST_BASIS", "BACKFILL_DAYS", "MONTH_CLOSE_DAYS", "CAPACITY_BLOCKS",
                                                 "SPEND_SOURCE"}
    assert set(EXAMPLES[5].to_environment()) == set(EXAMPLES[4].to_environment()) | {
        "FLEET", "ATHENA_WORKGROUP", "ATHENA_TABLE"}
    # no endpoint list: the report and the waste detector find the fleet's endpoints by its tag when they run
    assert set(EXAMPLES[6].to_environment()) == {"FLEET", "LEDGER_TABLE", "REPORT_BUCKET", "ALERTS_TOPIC_ARN",
                                                 "PRICES", "PERIOD_DAYS", "TOKENS_NAMESPACE",
                                                 "COST_BASIS", "PRICE_STALE_DAYS", "ACCELERATORS", "LIVE_PRICES",
                                                 "PRICE_CACHE_DAYS"}
    assert set(EXAMPLES[8].to_environment()) == {"ALERTS_TOPIC_ARN", "ANNOUNCEMENTS_TABLE", "NEURON_NAMESPACE",
                                                 "UTILIZATION_METRIC", "IDLE_PERCENT", "IDLE_HOURS", "FLEET",
                                                 "RESERVATION_IDS"}


def test_defaults_have_one_home() -> None:
    failover = FailoverConfig.from_environment({"FAILOVER_ENDPOINTS": FAILOVER_ENV["FAILOVER_ENDPOINTS"],
                                                "ALERTS_TOPIC_ARN": TOPIC, "FAILOVER_TABLE": "failover"})
    assert (failover.capacity_timeout, failover.min_dwell) == (timedelta(minutes=45), timedelta(minutes=10))
    assert failover.policy == Policy()
    collector = CollectorConfig.from_environment({"LEDGER_TABLE": "t", "INSTANCE_TYPES": '["trn2.48xlarge"]'})
    assert (collector.lookback_days, collector.metrics_namespace) == (3, SPEND_NAMESPACE)
    report = ReportConfig.from_environment({"FLEET": "f", "LEDGER_TABLE": "t", "REPORT_BUCKET": "b",
                                            "ALERTS_TOPIC_ARN": TOPIC, "PRICES": "{}"})
    assert (report.period_days, report.tokens_namespace) == (30, WORKLOAD_NAMESPACE)
    # no ACCELERATORS, PRICES {}: the built-in map and table the function's code ships (neuronfleet_contract/data)
    assert (report.accelerators, report.prices, report.price_region) == (builtin_accelerators(), builtin_table(), "")
    assert (report.live_prices, report.price_cache_days) == (True, 7)  # live prices, read again after a week
    waste = WasteConfig.from_environment({"ALERTS_TOPIC_ARN": TOPIC, "ANNOUNCEMENTS_TABLE": "t", "FLEET": "nf-prod"})
    assert (waste.idle_percent, waste.idle_hours) == (20, 6)
    assert (waste.neuron_namespace, waste.utilization_metric) == (NEURON_NAMESPACE, NEURON_CORE_UTILIZATION)


def test_to_environment_passes_tokens_through_and_takes_the_stacks_json_encoder() -> None:
    calls: list[Any] = []

    def to_json_string(value: Any) -> str:  # stands in for Stack.of(scope).to_json_string
        calls.append(value)
        return f"<json {len(calls)}>"

    watched = WatchedEndpoint(alarms=(TOKEN,), capacity=CAPACITY, latency_limit_ms=1)
    env = FailoverConfig(endpoints={TOKEN: watched}, topic_arn=TOKEN, state_table=TOKEN).to_environment(
        to_json=to_json_string)
    assert env["FAILOVER_ENDPOINTS"] == "<json 1>" and calls == [{TOKEN: watched.to_json()}]
    assert env["ALERTS_TOPIC_ARN"] == TOKEN
    pool = GpuPoolQueue(queue_arn=TOKEN, types=POOL.types, max_vcpus=384)
    env = CapacityAlertConfig(pool=pool, topic_arn=TOKEN, ledger_table=TOKEN).to_environment(to_json=to_json_string)
    assert env["ANNOUNCEMENTS_TABLE"] == TOKEN
    assert calls[-4]["queue_arn"] == TOKEN and calls[-4]["cuda_only_workloads"] == []
    env = ReportConfig(fleet=TOKEN, ledger_table=TOKEN, report_bucket=TOKEN, topic_arn=TOKEN,
                       prices={}).to_environment()
    assert env["FLEET"] == TOKEN and env["REPORT_BUCKET"] == TOKEN
    assert CollectorConfig(ledger_table=TOKEN, instance_types=("x",)).to_environment()["LEDGER_TABLE"] == TOKEN
    assert WasteConfig(topic_arn=TOKEN, ledger_table=TOKEN).to_environment()["ALERTS_TOPIC_ARN"] == TOKEN


FAILOVER_ENV = EXAMPLES[0].to_environment()
CAPACITY_ENV = EXAMPLES[2].to_environment()
COLLECTOR_ENV = EXAMPLES[4].to_environment()
REPORT_ENV = EXAMPLES[6].to_environment()
WASTE_ENV = EXAMPLES[8].to_environment()


def _without(env: dict[str, str], name: str) -> dict[str, str]:
    return {k: v for k, v in env.items() if k != name}


@pytest.mark.parametrize(("cls", "env", "variable", "message"), [
    (FailoverConfig, _without(FAILOVER_ENV, "FAILOVER_ENDPOINTS"), "FAILOVER_ENDPOINTS",
     'got nothing (the variable is not set); allowed: a JSON object {endpoint name: {"alarms": [alarm name, ...]'),
    (FailoverConfig, {**FAILOVER_ENV, "FAILOVER_ENDPOINTS": "{chat}"}, "FAILOVER_ENDPOINTS", "got '{chat}'"),
    (FailoverConfig, {**FAILOVER_ENV, "FAILOVER_ENDPOINTS": '{"chat": []}'}, "FAILOVER_ENDPOINTS",
     "(endpoint 'chat': expected an object)"),
    (FailoverConfig, {**FAILOVER_ENV, "FAILOVER_ENDPOINTS": FAILOVER_ENV["FAILOVER_ENDPOINTS"].replace(
        '"alarms": ["chat-latency", "chat-5xx"]', '"alarms": []')}, "FAILOVER_ENDPOINTS", "(endpoint 'chat': no alarms)"),
    (FailoverConfig, {**FAILOVER_ENV, "FAILOVER_ENDPOINTS": FAILOVER_ENV["FAILOVER_ENDPOINTS"].replace(
        '"neuron_instances_per_gpu_instance": 4', '"neuron_instances_per_gpu_instance": 0')}, "FAILOVER_ENDPOINTS",
     "(endpoint 'chat': neuron_instances_per_gpu_instance must be above 0, got 0.0)"),
    (FailoverConfig, {**FAILOVER_ENV, "FAILOVER_ENDPOINTS": "{}"}, "FAILOVER_ENDPOINTS", "(expected a non-empty object)"),
    (FailoverConfig, _without(FAILOVER_ENV, "ALERTS_TOPIC_ARN"), "ALERTS_TOPIC_ARN",
     "got nothing (the variable is not set); allowed: the ARN of the fleet's SNS topic"),
    (FailoverConfig, {**FAILOVER_ENV, "ALERTS_TOPIC_ARN": " "}, "ALERTS_TOPIC_ARN", "got ' '"),
    (FailoverConfig, {**FAILOVER_ENV, "CANARY_WINDOW_MINUTES": "15m"}, "CANARY_WINDOW_MINUTES",
     "got '15m'; allowed: a whole number of minutes, at least 0"),
    (FailoverConfig, {**FAILOVER_ENV, "CAPACITY_TIMEOUT_MINUTES": "0"}, "CAPACITY_TIMEOUT_MINUTES",
     "got '0'; allowed: a whole number of minutes, at least 1"),
    (FailoverConfig, {**FAILOVER_ENV, "CANARY_WEIGHT": "0.9"}, "CANARY_WEIGHT", "above 0 and at most 0.5"),
    (FailoverConfig, {**FAILOVER_ENV, "CANARY_MIN_INVOCATIONS": "0"}, "CANARY_MIN_INVOCATIONS", "at least 1"),
    (FailoverConfig, {**FAILOVER_ENV, "MIN_DWELL_MINUTES": "-1"}, "MIN_DWELL_MINUTES", "got '-1'"),
    (CapacityAlertConfig, _without(CAPACITY_ENV, "GPU_POOL"), "GPU_POOL", 'allowed: a JSON object {"queue_arn": str'),
    (CapacityAlertConfig, {**CAPACITY_ENV, "GPU_POOL": '{"queue_arn": "q", "max_vcpus": 1, "types": []}'},
     "GPU_POOL", "(types is empty)"),
    (CapacityAlertConfig, {**CAPACITY_ENV, "GPU_POOL": CAPACITY_ENV["GPU_POOL"].replace('"gpus": 8', '"gpus": "8"')},
     "GPU_POOL", "('8' is not a whole number of at least 0)"),
    (CapacityAlertConfig, {**CAPACITY_ENV, "GPU_POOL": '{"queue_arn": "q"}'}, "GPU_POOL", "got '{\"queue_arn\": \"q\"}'"),
    (CapacityAlertConfig, _without(CAPACITY_ENV, "ALERTS_TOPIC_ARN"), "ALERTS_TOPIC_ARN", "the ARN of the fleet's"),
    (CapacityAlertConfig, _without(CAPACITY_ENV, "ANNOUNCEMENTS_TABLE"), "ANNOUNCEMENTS_TABLE",
     "allowed: the name of the announcements table"),
    (CapacityAlertConfig, {**CAPACITY_ENV, "FLEET_RESERVATIONS": '["cr-1", ""]'}, "FLEET_RESERVATIONS",
     "allowed: a JSON list of non-blank strings"),
    (CollectorConfig, _without(COLLECTOR_ENV, "LEDGER_TABLE"), "LEDGER_TABLE", "allowed: the name of the cost ledger"),
    (CollectorConfig, {**COLLECTOR_ENV, "INSTANCE_TYPES": "[]"}, "INSTANCE_TYPES", "(the list is empty)"),
    (CollectorConfig, {**COLLECTOR_ENV, "INSTANCE_TYPES": "trn2.48xlarge"}, "INSTANCE_TYPES",
     "got 'trn2.48xlarge'; allowed: a JSON list of instance types"),
    (CollectorConfig, {**COLLECTOR_ENV, "LOOKBACK_DAYS": "0"}, "LOOKBACK_DAYS",
     "got '0'; allowed: a whole number of days, at least 1"),
    (CollectorConfig, {**COLLECTOR_ENV, "METRICS_NAMESPACE": ""}, "METRICS_NAMESPACE", "allowed: a CloudWatch namespace"),
    (ReportConfig, _without(REPORT_ENV, "FLEET"), "FLEET", "allowed: the fleet's name"),
    (ReportConfig, _without(REPORT_ENV, "REPORT_BUCKET"), "REPORT_BUCKET", "the name of the report bucket"),
    (ReportConfig, _without(REPORT_ENV, "PRICES"), "PRICES", 'allowed: a JSON object {instance type: {"usd_per_hour"'),
    (ReportConfig, {**REPORT_ENV, "PRICES": '{"p5.48xlarge": {"source": "x"}}'}, "PRICES",
     "(p5.48xlarge: expected an object with usd_per_hour)"),
    (ReportConfig, {**REPORT_ENV, "ACCELERATORS": '{"inf2.xlarge": "x32"}'}, "ACCELERATORS",
     "got '{\"inf2.xlarge\": \"x32\"}'"),
    (ReportConfig, {**REPORT_ENV, "PERIOD_DAYS": "a month"}, "PERIOD_DAYS", "got 'a month'"),
    (ReportConfig, {**REPORT_ENV, "LIVE_PRICES": "yes"}, "LIVE_PRICES", "got 'yes'; allowed: true | false"),
    (ReportConfig, {**REPORT_ENV, "PRICE_CACHE_DAYS": "0"}, "PRICE_CACHE_DAYS", "at least 1"),
    (WasteConfig, {}, "ALERTS_TOPIC_ARN", "got nothing"),
    (WasteConfig, {**WASTE_ENV, "IDLE_PERCENT": "120"}, "IDLE_PERCENT",
     "got '120'; allowed: a number of percent above 0 and at most 100"),
    (WasteConfig, {**WASTE_ENV, "IDLE_PERCENT": "nan"}, "IDLE_PERCENT", "got 'nan'"),
    (WasteConfig, {**WASTE_ENV, "IDLE_HOURS": "6.5"}, "IDLE_HOURS", "got '6.5'; allowed: a whole number of hours"),
    (WasteConfig, {**WASTE_ENV, "UTILIZATION_METRIC": ""}, "UTILIZATION_METRIC", "allowed: a CloudWatch metric name"),
])
def test_a_missing_or_malformed_variable_is_named_with_its_value_and_what_is_allowed(cls, env, variable, message) -> None:
    with pytest.raises(InvalidEnvironment) as caught:
        cls.from_environment(env)
    assert caught.value.variable == variable
    assert str(caught.value).startswith(f"environment variable {variable}: got ")
    assert message in str(caught.value)


def test_hysteresis_is_whole_minutes() -> None:
    with pytest.raises(ValueError, match=r"FailoverConfig.canary_window: got 0:00:30; allowed: a whole number of min"):
        FailoverConfig(endpoints={"chat": CHAT}, topic_arn=TOPIC, state_table="t", canary_window=timedelta(seconds=30))


GROUP_PREFIX = "arn:aws:resource-groups:us-east-2:111111111111:group/"


def test_a_hundred_resource_groups_fit_the_capacity_functions_environment() -> None:
    groups = tuple(f"{GROUP_PREFIX}ultra-{i:03d}" for i in range(100))
    env = CapacityAlertConfig(pool=POOL, topic_arn=TOPIC, ledger_table="announced",
                              resource_group_arns=groups).to_environment()
    assert json.loads(env["FLEET_RESERVATION_GROUPS"]) == {"prefix": GROUP_PREFIX,
                                                          "names": [g.removeprefix(GROUP_PREFIX) for g in groups]}
    assert sum(len(k) + len(v) for k, v in env.items()) < 4096 < len(json.dumps(list(groups)))
    assert CapacityAlertConfig.from_environment(env).resource_group_arns == groups


def test_the_collector_reads_a_hundred_resource_groups_from_their_shared_prefix() -> None:
    groups = tuple(f"{GROUP_PREFIX}ultra-{i:03d}" for i in range(100))
    env = CollectorConfig(ledger_table="ledger", instance_types=("trn2u.48xlarge",),
                          resource_group_arns=groups).to_environment()
    assert json.loads(env["FLEET_RESERVATION_GROUPS"])["prefix"] == GROUP_PREFIX
    assert sum(len(k) + len(v) for k, v in env.items()) < 4096
    assert CollectorConfig.from_environment(env).resource_group_arns == groups


@pytest.mark.parametrize("values", [
    [f"{GROUP_PREFIX}a"],  # one: nothing to share
    [f"{GROUP_PREFIX}a", "${Token[TOKEN.12]}"],  # a token is never split
    ["${Token[TOKEN.12]}", "${Token[TOKEN.13]}"],
    ["group-a", "group-b"],  # no ARN separator to cut at
    [GROUP_PREFIX + "a", GROUP_PREFIX],  # a value that would leave an empty name
])
def test_values_that_cannot_share_a_prefix_stay_a_list(values: list[str]) -> None:
    assert environment.shared_prefix(values) == values


def test_groups_of_two_accounts_share_the_prefix_up_to_the_region_and_round_trip() -> None:
    groups = (f"{GROUP_PREFIX}ultra-00", f"{GROUP_PREFIX}ultra-01", "arn:aws:resource-groups:us-east-2:222222222222:group/x")
    env = CapacityAlertConfig(pool=POOL, topic_arn=TOPIC, ledger_table="announced",
                              resource_group_arns=groups).to_environment()
    assert json.loads(env["FLEET_RESERVATION_GROUPS"])["prefix"] == "arn:aws:resource-groups:us-east-2:"
    assert CapacityAlertConfig.from_environment(env).resource_group_arns == groups


def test_a_shared_prefix_is_cut_at_the_last_separator_they_share() -> None:
    doc = environment.shared_prefix([f"{GROUP_PREFIX}blocks-1", f"{GROUP_PREFIX}blocks-2"])
    assert doc == {"prefix": GROUP_PREFIX, "names": ["blocks-1", "blocks-2"]}
    assert environment.prefixed_strings(doc) == (f"{GROUP_PREFIX}blocks-1", f"{GROUP_PREFIX}blocks-2")
    with pytest.raises(ValueError, match="prefix"):
        environment.prefixed_strings({"prefix": " ", "names": ["a"]})


def test_the_failover_derives_alarm_names_it_is_not_given_and_keeps_others() -> None:
    name = "nfprodinference-chat-04507f82"
    derived = WatchedEndpoint(alarms=default_alarms(name), gpu_alarms=default_alarms(name, gpu=True), capacity=CAPACITY,
                              latency_limit_ms=800)
    own = WatchedEndpoint(alarms=("team-latency",), capacity=CAPACITY, latency_limit_ms=800)
    env = FailoverConfig(endpoints={name: derived, "other": own}, topic_arn=TOPIC,
                         state_table="failover").to_environment()
    doc = json.loads(env["FAILOVER_ENDPOINTS"])
    assert "alarms" not in doc[name] and "gpu_alarms" not in doc[name] and doc["other"]["alarms"] == ["team-latency"]
    assert doc["other"]["gpu_alarms"] == []  # none given: none derived
    assert default_alarms(name) == (f"{name}-latency-p99", f"{name}-errors-5xx", f"{name}-model-errors")
    assert default_alarms(name, gpu=True) == (f"{name}-gpu-latency-p99", f"{name}-gpu-errors-5xx",
                                              f"{name}-gpu-model-errors")
    assert FailoverConfig.from_environment(env).endpoints == {name: derived, "other": own}


def test_eighteen_failover_endpoints_with_the_longest_names_fit_the_environment() -> None:
    endpoints = {f"{'x' * 58}-{i:04d}": WatchedEndpoint(alarms=default_alarms(f"{'x' * 58}-{i:04d}"),
                                                        gpu_alarms=default_alarms(f"{'x' * 58}-{i:04d}", gpu=True),
                                                        capacity=CAPACITY, latency_limit_ms=12345.5)
                 for i in range(18)}  # (carrying the alarm names of both variants: 4)
    env = FailoverConfig(endpoints=endpoints, topic_arn=TOPIC, state_table="x" * 255).to_environment()
    assert sum(len(k) + len(v) for k, v in env.items()) < 4096


def test_the_price_table_packs_each_provenance_once_and_unpacks_to_itself() -> None:
    """Each distinct (source, as_of, region, sourced) travels once: a type added with a provenance already seen costs
    only its price. The older single-object ``"*"`` still reads."""
    from neuronfleet.facts.prices import price_table
    from neuronfleet_contract.cost import _pack_prices, _prices

    table = price_table(region="us-east-2")
    packed = json.loads(json.dumps(_pack_prices(table)))
    assert _prices(packed) == table
    provenances = {tuple(p.get(k) for k in ("source", "as_of", "region", "sourced")) for p in table.values()}
    assert len(packed["*"]) == len(provenances) < len(table)
    assert packed["trn1.32xlarge"] == table["trn1.32xlarge"]["usd_per_hour"]  # a price with the first provenance
    assert any(isinstance(v, list) and v[1] > 0 for t, v in packed.items() if t != "*")  # [price, index]
    assert _prices({"*": {"source": "s", "as_of": "2026-01-01"}, "x.large": {"usd_per_hour": "1", "as_of": None}}) \
        == {"x.large": {"source": "s", "usd_per_hour": "1"}}
    with pytest.raises(ValueError, match='"p" must index'):
        _prices({"*": [{"source": "s"}], "x.large": {"usd_per_hour": "1", "p": 3}})
