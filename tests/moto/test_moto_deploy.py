"""Cloud assemblies deployed through moto's CloudFormation API with neuronfleet.offline, as a user of the wheel does.

A tiny app synthesised here (an environment-agnostic stack and a Stage's stack for another account) shows where
stacks go, what is refused and that nothing is printed; config/dev.yaml and config/prod.yaml show the whole fleet,
config/org.yaml a fleet whose CUR 2.0 export stack is in us-east-1 and the rest in us-west-2.

moto's gaps are handled by neuronfleet.offline and reported; these tests pin the reports, so a new gap (or a gap
moto closes) shows up here. Each type moto skips is covered by template tests:
  AWS::FSx::* -> test_training.test_storage_bucket_and_lustre; AWS::CloudWatch::Alarm ->
  test_inference.test_alarms_go_to_the_topic, test_cost_stack.test_handler_errors_alarm_and_dead_letter_queues;
  AWS::ApplicationAutoScaling::* -> test_inference.test_target_tracking_and_scheduled_scaling;
  AWS::Budgets::Budget -> test_cost_stack.test_budget_per_fleet_with_forecast_notifications_to_the_topic;
  AWS::S3::BucketPolicy -> test_training.test_storage_bucket_and_lustre; AWS::SNS::TopicPolicy ->
  test_cost_stack.test_alerts_topic_lets_budgets_publish; AWS::EC2::SecurityGroupEgress ->
  test_training.test_efa_security_group_allows_itself_and_nothing_from_the_internet; multinode job
  definitions -> test_training.test_batch_compute_environment_queue_and_mnp_job_definition;
  AWS::BCMDataExports::Export, AWS::Glue::*, AWS::Athena::* -> test_cur.
"""

from __future__ import annotations

import io
import logging
import os
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID

from neuronfleet.offline import DEFAULT_REGION, DeployResult, deploy_assembly, offline_aws

BOOTSTRAP = "CDK bootstrap ({env}): SSM /cdk-bootstrap/hnb659fds/version=30"
ASSET_BUCKET = "CDK bootstrap ({env}): asset bucket cdk-hnb659fds-assets-{bucket}"
ENDPOINT_NAME = ("moto: AWS::SageMaker::Endpoint ignores EndpointName (it names the resource <stack>-<logical id>-"
                 "<random>); created with the template's EndpointName, as CloudFormation does")
INSTANCE_TYPES = ("moto: SageMaker's instance-type list lags AWS and rejects {types}; accepted because botocore's "
                  "ProductionVariantInstanceType lists each (unknown types still fail)")
BATCH = ["moto: GetAtt ComputeEnvironmentArn read as Ref (same ARN in CloudFormation)",
         "moto: GetAtt JobQueueArn read as Ref (same ARN in CloudFormation)",
         "moto: AWS::Batch::ComputeEnvironment given the service-linked role AWS uses by default"]
# (no stand-in for a compute environment's security groups: every environment names its EFA group)
MULTINODE = "AWS::Batch::JobDefinition (multinode: moto's CloudFormation registers container jobs only)"
KNOWN_SKIPPED = {
    "AWS::ApplicationAutoScaling::ScalableTarget", "AWS::ApplicationAutoScaling::ScalingPolicy",
    "AWS::Budgets::Budget", "AWS::CloudWatch::Alarm", "AWS::EC2::SecurityGroupEgress",
    "AWS::FSx::DataRepositoryAssociation", "AWS::FSx::FileSystem", "AWS::S3::BucketPolicy",
    "AWS::SNS::Subscription", "AWS::SNS::TopicPolicy", "AWS::SQS::QueuePolicy", MULTINODE,
}


