"""NeuronEndpoint with ``invocation: async``: AsyncInferenceConfig, scale to zero and back as AWS documents it, the
queue's alarms, the execution role's rights on its own prefixes and topics (one construct-level stack, synthesised
once through the AwsSolutions gate; config/batch.yaml takes the compliance packs' gate as a whole fleet)."""

from __future__ import annotations

import json
from typing import Any

import botocore.session
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from neuronfleet import FleetAlerts, NeuronEndpoint, tag_fleet
from neuronfleet.core.nag import acknowledge_wildcards
from neuronfleet.inference.async_queue import ASYNC_ALARMS, ASYNC_METRICS, SCALE_FROM_ZERO
from neuronfleet.settings.inference import EndpointSettings
from tests.conftest import ENV, AzStack, network, new_app, properties

REVISION = "5a8abab4a5d6f164389b1079fb721cfab8d7126c"
ASYNC: dict[str, Any] = {"instance_type": "ml.inf2.xlarge", "container": "vllm-neuronx", "task": "text-generation",
         "hf_model_id": "unsloth/Llama-3.2-1B-Instruct", "revision": REVISION, "tensor_parallel_degree": 2,
         "allow_non_cached_model": True, "invocation": "async", "max_instances": 3,
         "async_inference": {"max_concurrent_invocations_per_instance": 4}}
