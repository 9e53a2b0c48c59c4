"""PilotJudge and NeuronEndpoint's cutover: the judge's least-privilege function and verdict alarm; the deployment
guardrails (blue/green canary or linear with baking periods) with every serving variant's alarms and the judge's
verdict as auto-rollback alarms; what SageMaker would refuse is refused at synth. One synth for both shapes."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match, Template

from neuronfleet import EndpointSettings, GpuVariant, InvalidSettings, NeuronEndpoint
from neuronfleet.facts.catalog import CATALOG
from neuronfleet.judge import PilotJudge
from neuronfleet.settings import CutoverSettings, PilotJudgeSettings
from neuronfleet_contract.judge import JudgeConfig
from neuronfleet_contract.namespaces import JUDGE_NAMESPACE
from tests.conftest import ENV, AzStack, network, new_app

LLAMA = {"instance_type": "ml.inf2.24xlarge", "container": "vllm-neuronx", "tensor_parallel_degree": 12,
         "hf_model_id": "meta-llama/Llama-3.1-8B-Instruct", "allow_non_cached_model": False,
         "revision": "0e9e39f249a16976918f6564b8830bc894c89659", "min_instances": 2, "max_instances": 4}
PILOT = {**LLAMA, "gpu_variant": GpuVariant(instance_type="ml.g6e.12xlarge", max_instances=4),
         "judge": PilotJudgeSettings(prompts="s3://team-prompts/sets/chat.jsonl"),
         "cutover": CutoverSettings(traffic="canary", step_percent=25, bake_s=900)}
SHADOW = {**LLAMA, "gpu_variant": GpuVariant(instance_type="ml.g6e.12xlarge", shadow=True),
          "judge": PilotJudgeSettings(prompts="s3://team-prompts/p.jsonl", schedule=None)}
GPU_ONLY = {**LLAMA, "gpu_variant": GpuVariant(instance_type="ml.g6e.12xlarge", max_instances=4),
            "cutover": CutoverSettings(traffic="linear", serve_on="gpu", pause_scaling=True)}


@pytest.fixture(scope="module")
def synth() -> dict[str, Any]:
    app = new_app()
    out: dict[str, Any] = {}
    for name, props in (("pilot", PILOT), ("gpu-only", GPU_ONLY), ("shadow", SHADOW)):
        stack = AzStack(app, f"J-{name}", env=ENV)
        net = network(stack)
        topic = sns.Topic(stack, "Alerts", enforce_ssl=True, master_key=cdk.aws_kms.Key(
            stack, "TopicKey", enable_key_rotation=True))
        endpoint = NeuronEndpoint(stack, "Endpoint", vpc=net.vpc, vpc_subnets=net.compute_subnets, topic=topic,
                                  settings=EndpointSettings(**props))
        judge = PilotJudge(stack, "Judge", endpoint=endpoint, topic=topic, fleet="nf-pilot") \
            if endpoint.settings.judge else None
        out[name] = {"stack": stack, "endpoint": endpoint, "judge": judge}
    assembly = app.synth()
    for v in out.values():
        v["template"] = Template.from_json(assembly.get_stack_by_name(v["stack"].stack_name).template)
    return out


def _deployment(t: Template) -> dict[str, Any]:
    (ep,) = t.find_resources("AWS::SageMaker::Endpoint").values()
    return dict(ep["Properties"]["DeploymentConfig"])


def test_the_canary_cutover_rolls_back_on_every_variants_alarms_and_the_verdict(synth: dict[str, Any]) -> None:
    pilot = synth["pilot"]
    endpoint: NeuronEndpoint = pilot["endpoint"]
    config = _deployment(pilot["template"])
    policy = config["BlueGreenUpdatePolicy"]
    assert policy["TrafficRoutingConfiguration"] == {
        "Type": "CANARY", "WaitIntervalInSeconds": 900, "CanarySize": {"Type": "CAPACITY_PERCENT", "Value": 25}}
    assert policy["TerminationWaitInSeconds"] == 600
    # waits (900 + 600) + download and startup (1800 + 1800) + 600 of margin
    assert policy["MaximumExecutionTimeoutInSeconds"] == 5700
    alarms = [a["AlarmName"] for a in config["AutoRollbackConfiguration"]["Alarms"]]
    name = endpoint.endpoint_name
    assert alarms == [f"{name}-latency-p99", f"{name}-errors-5xx", f"{name}-model-errors", f"{name}-gpu-latency-p99",
                      f"{name}-gpu-errors-5xx", f"{name}-gpu-model-errors", f"{name}-judge-verdict"]
    # each rollback alarm exists in the template under that name
    names = {p["Properties"].get("AlarmName") for p in pilot["template"].find_resources("AWS::CloudWatch::Alarm")
             .values()}
    assert set(alarms) <= names


def test_the_verdict_alarm_holds_the_last_verdict(synth: dict[str, Any]) -> None:
    t: Template = synth["pilot"]["template"]
    t.has_resource_properties("AWS::CloudWatch::Alarm", {
        "AlarmName": f"{synth['pilot']['endpoint'].endpoint_name}-judge-verdict", "Namespace": JUDGE_NAMESPACE,
        "MetricName": "Verdict", "Statistic": "Minimum", "Threshold": 1, "ComparisonOperator": "LessThanThreshold",
        "TreatMissingData": "ignore",
        "Dimensions": [{"Name": "Endpoint", "Value": synth["pilot"]["endpoint"].endpoint_name},
                       {"Name": "Fleet", "Value": "nf-pilot"}]})


def test_a_run_with_no_verdict_alarms_into_the_topic_and_guards_nothing(synth: dict[str, Any]) -> None:
    """A refused input or unmeasured prompts publish NoVerdict (never a Verdict point): its own alarm tells the fleet's
    topic on ALARM and OK, and it is not among the cutover's rollback alarms (no rollback on a transient error)."""
    t: Template = synth["pilot"]["template"]
    name = synth["pilot"]["endpoint"].endpoint_name
    alarms = {p["Properties"].get("AlarmName"): p["Properties"] for p in t.find_resources("AWS::CloudWatch::Alarm")
              .values()}
    alarm = alarms[f"{name}-judge-no-verdict"]
    assert {k: alarm[k] for k in ("Namespace", "MetricName", "Statistic", "Period", "Threshold", "ComparisonOperator",
                                  "EvaluationPeriods", "TreatMissingData")} == {
        "Namespace": JUDGE_NAMESPACE, "MetricName": "NoVerdict", "Statistic": "Sum", "Period": 3600, "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold", "EvaluationPeriods": 1,
        "TreatMissingData": "notBreaching"}
    assert alarm["Dimensions"] == alarms[f"{name}-judge-verdict"]["Dimensions"]
    assert len(alarm["AlarmActions"]) == 1 and alarm["AlarmActions"] == alarm["OKActions"]
    rollback = [a["AlarmName"] for a in _deployment(synth["pilot"]["template"])["AutoRollbackConfiguration"]["Alarms"]]
    assert f"{name}-judge-no-verdict" not in rollback