@contextmanager
def nothing_leaks() -> Iterator[dict[str, list[str]]]:
    """What reaches the terminal (stdout, stderr, warnings, log records at WARNING and up) while deploying."""
    leaked: dict[str, list[str]] = {"warnings": [], "stdout": [], "stderr": [], "logs": []}

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            leaked["logs"].append(f"{record.name}: {record.getMessage()}")

    handler = Handler(logging.WARNING)
    logging.getLogger().addHandler(handler)
    out, err = io.StringIO(), io.StringIO()
    try:
        with warnings.catch_warnings(record=True) as caught, redirect_stdout(out), redirect_stderr(err):
            warnings.simplefilter("always")
            yield leaked
    finally:
        logging.getLogger().removeHandler(handler)
        leaked["warnings"] = [str(w.message) for w in caught]
        leaked["stdout"], leaked["stderr"] = out.getvalue().splitlines(), err.getvalue().splitlines()


def without_hash(reference: str) -> str:
    """`Logical1A2B3C4D.Attr` -> `Logical.Attr` (CDK's logical-id hash)."""
    return re.sub(r"[0-9A-F]{8}(?=\.|$)", "", reference)


# --- a tiny app outside the fleet ------------------------------------------------------------------------------

OTHER_ACCOUNT = "222222222222"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """An environment-agnostic stack `Tiny` (queue, parameter, alarm, a SageMaker endpoint named in the template)
    and, in a Stage, `Team-Ledger` synthesised for OTHER_ACCOUNT in eu-west-1."""
    out = tmp_path_factory.mktemp("tiny")
    app = cdk.App(outdir=str(out))
    stack = cdk.Stack(app, "Tiny")
    queue = sqs.Queue(stack, "Queue", enforce_ssl=True)  # a QueuePolicy: a type moto skips
    ssm.StringParameter(stack, "QueueUrl", parameter_name="/tiny/queue-url", string_value=queue.queue_url)
    alarm = cloudwatch.Alarm(stack, "Backlog", metric=queue.metric_approximate_number_of_messages_visible(),
                             threshold=100, evaluation_periods=1)
    role = iam.Role(stack, "ModelRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
    model = sagemaker.CfnModel(stack, "Model", execution_role_arn=role.role_arn, primary_container={
        "image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.29.0-neuronx-sdk2.19.1"})
    config = sagemaker.CfnEndpointConfig(stack, "Config", production_variants=[{
        "variantName": "neuron", "modelName": model.attr_model_name, "instanceType": "ml.inf2.xlarge",
        "initialInstanceCount": 1}])
    endpoint = sagemaker.CfnEndpoint(stack, "Endpoint", endpoint_name="tiny-chat",
                                     endpoint_config_name=config.attr_endpoint_config_name)
    cdk.CfnOutput(stack, "QueueUrlOutput", value=queue.queue_url)
    cdk.CfnOutput(stack, "AlarmArn", value=alarm.alarm_arn)
    cdk.CfnOutput(stack, "EndpointName", value=endpoint.attr_endpoint_name)
    stage = cdk.Stage(app, "Team", env=cdk.Environment(account=OTHER_ACCOUNT, region="eu-west-1"))
    ledger = cdk.Stack(stage, "Ledger")
    ssm.StringParameter(ledger, "Name", parameter_name="/team/ledger", string_value="ledger")
    app.synth()
    return out


def test_environment_agnostic_stack_goes_where_asked_and_nothing_is_printed(tiny, recwarn, capsys, caplog) -> None:
    with offline_aws(region="eu-west-2"):
        result = deploy_assembly(tiny, only=["Tiny"])
        sm = boto3.client("sagemaker", "eu-west-2")
        endpoints = [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]]
        parameter = boto3.client("ssm", "eu-west-2").get_parameter(Name="/tiny/queue-url")["Parameter"]["Value"]
    (tiny_stack,) = result.stacks
    assert (tiny_stack.name, tiny_stack.status, tiny_stack.account, tiny_stack.region) == (
        "Tiny", "CREATE_COMPLETE", DEFAULT_ACCOUNT_ID, "eu-west-2")
    assert tiny_stack.outputs["QueueUrlOutput"] == parameter
    assert parameter.startswith(f"https://sqs.eu-west-2.amazonaws.com/{DEFAULT_ACCOUNT_ID}/Tiny-Queue")
    assert endpoints == [tiny_stack.outputs["EndpointName"]] == ["tiny-chat"]
    assert tiny_stack.skipped == ["AWS::CloudWatch::Alarm", "AWS::SQS::QueuePolicy"]
    assert [without_hash(p) for p in tiny_stack.placeholders] == ["Backlog.Arn"]
    env = f"{DEFAULT_ACCOUNT_ID}/eu-west-2"
    assert result.stand_ins == [
        BOOTSTRAP.format(env=env), ASSET_BUCKET.format(env=env, bucket=env.replace("/", "-")), ENDPOINT_NAME,
        INSTANCE_TYPES.format(types="ml.inf2.xlarge")]
    # moto's warnings are in the result, not on the terminal
    assert {w for w in result.warnings if "AWS::CloudWatch::Alarm" in w} == {
        "UserWarning: Tried to parse AWS::CloudWatch::Alarm but it's not supported by moto's CloudFormation "
        "implementation", "moto WARNING: No Moto CloudFormation support for AWS::CloudWatch::Alarm"}
    assert len(result.warnings) == len(set(result.warnings)) == 4
    assert len(recwarn) == 0
    assert capsys.readouterr() == ("", "")
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_region_comes_from_the_argument_then_aws_default_region_then_us_east_1(tiny, monkeypatch) -> None:
    with offline_aws(region="eu-west-2"):
        assert deploy_assembly(tiny, only=["Tiny"], region="ap-south-2").stacks[0].region == "ap-south-2"
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with mock_aws():
        (stack,) = deploy_assembly(tiny, only=["Tiny"]).stacks
    assert (stack.status, stack.account, stack.region) == ("CREATE_COMPLETE", DEFAULT_ACCOUNT_ID, DEFAULT_REGION)