AUTOSCALE_DOC = "awsdocs/amazon-sagemaker-developer-guide doc_source/async-inference-autoscale.md @ d14094bb"
"""Where the scale-from-zero policy and alarm come from; their values, as that page writes them:"""
AWS_STEP_POLICY = {"AdjustmentType": "ChangeInCapacity", "MetricAggregationType": "Average", "Cooldown": 300,
                   "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}]}
AWS_ALARM = {"MetricName": "HasBacklogWithoutCapacity", "Namespace": "AWS/SageMaker", "Statistic": "Average",
             "EvaluationPeriods": 2, "DatapointsToAlarm": 2, "Threshold": 1,
             "ComparisonOperator": "GreaterThanOrEqualToThreshold", "TreatMissingData": "missing", "Period": 60}


@pytest.fixture(scope="module")
def synth() -> dict[str, Any]:
    app = new_app()
    stack = AzStack(app, "AsyncStack", env=ENV)
    tag_fleet(stack, fleet="nf-test", phase="production")
    net = network(stack)
    topic = FleetAlerts(stack, "Alerts").topic
    endpoint = NeuronEndpoint(stack, "Summarise", vpc=net.vpc, vpc_subnets=net.compute_subnets, topic=topic,
                              settings=EndpointSettings(**ASYNC), model_name="summarise")
    caller = iam.Role(stack, "Caller", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    endpoint.grant_invoke(caller)
    queue = endpoint.async_queue
    assert queue is not None
    acknowledge_wildcards(caller, "the test's caller: the queue's prefixes", resources=tuple(
        queue.bucket.arn_for_objects(f"{p}*") for p in (queue.input_prefix, queue.output_prefix, queue.failure_prefix)))
    template = Template.from_stack(stack)
    return {"endpoint": endpoint, "template": template, "json": template.to_json(), "topic": topic}


def _one(template: Template, kind: str) -> dict[str, Any]:
    (props,) = properties(template, kind).values()
    return props


def _ref_of(value: Any) -> str:
    return value["Ref"] if isinstance(value, dict) and "Ref" in value else json.dumps(value)


def test_the_endpoint_configuration_is_asynchronous_with_its_output_failures_and_topics(synth) -> None:
    config = _one(synth["template"], "AWS::SageMaker::EndpointConfig")["AsyncInferenceConfig"]
    out = config["OutputConfig"]
    assert json.dumps(out["S3OutputPath"]).count("async/Summarise/output") == 1
    assert json.dumps(out["S3FailurePath"]).count("async/Summarise/failures") == 1
    topics = {k: _ref_of(v) for k, v in out["NotificationConfig"].items()}
    created = {lid for lid in synth["template"].find_resources("AWS::SNS::Topic") if "Alerts" not in lid}
    assert set(topics) == {"SuccessTopic", "ErrorTopic"} and set(topics.values()) == created, \
        "success and error notifications on two topics of the endpoint's own"
    assert config["ClientConfig"] == {"MaxConcurrentInvocationsPerInstance": 4}
    assert "KmsKeyId" in out, "answers encrypted with the endpoint's key"


def test_the_config_fits_botocores_shape_of_async_inference_config(synth) -> None:
    """Every member the template sets exists in botocore's AsyncInferenceConfig (1.44.5), OutputConfig (required) is
    there, and the client bound is botocore's 1-1000."""
    model = botocore.session.get_session().get_service_model("sagemaker")

    def check(value: Any, shape_name: str) -> None:
        shape = model.shape_for(shape_name)
        assert set(value) <= set(shape.members), (shape_name, set(value) - set(shape.members))
        assert set(shape.required_members) <= set(value)
        for k, v in value.items():
            if shape.members[k].type_name == "structure":
                check(v, shape.members[k].name)

    config = _one(synth["template"], "AWS::SageMaker::EndpointConfig")["AsyncInferenceConfig"]
    check(config, "AsyncInferenceConfig")
    bounds = model.shape_for("MaxConcurrentInvocationsPerInstance").metadata
    from neuronfleet.settings.inference import MAX_CONCURRENT_INVOCATIONS
    assert (bounds["min"], bounds["max"]) == (1, MAX_CONCURRENT_INVOCATIONS)


def test_it_scales_to_zero_and_tracks_the_backlog_per_instance(synth) -> None:
    target = _one(synth["template"], "AWS::ApplicationAutoScaling::ScalableTarget")
    assert (target["MinCapacity"], target["MaxCapacity"]) == (0, 3)
    assert target["ScalableDimension"] == "sagemaker:variant:DesiredInstanceCount"
    variant = _one(synth["template"], "AWS::SageMaker::EndpointConfig")["ProductionVariants"][0]
    assert variant["InitialInstanceCount"] == 1, "SageMaker's least initial count; it then scales to 0"
    tracking = [p for p in properties(synth["template"], "AWS::ApplicationAutoScaling::ScalingPolicy").values()
                if p["PolicyType"] == "TargetTrackingScaling"]
    (policy,) = tracking
    conf = policy["TargetTrackingScalingPolicyConfiguration"]
    assert conf["TargetValue"] == 5.0, "AWS's example target"
    metric = conf["CustomizedMetricSpecification"]
    assert (metric["MetricName"], metric["Namespace"], metric["Statistic"]) == (
        "ApproximateBacklogSizePerInstance", "AWS/SageMaker", "Average")
    assert [d["Name"] for d in metric["Dimensions"]] == ["EndpointName"]
    assert "PredefinedMetricSpecification" not in conf, "no InvocationsPerInstance: not published for async"


def test_the_scale_from_zero_policy_and_alarm_are_awss(synth) -> None:
    steps = [p for p in properties(synth["template"], "AWS::ApplicationAutoScaling::ScalingPolicy").values()
             if p["PolicyType"] == "StepScaling"]
    (policy,) = steps
    assert policy["StepScalingPolicyConfiguration"] == AWS_STEP_POLICY, AUTOSCALE_DOC
    alarms = {lid: p for lid, p in properties(synth["template"], "AWS::CloudWatch::Alarm").items()
              if p["MetricName"] == "HasBacklogWithoutCapacity"}
    (alarm,) = alarms.values()
    assert {k: alarm[k] for k in AWS_ALARM} == AWS_ALARM, AUTOSCALE_DOC
    assert [d["Name"] for d in alarm["Dimensions"]] == ["EndpointName"]
    (action,) = alarm["AlarmActions"]
    (policy_id,) = [k for k, p in properties(synth["template"], "AWS::ApplicationAutoScaling::ScalingPolicy").items()
                    if p["PolicyType"] == "StepScaling"]
    assert action == {"Ref": policy_id}, "the alarm starts the step policy"
    assert {k: v for k, v in SCALE_FROM_ZERO.items() if k in AWS_ALARM} == {
        k: v for k, v in AWS_ALARM.items() if k not in ("MetricName", "Namespace")}


def test_the_queue_alarms_notify_the_fleets_topic_once_each_way(synth) -> None:
    alarms = properties(synth["template"], "AWS::CloudWatch::Alarm")
    name = synth["endpoint"].endpoint_name
    by_name = {p.get("AlarmName"): p for p in alarms.values()}
    age, failures = by_name[f"{name}-{ASYNC_ALARMS['backlogAge']}"], by_name[f"{name}-{ASYNC_ALARMS['invocationFailures']}"]
    assert (age["MetricName"], age["Statistic"], age["Threshold"]) == ("ApproximateAgeOfOldestRequest", "Maximum", 1800)
    assert [d["Name"] for d in age["Dimensions"]] == ["EndpointName"]
    assert (failures["MetricName"], failures["Statistic"], failures["Threshold"]) == ("InvocationFailures", "Sum", 1)
    assert sorted(d["Name"] for d in failures["Dimensions"]) == ["EndpointName", "VariantName"]
    topic = {"Ref": next(k for k, v in synth["json"]["Resources"].items()
                         if k.startswith("Alerts") and v["Type"] == "AWS::SNS::Topic")}
    for alarm in (age, failures):
        assert alarm["AlarmActions"] == [topic] and alarm["OKActions"] == [topic]
    assert f"{name}-model-errors" not in by_name, "InvocationModelErrors is not published for an async endpoint"
    assert set(ASYNC_METRICS.values()) == {"ApproximateBacklogSizePerInstance", "HasBacklogWithoutCapacity",
                                           "ApproximateAgeOfOldestRequest", "InvocationFailures"}


def _statements(template: Template) -> list[dict[str, Any]]:
    """The statements of the endpoint's execution role (its policies; not the test's caller)."""
    return [s for k, p in properties(template, "AWS::IAM::Policy").items() if k.startswith("SummariseExecution")
            for s in p["PolicyDocument"]["Statement"]]


def test_the_role_writes_only_its_prefixes_and_publishes_only_its_topics(synth) -> None:
    stmts = _statements(synth["template"])
    puts = [s for s in stmts if "s3:PutObject" in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])]
    resources = json.dumps([s["Resource"] for s in puts])
    assert "async/Summarise/output/*" in resources and "async/Summarise/failures/*" in resources
    assert "async/Summarise/input" not in resources, "never writes its input"
    publishes = [s for s in stmts if s["Action"] == "sns:Publish"]
    created = {lid for lid in synth["template"].find_resources("AWS::SNS::Topic") if "Alerts" not in lid}
    published = [r for s in publishes for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])]
    assert sorted(_ref_of(r) for r in published) == sorted(created), "its two topics, nothing else"