def test_the_judge_function_gets_least_privilege(synth: dict[str, Any]) -> None:
    t: Template = synth["pilot"]["template"]
    judge: PilotJudge = synth["pilot"]["judge"]
    role_id = t.find_resources("AWS::IAM::Role", {"Properties": {"Description": Match.string_like_regexp(
        "pilot judge")}})
    assert len(role_id) == 1
    policies = [p["Properties"]["PolicyDocument"]["Statement"] for p in t.find_resources("AWS::IAM::Policy").values()
                if any(r.get("Ref") == next(iter(role_id)) for r in p["Properties"]["Roles"])]
    statements = {json.dumps(s["Action"]): s for doc in policies for s in doc}
    invoke = statements['"sagemaker:InvokeEndpoint"']["Resource"]
    assert judge.endpoint.endpoint_name in json.dumps(invoke) and "*" not in json.dumps(invoke)
    assert statements['"s3:GetObject"']["Resource"] == {"Fn::Join": ["", [
        "arn:", {"Ref": "AWS::Partition"}, ":s3:::team-prompts/sets/chat.jsonl"]]}
    assert statements['"cloudwatch:PutMetricData"']["Condition"] == {
        "StringEquals": {"cloudwatch:namespace": JUDGE_NAMESPACE}}
    own = json.dumps(statements['["s3:GetObject", "s3:PutObject"]']["Resource"])
    assert f"/judge/{judge.endpoint.endpoint_name}/*" in own


def test_the_function_is_told_the_endpoint_its_style_and_prices(synth: dict[str, Any]) -> None:
    t: Template = synth["pilot"]["template"]
    (fn,) = [f for f in t.find_resources("AWS::Lambda::Function").values()
             if f["Properties"]["Handler"] == "judge.handler.handler"]
    env = fn["Properties"]["Environment"]["Variables"]
    assert fn["Properties"]["Timeout"] == 900 and fn["Properties"]["ReservedConcurrentExecutions"] == 1
    plain = {k: v for k, v in env.items() if isinstance(v, str)} | {"JUDGE_RECORDS_BUCKET": "records"}
    told = JudgeConfig.from_environment(plain)
    assert told.endpoint_name == synth["pilot"]["endpoint"].endpoint_name and told.style == "openai"
    assert told.prompts_bucket == "team-prompts" and told.tolerances.min_token_agreement == 0.95
    assert told.usd_per_hour["neuron"] > 0 and told.usd_per_hour["gpu"] > 0
    # SageMaker hosting is priced at SageMaker's rate where one is built in, never silently at EC2's
    from neuronfleet.facts.prices import hosting_usd_per_hour, price_table

    es = synth["pilot"]["endpoint"].settings
    neuron = es.instance_type
    assert told.usd_per_hour["neuron"] == hosting_usd_per_hour(neuron) == float(price_table()[neuron]["usd_per_hour"])
    assert told.usd_per_hour["neuron"] != CATALOG.get(neuron.removeprefix("ml.")).price.usd_per_hour
    t.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(1 hour)"})