def test_a_stack_for_another_account_is_refused_before_anything_is_created(tiny) -> None:
    with offline_aws():
        with pytest.raises(ValueError) as refused:
            deploy_assembly(tiny)
        assert str(refused.value).startswith(
            f"stack Team-Ledger was synthesised for aws://{OTHER_ACCOUNT}/eu-west-1, but moto is serving account "
            f"{DEFAULT_ACCOUNT_ID} (MOTO_ACCOUNT_ID): deploy it inside "
            f"neuronfleet.offline.offline_aws(account='{OTHER_ACCOUNT}')")
        with pytest.raises(ValueError, match="stack Tiny was given account='333333333333', but moto is serving"):
            deploy_assembly(tiny, account="333333333333", only=["Tiny"])
        with pytest.raises(ValueError, match=r"only=\['Tony'\]: no stack named Tony .* its stacks: Team-Ledger, Tiny"):
            deploy_assembly(tiny, only=["Tony"])
        assert boto3.client("cloudformation").list_stacks()["StackSummaries"] == []


def test_offline_aws_serves_the_assembly_account_and_each_stack_keeps_its_region(tiny, monkeypatch) -> None:
    monkeypatch.delenv("MOTO_ACCOUNT_ID", raising=False)
    monkeypatch.setenv("AWS_PROFILE", "a-real-profile")
    with offline_aws(account=OTHER_ACCOUNT, region="us-west-2"):
        assert "AWS_PROFILE" not in os.environ
        result = deploy_assembly(tiny)
        ledger = boto3.client("ssm", "eu-west-1").get_parameter(Name="/team/ledger")["Parameter"]["Value"]
        caller = boto3.client("sts").get_caller_identity()["Account"]
    assert {s.name: (s.status, s.account, s.region) for s in result.stacks} == {
        "Tiny": ("CREATE_COMPLETE", OTHER_ACCOUNT, "us-west-2"),
        "Team-Ledger": ("CREATE_COMPLETE", OTHER_ACCOUNT, "eu-west-1")}
    assert (ledger, caller) == ("ledger", OTHER_ACCOUNT)
    assert "MOTO_ACCOUNT_ID" not in os.environ and os.environ["AWS_PROFILE"] == "a-real-profile"


