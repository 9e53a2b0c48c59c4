"""CapacityLifecycle at fleet scale: the clusters are split between as many lifecycle functions as Lambda's 4 KB
environment needs, each cluster in exactly one, all of them within every limit CloudFormationLimits checks.

The Rainier fleet (scripts.bench_scale.rainier(), with prod's capacity_policy) is built as the reference app builds
its capacity stack (its network, alerts, 20 Batch training stacks, the GPU pool; no endpoints, no cost stack); the
40- and 100-cluster cases use stand-in clusters whose queue and bucket are cross-stack imports (what the capacity
stack's template holds for a real cluster), so they need no 40 training stacks."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import Environment, Fn, Stack
from aws_cdk import aws_batch as batch
from aws_cdk import aws_s3 as s3
from constructs import Construct

from neuronfleet import CloudFormationLimits, TrainiumClusterSettings
from neuronfleet.capacity.lifecycle import (
    ENVIRONMENT_BUDGET,
    LONGEST,
    CapacityLifecycle,
    environment_bytes,
    split_clusters,
)
from neuronfleet.core.limits import template_problems
from neuronfleet.core.rules import LAMBDA_ENVIRONMENT_BYTES, TOKEN_ESTIMATE_CHARS
from neuronfleet.facts.prices import price_table
from neuronfleet.fleetfile.schema import parse_fleet
from neuronfleet_contract.capacity_lifecycle import CapacityPolicy, ClusterRef, LifecycleConfig, policy_parameter_name
from scripts.bench_scale import rainier
from tests.conftest import new_app

HANDLER = "capacity_lifecycle.handler.handler"


def functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: r["Properties"] for k, r in template["Resources"].items()
            if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Handler") == HANDLER}


def cluster_names(fn: dict[str, Any]) -> list[str]:
    """The cluster names in a function's CLUSTERS (a Fn::Join of literal parts and the imported queue/bucket)."""
    value = fn["Environment"]["Variables"]["CLUSTERS"]
    text = "".join(p if isinstance(p, str) else "ref" for p in value["Fn::Join"][1]) if isinstance(value, dict) \
        else value
    return [c["name"] for c in json.loads(text)]


# ------------------------------------------------------------------------------------- Rainier, as the app builds it


@pytest.fixture(scope="module")
def rainier_capacity() -> tuple[CloudFormationLimits, Any, dict[str, Any]]:
    from stacks.alerts_stack import AlertsStack
    from stacks.capacity_stack import CapacityStack
    from stacks.fallback_stack import FallbackStack
    from stacks.network_stack import NetworkStack
    from stacks.training_stack import TrainingStack

    fleet = parse_fleet(rainier(), source="rainier")
    assert fleet.capacity_policy is not None and len(fleet.training_clusters) == 20
    app = new_app()
    limits = CloudFormationLimits(app)
    env = Environment(account=fleet.account, region=fleet.region)
    net = NetworkStack(app, fleet.stack_name("network"), network=fleet.network, env=env)
    topic = AlertsStack(app, fleet.stack_name("alerts"), emails=fleet.notification_emails, env=env).alerts.topic
    training = [TrainingStack(app, fleet.stack_name(f"train-{c.name}"), network=net.network, cluster=c, env=env)
                for c in fleet.training_clusters]
    fallback = FallbackStack(app, fleet.stack_name("fallback"), network=net.network, pool=fleet.fallback,
                             alerts_topic=topic, clusters=[t.cluster for t in training], env=env)
    capacity = CapacityStack(
        app, fleet.stack_name("capacity"), fleet_name=fleet.name, policy=fleet.capacity_policy,
        clusters={c.name: t.cluster for c, t in zip(fleet.training_clusters, training, strict=True)},
        alerts_topic=topic, pool=fallback.pool, training_azs=[fleet.network.training_az],
        prices=price_table(fleet.catalog, fleet.region, dict(fleet.prices)), env=env)
    assembly = app.synth()   # CloudFormationLimits (and cdk-nag) fail it on any finding
    return limits, capacity, assembly.get_stack_by_name(capacity.stack_name).template


