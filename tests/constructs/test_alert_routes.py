"""Every alarm and event reaches a person: the route from each source to the alerts topic, read from the templates.

For each path: the topic policy statement that admits the publisher, the rule pattern that matches AWS's documented
event (and not another fleet's), the target with its retries and dead-letter queue, and the alarm on that queue.
Patterns are matched with moto's EventBridge pattern engine after the template's own tokens are evaluated.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template
from moto.events.models import EventPattern

from neuronfleet import Capacity, FleetAlerts, GpuPool, GpuPoolSettings, TrainiumCluster, TrainiumClusterSettings
from neuronfleet.alerts.announcement_ledger import GRANTED_ACTIONS
from neuronfleet.capacity.alerts import CapacityAlerts
from neuronfleet.core.functions import EVENT_MAX_AGE, EVENT_RETRY_ATTEMPTS
from tests.conftest import ENV, AzStack, network, new_app, properties

ACCOUNT, REGION = ENV.account, ENV.region
BLOCK = "cr-0123456789abcdef0"
GROUP = f"arn:aws:resource-groups:{REGION}:{ACCOUNT}:group/ultra-blocks"


@pytest.fixture(scope="module")
def stacks() -> dict[str, Template]:
    """A fleet's alert topic, two Trainium clusters (an instance block by id, an UltraServer block through a
    resource group) and a GPU pool with capacity alerts, in one app; and a second fleet's, to test scoping."""
    app = new_app()
    out = {}
    for fleet in ("mine", "theirs"):
        stack = AzStack(app, f"Fleet-{fleet}", env=ENV)
        net = network(stack)
        alerts = FleetAlerts(stack, "Alerts", emails=["ml-platform@example.com"])
        clusters = [
            TrainiumCluster(stack, "Pretrain", vpc=net.vpc, subnet=net.training_subnet, settings=TrainiumClusterSettings(
                instance_type="trn2.48xlarge", count=2,
                capacity=Capacity.capacity_block(reservation_id=BLOCK if fleet == "mine" else "cr-0fffffffffffffff0"))),
        ]
        pool = GpuPool(stack, "Gpu", vpc=net.vpc, vpc_subnets=ec2.SubnetSelection(subnets=net.vpc.private_subnets[:1]),
                       settings=GpuPoolSettings(instance_types=["p5.48xlarge"], max_vcpus=192))
        CapacityAlerts(stack, "Capacity", pool=pool, topic=alerts.topic, clusters=clusters)
        out[fleet] = stack
    return {name: Template.from_stack(stack) for name, stack in out.items()}


def evaluate(node: Any, refs: Callable[[str], str]) -> Any:
    """The value of a template expression, with Ref/GetAtt of a resource replaced by a made-up physical value."""
    if isinstance(node, list):
        return [evaluate(n, refs) for n in node]
    if not isinstance(node, dict):
        return node
    if "Ref" in node:
        return refs(node["Ref"])
    if "Fn::GetAtt" in node:
        return refs(node["Fn::GetAtt"][0])
    if "Fn::Join" in node:
        sep, parts = node["Fn::Join"]
        return sep.join(str(evaluate(p, refs)) for p in parts)
    if "Fn::Split" in node:
        sep, text = node["Fn::Split"]
        return str(evaluate(text, refs)).split(sep)
    if "Fn::Select" in node:
        index, items = node["Fn::Select"]
        return evaluate(items, refs)[int(index)]
    return {k: evaluate(v, refs) for k, v in node.items()}


def physical(template: Template, fleet: str) -> Callable[[str], str]:
    resources = template.to_json()["Resources"]

    def ref(logical_id: str) -> str:
        kind = resources[logical_id]["Type"] if logical_id in resources else ""
        name = f"{fleet}-{logical_id}"
        return {"AWS::Batch::JobQueue": f"arn:aws:batch:{REGION}:{ACCOUNT}:job-queue/{name}",
                "AWS::Batch::ComputeEnvironment": f"arn:aws:batch:{REGION}:{ACCOUNT}:compute-environment/{name}",
                }.get(kind, name)
    return ref