def test_outside_moto_nothing_is_deployed(tiny) -> None:
    with pytest.raises(RuntimeError, match=r"call it inside neuronfleet.offline.offline_aws\(\) or moto.mock_aws\(\)"):
        deploy_assembly(tiny)


# --- the fleets ------------------------------------------------------------------------------------------------


def _deploy(synth_fleet, name: str) -> tuple[DeployResult, dict[str, Any]]:
    fleet = synth_fleet(name)
    account, region = fleet.fleet.account, fleet.fleet.region
    with offline_aws(account=account, region=region):
        with nothing_leaks() as leaked:
            result = deploy_assembly(fleet.assembly.directory)
        ec2, sm = boto3.client("ec2", region), boto3.client("sagemaker", region)
        seen = {
            "leaked": leaked,
            "launch_templates": [
                v["LaunchTemplateData"] for lt in ec2.describe_launch_templates()["LaunchTemplates"]
                for v in ec2.describe_launch_template_versions(
                    LaunchTemplateId=lt["LaunchTemplateId"])["LaunchTemplateVersions"]],
            "functions": sorted(f["Handler"] for f in boto3.client("lambda", region).list_functions()["Functions"]),
            "tables": boto3.client("dynamodb", region).list_tables()["TableNames"],
            "endpoints": {e["EndpointName"]: sm.describe_endpoint(EndpointName=e["EndpointName"])
                          for e in sm.list_endpoints()["Endpoints"]},
            "queues": [q["jobQueueName"] for q in boto3.client("batch", region).describe_job_queues()["jobQueues"]],
            "security_groups": ec2.describe_security_groups()["SecurityGroups"],
        }
    return result, seen


@pytest.fixture(scope="module")
def dev(synth_fleet) -> tuple[DeployResult, dict[str, Any]]:
    return _deploy(synth_fleet, "dev")


@pytest.fixture(scope="module")
def prod(synth_fleet) -> tuple[DeployResult, dict[str, Any]]:
    return _deploy(synth_fleet, "prod")


def test_dev_deploys_completely_into_the_fleet_account_and_region(dev) -> None:
    result, seen = dev
    assert [(s.name, s.status, s.account, s.region) for s in result.stacks] == [
        (n, "CREATE_COMPLETE", "111111111111", "us-east-2") for n in (
            "nf-dev-network", "nf-dev-alerts", "nf-dev-train-dev", "nf-dev-inference", "nf-dev-cost")]
    assert len(seen["endpoints"]) == 1
    assert sorted("Ledger" in t for t in seen["tables"]) == [False, True]  # the spend ledger, the announcements ledger
    assert any("Announced" in t for t in seen["tables"])


def test_dev_gaps_are_each_reported_once(dev) -> None:
    result, _ = dev
    env = "111111111111/us-east-2"
    assert result.stand_ins == [
        BOOTSTRAP.format(env=env), ASSET_BUCKET.format(env=env, bucket="111111111111-us-east-2"),
        "moto: AWS::KMS::Key tags passed as TagKey/TagValue", *BATCH, ENDPOINT_NAME,
        INSTANCE_TYPES.format(types="ml.inf2.xlarge")]
    assert {s.name: s.skipped for s in result.stacks} == {
        "nf-dev-network": [],
        "nf-dev-alerts": ["AWS::SNS::TopicPolicy"],
        "nf-dev-train-dev": ["AWS::EC2::SecurityGroupEgress", "AWS::FSx::DataRepositoryAssociation",
                             "AWS::FSx::FileSystem", "AWS::S3::BucketPolicy", MULTINODE],
        "nf-dev-inference": ["AWS::ApplicationAutoScaling::ScalableTarget",
                             "AWS::ApplicationAutoScaling::ScalingPolicy", "AWS::CloudWatch::Alarm",
                             "AWS::S3::BucketPolicy"],  # the compile-cache bucket's (ddeba52)
        "nf-dev-cost": ["AWS::Budgets::Budget", "AWS::CloudWatch::Alarm", "AWS::S3::BucketPolicy",
                        "AWS::SQS::QueuePolicy"]}
    placeholders = {s.name: [without_hash(p) for p in s.placeholders] for s in result.stacks if s.placeholders}
    # the file system: its Ref in an output (aaf28b7: a skipped resource's exported Ref gets a placeholder name)
    assert placeholders == {"nf-dev-train-dev": ["ClusterJobDefinition", "ClusterLustre", "ClusterLustre.LustreMountName"]}


