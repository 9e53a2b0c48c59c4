"""data/neuron_compat.json: every fact sourced and dated, tags consistent with their SDKs, defaults current."""

from __future__ import annotations

import itertools
import json
import re
from datetime import date
from importlib import resources

import pytest

from neuronfleet import CATALOG, AcceleratorFamily
from neuronfleet.facts import neuron as nx

RAW = json.loads(resources.files("neuronfleet.facts.data").joinpath("neuron_compat.json").read_text())


def test_every_family_and_limit_has_a_source_and_a_date() -> None:
    for entry in [*RAW["families"].values(), *RAW["component_limits"], RAW["training_images"]]:
        assert entry["source"] and date.fromisoformat(entry["read"]) <= date(2026, 11, 23)


@pytest.mark.parametrize("instance_type", CATALOG.types(AcceleratorFamily.TRAINIUM))
def test_every_trainium_type_has_recorded_support(instance_type: str) -> None:
    assert nx.support(instance_type).first_sdk


def test_tags_carry_the_sdk_and_the_runtime_library_of_their_release() -> None:
    for image in nx.training_images():
        assert nx.sdk_from_tag(image.tag) == image.sdk, image.tag
        # the Dockerfile's runtime package (runtime_source) is the one Neuron's manifest lists for the release
        assert image.runtime_lib == nx.release_runtime(image.sdk), image.tag
    last = next(i for i in nx.training_images() if i.reference.startswith("pytorch-training-neuronx:"))
    assert last.sdk == RAW["training_images"]["last_published_sdk"] == "2.30.0" and last.runtime_lib == "2.32.31.0"


def test_the_torchneuron_training_dlc_is_recorded_with_its_ubuntu_26_04_python_3_14_tag() -> None:
    tn = RAW["training_images"]["torchneuron"]
    assert tn["source"] and tn["read"] == "2026-11-23" and tn["confirmed"] is False
    assert "docker manifest inspect " + tn["image"] in tn["unconfirmed"]
    ref = nx.parse_image(tn["image"])
    m = re.fullmatch(RAW["training_images"]["tag_pattern"], ref.tag or "")
    assert m and (m["python"], m["sdk"], m["os"]) == ("py314", "2.33.0", "ubuntu26.04")
    assert (ref.registry, ref.sdk) == ("public.ecr.aws", "2.33.0")
    image = nx.training_image(tn["image"])
    assert image and image.families == ("trn2", "trn2u") and image.runtime_lib == "2.35.30.0"


@pytest.mark.parametrize(("instance_type", "default"), [
    ("trn2.48xlarge", "public.ecr.aws/neuron/pytorch-training-neuronx:2.14.0-neuronx-py314-sdk2.33.0-ubuntu26.04"),
    ("trn2u.48xlarge", "public.ecr.aws/neuron/pytorch-training-neuronx:2.14.0-neuronx-py314-sdk2.33.0-ubuntu26.04"),
    ("trn1.32xlarge", "pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04"),
])
def test_the_default_image_is_the_newest_for_the_family(instance_type, default) -> None:
    assert nx.default_training_image(instance_type).reference == default
    assert nx.default_training_image("trn2.48xlarge").reference == nx.DEFAULT_TRAINING_IMAGE


def _pinned(instance_type: str) -> list[tuple[str, nx.DriverWindow]]:
    out = []
    for region in sorted(CATALOG.regions(instance_type) & set(nx.ecs_neuron_amis())):
        window = nx.ami_driver(region)
        assert window is not None
        out.append((region, window))
    return out


@pytest.mark.parametrize("instance_type", ["trn2.48xlarge", "trn2u.48xlarge"])
def test_the_default_training_image_runs_on_the_pinned_amis_driver(instance_type) -> None:
    """Fails when the default image's runtime library cannot run on the driver the pinned ECS Neuron AMI installs."""
    default = nx.default_training_image(instance_type)
    needs = nx.runtime_window(default.runtime_lib, instance_type)
    assert list(_pinned(instance_type)), instance_type
    for region, window in _pinned(instance_type):
        assert needs.runs_on(window), (region, window, needs)
        assert list(nx.driver_problems(instance_type, default.reference, None, window)) == []


@pytest.mark.parametrize("instance_type", ["trn1.32xlarge", "trn1n.32xlarge", "trn1.2xlarge"])
def test_no_published_training_image_runs_on_trn1_with_the_pinned_amis_driver(instance_type) -> None:
    """The known gap: pytorch-training-neuronx ends at runtime 2.32 and TorchNeuron is Trn2/Trn3 only. When an image
    that runs is recorded this fails: make it the default then."""
    assert list(_pinned(instance_type)), instance_type
    for region, window in _pinned(instance_type):
        runs = [i.reference for i in nx.training_images() if nx.family(instance_type) in i.families
                and nx.runtime_window(i.runtime_lib, instance_type).runs_on(window)]
        assert runs == [], region
        (problem,) = nx.driver_problems(instance_type, nx.default_training_image(instance_type).reference, None,
                                        window)
        assert "no published training image for trn1" in problem.allowed


