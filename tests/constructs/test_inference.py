"""NeuronEndpoint and the inference stack: containers, scaling, alarms, VPC, KMS, variants."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Capture, Match, Template

from neuronfleet import EndpointSettings, GpuVariant, InvalidSettings, NeuronEndpoint, ScheduledScaling
from neuronfleet.core.storage import secure_bucket
from neuronfleet.inference.endpoint import GPU_VARIANT, NEURON_VARIANT, SERVING_CONTAINERS
from neuronfleet_contract.tags import MODEL_TAG, THROUGHPUT_TAG
from tests.conftest import ENV, AzStack, network, new_app

DLC_ACCOUNT = "763104351884"
LLAMA_8B_SHA = "0e9e39f249a16976918f6564b8830bc894c89659"
"""A commit of meta-llama/Llama-3.1-8B-Instruct: the hub snapshot directory many public projects name."""
TOKEN_ARN = "arn:aws:secretsmanager:us-east-2:111111111111:secret:nf/hf-token-Ab12Cd"
"""CDK's regional fact for us-east-2 (aws_cdk.region_info, FactName.DLC_REPOSITORY_ACCOUNT)."""

CASES: dict[str, dict[str, Any]] = {
    "lmi": {"instance_type": "ml.inf2.48xlarge", "container": "lmi-neuronx", "tensor_parallel_degree": 24,
            "model_data_url": "s3://models/llama-70b/model.tar.gz", "batch_size": 8, "sequence_length": 8192,
            "min_instances": 2, "max_instances": 8,
            "scheduled_scaling": [ScheduledScaling(name="day", schedule="cron(0 13 ? * MON-FRI *)",
                                                   min_instances=4, max_instances=8)],
            "gpu_variant": GpuVariant(instance_type="ml.p5.48xlarge", model_data_url="s3://models/llama-70b-hf/m.tar.gz",
                                      max_instances=2, neuron_instances_per_gpu_instance=4)},
    "tgi": {"instance_type": "ml.inf2.xlarge", "container": "tgi-neuronx", "tensor_parallel_degree": 2,
            "hf_model_id": "meta-llama/Llama-3.2-1B-Instruct", "sequence_length": 512},
    "vllm": {"instance_type": "ml.inf2.24xlarge", "container": "vllm-neuronx", "tensor_parallel_degree": 12,
             "hf_model_id": "meta-llama/Llama-3.1-8B-Instruct", "capture": True, "allow_non_cached_model": False,
             "revision": LLAMA_8B_SHA,
             "gpu_variant": GpuVariant(instance_type="ml.g6e.12xlarge", shadow=True)},
    # the pilot's shape: a compiled Neuron artifact from S3 and a gated hub model on the GPU variant, copied into S3
    "gated": {"instance_type": "ml.inf2.24xlarge", "container": "vllm-neuronx", "tensor_parallel_degree": 12,
              "batch_size": 4, "sequence_length": 4096, "model_data_url": "s3://models/llama-8b-neuron/model.tar.gz",
              "hf_token_secret_arn": TOKEN_ARN,
              "gpu_variant": GpuVariant(instance_type="ml.g6e.12xlarge", shadow=True,
                                        hf_model_id="meta-llama/Llama-3.1-8B-Instruct", revision=LLAMA_8B_SHA)},
    # a gated encoder on Neuron, and the same copy for the GPU variant (hf-inference: HF_MODEL_ID unset on GPU)
    "gated-embed": {"instance_type": "ml.inf2.xlarge", "container": "hf-inference-neuronx", "task": "embeddings",
                    "hf_model_id": "org/gated-encoder", "revision": "d4aa6901d3a41ba39fb536a557fa166f842b0e09",
                    "batch_size": 4, "sequence_length": 512, "hf_token_secret_arn": TOKEN_ARN,
                    "gpu_variant": GpuVariant(instance_type="ml.g6e.12xlarge", shadow=True)},
    "embed": {"instance_type": "ml.inf2.xlarge", "container": "hf-inference-neuronx", "task": "embeddings",
              "hf_model_id": "BAAI/bge-large-en-v1.5", "batch_size": 4, "sequence_length": 512,
              "revision": "d4aa6901d3a41ba39fb536a557fa166f842b0e09"},
    "trn2": {"instance_type": "ml.trn2.48xlarge", "container": "vllm-neuronx", "tensor_parallel_degree": 32,
             "batch_size": 4, "sequence_length": 4096,
             "model_data_url": "s3://models/llama-70b-trn2/model.tar.gz", "min_instances": 1, "max_instances": 2,
             "gpu_variant": GpuVariant(instance_type="ml.p5.48xlarge", standby="warm",
                                       model_data_url="s3://models/llama-70b-hf/model.tar.gz")},
    "trn1": {"instance_type": "ml.trn1.32xlarge", "container": "vllm-neuronx", "tensor_parallel_degree": 8,
             "hf_model_id": "meta-llama/Llama-3.1-8B-Instruct", "allow_non_cached_model": True,
             "revision": LLAMA_8B_SHA, "instance_pools": ["ml.inf2.48xlarge"]},
    "custom": {"instance_type": "ml.inf2.8xlarge", "container": "custom", "tensor_parallel_degree": 2,
               "image_uri": "111111111111.dkr.ecr.us-east-2.amazonaws.com/my-server:1.0",
               "hf_model_id": "org/model", "hf_token_secret_arn": TOKEN_ARN},
}


