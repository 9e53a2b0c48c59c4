"""NeuronEndpoint: a SageMaker real-time endpoint on ml.inf2 with a Neuron serving container.

One production variant on Inferentia2 (``neuron``) and room for a second on GPU (``gpu``): either a live
variant that shares traffic by weight (the failover target) or a shadow variant that gets a copy of the
traffic without answering (pilot comparisons). Target-tracking autoscaling, optional schedules, alarms
into the fleet's SNS topic, VPC config, KMS and data capture.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from aws_cdk import ArnFormat, Aws, Duration, Names, Stack
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sns as sns
from constructs import Construct

from ._nag import acknowledge_wildcards
from .catalog import CATALOG, AcceleratorFamily, InstanceSpec
from .config import sagemaker_instance_types
from .tagging import tag_family

DLC_ACCOUNT = "763104351884"
"""AWS Deep Learning Containers registry account (most commercial regions)."""

NEURON_VARIANT = "neuron"
GPU_VARIANT = "gpu"
MIN_NEURON_TIMEOUT = Duration.minutes(10)
"""Neuron model loading (and compilation on first start) takes minutes: timeouts below this fail startup."""


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


@dataclass(frozen=True, kw_only=True)
class GpuVariant:
    """The second variant, on GPU: live (weighted; the failover target) or shadow (a copy of the traffic)."""

    instance_type: str
    initial_weight: float = 0.0
    initial_instance_count: int = 1
    shadow: bool = False
    image_uri: str | None = None


@dataclass(frozen=True, kw_only=True)
class ScheduledScaling:
    """A scheduled change of the Neuron variant's bounds, e.g. more capacity in the day."""

    name: str
    schedule: str
    """An Application Auto Scaling expression: ``cron(0 8 * * ? *)``, ``rate(1 day)``, ``at(...)``."""
    min_instances: int
    max_instances: int