def test_the_rainier_fleet_with_its_capacity_policy_builds_within_every_limit(rainier_capacity):
    limits, capacity, template = rainier_capacity
    assert limits.problems == [] and template_problems(capacity.stack_name, template) == []
    fns = functions(template)
    assert len(fns) == len(capacity.lifecycle.parts) > 1
    for fn in fns.values():   # as CloudFormationLimits measures it: references at its estimate
        variables = fn["Environment"]["Variables"]
        assert sum(len(k) + _estimated(v) for k, v in variables.items()) <= LAMBDA_ENVIRONMENT_BYTES


def test_each_rainier_cluster_is_looked_after_by_exactly_one_function(rainier_capacity):
    _, capacity, template = rainier_capacity
    names = [cluster_names(fn) for fn in functions(template).values()]
    flat = [n for part in names for n in part]
    assert sorted(flat) == sorted(f"ultra-{i:02d}" for i in range(20)) and len(flat) == len(set(flat))
    assert sorted(map(tuple, names)) == sorted(capacity.lifecycle.parts)


def test_each_function_has_its_own_schedule_event_rule_and_role_scoped_to_its_clusters(rainier_capacity):
    _, _, template = rainier_capacity
    resources = template["Resources"]
    fns = functions(template)
    rules = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Events::Rule"]
    targets = [t["Arn"]["Fn::GetAtt"][0] for r in rules for t in r["Targets"]]
    # one schedule and one event rule each; and the purchase announcer's CloudTrail rule (its own function)
    purchases = [t for t in targets if t.startswith("CapacityPurchasesFunction")]
    assert len(purchases) == 1
    assert sorted(t for t in targets if t not in purchases) == sorted([*fns, *fns])
    assert sum(r.get("ScheduleExpression") == "rate(10 minutes)" for r in rules) == len(fns)
    tables = [k for k, r in resources.items() if r["Type"] == "AWS::DynamoDB::Table"]
    # one announcements ledger for all the lifecycle functions, and the purchase announcer's own
    assert len([t for t in tables if not t.startswith("CapacityPurchases")]) == 1
    for logical, fn in fns.items():
        role = fn["Role"]["Fn::GetAtt"][0]
        (policy,) = [r["Properties"] for r in resources.values()
                     if r["Type"] == "AWS::IAM::Policy" and r["Properties"]["Roles"] == [{"Ref": role}]]
        text = json.dumps(policy["PolicyDocument"])
        flags = {n for n in (f"ultra-{i:02d}" for i in range(20)) if f"neuronfleet/drain/{n}.json" in text}
        groups = {n for n in (f"ultra-{i:02d}" for i in range(20)) if f"group/{n}\"" in text}
        assert flags == groups == set(cluster_names(fn)), logical
        assert tables[0] in text   # the shared ledger


def _estimated(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict) and "Fn::Join" in value:
        return sum(_estimated(p) for p in value["Fn::Join"][1])
    return TOKEN_ESTIMATE_CHARS


# ------------------------------------------------------------------------------- 40 and 100 clusters, stand-ins


@dataclass
class StandIn:
    """What CapacityLifecycle reads of a TrainiumCluster, its queue and bucket imported from a training stack."""

    settings: TrainiumClusterSettings
    drain_name: str
    job_queue: batch.IJobQueue
    data_bucket: s3.IBucket


def stand_ins(scope: Construct, count: int) -> dict[str, Any]:
    fleet = parse_fleet(rainier(clusters=count, ultraservers=count * 100), source="rainier")
    out: dict[str, Any] = {}
    for c in fleet.training_clusters:
        stack = f"nf-rainier-train-{c.name}"
        out[c.name] = StandIn(settings=c, drain_name=c.name, job_queue=batch.JobQueue.from_job_queue_arn(
            scope, f"{c.name}Queue", Fn.import_value(f"{stack}:JobQueueArn")),
            data_bucket=s3.Bucket.from_bucket_name(scope, f"{c.name}Data", Fn.import_value(f"{stack}:DataBucket")))
    return out