def rules(template: Template, fleet: str) -> dict[str, dict[str, Any]]:
    return {k: evaluate(v, physical(template, fleet)) for k, v in properties(template, "AWS::Events::Rule").items()}


def matching(template: Template, fleet: str, event: dict[str, Any]) -> list[str]:
    """The rules of the stack whose pattern matches the event."""
    return sorted(k for k, r in rules(template, fleet).items()
                  if "EventPattern" in r and EventPattern.load(json.dumps(r["EventPattern"])).matches_event(event))


def names(template: Template, fleet: str, kind: str) -> list[str]:
    return [physical(template, fleet)(k).rsplit("/", 1)[-1] for k in template.find_resources(kind)]


# The documented event shapes (AWS docs, read 2026-11-22)
def block_warning(rid: str) -> dict[str, Any]:  # EC2 user guide, capacity-blocks-monitor.html
    return {"version": "0", "id": "1", "detail-type": "Capacity Block Expiration Warning", "source": "aws.ec2",
            "account": ACCOUNT, "time": "2026-11-30T11:20:00Z", "region": REGION,
            "resources": [f"arn:aws:ec2:{REGION}:{ACCOUNT}:capacity-reservation/{rid}"],
            "detail": {"capacity-reservation-id": rid, "end-date": "2026-11-30T12:00:00Z"}}


def queue_blocked(queue_arn: str) -> dict[str, Any]:  # AWS Batch user guide, batch-job-queue-blocked-events.html
    return {"version": "0", "id": "2", "detail-type": "Batch Job Queue Blocked", "source": "aws.batch",
            "account": ACCOUNT, "time": "2026-11-30T11:20:00Z", "region": REGION,
            "resources": [f"arn:aws:batch:{REGION}:{ACCOUNT}:job/j-1", queue_arn],
            "detail": {"jobArn": f"arn:aws:batch:{REGION}:{ACCOUNT}:job/j-1", "jobName": "pretrain", "jobId": "j-1",
                       "jobQueue": queue_arn, "status": "RUNNABLE",
                       "statusReason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity "
                                       "requested for instance type [trn2.48xlarge]"}}