def test_serving_on_gpu_keeps_the_variant_name_and_moves_linearly(synth: dict[str, Any]) -> None:
    t: Template = synth["gpu-only"]["template"]
    (cfg,) = t.find_resources("AWS::SageMaker::EndpointConfig").values()
    (variant,) = cfg["Properties"]["ProductionVariants"]
    assert variant["VariantName"] == "neuron" and variant["InstanceType"] == "ml.g6e.12xlarge"
    assert "GpuModel" in json.dumps(variant["ModelName"])
    routing = _deployment(t)["BlueGreenUpdatePolicy"]["TrafficRoutingConfiguration"]
    assert routing == {"Type": "LINEAR", "WaitIntervalInSeconds": 600,
                       "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 20}}
    assert synth["gpu-only"]["endpoint"].standby == "none"


def test_pause_scaling_deregisters_the_serving_variant_for_the_instance_type_change(synth: dict[str, Any]) -> None:
    """SageMaker fails an update changing an autoscaled variant's instance type (endpoint-scaling-update.html)."""
    assert synth["gpu-only"]["template"].find_resources("AWS::ApplicationAutoScaling::ScalableTarget") == {}
    assert synth["gpu-only"]["endpoint"].scalable_target is None
    targets = synth["pilot"]["template"].find_resources("AWS::ApplicationAutoScaling::ScalableTarget")
    assert len(targets) == 2  # the Neuron and the GPU variant, both scaled while nothing moves


def test_a_shadow_gpu_variant_is_judged_with_a_note(synth: dict[str, Any]) -> None:
    Annotations.from_stack(synth["shadow"]["stack"]).has_info("/J-shadow/Judge",
                                                               Match.string_like_regexp("shadow variant"))
    assert synth["shadow"]["template"].find_resources("AWS::Events::Rule") == {}  # schedule: None


@pytest.mark.parametrize(("props", "field", "allowed"), [
    ({"cutover": CutoverSettings(traffic="rolling")}, "cutover.traffic",
     "exclude multi-variant endpoints"),
    ({"judge": PilotJudgeSettings(prompts="s3://team-prompts/p.jsonl"), "gpu_variant": None}, "judge", "standby hot"),
    ({"cutover": CutoverSettings(serve_on="gpu"), "gpu_variant": None}, "cutover.serve_on", "gpu_variant"),
])
def test_what_sagemaker_would_refuse_is_refused_at_synth(props: dict[str, Any], field: str, allowed: str) -> None:
    base = {**LLAMA, "gpu_variant": GpuVariant(instance_type="ml.g6e.12xlarge", max_instances=4)}
    with pytest.raises(InvalidSettings) as err:
        EndpointSettings(**{**base, **props})
    (problem,) = [p for p in err.value.problems if p.path == field]
    assert allowed in problem.allowed


@pytest.mark.parametrize(("kw", "field", "value", "allowed"), [
    ({"step_percent": 80}, "step_percent", 80, "1 to 50"),
    ({"traffic": "linear", "step_percent": 60}, "step_percent", 60, "10 to 50"),
    ({"traffic": "linear", "step_percent": 5}, "step_percent", 5, "10 to 50"),
    ({"traffic": "rolling", "step_percent": 70}, "step_percent", 70, "5 to 50"),
    ({"bake_s": 4000}, "bake_s", 4000, "3600"),
    ({"max_deployment_s": 900}, "max_deployment_s", 900, "more than the deployment's waits"),
])
def test_bad_guardrails_are_refused_with_field_value_and_allowed(kw: dict[str, Any], field: str, value: Any,
                                                                 allowed: str) -> None:
    with pytest.raises(InvalidSettings) as err:
        CutoverSettings(**kw)
    (problem,) = err.value.problems
    assert (problem.path, problem.value) == (field, value) and allowed in problem.allowed


@pytest.mark.parametrize(("kw", "field"), [({"tolerances": {"min_token_agreement": -0.1}},
                                            "tolerances.min_token_agreement"),
                                           ({"tolerances": {"max_error_rate": -1}}, "tolerances.max_error_rate"),
                                           ({"prompts": "s3://team-prompts/"}, "prompts")])
def test_bad_judge_settings_are_refused(kw: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSettings) as err:
        PilotJudgeSettings(**{"prompts": "s3://team-prompts/p.jsonl", **kw})
    assert [p.path for p in err.value.problems] == [field]