def test_dev_warnings_are_in_the_result_not_on_the_terminal(dev) -> None:
    result, seen = dev
    assert seen["leaked"] == {"warnings": [], "stdout": [], "stderr": [], "logs": []}
    skipped = set().union(*(s.skipped for s in result.stacks)) - {MULTINODE}
    assert len(result.warnings) == len(set(result.warnings)) == 2 * len(skipped)
    assert {next(t for t in skipped if t in w) for w in result.warnings} == skipped


def test_dev_endpoint_has_the_name_its_stack_outputs(dev) -> None:
    result, seen = dev
    outputs = {k: v for s in result.stacks for k, v in s.outputs.items() if k.endswith("EndpointName")}
    assert list(seen["endpoints"]) == list(outputs.values()) and len(outputs) == 1


def test_dev_is_refused_in_moto_default_account(synth_fleet) -> None:
    with offline_aws(), pytest.raises(ValueError, match=(
            r"stack nf-dev-network was synthesised for aws://111111111111/us-east-2, but moto is serving account "
            rf"{DEFAULT_ACCOUNT_ID} .*offline_aws\(account='111111111111'\)")):
        deploy_assembly(synth_fleet("dev").assembly.directory)


def test_prod_deploys_every_stack(prod) -> None:
    result, seen = prod
    assert [(s.name, s.status, s.reason, s.account, s.region) for s in result.stacks] == [
        (n, "CREATE_COMPLETE", "", "333333333333", "us-east-2") for n in (
            # the fallback stack is built right after the Batch clusters (EKS stacks' capacity alerts name its pool)
            "nf-prod-network", "nf-prod-alerts", "nf-prod-train-pretrain", "nf-prod-train-finetune",
            "nf-prod-fallback", "nf-prod-inference", "nf-prod-capacity", "nf-prod-cost")]
    assert result.resource_count() > 150
    assert seen["leaked"] == {"warnings": [], "stdout": [], "stderr": [], "logs": []}


def test_prod_gaps_are_exactly_the_known_ones(prod) -> None:
    result, _ = prod
    assert set().union(*(s.skipped for s in result.stacks)) == KNOWN_SKIPPED
    placeholders = sorted({p.split(".")[0].rstrip("0123456789ABCDEF") for s in result.stacks for p in s.placeholders})
    # the failover names chat's alarms by prefix (no GetAtt on a skipped type); embed's rolling update names its
    # alarms for auto-rollback:
    assert placeholders == ["ClusterJobDefinition", "ClusterLustre",
                            "EmbedErrors5xxAlarm", "EmbedLatencyP99Alarm", "EmbedModelErrorsAlarm",
                            "GpuPoolJobfinetunecuda"]  # the pool's multinode job definition (moto registers none)
    env = "333333333333/us-east-2"
    assert sorted(result.stand_ins) == sorted([
        BOOTSTRAP.format(env=env), ASSET_BUCKET.format(env=env, bucket="333333333333-us-east-2"),
        "moto: AWS::KMS::Key tags passed as TagKey/TagValue", *BATCH,
        "moto: AWS::SSM::Parameter tags passed as a Key/Value list",
        "moto: AWS::SSM::Parameter without a Name given one (CloudFormation generates it)", ENDPOINT_NAME,
        "moto: SageMaker has no InstancePools; the variant created on its first pool's type (template tests cover "
        "the pools)",  # chat's GPU pool after inf2.48xlarge
        INSTANCE_TYPES.format(types="ml.inf2.48xlarge, ml.inf2.xlarge")])