@pytest.fixture(scope="module")
def templates() -> dict[str, Template]:
    app = new_app()
    stacks = {}
    for name, props in CASES.items():
        props = dict(props)
        stack = AzStack(app, f"E-{name}", env=ENV)
        net = network(stack)
        topic = sns.Topic(stack, "Alerts", enforce_ssl=True, master_key=cdk.aws_kms.Key(
            stack, "TopicKey", enable_key_rotation=True))
        bucket = None
        if props.pop("capture", False):
            bucket = secure_bucket(stack, "Capture", access_logs=secure_bucket(stack, "Logs"))
            props["data_capture_percent"] = 10
        NeuronEndpoint(stack, "Endpoint", vpc=net.vpc, vpc_subnets=net.compute_subnets, topic=topic,
                       settings=EndpointSettings(**props), data_capture_bucket=bucket)
        stacks[name] = stack
    assembly = app.synth()
    return {n: Template.from_json(assembly.get_stack_by_name(s.stack_name).template) for n, s in stacks.items()}


def _models(t: Template) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in t.find_resources("AWS::SageMaker::Model").items()}


def _model(t: Template, variant: str) -> dict[str, Any]:
    (m,) = [p for k, p in _models(t).items() if k.startswith(f"Endpoint{variant.capitalize()}Model")]
    return m


def _config(t: Template) -> dict[str, Any]:
    (c,) = t.find_resources("AWS::SageMaker::EndpointConfig").values()
    return c["Properties"]


@pytest.mark.parametrize(("name", "repo"), [("lmi", "djl-inference"), ("vllm", "huggingface-vllm-inference-neuronx"),
                                            ("tgi", "huggingface-pytorch-tgi-inference"),
                                            ("embed", "huggingface-pytorch-inference-neuronx"),
                                            ("trn2", "huggingface-vllm-inference-neuronx"),
                                            ("trn1", "huggingface-vllm-inference-neuronx")])
def test_container_resolves_to_the_regions_dlc(templates, name: str, repo: str) -> None:
    image = json.dumps(_model(templates[name], NEURON_VARIANT)["PrimaryContainer"]["Image"])
    assert f"{DLC_ACCOUNT}.dkr.ecr." in image and "AWS::Region" in image
    assert SERVING_CONTAINERS[CASES[name]["container"]].image in image and repo in image


def test_lmi_settings_reach_the_container(templates) -> None:
    c = _model(templates["lmi"], NEURON_VARIANT)["PrimaryContainer"]
    assert c["ModelDataUrl"] == "s3://models/llama-70b/model.tar.gz"
    assert c["Environment"] == {"HF_MODEL_ID": "/opt/ml/model", "OPTION_TENSOR_PARALLEL_DEGREE": "24",
                                "OPTION_MAX_ROLLING_BATCH_SIZE": "8", "OPTION_ROLLING_BATCH": "auto",
                                "OPTION_N_POSITIONS": "8192"}


def test_vllm_neuronx_reads_sm_on_variables_and_gets_only_the_declared_shapes(templates) -> None:
    # cached only (no SM_ON_ALLOW_NON_CACHED_MODEL); batch and sequence length unset: the server takes the largest
    # cached entry at TP 12 instead of neuronfleet passing 1 / 2048 that the cache may not hold
    env = _model(templates["vllm"], NEURON_VARIANT)["PrimaryContainer"]["Environment"]
    assert env == {"SM_ON_MODEL": "meta-llama/Llama-3.1-8B-Instruct", "SM_ON_TENSOR_PARALLEL_SIZE": "12",
                   "SM_ON_TASK": "generate", "SM_ON_REVISION": LLAMA_8B_SHA}


COPY_PREFIX = f"hub/meta-llama/Llama-3.1-8B-Instruct/{LLAMA_8B_SHA}/"


def test_a_gated_hub_model_is_served_from_its_copy_in_s3_never_with_the_token(templates) -> None:
    """Issue 36, finding 6: the GPU variant's gated model is copied once into the endpoint's model bucket
    (Custom::HubModelCopy, given the secret's ARN only) and served uncompressed from that prefix with network isolation;
    the model's environment names /opt/ml/model, no revision and no token."""
    t = templates["gated"]
    text = json.dumps(t.to_json())
    assert "{{resolve:" not in text and "HF_TOKEN" not in text
    gpu = _model(t, GPU_VARIANT)
    container = gpu["PrimaryContainer"]
    assert container["Environment"] == {"SM_VLLM_MODEL": "/opt/ml/model", "SM_VLLM_TENSOR_PARALLEL_SIZE": "4",
                                        "SM_VLLM_MAX_NUM_SEQS": "4", "SM_VLLM_MAX_MODEL_LEN": "4096"}
    source = container["ModelDataSource"]["S3DataSource"]
    assert (source["S3DataType"], source["CompressionType"]) == ("S3Prefix", "None")
    assert json.dumps(source["S3Uri"]).endswith(f'/{COPY_PREFIX}"]]}}') and "ModelDataUrl" not in container
    assert gpu["EnableNetworkIsolation"] is True
    (copy_id, copy), = t.find_resources("Custom::HubModelCopy").items()
    assert {k: v for k, v in copy["Properties"].items() if k not in ("ServiceToken", "Bucket")} == {
        "ModelId": "meta-llama/Llama-3.1-8B-Instruct", "Revision": LLAMA_8B_SHA, "SecretArn": TOKEN_ARN,
        "Prefix": COPY_PREFIX, "ServiceTimeout": "3600"}
    (gpu_id,) = [k for k in t.find_resources("AWS::SageMaker::Model") if k.startswith("EndpointGpuModel")]
    assert copy_id in t.to_json()["Resources"][gpu_id]["DependsOn"]


