"""The Batch training job shares one Neuron compile cache on the cluster's FSx (issue 43): every node of a job and
every later run reads the graphs the first compiled (facts.compile_cache.FSX_CACHE_DIR, NEURON_COMPILE_CACHE_URL as
Neuron documents it; tests/unit/test_compile_cache.py pins the name)."""

from __future__ import annotations

from aws_cdk.assertions import Template

from neuronfleet import TrainiumCluster, TrainiumClusterSettings
from neuronfleet.facts.compile_cache import FSX_CACHE_DIR, NEURON_COMPILE_CACHE_URL
from tests.conftest import ENV, AzStack, network, new_app, properties


def test_the_job_definition_points_the_compile_cache_at_the_clusters_fsx() -> None:
    stack = AzStack(new_app(), "Cache", env=ENV)
    net = network(stack)
    cluster = TrainiumCluster(stack, "Cluster", vpc=net.vpc, subnet=net.training_subnet,
                              settings=TrainiumClusterSettings(instance_type="trn2.48xlarge", count=2))
    (definition,) = properties(Template.from_stack(stack), "AWS::Batch::JobDefinition").values()
    ranges = definition["NodeProperties"]["NodeRangeProperties"]
    for node_range in ranges:
        container = node_range["Container"]
        env = {e["Name"]: e["Value"] for e in container["Environment"]}
        assert env[NEURON_COMPILE_CACHE_URL] == FSX_CACHE_DIR == "/fsx/neuron-compile-cache"
        assert any(m["ContainerPath"] == "/fsx" for m in container["MountPoints"])  # the cluster's FSx
    assert cluster.runtime_environment()[NEURON_COMPILE_CACHE_URL] == FSX_CACHE_DIR
