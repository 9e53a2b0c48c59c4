"""Serving stacks for NeuronEndpoint: pinned Deep Learning Container images, the settings each container
reads, and the execution policy that lets SageMaker pull them and the model."""

from __future__ import annotations

import re
from typing import Any
from weakref import WeakKeyDictionary

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..core.lookups import in_stack, stack_of
from ..core.nag import acknowledge_wildcard_groups
from ..core.pseudo import pseudo
from ..core.s3_reads import read_object_statement
from ..facts.images import dlc_repository_arn
from ..facts.neuron import ServingImage, serving_images
from ..settings import EndpointSettings

SERVING_CONTAINERS: dict[str, ServingImage] = serving_images()
"""Containers chosen by name, as recorded in ``data/neuron_compat.json`` (image, SDK, tasks, the variables each reads);
the region's DLC registry is filled in at synth. ``custom``: bring an image."""


CUSTOM_SETTINGS = {"model": "MODEL_ID", "revision": "MODEL_REVISION", "tensor_parallel_degree": "TENSOR_PARALLEL_DEGREE",
                   "batch_size": "BATCH_SIZE", "sequence_length": "SEQUENCE_LENGTH"}
"""The neutral names a custom image gets its settings under."""
HF_TOKEN_SECRET_ARN = "HF_TOKEN_SECRET_ARN"
"""A custom image gets the token secret's ARN under this name and reads the secret itself (its role may)."""


def environment(settings: EndpointSettings, *, neuron: bool, gpus: int = 0, staged: bool = False) -> dict[str, str]:
    """The settings the serving container reads, under the variable names its documentation gives: the model and its
    revision, the shapes (:attr:`EndpointSettings.shapes`; on GPU the GPU count is the tensor parallelism), the task,
    the non-cached-model flag; Trn2's logical NeuronCore configuration.

    Never a secret: a named container's gated hub model is ``staged`` (copied into S3 by HubModelCopy, whose function
    reads the token) and served from /opt/ml/model like an S3 artifact; a custom image gets the token secret's ARN
    (HF_TOKEN_SECRET_ARN) and reads the secret itself."""
    serving = SERVING_CONTAINERS.get(settings.container)
    hub = settings.hf_model_id is not None and not staged
    model = settings.hf_model_id if hub and settings.hf_model_id else "/opt/ml/model"
    values = {k: str(v) for k, v in settings.shapes.items()} | {"model": model}
    if not neuron:
        values["tensor_parallel_degree"] = str(gpus)
    if hub and settings.revision:
        values["revision"] = settings.revision
    env: dict[str, str]
    if serving is None:  # custom image: pass the settings under neutral names
        env = {var: values[key] for key, var in CUSTOM_SETTINGS.items() if key in values}
        if hub and settings.hf_token_secret_arn:
            env[HF_TOKEN_SECRET_ARN] = settings.hf_token_secret_arn
    else:
        image = serving if neuron else serving.gpu
        assert image is not None, "settings refuse a GPU variant for a container without a GPU image"
        task = serving.task_values.get(settings.task or serving.tasks[0], "")
        if task:
            values["task"] = task
        if (settings.model_data_url or staged) and image.model_from_s3 == "unset":
            values.pop("model")  # the container loads /opt/ml/model when its model variable is unset
        if neuron and settings.allow_non_cached_model and "allow_non_cached_model" in serving.flags:
            values["allow_non_cached_model"] = ""  # the entrypoint turns an empty SM_ON_ variable into a bare flag
        env = {var: values[key] for key, var in image.settings.items() if key in values} | image.fixed
    if neuron and settings.lnc:  # Trn2: the runtime reads the logical NeuronCore configuration from here
        env["NEURON_LOGICAL_NC_CONFIG"] = str(settings.lnc)
    return env


_ECR_URI = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?/(?P<repo>[^:@]+)")
_PULL = ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability"]


