"""NeuronEndpoint and EndpointFailover, the failover and update half: a GPU variant that scales and loads a model of
its own, updates that keep state (and roll where SageMaker can), network isolation, capture retention, volume
limits, and the failover function's wiring. Facts are checked against the installed botocore where it has them."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import botocore
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template

from neuronfleet import EndpointFailover, EndpointSettings, GpuVariant, InvalidSettings, NeuronEndpoint
from neuronfleet.inference.endpoint import GPU_VARIANT, MAX_DEPLOYMENT_S, MIN_DEPLOYMENT_S, NEURON_VARIANT, ROLLING_WAIT_S
from neuronfleet.settings.inference import (
    MAX_VOLUME_SIZE_GIB,
    ROLLING_MAX_BATCH_SHARE,
    ROLLING_MIN_BATCH_SHARE,
)
from neuronfleet_contract.alarms import NEURON_ALARMS, alarm_name
from neuronfleet_contract.failover import FailoverConfig
from tests.conftest import ENV, EXAMPLE_FLEETS, HOT_PROD, AzStack, network, new_app, properties

LIVE = {"instance_type": "ml.inf2.48xlarge", "tensor_parallel_degree": 24, "batch_size": 8, "sequence_length": 8192,
        "min_instances": 2, "max_instances": 8,
        "model_data_url": "s3://models/llama-70b-neuron/model.tar.gz", "data_capture_percent": 5,
        "data_capture_retention_days": 21, "data_capture_versioning": True,
        "alarms": {"latency_p99_ms": 8000},
        "gpu_variant": GpuVariant(instance_type="ml.p5.48xlarge", model_data_url="s3://models/llama-70b-hf/m.tar.gz",
                                  min_instances=1, max_instances=2, neuron_instances_per_gpu_instance=4)}
SOLO = {"instance_type": "ml.inf2.xlarge", "hf_model_id": "BAAI/bge-large-en-v1.5", "min_instances": 2,
        "max_instances": 6, "allow_non_cached_model": False}


@cache
def sagemaker_model() -> dict[str, Any]:
    path = Path(botocore.__file__).parent / "data" / "sagemaker" / "2017-07-24" / "service-2.json.gz"
    return json.loads(gzip.decompress(path.read_bytes()))["shapes"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def synth() -> dict[str, Any]:
    app = new_app()
    stack = AzStack(app, "Failover", env=ENV)
    net = network(stack)
    topic = sns.Topic(stack, "Alerts", enforce_ssl=True,
                      master_key=cdk.aws_kms.Key(stack, "TopicKey", enable_key_rotation=True))
    chat = NeuronEndpoint(stack, "Chat", vpc=net.vpc, vpc_subnets=net.compute_subnets, topic=topic,
                          settings=EndpointSettings(**LIVE))
    embed = NeuronEndpoint(stack, "Embed", vpc=net.vpc, vpc_subnets=net.compute_subnets, topic=topic,
                           settings=EndpointSettings(**SOLO))
    failover = EndpointFailover(stack, "Failover", endpoints=[chat], topic=topic)
    template = Template.from_json(app.synth().get_stack_by_name(stack.stack_name).template)
    return {"t": template, "chat": chat, "embed": embed, "failover": failover, "stack": stack}


def _endpoint(synth: dict[str, Any], cid: str) -> dict[str, Any]:
    (props,) = [p for k, p in properties(synth["t"], "AWS::SageMaker::Endpoint").items() if k.startswith(cid)]
    return props


def _models(synth: dict[str, Any], cid: str) -> dict[str, dict[str, Any]]:
    return {k.removeprefix(cid).split("Model")[0].lower(): p
            for k, p in properties(synth["t"], "AWS::SageMaker::Model").items() if k.startswith(cid)}


# ------------------------------------------------------------------------------------------ a GPU variant that scales


def test_gpu_variant_scales_between_its_own_bounds(synth) -> None:
    t, chat = synth["t"], synth["chat"]
    targets = {p["ResourceId"]: p for p in properties(t, "AWS::ApplicationAutoScaling::ScalableTarget").values()}
    gpu = targets[f"endpoint/{chat.endpoint_name}/variant/{GPU_VARIANT}"]
    neuron = targets[f"endpoint/{chat.endpoint_name}/variant/{NEURON_VARIANT}"]
    assert (gpu["MinCapacity"], gpu["MaxCapacity"]) == (1, 2) and (neuron["MinCapacity"], neuron["MaxCapacity"]) == (2, 8)
    assert chat.gpu_scalable_target is not None and synth["embed"].gpu_scalable_target is None
    targets_of_policies = [json.dumps(p["ScalingTargetId"]) for p in
                           properties(t, "AWS::ApplicationAutoScaling::ScalingPolicy").values()
                           if p["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] == 80]
    assert len(targets_of_policies) == 1 and "ChatGpuScaling" in targets_of_policies[0]  # 20 x 4 per GPU instance
    (config,) = [p for k, p in properties(t, "AWS::SageMaker::EndpointConfig").items() if k.startswith("Chat")]
    (variant,) = [v for v in config["ProductionVariants"] if v["VariantName"] == GPU_VARIANT]
    assert variant["InitialInstanceCount"] == 1


def test_gpu_variant_loads_its_own_model_and_may_read_only_that_artifact(synth) -> None:
    models = _models(synth, "Chat")
    assert models["gpu"]["PrimaryContainer"]["ModelDataUrl"] == "s3://models/llama-70b-hf/m.tar.gz"
    assert models["neuron"]["PrimaryContainer"]["ModelDataUrl"] == "s3://models/llama-70b-neuron/model.tar.gz"
    reads = {s["Sid"]: json.dumps(s["Resource"]) for p in properties(synth["t"], "AWS::IAM::Policy").values()
             for s in p["PolicyDocument"]["Statement"] if s["Action"] == "s3:GetObject" and "Sid" in s}
    assert reads == {
        "ReadModelArtifact": '{"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, '
                             '":s3:::models/llama-70b-neuron/model.tar.gz"]]}',
        "ReadGpuModelArtifact": '{"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, '
                                '":s3:::models/llama-70b-hf/m.tar.gz"]]}'}


def test_models_from_s3_run_network_isolated_hub_models_do_not(synth) -> None:
    chat, embed = _models(synth, "Chat"), _models(synth, "Embed")
    assert chat["neuron"]["EnableNetworkIsolation"] is True and chat["gpu"]["EnableNetworkIsolation"] is True
    assert embed["neuron"]["EnableNetworkIsolation"] is False  # downloads BAAI/bge-large-en-v1.5 from the hub
    assert "EnableNetworkIsolation" in sagemaker_model()["CreateModelInput"]["members"]


# ------------------------------------------------------------------------------------------ updates that keep state


def test_every_update_retains_live_counts_and_weights(synth) -> None:
    for cid in ("Chat", "Embed"):
        ep = _endpoint(synth, cid)
        assert ep["RetainAllVariantProperties"] is True and "ExcludeRetainedVariantProperties" not in ep
    members = sagemaker_model()["UpdateEndpointInput"]["members"]
    assert {"RetainAllVariantProperties", "ExcludeRetainedVariantProperties", "DeploymentConfig"} <= set(members)


def test_a_single_variant_endpoint_rolls_a_multi_variant_one_cannot(synth) -> None:
    assert "DeploymentConfig" not in _endpoint(synth, "Chat")  # two variants: SageMaker's blue/green default
    deployment = _endpoint(synth, "Embed")["DeploymentConfig"]
    rolling = deployment["RollingUpdatePolicy"]
    assert rolling["MaximumBatchSize"] == {"Type": "INSTANCE_COUNT", "Value": 1}  # 1 of 2..6: 17% to 50%
    assert rolling["WaitIntervalInSeconds"] == ROLLING_WAIT_S
    assert rolling["MaximumExecutionTimeoutInSeconds"] == min(MAX_DEPLOYMENT_S, 6 * (1800 + 1800 + ROLLING_WAIT_S))
    alarms = deployment["AutoRollbackConfiguration"]["Alarms"]
    assert len(alarms) == 3 and all("Ref" in a["AlarmName"] for a in alarms)


def test_rolling_update_limits_match_botocore() -> None:
    shapes = sagemaker_model()
    timeout = shapes["MaximumExecutionTimeoutInSeconds"]
    assert (timeout["min"], timeout["max"]) == (MIN_DEPLOYMENT_S, MAX_DEPLOYMENT_S)
    assert shapes["WaitIntervalInSeconds"]["max"] >= ROLLING_WAIT_S >= shapes["WaitIntervalInSeconds"]["min"]
    doc = shapes["RollingUpdatePolicy"]["members"]["MaximumBatchSize"]["documentation"]
    assert f"between {ROLLING_MIN_BATCH_SHARE:.0%} to {ROLLING_MAX_BATCH_SHARE:.0%}" in doc
    assert shapes["CapacitySizeType"]["enum"] == ["INSTANCE_COUNT", "CAPACITY_PERCENT"]


@pytest.mark.parametrize(("low", "high", "batch"), [(2, 6, 1), (1, 1, None), (1, 4, None), (2, 20, 1), (2, 21, None),
                                                     (4, 40, 2), (10, 10, 1)])
def test_rolling_batch_fits_every_instance_count_or_is_not_used(low, high, batch) -> None:
    s = EndpointSettings(**{**SOLO, "min_instances": low, "max_instances": high})
    assert s.rolling_batch_instances == batch
    if batch:
        assert all(ROLLING_MIN_BATCH_SHARE * n <= batch <= ROLLING_MAX_BATCH_SHARE * n for n in range(low, high + 1))


# ------------------------------------------------------------------------------------------ capture, volume


def test_captured_data_expires_and_the_bucket_is_versioned_as_asked(synth) -> None:
    (bucket,) = [p for p in properties(synth["t"], "AWS::S3::Bucket").values() if "LifecycleConfiguration" in p]
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert (rule["Prefix"], rule["ExpirationInDays"], rule["NoncurrentVersionExpiration"]["NoncurrentDays"],
            rule["Status"]) == ("capture/Chat/", 21, 21, "Enabled")


def test_volume_limit_is_botocores() -> None:
    shape = sagemaker_model()["ProductionVariantVolumeSizeInGB"]
    assert (shape["min"], shape["max"]) == (1, MAX_VOLUME_SIZE_GIB)


def test_prod_sizes_its_70b_volume_for_the_model(synth_fleet) -> None:
    (chat,) = [e for e in synth_fleet("prod").fleet.endpoints if e.name == "chat"]
    assert chat.model_size_gib is not None and chat.model_size_gib >= 130  # 70.6B parameters in bf16: 131 GiB
    assert 2 * chat.model_size_gib <= chat.volume_size_gib <= MAX_VOLUME_SIZE_GIB


# ------------------------------------------------------------------------------------------ the failover function


def test_failover_runs_one_decision_at_a_time_and_knows_each_endpoints_capacity(synth) -> None:
    (fn,) = [f for f in properties(synth["t"], "AWS::Lambda::Function").values()
             if f["Handler"] == "failover.handler.handler"]
    assert fn["ReservedConcurrentExecutions"] == 1
    env = fn["Environment"]["Variables"]
    assert env["CAPACITY_TIMEOUT_MINUTES"] == "70"  # 1800 s download + 1800 s startup + 10 min
    (watched,) = json.loads(env["FAILOVER_ENDPOINTS"]).values()  # a literal: read whole, not searched in
    assert watched == {"latency_limit_ms": 8000, "neuron": {"min": 2, "max": 8}, "gpu": {"min": 1, "max": 2},
                       "neuron_instances_per_gpu_instance": 4}
    # the canary's limit is the latency alarm's threshold in milliseconds (the alarm itself counts microseconds)
    chat = synth["chat"]
    (latency_alarm,) = [a for a in properties(synth["t"], "AWS::CloudWatch::Alarm").values()
                        if a.get("AlarmName") == f"{chat.endpoint_name}-latency-p99"]
    assert latency_alarm["MetricName"] == "ModelLatency" and latency_alarm["Threshold"] == 8_000_000
    assert watched["latency_limit_ms"] * 1000 == latency_alarm["Threshold"]


def test_alarms_are_named_after_their_endpoint_so_the_failover_environment_need_not_carry_them(synth) -> None:
    chat = synth["chat"]
    names = {p.get("AlarmName") for p in properties(synth["t"], "AWS::CloudWatch::Alarm").values()}
    assert {f"{chat.endpoint_name}-latency-p99", f"{chat.endpoint_name}-errors-5xx",
            f"{chat.endpoint_name}-model-errors", f"{chat.endpoint_name}-gpu-latency-p99",
            f"{chat.endpoint_name}-gpu-errors-5xx", f"{chat.endpoint_name}-gpu-model-errors"} <= names
    (fn,) = [f for f in properties(synth["t"], "AWS::Lambda::Function").values()
             if f["Handler"] == "failover.handler.handler"]
    variables = fn["Environment"]["Variables"]  # a literal now: no alarm references left in it
    assert isinstance(variables["FAILOVER_ENDPOINTS"], str) and "alarms" not in variables["FAILOVER_ENDPOINTS"]
    env = {k: v for k, v in variables.items() if isinstance(v, str)} | {"ALERTS_TOPIC_ARN": "arn:aws:sns:x",
                                                                        "FAILOVER_TABLE": "state"}
    assert variables["FAILOVER_TABLE"] == {"Ref": synth["stack"].get_logical_id(
        synth["failover"].table.node.default_child)}
    (watched,) = FailoverConfig.from_environment(env).endpoints.values()
    assert watched.alarms == tuple(chat.alarm_names.values()) and len(watched.alarms) == 3
    assert watched.gpu_alarms == tuple(chat.gpu_alarm_names.values()) and len(watched.gpu_alarms) == 3


def test_the_longest_endpoint_name_with_the_longest_alarm_suffix_is_a_valid_alarm_name() -> None:
    import botocore.session

    session = botocore.session.get_session()
    longest_endpoint = session.get_service_model("sagemaker").shape_for("EndpointName").metadata["max"]  # 63
    limit = session.get_service_model("cloudwatch").shape_for("AlarmName").metadata["max"]  # 255
    longest_kind = max(NEURON_ALARMS, key=lambda k: len(NEURON_ALARMS[k]))
    assert len(alarm_name("e" * longest_endpoint, longest_kind)) <= len(alarm_name("e" * longest_endpoint, longest_kind,
                                                                                    gpu=True)) == 80 <= limit


def test_failover_may_resize_tag_and_scale_only_what_it_must(synth) -> None:
    statements = [s for p in properties(synth["t"], "AWS::IAM::Policy").values()
                  for s in p["PolicyDocument"]["Statement"]]
    chat = synth["chat"]
    (endpoint_statement,) = [s for s in statements if "sagemaker:UpdateEndpointWeightsAndCapacities" in s["Action"]]
    assert set(endpoint_statement["Action"]) == {
        "sagemaker:DescribeEndpoint", "sagemaker:UpdateEndpointWeightsAndCapacities"}
    assert not [s for s in statements if "sagemaker:AddTags" in json.dumps(s["Action"])]  # its state is its table
    assert f"endpoint/{chat.endpoint_name}" in json.dumps(endpoint_statement["Resource"])
    (scaling,) = [s for s in statements if "application-autoscaling:RegisterScalableTarget" in s["Action"]]
    own = synth["failover"].node.addr
    assert scaling["Action"] == "application-autoscaling:RegisterScalableTarget"
    assert scaling["Resource"] == "arn:aws:application-autoscaling:us-east-2:111111111111:scalable-target/*"
    assert scaling["Condition"] == {"StringEquals": {
        "application-autoscaling:service-namespace": "sagemaker",
        "application-autoscaling:scalable-dimension": "sagemaker:variant:DesiredInstanceCount",
        "aws:ResourceTag/neuronfleet:failover": own}}
    (reads,) = [s for s in statements if "application-autoscaling:DescribeScalableTargets" in s["Action"]]
    assert set(reads["Action"]) == {"application-autoscaling:DescribeScalableTargets", "cloudwatch:GetMetricData"}
    # the watched endpoint's two targets carry the failover's tag; another endpoint's do not
    tagged = {k for k, p in properties(synth["t"], "AWS::ApplicationAutoScaling::ScalableTarget").items()
              if {"Key": "neuronfleet:failover", "Value": own} in p.get("Tags", [])}
    assert {k[:len("ChatGpuScaling")] if "Gpu" in k else k[:len("ChatScaling")] for k in tagged} == {
        "ChatScaling", "ChatGpuScaling"}


# ------------------------------------------------------------------------------------------ bad input


def _settings(**overrides: Any) -> EndpointSettings:
    return EndpointSettings(**{**LIVE, **overrides})


@pytest.mark.parametrize(("overrides", "message"), [
    ({"gpu_variant": {"instance_type": "ml.p5.48xlarge", "max_instances": 2, "neuron_instances_per_gpu_instance": 4}},
     "gpu_variant.model_data_url: got None; allowed: a model the GPU container can load: model_data_url (s3://...) "
     "or hf_model_id of its own; s3://models/llama-70b-neuron/model.tar.gz is the Neuron variant's artifact"),
    ({"gpu_variant": {"instance_type": "ml.p5.48xlarge", "hf_model_id": "meta-llama/Llama-3.1-70B-Instruct"}},
     "gpu_variant.max_instances: got 1; allowed: at least 8: the Neuron variant's max_instances (8) divided by "
     "neuron_instances_per_gpu_instance (1), rounded up"),
    ({"gpu_variant": {"instance_type": "ml.p5.48xlarge", "hf_model_id": "o/m", "neuron_instances_per_gpu_instance": 0}},
     "gpu_variant.neuron_instances_per_gpu_instance: got 0; allowed: a number > 0"),
    ({"gpu_variant": {"instance_type": "ml.p5.48xlarge", "hf_model_id": "o/m", "min_instances": 3, "max_instances": 2,
                      "neuron_instances_per_gpu_instance": 4}},
     "gpu_variant.min_instances: got 3; allowed: at most max_instances (2)"),
    ({"gpu_variant": {"instance_type": "ml.p5.48xlarge", "hf_model_id": "o/m", "model_data_url": "s3://bkt/m.tar.gz",
                      "max_instances": 8}}, "gpu_variant.model_data_url: got 's3://bkt/m.tar.gz'; allowed: at most one"),
    ({"gpu_variant": {"instance_type": "ml.p5.48xlarge", "hf_model_id": "o/m", "artifact_is_framework_neutral": True,
                      "max_instances": 8}}, "gpu_variant.artifact_is_framework_neutral: got True; allowed: false when"),
    ({"container": "custom", "image_uri": "111111111111.dkr.ecr.us-east-2.amazonaws.com/neuron-server:1"},
     "gpu_variant.image_uri: got None; allowed: a GPU image: with container 'custom' the Neuron image_uri cannot"),
    ({"model_size_gib": 140, "volume_size_gib": 200},
     "volume_size_gib: got 200; allowed: at least 280 GiB for the archive and its unpacked copy (model_size_gib 140)"),
    ({"volume_size_gib": 600}, "volume_size_gib: got 600; allowed: a number <= 512"),
    ({"data_capture_retention_days": 0}, "data_capture_retention_days: got 0; allowed: a number >= 1"),
])
def test_bad_input_is_refused_with_field_value_and_allowed(overrides, message) -> None:
    with pytest.raises(InvalidSettings) as info:
        _settings(**overrides)
    assert any(str(p).startswith(message) for p in info.value.problems), info.value.problems


def test_a_framework_neutral_artifact_may_serve_both() -> None:
    gpu = GpuVariant(instance_type="ml.p5.48xlarge", artifact_is_framework_neutral=True, max_instances=8)
    assert _settings(gpu_variant=gpu).gpu_variant == gpu
    hub = EndpointSettings(**{**SOLO, "gpu_variant": GpuVariant(instance_type="ml.g6e.xlarge", max_instances=6)})
    assert hub.gpu_variant is not None and not hub.gpu_variant.own_model  # a hub id: plain weights


def test_the_gpu_variant_that_serves_is_alarmed_as_the_neuron_variant_is(synth) -> None:
    """Same metrics, thresholds, periods and actions on both variants; a shadow or no GPU variant has none."""
    chat = synth["chat"]
    alarms = {p["AlarmName"]: p for p in properties(synth["t"], "AWS::CloudWatch::Alarm").values()
              if str(p.get("AlarmName", "")).startswith(chat.endpoint_name)}
    for kind, suffix in NEURON_ALARMS.items():
        neuron, gpu = alarms[f"{chat.endpoint_name}-{suffix}"], alarms[f"{chat.endpoint_name}-gpu-{suffix}"]
        assert {d["Name"]: d["Value"] for d in gpu["Dimensions"]} == {"EndpointName": chat.endpoint_name,
                                                                       "VariantName": GPU_VARIANT}, kind
        assert {d["Name"]: d["Value"] for d in neuron["Dimensions"]}["VariantName"] == NEURON_VARIANT
        same = ("MetricName", "Namespace", "Threshold", "ComparisonOperator", "EvaluationPeriods", "Period",
                "TreatMissingData", "AlarmActions", "OKActions")
        assert {k: gpu.get(k) for k in same} == {k: neuron.get(k) for k in same}, kind
        assert (gpu.get("ExtendedStatistic"), gpu.get("Statistic")) == (neuron.get("ExtendedStatistic"),
                                                                       neuron.get("Statistic"))
    assert alarms[f"{chat.endpoint_name}-gpu-latency-p99"]["Threshold"] == 8_000_000  # 8000 ms in microseconds
    assert synth["embed"].gpu_alarms == {} and len(chat.gpu_alarms) == 3
    pilot = _shadow_pilot()
    assert pilot.gpu_variant is not None and pilot.gpu_variant.shadow
    assert pilot.gpu_alarms == {} and pilot.gpu_alarm_names == {}


def _shadow_pilot() -> NeuronEndpoint:
    app = new_app()
    stack = AzStack(app, "Shadow", env=ENV)
    net = network(stack)
    shadow = GpuVariant(instance_type="ml.p5.48xlarge", model_data_url="s3://models/llama-70b-hf/m.tar.gz",
                        shadow=True, max_instances=2, neuron_instances_per_gpu_instance=4)
    return NeuronEndpoint(stack, "Pilot", vpc=net.vpc, vpc_subnets=net.compute_subnets,
                          settings=EndpointSettings(**{**LIVE, "gpu_variant": shadow}))


def test_the_failover_hears_and_reads_both_variants_alarms_and_keeps_its_state_in_its_table(synth) -> None:
    chat, t = synth["chat"], synth["t"]
    (rule,) = [p for p in properties(t, "AWS::Events::Rule").values() if "EventPattern" in p]
    assert rule["EventPattern"] == {"source": ["aws.cloudwatch"], "detail-type": ["CloudWatch Alarm State Change"],
                                    "detail": {"alarmName": [{"prefix": f"{chat.endpoint_name}-"}]}}
    names = [*chat.alarm_names.values(), *chat.gpu_alarm_names.values()]
    assert len(names) == 6 and all(n.startswith(f"{chat.endpoint_name}-") for n in names)
    assert not any(n.startswith(f"{synth['embed'].endpoint_name}-") for n in names)
    statements = [s for p in properties(t, "AWS::IAM::Policy").values() for s in p["PolicyDocument"]["Statement"]
                  if "Failover" in json.dumps(p["Roles"])]
    (describe,) = [s for s in statements if s["Action"] == "cloudwatch:DescribeAlarms"]
    assert describe["Resource"] == f"arn:aws:cloudwatch:{ENV.region}:{ENV.account}:alarm:{chat.endpoint_name}-*"
    ids = {a.node.path.split("/")[-1] for a in (*chat.alarms.values(), *chat.gpu_alarms.values())}
    assert ids == {"LatencyP99Alarm", "Errors5xxAlarm", "ModelErrorsAlarm", "GpuLatencyP99Alarm", "GpuErrors5xxAlarm",
                   "GpuModelErrorsAlarm"}  # construct ids are a contract: the Neuron ones as before
    (table,) = properties(t, "AWS::DynamoDB::Table").values()
    assert table["KeySchema"] == [{"AttributeName": "endpoint", "KeyType": "HASH"}]
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    (state,) = [s for s in statements if "dynamodb:PutItem" in json.dumps(s["Action"])]
    assert sorted(state["Action"]) == ["dynamodb:GetItem", "dynamodb:PutItem"]
    assert "State" in json.dumps(state["Resource"]) and "*" not in json.dumps(state["Resource"])


def test_an_alarm_rule_over_eventbridges_pattern_limit_is_refused(monkeypatch) -> None:
    import botocore.session

    from neuronfleet.core.rules import EVENT_PATTERN_CHARS
    from neuronfleet.inference import failover

    model = botocore.session.get_session().get_service_model("events")
    assert EVENT_PATTERN_CHARS == model.shape_for("EventPattern").metadata["max"] == 4096
    monkeypatch.setattr(failover, "EVENT_PATTERN_CHARS", 100)
    app = new_app()
    stack = AzStack(app, "Big", env=ENV)
    net = network(stack)
    chat = NeuronEndpoint(stack, "Chat", vpc=net.vpc, vpc_subnets=net.compute_subnets, settings=EndpointSettings(**LIVE))
    with pytest.raises(InvalidSettings, match=r"EndpointFailover: endpoints: got '1 endpoints \(an alarm rule pattern "
                                              r"of 1\d\d characters\)'; allowed: at most 100 characters of pattern "
                                              r"\(EventBridge's EventPattern\)"):
        EndpointFailover(stack, "Failover", endpoints=[chat], topic=sns.Topic(stack, "T"))


SERVING_ALARM_METRICS = ("Invocation5XXErrors", "InvocationModelErrors", "ModelLatency")
ASYNC_SERVING_ALARM_METRICS = ("Invocation5XXErrors", "InvocationFailures", "ModelLatency")
"""An asynchronous endpoint's variant (issue 43): SageMaker publishes no InvocationModelErrors for it (developer guide,
"Monitor asynchronous endpoints"); its failed invocations are InvocationFailures."""


@pytest.mark.parametrize("name", [*EXAMPLE_FLEETS, HOT_PROD])
def test_every_serving_variant_of_every_example_fleet_endpoint_is_alarmed(synth_fleet, name) -> None:
    """Every production variant (shadow variants answer no one) of every endpoint: 5XX, model errors (an asynchronous
    endpoint: invocation failures) and p99 latency alarms on its own EndpointName/VariantName, each notifying the
    topic."""
    fleet = synth_fleet(name)
    variants: list[tuple[str, str]] = []
    for short in fleet.stacks:
        resources = fleet.template_json(short)["Resources"]
        configs = {k: r["Properties"] for k, r in resources.items() if r["Type"] == "AWS::SageMaker::EndpointConfig"}
        alarmed = {({d["Name"]: d["Value"] for d in p["Dimensions"]}.get("EndpointName"),
                    {d["Name"]: d["Value"] for d in p["Dimensions"]}.get("VariantName"), p["MetricName"])
                   for p in (r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm")
                   if p.get("Namespace") == "AWS/SageMaker" and p.get("AlarmActions")}
        for endpoint in (r["Properties"] for r in resources.values() if r["Type"] == "AWS::SageMaker::Endpoint"):
            config = configs[endpoint["EndpointConfigName"]["Fn::GetAtt"][0]]
            for variant in config["ProductionVariants"]:
                variants.append((endpoint["EndpointName"], variant["VariantName"]))
                expected = ASYNC_SERVING_ALARM_METRICS if "AsyncInferenceConfig" in config else SERVING_ALARM_METRICS
                missing = [m for m in expected
                           if (endpoint["EndpointName"], variant["VariantName"], m) not in alarmed]
                assert missing == [], (short, endpoint["EndpointName"], variant["VariantName"])
    assert variants or not fleet.fleet.endpoints
    if name == "prod-hot":  # prod with its hot standby: its GPU variant is among those checked
        assert any(v == GPU_VARIANT for _, v in variants), variants


def test_the_failover_follows_the_endpoints_not_the_gpu_pool_flag() -> None:
    """fallback.enabled switches on the GPU pool and the capacity alerts only: the failover watches every endpoint
    with a live GPU variant unless its fleet-file entry says failover: false."""
    from neuronfleet.fleetfile.schema import EndpointEntry
    from stacks.inference_stack import InferenceStack

    def watched(**entry: Any) -> int:
        app = new_app()
        net_stack = AzStack(app, "Net", env=ENV)
        net = network(net_stack)
        stack = InferenceStack(app, "Inf", network=net, env=ENV, alerts_topic=sns.Topic(net_stack, "T"),
                               endpoints={"Chat": EndpointEntry(name="chat", **LIVE, **entry)})
        return len(stack.failover.settings.endpoints) if stack.failover else 0

    assert watched() == 1
    assert watched(failover=False) == 0
