"""NeuronEndpoint: a SageMaker real-time endpoint on ml.inf2, ml.trn1 or ml.trn2 with a Neuron serving container.

One production variant on Neuron (``neuron``), optionally over several instance pools (Neuron types first, GPU types
after them with a GPU model through ``ModelNameOverride``), and room for a second variant on GPU (``gpu``): either a
live variant that shares traffic by weight (the failover target) or a shadow variant that gets a copy of the
traffic without answering (pilot comparisons). Target-tracking autoscaling, optional schedules, alarms
into the fleet's SNS topic, VPC config, KMS and data capture. What it serves and how it scales is one
:class:`~neuronfleet.settings.EndpointSettings`.
"""

from __future__ import annotations

import math
import re
from typing import Any
from weakref import WeakKeyDictionary

from aws_cdk import Annotations, ArnFormat, CfnTag, Duration, Names, RemovalPolicy
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

from neuronfleet_contract.alarms import NEURON_ALARMS, alarm_name
from neuronfleet_contract.judge import judge_alarm_name
from neuronfleet_contract.namespaces import AWS_SAGEMAKER_METRICS
from neuronfleet_contract.tags import MODEL_TAG, THROUGHPUT_TAG
from neuronfleet_contract.variants import GPU_VARIANT, NEURON_VARIANT

from ..core import rules
from ..core.args import duck, settings_argument, wrong_type
from ..core.fleet_tag_check import warn_without_fleet_tag
from ..core.lookups import any_ipv4, arn_in, in_stack, minutes, seconds, stack_of, tcp
from ..core.lookups import days as lookup_days
from ..core.nag import acknowledge, acknowledge_wildcards
from ..core.problems import InvalidSettings, Problem
from ..core.s3_reads import object_arn, owner_condition
from ..core.storage import secure_bucket
from ..core.tagging import tag_family
from ..core.trust import sagemaker_principal
from ..facts.catalog import CATALOG, InstanceSpec
from ..facts.compile_cache import S3_CACHE_PREFIX, compiles_into_cache, serving_cache_env
from ..facts.guardrails import guardrails
from ..facts.images import dlc_image
from ..settings import CutoverSettings, EndpointSettings, GpuVariant, ScheduledScaling
from .async_queue import ASYNC_ALARMS, ASYNC_METRICS, NOT_PUBLISHED_FOR_ASYNC, SCALE_FROM_ZERO, AsyncQueue
from .serving import SERVING_CONTAINERS, environment, execution_policy
from .staging import HubModelCopy

STANDBY_TAG = "neuronfleet:gpu-standby"
"""Endpoint tag naming the GPU standby choice (``hot``, ``warm`` or ``none``) for cost reports."""
ROLLING_WAIT_S = 300
"""Baking time of each rolling-update batch (RollingUpdatePolicy.WaitIntervalInSeconds: 0-3600)."""
MIN_DEPLOYMENT_S, MAX_DEPLOYMENT_S = 600, 28800
"""RollingUpdatePolicy.MaximumExecutionTimeoutInSeconds: 600-28800 (botocore sagemaker/2017-07-24/service-2.json,
MaximumExecutionTimeoutInSeconds, read 2026-11-22)."""

__all__ = ["GPU_VARIANT", "NEURON_VARIANT", "SERVING_CONTAINERS", "STANDBY_TAG", "GpuVariant", "NeuronEndpoint",
           "ScheduledScaling"]

_ProductionVariant = sagemaker.CfnEndpointConfig.ProductionVariantProperty



CKV_MODEL_NETWORK_ISOLATION = "CKV_AWS_370"
"""checkov's "Ensure Amazon SageMaker model uses network isolation" on AWS::SageMaker::Model
(``Properties/EnableNetworkIsolation``; bridgecrewio/checkov, checkov/cloudformation/checks/resource/aws/
SagemakerModelWithNetworkIsolation.py, read 2026-11-23)."""
HUB_MODEL_NETWORK = (
    "a hub model (hf_model_id) is downloaded by the serving container itself when it starts, from the Hugging Face Hub "
    "through the VPC's NAT: EnableNetworkIsolation would cut that download off. A model from S3 (model_data_url) is "
    "downloaded by SageMaker and runs isolated; package the model to S3 to get isolation")
"""Why a hub model's SageMaker model runs without network isolation (the checkov acknowledgement's comment)."""