class NeuronEndpoint(Construct):
    """A SageMaker real-time endpoint on Inferentia2.

    Example::

        endpoint = NeuronEndpoint(self, "Chat", vpc=net.vpc, subnets=net.compute_subnets,
            instance_type="ml.inf2.24xlarge", container="vllm-neuronx",
            hf_model_id="meta-llama/Llama-3.1-8B-Instruct", tensor_parallel_degree=12,
            min_instances=1, max_instances=4, alarm_topic=alerts.topic,
            gpu_variant=GpuVariant(instance_type="ml.g6e.12xlarge", shadow=True))
        endpoint.endpoint_name; endpoint.metric_invocations(); endpoint.grant_invoke(role)
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        instance_type: str,
        subnets: ec2.SubnetSelection | None = None,
        container: str = "lmi-neuronx",
        image_uri: str | None = None,
        model_data_url: str | None = None,
        hf_model_id: str | None = None,
        tensor_parallel_degree: int = 2,
        batch_size: int = 1,
        sequence_length: int = 2048,
        min_instances: int = 1,
        max_instances: int = 2,
        target_invocations_per_instance: float = 20,
        scale_in_cooldown: Duration | None = None,
        scale_out_cooldown: Duration | None = None,
        scheduled_scaling: Sequence[ScheduledScaling] = (),
        volume_size_gib: int = 64,
        startup_health_check_timeout: Duration | None = None,
        model_download_timeout: Duration | None = None,
        gpu_variant: GpuVariant | None = None,
        alarm_topic: sns.ITopic | None = None,
        latency_p99_threshold: Duration | None = None,
        errors_5xx_threshold: int = 5,
        model_errors_threshold: int = 5,
        data_capture_bucket: s3.IBucket | None = None,
        data_capture_percent: int = 10,
    ) -> None:
        super().__init__(scope, construct_id)
        startup = startup_health_check_timeout or Duration.minutes(30)
        download = model_download_timeout or Duration.minutes(30)
        self.spec: InstanceSpec = _validate(
            instance_type=instance_type, container=container, image_uri=image_uri, model_data_url=model_data_url,
            hf_model_id=hf_model_id, tensor_parallel_degree=tensor_parallel_degree, min_instances=min_instances,
            max_instances=max_instances, startup=startup, download=download, gpu_variant=gpu_variant,
            scheduled_scaling=scheduled_scaling,
        )
        tag_family(self, AcceleratorFamily.INFERENTIA)
        serving = SERVING_CONTAINERS.get(container)
        self.gpu_variant = gpu_variant

        # --- execution role: images, the model artifact (read, this role only), logs, metrics, VPC ENIs
        self.role = iam.Role(self, "ExecutionRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
                             description="SageMaker endpoint execution role (least privilege)")
        self.security_group = ec2.SecurityGroup(
            self, "SecurityGroup", vpc=vpc, allow_all_outbound=False,
            description="SageMaker endpoint: no inbound (invoked through the SageMaker API), HTTPS out")
        self.security_group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443),
                                            "HTTPS: S3, ECR, model hub downloads")
        self._grant_runtime(serving, image_uri, gpu_variant, model_data_url)

        sel = subnets or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
        selection = vpc.select_subnets(subnet_group_name=sel.subnet_group_name, subnet_type=sel.subnet_type,
                                       subnets=sel.subnets, availability_zones=sel.availability_zones,
                                       one_per_az=sel.one_per_az, subnet_filters=sel.subnet_filters)
        vpc_config = sagemaker.CfnModel.VpcConfigProperty(
            security_group_ids=[self.security_group.security_group_id], subnets=selection.subnet_ids)

        neuron_image = image_uri or _dlc(serving.neuron_image if serving else "")
        self.models: dict[str, sagemaker.CfnModel] = {
            NEURON_VARIANT: self._model(NEURON_VARIANT, neuron_image, model_data_url, vpc_config, _environment(
                serving, hf_model_id=hf_model_id, model_data_url=model_data_url, neuron=True,
                tensor_parallel_degree=tensor_parallel_degree, batch_size=batch_size,
                sequence_length=sequence_length, gpus=0)),
        }
        gpu_spec: InstanceSpec | None = None
        if gpu_variant:
            gpu_spec = CATALOG.get(gpu_variant.instance_type.removeprefix("ml."))
            gpu_image = gpu_variant.image_uri or (_dlc(serving.gpu_image) if serving else neuron_image)
            self.models[GPU_VARIANT] = self._model(GPU_VARIANT, gpu_image, model_data_url, vpc_config, _environment(
                serving, hf_model_id=hf_model_id, model_data_url=model_data_url, neuron=False,
                tensor_parallel_degree=gpu_spec.accelerators, batch_size=batch_size,
                sequence_length=sequence_length, gpus=gpu_spec.accelerators))

        # --- KMS: SageMaker refuses KmsKeyId (and VolumeSizeInGB) when any variant has local NVMe storage;
        # such storage is encrypted by the instance itself.
        local_storage = gpu_spec is not None and gpu_spec.instance_storage_gb > 0
        self.key: kms.Key | None = None
        if not local_storage or data_capture_bucket is not None:
            self.key = kms.Key(self, "Key", enable_key_rotation=True,
                               description="SageMaker endpoint: ML storage volume and data capture")
            self.key.grant(self.role, "kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey")

        neuron = sagemaker.CfnEndpointConfig.ProductionVariantProperty(
            variant_name=NEURON_VARIANT, model_name=self.models[NEURON_VARIANT].attr_model_name,
            instance_type=instance_type, initial_instance_count=min_instances, initial_variant_weight=1.0,
            volume_size_in_gb=volume_size_gib,
            container_startup_health_check_timeout_in_seconds=int(startup.to_seconds()),
            model_data_download_timeout_in_seconds=int(download.to_seconds()),
        )
        variants = [neuron]
        shadows: list[sagemaker.CfnEndpointConfig.ProductionVariantProperty] = []
        if gpu_variant and gpu_spec:
            gpu = sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                variant_name=GPU_VARIANT, model_name=self.models[GPU_VARIANT].attr_model_name,
                instance_type=gpu_variant.instance_type, initial_instance_count=gpu_variant.initial_instance_count,
                initial_variant_weight=1.0 if gpu_variant.shadow else gpu_variant.initial_weight,
                volume_size_in_gb=None if gpu_spec.instance_storage_gb else volume_size_gib,
                container_startup_health_check_timeout_in_seconds=int(startup.to_seconds()),
                model_data_download_timeout_in_seconds=int(download.to_seconds()),
            )
            (shadows if gpu_variant.shadow else variants).append(gpu)

        capture = None
        if data_capture_bucket is not None:
            prefix = data_capture_bucket.arn_for_objects(f"capture/{construct_id}/*")
            self.role.add_to_principal_policy(iam.PolicyStatement(actions=["s3:PutObject"], resources=[prefix]))
            acknowledge_wildcards(self.role, "SageMaker writes captured requests under this endpoint's own "
                                             "prefix of the capture bucket", resources=(prefix,))
            capture = sagemaker.CfnEndpointConfig.DataCaptureConfigProperty(
                initial_sampling_percentage=data_capture_percent,
                destination_s3_uri=data_capture_bucket.s3_url_for_object(f"capture/{construct_id}"),
                kms_key_id=self.key.key_arn if self.key else None,
                capture_options=[sagemaker.CfnEndpointConfig.CaptureOptionProperty(capture_mode="Input"),
                                 sagemaker.CfnEndpointConfig.CaptureOptionProperty(capture_mode="Output")],
            )
        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self, "EndpointConfig", production_variants=variants, shadow_production_variants=shadows or None,
            kms_key_id=self.key.key_arn if self.key and not local_storage else None,
            data_capture_config=capture,
        )
        # A deterministic, unique, lower-case name: SageMaker ARNs are lower-case, so grants and the
        # failover's permissions can name exactly this endpoint.
        self.endpoint_name: str = _endpoint_name(self)
        self.endpoint = sagemaker.CfnEndpoint(self, "Endpoint", endpoint_name=self.endpoint_name,
                                              endpoint_config_name=self.endpoint_config.attr_endpoint_config_name)

        # SageMaker checks image and artifact access when it creates a model: the policies must exist first
        for model in self.models.values():
            model.node.add_dependency(self.execution_policy)
            default_policy = self.role.node.try_find_child("DefaultPolicy")
            if default_policy is not None:
                model.node.add_dependency(default_policy)

        # --- autoscaling of the Neuron variant
        self.scalable_target = appscaling.ScalableTarget(
            self, "Scaling", service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
            resource_id=f"endpoint/{self.endpoint_name}/variant/{NEURON_VARIANT}",
            scalable_dimension="sagemaker:variant:DesiredInstanceCount",
            min_capacity=min_instances, max_capacity=max_instances,
        )
        self.scalable_target.node.add_dependency(self.endpoint)
        self.scalable_target.scale_to_track_metric(
            "InvocationsPerInstance", target_value=target_invocations_per_instance,
            predefined_metric=appscaling.PredefinedMetric.SAGEMAKER_VARIANT_INVOCATIONS_PER_INSTANCE,
            scale_in_cooldown=scale_in_cooldown or Duration.minutes(10),
            scale_out_cooldown=scale_out_cooldown or Duration.minutes(2),
        )
        for action in scheduled_scaling:
            self.scalable_target.scale_on_schedule(
                action.name, schedule=appscaling.Schedule.expression(action.schedule),
                min_capacity=action.min_instances, max_capacity=action.max_instances)

        # --- alarms on the Neuron variant, into the fleet topic (OK notifications too, for failback)
        latency = latency_p99_threshold or Duration.seconds(5)
        self.alarms: dict[str, cloudwatch.Alarm] = {
            "latency": self.metric_model_latency(statistic="p99").create_alarm(
                self, "LatencyP99Alarm", threshold=latency.to_milliseconds() * 1000, evaluation_periods=5,
                datapoints_to_alarm=3, treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=f"p99 model latency above {latency.to_milliseconds()} ms on the Neuron variant"),
            "errors5xx": self.metric("Invocation5XXErrors", period=Duration.minutes(5)).create_alarm(
                self, "Errors5xxAlarm", threshold=errors_5xx_threshold, evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                alarm_description=f"{errors_5xx_threshold}+ 5XX errors in 5 minutes on the Neuron variant"),
            "modelErrors": self.metric("InvocationModelErrors", period=Duration.minutes(5)).create_alarm(
                self, "ModelErrorsAlarm", threshold=model_errors_threshold, evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                alarm_description=f"{model_errors_threshold}+ model (invocation) errors in 5 minutes"),
        }
        if alarm_topic is not None:
            for alarm in self.alarms.values():
                alarm.add_alarm_action(cw_actions.SnsAction(alarm_topic))
                alarm.add_ok_action(cw_actions.SnsAction(alarm_topic))

    # ------------------------------------------------------------------------------------- public API

    def metric(self, metric_name: str, *, variant: str = NEURON_VARIANT, statistic: str = "Sum",
               period: Duration | None = None) -> cloudwatch.Metric:
        """A metric of this endpoint's variant in the ``AWS/SageMaker`` namespace."""
        return cloudwatch.Metric(namespace="AWS/SageMaker", metric_name=metric_name,
                                 dimensions_map={"EndpointName": self.endpoint_name, "VariantName": variant},
                                 statistic=statistic, period=period or Duration.minutes(1))

    def metric_invocations(self, *, variant: str = NEURON_VARIANT) -> cloudwatch.Metric:
        return self.metric("Invocations", variant=variant)

    def metric_model_latency(self, *, variant: str = NEURON_VARIANT, statistic: str = "p99") -> cloudwatch.Metric:
        """Model latency in microseconds."""
        return self.metric("ModelLatency", variant=variant, statistic=statistic)

    @property
    def endpoint_arn(self) -> str:
        return Stack.of(self).format_arn(service="sagemaker", resource="endpoint", resource_name=self.endpoint_name)

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        return iam.Grant.add_to_principal(grantee=grantee, actions=["sagemaker:InvokeEndpoint"],
                                          resource_arns=[self.endpoint_arn])

    # ------------------------------------------------------------------------------------- internals

    def _model(self, variant: str, image: str, model_data_url: str | None,
               vpc_config: sagemaker.CfnModel.VpcConfigProperty, environment: dict[str, str]) -> sagemaker.CfnModel:
        model = sagemaker.CfnModel(
            self, f"{variant.capitalize()}Model", execution_role_arn=self.role.role_arn, vpc_config=vpc_config,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image, model_data_url=model_data_url, environment=environment),
        )
        return model

    def _grant_runtime(self, serving: ServingContainer | None, image_uri: str | None,
                       gpu_variant: GpuVariant | None, model_data_url: str | None) -> None:
        role = self.role
        stack = Stack.of(self)
        repos = sorted({img.split(":")[0] for img in ([serving.neuron_image, serving.gpu_image] if serving else [])})
        statements = [
            iam.PolicyStatement(sid="EcrAuth", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
            iam.PolicyStatement(sid="Logs", actions=["logs:CreateLogGroup", "logs:CreateLogStream",
                                                     "logs:PutLogEvents", "logs:DescribeLogStreams"],
                                resources=[stack.format_arn(service="logs", resource="log-group",
                                                            resource_name="/aws/sagemaker/Endpoints/*",
                                                            arn_format=ArnFormat.COLON_RESOURCE_NAME)]),
            iam.PolicyStatement(sid="Metrics", actions=["cloudwatch:PutMetricData"], resources=["*"],
                                conditions={"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}}),
            iam.PolicyStatement(sid="VpcInterfaces", resources=["*"], actions=[
                "ec2:CreateNetworkInterface", "ec2:CreateNetworkInterfacePermission", "ec2:DeleteNetworkInterface",
                "ec2:DeleteNetworkInterfacePermission", "ec2:DescribeNetworkInterfaces", "ec2:DescribeVpcs",
                "ec2:DescribeDhcpOptions", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups"]),
        ]
        if repos:
            statements.append(iam.PolicyStatement(
                sid="PullDlcImages", actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer",
                                              "ecr:BatchCheckLayerAvailability"],
                resources=[f"arn:{Aws.PARTITION}:ecr:{Aws.REGION}:{DLC_ACCOUNT}:repository/{r}" for r in repos]))
        custom = [u for u in (image_uri, gpu_variant.image_uri if gpu_variant else None) if u]
        for i, uri in enumerate(custom):
            m = _ECR_URI.match(uri)
            if m:
                statements.append(iam.PolicyStatement(
                    sid=f"PullCustomImage{i}", actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer",
                                                        "ecr:BatchCheckLayerAvailability"],
                    resources=[f"arn:{Aws.PARTITION}:ecr:{m['region']}:{m['account']}:repository/{m['repo']}"]))
        if model_data_url:
            bucket, _, key = model_data_url.removeprefix("s3://").partition("/")
            statements.append(iam.PolicyStatement(
                sid="ReadModelArtifact", actions=["s3:GetObject"],
                resources=[f"arn:{Aws.PARTITION}:s3:::{bucket}/{key}"]))
        policy = iam.Policy(self, "ExecutionPolicy", statements=statements)
        policy.attach_to_role(role)
        self.execution_policy = policy
        logs_arn = statements[1].resources[0]
        acknowledge_wildcards(policy, "ecr:GetAuthorizationToken, cloudwatch:PutMetricData (limited to "
                                      "/aws/sagemaker/*) and the EC2 network-interface actions SageMaker's "
                                      "VpcConfig needs have no resource scope", resources=("*",))
        acknowledge_wildcards(policy, "SageMaker writes endpoint logs to its own /aws/sagemaker/Endpoints/* "
                                      "log groups", resources=(logs_arn,))
        for statement in statements:
            if statement.sid == "PullDlcImages":
                acknowledge_wildcards(policy, "Pulls named AWS Deep Learning Container repositories only",
                                      resources=tuple(statement.resources))


_ECR_URI = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com/(?P<repo>[^:@]+)")


def _endpoint_name(scope: Construct) -> str:
    name = re.sub(r"[^a-z0-9-]", "-", Names.unique_resource_name(scope, max_length=63, separator="-").lower())
    return re.sub(r"-+", "-", name).strip("-")


def _dlc(repo_tag: str) -> str:
    return f"{DLC_ACCOUNT}.dkr.ecr.{Aws.REGION}.amazonaws.com/{repo_tag}"


def _environment(serving: ServingContainer | None, *, hf_model_id: str | None, model_data_url: str | None,
                 neuron: bool, tensor_parallel_degree: int, batch_size: int, sequence_length: int,
                 gpus: int) -> dict[str, str]:
    """The settings each serving container reads: tensor parallelism, batch size, sequence length."""
    model = hf_model_id or "/opt/ml/model"
    if serving is None:  # custom image: pass the settings under neutral names
        return {"MODEL_ID": model, "TENSOR_PARALLEL_DEGREE": str(tensor_parallel_degree),
                "BATCH_SIZE": str(batch_size), "SEQUENCE_LENGTH": str(sequence_length)}
    if serving.server == "lmi":
        env = {"HF_MODEL_ID": model, "OPTION_TENSOR_PARALLEL_DEGREE": str(tensor_parallel_degree),
               "OPTION_MAX_ROLLING_BATCH_SIZE": str(batch_size), "OPTION_ROLLING_BATCH": serving.rolling_batch or "auto",
               "OPTION_MAX_MODEL_LEN": str(sequence_length)}
        if neuron:
            env["OPTION_N_POSITIONS"] = str(sequence_length)
        return env
    env = {"HF_MODEL_ID": model, "MAX_BATCH_SIZE": str(batch_size), "MAX_TOTAL_TOKENS": str(sequence_length),
           "MAX_INPUT_TOKENS": str(max(1, sequence_length // 2))}
    if neuron:  # optimum-neuron TGI: static shapes, cores to shard over
        env |= {"HF_NUM_CORES": str(tensor_parallel_degree), "HF_BATCH_SIZE": str(batch_size),
                "HF_SEQUENCE_LENGTH": str(sequence_length), "HF_AUTO_CAST_TYPE": "bf16"}
    else:
        env["SM_NUM_GPUS"] = str(gpus)
    return env


def _validate(*, instance_type: str, container: str, image_uri: str | None, model_data_url: str | None,
              hf_model_id: str | None, tensor_parallel_degree: int, min_instances: int, max_instances: int,
              startup: Duration, download: Duration, gpu_variant: GpuVariant | None,
              scheduled_scaling: Sequence[ScheduledScaling]) -> InstanceSpec:
    inf2 = [f"ml.{t}" for t in CATALOG.types(AcceleratorFamily.INFERENTIA)]
    if instance_type not in sagemaker_instance_types():
        raise ValueError(f"instance_type {instance_type!r} is not a SageMaker ProductionVariantInstanceType; "
                         f"use one of {', '.join(inf2)}")
    if instance_type not in inf2:
        raise ValueError(f"instance_type {instance_type!r} is not Inferentia2; use one of {', '.join(inf2)}")
    spec = CATALOG.get(instance_type.removeprefix("ml."))
    cores = spec.neuron_cores
    if tensor_parallel_degree < 1 or cores % tensor_parallel_degree:
        raise ValueError(f"tensor_parallel_degree {tensor_parallel_degree} does not fit the {cores} NeuronCores of "
                         f"{instance_type}; use a divisor of {cores}: "
                         + ", ".join(str(d) for d in range(1, cores + 1) if cores % d == 0))
    if not 1 <= min_instances <= max_instances:
        raise ValueError(f"min_instances {min_instances} / max_instances {max_instances}: need 1 <= min <= max")
    if container not in SERVING_CONTAINERS and container != "custom":
        raise ValueError(f"container {container!r}: use one of {', '.join(SERVING_CONTAINERS)} or 'custom'")
    if (container == "custom") != (image_uri is not None):
        raise ValueError("image_uri is required with container='custom' and only then")
    if (model_data_url is None) == (hf_model_id is None):
        raise ValueError("give exactly one of model_data_url (s3://bucket/model.tar.gz) or hf_model_id")
    if model_data_url is not None and not model_data_url.startswith("s3://"):
        raise ValueError(f"model_data_url {model_data_url!r} must be an s3:// URI")
    for name, value in (("startup_health_check_timeout", startup), ("model_download_timeout", download)):
        if not MIN_NEURON_TIMEOUT.to_seconds() <= value.to_seconds() <= 3600:
            raise ValueError(f"{name} {value.to_seconds()} s: Neuron models need 600 to 3600 s to load")
    if gpu_variant is not None:
        gpus = [f"ml.{t}" for t in CATALOG.types(AcceleratorFamily.GPU)]
        if gpu_variant.instance_type not in gpus or gpu_variant.instance_type not in sagemaker_instance_types():
            raise ValueError(f"gpu_variant.instance_type {gpu_variant.instance_type!r}: use a SageMaker GPU type "
                             f"of the catalog: {', '.join(g for g in gpus if g in sagemaker_instance_types())}")
    for action in scheduled_scaling:
        if not 1 <= action.min_instances <= action.max_instances:
            raise ValueError(f"scheduled scaling {action.name!r}: need 1 <= min_instances <= max_instances")
    return spec
