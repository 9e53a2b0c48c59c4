"""data/neuron_compat.json: every fact sourced and dated, tags consistent with their SDKs, defaults current."""

from __future__ import annotations

import json
from datetime import date
from importlib import resources

import pytest

from neuronfleet import CATALOG, AcceleratorFamily
from neuronfleet import neuron as nx

RAW = json.loads(resources.files("neuronfleet.data").joinpath("neuron_compat.json").read_text())


def test_every_family_and_limit_has_a_source_and_a_date() -> None:
    for entry in [*RAW["families"].values(), *RAW["component_limits"], RAW["training_images"]]:
        assert entry["source"] and date.fromisoformat(entry["read"]) <= date(2026, 11, 22)


@pytest.mark.parametrize("instance_type", CATALOG.types(AcceleratorFamily.TRAINIUM))
def test_every_trainium_type_has_recorded_support(instance_type: str) -> None:
    assert nx.support(instance_type).first_sdk


def test_tags_carry_the_sdk_they_are_recorded_with_and_the_default_is_the_newest() -> None:
    images = nx.training_images()
    for image in images:
        assert nx.sdk_from_tag(image.tag) == image.sdk
    newest = max(images, key=lambda i: nx.version(i.sdk))
    assert f"pytorch-training-neuronx:{newest.tag}" == nx.DEFAULT_TRAINING_IMAGE
    assert newest.sdk == RAW["training_images"]["last_published_sdk"] == "2.30.0"


def test_trn2_needs_2_21_and_lnc_defaults() -> None:
    assert nx.support("trn2.48xlarge").first_sdk == nx.support("trn2u.48xlarge").first_sdk == "2.21.0"
    assert (nx.logical_cores("trn2.48xlarge", 2), nx.logical_cores("trn2.48xlarge", 1)) == (64, 128)
    assert nx.logical_cores("trn1.32xlarge", None) == 32
    assert nx.support("trn1.32xlarge").lnc_default is None


def test_nxd_inference_drops_inf2_and_trn1_after_2_28() -> None:
    (limit,) = [c for c in RAW["component_limits"] if c["component"] == "NxD Inference"]
    assert limit["last_sdk"] == "2.28" and {"inf2", "trn1"} <= set(limit["families"])


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
    from neuronfleet.neuron import SERVING_STATUSES, serving_images
    for name, image in serving_images().items():
        assert image.source and image.read == RAW["as_of"], name
        assert image.status in SERVING_STATUSES, name
        if image.status != "current":
            assert image.replacement in serving_images() and image.note, name
        if image.status != "unavailable":
            assert image.tag and image.sdk and image.tasks and "model" in image.settings, name


def test_a_tag_that_names_its_sdk_agrees_with_the_recorded_one() -> None:
    import re

    from neuronfleet.neuron import serving_images
    for image in serving_images().values():
        m = re.search(r"sdk(\d+\.\d+\.\d+)", image.tag or "")
        if m:
            assert m.group(1) == image.sdk, image.name


def test_inf2_serving_is_pinned_to_2_28_and_trn2_needs_2_21() -> None:
    from neuronfleet.neuron import serving_sdk_fits
    assert serving_sdk_fits("inf2.xlarge", "2.28.1") and not serving_sdk_fits("inf2.xlarge", "2.29.0")
    assert serving_sdk_fits("trn2.48xlarge", "2.32.0") and not serving_sdk_fits("trn2.48xlarge", "2.20.1")
    assert not serving_sdk_fits("trn1.32xlarge", "2.31.0")


def test_tei_has_no_neuron_image_and_says_why() -> None:
    from neuronfleet.neuron import serving_not_available
    assert "text-embeddings-inference" in serving_not_available()["tei-neuronx"]