def test_driver_runtime_rules_keep_both_bounds_as_the_release_notes_state_them() -> None:
    by_sdk = {i.sdk: nx.runtime_window(i.runtime_lib, "trn1.32xlarge") for i in nx.training_images()}
    assert (by_sdk["2.30.0"].driver_min, by_sdk["2.30.0"].driver_below) == ((2, 27), (2, 29))
    assert (by_sdk["2.29.1"].driver_min, by_sdk["2.29.1"].driver_below) == (None, (2, 29))
    tn = nx.runtime_window("2.35.30.0", "trn2.48xlarge")
    assert (tn.driver_min, tn.driver_below) == ((2, 22), None)  # Trainium2 needs driver 2.22+ from runtime 2.26
    assert nx.release_runtime("2.31.0") == "2.33.10.0" and nx.release_runtime("2.31.7") == "2.33.10.0"
    for rule in RAW["driver_runtime"]["rules"]:
        assert rule["source"] and rule["quote"] and rule["read"] == "2026-11-23"
    releases = sorted(RAW["driver_runtime"]["releases"], key=lambda r: nx.version(r["sdk"]))
    for older, newer in itertools.pairwise(releases):  # runtimes and drivers only move forward
        assert nx.version(older["runtime_lib"]) <= nx.version(newer["runtime_lib"])
        assert nx.version(older["driver"]) <= nx.version(newer["driver"])


@pytest.mark.parametrize(("image_version", "low", "high"), [
    ("2023.0.20260922", (2, 30), (2, 30)),   # Neuron 2.32.0 (08/17/2026) is the newest before; 2.33.0 comes 10/19
    ("2023.0.20260929", (2, 30), (2, 30)),
    ("2023.0.20260226", (2, 25), (2, 26)),   # built the day Neuron 2.28.0 (driver 2.26.5) came out: either
])
def test_the_pinned_amis_driver_is_inferred_from_its_build_date(image_version, low, high) -> None:
    window = nx.ami_driver_window(image_version)
    assert (window.low, window.high) == (low, high) and "inferred" in window.why
    assert RAW["driver_runtime"]["ecs_neuron_ami"]["confirmed"] is False
    assert "cat /sys/module/neuron/version" in RAW["driver_runtime"]["ecs_neuron_ami"]["driver_inference"]


def test_the_ecs_neuron_ami_build_installs_the_newest_driver_and_removes_the_neuron_repository() -> None:
    ami = RAW["driver_runtime"]["ecs_neuron_ami"]
    assert "a2532d35" in ami["source"] and ami["driver"] == "newest"
    assert "sudo rm /etc/yum.repos.d/neuron.repo" in ami["installs"] and "/opt/aws/neuron/bin" in ami["installs"]
    assert "no awscli, no amazon-cloudwatch-agent" in ami["installs"]


def test_trn2_needs_2_21_and_lnc_defaults() -> None:
    assert nx.support("trn2.48xlarge").first_sdk == nx.support("trn2u.48xlarge").first_sdk == "2.21.0"
    assert (nx.logical_cores("trn2.48xlarge", 2), nx.logical_cores("trn2.48xlarge", 1)) == (64, 128)
    assert nx.logical_cores("trn1.32xlarge", None) == 32
    assert nx.support("trn1.32xlarge").lnc_default is None


def test_nxd_inference_drops_inf2_and_trn1_after_2_28_and_ends_with_2_31() -> None:
    windows = {w.families: w.last_sdk for w in (*nx.library_windows("inf2.xlarge", "nxd-inference"),
                                                   *nx.library_windows("trn2.48xlarge", "nxd-inference"))}
    assert windows == {("inf2", "trn1", "trn1n"): "2.28", ("trn2", "trn2u"): "2.31"}


def test_every_limit_names_a_known_library_and_families_with_support() -> None:
    for c in RAW["component_limits"]:
        assert c["library"] in nx.SERVING_LIBRARIES and c["families"], c
        assert all(f in RAW["families"] for f in c["families"]), c
    assert {c["library"] for c in RAW["component_limits"]} == set(nx.SERVING_LIBRARIES)


@pytest.mark.parametrize(("reference", "registry", "repository", "sdk"), [
    ("pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04", None, "pytorch-training-neuronx", "2.30.0"),
    ("763104351884.dkr.ecr.us-east-2.amazonaws.com/pytorch-training-neuronx:2.7.0-neuronx-py310-sdk2.24.1-ubuntu22.04",
     "763104351884.dkr.ecr.us-east-2.amazonaws.com", "pytorch-training-neuronx", "2.24.1"),
    ("public.ecr.aws/neuron/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.29.0-ubuntu24.04", "public.ecr.aws",
     "neuron/pytorch-training-neuronx", "2.29.0"),
    ("111111111111.dkr.ecr.us-east-2.amazonaws.com/team/train:v7", "111111111111.dkr.ecr.us-east-2.amazonaws.com",
     "team/train", None),
])
def test_image_references_are_taken_apart(reference, registry, repository, sdk) -> None:
    ref = nx.parse_image(reference)
    assert (ref.registry, ref.repository, ref.sdk) == (registry, repository, sdk)


