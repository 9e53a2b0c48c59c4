"""Every hardware figure of the catalog against AWS's own DescribeInstanceTypes data (shipped in moto)."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

import moto
import pytest

from neuronfleet import CATALOG, AcceleratorFamily, Price, UnknownInstanceType
from tests.conftest import ROOT

MOTO_EC2 = Path(moto.__file__).parent / "ec2" / "resources"


@cache
def aws_types() -> dict[str, Any]:
    with gzip.open(MOTO_EC2 / "instance_types.json.gz") as fh:
        return json.load(fh)


def _accelerators(info: dict[str, Any]) -> tuple[str, int, int, int]:
    """(name, count, NeuronCores, memory MiB) from NeuronInfo or GpuInfo."""
    if info.get("NeuronInfo"):
        dev = info["NeuronInfo"]["NeuronDevices"][0]
        return (dev["Name"], dev["Count"], dev["Count"] * dev["CoreInfo"]["Count"],
                info["NeuronInfo"]["TotalNeuronDeviceMemoryInMiB"])
    gpu = info["GpuInfo"]["Gpus"][0]
    return gpu["Name"], gpu["Count"], 0, info["GpuInfo"]["TotalGpuMemoryInMiB"]


# AWS's data reports 512 GiB per Trainium2 device; the Trn2 product page (and the Neuron docs) give
# 96 GiB of HBM per chip. The catalog carries the product figure; this pins AWS's value, so the test
# fails (and the exception can go) the day AWS corrects its data.
TRAINIUM2_MEMORY_EXCEPTION = {"aws_mib_per_device": 524288, "catalog_gib_per_chip": 96}
# AWS's data has no NeuronInfo for trn2u.48xlarge (a Capacity-Block-only type); it is the trn2.48xlarge
# server in an UltraServer, so its accelerator figures are checked against trn2.48xlarge.
NEURON_INFO_FROM = {"trn2u.48xlarge": "trn2.48xlarge"}


def _instance_bandwidth_gbps(net: dict[str, Any]) -> float:
    """The instance's bandwidth as AWS states it (``NetworkPerformance``: "400 Gigabit", "16x 200 Gigabit");
    for burstable types ("Up to 12.5 Gigabit") the card's baseline."""
    performance = net["NetworkPerformance"]
    if performance.startswith("Up to"):
        return float(sum(c["BaselineBandwidthInGbps"] for c in net["NetworkCards"]))
    match = re.fullmatch(r"(?:(\d+)x )?([\d.]+) Gigabit", performance)
    assert match, performance
    return int(match.group(1) or 1) * float(match.group(2))


# AWS's data lists 400 Gbps on each of g6e.48xlarge's 4 cards (1,600 summed) while the instance's
# NetworkPerformance is "400 Gigabit": the catalog carries the instance figure. Pinned, so the test fails the day
# AWS's per-card data changes.
G6E_48XLARGE_CARDS_GBPS = [400.0, 400.0, 400.0, 400.0]


def test_g6e_48xlarge_is_400_gbps_in_all() -> None:
    net = aws_types()["g6e.48xlarge"]["NetworkInfo"]
    assert net["NetworkPerformance"] == "400 Gigabit"
    assert [c["BaselineBandwidthInGbps"] for c in net["NetworkCards"]] == G6E_48XLARGE_CARDS_GBPS
    assert CATALOG.get("g6e.48xlarge").network_bandwidth_gbps == 400