def test_only_the_copier_may_read_the_token_and_the_endpoint_reads_only_the_copy(templates) -> None:
    t = templates["gated"]
    readers = [(k, s) for k, p in t.find_resources("AWS::IAM::Policy").items()
               for s in p["Properties"]["PolicyDocument"]["Statement"] if "secretsmanager:GetSecretValue" in s["Action"]]
    assert len(readers) == 1 and readers[0][0].startswith("EndpointHubCopy0Copier")
    assert readers[0][1]["Resource"] == TOKEN_ARN
    (execution,) = [p for k, p in t.find_resources("AWS::IAM::Policy").items()
                    if k.startswith("EndpointExecutionRoleDefaultPolicy")]
    reads = [s for s in execution["Properties"]["PolicyDocument"]["Statement"]
             if s["Action"] in ("s3:GetObject", "s3:ListBucket")]
    assert len(reads) == 2 and all(s["Condition"]["StringEquals"] == {"s3:ResourceAccount": "111111111111"}
                                   for s in reads)
    assert all(COPY_PREFIX in json.dumps(s) for s in reads)


def test_a_gated_hub_model_of_both_variants_is_copied_once(templates) -> None:
    t = templates["gated-embed"]
    assert len(t.find_resources("Custom::HubModelCopy")) == 1
    neuron, gpu = (_model(t, v)["PrimaryContainer"] for v in (NEURON_VARIANT, GPU_VARIANT))
    for env in (neuron["Environment"], gpu["Environment"]):  # the toolkit loads /opt/ml/model with HF_MODEL_ID unset
        assert "HF_MODEL_ID" not in env and "HF_MODEL_REVISION" not in env
    assert neuron["ModelDataSource"] == gpu["ModelDataSource"]
    assert "HF_API_TOKEN" not in json.dumps(t.to_json())


def test_a_custom_image_gets_the_secret_arn_and_read_on_that_one_secret(templates) -> None:
    t = templates["custom"]
    env = _model(t, NEURON_VARIANT)["PrimaryContainer"]["Environment"]
    assert env == {"MODEL_ID": "org/model", "TENSOR_PARALLEL_DEGREE": "2", "BATCH_SIZE": "1",
                   "SEQUENCE_LENGTH": "2048", "HF_TOKEN_SECRET_ARN": TOKEN_ARN}
    t.has_resource_properties("AWS::IAM::Policy", {"PolicyDocument": {"Statement": Match.array_with([
        Match.object_like({"Sid": "ReadHfTokenSecret", "Action": "secretsmanager:GetSecretValue",
                           "Resource": TOKEN_ARN})])}})


def test_non_cached_models_compile_at_start_with_the_longest_health_check(templates) -> None:
    t = templates["trn1"]
    env = _model(t, NEURON_VARIANT)["PrimaryContainer"]["Environment"]
    assert env["SM_ON_ALLOW_NON_CACHED_MODEL"] == ""  # the entrypoint turns an empty SM_ON_ variable into a bare flag
    assert "SM_ON_BATCH_SIZE" not in env and "SM_ON_SEQUENCE_LENGTH" not in env
    (variant,) = _config(t)["ProductionVariants"]
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 3600
    # a hub model compiles for each pool's own target: trn1 and inf2 pools may mix
    assert [p["InstanceType"] for p in variant["InstancePools"]] == ["ml.trn1.32xlarge", "ml.inf2.48xlarge"]
    assert variant["VariantInstanceProvisionTimeoutInSeconds"] == 1800


def test_unpinned_hub_models_are_warned_about_at_synth() -> None:
    app = new_app()
    stack = AzStack(app, "Unpinned", env=ENV)
    net = network(stack)
    NeuronEndpoint(stack, "E", vpc=net.vpc, settings=EndpointSettings(
        instance_type="ml.inf2.xlarge", hf_model_id="org/model", allow_non_cached_model=True,
        gpu_variant=GpuVariant(instance_type="ml.g6e.12xlarge", shadow=True, hf_model_id="org/gpu-model",
                               revision=LLAMA_8B_SHA)))
    warnings = [w.entry.data for w in Annotations.from_stack(stack).find_warning("*", Match.any_value())]
    unpinned = [w for w in warnings if "not pinned to a revision" in str(w)]
    assert len(unpinned) == 1 and "hf_model_id: org/model" in str(unpinned[0])


def test_tgi_neuronx_gets_static_shapes(templates) -> None:
    env = _model(templates["tgi"], NEURON_VARIANT)["PrimaryContainer"]["Environment"]
    assert env == {"HF_MODEL_ID": "meta-llama/Llama-3.2-1B-Instruct", "HF_NUM_CORES": "2", "HF_BATCH_SIZE": "1",
                   "HF_SEQUENCE_LENGTH": "512", "HF_AUTO_CAST_TYPE": "bf16"}
    assert "ModelDataUrl" not in _model(templates["tgi"], NEURON_VARIANT)["PrimaryContainer"]


def test_embeddings_served_by_the_inference_toolkit(templates) -> None:
    env = _model(templates["embed"], NEURON_VARIANT)["PrimaryContainer"]["Environment"]
    assert env == {"HF_MODEL_ID": "BAAI/bge-large-en-v1.5", "HF_TASK": "feature-extraction",
                   "HF_OPTIMUM_BATCH_SIZE": "4", "HF_OPTIMUM_SEQUENCE_LENGTH": "512",
                   "HF_MODEL_REVISION": "d4aa6901d3a41ba39fb536a557fa166f842b0e09"}  # the toolkit's pin