def test_the_ecs_neuron_ami_is_recorded_for_every_region_a_trainium_type_is_offered_in() -> None:
    recorded = nx.ecs_neuron_amis()
    for t in CATALOG.types(AcceleratorFamily.TRAINIUM):
        assert CATALOG.regions(t) <= set(recorded), t
    assert nx.ecs_neuron_ami_record()["parameter"].endswith("/neuron/recommended/image_id")


# ------------------------------------------------------------------------------------------------ serving

def test_every_serving_container_names_its_source_date_and_a_known_status() -> None:
    from neuronfleet.facts.neuron import SERVING_STATUSES, serving_images
    assert serving_images()
    for name, image in serving_images().items():
        assert image.source and image.read == RAW["as_of"], name
        assert image.status in SERVING_STATUSES, name
        if image.status != "current":
            assert image.replacement in serving_images() and image.note, name
        if image.status != "unavailable":
            assert image.tag and image.sdk and image.tasks and "model" in image.settings, name


def test_a_tag_that_names_its_sdk_agrees_with_the_recorded_one() -> None:
    import re

    from neuronfleet.facts.neuron import serving_images
    assert [i for i in serving_images().values() if re.search(r"sdk(\d+\.\d+\.\d+)", i.tag or "")]
    for image in serving_images().values():
        m = re.search(r"sdk(\d+\.\d+\.\d+)", image.tag or "")
        if m:
            assert m.group(1) == image.sdk, image.name


@pytest.mark.parametrize(("instance_type", "sdk", "library", "fits"), [
    # NxD Inference: Inf2/Trn1 up to 2.28 (release notes 2.29), none at all in 2.32
    ("inf2.xlarge", "2.28.1", "nxd-inference", True), ("inf2.xlarge", "2.29.0", "nxd-inference", False),
    ("trn1.32xlarge", "2.30.0", "nxd-inference", False), ("trn2.48xlarge", "2.31.0", "nxd-inference", True),
    ("trn2.48xlarge", "2.32.0", "nxd-inference", False),
    # torch-neuronx: every NeuronCore-v2 family up to 2.31 (not shipped from 2.32)
    ("inf2.xlarge", "2.30.0", "torch-neuronx", True), ("trn1.32xlarge", "2.31.0", "torch-neuronx", True),
    ("trn1.32xlarge", "2.32.0", "torch-neuronx", False), ("trn2.48xlarge", "2.32.0", "torch-neuronx", False),
    # TorchNeuron and vLLM Neuron: Trn2 only
    ("trn2.48xlarge", "2.32.0", "torchneuron", True), ("trn1.32xlarge", "2.32.0", "torchneuron", False),
    ("inf2.xlarge", "2.31.0", "vllm-neuron", False), ("trn2.48xlarge", "2.31.0", "vllm-neuron", True),
    ("trn2.48xlarge", "2.30.0", "vllm-neuron", False),
    # no library named: any recorded library will do; the family's first SDK always applies
    ("inf2.xlarge", "2.30.0", None, True), ("trn1.32xlarge", "2.32.0", None, False),
    ("trn2.48xlarge", "2.32.0", None, True), ("trn2.48xlarge", "2.20.1", None, False),
])
def test_serving_sdk_windows_per_library_both_directions(instance_type, sdk, library, fits) -> None:
    assert nx.serving_sdk_fits(instance_type, sdk, library) is fits


def test_named_containers_serve_with_torch_neuronx_and_vllm_reads_the_contract_variables() -> None:
    images = nx.serving_images()
    assert {i.library for i in images.values() if i.status != "unavailable"} == {"torch-neuronx"}
    vllm = images["vllm-neuronx"]
    assert (vllm.settings["revision"], vllm.settings["allow_non_cached_model"], vllm.settings["hf_token"]) == \
        ("SM_ON_REVISION", "SM_ON_ALLOW_NON_CACHED_MODEL", "HF_TOKEN")
    assert vllm.flags == ("allow_non_cached_model",) and vllm.shapes_from_container
    assert vllm.compile_targets == {"inf2": "trn1", "trn1": "trn1", "trn1n": "trn1", "trn2": "trn2"}
    hf = images["hf-inference-neuronx"]
    assert (hf.settings["revision"], hf.settings["hf_token"]) == ("HF_MODEL_REVISION", "HF_API_TOKEN")
    assert not hf.shapes_from_container


def test_tei_has_no_neuron_image_and_says_why() -> None:
    from neuronfleet.facts.neuron import serving_not_available
    assert "text-embeddings-inference" in serving_not_available()["tei-neuronx"]