def synth_stand_ins(count: int) -> tuple[CloudFormationLimits, CapacityLifecycle, dict[str, Any]]:
    from neuronfleet import FleetAlerts

    fleet = parse_fleet(rainier(clusters=count, ultraservers=count * 100), source="rainier")
    app = new_app()
    limits = CloudFormationLimits(app)
    stack = Stack(app, "Capacity", env=Environment(account=fleet.account, region=fleet.region))
    topic = FleetAlerts(stack, "Alerts", emails=["ml-platform@example.com"]).topic
    assert fleet.capacity_policy is not None
    lifecycle = CapacityLifecycle(stack, "CapacityLifecycle", fleet=fleet.name, clusters=stand_ins(stack, count),
                                  topic=topic, policy=fleet.capacity_policy, training_azs=["us-east-2b"])
    return limits, lifecycle, app.synth().get_stack_by_name("Capacity").template


@pytest.mark.parametrize("count", [40, 100])
def test_forty_and_a_hundred_clusters_fit_every_limit_each_cluster_once(count):
    limits, lifecycle, template = synth_stand_ins(count)
    assert limits.problems == []
    names = [cluster_names(fn) for fn in functions(template).values()]
    flat = [n for part in names for n in part]
    assert sorted(flat) == sorted(f"ultra-{i:02d}" for i in range(count)) and len(flat) == len(set(flat))
    assert len(names) == len(lifecycle.parts) >= count // 7


def deployed(value: Any, names: dict[str, str]) -> Any:
    """A template value as CloudFormation would deploy it: each import or reference as the value named for it."""
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(deployed(p, names) for p in parts)
    if isinstance(value, dict) and "Fn::ImportValue" in value:
        return names.setdefault(json.dumps(value), f"imported-{len(names)}")
    if isinstance(value, dict):
        return names.setdefault(json.dumps(value), f"ref-{len(names)}")
    return value


def test_what_each_function_deploys_with_is_what_the_handler_reads():
    """The handler's own reading (LifecycleConfig.from_environment) of each function's deployed environment: every
    cluster once, each with its own queue and bucket, the fleet's policy and ledger the same in each."""
    _, lifecycle, template = synth_stand_ins(16)
    names: dict[str, str] = {}
    parameters = {p["Properties"]["Name"]: p["Properties"]["Value"] for p in template["Resources"].values()
                  if p["Type"] == "AWS::SSM::Parameter"}
    read = [LifecycleConfig.from_environment({k: deployed(v, names) for k, v in fn["Environment"]["Variables"].items()},
                                             read_parameter=parameters.__getitem__)
            for fn in functions(template).values()]
    assert len(read) == len(lifecycle.parts) == 3
    clusters = [c for s in read for c in s.clusters]
    assert sorted(c.name for c in clusters) == sorted(f"ultra-{i:02d}" for i in range(16))
    assert len({c.queue_arn for c in clusters}) == len({c.drain_bucket for c in clusters}) == 16
    assert len({(s.policy, s.ledger_table, s.topic_arn, s.fleet) for s in read}) == 1
    assert all(set(s.prices) == {"trn2u.48xlarge"} for s in read)   # no pool here: only the clusters' type


# ----------------------------------------------------------------------------------------- the split itself


POLICY = CapacityPolicy.from_document({"max_upfront_fee_usd": "60000", "max_usd_per_instance_hour": "45"})


def ref(i: int, *, token: bool = True) -> ClusterRef:
    t = "${Token[TOKEN.%d]}"
    return ClusterRef(name=f"ultra-{i:02d}", queue_arn=t % (1000 + i) if token else f"arn:aws:batch:q/{i}",
                      instance_type="trn2u.48xlarge", drain_bucket=t % (2000 + i) if token else f"b-{i}",
                      group_arns=(f"arn:aws:resource-groups:us-east-2:111111111111:group/ultra-{i:02d}",))


def settings_of(part: tuple[ClusterRef, ...]) -> LifecycleConfig:
    return LifecycleConfig(fleet="nf-rainier", topic_arn="${Token[TOKEN.1]}", ledger_table="${Token[TOKEN.2]}",
                           policy=POLICY, clusters=part, gpu_queue_arn="${Token[TOKEN.3]}",
                           gpu_instance_type="p5.48xlarge", policy_parameter=policy_parameter_name("nf-rainier"),
                           prices={"trn2u.48xlarge": {"usd_per_hour": "44.7013", "as_of": "2025-10-01"}})