def test_trn2_endpoint_runs_lnc2_and_pools_fall_back_to_gpu(templates) -> None:
    t = templates["trn2"]
    env = _model(t, NEURON_VARIANT)["PrimaryContainer"]["Environment"]
    assert (env["SM_ON_TENSOR_PARALLEL_SIZE"], env["NEURON_LOGICAL_NC_CONFIG"], env["SM_ON_MODEL"]) == \
        ("32", "2", "/opt/ml/model")
    # a compiled artifact: the shapes it declares, passed as declared
    assert (env["SM_ON_BATCH_SIZE"], env["SM_ON_SEQUENCE_LENGTH"]) == ("4", "4096")
    (variant,) = _config(t)["ProductionVariants"]  # warm standby: no GPU variant runs
    assert "InstanceType" not in variant
    pools = variant["InstancePools"]
    assert [(p["InstanceType"], p["Priority"]) for p in pools] == [("ml.trn2.48xlarge", 1), ("ml.p5.48xlarge", 2)]
    assert variant["VariantInstanceProvisionTimeoutInSeconds"] == 1800
    assert "ModelNameOverride" not in pools[0]
    assert pools[1]["ModelNameOverride"] == {"Fn::GetAtt": [Match.string_like_regexp("^EndpointGpuModel"), "ModelName"]} \
        or "EndpointGpuModel" in json.dumps(pools[1]["ModelNameOverride"])
    gpu = _model(t, GPU_VARIANT)["PrimaryContainer"]
    assert gpu["ModelDataUrl"] == "s3://models/llama-70b-hf/model.tar.gz"
    assert gpu["Environment"]["SM_VLLM_TENSOR_PARALLEL_SIZE"] == "8" and "vllm:" in json.dumps(gpu["Image"])
    assert "VolumeSizeInGB" not in variant and "KmsKeyId" not in _config(t)  # the p5 pool has local NVMe
    tags = {x["Key"]: x["Value"] for x in t.find_resources("AWS::SageMaker::Endpoint").popitem()[1]["Properties"]["Tags"]}
    assert tags["neuronfleet:gpu-standby"] == "warm" and tags["neuronfleet:accelerator-family"] == "trainium"
    t.resource_count_is("AWS::ApplicationAutoScaling::ScalableTarget", 1)


def test_trn1_endpoint_has_no_lnc(templates) -> None:
    env = _model(templates["trn1"], NEURON_VARIANT)["PrimaryContainer"]["Environment"]
    assert env["SM_ON_TENSOR_PARALLEL_SIZE"] == "8" and "NEURON_LOGICAL_NC_CONFIG" not in env


def test_custom_image_is_used_and_pullable(templates) -> None:
    t = templates["custom"]
    assert _model(t, NEURON_VARIANT)["PrimaryContainer"]["Image"] == CASES["custom"]["image_uri"]
    t.has_resource_properties("AWS::IAM::Policy", {"PolicyDocument": {"Statement": Match.array_with([
        Match.object_like({"Sid": "PullCustomImage0", "Resource": {"Fn::Join": ["", Match.array_with([
            ":ecr:us-east-2:111111111111:repository/my-server"])]}})])}})


def test_neuron_timeouts_volume_and_variant(templates) -> None:
    (variant,) = [v for v in _config(templates["tgi"])["ProductionVariants"] if v["VariantName"] == NEURON_VARIANT]
    assert variant["InstanceType"] == "ml.inf2.xlarge"
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 1800 >= 600
    assert variant["ModelDataDownloadTimeoutInSeconds"] == 1800
    assert variant["VolumeSizeInGB"] == 64
    assert variant["InitialVariantWeight"] == 1
    assert "VariantInstanceProvisionTimeoutInSeconds" not in variant  # one type: nothing to fall back to


def test_live_gpu_variant_shares_by_weight_and_drops_kms_for_local_nvme(templates) -> None:
    config = _config(templates["lmi"])
    variants = {v["VariantName"]: v for v in config["ProductionVariants"]}
    assert set(variants) == {NEURON_VARIANT, GPU_VARIANT}
    gpu = variants[GPU_VARIANT]
    assert (gpu["InstanceType"], gpu["InitialVariantWeight"], gpu["InitialInstanceCount"]) == ("ml.p5.48xlarge", 0, 1)
    assert "VolumeSizeInGB" not in gpu  # p5 has local NVMe: SageMaker rejects VolumeSizeInGB and KmsKeyId
    assert "KmsKeyId" not in config
    env = _model(templates["lmi"], GPU_VARIANT)["PrimaryContainer"]["Environment"]
    assert env["OPTION_TENSOR_PARALLEL_DEGREE"] == "8" and env["OPTION_MAX_MODEL_LEN"] == "8192"
    assert "OPTION_N_POSITIONS" not in env and "HF_MODEL_ID" in env
    gpu_image = SERVING_CONTAINERS["lmi-neuronx"].gpu
    assert gpu_image is not None and gpu_image.image in json.dumps(_model(templates["lmi"], GPU_VARIANT))


def test_shadow_variant_gets_a_copy_of_the_traffic(templates) -> None:
    config = _config(templates["vllm"])
    assert [v["VariantName"] for v in config["ProductionVariants"]] == [NEURON_VARIANT]
    (shadow,) = config["ShadowProductionVariants"]
    assert (shadow["VariantName"], shadow["InstanceType"]) == (GPU_VARIANT, "ml.g6e.12xlarge")


def test_kms_encrypts_the_volume_when_allowed(templates) -> None:
    config = _config(templates["tgi"])
    assert "Fn::GetAtt" in json.dumps(config["KmsKeyId"])
    templates["tgi"].has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


