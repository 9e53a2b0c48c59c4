"""Serving stacks for NeuronEndpoint: pinned Deep Learning Container images, the settings each container
reads, and the execution policy that lets SageMaker pull them and the model."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from aws_cdk import ArnFormat, Aws, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from ._nag import acknowledge_wildcards
from .images import dlc_repository_arn
from .settings import EndpointSettings


@dataclass(frozen=True)
class ServingContainer:
    """A serving stack with its Neuron and GPU Deep Learning Container images (repository:tag)."""

    name: str
    neuron_image: str
    gpu_image: str
    server: Literal["lmi", "tgi"]
    rolling_batch: str | None = None


SERVING_CONTAINERS: dict[str, ServingContainer] = {
    "lmi-neuronx": ServingContainer("lmi-neuronx", "djl-inference:0.30.0-neuronx-sdk2.20.1",
                                    "djl-inference:0.30.0-lmi12.0.0-cu124", "lmi", "auto"),
    "vllm-neuronx": ServingContainer("vllm-neuronx", "djl-inference:0.30.0-neuronx-sdk2.20.1",
                                     "djl-inference:0.30.0-lmi12.0.0-cu124", "lmi", "vllm"),
    "tgi-neuronx": ServingContainer(
        "tgi-neuronx", "huggingface-pytorch-tgi-inference:2.1.2-optimum0.0.28-neuronx-py310-ubuntu22.04-v1.2",
        "huggingface-pytorch-tgi-inference:2.4.0-tgi2.3.1-gpu-py311-cu124-ubuntu22.04-v2.0", "tgi"),
}
"""Containers chosen by name, pinned; the region's DLC registry is filled in at synth. ``custom``: bring an image."""


def environment(settings: EndpointSettings, *, neuron: bool, gpus: int = 0) -> dict[str, str]:
    """The settings each serving container reads: tensor parallelism, batch size, sequence length."""
    serving = SERVING_CONTAINERS.get(settings.container)
    model = settings.hf_model_id or "/opt/ml/model"
    tp = settings.tensor_parallel_degree if neuron else gpus
    batch, seq = str(settings.batch_size), str(settings.sequence_length)
    if serving is None:  # custom image: pass the settings under neutral names
        return {"MODEL_ID": model, "TENSOR_PARALLEL_DEGREE": str(tp), "BATCH_SIZE": batch, "SEQUENCE_LENGTH": seq}
    if serving.server == "lmi":
        env = {"HF_MODEL_ID": model, "OPTION_TENSOR_PARALLEL_DEGREE": str(tp), "OPTION_MAX_ROLLING_BATCH_SIZE": batch,
               "OPTION_ROLLING_BATCH": serving.rolling_batch or "auto", "OPTION_MAX_MODEL_LEN": seq}
        if neuron:
            env["OPTION_N_POSITIONS"] = seq
        return env
    env = {"HF_MODEL_ID": model, "MAX_BATCH_SIZE": batch, "MAX_TOTAL_TOKENS": seq,
           "MAX_INPUT_TOKENS": str(max(1, settings.sequence_length // 2))}
    if neuron:  # optimum-neuron TGI: static shapes, cores to shard over
        env |= {"HF_NUM_CORES": str(tp), "HF_BATCH_SIZE": batch, "HF_SEQUENCE_LENGTH": seq, "HF_AUTO_CAST_TYPE": "bf16"}
    else:
        env["SM_NUM_GPUS"] = str(gpus)
    return env


_ECR_URI = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?/(?P<repo>[^:@]+)")
_PULL = ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability"]


def execution_policy(scope: Construct, construct_id: str, settings: EndpointSettings) -> iam.Policy:
    """Images (the named DLC repositories, or the custom ECR repositories), the model artifact (read),
    the endpoint's logs and metrics, and the network interfaces SageMaker's VpcConfig needs."""
    stack = Stack.of(scope)
    serving = SERVING_CONTAINERS.get(settings.container)
    logs_arn = stack.format_arn(service="logs", resource="log-group", resource_name="/aws/sagemaker/Endpoints/*",
                                arn_format=ArnFormat.COLON_RESOURCE_NAME)
    statements = [
        iam.PolicyStatement(sid="EcrAuth", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
        iam.PolicyStatement(sid="Logs", resources=[logs_arn], actions=[
            "logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"]),
        iam.PolicyStatement(sid="Metrics", actions=["cloudwatch:PutMetricData"], resources=["*"],
                            conditions={"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}}),
        iam.PolicyStatement(sid="VpcInterfaces", resources=["*"], actions=[
            "ec2:CreateNetworkInterface", "ec2:CreateNetworkInterfacePermission", "ec2:DeleteNetworkInterface",
            "ec2:DeleteNetworkInterfacePermission", "ec2:DescribeNetworkInterfaces", "ec2:DescribeVpcs",
            "ec2:DescribeDhcpOptions", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups"]),
    ]
    dlc_arns: list[str] = []
    if serving:
        repos = sorted({img.split(":")[0] for img in (serving.neuron_image, serving.gpu_image)})
        dlc_arns = [dlc_repository_arn(scope, r) for r in repos]
        statements.append(iam.PolicyStatement(sid="PullDlcImages", actions=_PULL, resources=dlc_arns))
    gpu = settings.gpu_variant
    for i, uri in enumerate(u for u in (settings.image_uri, gpu.image_uri if gpu else None) if u):
        m = _ECR_URI.match(uri)
        if m:
            statements.append(iam.PolicyStatement(sid=f"PullCustomImage{i}", actions=_PULL, resources=[
                f"arn:{Aws.PARTITION}:ecr:{m['region']}:{m['account']}:repository/{m['repo']}"]))
    if settings.model_data_url:
        bucket, _, key = settings.model_data_url.removeprefix("s3://").partition("/")
        statements.append(iam.PolicyStatement(sid="ReadModelArtifact", actions=["s3:GetObject"],
                                              resources=[f"arn:{Aws.PARTITION}:s3:::{bucket}/{key}"]))
    policy = iam.Policy(scope, construct_id, statements=statements)
    acknowledge_wildcards(policy, "ecr:GetAuthorizationToken, cloudwatch:PutMetricData (limited to /aws/sagemaker/*) "
                                  "and the EC2 network-interface actions SageMaker's VpcConfig needs have no "
                                  "resource scope", resources=("*",))
    acknowledge_wildcards(policy, "SageMaker writes endpoint logs to its own /aws/sagemaker/Endpoints/* log groups",
                          resources=(logs_arn,))
    if dlc_arns:
        acknowledge_wildcards(policy, "Pulls named AWS Deep Learning Container repositories only",
                              resources=tuple(dlc_arns))
    return policy