class NeuronEndpoint(Construct):
    """A SageMaker real-time endpoint on Inferentia2 or Trainium.

    Example::

        endpoint = NeuronEndpoint(self, "Chat", vpc=net.vpc, vpc_subnets=net.compute_subnets, topic=alerts.topic,
            settings=EndpointSettings(instance_type="ml.inf2.24xlarge", container="vllm-neuronx",
                hf_model_id="unsloth/Llama-3.1-8B-Instruct", revision="<40-hex commit>",
                tensor_parallel_degree=12, allow_non_cached_model=False, min_instances=1, max_instances=4,
                gpu_variant=GpuVariant(instance_type="ml.g6e.12xlarge", shadow=True)))
        endpoint.endpoint_name; endpoint.metric_invocations(); endpoint.grant_invoke(role)
    """

    def __init__(self, scope: Construct, construct_id: str, *, vpc: ec2.IVpc, settings: EndpointSettings,
                 vpc_subnets: ec2.SubnetSelection | None = None, topic: sns.ITopic | None = None,
                 data_capture_bucket: s3.IBucket | None = None, removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
                 model_name: str | None = None, async_bucket: s3.IBucket | None = None,
                 compile_cache_bucket: s3.IBucket | None = None) -> None:
        """``vpc_subnets``: where the endpoint's instances run (default: the VPC's private subnets with egress);
        ``model_name``: what the migration report calls the model (tag ``neuronfleet:model``; default: the construct
        id); the reference app passes the fleet file's endpoint name.
        ``topic``: where its alarms notify.
        ``async_bucket``: with ``invocation: async``, the bucket of its input, output and failure prefixes
        (``async/<construct id>/...``; default: a bucket of its own).
        ``removal_policy``: what deleting the stack does to the data-capture buckets it creates (RETAIN unless asked).
        ``compile_cache_bucket``: where a model that compiles at start keeps its graphs for the next instances
        (``neuron-compile-cache/``; only for a container that reads an S3 compile cache: :attr:`compile_cache_url`);
        default: an asynchronous endpoint's queue bucket (it compiles at every scale-out from zero), else none."""
        super().__init__(scope, construct_id)
        in_stack(self, stack_of(scope))  # Stack.of(self) is its scope's stack: asked once per stack, not per endpoint
        what = "NeuronEndpoint"
        settings = settings_argument(settings, EndpointSettings, what=what)
        if vpc_subnets is not None and not isinstance(vpc_subnets, ec2.SubnetSelection):
            raise wrong_type("vpc_subnets", vpc_subnets, "an ec2.SubnetSelection (e.g. net.compute_subnets, or "
                             "ec2.SubnetSelection(subnets=[...]))", what=what)
        if topic is not None:
            duck("topic", topic, "topic_arn", "an sns.ITopic (e.g. alerts.topic)", what=what)
        self.settings = settings
        self.removal_policy = removal_policy
        self._topic = topic
        self.model_name: str = model_name or construct_id
        """What the migration report calls this endpoint's model (its ``neuronfleet:model`` tag)."""
        self._endpoint_arn: str | None = None
        self.spec: InstanceSpec = settings.spec
        self.gpu_variant: GpuVariant | None = settings.live_gpu_variant
        """The GPU variant that runs instances (hot standby, live or shadow); None without one or for a warm standby."""
        tag_family(self, settings.gpu_variant.spec.family if settings.serves_on_gpu and settings.gpu_variant
                   else self.spec.family)
        serving = settings.serving
        if serving is not None and serving.status == "deprecated":
            Annotations.of(self).add_warning_v2(
                "neuronfleet:deprecated-container",
                f"container {settings.container} ({serving.image}) is deprecated: {serving.note} "
                f"Move to container: {serving.replacement}.")
        for field, model, revision in settings.hub_models:
            if revision is None:
                Annotations.of(self).add_warning_v2(
                    "neuronfleet:unpinned-model",
                    f"{field}: {model} is not pinned to a revision: every instance start (creation, scale-out, "
                    f"replacement) loads whatever its default branch holds then. Set "
                    f"{'gpu_variant.revision' if field == 'gpu_variant.hf_model_id' else 'revision'} to a commit "
                    "(40 hex digits).")
        self.role = iam.Role(self, "ExecutionRole", assumed_by=sagemaker_principal(stack_of(self)),
                             description="SageMaker endpoint execution role (least privilege)")
        in_stack(self.role, stack_of(self))
        self.execution_policy = execution_policy(self, "ExecutionPolicy", settings, role=self.role)
        acknowledge(self.execution_policy, "CKV_AWS_109", "CKV_AWS_111")  # VpcConfig's network interfaces
        self.security_group = ec2.SecurityGroup(
            self, "SecurityGroup", vpc=vpc, allow_all_outbound=False,
            description="SageMaker endpoint: no inbound (invoked through the SageMaker API), HTTPS out")
        self.security_group.add_egress_rule(any_ipv4(), tcp(443), "HTTPS: S3, ECR, model hub downloads")
        if async_bucket is not None:
            duck("async_bucket", async_bucket, "bucket_arn", "an s3.IBucket", what=what)
        if compile_cache_bucket is not None:
            duck("compile_cache_bucket", compile_cache_bucket, "bucket_arn", "an s3.IBucket", what=what)
        self.compile_cache_url: str | None = None
        """Where the Neuron model keeps the graphs it compiles at start for the next instances (a scale-out, a
        replacement, a scale-out from zero): ``s3://<bucket>/neuron-compile-cache/`` for a container that reads an S3
        compile cache (:data:`~neuronfleet.facts.compile_cache.SERVING_CACHE`: vllm-neuronx) serving a hub model it
        may compile (``allow_non_cached_model``), given a bucket; None otherwise (a compiled artifact compiles
        nothing)."""
        self._models(vpc, vpc_subnets or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS))
        self.async_queue: AsyncQueue | None = AsyncQueue(self, "Async", role=self.role, bucket=async_bucket,
                                                         removal_policy=removal_policy) if settings.is_async else None
        """An asynchronous endpoint's S3 locations and SNS topics (None for a real-time endpoint)."""
        self._compile_cache(compile_cache_bucket or (self.async_queue.bucket if self.async_queue else None))
        self._endpoint(data_capture_bucket)
        self._scaling()
        self._alarms(topic)
        self._deployment()

    # ------------------------------------------------------------------------------------- public API

    def metric(self, metric_name: str, *, variant: str = NEURON_VARIANT, statistic: str = "Sum",
               period: Duration | None = None, **options: object) -> cloudwatch.Metric:
        """A metric of one of this endpoint's variants in the ``AWS/SageMaker`` namespace (metric options:
        ``label``, ``unit``, ``color``, ...)."""
        return cloudwatch.Metric(namespace=AWS_SAGEMAKER_METRICS, metric_name=metric_name,
                                 dimensions_map={"EndpointName": self.endpoint_name, "VariantName": variant},
                                 statistic=statistic, period=period or minutes(1), **options)  # type: ignore[arg-type]

    def metric_invocations(self, *, variant: str = NEURON_VARIANT, **options: object) -> cloudwatch.Metric:
        return self.metric("Invocations", variant=variant, **options)  # type: ignore[arg-type]

    def metric_model_latency(self, *, variant: str = NEURON_VARIANT, statistic: str = "p99",
                             **options: object) -> cloudwatch.Metric:
        """Model latency in microseconds."""
        return self.metric("ModelLatency", variant=variant, statistic=statistic, **options)  # type: ignore[arg-type]

    @property
    def endpoint_arn(self) -> str:
        if self._endpoint_arn is None:
            self._endpoint_arn = arn_in(stack_of(self), service="sagemaker", resource="endpoint",
                                                           resource_name=self.endpoint_name)
        return self._endpoint_arn

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Invoke the endpoint: ``sagemaker:InvokeEndpoint``; for an asynchronous endpoint
        ``sagemaker:InvokeEndpointAsync``, and its queue's caller rights (put requests under the input prefix, read
        answers and errors: AsyncQueue.grant_caller)."""
        if self.async_queue is not None:
            self.async_queue.grant_caller(grantee)
            return iam.Grant.add_to_principal(grantee=grantee, actions=["sagemaker:InvokeEndpointAsync"],
                                              resource_arns=[self.endpoint_arn])
        return iam.Grant.add_to_principal(grantee=grantee, actions=["sagemaker:InvokeEndpoint"],
                                          resource_arns=[self.endpoint_arn])

    def _compile_cache(self, bucket: s3.IBucket | None) -> None:
        """The Neuron model's cache variable (:attr:`compile_cache_url`), and the execution policy's rights on the
        cache's prefix only (list it, read, write, delete its objects; docs/checks.md ``compile-cache``)."""
        if bucket is None or not compiles_into_cache(self.settings) or self.settings.stages_hub_models:
            return
        url = self.compile_cache_url = f"s3://{bucket.bucket_name}/{S3_CACHE_PREFIX}"
        model = self.models[NEURON_VARIANT]
        for name, value in serving_cache_env(self.settings.container, url).items():
            model.add_property_override(f"PrimaryContainer.Environment.{name}", value)
        objects = bucket.arn_for_objects(f"{S3_CACHE_PREFIX}*")
        self.execution_policy.add_statements(
            iam.PolicyStatement(sid="ListCompileCache", actions=["s3:ListBucket"], resources=[bucket.bucket_arn],
                                conditions={"StringLike": {"s3:prefix": [f"{S3_CACHE_PREFIX}*"]}}),
            iam.PolicyStatement(sid="CompileCache", actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
                                resources=[objects]))
        acknowledge_wildcards(self.execution_policy, "the Neuron compile cache's prefix of the fleet's bucket: the "
                              "compiler wrapper names its objects by graph hash", resources=(objects,))

    # ------------------------------------------------------------------------------------- steps

    def _models(self, vpc: ec2.IVpc, sel: ec2.SubnetSelection) -> None:
        """One SageMaker model per variant, in the VPC, created after the execution policy exists (SageMaker
        checks image and artifact access when it creates a model)."""
        settings = self.settings
        vpc_config = sagemaker.CfnModel.VpcConfigProperty(
            security_group_ids=[self.security_group.security_group_id], subnets=_subnet_ids(vpc, sel))
        serving = SERVING_CONTAINERS.get(settings.container)
        neuron_image = settings.image_uri or dlc_image(self, serving.image if serving else "")
        staged = settings.stages_hub_models
        served = {NEURON_VARIANT: (neuron_image, settings, environment(
            settings, neuron=True, staged=staged and settings.hf_model_id is not None))}
        gpu = settings.gpu_variant
        if gpu:
            gpu_types = ([gpu.instance_type] if settings.live_gpu_variant or settings.serves_on_gpu else []) \
                + list(settings.gpu_pools)
            # settings refuse a custom container without a GPU image: neuron_image is never served on GPU
            gpu_image = gpu.image_uri or (dlc_image(self, serving.gpu.image) if serving and serving.gpu else neuron_image)
            gpu_settings = settings.model_copy(update={"model_data_url": gpu.model_data_url, "hf_model_id": gpu.hf_model_id,
                                                       "revision": gpu.revision}) if gpu.own_model else settings
            for t in dict.fromkeys(gpu_types):  # one model per GPU type: each passes its own GPU count
                key = GPU_VARIANT if t == gpu.instance_type else f"{GPU_VARIANT}-{t.removeprefix('ml.')}"
                served[key] = (gpu_image, gpu_settings, environment(
                    gpu_settings, neuron=False, gpus=CATALOG.get(t.removeprefix("ml.")).accelerators,
                    staged=staged and gpu_settings.hf_model_id is not None))
            if gpu.model_data_url:
                self.execution_policy.add_statements(iam.PolicyStatement(
                    sid="ReadGpuModelArtifact", actions=["s3:GetObject"], resources=[object_arn(gpu.model_data_url)],
                    conditions=owner_condition(stack_of(self), settings.model_bucket_account)))
        self.models: dict[str, sagemaker.CfnModel] = {}
        self.hub_copies: dict[tuple[str, str], HubModelCopy] = {}
        """The gated hub models copied into S3 (model id, revision) -> copy; empty without hf_token_secret_arn."""
        role_arn = self.role.role_arn
        for variant, (image, model_settings, env) in served.items():
            copy = self._hub_copy(model_settings) if staged and model_settings.hf_model_id else None
            # A model from S3 needs no network: SageMaker downloads the artifact (or the copy of a gated hub model);
            # the container runs isolated (no inbound or outbound calls, CreateModel EnableNetworkIsolation). A hub
            # model downloads itself.
            model = sagemaker.CfnModel(
                self, "".join(w.capitalize() for w in re.split(r"[-.]", variant)) + "Model",
                execution_role_arn=role_arn, vpc_config=vpc_config,
                enable_network_isolation=model_settings.model_data_url is not None or copy is not None,
                primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                    image=image, model_data_url=model_settings.model_data_url, environment=env,
                    model_data_source=None if copy is None else _uncompressed(copy.s3_uri)))
            if copy is not None:
                model.node.add_dependency(copy.resource)  # SageMaker checks the model data when it creates the model
            elif model_settings.model_data_url is None:
                model.add_metadata("checkov", {"skip": [{"id": CKV_MODEL_NETWORK_ISOLATION, "comment": HUB_MODEL_NETWORK}]})
            self.models[variant] = model  # depends on the execution policy (and the role's default policy): _endpoint

    def _hub_copy(self, model_settings: EndpointSettings) -> HubModelCopy:
        """The copy in S3 of ``model_settings``' gated hub model (one per model and revision, in one bucket per
        endpoint), readable by the execution role."""
        assert model_settings.hf_model_id and model_settings.revision and self.settings.hf_token_secret_arn, \
            "settings refuse a staged hub model without its revision"
        found = (model_settings.hf_model_id, model_settings.revision)
        if found not in self.hub_copies:
            if not self.hub_copies:
                logs = secure_bucket(self, "ModelCopyLogs", removal_policy=self.removal_policy)
                self.model_bucket = secure_bucket(self, "ModelCopies", access_logs=logs, log_prefix="model-copies/",
                                                  removal_policy=self.removal_policy)
            copy = HubModelCopy(self, f"HubCopy{len(self.hub_copies)}", model_id=found[0], revision=found[1],
                                secret_arn=self.settings.hf_token_secret_arn, bucket=self.model_bucket,
                                topic=self._topic)
            copy.grant_read(self.role)
            self.hub_copies[found] = copy
        return self.hub_copies[found]

    def _variants(self) -> tuple[list[_ProductionVariant], list[_ProductionVariant]]:
        s = self.settings
        startup, download = s.startup_health_check_timeout_s, s.model_download_timeout_s
        pools = None
        if len(s.pools) > 1:  # InstancePools replace InstanceType (developer guide, "Deploy to multiple instance
            # types with instance pools", read 2026-11-22); priority 1 is tried first
            pools = [sagemaker.CfnEndpointConfig.InstancePoolProperty(
                instance_type=t, priority=i,
                model_name_override=None if i == 1 or t in s.neuron_pools else self._gpu_model(t).attr_model_name)
                for i, t in enumerate(s.pools, start=1)]
        local = any(CATALOG.get(t.removeprefix("ml.")).instance_storage_gb for t in s.pools)
        # serve_on gpu (a GPU-only endpoint): the serving variant keeps its name (deployment guardrails need the same
        # variant name in the old and the new configuration) and runs the GPU variant's model on its type
        serving = self.models[GPU_VARIANT if s.serves_on_gpu else NEURON_VARIANT]
        live = [_ProductionVariant(variant_name=NEURON_VARIANT, model_name=serving.attr_model_name,
                        instance_type=None if pools else s.pools[0], instance_pools=pools,
                        variant_instance_provision_timeout_in_seconds=s.provision_timeout_s,
                        initial_instance_count=max(1, s.min_instances),  # SageMaker's least: 1 (an
                        # asynchronous endpoint then scales to its floor, 0, when its queue is empty)
                        initial_variant_weight=1.0, volume_size_in_gb=None if local else s.volume_size_gib,
                        container_startup_health_check_timeout_in_seconds=startup,
                        model_data_download_timeout_in_seconds=download)]
        shadows: list[_ProductionVariant] = []
        gpu = s.live_gpu_variant
        if gpu:
            variant = _ProductionVariant(
                variant_name=GPU_VARIANT, model_name=self.models[GPU_VARIANT].attr_model_name,
                instance_type=gpu.instance_type, initial_instance_count=gpu.min_instances,
                initial_variant_weight=1.0 if gpu.shadow else gpu.initial_weight,
                volume_size_in_gb=None if gpu.spec.instance_storage_gb else s.volume_size_gib,
                container_startup_health_check_timeout_in_seconds=startup, model_data_download_timeout_in_seconds=download)
            (shadows if gpu.shadow else live).append(variant)
        return live, shadows

    def _gpu_model(self, instance_type: str) -> sagemaker.CfnModel:
        gpu = self.settings.gpu_variant
        assert gpu is not None, "settings refuse GPU pools without a gpu_variant"
        key = GPU_VARIANT if instance_type == gpu.instance_type else f"{GPU_VARIANT}-{instance_type.removeprefix('ml.')}"
        return self.models[key]

    @property
    def has_live_gpu(self) -> bool:
        """Whether a live GPU variant runs beside the Neuron one (hot, sharing traffic by weight, not a shadow): what
        the failover moves traffic to, what the GPU variant's scaling and alarms are for."""
        return self.gpu_variant is not None and not self.gpu_variant.shadow

    @property
    def standby(self) -> str:
        """The GPU standby: ``hot`` (running GPU instances), ``warm`` (a GPU instance pool, nothing running) or
        ``none``."""
        gpu = self.settings.gpu_variant
        return "none" if gpu is None or gpu.shadow or self.settings.serves_on_gpu else gpu.standby

    def _throughput_tag(self) -> list[CfnTag]:
        """The fleet file's stated throughput ratio, when it states one for the GPU variant (hot, shadow, or warm: a
        warm standby's type is the Neuron variant's last instance pool, which the report reads the ratio against): the
        report's capacity figure for a saving against GPU alone (an unstated default of 1 is no measurement)."""
        gpu = self.settings.gpu_variant
        if gpu is None or "neuron_instances_per_gpu_instance" not in gpu.model_fields_set:
            return []
        return [CfnTag(key=THROUGHPUT_TAG, value=f"{gpu.neuron_instances_per_gpu_instance:g}")]

    def standby_usd_per_hour(self) -> float:
        """What the GPU standby costs per hour while Neuron serves, at the kit's built-in SageMaker hosting rate of its
        type (0 for warm or none; SageMaker instances are priced apart from EC2: the EC2 rate of the same type is no
        SageMaker price). Raises ValueError naming the type when no SageMaker rate is built in."""
        from ..facts.prices import sagemaker_usd_per_hour

        gpu = self.settings.gpu_variant
        if self.standby != "hot" or gpu is None:
            return 0.0
        rate = sagemaker_usd_per_hour(gpu.instance_type)
        if rate is None:
            raise ValueError(f"gpu_variant.instance_type {gpu.instance_type!r}: no SageMaker hosting rate is built in "
                             "(neuronfleet_contract/data/prices.json 'sagemaker'); set one under prices: in the fleet file")
        return gpu.min_instances * rate

    def _endpoint(self, capture_bucket: s3.IBucket | None) -> None:
        """KMS key, data capture, endpoint configuration and endpoint (a deterministic lower-case name)."""
        s = self.settings
        # SageMaker refuses KmsKeyId (and VolumeSizeInGB) when any variant has local NVMe storage; such
        # storage is encrypted by the instance itself.
        local_storage = (s.live_gpu_variant is not None and s.live_gpu_variant.spec.instance_storage_gb > 0) or any(
            CATALOG.get(t.removeprefix("ml.")).instance_storage_gb for t in s.pools)
        if s.data_capture_percent and capture_bucket is None:
            logs = secure_bucket(self, "CaptureAccessLogs", removal_policy=self.removal_policy)
            capture_bucket = secure_bucket(self, "Capture", access_logs=logs, log_prefix="capture/",
                                           versioned=s.data_capture_versioning, removal_policy=self.removal_policy)
        capturing = bool(s.data_capture_percent)
        self.key: kms.Key | None = None
        if not local_storage or capturing:
            self.key = kms.Key(self, "Key", enable_key_rotation=True,
                               description="SageMaker endpoint: ML storage volume and data capture")
            self.key.grant(self.role, "kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey")
        capture = self._capture(capture_bucket) if capturing and capture_bucket is not None else None
        live, shadows = self._variants()
        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self, "EndpointConfig", production_variants=live, shadow_production_variants=shadows or None,
            kms_key_id=self.key.key_arn if self.key and not local_storage else None, data_capture_config=capture,
            async_inference_config=self.async_queue.config(
                self.key, s.async_settings.max_concurrent_invocations_per_instance) if self.async_queue else None)
        if local_storage:  # core.nag.ACKNOWLEDGED: SageMaker refuses KmsKeyId with local NVMe storage
            acknowledge(self.endpoint_config, "SageMakerEndpointConfigurationKMSKeyConfigured")
        # SageMaker ARNs are lower-case: grants and the failover's permissions name exactly this endpoint.
        self.endpoint_name: str = _endpoint_name(self)
        # An update keeps the live instance counts and weights (a failover's, autoscaling's) instead of resetting
        # them to the new configuration's initial values (UpdateEndpoint RetainAllVariantProperties; no
        # ExcludeRetainedVariantProperties: nothing is overridden. botocore sagemaker UpdateEndpointInput, read
        # 2026-11-22). It applies to updates only; creation uses the initial values.
        self.endpoint = sagemaker.CfnEndpoint(self, "Endpoint", endpoint_name=self.endpoint_name,
                                              endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
                                              retain_all_variant_properties=True,
                                              tags=[CfnTag(key=STANDBY_TAG, value=self.standby),  # the endpoint's own
                                                    CfnTag(key=MODEL_TAG, value=self.model_name),  # tags, as data
                                                    *self._throughput_tag()])
        warn_without_fleet_tag(self, self.endpoint, what=f"endpoint {self.node.path}",
                               found_by="the fleet's endpoints (migration report, idle endpoints)")
        default_policy = self.role.node.try_find_child("DefaultPolicy")  # key and capture grants
        for model in self.models.values():  # one call for both: SageMaker checks access when it creates a model
            model.node.add_dependency(self.execution_policy, *([default_policy] if default_policy is not None else []))

    def _capture(self, bucket: s3.IBucket) -> sagemaker.CfnEndpointConfig.DataCaptureConfigProperty:
        own_id = self.node.id
        prefix = bucket.arn_for_objects(f"capture/{own_id}/*")
        days = lookup_days(self.settings.data_capture_retention_days)
        if isinstance(bucket, s3.Bucket):  # an imported bucket's retention is its owner's
            bucket.add_lifecycle_rule(id=f"capture-{own_id}"[:255], prefix=f"capture/{own_id}/", expiration=days,
                                      noncurrent_version_expiration=days)
        self.role.add_to_policy(iam.PolicyStatement(actions=["s3:PutObject"], resources=[prefix]))
        acknowledge_wildcards(self.role, "SageMaker writes captured requests under this endpoint's own prefix of the "
                                         "capture bucket", resources=(prefix,))
        return sagemaker.CfnEndpointConfig.DataCaptureConfigProperty(
            initial_sampling_percentage=self.settings.data_capture_percent or 0,
            destination_s3_uri=bucket.s3_url_for_object(f"capture/{own_id}"),
            kms_key_id=self.key.key_arn if self.key else None,
            capture_options=[sagemaker.CfnEndpointConfig.CaptureOptionProperty(capture_mode="Input"),
                             sagemaker.CfnEndpointConfig.CaptureOptionProperty(capture_mode="Output")])

    def _scaling(self) -> None:
        """Target tracking on invocations per instance of each live variant, and the Neuron variant's schedules."""
        s = self.settings
        # a cutover that changes the serving variant's instance type needs the variant deregistered from Application
        # Auto Scaling for that update (CutoverSettings.pause_scaling): no scalable target, no schedules, meanwhile
        self.scalable_target: appscaling.ScalableTarget | None = None
        if s.cutover is not None and s.cutover.pause_scaling:
            Annotations.of(self).add_info(
                "cutover.pause_scaling: the serving variant is not autoscaled while it is set; deploy the serve_on "
                "change, then set pause_scaling back to false (docs/judge.md, the cutover both ways)")
        elif s.is_async:
            self.scalable_target = scalable = self._async_scaling()
        else:
            self.scalable_target = scalable = self._track(NEURON_VARIANT, "Scaling", s.min_instances, s.max_instances,
                                                          s.target_invocations_per_instance)
            for action in s.scheduled_scaling:
                scalable.scale_on_schedule(
                    action.name, schedule=appscaling.Schedule.expression(action.schedule),
                    min_capacity=action.min_instances, max_capacity=action.max_instances)
        gpu = self.gpu_variant if self.has_live_gpu else None
        # The GPU variant scales on its own traffic, between its own bounds: at weight 0 it sits at min_instances;
        # the failover raises its floor to carry the Neuron load before moving traffic (EndpointFailover).
        self.gpu_scalable_target: appscaling.ScalableTarget | None = None if gpu is None else \
            self._track(GPU_VARIANT, "GpuScaling", gpu.min_instances, gpu.max_instances,
                        gpu.target_invocations_per_instance
                        or s.target_invocations_per_instance * gpu.neuron_instances_per_gpu_instance)

    def _async_scaling(self) -> appscaling.ScalableTarget:
        """Scale to zero and back, as AWS documents it for asynchronous endpoints (ASYNC_AUTOSCALE_DOC): a scalable
        target whose minimum is ``min_instances`` (0 by default), target tracking on the endpoint's
        ``ApproximateBacklogSizePerInstance`` (Average), and the step policy that adds one instance when
        ``HasBacklogWithoutCapacity`` is at least 1 for two minutes (target tracking alone waits for the backlog to
        pass its target before it leaves zero)."""
        s, a = self.settings, self.settings.async_settings
        scalable = appscaling.ScalableTarget(
            self, "Scaling", service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
            resource_id=f"endpoint/{self.endpoint_name}/variant/{NEURON_VARIANT}",
            scalable_dimension="sagemaker:variant:DesiredInstanceCount", min_capacity=s.min_instances,
            max_capacity=s.max_instances)
        scalable.node.add_dependency(self.endpoint)
        scalable.scale_to_track_metric(
            "BacklogPerInstance", target_value=a.target_backlog_per_instance,
            custom_metric=self.endpoint_metric(ASYNC_METRICS["backlog_per_instance"], statistic="Average"),
            scale_in_cooldown=seconds(s.scale_in_cooldown_s), scale_out_cooldown=seconds(s.scale_out_cooldown_s))
        step = SCALE_FROM_ZERO
        self.scale_from_zero = appscaling.StepScalingAction(
            self, "ScaleFromZero", scaling_target=scalable,
            adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            metric_aggregation_type=appscaling.MetricAggregationType.AVERAGE,
            cooldown=seconds(a.scale_from_zero_cooldown_s))
        self.scale_from_zero.add_adjustment(adjustment=step["ScalingAdjustment"],
                                            lower_bound=step["MetricIntervalLowerBound"])
        self.scale_from_zero_alarm = cloudwatch.Alarm(
            self, "ScaleFromZeroAlarm",
            metric=self.endpoint_metric(ASYNC_METRICS["backlog_without_capacity"], statistic=step["Statistic"],
                                        period=seconds(step["Period"])),
            threshold=step["Threshold"], evaluation_periods=step["EvaluationPeriods"],
            datapoints_to_alarm=step["DatapointsToAlarm"],
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.MISSING,
            alarm_description="requests queued while the endpoint has no instance: add one (scale from zero)")
        self.scale_from_zero_alarm.add_alarm_action(cw_actions.ApplicationScalingAction(self.scale_from_zero))
        return scalable

    def endpoint_metric(self, metric_name: str, *, statistic: str = "Sum", period: Duration | None = None,
                        variant: str | None = None) -> cloudwatch.Metric:
        """A metric of the endpoint in ``AWS/SageMaker`` by ``EndpointName`` alone (an asynchronous endpoint's
        queue metrics), or with ``variant`` by ``EndpointName`` and ``VariantName``."""
        dims = {"EndpointName": self.endpoint_name, **({"VariantName": variant} if variant else {})}
        return cloudwatch.Metric(namespace=AWS_SAGEMAKER_METRICS, metric_name=metric_name, dimensions_map=dims,
                                 statistic=statistic, period=period or minutes(1))

    def _track(self, variant: str, construct_id: str, low: int, high: int, target: float) -> appscaling.ScalableTarget:
        s = self.settings
        scalable = appscaling.ScalableTarget(
            self, construct_id, service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
            resource_id=f"endpoint/{self.endpoint_name}/variant/{variant}",
            scalable_dimension="sagemaker:variant:DesiredInstanceCount", min_capacity=low, max_capacity=high)
        scalable.node.add_dependency(self.endpoint)
        scalable.scale_to_track_metric(
            "InvocationsPerInstance", target_value=target,
            predefined_metric=appscaling.PredefinedMetric.SAGEMAKER_VARIANT_INVOCATIONS_PER_INSTANCE,
            scale_in_cooldown=seconds(s.scale_in_cooldown_s), scale_out_cooldown=seconds(s.scale_out_cooldown_s))
        return scalable

    @property
    def rollback_alarm_names(self) -> list[str]:
        """The alarms an update of this endpoint watches (AutoRollbackConfiguration): the serving variants' alarms and,
        with a judge, its verdict alarm (``<endpoint name>-judge-verdict``, created by PilotJudge)."""
        names = [*self.alarm_names.values(), *self.gpu_alarm_names.values()]
        if self.settings.judge is not None:
            names.append(judge_alarm_name(self.endpoint_name))
        return names

    def _deployment(self) -> None:
        if self.settings.cutover is not None:
            self._cutover(self.settings.cutover)
        else:
            self._rolling()

    def _cutover(self, c: CutoverSettings) -> None:
        """The cutover's guardrails (settings refused what SageMaker refuses): blue/green with canary, linear or all at
        once traffic shifting and its baking periods, or rolling batches; the rollback alarms: every serving variant's
        and the judge's verdict. SageMaker's execution role may describe exactly those alarms."""
        s, g, ep = self.settings, guardrails(), sagemaker.CfnEndpoint
        names = self.rollback_alarm_names
        if len(names) > g.max_rollback_alarms:
            raise InvalidSettings([Problem("cutover", len(names), f"at most {g.max_rollback_alarms} rollback alarms "
                                           "(AutoRollbackConfig.Alarms)")], what="NeuronEndpoint")
        stack = stack_of(self)
        self.role.add_to_policy(iam.PolicyStatement(actions=["cloudwatch:DescribeAlarms"], resources=[
            arn_in(stack, service="cloudwatch", resource="alarm", resource_name=n,
                   arn_format=ArnFormat.COLON_RESOURCE_NAME) for n in names]))
        provisioning = s.model_download_timeout_s + s.startup_health_check_timeout_s
        rollback = ep.AutoRollbackConfigProperty(alarms=[ep.AlarmProperty(alarm_name=n) for n in names])
        percent = ep.CapacitySizeProperty(type="CAPACITY_PERCENT", value=c.percent)
        if c.traffic == "rolling":
            policy = ep.DeploymentConfigProperty(rolling_update_policy=ep.RollingUpdatePolicyProperty(
                maximum_batch_size=percent, wait_interval_in_seconds=c.bake_s,
                maximum_execution_timeout_in_seconds=c.timeout_s(provisioning * c.steps)),
                auto_rollback_configuration=rollback)
        else:
            routing = ep.TrafficRoutingConfigProperty(
                type=c.traffic.upper(), wait_interval_in_seconds=c.bake_s,
                canary_size=percent if c.traffic == "canary" else None,
                linear_step_size=percent if c.traffic == "linear" else None)
            policy = ep.DeploymentConfigProperty(blue_green_update_policy=ep.BlueGreenUpdatePolicyProperty(
                traffic_routing_configuration=routing, termination_wait_in_seconds=c.final_bake_s,
                maximum_execution_timeout_in_seconds=c.timeout_s(provisioning)),
                auto_rollback_configuration=rollback)
        self.endpoint.deployment_config = policy

    def _rolling(self) -> None:
        """Rolling updates where SageMaker supports them (one variant; a batch of 5-50% of its instances): an update
        then replaces the fleet batch by batch instead of standing up a second full fleet. Each batch bakes for
        ``ROLLING_WAIT_S`` while the Neuron alarms are watched; an alarm rolls the update back."""
        s = self.settings
        batch = s.rolling_batch_instances
        if batch is None:
            return  # SageMaker's default: blue/green, all at once (a second fleet for the update's duration)
        steps = math.ceil(s.max_instances / batch)
        per_step = s.model_download_timeout_s + s.startup_health_check_timeout_s + ROLLING_WAIT_S
        alarms = list(self.alarms.values())
        self.role.add_to_policy(iam.PolicyStatement(actions=["cloudwatch:DescribeAlarms"],
                                                    resources=[a.alarm_arn for a in alarms]))
        ep = sagemaker.CfnEndpoint
        self.endpoint.deployment_config = ep.DeploymentConfigProperty(
            rolling_update_policy=ep.RollingUpdatePolicyProperty(
                maximum_batch_size=ep.CapacitySizeProperty(type="INSTANCE_COUNT", value=batch),
                wait_interval_in_seconds=ROLLING_WAIT_S,
                maximum_execution_timeout_in_seconds=min(MAX_DEPLOYMENT_S, max(MIN_DEPLOYMENT_S, steps * per_step))),
            auto_rollback_configuration=ep.AutoRollbackConfigProperty(
                alarms=[ep.AlarmProperty(alarm_name=a.alarm_name) for a in alarms]))

    def _alarms(self, topic: sns.ITopic | None) -> None:
        """Alarms on every variant that serves: the Neuron variant's, and the live GPU variant's (the same three,
        ``<endpoint name>-gpu-<suffix>``: after a failover it carries all the traffic), into the topic (OK
        notifications too, for failback). A shadow variant answers no one; a warm standby is a pool of the Neuron
        variant."""
        self.alarm_names: dict[str, str] = {kind: alarm_name(self.endpoint_name, kind) for kind in NEURON_ALARMS
                                            if not (self.settings.is_async and kind in NOT_PUBLISHED_FOR_ASYNC)}
        """The Neuron variant's alarms by kind -> their names (set, not generated: ``<endpoint name>-<suffix>``)."""
        self.alarms: dict[str, cloudwatch.Alarm] = self._variant_alarms(NEURON_VARIANT, "", self.alarm_names)
        if self.settings.is_async:
            self.alarms |= self._queue_alarms()
        self.gpu_alarm_names: dict[str, str] = {
            kind: alarm_name(self.endpoint_name, kind, gpu=True) for kind in NEURON_ALARMS} if self.has_live_gpu else {}
        """The live GPU variant's alarms by kind -> their names (``<endpoint name>-gpu-<suffix>``); none without one."""
        self.gpu_alarms: dict[str, cloudwatch.Alarm] = \
            self._variant_alarms(GPU_VARIANT, "Gpu", self.gpu_alarm_names) if self.gpu_alarm_names else {}
        if topic is not None:
            action = _sns_action(topic)
            for alarm in (*self.alarms.values(), *self.gpu_alarms.values()):
                alarm.add_alarm_action(action)
                alarm.add_ok_action(action)

    def _variant_alarms(self, variant: str, id_prefix: str, names: dict[str, str]) -> dict[str, cloudwatch.Alarm]:
        a = self.settings.alarms
        five = minutes(5)
        at_least = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
        missing = cloudwatch.TreatMissingData.NOT_BREACHING
        label = "GPU" if variant == GPU_VARIANT else "Neuron"
        build = {
            "latency": lambda: self.metric_model_latency(variant=variant, statistic="p99").create_alarm(
                self, f"{id_prefix}LatencyP99Alarm", alarm_name=names["latency"],
                threshold=a.latency_p99_ms * 1000, evaluation_periods=5, datapoints_to_alarm=3, treat_missing_data=missing,
                alarm_description=f"p99 model latency above {a.latency_p99_ms} ms on the {label} variant"),
            "errors5xx": lambda: self.metric("Invocation5XXErrors", variant=variant, period=five).create_alarm(
                self, f"{id_prefix}Errors5xxAlarm", alarm_name=names["errors5xx"],
                threshold=a.errors_5xx_per_5min, evaluation_periods=1, treat_missing_data=missing,
                comparison_operator=at_least,
                alarm_description=f"{a.errors_5xx_per_5min}+ 5XX errors in 5 minutes on the {label} variant"),
            "modelErrors": lambda: self.metric("InvocationModelErrors", variant=variant, period=five).create_alarm(
                self, f"{id_prefix}ModelErrorsAlarm", alarm_name=names["modelErrors"],
                threshold=a.model_errors_per_5min, evaluation_periods=1, treat_missing_data=missing,
                comparison_operator=at_least,
                alarm_description=f"{a.model_errors_per_5min}+ model (invocation) errors in 5 minutes"
                                  + (" on the GPU variant" if variant == GPU_VARIANT else "")),
        }
        return {kind: make() for kind, make in build.items() if kind in names}  # an asynchronous endpoint: no
        # model-errors alarm (SageMaker publishes no InvocationModelErrors for it: NOT_PUBLISHED_FOR_ASYNC)

    def _queue_alarms(self) -> dict[str, cloudwatch.Alarm]:
        """An asynchronous endpoint's own alarms (named ``<endpoint name>-<suffix>``, ASYNC_ALARMS): the oldest queued
        request older than ``async_inference.oldest_request_alarm_s`` (Maximum over 5 minutes, three periods of
        five: the queue is not drained), and failed invocations (Sum over 5 minutes). Each notifies once when it
        fires and once when it clears (CloudWatch acts on state changes)."""
        a = self.settings.async_settings
        five = minutes(5)
        names = {kind: f"{self.endpoint_name}-{suffix}" for kind, suffix in ASYNC_ALARMS.items()}
        self.alarm_names |= names
        return {
            "backlogAge": self.endpoint_metric(ASYNC_METRICS["oldest_request_age"], statistic="Maximum",
                                               period=five).create_alarm(
                self, "BacklogAgeAlarm", alarm_name=names["backlogAge"], threshold=a.oldest_request_alarm_s,
                evaluation_periods=3, datapoints_to_alarm=3,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=f"the oldest queued request is older than {a.oldest_request_alarm_s} s: the queue is "
                                  "not drained (no capacity to scale out, or the model is stuck)"),
            "invocationFailures": self.endpoint_metric(ASYNC_METRICS["invocation_failures"], variant=NEURON_VARIANT,
                                                       period=five).create_alarm(
                self, "InvocationFailuresAlarm", alarm_name=names["invocationFailures"],
                threshold=a.invocation_failures_per_5min, evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=f"{a.invocation_failures_per_5min}+ failed asynchronous invocations in 5 minutes "
                                  "(their errors are in the failure location and on the error topic)"),
        }


