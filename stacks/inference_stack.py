from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import CfnOutput
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet import EndpointFailover, FleetNetwork, NeuronEndpoint, StaticAzStack
from neuronfleet.core.storage import secure_bucket
from neuronfleet.facts.compile_cache import compiles_into_cache
from neuronfleet.fleetfile.schema import EndpointEntry
from neuronfleet.inference.async_queue import AsyncQueue
from neuronfleet.judge import PilotJudge


class InferenceStack(StaticAzStack):
    """The fleet's Inferentia2 endpoints (NeuronEndpoint), in the private compute subnets.

    ``endpoints`` maps each endpoint's construct id to its fleet-file entry (its settings, ``name`` and ``failover``);
    ``fleet``: the fleet's name, a dimension of its judges' metrics and of its failover's health metrics.

    Outputs: ``<id>EndpointName`` per endpoint; per asynchronous endpoint also ``<id>AsyncSuccessTopicArn`` and
    ``<id>AsyncErrorTopicArn`` (subscribe consumers), ``<id>AsyncInputPath`` (put requests under it),
    ``<id>AsyncOutputPath`` and ``<id>AsyncFailurePath`` (answers and errors land under them): S3 URIs of prefixes,
    each ending in ``/``; ``DataCaptureBucket`` when an endpoint captures."""

    def __init__(self, scope: Construct, construct_id: str, *, network: FleetNetwork,
                 endpoints: Mapping[str, EndpointEntry], alerts_topic: sns.ITopic, fleet: str = "",
                 **kwargs: Any) -> None:
        super().__init__(scope, construct_id, availability_zones=network.settings.availability_zones, **kwargs)
        capture_bucket = logs = None
        capturing = [e for e in endpoints.values() if e.data_capture_percent]
        if capturing:  # one bucket: versioned if any endpoint asks; each endpoint expires its own prefix
            logs = secure_bucket(self, "CaptureAccessLogs")
            capture_bucket = secure_bucket(self, "Capture", access_logs=logs, log_prefix="capture/",
                                           versioned=any(e.data_capture_versioning for e in capturing))
            CfnOutput(self, "DataCaptureBucket", value=capture_bucket.bucket_name)
        # One compile cache for the stack's real-time endpoints that compile at start (an asynchronous endpoint
        # caches in its queue's bucket): the first instance compiles, the next ones load its graphs (issue 43)
        compiling = {cid for cid, e in endpoints.items() if not e.is_async and compiles_into_cache(e)}
        self.compile_cache_bucket: s3.Bucket | None = None
        """The bucket of the compile cache (``neuron-compile-cache/``), or None when no real-time endpoint compiles
        at start; its access logs go to the capture bucket's log bucket when there is one."""
        if compiling:
            self.compile_cache_bucket = secure_bucket(
                self, "CompileCache", log_prefix="compile-cache/",
                access_logs=logs or secure_bucket(self, "CompileCacheAccessLogs"))
        self.endpoints: dict[str, NeuronEndpoint] = {}
        for cid, settings in endpoints.items():
            # a fleet file's entry carries its name: the migration report calls the model by it (neuronfleet:model)
            endpoint = NeuronEndpoint(self, cid, vpc=network.vpc, vpc_subnets=network.compute_subnets, settings=settings,
                                      topic=alerts_topic, data_capture_bucket=capture_bucket,
                                      model_name=settings.name,
                                      compile_cache_bucket=self.compile_cache_bucket if cid in compiling else None)
            self.endpoints[cid] = endpoint
            CfnOutput(self, f"{cid}EndpointName", value=endpoint.endpoint_name)
            if endpoint.async_queue is not None:  # what a caller and its consumers need of an asynchronous endpoint
                self._async_outputs(cid, endpoint.async_queue)
        self.judges: dict[str, PilotJudge] = {  # the pilot judge of each endpoint that asks for one
            cid: PilotJudge(self, f"{cid}Judge", endpoint=e, topic=alerts_topic, fleet=fleet)
            for cid, e in self.endpoints.items() if e.settings.judge is not None}
        # The failover watches each endpoint with a live GPU variant (unless its fleet-file entry says failover: false)
        live_gpu = [e for cid, e in self.endpoints.items() if e.has_live_gpu and endpoints[cid].failover]
        self.failover = EndpointFailover(self, "Failover", endpoints=live_gpu, topic=alerts_topic,
                                         fleet=fleet) if live_gpu else None

    def _async_outputs(self, cid: str, queue: AsyncQueue) -> None:
        CfnOutput(self, f"{cid}AsyncSuccessTopicArn", value=queue.success_topic.topic_arn)
        CfnOutput(self, f"{cid}AsyncErrorTopicArn", value=queue.error_topic.topic_arn)
        for name, prefix in (("Input", queue.input_prefix), ("Output", queue.output_prefix),
                             ("Failure", queue.failure_prefix)):
            CfnOutput(self, f"{cid}Async{name}Path", value=queue.bucket.s3_url_for_object(prefix))