def test_the_topics_are_encrypted_and_tls_only(synth) -> None:
    for lid, props in properties(synth["template"], "AWS::SNS::Topic").items():
        if lid.startswith("Alerts"):
            continue
        assert "KmsMasterKeyId" in props
    policies = json.dumps(properties(synth["template"], "AWS::SNS::TopicPolicy"))
    assert policies.count("aws:SecureTransport") >= 2


def test_a_real_time_endpoint_has_no_queue() -> None:
    """Real-time behaviour unchanged: no AsyncInferenceConfig, no step policy, the InvocationsPerInstance tracking."""
    app = new_app()
    stack = AzStack(app, "RealTime", env=ENV)
    tag_fleet(stack, fleet="nf-test", phase="production")
    net = network(stack)
    settings = {k: v for k, v in ASYNC.items() if k not in ("invocation", "async_inference")}
    NeuronEndpoint(stack, "Chat", vpc=net.vpc, settings=EndpointSettings(**settings))
    template = Template.from_stack(stack)
    assert "AsyncInferenceConfig" not in _one(template, "AWS::SageMaker::EndpointConfig")
    (policy,) = properties(template, "AWS::ApplicationAutoScaling::ScalingPolicy").values()
    assert policy["TargetTrackingScalingPolicyConfiguration"]["PredefinedMetricSpecification"] == {
        "PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"}
    assert _one(template, "AWS::ApplicationAutoScaling::ScalableTarget")["MinCapacity"] == 1


def test_a_caller_invokes_asynchronously_and_reaches_only_the_queues_prefixes(synth) -> None:
    policies = {k: p for k, p in properties(synth["template"], "AWS::IAM::Policy").items() if "Caller" in k}
    (policy,) = policies.values()
    by_action: dict[str, str] = {}
    for s in policy["PolicyDocument"]["Statement"]:
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]]):
            by_action[a] = by_action.get(a, "") + json.dumps(s["Resource"])
    assert set(by_action) == {"sagemaker:InvokeEndpointAsync", "s3:PutObject", "s3:GetObject"}
    assert "async/Summarise/input/*" in by_action["s3:PutObject"] and "output" not in by_action["s3:PutObject"]
    assert "async/Summarise/output/*" in by_action["s3:GetObject"] and "failures/*" in by_action["s3:GetObject"]
    assert "input" not in by_action["s3:GetObject"]