@pytest.mark.parametrize("spec", list(CATALOG), ids=lambda s: s.instance_type)
def test_hardware_matches_describe_instance_types(spec) -> None:
    aws = aws_types()[spec.instance_type]
    net = aws["NetworkInfo"]
    assert spec.vcpus == aws["VCpuInfo"]["DefaultVCpus"]
    assert spec.memory_gib * 1024 == aws["MemoryInfo"]["SizeInMiB"]
    assert spec.instance_storage_gb == ((aws.get("InstanceStorageInfo") or {}).get("TotalSizeInGB") or 0)
    assert (spec.instance_storage_gb > 0) is aws["InstanceStorageSupported"]
    assert spec.network_cards == net["MaximumNetworkCards"] == len(net["NetworkCards"])
    assert spec.efa_interfaces == (net.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0)
    assert spec.efa_supported is net["EfaSupported"]
    assert spec.efa_only == all("efa-only" in card["InterfaceTypes"] for card in net["NetworkCards"])
    # every network card of an EFA type takes an EFA: one interface per card is every EFA attached
    assert not spec.efa_supported or spec.efa_interfaces == spec.network_cards
    assert spec.network_bandwidth_gbps == pytest.approx(_instance_bandwidth_gbps(net))
    assert spec.network_bandwidth_gbps <= sum(c["BaselineBandwidthInGbps"] for c in net["NetworkCards"]) + 1e-9
    # the layout the catalog derives fits what each card takes: interface types and interfaces per card
    cards = {c["NetworkCardIndex"]: c for c in net["NetworkCards"]}
    for slot in spec.network_interfaces():
        card = cards[slot.network_card]
        assert slot.interface_type in card["InterfaceTypes"], (slot, card["InterfaceTypes"])
        assert slot.device_index < card["MaximumNetworkInterfaces"], (slot, card["MaximumNetworkInterfaces"])
    assert len(spec.efa_slots) == spec.efa_interfaces

    accel = aws_types()[NEURON_INFO_FROM.get(spec.instance_type, spec.instance_type)]
    name, count, cores, memory_mib = _accelerators(accel)
    assert (spec.accelerator_name, spec.accelerators, spec.neuron_cores) == (name, count, cores)
    if name == "Trainium2":
        assert memory_mib == TRAINIUM2_MEMORY_EXCEPTION["aws_mib_per_device"] * count
        assert spec.accelerator_memory_gib == TRAINIUM2_MEMORY_EXCEPTION["catalog_gib_per_chip"] * count
    else:
        assert spec.accelerator_memory_gib == memory_mib // 1024
    family = {"Trainium": AcceleratorFamily.TRAINIUM, "Trainium2": AcceleratorFamily.TRAINIUM,
              "Inferentia2": AcceleratorFamily.INFERENTIA}.get(name, AcceleratorFamily.GPU)
    assert spec.family is family


def test_design_facts() -> None:
    """The counts DESIGN.md states, as the catalog derives them."""
    efa = {t: CATALOG.get(t).efa_interfaces for t in
           ("trn2.48xlarge", "trn2u.48xlarge", "trn1.32xlarge", "trn1n.32xlarge", "p5.48xlarge",
            "p5en.48xlarge", "p4d.24xlarge", "g6e.48xlarge", "inf2.48xlarge")}
    assert efa == {"trn2.48xlarge": 16, "trn2u.48xlarge": 16, "trn1.32xlarge": 8, "trn1n.32xlarge": 16,
                   "p5.48xlarge": 32, "p5en.48xlarge": 16, "p4d.24xlarge": 4, "g6e.48xlarge": 4,
                   "inf2.48xlarge": 0}
    assert {t: CATALOG.get(f"inf2.{t}").neuron_cores for t in ("xlarge", "8xlarge", "24xlarge", "48xlarge")} \
        == {"xlarge": 2, "8xlarge": 2, "24xlarge": 12, "48xlarge": 24}
    assert CATALOG.get("trn2u.48xlarge").ultraserver_size == 4
    assert CATALOG.get("trn2u.48xlarge").capacity_block_only


def test_capacity_block_only_types_are_sold_only_that_way() -> None:
    for spec in CATALOG:
        usage = aws_types()[spec.instance_type]["SupportedUsageClasses"]
        if spec.capacity_block_only:
            assert "capacity-block" in usage and "spot" not in usage


def test_data_files_are_awss_data() -> None:
    """The committed offerings and SageMaker type list equal the installed moto's and botocore's."""
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "refresh_data.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "us-east-2" in CATALOG.regions("trn2.48xlarge")
    assert CATALOG.offered_in("trn1.32xlarge", "us-west-2")
    assert not CATALOG.offered_in("trn2.48xlarge", "eu-west-1")
    from neuronfleet.catalog import sagemaker_instance_types

    assert {f"ml.inf2.{s}" for s in ("xlarge", "8xlarge", "24xlarge", "48xlarge")} <= sagemaker_instance_types()


def test_every_price_names_source_and_date() -> None:
    for spec in CATALOG:
        assert spec.price.usd_per_hour > 0
        assert spec.price.source.startswith("https://aws.amazon.com/")
        assert spec.price.as_of <= date.today()


def test_price_override_replaces_one_price_only() -> None:
    ours = Price(usd_per_hour=30.0, source="EDP contract 2026", as_of=date(2026, 10, 1))
    cat = CATALOG.with_prices({"trn2.48xlarge": ours})
    assert cat.get("trn2.48xlarge").price == ours
    assert cat.get("trn1.32xlarge").price == CATALOG.get("trn1.32xlarge").price
    assert CATALOG.get("trn2.48xlarge").price != ours  # the default catalog is untouched