def test_data_capture_to_the_bucket_under_the_endpoints_prefix(templates) -> None:
    capture = _config(templates["vllm"])["DataCaptureConfig"]
    assert capture["InitialSamplingPercentage"] == 10
    assert "capture/Endpoint" in json.dumps(capture["DestinationS3Uri"])
    assert {o["CaptureMode"] for o in capture["CaptureOptions"]} == {"Input", "Output"}


def test_vpc_config_private_subnets_and_no_inbound(templates) -> None:
    t = templates["lmi"]
    for model in _models(t).values():
        vpc = model["VpcConfig"]
        assert len(vpc["Subnets"]) == 2 and all("compute" in json.dumps(s) for s in vpc["Subnets"])
        assert len(vpc["SecurityGroupIds"]) == 1
    groups = [g["Properties"] for g in t.find_resources("AWS::EC2::SecurityGroup").values()
              if "SageMaker" in g["Properties"]["GroupDescription"]]
    (sg,) = groups
    assert "SecurityGroupIngress" not in sg
    assert [(e["CidrIp"], e["FromPort"]) for e in sg["SecurityGroupEgress"]] == [("0.0.0.0/0", 443)]


def test_model_artifact_read_is_granted_to_the_execution_role_only(templates) -> None:
    t = templates["lmi"]
    statement = Capture()
    t.has_resource_properties("AWS::IAM::Policy", {"PolicyDocument": {"Statement": Match.array_with([
        Match.object_like({"Sid": "ReadModelArtifact", "Action": "s3:GetObject", "Resource": statement})])}})
    assert "models/llama-70b/model.tar.gz" in json.dumps(statement.as_object())
    t.resource_count_is("AWS::S3::BucketPolicy", 0)  # the model bucket is not opened to anyone


def test_target_tracking_and_scheduled_scaling(templates) -> None:
    t = templates["lmi"]
    t.has_resource_properties("AWS::ApplicationAutoScaling::ScalableTarget", {
        "ServiceNamespace": "sagemaker", "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
        "MinCapacity": 2, "MaxCapacity": 8,
        "ResourceId": Match.string_like_regexp(r"^endpoint/.+/variant/neuron$"),
        "ScheduledActions": [{"ScheduledActionName": "day", "Schedule": "cron(0 13 ? * MON-FRI *)",
                              "ScalableTargetAction": {"MinCapacity": 4, "MaxCapacity": 8}}]})
    t.has_resource_properties("AWS::ApplicationAutoScaling::ScalingPolicy", {
        "PolicyType": "TargetTrackingScaling",
        "TargetTrackingScalingPolicyConfiguration": {
            "TargetValue": 20, "ScaleInCooldown": 600, "ScaleOutCooldown": 120,
            "PredefinedMetricSpecification": {"PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"}}})


def test_alarms_go_to_the_topic(templates) -> None:
    """Both variants that serve (lmi has a live GPU variant), the same three alarms each."""
    t = templates["lmi"]
    alarms = {({d["Name"]: d["Value"] for d in a["Properties"]["Dimensions"]}["VariantName"],
               a["Properties"]["MetricName"]): a["Properties"] for a in t.find_resources("AWS::CloudWatch::Alarm").values()}
    assert set(alarms) == {(v, m) for v in (NEURON_VARIANT, GPU_VARIANT)
                           for m in ("ModelLatency", "Invocation5XXErrors", "InvocationModelErrors")}
    for variant in (NEURON_VARIANT, GPU_VARIANT):
        assert alarms[variant, "ModelLatency"]["ExtendedStatistic"] == "p99"
        assert alarms[variant, "ModelLatency"]["Threshold"] == 5_000_000  # microseconds
    for alarm in alarms.values():
        assert alarm["Namespace"] == "AWS/SageMaker"
        assert len(alarm["AlarmActions"]) == 1 and len(alarm["OKActions"]) == 1


def test_endpoint_name_is_lowercase_and_unique(templates) -> None:
    names = []
    for t in templates.values():
        (ep,) = t.find_resources("AWS::SageMaker::Endpoint").values()
        names.append(ep["Properties"]["EndpointName"])
    assert all(n == n.lower() and len(n) <= 63 for n in names) and len(set(names)) == len(names)


# ------------------------------------------------------------------------------------ bad input


def _endpoint(**overrides: Any) -> None:
    stack = AzStack(cdk.App(), "Bad", env=ENV)
    net = network(stack)
    NeuronEndpoint(stack, "E", vpc=net.vpc,
                   settings=EndpointSettings(**{"instance_type": "ml.inf2.xlarge", "hf_model_id": "org/model", **overrides}))