def launch_unsuccessful(group: str) -> dict[str, Any]:  # EC2 Auto Scaling user guide, EventBridge events
    return {"version": "0", "id": "3", "detail-type": "EC2 Instance Launch Unsuccessful", "source": "aws.autoscaling",
            "account": ACCOUNT, "time": "2026-11-30T11:20:00Z", "region": REGION,
            "resources": [f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:autoScalingGroup:x:autoScalingGroupName/{group}"],
            "detail": {"StatusCode": "Failed", "AutoScalingGroupName": group, "ActivityId": "a",
                       "StatusMessage": "We currently do not have sufficient trn2.48xlarge capacity in the "
                                        "Availability Zone you requested (us-east-2b).",
                       "Details": {"Availability Zone": "us-east-2b"}, "EC2InstanceId": ""}}


def test_topic_policy_admits_cloudwatch_alarms_and_budgets_of_this_account_only(stacks) -> None:
    (policy,) = properties(stacks["mine"], "AWS::SNS::TopicPolicy").values()
    allow = {json.dumps(s["Principal"]): s for s in policy["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"}
    alarms = allow[json.dumps({"Service": "cloudwatch.amazonaws.com"})]
    assert alarms["Action"] == "sns:Publish"
    assert alarms["Condition"]["StringEquals"] == {"aws:SourceAccount": ACCOUNT}
    arn = evaluate(alarms["Condition"]["ArnLike"]["aws:SourceArn"], lambda r: {"AWS::Partition": "aws"}.get(r, r))
    assert arn == f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:*"
    budgets = allow[json.dumps({"Service": "budgets.amazonaws.com"})]
    assert budgets["Condition"]["StringEquals"] == {"aws:SourceAccount": ACCOUNT}
    assert evaluate(budgets["Condition"]["ArnLike"]["aws:SourceArn"],
                    lambda r: {"AWS::Partition": "aws"}.get(r, r)) == f"arn:aws:budgets::{ACCOUNT}:*"
    assert set(allow) == {json.dumps({"Service": s}) for s in ("cloudwatch.amazonaws.com", "budgets.amazonaws.com")}


def _key_grants(t: Template) -> dict[str, dict[str, Any]]:
    """Service principal -> the key-policy statement that lets it make data keys."""
    (key,) = properties(t, "AWS::KMS::Key").values()
    out = {}
    for s in key["KeyPolicy"]["Statement"]:
        services = s["Principal"].get("Service", [])
        if "kms:GenerateDataKey*" in s["Action"]:
            for service in [services] if isinstance(services, str) else services:
                assert service not in out, service
                out[service] = s
    return out


def test_the_key_lets_each_publisher_encrypt_under_the_conditions_aws_documents(stacks) -> None:
    """CloudWatch alarms: only this account's alarms (aws:SourceAccount, aws:SourceArn); Budgets: unconditioned (no
    source key documented for its KMS requests); EventBridge: not at all (no rule of the kit targets the topic, and
    its statement could carry no condition)."""
    grants = _key_grants(stacks["mine"])
    assert set(grants) == {"cloudwatch.amazonaws.com", "budgets.amazonaws.com"}
    alarms = grants["cloudwatch.amazonaws.com"]
    assert alarms["Condition"]["StringEquals"] == {"aws:SourceAccount": ACCOUNT}
    assert evaluate(alarms["Condition"]["ArnLike"]["aws:SourceArn"],
                    lambda r: {"AWS::Partition": "aws"}.get(r, r)) == f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:*"
    assert "Condition" not in grants["budgets.amazonaws.com"]


def test_eventbridge_is_admitted_to_the_key_only_when_asked() -> None:
    stack = AzStack(new_app(), "E", env=ENV)
    FleetAlerts(stack, "Alerts", eventbridge=True)
    grants = _key_grants(Template.from_stack(stack))
    assert set(grants) == {"cloudwatch.amazonaws.com", "budgets.amazonaws.com", "events.amazonaws.com"}
    assert "Condition" not in grants["events.amazonaws.com"]


def test_the_stack_says_how_to_make_each_subscription_need_authentication_to_end(stacks) -> None:
    """CloudFormation cannot confirm an e-mail subscription with AuthenticateOnUnsubscribe: the output names the
    command (with this topic) and the check; a topic without subscriptions has no such output."""
    outputs = stacks["mine"].to_json()["Outputs"]
    (text,) = [json.dumps(o["Value"]) for k, o in outputs.items() if "ProtectSubscriptions" in k]
    topic = next(iter(stacks["mine"].find_resources("AWS::SNS::Topic")))
    assert "--authenticate-on-unsubscribe true" in text and json.dumps({"Ref": topic}) in text
    assert "ConfirmationWasAuthenticated true" in text
    stack = AzStack(new_app(), "NoMail", env=ENV)
    FleetAlerts(stack, "Alerts")
    assert not any("ProtectSubscriptions" in k for k in Template.from_stack(stack).to_json().get("Outputs", {}))


def test_alarm_name_prefix_narrows_the_alarms_admitted() -> None:
    app = new_app()
    stack = AzStack(app, "P", env=ENV)
    FleetAlerts(stack, "Alerts", alarm_name_prefix="nf-prod-")
    (policy,) = properties(Template.from_stack(stack), "AWS::SNS::TopicPolicy").values()
    (alarms,) = [s for s in policy["PolicyDocument"]["Statement"]
                 if s["Principal"] == {"Service": "cloudwatch.amazonaws.com"}]
    assert alarms["Condition"]["ArnLike"] == {"aws:SourceArn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:nf-prod-*"}


def test_every_alarm_acts_on_the_topic(stacks) -> None:
    t = stacks["mine"]
    topic = next(iter(t.find_resources("AWS::SNS::Topic")))
    alarms = properties(t, "AWS::CloudWatch::Alarm")
    assert alarms
    for name, alarm in alarms.items():
        assert alarm["AlarmActions"] == [{"Ref": topic}], name


def test_every_event_target_retries_into_a_watched_dead_letter_queue(stacks) -> None:
    t = stacks["mine"]
    queues_watched = {json.dumps(a["Dimensions"][0]["Value"]) for a in properties(t, "AWS::CloudWatch::Alarm").values()
                      if a.get("MetricName") == "ApproximateNumberOfMessagesVisible"}
    all_rules = properties(t, "AWS::Events::Rule")
    assert len(all_rules) == 5  # reservation events, block scan, queue blocked, queue moving, launches
    for name, rule in all_rules.items():
        for target in rule["Targets"]:
            assert target["RetryPolicy"] == {"MaximumRetryAttempts": EVENT_RETRY_ATTEMPTS,
                                             "MaximumEventAgeInSeconds": int(EVENT_MAX_AGE.to_seconds())}, name
            dlq = target["DeadLetterConfig"]["Arn"]
            queue_id = dlq["Fn::GetAtt"][0]
            assert json.dumps({"Fn::GetAtt": [queue_id, "QueueName"]}) in queues_watched, name
    # EventBridge may send to each dead-letter queue (only from the rules that target it)
    policies = properties(t, "AWS::SQS::QueuePolicy")
    senders = [s for p in policies.values() for s in p["PolicyDocument"]["Statement"]
               if s.get("Principal") == {"Service": "events.amazonaws.com"}]
    assert len(senders) == len(all_rules) and all("aws:SourceArn" in s["Condition"]["ArnEquals"] for s in senders)


def test_capacity_rules_match_the_documented_events_of_this_fleet_only(stacks) -> None:
    mine, theirs = stacks["mine"], stacks["theirs"]
    assert len(matching(mine, "mine", block_warning(BLOCK))) == 1
    assert matching(mine, "mine", block_warning("cr-0fffffffffffffff0")) == []       # the other fleet's block
    (queue,) = names(mine, "mine", "AWS::Batch::JobQueue")[:1]
    mine_queue = f"arn:aws:batch:{REGION}:{ACCOUNT}:job-queue/{queue}"
    assert len(matching(mine, "mine", queue_blocked(mine_queue))) == 1
    assert matching(mine, "mine", queue_blocked(mine_queue.replace("mine-", "theirs-"))) == []
    envs = [n for n in names(mine, "mine", "AWS::Batch::ComputeEnvironment") if "Pretrain" in n]
    (env,) = envs
    assert len(matching(mine, "mine", launch_unsuccessful(f"{env}-asg-1a2b3c4d"))) == 1
    gpu_env = next(n for n in names(mine, "mine", "AWS::Batch::ComputeEnvironment") if "Gpu" in n)
    assert matching(mine, "mine", launch_unsuccessful(f"{gpu_env}-asg-1a2b3c4d")) == []  # the GPU pool's own group
    assert matching(theirs, "theirs", launch_unsuccessful(f"{env}-asg-1a2b3c4d")) == []  # another fleet's


def test_blocks_bought_through_a_resource_group_are_filtered_by_the_function() -> None:
    app = new_app()
    stack = AzStack(app, "G", env=ENV)
    net = network(stack)
    alerts = FleetAlerts(stack, "Alerts")
    cluster = TrainiumCluster(stack, "Ultra", vpc=net.vpc, subnet=net.training_subnet, settings=TrainiumClusterSettings(
        instance_type="trn2.48xlarge", count=2, capacity=Capacity.capacity_block(resource_group_arn=GROUP)))
    pool = GpuPool(stack, "Gpu", vpc=net.vpc, vpc_subnets=ec2.SubnetSelection(subnets=net.vpc.private_subnets[:1]))
    CapacityAlerts(stack, "Capacity", pool=pool, topic=alerts.topic, clusters=[cluster])
    t = Template.from_stack(stack)
    (fn,) = [f for f in properties(t, "AWS::Lambda::Function").values()
             if f["Handler"] == "capacity_alert.handler.handler"]
    env = fn["Environment"]["Variables"]
    assert json.loads(env["FLEET_RESERVATION_GROUPS"]) == [GROUP] and json.loads(env["FLEET_RESERVATIONS"]) == []
    assert "trn2u.48xlarge" in json.loads(env["ULTRASERVER_TYPES"])
    (ec2_rule,) = [r for r in properties(t, "AWS::Events::Rule").values()
                   if r.get("EventPattern", {}).get("source") == ["aws.ec2"]]
    assert "detail" not in ec2_rule["EventPattern"]
    statements = [s for p in properties(t, "AWS::IAM::Policy").values() for s in p["PolicyDocument"]["Statement"]]
    assert {"Action": "resource-groups:ListGroupResources", "Effect": "Allow", "Resource": GROUP} in statements


def test_the_announcements_table_has_the_keys_the_handlers_use(stacks) -> None:
    tables = properties(stacks["mine"], "AWS::DynamoDB::Table")
    (table,) = [t for t in tables.values() if t.get("TimeToLiveSpecification")]
    assert table["KeySchema"] == [{"AttributeName": "kind", "KeyType": "HASH"},
                                  {"AttributeName": "subject", "KeyType": "RANGE"}]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires", "Enabled": True}


def test_the_capacity_function_may_record_mark_and_list_announcements_on_its_table_only(stacks) -> None:
    """TransactWriteItems is authorised as its Put/Update/Delete actions (DynamoDB developer guide, "Using IAM with
    DynamoDB transactions"): the grant names those, and UpdateItem for the outbox's take/mark/hand-back."""
    t = stacks["mine"]
    (table_id,) = [k for k, v in t.to_json()["Resources"].items()
                   if v["Type"] == "AWS::DynamoDB::Table" and v["Properties"].get("TimeToLiveSpecification")]
    statements = [s for p in properties(t, "AWS::IAM::Policy").values() for s in p["PolicyDocument"]["Statement"]]
    on_table = [s for s in statements if table_id in json.dumps(s["Resource"])]
    assert [sorted(s["Action"]) for s in on_table] == [sorted(GRANTED_ACTIONS)]
    assert sorted(GRANTED_ACTIONS) == ["dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:Query",
                                       "dynamodb:UpdateItem"]
    assert not [s for s in statements if "dynamodb:TransactWriteItems" in json.dumps(s["Action"])]


def test_in_the_prod_fleet_every_alarm_acts_on_the_topic_and_every_rule_has_a_dead_letter(synth_fleet) -> None:
    prod = synth_fleet("prod")
    topic_export = None
    alarms = rules_seen = 0
    for short in prod.stacks:
        t = prod.template_json(short)["Resources"]
        for name, res in t.items():
            props = res.get("Properties", {})
            if res["Type"] == "AWS::SNS::Topic":
                topic_export = name
            if res["Type"] == "AWS::CloudWatch::Alarm":
                alarms += 1
                actions = json.dumps(props.get("AlarmActions", []))
                assert "Alerts" in actions and "Topic" in actions, (short, name, actions)
            if res["Type"] == "AWS::Events::Rule":
                for target in props["Targets"]:
                    rules_seen += 1
                    assert "DeadLetterConfig" in target and target["RetryPolicy"]["MaximumRetryAttempts"] > 0, \
                        (short, name)
    assert topic_export and alarms >= 10 and rules_seen >= 8