def execution_policy(scope: Construct, construct_id: str, settings: EndpointSettings,
                     role: iam.IRole | None = None) -> iam.Policy:
    """Images (the named DLC repositories, or the custom ECR repositories), the model artifact (read),
    the endpoint's logs and metrics, and the network interfaces SageMaker's VpcConfig needs; attached to ``role``.

    The statements are plain data (one ``PolicyDocument.from_json``, not a jsii object per statement)."""
    stack = stack_of(scope)
    serving = SERVING_CONTAINERS.get(settings.container)
    logs_arn = _logs_arn(stack)
    statements: list[dict[str, Any]] = [
        _statement("EcrAuth", ["ecr:GetAuthorizationToken"], ["*"]),
        _statement("Logs", ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents",
                            "logs:DescribeLogStreams"], [logs_arn]),
        {**_statement("Metrics", ["cloudwatch:PutMetricData"], ["*"]),
         "Condition": {"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}}},
        _statement("VpcInterfaces", [
            "ec2:CreateNetworkInterface", "ec2:CreateNetworkInterfacePermission", "ec2:DeleteNetworkInterface",
            "ec2:DeleteNetworkInterfacePermission", "ec2:DescribeNetworkInterfaces", "ec2:DescribeVpcs",
            "ec2:DescribeDhcpOptions", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups"], ["*"]),
    ]
    dlc_arns: list[str] = []
    if serving:
        repos = sorted({serving.repository, *([serving.gpu.repository] if serving.gpu else [])})
        dlc_arns = [dlc_repository_arn(stack, r) for r in repos]
        statements.append(_statement("PullDlcImages", _PULL, dlc_arns))
    gpu = settings.gpu_variant
    for i, uri in enumerate(u for u in (settings.image_uri, gpu.image_uri if gpu else None) if u):
        m = _ECR_URI.match(uri)
        if m:
            statements.append(_statement(f"PullCustomImage{i}", _PULL, [
                f"arn:{pseudo().partition}:ecr:{m['region']}:{m['account']}:repository/{m['repo']}"]))
    if settings.model_data_url:  # only while the bucket is its owner's (model_bucket_account, default this account)
        statements.append(read_object_statement(stack, "ReadModelArtifact", settings.model_data_url,
                                                owner_account=settings.model_bucket_account))
    if settings.hf_token_secret_arn and serving is None:  # a custom image reads the secret itself; the named
        # containers serve a gated hub model from its copy in S3 (HubModelCopy) and their role needs no access to it
        statements.append(_statement("ReadHfTokenSecret", ["secretsmanager:GetSecretValue"],
                                     [settings.hf_token_secret_arn]))
    policy = iam.Policy(scope, construct_id, roles=[role] if role is not None else None,
                        document=iam.PolicyDocument.from_json({"Version": "2012-10-17", "Statement": statements}))
    in_stack(policy, stack)
    acknowledge_wildcard_groups(policy, [
        ("ecr:GetAuthorizationToken, cloudwatch:PutMetricData (limited to /aws/sagemaker/*) and the EC2 "
         "network-interface actions SageMaker's VpcConfig needs have no resource scope", ("*",), ()),
        ("SageMaker writes endpoint logs to its own /aws/sagemaker/Endpoints/* log groups", (logs_arn,), ()),
        *([("Pulls named AWS Deep Learning Container repositories only", tuple(dlc_arns), ())] if dlc_arns else [])])
    return policy


def _statement(sid: str, actions: list[str], resources: list[str]) -> dict[str, Any]:
    """An Allow statement as IAM's JSON (what ``iam.PolicyStatement(sid=, actions=, resources=)`` holds)."""
    return {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources}


_LOGS_ARNS: WeakKeyDictionary[Stack, str] = WeakKeyDictionary()


def _logs_arn(stack: Stack) -> str:
    """The ARN of SageMaker's endpoint log groups in ``stack``'s account and region (formatted once per stack)."""
    arn = _LOGS_ARNS.get(stack)
    if arn is None:
        arn = _LOGS_ARNS[stack] = stack.format_arn(
            service="logs", resource="log-group", resource_name="/aws/sagemaker/Endpoints/*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME)
    return arn
