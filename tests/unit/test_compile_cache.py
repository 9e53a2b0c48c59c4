"""The Neuron compile cache (issue 43): each name of neuronfleet.facts.compile_cache pinned to its publishers' text
(tests/data/neuron_cache, verbatim), and where the kit passes it: the Batch training job, the EKS training pod, a
batch transform job's model."""

from __future__ import annotations

from pathlib import Path

from neuronfleet.eks import manifests
from neuronfleet.facts.compile_cache import (
    CUSTOM_CACHE_REPO,
    DEFAULT_CACHE_DIR,
    FSX_CACHE_DIR,
    NEURON_CC_FLAGS,
    NEURON_COMPILE_CACHE_URL,
    SERVING_CACHE,
    serving_cache_env,
)
from neuronfleet.facts.neuron import serving_images
from neuronfleet.settings.eks import NeuronNodegroupSettings

DATA = Path(__file__).resolve().parents[1] / "data" / "neuron_cache"
CACHING = (DATA / "neuron-caching.rst").read_text()
PARALLEL = (DATA / "pytorch-neuron-parallel-compile.rst").read_text()
OPTIMUM_DOC = (DATA / "optimum-neuron-cache_system.mdx").read_text()
OPTIMUM_HUB = (DATA / "optimum-neuron-hub_cache.py.txt").read_text()
OPTIMUM_TEST = (DATA / "optimum-neuron-test_cache.py.txt").read_text()


def test_the_variable_the_default_and_the_s3_form_are_neurons() -> None:
    assert f"``{NEURON_COMPILE_CACHE_URL}=<cache_url>``" in CACHING
    assert f"The default cache path is the directory ``{DEFAULT_CACHE_DIR}``." in CACHING
    assert "If ``<cache_url>`` starts with ``s3://``, it will use the AWS S3 URL as the cache location" in CACHING
    entry = PARALLEL[PARALLEL.index(f"``{NEURON_COMPILE_CACHE_URL}``:"):][:600]
    assert "If starts with ``s3://``, it will use AWS S3 as cache backend" in " ".join(entry.split())
    assert f"Default is ``{DEFAULT_CACHE_DIR}``" in entry
    # --cache_dir in NEURON_CC_FLAGS wins: the kit sets only the variable
    assert f"option via ``{NEURON_CC_FLAGS}`` or ``{NEURON_COMPILE_CACHE_URL}=<cache_url>``" in CACHING
    assert "The cache URL specified using ``--cache_dir`` is prioritized" in CACHING


def test_optimum_neuron_reads_the_same_cache_for_its_decoders_and_s3_is_a_backend() -> None:
    assert f'os.environ["{NEURON_COMPILE_CACHE_URL}"] = cache_path' in OPTIMUM_TEST
    assert f'os.environ["{CUSTOM_CACHE_REPO}"] = cache_repo_id' in OPTIMUM_TEST
    assert "default_cache = CompileCacheS3(cache_url) if cache_url.is_s3() else CompileCacheFs(cache_url)" in OPTIMUM_HUB
    rows = {cells[0].strip("` "): cells[1].strip() for line in OPTIMUM_DOC.splitlines()
            if (cells := line.strip("|").split("|")) and len(cells) == 4 and "Neuron" in cells[0]}
    assert rows == {"NeuronTrainer": "✅ Full", "NeuronModelForCausalLM": "✅ Full",
                    "Other `NeuronModelForXXX": "❌ None"}


def test_every_serving_container_says_how_it_starts_without_compiling() -> None:
    assert set(SERVING_CACHE) == set(serving_images()) | {"custom"}
    # vLLM (NeuronModelForCausalLM) reads an S3 cache; the encoders' container has no cache integration
    assert serving_cache_env("vllm-neuronx", "s3://b/neuron-compile-cache/") == {
        NEURON_COMPILE_CACHE_URL: "s3://b/neuron-compile-cache/"}
    assert serving_cache_env("hf-inference-neuronx", "s3://b/x/") == {}
    assert SERVING_CACHE["hf-inference-neuronx"].mechanisms == ("compiled-artifact",)
    for deprecated in ("tgi-neuronx", "lmi-neuronx", "custom"):
        assert serving_cache_env(deprecated, "s3://b/x/") == {}


def test_the_eks_training_pod_shares_the_fsx_cache() -> None:
    group = NeuronNodegroupSettings(name="trn1", instance_type="trn1.32xlarge", count=2)
    job = manifests.training_job(group)[1]
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env[NEURON_COMPILE_CACHE_URL] == FSX_CACHE_DIR == "/fsx/neuron-compile-cache"
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert "/fsx" in mounts and FSX_CACHE_DIR.startswith("/fsx/") and not FSX_CACHE_DIR.startswith("/fsx/data/")
