"""One home per rule: the construct API and the fleet file refuse the same mistakes with the same message.

For each rule, the same mistake is made twice: once in a fleet file (YAML, through ``parse_fleet``) and once
from Python (a settings object, or the construct itself where the rule needs the stack's region or another
construct argument). The fleet file's message must be the construct's message with the field's path in front.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest

from neuronfleet import (
    CostMonitors,
    CostMonitorSettings,
    EndpointSettings,
    FleetAlerts,
    FleetConfigError,
    FleetNetwork,
    GpuPoolSettings,
    InvalidSettings,
    NetworkSettings,
    Problem,
    StaticAzStack,
    TrainiumCluster,
    TrainiumClusterSettings,
    parse_fleet,
)

CLUSTER = {"name": "train", "instance_type": "trn2.48xlarge", "count": 2}
ENDPOINT = {"name": "chat", "instance_type": "ml.inf2.24xlarge", "hf_model_id": "org/model", "tensor_parallel_degree": 12,
            "allow_non_cached_model": False}
NETWORK = {"availability_zones": ["us-east-2a", "us-east-2b"], "training_az": "us-east-2a"}
BASE: dict[str, Any] = {"name": "nf-test", "phase": "pilot", "region": "us-east-2", "network": NETWORK,
                        "training_clusters": [CLUSTER], "endpoints": [ENDPOINT]}


def from_fleet(section: str, changes: dict[str, Any]) -> list[Problem]:
    """Problems of BASE with ``changes`` merged into one section (``network``, ``training_clusters[0]``, ...)."""
    doc = copy.deepcopy(BASE)
    target = doc.setdefault(section.split("[")[0], {})
    if section.endswith("[0]"):
        target = target[0]
    target.update(changes)
    with pytest.raises(FleetConfigError) as info:
        parse_fleet(doc)
    return info.value.problems


def from_python(build: Callable[[], Any]) -> list[Problem]:
    with pytest.raises(InvalidSettings) as info:
        build()
    return info.value.problems


def without_name(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "name"}


def stack(region: str = "us-east-2") -> cdk.Stack:
    azs = [f"{region}a", f"{region}b"]
    return StaticAzStack(cdk.App(), "S", availability_zones=azs, env=cdk.Environment(account="111111111111",
                                                                                     region=region))


# (fleet-file section, the mistake) -> the same mistake through a settings object
SETTINGS_CASES: list[tuple[str, type[Any], dict[str, Any], dict[str, Any]]] = [
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER), {"count": 0}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER), {"count": True}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER),
     {"instance_type": "trn2u.48xlarge", "count": 6, "allow_unlisted_region": True}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER), {"instance_type": "p5.48xlarge"}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER), {"fsx_storage_gib": 3600}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER), {"fsx_backup_retention_days": 7}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER), {"root_volume_gib": 0}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER), {"capacity": "reserved"}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER),
     {"capacity": {"type": "odcr", "reservation_id": "cr-xyz"}}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER), {"capacity": {"type": "capacity-block"}}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER),
     {"capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0", "placement_group": True}}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER),  # Capacity Blocks are not sold for it
     {"instance_type": "trn1.2xlarge", "capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER),  # one instance block holds at most 64
     {"count": 65, "capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER), {"ami": {"ami_id": "ami-zz"}}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER), {"ami": {"ssm_parameter": "no/slash"}}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER), {"training_image": "my image"}),
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER), {"count": 1002}),  # Batch's 1,000 nodes
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER),
     {"count": 5002, "job_nodes": 1000}),  # ECS's 5,000 instances per cluster
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER), {"job_timeout_s": 59}),  # Batch's 60
    ("training_clusters[0]", TrainiumClusterSettings, without_name(CLUSTER),  # longer than the longest block
     {"job_timeout_s": 182 * 86400, "capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT), {"batch_size": 0}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT), {"volume_size_gib": 0}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT), {"target_invocations_per_instance": -1}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT), {"target_invocations_per_instance": float("inf")}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT), {"tensor_parallel_degree": 5}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT), {"instance_type": "ml.g5.xlarge"}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT), {"min_instances": 3}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT), {"container": "custom"}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT), {"hf_model_id": "my model"}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT), {"model_data_url": "s3://bucket/m.tar.gz"}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT), {"startup_health_check_timeout_s": 60}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT), {"gpu_variant": {"instance_type": "ml.m5.xlarge"}}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT),
     {"scheduled_scaling": [{"name": "day", "schedule": "cron(every day)", "min_instances": 1, "max_instances": 2}]}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT),
     {"scheduled_scaling": [{"name": "day", "schedule": "rate(0 minutes)", "min_instances": 1, "max_instances": 2}]}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT),
     {"scheduled_scaling": [{"name": "d", "schedule": "rate(1 day)", "min_instances": 1, "max_instances": 2}] * 2}),
    ("endpoints[0]", EndpointSettings, without_name(ENDPOINT), {"surprise": 1}),
    ("network", NetworkSettings, NETWORK, {"availability_zones": ["us-east-2a"]}),
    ("network", NetworkSettings, NETWORK, {"training_az": "us-east-2c"}),
    ("network", NetworkSettings, NETWORK, {"nat_gateways": 3}),
    ("network", NetworkSettings, NETWORK, {"cidr": "10.0.0.0/8"}),
    ("network", NetworkSettings, NETWORK, {"flow_logs_retention_days": 10}),
    ("fallback", GpuPoolSettings, {}, {"instance_types": []}),
    ("fallback", GpuPoolSettings, {}, {"instance_types": ["trn2.48xlarge"]}),
    ("fallback", GpuPoolSettings, {}, {"max_vcpus": 96}),
    ("cost_monitors", CostMonitorSettings, {}, {"monthly_budget_usd": -5}),
    ("cost_monitors", CostMonitorSettings, {}, {"monthly_budget_usd": float("inf")}),
    ("cost_monitors", CostMonitorSettings, {}, {"idle_utilisation_percent": 150}),
    ("cost_monitors", CostMonitorSettings, {}, {"idle_hours": 0}),
]


@pytest.mark.parametrize(("section", "settings", "base", "mistake"), SETTINGS_CASES,
                         ids=[f"{c[0]}-{next(iter(c[3]))}" for c in SETTINGS_CASES])
def test_same_mistake_same_message(section: str, settings: type[Any], base: dict[str, Any],
                                   mistake: dict[str, Any]) -> None:
    python = from_python(lambda: settings(**{**base, **mistake}))
    yaml = from_fleet(section, mistake)
    if "surprise" in mistake:  # a fleet-file entry knows one more key (its name) than the settings object
        ((y,), (p,)) = yaml, python
        assert (y.path, y.value) == (f"{section}.surprise", 1) and y.allowed.startswith(p.allowed)
        return
    assert yaml == [p.under(section) for p in python]
    assert all(p.allowed and "got" in str(p) for p in python)


# Rules that need the stack's region or a construct argument outside the settings: the construct raises them.

def test_azs_of_another_region() -> None:
    settings = NetworkSettings(availability_zones=["us-west-2a", "us-west-2b"], training_az="us-west-2a")
    python = from_python(lambda: FleetNetwork(stack("us-east-2"), "N", settings=settings))
    yaml = from_fleet("network", {"availability_zones": ["us-west-2a", "us-west-2b"], "training_az": "us-west-2a"})
    assert yaml == [p.under("network") for p in python] and len(python) == 2


def test_type_not_offered_in_the_region() -> None:
    block = {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}
    settings = TrainiumClusterSettings(instance_type="trn2u.48xlarge", count=4, capacity=block)
    s = stack("us-east-2")
    net = FleetNetwork(s, "N", settings=NetworkSettings(**NETWORK))
    python = from_python(lambda: TrainiumCluster(s, "C", vpc=net.vpc, subnet=net.training_subnet, settings=settings))
    yaml = from_fleet("training_clusters[0]", {"instance_type": "trn2u.48xlarge", "count": 4, "capacity": block})
    assert yaml == [p.under("training_clusters[0]") for p in python]


@pytest.mark.parametrize("changes", [
    # an explicit image whose runtime library (2.32) cannot run on the pinned ECS Neuron AMI's driver (2.30 line)
    {"training_image": "pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04"},
    # a custom image whose declared SDK (2.29.1: runtime 2.31) cannot either
    {"training_image": "111111111111.dkr.ecr.us-east-2.amazonaws.com/team/train:v7", "training_image_sdk": "2.29.1"},
    # trn1 with no image: its default (the last pytorch-training-neuronx) cannot, and no published image can
    {"instance_type": "trn1.32xlarge", "count": 1},
])
def test_an_image_whose_runtime_cannot_run_on_the_amis_driver(changes) -> None:
    settings = TrainiumClusterSettings(**{**without_name(CLUSTER), **changes})
    s = stack("us-east-2")
    net = FleetNetwork(s, "N", settings=NetworkSettings(**NETWORK))
    python = from_python(lambda: TrainiumCluster(s, "C", vpc=net.vpc, subnet=net.training_subnet, settings=settings))
    yaml = from_fleet("training_clusters[0]", changes)
    assert yaml == [p.under("training_clusters[0]") for p in python]
    (problem,) = python
    assert problem.path == "training_image" and "runs on Neuron driver 2.30" in problem.allowed


def test_emails_and_fleet_name_read_the_same() -> None:
    python = from_python(lambda: FleetAlerts(stack(), "A", emails=["not-an-email"]))
    doc = copy.deepcopy(BASE) | {"notification_emails": ["not-an-email"]}
    with pytest.raises(FleetConfigError) as info:
        parse_fleet(doc)
    (yaml,) = info.value.problems
    assert (yaml.path, yaml.value, yaml.allowed) == ("notification_emails[0]", python[0].value, python[0].allowed)
    topic = cdk.aws_sns.Topic(stack(), "T")
    python = from_python(lambda: CostMonitors(topic.stack, "C", fleet_name="My Fleet!", topic=topic))
    (yaml,) = _fleet_name_problem("My Fleet!")
    assert (yaml.value, yaml.allowed) == (python[0].value, python[0].allowed)


def _fleet_name_problem(name: str) -> list[Problem]:
    doc = copy.deepcopy(BASE) | {"name": name}
    with pytest.raises(FleetConfigError) as info:
        parse_fleet(doc)
    return [p for p in info.value.problems if p.path == "name"]


def test_athena_where_the_kit_creates_no_cur_export() -> None:
    """The CUR 2.0 export's region rule (settings.cost.cur_export_region): one message from a fleet file and from
    CostMonitors, for a region outside the aws partition."""
    topic = cdk.aws_sns.Topic(stack("cn-north-1"), "T")
    python = from_python(lambda: CostMonitors(topic.stack, "C", fleet_name="nf-test", topic=topic,
                                              settings=CostMonitorSettings(source="athena")))
    doc = copy.deepcopy(BASE) | {"region": "cn-north-1", "training_clusters": [], "endpoints": [],
                                 "network": {"availability_zones": ["cn-north-1a", "cn-north-1b"],
                                             "training_az": "cn-north-1a"},
                                 "cost_monitors": {"source": "athena"}}
    with pytest.raises(FleetConfigError) as info:
        parse_fleet(doc)
    (yaml,) = [p for p in info.value.problems if p.path.startswith("cost_monitors")]
    assert [yaml] == [p.under("cost_monitors") for p in python]
    assert str(yaml).startswith("cost_monitors.source: got 'athena'; allowed: cost-explorer in cn-north-1: the kit "
                                "creates a CUR 2.0 Data Export in us-east-1 for fleets of the aws partition only")


def test_athena_outside_us_east_1_needs_the_payer_account_in_the_fleet_file() -> None:
    doc = copy.deepcopy(BASE) | {"cost_monitors": {"source": "athena"}}
    with pytest.raises(FleetConfigError) as info:
        parse_fleet(doc)
    (problem,) = info.value.problems
    assert (problem.path, problem.value) == ("account", None)
    assert "nf-test-cur-export" in problem.allowed
    assert parse_fleet(doc | {"account": "111111111111"}).cost_monitors.source == "athena"
    assert parse_fleet(doc | {"region": "us-east-1", "network": {
        "availability_zones": ["us-east-1a", "us-east-1b"], "training_az": "us-east-1a"}, "training_clusters": [],
        "endpoints": []}).account is None  # in us-east-1 the export is in the cost stack: no second stack