@pytest.mark.parametrize(("overrides", "message"), [
    ({"tensor_parallel_degree": 24}, "tensor_parallel_degree: got 24; allowed: a divisor of the 2 NeuronCores of "
                                     "ml.inf2.xlarge: 1, 2"),
    ({"instance_type": "ml.inf3.xlarge"}, "instance_type: got 'ml.inf3.xlarge'; allowed: a SageMaker "
                                          "ProductionVariantInstanceType"),
    ({"instance_type": "ml.g5.xlarge"}, "instance_type: got 'ml.g5.xlarge'; allowed: an Inferentia2 or Trainium type"),
    # Trainium: TP against the logical cores (trn2.48xlarge: 64 at LNC 2, 128 at LNC 1; trn1.32xlarge: 32)
    ({"instance_type": "ml.trn2.48xlarge", "tensor_parallel_degree": 48},
     "tensor_parallel_degree: got 48; allowed: a divisor of the 64 NeuronCores of ml.trn2.48xlarge at logical_nc_config 2"),
    ({"instance_type": "ml.trn2.48xlarge", "logical_nc_config": 1, "tensor_parallel_degree": 96},
     "tensor_parallel_degree: got 96; allowed: a divisor of the 128 NeuronCores of ml.trn2.48xlarge at logical_nc_config 1"),
    ({"instance_type": "ml.trn1.32xlarge", "logical_nc_config": 2},
     "logical_nc_config: got 2; allowed: unset: ml.trn1.32xlarge has no logical NeuronCore configuration"),
    # images too old or too new for the family, naming the containers that can run
    ({"instance_type": "ml.trn2.48xlarge", "container": "lmi-neuronx", "tensor_parallel_degree": 8},
     "container: got 'lmi-neuronx'; allowed: a container whose image runs on trn2.48xlarge (Neuron SDK >= 2.21.0; "
     "torch-neuronx (PyTorch/XLA): SDK <= 2.31.x); djl-inference:0.30.0-neuronx-sdk2.20.1 carries SDK 2.20.1, too old. "
     "Containers that can: vllm-neuronx"),
    # custom images: per serving library (NxD Inference: Inf2/Trn1 <= 2.28; torch-neuronx <= 2.31; TorchNeuron and
    # vLLM Neuron: Trn2 only); an image that names no library must fit one of them
    ({"container": "custom", "image_uri": "111111111111.dkr.ecr.us-east-2.amazonaws.com/srv:1-neuronx-sdk2.32.0"},
     "image_sdk: got '2.32.0'; allowed: an image serving with any recorded Neuron library on inf2.xlarge"),
    ({"container": "custom", "image_uri": "111111111111.dkr.ecr.us-east-2.amazonaws.com/srv:1", "image_sdk": "2.29.0",
      "image_library": "nxd-inference"},
     "image_sdk: got '2.29.0'; allowed: an image serving with nxd-inference on inf2.xlarge: Neuron SDK >= 2.8.0 and "
     "within the library's window (NxD Inference: SDK <= 2.28.x)"),
    ({"instance_type": "ml.trn1.32xlarge", "container": "custom", "image_sdk": "2.32.0",
      "image_uri": "111111111111.dkr.ecr.us-east-2.amazonaws.com/srv:1", "image_library": "torchneuron"},
     "image_sdk: got '2.32.0'; allowed: an image serving with torchneuron on trn1.32xlarge: Neuron SDK >= 2.3.0 and "
     "within the library's window (none: torchneuron does not run on trn1)"),
    ({"instance_type": "ml.trn2.48xlarge", "container": "custom", "image_sdk": "2.32.0",
      "image_uri": "111111111111.dkr.ecr.us-east-2.amazonaws.com/srv:1", "image_library": "torch-neuronx"},
     "image_sdk: got '2.32.0'; allowed: an image serving with torch-neuronx on trn2.48xlarge"),
    ({"image_library": "torch-neuronx"}, "image_library: got 'torch-neuronx'; allowed: unset: vllm-neuronx serves with "
                                         "torch-neuronx"),
    # the vLLM Neuron serving contract (optimum-neuron v0.4.5 serve.py)
    ({}, "allow_non_cached_model: got None; allowed: true or false for a vllm-neuronx hub model. false: the endpoint "
         "starts only if optimum-neuron's public cache holds org/model"),
    ({"hf_model_id": None, "model_data_url": "s3://bucket/m.tar.gz", "tensor_parallel_degree": 2},
     "batch_size: got None; allowed: the batch_size s3://bucket/m.tar.gz was compiled with (its neuron_config.json)"),
    ({"hf_model_id": None, "model_data_url": "s3://bucket/m.tar.gz", "tensor_parallel_degree": 2, "batch_size": 1,
      "sequence_length": 2048, "allow_non_cached_model": True},
     "allow_non_cached_model: got True; allowed: unset with model_data_url"),
    ({"instance_type": "ml.trn2.48xlarge", "hf_model_id": None, "model_data_url": "s3://bucket/m.tar.gz",
      "tensor_parallel_degree": 32, "batch_size": 1, "sequence_length": 2048, "instance_pools": ["ml.trn1.32xlarge"]},
     "instance_pools[0]: got 'ml.trn1.32xlarge'; allowed: a Neuron type whose compile target is trn2"),
    ({"container": "hf-inference-neuronx", "allow_non_cached_model": False},
     "allow_non_cached_model: got False; allowed: unset: only vllm-neuronx with a hub model"),
    # hub pins and tokens
    ({"revision": "main"}, "revision: got 'main'; allowed: a commit sha of the model repository: 40 lower-case hex"),
    ({"container": "tgi-neuronx", "revision": LLAMA_8B_SHA},
     "revision: got '0e9e39f249a16976918f6564b8830bc894c89659'; allowed: unset: tgi-neuronx has no revision setting"),
    ({"hf_token_secret_arn": "arn:aws:secretsmanager:us-east-2:111111111111:secret:nf/hf-token"},
     "hf_token_secret_arn: got 'arn:aws:secretsmanager:us-east-2:111111111111:secret:nf/hf-token'; allowed: the "
     "complete ARN of a Secrets Manager secret"),
    ({"container": "lmi-neuronx", "hf_token_secret_arn": TOKEN_ARN},
     "hf_token_secret_arn: got '" + TOKEN_ARN + "'; allowed: unset: lmi-neuronx reads no Hugging Face token variable"),
    ({"hf_token_secret_arn": TOKEN_ARN, "allow_non_cached_model": False, "revision": LLAMA_8B_SHA},
     "hf_token_secret_arn: got '" + TOKEN_ARN + "'; allowed: unset for a vllm-neuronx hub model on Neuron (hf_model_id "
     "org/model): the kit copies a gated model into S3"),
    ({"container": "hf-inference-neuronx", "hf_token_secret_arn": TOKEN_ARN},
     "revision: got None; allowed: a commit of org/model (40 hex digits) with hf_token_secret_arn"),
    ({"hf_model_id": None, "model_data_url": "s3://bucket/m.tar.gz", "tensor_parallel_degree": 2, "batch_size": 1,
      "sequence_length": 2048, "hf_token_secret_arn": TOKEN_ARN,
      "gpu_variant": {"instance_type": "ml.g6e.12xlarge", "hf_model_id": "org/gated"}},
     "gpu_variant.revision: got None; allowed: a commit of org/gated (40 hex digits) with hf_token_secret_arn"),
    ({"gpu_variant": {"instance_type": "ml.g6e.12xlarge", "revision": LLAMA_8B_SHA}},
     "gpu_variant.revision: got '0e9e39f249a16976918f6564b8830bc894c89659'; allowed: unset without hf_model_id"),
    ({"instance_provision_timeout_s": 200}, "instance_provision_timeout_s: got 200; allowed: a number >= 300"),
    ({"container": "neuron-vllm"}, "container: got 'neuron-vllm'; allowed: a container offered on SageMaker: "
                                   "Neuron's own vLLM image"),
    # the model's task against the container
    ({"container": "tgi-neuronx", "task": "embeddings"},
     "container: got 'tgi-neuronx'; allowed: a container that serves embeddings (task): vllm-neuronx, "
     "hf-inference-neuronx; tgi-neuronx serves text-generation"),
    ({"container": "hf-inference-neuronx", "tensor_parallel_degree": 2},
     "tensor_parallel_degree: got 2; allowed: unset: hf-inference-neuronx has no tensor-parallel setting"),
    # instance pools
    ({"instance_type": "ml.inf2.48xlarge", "tensor_parallel_degree": 2,
      "instance_pools": ["ml.inf2.24xlarge", "ml.inf2.8xlarge", "ml.inf2.xlarge", "ml.trn1.32xlarge",
                         "ml.trn1.2xlarge"]},
     "instance_pools: got ['ml.inf2.24xlarge', 'ml.inf2.8xlarge', 'ml.inf2.xlarge', 'ml.trn1.32xlarge',...; "
     "allowed: at most 4 types: SageMaker takes at most 5 instance pools per variant"),
    ({"instance_pools": ["ml.inf2.8xlarge", "ml.inf2.xlarge"]},
     "instance_pools[1]: got 'ml.inf2.xlarge'; allowed: a type not already in the endpoint's instance pools"),
    ({"instance_type": "ml.inf2.48xlarge", "tensor_parallel_degree": 24, "instance_pools": ["ml.inf2.8xlarge"]},
     "instance_pools[0]: got 'ml.inf2.8xlarge'; allowed: a divisor of the 2 NeuronCores of ml.inf2.8xlarge"),
    ({"instance_pools": ["ml.g6e.12xlarge"]},
     "instance_pools[0]: got 'ml.g6e.12xlarge'; allowed: a Neuron type, or a gpu_variant"),
    ({"instance_pools": ["ml.g6e.12xlarge"], "gpu_variant": {"instance_type": "ml.g6e.12xlarge", "standby": "warm"}},
     "gpu_variant.instance_type: got 'ml.g6e.12xlarge'; allowed: a type not already in the endpoint's instance pools"),
    # GPU standby
    ({"gpu_variant": {"instance_type": "ml.g6e.12xlarge", "standby": "cold"}},
     "gpu_variant.standby: got 'cold'; allowed: hot or warm: cold (inference components scaled to zero instances) is "
     "not built"),
    ({"gpu_variant": {"instance_type": "ml.g6e.12xlarge", "standby": "warm", "shadow": True}},
     "gpu_variant.standby: got 'warm'; allowed: hot for a shadow variant"),
    ({"min_instances": 3, "max_instances": 1}, "min_instances: got 3; allowed: at most max_instances (1)"),
    ({"startup_health_check_timeout_s": 300}, "startup_health_check_timeout_s: got 300; allowed: a number >= 600"),
    ({"container": "triton"}, "container: got 'triton'; allowed: 'vllm-neuronx', 'hf-inference-neuronx', "
                              "'tgi-neuronx', 'lmi-neuronx', 'neuron-vllm' or 'custom'"),
    ({"container": "custom"}, "image_uri: got None; allowed: an image URI exactly when container is 'custom'"),
    ({"model_data_url": "s3://bucket/m.tar.gz"}, "model_data_url: got 's3://bucket/m.tar.gz'; allowed: exactly one of"),
    ({"gpu_variant": {"instance_type": "ml.m5.xlarge"}}, "gpu_variant.instance_type: got 'ml.m5.xlarge'"),
    ({"batch_size": 0}, "batch_size: got 0; allowed: a number >= 1"),
    ({"volume_size_gib": 0}, "volume_size_gib: got 0; allowed: a number >= 1"),
    ({"target_invocations_per_instance": -1}, "target_invocations_per_instance: got -1; allowed: a number > 0"),
    ({"hf_model_id": "my model"}, "hf_model_id: got 'my model'; allowed:"),
    ({"scheduled_scaling": [{"name": "day", "schedule": "cron(every day)", "min_instances": 1, "max_instances": 2}]},
     "scheduled_scaling[0].schedule: got 'cron(every day)'; allowed:"),
    ({"scheduled_scaling": [{"name": "d", "schedule": "rate(1 day)", "min_instances": 1, "max_instances": 2}] * 2},
     "scheduled_scaling[1].name: got 'd'; allowed: a name not used by another action"),
])
def test_bad_input_fails_synth(overrides, message) -> None:
    with pytest.raises(InvalidSettings) as info:
        _endpoint(**overrides)
    assert any(str(p).startswith(message) for p in info.value.problems), info.value.problems