def test_unknown_type_names_what_is_known() -> None:
    with pytest.raises(UnknownInstanceType, match=r"'trn3.48xlarge' is not in .*trn2.48xlarge"):
        CATALOG.get("trn3.48xlarge")
    with pytest.raises(UnknownInstanceType):
        CATALOG.with_prices({"x1.large": Price(usd_per_hour=1, source="s", as_of=date(2026, 1, 1))})


@pytest.mark.parametrize(("instance_type", "cards"), [("trn2.48xlarge", 16), ("trn2u.48xlarge", 16),
                                                     ("trn1n.32xlarge", 16), ("trn1.32xlarge", 8),
                                                     ("p5.48xlarge", 32), ("p5en.48xlarge", 16),
                                                     ("p4d.24xlarge", 4), ("g6e.48xlarge", 4), ("g5.48xlarge", 1)])
def test_interface_layout_is_awss_current_efa_layout(instance_type: str, cards: int) -> None:
    """EC2 user guide, "Maximize network bandwidth on Amazon EC2 instances with multiple network cards" (read
    2026-11-22): ENA primary at card 0 / device 0, EFA-only at card 0 / device 1, EFA-only at device 0 of every
    other card."""
    slots = CATALOG.get(instance_type).network_interfaces()
    got = [(s.network_card, s.device_index, s.interface_type) for s in slots]
    assert got == [(0, 0, "interface"), (0, 1, "efa-only")] + [(card, 0, "efa-only") for card in range(1, cards)]
    assert len(CATALOG.get(instance_type).efa_slots) == cards


def test_efa_only_is_an_interface_type_of_ec2() -> None:
    import botocore.session

    ec2 = botocore.session.get_session().get_service_model("ec2")
    assert {"interface", "efa", "efa-only"} <= set(ec2.shape_for("NetworkInterfaceType").enum)


def test_batch_limits_are_botocores() -> None:
    """Batch limits the kit refuses on, as botocore's batch model states them."""
    import botocore.session

    from neuronfleet.catalog import (
        BATCH_COMPUTE_ENVIRONMENTS_PER_QUEUE,
        BATCH_LAUNCH_TEMPLATE_OVERRIDES,
        BATCH_UPDATE_TIMEOUT_MINUTES,
    )

    batch = botocore.session.get_session().get_service_model("batch")
    order = batch.operation_model("CreateJobQueue").input_shape.members["computeEnvironmentOrder"].documentation
    assert "up to three compute environments with a job queue" in order and BATCH_COMPUTE_ENVIRONMENTS_PER_QUEUE == 3
    overrides = batch.shape_for("LaunchTemplateSpecification").members["overrides"].documentation
    assert "up to ten (10) launch template overrides" in overrides and BATCH_LAUNCH_TEMPLATE_OVERRIDES == 10
    timeout = batch.shape_for("UpdatePolicy").members["jobExecutionTimeoutMinutes"].documentation
    assert "The default value is 30. The maximum value is 7200." in timeout
    assert BATCH_UPDATE_TIMEOUT_MINUTES == (1, 30, 7200)
    assert "false" in batch.shape_for("UpdatePolicy").members["terminateJobsOnUpdate"].documentation
    strategies = batch.shape_for("ComputeResource").members["allocationStrategy"].documentation
    assert "BEST_FIT_PROGRESSIVE_ORDERED" in strategies and "in the order they appear" in strategies


def test_types_without_efa_get_one_ena() -> None:
    for t in ("inf2.48xlarge", "trn1.2xlarge", "g6e.xlarge"):
        slots = CATALOG.get(t).network_interfaces()
        assert [(s.network_card, s.device_index, s.interface_type) for s in slots] == [(0, 0, "interface")]


def test_log_retentions_are_the_ones_cloudwatch_logs_takes() -> None:
    import re

    import botocore.session

    from neuronfleet.catalog import LOG_RETENTION_DAYS

    model = botocore.session.get_session().get_service_model("logs")
    doc = model.operation_model("PutRetentionPolicy").input_shape.members["retentionInDays"].documentation
    listed = re.search(r"Possible values are: ([0-9, and]+)\.", doc)
    assert listed, doc
    assert tuple(int(n) for n in re.findall(r"\d+", listed.group(1))) == LOG_RETENTION_DAYS
