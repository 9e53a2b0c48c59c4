"""The Neuron compile cache: where compiled graphs (NEFFs) are kept so a graph compiled once is not compiled again on
every node, run or instance start. Data with its sources; tests/unit/test_compile_cache.py pins each name to the
publishers' own text copied under tests/data/neuron_cache/ (README.md there). No aws-cdk-lib import here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

NEURON_COMPILE_CACHE_URL = "NEURON_COMPILE_CACHE_URL"
"""The variable the Neuron compiler wrapper (libneuronxla's ``neuron_cc_wrapper``, used by torch-neuronx training and
by optimum-neuron's export) reads the persistent cache's location from: a directory, or an ``s3://`` URL ("If
``<cache_url>`` starts with ``s3://``, it will use the AWS S3 URL as the cache location, provided that the
corresponding S3 bucket exists and is both readable and writeable"); the default is ``/var/tmp/neuron-compile-cache``
and ``--cache_dir`` in ``NEURON_CC_FLAGS`` takes precedence. Sources, read 2026-11-29: aws-neuron/aws-neuron-sdk
about-neuron/arch/neuron-features/neuron-caching.rst and frameworks/torch/torch-neuronx/api-reference-guide/training/
pytorch-neuron-parallel-compile.rst ("``NEURON_COMPILE_CACHE_URL``: ... If starts with ``s3://``, it will use AWS S3
as cache backend. Otherwise it will use local disk cache"), both at 81ce03ae (2026-08-21)."""
NEURON_CC_FLAGS = "NEURON_CC_FLAGS"
"""Its ``--cache_dir=<url>`` overrides :data:`NEURON_COMPILE_CACHE_URL` (same sources): the kit never sets it, so a
job that sets it chooses its own cache."""
DEFAULT_CACHE_DIR = "/var/tmp/neuron-compile-cache"
"""Where the cache is when nothing says otherwise: on the instance's own disk, lost with the instance (same sources)."""
FSX_CACHE_DIR = "/fsx/neuron-compile-cache"
"""The kit's training cache: on the cluster's FSx for Lustre file system, which every node of the Batch cluster and
every training pod of the EKS cluster mounts at /fsx, outside /fsx/data (the part linked to the data bucket), so the
cache is shared by every node and run and is not exported object by object to S3. The nodes mount Lustre with
``flock`` (training/cluster.py's fstab line), for the compiler wrapper's lock files. No IAM: a file system path."""
S3_CACHE_PREFIX = "neuron-compile-cache/"
"""The prefix of a fleet bucket that holds an S3 compile cache (a batch job's: its bucket's, read and written by the
job's execution role on this prefix only)."""
CUSTOM_CACHE_REPO = "CUSTOM_CACHE_REPO"
"""optimum-neuron's variable for a private Hugging Face Hub cache repository, tried before the public
``aws-neuron/optimum-neuron-cache`` (huggingface/optimum-neuron optimum/neuron/utils/cache_utils.py
``get_hf_hub_cache_repos`` at v0.4.5, abf59858, 2026-02-11; docs/source/guides/cache_system.mdx "Method 2: Environment
Variable"). A Hub repository is not the fleet's storage and needs a Hub token with write access: the kit does not set
it (docs/inference.md says how a team can)."""

Mechanism = Literal["compile-cache-s3", "compiled-artifact", "none"]


@dataclass(frozen=True)
class ServingCache:
    """How a serving container can start without compiling: what the kit passes, and the evidence."""

    mechanisms: tuple[Mechanism, ...]
    evidence: str


OPTIMUM_SOURCE = "huggingface/optimum-neuron at v0.4.5 (abf59858, 2026-02-11), read 2026-11-29"
SERVING_CACHE: dict[str, ServingCache] = {
    "vllm-neuronx": ServingCache(("compile-cache-s3", "compiled-artifact"), (
        f"{OPTIMUM_SOURCE}: a hub model without a cached match is exported at start only with "
        "allow_non_cached_model (optimum/neuron/vllm/model_loader.py: auto_class.export), and the export compiles "
        "inside hub_neuronx_cache (optimum/neuron/models/inference/backend/pretrained_model.py), whose default cache "
        "is libneuronxla's CacheUrl.get_cache_url(), an S3 cache when the URL is s3:// (optimum/neuron/cache/"
        "hub_cache.py: CompileCacheS3(cache_url) if cache_url.is_s3()); its own cache tests redirect it with "
        "NEURON_COMPILE_CACHE_URL (tests/decoder/test_cache.py). So the first instance compiles into the fleet's "
        "bucket and the next ones load its NEFFs. A compiled artifact (model_data_url with its neuron_config.json) "
        "is loaded without compiling (optimum/commands/neuron/serve.py).")),
    "hf-inference-neuronx": ServingCache(("compiled-artifact",), (
        f"{OPTIMUM_SOURCE} docs/source/guides/cache_system.mdx, Supported Models: only NeuronTrainer and "
        "NeuronModelForCausalLM use the cache; 'Other NeuronModelForXXX | None | ... no cache integration' (the "
        "encoders this container serves). The inference toolkit compiles at start unless the artifact is already "
        "compiled (data/neuron_compat.json hf-inference-neuronx task_note): serve a compiled model_data_url.")),
    "tgi-neuronx": ServingCache((), "deprecated (data/neuron_compat.json): the kit adds nothing to it"),
    "lmi-neuronx": ServingCache((), "deprecated (data/neuron_compat.json): the kit adds nothing to it"),
    "neuron-vllm": ServingCache((), "unavailable (data/neuron_compat.json): settings refuse it"),
    "custom": ServingCache(("compiled-artifact",), (
        "the kit does not know what a custom image runs: serve a compiled model_data_url, or read "
        "NEURON_COMPILE_CACHE_URL in the image")),
}
"""Per serving container, how instances load compiled artifacts from the fleet's storage instead of compiling."""


def serving_cache_env(container: str, cache_url: str) -> dict[str, str]:
    """The variable a serving container of ``container`` reads the fleet's compile cache from (none where
    :data:`SERVING_CACHE` gives it no S3 cache)."""
    entry = SERVING_CACHE.get(container)
    return {NEURON_COMPILE_CACHE_URL: cache_url} if entry and "compile-cache-s3" in entry.mechanisms else {}


class ServedModel(Protocol):
    """What :func:`compiles_into_cache` reads of a model's settings (an endpoint's or a batch job's)."""

    @property
    def container(self) -> str: ...
    @property
    def hf_model_id(self) -> str | None: ...
    @property
    def allow_non_cached_model(self) -> bool | None: ...


def compiles_into_cache(model: ServedModel) -> bool:
    """Whether a model may compile when an instance starts and its container reads an S3 compile cache: a hub model
    with ``allow_non_cached_model`` on a container :data:`SERVING_CACHE` gives ``compile-cache-s3`` (vllm-neuronx).
    A compiled artifact compiles nothing; without ``allow_non_cached_model`` the server refuses an uncached model."""
    entry = SERVING_CACHE.get(model.container)
    return bool(model.hf_model_id and model.allow_non_cached_model and entry
                and "compile-cache-s3" in entry.mechanisms)