# ------------------------------------------------------------------------------------ fleet files


def test_prod_has_inf2_endpoints_wired_to_the_alerts_topic(synth_fleet) -> None:
    prod = synth_fleet("prod")
    t = prod.template("inference")
    t.resource_count_is("AWS::SageMaker::Endpoint", 2)
    variants = [v for c in t.find_resources("AWS::SageMaker::EndpointConfig").values()
                for v in c["Properties"]["ProductionVariants"]]
    instance_types = {v["InstanceType"] for v in variants if "InstanceType" in v}
    assert {"ml.inf2.xlarge"} == instance_types  # chat's p5 standby is warm: no GPU variant runs
    (pooled,) = [v["InstancePools"] for v in variants if "InstancePools" in v]  # chat: inf2 first, then GPU pools,
    assert [(p["InstanceType"], p["Priority"]) for p in pooled] == [  # the warm standby's type last
        ("ml.inf2.48xlarge", 1), ("ml.p5en.48xlarge", 2), ("ml.p5.48xlarge", 3)]
    assert "ModelNameOverride" not in pooled[0] and all("ModelNameOverride" in p for p in pooled[1:])
    for alarm in t.find_resources("AWS::CloudWatch::Alarm").values():
        assert "Fn::ImportValue" in json.dumps(alarm["Properties"]["AlarmActions"])
    prod.template("alerts").has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})
    prod.template("alerts").resource_count_is("AWS::SNS::Subscription", 2)
    tags = {(tag["Key"], tag["Value"]) for e in t.find_resources("AWS::SageMaker::Endpoint").values()
            for tag in e["Properties"]["Tags"]}
    assert ("neuronfleet:accelerator-family", "inferentia") in tags


