"""Every stack of config/dev.yaml and config/prod.yaml, deployed through moto's CloudFormation API.

moto's gaps are handled by neuronfleet.offline and reported; this test pins the reports, so a new gap
(or a gap moto closes) shows up here. Each type moto skips is covered by template tests:
  AWS::FSx::* -> test_training.test_storage_bucket_and_lustre; AWS::CloudWatch::Alarm ->
  test_inference.test_alarms_go_to_the_topic, test_cost_stack.test_handler_errors_alarm_and_dead_letter_queues;
  AWS::ApplicationAutoScaling::* -> test_inference.test_target_tracking_and_scheduled_scaling;
  AWS::Budgets::Budget -> test_cost_stack.test_budget_per_fleet_with_forecast_notifications_to_the_topic;
  AWS::S3::BucketPolicy -> test_training.test_storage_bucket_and_lustre; AWS::SNS::TopicPolicy ->
  test_cost_stack.test_alerts_topic_lets_budgets_publish; AWS::EC2::SecurityGroupEgress ->
  test_training.test_efa_security_group_allows_itself_and_nothing_from_the_internet; multinode job
  definitions -> test_training.test_batch_compute_environment_queue_and_mnp_job_definition.
"""

from __future__ import annotations

import warnings
from typing import Any

import boto3
import pytest
from moto import mock_aws

from neuronfleet.offline import DeployResult, deploy_assembly, sagemaker_instance_types_from_botocore

KNOWN_SKIPPED = {
    "AWS::ApplicationAutoScaling::ScalableTarget", "AWS::ApplicationAutoScaling::ScalingPolicy",
    "AWS::Budgets::Budget", "AWS::CloudWatch::Alarm", "AWS::EC2::SecurityGroupEgress",
    "AWS::FSx::DataRepositoryAssociation", "AWS::FSx::FileSystem", "AWS::S3::BucketPolicy",
    "AWS::SNS::Subscription", "AWS::SNS::TopicPolicy", "AWS::SQS::QueuePolicy",
    "AWS::Batch::JobDefinition (multinode: moto's CloudFormation registers container jobs only)",
}


def _deploy(synth_fleet, name: str, monkeypatch) -> tuple[DeployResult, dict[str, Any]]:
    fleet = synth_fleet(name)
    monkeypatch.setenv("MOTO_ACCOUNT_ID", fleet.fleet.account)
    monkeypatch.setenv("AWS_DEFAULT_REGION", fleet.fleet.region)
    with mock_aws(), sagemaker_instance_types_from_botocore(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = deploy_assembly(fleet.assembly.directory)
        region = fleet.fleet.region
        seen = {
            "launch_templates": [
                v["LaunchTemplateData"] for lt in boto3.client("ec2", region).describe_launch_templates()["LaunchTemplates"]
                for v in boto3.client("ec2", region).describe_launch_template_versions(
                    LaunchTemplateId=lt["LaunchTemplateId"])["LaunchTemplateVersions"]],
            "functions": sorted(f["Handler"] for f in boto3.client("lambda", region).list_functions()["Functions"]),
            "tables": boto3.client("dynamodb", region).list_tables()["TableNames"],
            "endpoints": {e["EndpointName"]: boto3.client("sagemaker", region).describe_endpoint(
                EndpointName=e["EndpointName"]) for e in boto3.client("sagemaker", region).list_endpoints()["Endpoints"]},
            "queues": [q["jobQueueName"] for q in boto3.client("batch", region).describe_job_queues()["jobQueues"]],
            "security_groups": boto3.client("ec2", region).describe_security_groups()["SecurityGroups"],
        }
    return result, seen


@pytest.fixture(scope="module")
def prod(synth_fleet) -> tuple[DeployResult, dict[str, Any]]:
    with pytest.MonkeyPatch.context() as mp:
        return _deploy(synth_fleet, "prod", mp)


def test_dev_deploys_completely(synth_fleet, monkeypatch) -> None:
    result, seen = _deploy(synth_fleet, "dev", monkeypatch)
    assert [(s.name, s.status) for s in result.stacks] == [(n, "CREATE_COMPLETE") for n in (
        "nf-dev-network", "nf-dev-alerts", "nf-dev-train-dev", "nf-dev-inference", "nf-dev-cost")]
    assert len(seen["endpoints"]) == 1 and len(seen["tables"]) == 1


def test_prod_deploys_every_stack(prod) -> None:
    result, _ = prod
    assert [(s.name, s.status, s.reason) for s in result.stacks] == [(n, "CREATE_COMPLETE", "") for n in (
        "nf-prod-network", "nf-prod-alerts", "nf-prod-train-pretrain", "nf-prod-train-finetune", "nf-prod-inference",
        "nf-prod-fallback", "nf-prod-cost")]
    assert result.resource_count() > 150


def test_gaps_are_exactly_the_known_ones(prod) -> None:
    result, _ = prod
    assert set().union(*(s.skipped for s in result.stacks)) == KNOWN_SKIPPED
    placeholders = sorted({p.split(".")[0].rstrip("0123456789ABCDEF") for s in result.stacks for p in s.placeholders})
    assert placeholders == ["ChatErrors5xxAlarm", "ChatLatencyP99Alarm", "ChatModelErrorsAlarm", "ClusterJobDefinition",
                            "ClusterLustre"]
    assert any("bootstrap" in s for s in result.stand_ins)


def test_launch_templates_keep_every_efa_interface(prod) -> None:
    _, seen = prod
    by_type: dict[str, list[int]] = {}
    for data in seen["launch_templates"]:
        by_type.setdefault(data["InstanceType"], []).append(len(data["NetworkInterfaces"]))
    assert by_type == {"trn2u.48xlarge": [16], "trn2.48xlarge": [16], "p5.48xlarge": [32], "p5en.48xlarge": [16],
                       "g6e.48xlarge": [4]}
    trn2u = next(d for d in seen["launch_templates"] if d["InstanceType"] == "trn2u.48xlarge")
    assert trn2u["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert {i["InterfaceType"] for i in trn2u["NetworkInterfaces"][1:]} == {"efa-only"}


def test_functions_tables_endpoints_queues_and_groups_exist(prod) -> None:
    _, seen = prod
    assert seen["functions"] == ["capacity_alert.handler.handler", "cost.collector.handler", "cost.report.handler",
                                 "cost.waste.handler", "failover.handler.handler"]
    assert len(seen["tables"]) == 1
    assert len(seen["queues"]) == 3  # two Trainium clusters and the GPU pool
    variants = {name: sorted((v["VariantName"]) for v in e["ProductionVariants"]) for name, e in seen["endpoints"].items()}
    assert sorted(variants.values()) == [["gpu", "neuron"], ["neuron"]]
    efa_groups = [g for g in seen["security_groups"] if "EFA" in g.get("Description", "")]
    assert len(efa_groups) == 3
    for g in efa_groups:
        assert all(r.get("IpRanges") == [] for r in g["IpPermissions"]), g["IpPermissions"]