def test_references_are_sized_as_the_longest_value_aws_allows():
    one = settings_of((ref(0),))
    literal = LifecycleConfig(**{**one.__dict__, "topic_arn": "a" * LONGEST["topic_arn"],
                                 "ledger_table": "t" * LONGEST["ledger_table"],
                                 "gpu_queue_arn": "g" * LONGEST["gpu_queue_arn"],
                                 "clusters": (ClusterRef(**{**ref(0).__dict__, "queue_arn": "q" * LONGEST["queue_arn"],
                                                              "drain_bucket": "b" * 63}),)})
    assert environment_bytes(one) == environment_bytes(literal)
    assert LONGEST["queue_arn"] == len("arn:aws-us-gov:batch:aws-us-gov-global:111111111111:job-queue/") + 128


def test_the_longest_values_are_what_botocore_says():
    """LONGEST's figures pinned against botocore 1.44.5 (its data/partitions.json and the service models' own words);
    the bucket's 63 is the S3 user guide's (also neuronfleet.core.rules.s3_uri)."""
    import os
    import re

    import botocore
    import botocore.session

    from neuronfleet.core.rules import LONGEST_PARTITION, LONGEST_REGION

    data = json.loads((Path(os.path.dirname(botocore.__file__)) / "data" / "partitions.json").read_text())
    assert max(len(p["id"]) for p in data["partitions"]) == LONGEST_PARTITION
    assert max(len(r) for p in data["partitions"] for r in p["regions"]) == LONGEST_REGION
    session = botocore.session.get_session()

    def doc(service: str, operation: str, member: str) -> str:
        shape = session.get_service_model(service).operation_model(operation).input_shape.members[member]
        return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", shape.documentation))

    assert "It can be up to 128 letters long" in doc("batch", "CreateJobQueue", "jobQueueName")
    assert "must be between 1 and 256 characters long" in doc("sns", "CreateTopic", "Name")
    assert session.get_service_model("dynamodb").shape_for("TableName").metadata["max"] == LONGEST["ledger_table"]
    assert LONGEST["topic_arn"] == len("arn:aws-us-gov:sns:aws-us-gov-global:111111111111:") + 256
    assert LONGEST["drain_bucket"] == 63


def test_the_split_is_tight_in_order_and_keeps_every_cluster_once():
    refs = [ref(i) for i in range(40)]
    parts = split_clusters(refs, settings_of)
    assert [c for p in parts for c in p] == refs
    for i, part in enumerate(parts):
        assert environment_bytes(settings_of(part)) <= ENVIRONMENT_BUDGET
        if i + 1 < len(parts):   # the next cluster would not have fitted
            assert environment_bytes(settings_of((*part, parts[i + 1][0]))) > ENVIRONMENT_BUDGET
    assert split_clusters(refs[:2], settings_of) == [tuple(refs[:2])]   # a small fleet: one function, as before


def test_a_cluster_that_alone_does_not_fit_is_refused_naming_it():
    big = ClusterRef(**{**ref(7).__dict__, "reservation_ids": tuple(f"cr-{i:017x}" for i in range(200))})
    with pytest.raises(ValueError, match=r"clusters\['ultra-07'\]: got a cluster whose lifecycle settings alone take "
                                         r"[\d,]+ bytes of environment; allowed: at most 4,032"):
        split_clusters([ref(1), big], settings_of)


def test_no_cluster_is_refused():
    fleet = parse_fleet(rainier(clusters=2, ultraservers=200), source="rainier")
    assert fleet.capacity_policy is not None
    stack = Stack(new_app(), "S")
    from neuronfleet import FleetAlerts

    with pytest.raises(ValueError, match="clusters: got none; allowed: at least one TrainiumCluster"):
        CapacityLifecycle(stack, "L", fleet="f", clusters={}, topic=FleetAlerts(stack, "A", emails=["a@b.co"]).topic,
                          policy=fleet.capacity_policy)

