from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import CfnOutput
from constructs import Construct

from neuronfleet import FleetNetwork, StaticAzStack
from neuronfleet.core.storage import secure_bucket
from neuronfleet.inference.batch_transform import NeuronBatchTransform
from neuronfleet.settings.transform import BatchJobSettings


class BatchStack(StaticAzStack):
    """The fleet's scheduled batch transform jobs on Neuron (NeuronBatchTransform), in the private compute subnets,
    over prefixes of one bucket of the fleet's (``BatchBucket``: each job reads its ``input_prefix`` and writes its
    ``output_prefix`` there). ``jobs`` maps each job's construct id to its fleet-file entry."""

    def __init__(self, scope: Construct, construct_id: str, *, network: FleetNetwork,
                 jobs: Mapping[str, BatchJobSettings], fleet: str = "", **kwargs: Any) -> None:
        super().__init__(scope, construct_id, availability_zones=network.settings.availability_zones, **kwargs)
        logs = secure_bucket(self, "BatchAccessLogs")
        self.bucket = secure_bucket(self, "Batch", access_logs=logs, log_prefix="batch/")
        CfnOutput(self, "BatchBucket", value=self.bucket.bucket_name)
        self.jobs: dict[str, NeuronBatchTransform] = {
            cid: NeuronBatchTransform(self, cid, vpc=network.vpc, vpc_subnets=network.compute_subnets, settings=s,
                                      bucket=self.bucket, fleet=fleet)
            for cid, s in jobs.items()}