def test_prod_endpoints_have_the_names_their_stacks_output(prod) -> None:
    result, seen = prod
    outputs = {v for s in result.stacks for k, v in s.outputs.items() if k.endswith("EndpointName")}
    assert set(seen["endpoints"]) == outputs and len(outputs) == 2


def test_launch_templates_keep_every_efa_interface(prod) -> None:
    _, seen = prod
    by_type: dict[str, list[int]] = {}
    for data in seen["launch_templates"]:
        # EFA interfaces only: each template also has its ENA primary (the EC2 user guide's current EFA layout)
        by_type.setdefault(data["InstanceType"], []).append(
            sum(i.get("InterfaceType") in ("efa", "efa-only") for i in data["NetworkInterfaces"]))
    assert by_type == {"trn2u.48xlarge": [16], "trn2.48xlarge": [16], "p5.48xlarge": [32], "p5en.48xlarge": [16],
                       "g6e.48xlarge": [4]}
    trn2u = next(d for d in seen["launch_templates"] if d["InstanceType"] == "trn2u.48xlarge")
    assert trn2u["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert "InterfaceType" not in trn2u["NetworkInterfaces"][0]  # the primary: ENA
    assert {i["InterfaceType"] for i in trn2u["NetworkInterfaces"][1:]} == {"efa-only"}


def test_functions_tables_endpoints_queues_and_groups_exist(prod) -> None:
    _, seen = prod
    # no failover: prod's chat keeps a warm GPU standby (a pool of its Neuron variant), nothing to move traffic to
    assert seen["functions"] == ["capacity_alert.handler.handler", "capacity_lifecycle.handler.handler",
                                 "capacity_lifecycle.purchases.handler", "cost.collector.handler",
                                 "cost.report.handler", "cost.waste.handler"]
    tables = sorted(t.split("-")[3] if t.count("-") >= 4 else t for t in seen["tables"])
    # the spend ledger; what the capacity alerts, the Capacity Block lifecycle (and its fleet-wide extension budget),
    # the purchase announcer and the waste detector said (no failover state: a warm standby has no failover)
    assert sum("Announced" in t for t in seen["tables"]) == 4, tables
    assert sum("FailoverState" in t for t in seen["tables"]) == 0, tables
    assert len(seen["tables"]) == 5, tables
    assert len(seen["queues"]) == 3  # two Trainium clusters and the GPU pool
    variants = {name: sorted((v["VariantName"]) for v in e["ProductionVariants"]) for name, e in seen["endpoints"].items()}
    assert sorted(variants.values()) == [["neuron"], ["neuron"]]
    efa_groups = [g for g in seen["security_groups"] if "EFA" in g.get("Description", "")]
    assert len(efa_groups) == 3
    for g in efa_groups:
        assert all(r.get("IpRanges") == [] for r in g["IpPermissions"]), g["IpPermissions"]


# --- config/org.yaml: cost monitors on a CUR 2.0 export, the export in us-east-1, the fleet in us-west-2 ----------


@pytest.fixture(scope="module")
def org(synth_fleet) -> tuple[DeployResult, dict[str, Any]]:
    fleet = synth_fleet("org")
    export = fleet.template_json("cur-export")
    (resource,) = export["Resources"].values()
    destination = resource["Properties"]["Export"]["DestinationConfigurations"]["S3Destination"]
    with offline_aws(account=fleet.fleet.account, region=fleet.fleet.region):
        with nothing_leaks() as leaked:
            result = deploy_assembly(fleet.assembly.directory)
        s3 = boto3.client("s3", fleet.fleet.region)
        seen = {"leaked": leaked, "destination": destination,
                "bucket_region": s3.get_bucket_location(Bucket=destination["S3Bucket"])["LocationConstraint"],
                "functions": sorted(f["Handler"] for f in boto3.client("lambda", fleet.fleet.region).list_functions()[
                    "Functions"])}
    return result, seen


def test_org_deploys_the_export_stack_in_us_east_1_after_the_bucket_it_writes_to(org) -> None:
    result, seen = org
    assert [(s.name, s.status, s.account, s.region) for s in result.stacks] == [
        ("nf-org-network", "CREATE_COMPLETE", "444444444444", "us-west-2"),
        ("nf-org-alerts", "CREATE_COMPLETE", "444444444444", "us-west-2"),
        ("nf-org-cost", "CREATE_COMPLETE", "444444444444", "us-west-2"),
        ("nf-org-cur-export", "CREATE_COMPLETE", "444444444444", "us-east-1")]
    # the bucket the export names exists, in the region the export names, created by the cost stack
    assert (seen["bucket_region"], seen["destination"]["S3Region"]) == ("us-west-2", "us-west-2")
    assert "cost.collector.handler" in seen["functions"]
    assert seen["leaked"] == {"warnings": [], "stdout": [], "stderr": [], "logs": []}


def test_org_gaps_are_the_cur_types_moto_lacks(org) -> None:
    """moto's CloudFormation has no Data Exports, Glue or Athena types: tests/constructs/test_cur.py covers them
    (the export, its destination and dependency, the Glue table, the workgroup, the named queries)."""
    result, _ = org
    skipped = {s.name: s.skipped for s in result.stacks}
    assert skipped["nf-org-cur-export"] == ["AWS::BCMDataExports::Export"]
    assert {"AWS::Athena::NamedQuery", "AWS::Athena::WorkGroup", "AWS::Glue::Database", "AWS::Glue::Table"} <= set(
        skipped["nf-org-cost"])
    for env in ("444444444444/us-west-2", "444444444444/us-east-1"):
        assert BOOTSTRAP.format(env=env) in result.stand_ins


# --- config/eval.yaml: the evaluation phase on trn2.3xlarge, in sa-east-1 ----------------------------------------


def test_eval_deploys_a_single_chip_trn2_cluster_and_an_inf2_endpoint_in_sa_east_1(synth_fleet) -> None:
    result, seen = _deploy(synth_fleet, "eval")
    assert [(s.name, s.status, s.region) for s in result.stacks] == [
        (f"nf-eval-{part}", "CREATE_COMPLETE", "sa-east-1") for part in
        ("network", "alerts", "train-port", "inference", "cost")]
    (lt,) = seen["launch_templates"]
    assert lt["InstanceType"] == "trn2.3xlarge"
    # one network card with one EFA (AWS's DescribeInstanceTypes): the primary ENA and an EFA-only interface
    assert [(i["NetworkCardIndex"], i["DeviceIndex"], i.get("InterfaceType", "interface"))
            for i in lt["NetworkInterfaces"]] == [(0, 0, "interface"), (0, 1, "efa-only")]
    assert list(seen["endpoints"]) and seen["leaked"]["warnings"] == []


# --- config/smoke.yaml: the smoke run of docs/day-one.md, in sa-east-1 ------------------------------------------------


def test_smoke_deploys_its_node_its_endpoint_with_the_failover_and_the_cost_monitors(synth_fleet) -> None:
    result, seen = _deploy(synth_fleet, "smoke")
    assert [(s.name, s.status, s.region) for s in result.stacks] == [
        (f"nf-smoke-{part}", "CREATE_COMPLETE", "sa-east-1") for part in
        ("network", "alerts", "train-smoke", "inference", "cost")]
    (lt,) = seen["launch_templates"]
    assert lt["InstanceType"] == "trn2.3xlarge"
    (endpoint,) = seen["endpoints"].values()
    assert sorted(v["VariantName"] for v in endpoint["ProductionVariants"]) == ["gpu", "neuron"]
    # the run-time failover watches the endpoint; the cost monitors collect, report and detect waste
    assert "failover.handler.handler" in seen["functions"]
    assert {"cost.collector.handler", "cost.waste.handler"} <= set(seen["functions"])
    assert seen["leaked"] == {"warnings": [], "stdout": [], "stderr": [], "logs": []}