def test_dev_caches_its_compiled_graphs_in_one_bucket_and_prod_gets_none(synth_fleet) -> None:
    """dev's chat-dev compiles at start (vllm-neuronx, allow_non_cached_model): the reference app gives its inference
    stack one compile-cache bucket and the endpoint reads it (issue 43); prod's endpoints compile nothing at start."""
    dev = synth_fleet("dev")
    stack = dev.stacks["inference"]
    bucket = stack.compile_cache_bucket
    assert bucket is not None
    bucket_id = stack.get_logical_id(bucket.node.default_child)
    t = dev.template("inference")
    assert bucket_id in t.find_resources("AWS::S3::Bucket")
    (model,) = [m["Properties"] for m in t.find_resources("AWS::SageMaker::Model").values()]
    assert model["PrimaryContainer"]["Environment"]["NEURON_COMPILE_CACHE_URL"] == {
        "Fn::Join": ["", ["s3://", {"Ref": bucket_id}, "/neuron-compile-cache/"]]}
    # the overhead bill counts it with the fleet's other buckets, usage-based: no dollar figure, the net cost unchanged
    from neuronfleet.cost.overhead import bill_of_materials

    buckets = bill_of_materials(stack).item("AWS::S3::Bucket")
    assert buckets is not None and buckets.count == len(t.find_resources("AWS::S3::Bucket")) >= 2
    assert buckets.monthly_usd is None and buckets.reason == "usage"
    assert any("CompileCache" in path for path in buckets.resources)
    assert synth_fleet("prod").stacks["inference"].compile_cache_bucket is None


def test_models_wait_for_the_execution_policies(templates) -> None:
    t = templates["vllm"]
    policies = {k for k in t.find_resources("AWS::IAM::Policy") if k.startswith("EndpointExecution")}
    assert len(policies) == 2  # the inline execution policy and the role's default policy (KMS, capture)
    for model in t.find_resources("AWS::SageMaker::Model").values():
        assert policies <= set(model["DependsOn"])


def test_the_endpoint_carries_its_model_name_for_the_report(templates) -> None:
    """The migration report names a model by the endpoint's neuronfleet:model tag (default: the construct id), never by
    the generated endpoint name; the reference app passes the fleet file's endpoint name."""
    assert set(templates) == set(CASES)
    for t in templates.values():
        (endpoint,) = t.find_resources("AWS::SageMaker::Endpoint").values()
        tags = {tag["Key"]: tag["Value"] for tag in endpoint["Properties"]["Tags"]}
        assert tags[MODEL_TAG] == "Endpoint"


def test_the_endpoint_carries_the_throughput_ratio_its_settings_state_and_no_default(templates) -> None:
    """The report computes a saving against a standby or shadow GPU variant from this capacity figure only: set where
    the settings state it for a running GPU variant (lmi: 4), absent for a default (vllm's shadow: 1, unmeasured), a
    warm standby (trn2: no GPU runs) or no GPU variant."""
    found = {}
    for name, t in templates.items():
        (endpoint,) = t.find_resources("AWS::SageMaker::Endpoint").values()
        found[name] = {tag["Key"]: tag["Value"] for tag in endpoint["Properties"]["Tags"]}.get(THROUGHPUT_TAG)
    assert found == {name: ("4" if name == "lmi" else None) for name in CASES}
