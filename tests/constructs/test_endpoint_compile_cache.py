"""An endpoint that compiles at start keeps its graphs in the fleet's bucket for the next instances (issue 43): a
vllm-neuronx hub model with allow_non_cached_model, given a compile cache bucket (an asynchronous endpoint: its queue's
bucket by default), reads NEURON_COMPILE_CACHE_URL
s3://<bucket>/neuron-compile-cache/ (optimum-neuron v0.4.5's export compiles through libneuronxla's cache, S3 for an
s3:// URL: tests/unit/test_compile_cache.py) and its execution policy reaches that prefix only; a compiled artifact,
or a container with no cache integration, gets neither. One construct-level synth."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Stack
from aws_cdk.assertions import Template

from neuronfleet import EndpointSettings, NeuronEndpoint, tag_fleet
from neuronfleet.core.storage import secure_bucket
from neuronfleet.facts.compile_cache import NEURON_COMPILE_CACHE_URL
from tests.conftest import ENV, AzStack, network, new_app, properties

REVISION = "5a8abab4a5d6f164389b1079fb721cfab8d7126c"
COMPILES: dict[str, Any] = dict(instance_type="ml.inf2.xlarge", container="vllm-neuronx",
                                hf_model_id="unsloth/Llama-3.2-1B-Instruct", revision=REVISION,
                                tensor_parallel_degree=2, allow_non_cached_model=True)


def test_only_a_model_that_compiles_at_start_gets_the_cache_and_only_its_prefix() -> None:
    stack = AzStack(new_app(), "CacheEndpoints", env=ENV)
    net = network(stack)
    bucket = secure_bucket(stack, "Cache")
    compiles = NeuronEndpoint(stack, "Chat", vpc=net.vpc, settings=EndpointSettings(**COMPILES),
                              compile_cache_bucket=bucket)
    cached = NeuronEndpoint(stack, "Cached", vpc=net.vpc, compile_cache_bucket=bucket, settings=EndpointSettings(
        **{**COMPILES, "allow_non_cached_model": False}))
    encoder = NeuronEndpoint(stack, "Embed", vpc=net.vpc, compile_cache_bucket=bucket, settings=EndpointSettings(
        instance_type="ml.inf2.xlarge", container="hf-inference-neuronx", hf_model_id="BAAI/bge-base-en-v1.5",
        revision=REVISION, task="embeddings"))
    unbucketed = NeuronEndpoint(stack, "NoBucket", vpc=net.vpc, settings=EndpointSettings(**COMPILES))
    queued = NeuronEndpoint(stack, "Queued", vpc=net.vpc, settings=EndpointSettings(  # async: its queue's bucket
        **COMPILES, invocation="async", max_instances=2))
    template = Template.from_stack(stack)
    models = properties(template, "AWS::SageMaker::Model")
    policies = properties(template, "AWS::IAM::Policy")

    def env(endpoint: NeuronEndpoint) -> dict[str, Any]:
        model = endpoint.models["neuron"]
        return dict(models[Stack.of(model).get_logical_id(model)]["PrimaryContainer"].get("Environment", {}))

    def policy(endpoint: NeuronEndpoint) -> str:
        cfn = endpoint.execution_policy.node.default_child
        return json.dumps(policies[Stack.of(endpoint).get_logical_id(cfn)])  # type: ignore[arg-type]

    bucket_ref = {"Ref": stack.get_logical_id(bucket.node.default_child)}
    assert env(compiles)[NEURON_COMPILE_CACHE_URL] == {"Fn::Join": ["", ["s3://", bucket_ref, "/neuron-compile-cache/"]]}
    statements = {s["Sid"]: s for s in json.loads(policy(compiles))["PolicyDocument"]["Statement"] if "Sid" in s}
    assert statements["ListCompileCache"]["Condition"] == {"StringLike": {"s3:prefix": ["neuron-compile-cache/*"]}}
    assert sorted(statements["CompileCache"]["Action"]) == ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
    assert json.dumps(statements["CompileCache"]["Resource"]).endswith('"/neuron-compile-cache/*"]]}')
    assert compiles.compile_cache_url is not None
    assert queued.async_queue is not None  # scales out from zero, compiling each time: the queue's bucket caches
    queue_ref = {"Ref": stack.get_logical_id(queued.async_queue.bucket.node.default_child)}
    assert env(queued)[NEURON_COMPILE_CACHE_URL] == {"Fn::Join": ["", ["s3://", queue_ref, "/neuron-compile-cache/"]]}
    assert "neuron-compile-cache/*" in policy(queued)
    for other in (cached, encoder, unbucketed):
        assert NEURON_COMPILE_CACHE_URL not in env(other) and other.compile_cache_url is None
        assert "neuron-compile-cache" not in policy(other)


def test_the_reference_stack_gives_its_compiling_real_time_endpoints_one_secure_cache_bucket() -> None:
    """stacks/inference_stack.py: one compile-cache bucket (encrypted, TLS-only, private, logged) when a real-time
    endpoint compiles at start, passed to those endpoints only; their execution policies reach its prefix only; a stack
    with no such endpoint gets no bucket (an asynchronous endpoint keeps caching in its queue's bucket)."""
    from aws_cdk import aws_sns as sns

    from neuronfleet.fleetfile.schema import EndpointEntry
    from stacks.inference_stack import InferenceStack

    def stack_of(**entries: dict[str, Any]) -> InferenceStack:
        app = new_app()  # AwsSolutions here; the four packs gate dev and smoke (tests/constructs/test_gates.py)
        net_stack = AzStack(app, "Net", env=ENV)
        topic = sns.Topic.from_topic_arn(net_stack, "T", f"arn:aws:sns:{ENV.region}:{ENV.account}:alerts")
        stack = InferenceStack(app, "Inf", network=network(net_stack), env=ENV, alerts_topic=topic,
                               endpoints={cid: EndpointEntry(name=cid.lower(), **e) for cid, e in entries.items()})
        tag_fleet(stack, fleet="cache", phase="pilot")
        return stack

    cached = {**COMPILES, "allow_non_cached_model": False}
    queued = {**COMPILES, "invocation": "async", "max_instances": 2}
    stack = stack_of(Chat=COMPILES, Chat2=COMPILES, Cached=cached, Queued=queued)
    template = Template.from_stack(stack)
    bucket = stack.compile_cache_bucket
    assert bucket is not None
    bucket_id = stack.get_logical_id(bucket.node.default_child)  # type: ignore[arg-type]
    cache = properties(template, "AWS::S3::Bucket")[bucket_id]
    assert cache["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "AES256"}
    assert cache["PublicAccessBlockConfiguration"] == {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                                       "IgnorePublicAcls": True, "RestrictPublicBuckets": True}
    assert cache["LoggingConfiguration"]["LogFilePrefix"] == "compile-cache/"
    ssl_only = [p for p in properties(template, "AWS::S3::BucketPolicy").values()
                if p["Bucket"] == {"Ref": bucket_id}]
    assert len(ssl_only) == 1 and '"aws:SecureTransport": "false"' in json.dumps(ssl_only[0])
    url = {"Fn::Join": ["", ["s3://", {"Ref": bucket_id}, "/neuron-compile-cache/"]]}
    models = properties(template, "AWS::SageMaker::Model")
    policies = properties(template, "AWS::IAM::Policy")

    def env(cid: str) -> dict[str, Any]:
        model = stack.endpoints[cid].models["neuron"]
        return dict(models[stack.get_logical_id(model)]["PrimaryContainer"].get("Environment", {}))

    def statements(cid: str) -> list[dict[str, Any]]:
        cfn = stack.endpoints[cid].execution_policy.node.default_child
        return list(policies[stack.get_logical_id(cfn)]["PolicyDocument"]["Statement"])  # type: ignore[arg-type]

    for cid in ("Chat", "Chat2"):  # both compiling endpoints share the one bucket
        assert env(cid)[NEURON_COMPILE_CACHE_URL] == url
        on_bucket = [s for s in statements(cid) if bucket_id in json.dumps(s["Resource"])]
        assert {s["Sid"]: s["Condition"] if "Condition" in s else s["Resource"] for s in on_bucket} == {
            "ListCompileCache": {"StringLike": {"s3:prefix": ["neuron-compile-cache/*"]}},
            "CompileCache": {"Fn::Join": ["", [{"Fn::GetAtt": [bucket_id, "Arn"]}, "/neuron-compile-cache/*"]]}}
    assert NEURON_COMPILE_CACHE_URL not in env("Cached")
    assert bucket_id not in json.dumps(statements("Cached"))
    queue = stack.endpoints["Queued"].async_queue
    assert queue is not None
    queue_id = stack.get_logical_id(queue.bucket.node.default_child)  # type: ignore[arg-type]
    assert env("Queued")[NEURON_COMPILE_CACHE_URL] == {"Fn::Join": ["", ["s3://", {"Ref": queue_id},
                                                                        "/neuron-compile-cache/"]]}
    assert bucket_id not in json.dumps(statements("Queued"))
    # nothing compiles at start in real time: no bucket (the async endpoint's cache stays in its queue's bucket)
    none = stack_of(Cached=cached, Queued=queued)
    assert none.compile_cache_bucket is None
    assert not [p for p in none.node.find_all() if "CompileCache" in p.node.id and p.node.scope is none]