_SNS_ACTIONS: WeakKeyDictionary[sns.ITopic, cw_actions.SnsAction] = WeakKeyDictionary()


def _sns_action(topic: sns.ITopic) -> cw_actions.SnsAction:
    """One alarm action per topic, shared by every endpoint's alarms (it holds nothing but the topic)."""
    action = _SNS_ACTIONS.get(topic)
    if action is None:
        action = _SNS_ACTIONS[topic] = cw_actions.SnsAction(topic)
    return action


_SUBNET_IDS: WeakKeyDictionary[ec2.IVpc, dict[tuple[Any, ...], list[str]]] = WeakKeyDictionary()


def _uncompressed(s3_uri: str) -> sagemaker.CfnModel.ModelDataSourceProperty:
    """An uncompressed model under an S3 prefix: SageMaker places each object under /opt/ml/model by its key less the
    prefix (S3ModelDataSource, S3DataType S3Prefix, CompressionType None; SageMaker API reference and developer guide,
    "Deploying uncompressed models", read 2026-11-28)."""
    return sagemaker.CfnModel.ModelDataSourceProperty(s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
        s3_uri=s3_uri, s3_data_type="S3Prefix", compression_type="None"))


def _subnet_ids(vpc: ec2.IVpc, sel: ec2.SubnetSelection) -> list[str]:
    """The selection's subnet ids, selected once per VPC and selection (a selection is seven jsii round trips;
    a fleet's endpoints share one). Selections naming subnet objects or filters are not cached."""
    if sel.subnets is not None or sel.subnet_filters is not None:
        return _select(vpc, sel)
    key = (sel.subnet_group_name, sel.subnet_type, tuple(sel.availability_zones or ()) or None, sel.one_per_az)
    per_vpc = _SUBNET_IDS.setdefault(vpc, {})
    if key not in per_vpc:
        per_vpc[key] = _select(vpc, sel)
    return list(per_vpc[key])


def _select(vpc: ec2.IVpc, sel: ec2.SubnetSelection) -> list[str]:
    return vpc.select_subnets(subnet_group_name=sel.subnet_group_name, subnet_type=sel.subnet_type,
                              subnets=sel.subnets, availability_zones=sel.availability_zones,
                              one_per_az=sel.one_per_az, subnet_filters=sel.subnet_filters).subnet_ids


def _endpoint_name(scope: Construct) -> str:
    name = re.sub(r"[^a-z0-9-]", "-", Names.unique_resource_name(
        scope, max_length=rules.RESOURCE_NAMES["sagemaker-endpoint"].max_length, separator="-").lower())
    return re.sub(r"-+", "-", name).strip("-")
