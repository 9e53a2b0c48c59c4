from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import CfnOutput, Duration
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet import FleetNetwork
from neuronfleet.config import EndpointConfig
from neuronfleet.fallback import EndpointFailover
from neuronfleet.inference import GpuVariant, NeuronEndpoint, ScheduledScaling
from neuronfleet.storage import secure_bucket

from .base import FleetStack


class InferenceStack(FleetStack):
    """The fleet's Inferentia2 endpoints (NeuronEndpoint), in the private compute subnets."""

    def __init__(self, scope: Construct, construct_id: str, *, network: FleetNetwork,
                 endpoints: Sequence[EndpointConfig], alerts_topic: sns.ITopic,
                 availability_zones: list[str], failover: bool = False, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, availability_zones=availability_zones, **kwargs)
        capture_bucket = None
        if any(e.data_capture_percent for e in endpoints):
            logs = secure_bucket(self, "CaptureAccessLogs")
            capture_bucket = secure_bucket(self, "Capture", access_logs=logs, log_prefix="capture/")
            CfnOutput(self, "DataCaptureBucket", value=capture_bucket.bucket_name)
        self.endpoints: dict[str, NeuronEndpoint] = {}
        for e in endpoints:
            gpu = e.gpu_variant
            endpoint = NeuronEndpoint(
                self, _construct_id(e.name),
                vpc=network.vpc, subnets=network.compute_subnets,
                instance_type=e.instance_type, container=e.container, image_uri=e.image_uri,
                model_data_url=e.model_data_url, hf_model_id=e.hf_model_id,
                tensor_parallel_degree=e.tensor_parallel_degree, batch_size=e.batch_size,
                sequence_length=e.sequence_length, min_instances=e.min_instances, max_instances=e.max_instances,
                target_invocations_per_instance=e.target_invocations_per_instance,
                scale_in_cooldown=Duration.seconds(e.scale_in_cooldown_s),
                scale_out_cooldown=Duration.seconds(e.scale_out_cooldown_s),
                scheduled_scaling=[ScheduledScaling(name=a.name, schedule=a.schedule, min_instances=a.min_instances,
                                                    max_instances=a.max_instances) for a in e.scheduled_scaling],
                volume_size_gib=e.volume_size_gib,
                startup_health_check_timeout=Duration.seconds(e.startup_health_check_timeout_s),
                model_download_timeout=Duration.seconds(e.model_download_timeout_s),
                gpu_variant=GpuVariant(instance_type=gpu.instance_type, initial_weight=gpu.initial_weight,
                                       initial_instance_count=gpu.initial_instance_count, shadow=gpu.shadow,
                                       image_uri=gpu.image_uri) if gpu else None,
                alarm_topic=alerts_topic,
                latency_p99_threshold=Duration.millis(e.alarms.latency_p99_ms),
                errors_5xx_threshold=e.alarms.errors_5xx_per_5min,
                model_errors_threshold=e.alarms.model_errors_per_5min,
                data_capture_bucket=capture_bucket if e.data_capture_percent else None,
                data_capture_percent=e.data_capture_percent or 10,
            )
            self.endpoints[e.name] = endpoint
            CfnOutput(self, f"{_construct_id(e.name)}EndpointName", value=endpoint.endpoint_name)
        live_gpu = [self.endpoints[e.name] for e in endpoints if e.gpu_variant and not e.gpu_variant.shadow]
        self.failover = EndpointFailover(self, "Failover", endpoints=live_gpu, topic=alerts_topic) \
            if failover and live_gpu else None


def _construct_id(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-"))
