"""Every hardware figure of the catalog against AWS's own DescribeInstanceTypes data (shipped in moto)."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from datetime import date, timedelta
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


# The other way round: an instance figure above its cards' sum (moto's copy, read 2026-11-23): trn2.3xlarge
# "200 Gigabit" on one 50 Gbps card, p6-b200.48xlarge "3200 Gigabit" on 8 cards of 200. The catalog carries the
# instance figure; pinned, so the test fails the day AWS's data changes.
ABOVE_ITS_CARDS = {"trn2.3xlarge": ("200 Gigabit", [50.0]), "p6-b200.48xlarge": ("3200 Gigabit", [200.0] * 8)}


@pytest.mark.parametrize("instance_type", sorted(ABOVE_ITS_CARDS))
def test_instance_bandwidth_above_its_cards_is_awss_instance_figure(instance_type: str) -> None:
    net = aws_types()[instance_type]["NetworkInfo"]
    performance, cards = ABOVE_ITS_CARDS[instance_type]
    assert (net["NetworkPerformance"], [c["BaselineBandwidthInGbps"] for c in net["NetworkCards"]]) == (performance,
                                                                                                       cards)
    assert CATALOG.get(instance_type).network_bandwidth_gbps == float(performance.split()[0]) > sum(cards)


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
    efa_cards = [card for card in net["NetworkCards"] if "efa" in card["InterfaceTypes"]]
    assert spec.efa_only == (bool(efa_cards) and all("efa-only" in card["InterfaceTypes"] for card in efa_cards))
    # every network card that takes an EFA gets one: one interface per such card is every EFA attached
    assert not spec.efa_supported or spec.efa_interfaces == len(efa_cards)
    assert not spec.efa_supported or spec.card0_efa is ("efa" in net["NetworkCards"][0]["InterfaceTypes"])
    assert spec.network_bandwidth_gbps == pytest.approx(_instance_bandwidth_gbps(net))
    if spec.instance_type not in ABOVE_ITS_CARDS:  # pinned above
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
    """The counts docs/DESIGN.md states, as the catalog derives them."""
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
    small = CATALOG.get("trn2.3xlarge")
    assert (small.accelerators, small.neuron_cores, small.efa_interfaces) == (1, 8, 1)
    assert (CATALOG.get("p6-b300.48xlarge").network_cards, CATALOG.get("p6-b300.48xlarge").efa_interfaces) == (17, 16)


def test_capacity_block_only_types_are_sold_only_that_way() -> None:
    assert [spec for spec in CATALOG if spec.capacity_block_only]
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
    from neuronfleet.facts.catalog import sagemaker_instance_types

    assert {f"ml.inf2.{s}" for s in ("xlarge", "8xlarge", "24xlarge", "48xlarge")} <= sagemaker_instance_types()


PRICING = ROOT / "tests" / "data" / "pricing"
KARPENTER_SOURCE = ("https://github.com/aws/karpenter-provider-aws/blob/6fc13b5/pkg/providers/pricing/"
                    "zz_generated.pricing_aws.go (AWS Price List, us-east-1)")


def karpenter_prices() -> dict[str, float]:
    """AWS's On-Demand prices as Karpenter's generated table holds them (the verbatim copy in tests/data/pricing)."""
    text = (PRICING / "karpenter" / "zz_generated.pricing_aws.go").read_text()
    assert "// generated at 2026-07-20T13:44:30Z for us-east-1" in text
    assert text.count('\n\t"') == 1 and '\t"us-east-1": {' in text  # one region in the table: us-east-1
    return {t: float(v) for t, v in re.findall(r'"([a-z0-9.-]+\.[a-z0-9]+)": ([0-9.]+)', text)}


def test_every_price_names_source_and_date() -> None:
    """AWS's Price List data (Karpenter's copy), AWS's pricing pages; a price no AWS source gives is listed in
    data/prices.json ``unsourced`` with the reason (the report says so)."""
    unsourced = json.loads((ROOT / "shared/neuronfleet_contract/data/prices.json").read_text())["unsourced"]
    for spec in CATALOG:
        assert spec.price.usd_per_hour > 0
        assert spec.price.as_of <= date(2026, 11, 28)
        if spec.price.source.startswith("unsourced"):
            assert spec.instance_type in unsourced, spec.instance_type
        else:
            assert spec.price.source.startswith(("https://github.com/aws/karpenter-provider-aws/",
                                                 "https://aws.amazon.com/", "https://b0.p.awsstatic.com/pricing/"))
        if spec.price.source != KARPENTER_SOURCE:  # only types AWS's table lacks keep another source
            assert spec.instance_type in unsourced, spec.instance_type
    assert set(unsourced) == {"trn2.48xlarge", "trn2u.48xlarge", "trn2.3xlarge", "p5e.48xlarge"}


def test_every_price_sourced_to_karpenters_table_is_its_value() -> None:
    """Each catalog price read from AWS's Price List as aws/karpenter-provider-aws generates it (@ 6fc13b5, 2026-07-20,
    us-east-1) equals the table's figure; the types missing from it are exactly the unsourced ones."""
    table = karpenter_prices()
    assert len(table) > 800
    ours = {s.instance_type: s.price for s in CATALOG if s.price.source == KARPENTER_SOURCE}
    assert len(ours) >= 40
    for t, price in ours.items():
        assert price.usd_per_hour == table[t], t
        assert (price.as_of, price.region) == (date(2026, 7, 20), "us-east-1")
    assert {s.instance_type for s in CATALOG} - set(table) == {"trn2.48xlarge", "trn2u.48xlarge", "trn2.3xlarge",
                                                              "p5e.48xlarge"}
    # the old figures it replaced (AWS's page, us-east-2, 2025-10-01) were the same rates rounded
    assert (table["p4d.24xlarge"], table["g6e.12xlarge"], table["inf2.48xlarge"]) == (21.957642, 10.49264, 12.98127)


def test_no_price_is_stale_on_2026_11_28_but_the_ones_no_newer_source_gives() -> None:
    """The report flags a price read over 180 days before it runs: on 2026-11-28 only trn2.48xlarge's (and trn2u's,
    which reuses it) is, since no newer source for it exists offline (data/prices.json says so)."""
    cutoff = date(2026, 11, 28) - timedelta(days=180)
    assert {s.instance_type for s in CATALOG if s.price.as_of < cutoff} == {"trn2.48xlarge", "trn2u.48xlarge"}


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
                                                     ("trn2.3xlarge", 1), ("p5.48xlarge", 32), ("p5en.48xlarge", 16),
                                                     ("p5e.48xlarge", 32), ("p5.4xlarge", 1), ("p4d.24xlarge", 4),
                                                     ("p4de.24xlarge", 4), ("p6-b200.48xlarge", 8),
                                                     ("g6e.48xlarge", 4), ("g7e.48xlarge", 4), ("g5.48xlarge", 1)])
def test_interface_layout_is_awss_current_efa_layout(instance_type: str, cards: int) -> None:
    """EC2 user guide, "Maximize network bandwidth on Amazon EC2 instances with multiple network cards" (read
    2026-11-22): ENA primary at card 0 / device 0, EFA-only at card 0 / device 1, EFA-only at device 0 of every
    other card."""
    slots = CATALOG.get(instance_type).network_interfaces()
    got = [(s.network_card, s.device_index, s.interface_type) for s in slots]
    assert got == [(0, 0, "interface"), (0, 1, "efa-only")] + [(card, 0, "efa-only") for card in range(1, cards)]
    assert len(CATALOG.get(instance_type).efa_slots) == cards


def test_p6_b300_puts_no_efa_on_card_0() -> None:
    """EC2 user guide, efa-acc-inst-types (read 2026-11-23): an EFA-only interface at card 0 / device 1 only "if the
    network card index 0 supports EFA"; p6-b300.48xlarge's card 0 takes ENA only (DescribeInstanceTypes)."""
    slots = [(s.network_card, s.device_index, s.interface_type)
             for s in CATALOG.get("p6-b300.48xlarge").network_interfaces()]
    assert slots == [(0, 0, "interface")] + [(card, 0, "efa-only") for card in range(1, 17)]
    assert aws_types()["p6-b300.48xlarge"]["NetworkInfo"]["NetworkCards"][0]["InterfaceTypes"] == ["interface"]


def test_efa_only_is_an_interface_type_of_ec2() -> None:
    import botocore.session

    ec2 = botocore.session.get_session().get_service_model("ec2")
    assert {"interface", "efa", "efa-only"} <= set(ec2.shape_for("NetworkInterfaceType").enum)


def test_batch_limits_are_botocores() -> None:
    """Batch limits the kit refuses on, as botocore's batch model states them."""
    import botocore.session

    from neuronfleet.facts.catalog import (
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
    for t in ("inf2.48xlarge", "trn1.2xlarge", "g6e.xlarge", "g7e.2xlarge"):
        slots = CATALOG.get(t).network_interfaces()
        assert [(s.network_card, s.device_index, s.interface_type) for s in slots] == [(0, 0, "interface")]


def test_log_retentions_are_the_ones_cloudwatch_logs_takes() -> None:
    import re

    import botocore.session

    from neuronfleet.facts.catalog import LOG_RETENTION_DAYS

    model = botocore.session.get_session().get_service_model("logs")
    doc = model.operation_model("PutRetentionPolicy").input_shape.members["retentionInDays"].documentation
    listed = re.search(r"Possible values are: ([0-9, and]+)\.", doc)
    assert listed, doc
    assert tuple(int(n) for n in re.findall(r"\d+", listed.group(1))) == LOG_RETENTION_DAYS


# ------------------------------------------------------------------ coverage of AWS's own type list (botocore)

NEURON_EXCLUDED = dict.fromkeys(
    ("inf1.xlarge", "inf1.2xlarge", "inf1.6xlarge", "inf1.24xlarge"),
    "Inf1 (first-generation Inferentia, NeuronCore-v1) runs only the legacy torch-neuron/neuron-cc stack "
    "(aws-neuron-sdk about-neuron/announcements/neuron2.x/neuron230-packages-changes.rst: 'torch-neuron and neuron-cc "
    "will support Inf1 instances, and torch-neuronx and neuronx-cc will support Trn1'); Neuron drivers above 2.24 "
    "support no Inf1 (announce-correction-neuron-driver-support-inf1.rst, 2026-03-12) while the ECS Neuron AMI installs "
    "the newest driver; Inf1 DLAMIs ended with SDK 2.26 (release-notes/components/dlamis.rst). The kit's images "
    "(torch-neuronx training DLCs, the vLLM Neuron DLC) cannot run on it. Read at aws-neuron/aws-neuron-sdk "
    "@ 81ce03ae261e12925e53437a0f690478e6366155 on 2026-11-23.")

# The GPU families teams migrate from that the catalog is asked to cover (issue 22), and the sizes it leaves out.
GPU_FAMILIES = ("p5.", "p5e.", "p5en.", "p4d.", "p4de.", "p6-b200.", "p6-b300.", "p6e-gb200.", "g5.", "g6.", "g6e.", "g7.",
                "g7e.")
"""Issue 35 adds every size of the serving families (g5, g6, g6e, p4d, p5, p5e/p5en)."""
_NO_PRICE = ("no On-Demand price for it could be sourced offline on 2026-11-23 (the catalog carries the family's "
             "priced sizes); add it with a price and its source")
GPU_EXCLUDED = {
    "p6e-gb200.36xlarge": (
        "not in moto 5.2.5's DescribeInstanceTypes, and AWS's own figures for it could not be read offline on "
        "2026-11-23: its hardware, its network-card layout (aws/aws-parallelcluster#6930: efa on even, efa-only on odd "
        "cards, unlike every other type) and its arm64 Grace host (the GPU pool's ECS GPU AMI is x86_64) are "
        "unconfirmed; sold only as UltraServer Capacity Blocks (u-p6e-gb200x36/x72) in the Dallas Local Zone. "
        "data/capacity_blocks.json records those blocks."),
    **dict.fromkeys((f"g7.{s}" for s in ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge")),
                    _NO_PRICE),
    **dict.fromkeys((f"g7e.{s}" for s in ("4xlarge", "8xlarge", "12xlarge", "24xlarge")), _NO_PRICE),
}


def botocore_instance_types() -> tuple[str, ...]:
    import botocore.session

    return tuple(botocore.session.get_session().get_service_model("ec2").shape_for("InstanceType").enum)


def missing_neuron_types(listed: tuple[str, ...]) -> set[str]:
    """The Trainium/Inferentia types ``listed`` that the catalog neither holds nor excludes with a reason."""
    return {t for t in listed if re.match(r"(trn|inf)\d", t)} - set(CATALOG.types()) - set(NEURON_EXCLUDED)


def test_every_trainium_and_inferentia_type_botocore_lists_is_in_the_catalog_or_excluded_with_a_reason() -> None:
    listed = botocore_instance_types()
    missing = missing_neuron_types(listed)
    assert not missing, (f"botocore lists {sorted(missing)}: add them to the catalog (hardware checked against "
                         "DescribeInstanceTypes, a price, offerings, Neuron family facts) or to NEURON_EXCLUDED")
    assert set(NEURON_EXCLUDED) <= set(listed) and not set(NEURON_EXCLUDED) & set(CATALOG.types())
    # the check fails for a type AWS adds: one botocore does not list yet
    assert missing_neuron_types((*listed, "trn3.48xlarge")) == {"trn3.48xlarge"}


def test_every_gpu_type_teams_migrate_from_is_in_the_catalog_or_excluded_with_a_reason() -> None:
    listed = [t for t in botocore_instance_types() if t.startswith(GPU_FAMILIES)]
    assert {"p5.4xlarge", "p5e.48xlarge", "p4de.24xlarge", "p6-b200.48xlarge", "p6-b300.48xlarge",
            "p6e-gb200.36xlarge", "g7.48xlarge", "g7e.48xlarge"} <= set(listed)
    missing = set(listed) - set(CATALOG.types()) - set(GPU_EXCLUDED)
    assert not missing, f"botocore lists {sorted(missing)}: add them to the catalog or to GPU_EXCLUDED with the reason"
    assert set(GPU_EXCLUDED) <= set(listed) and not set(GPU_EXCLUDED) & set(CATALOG.types())
    assert "p6e-gb200.36xlarge" not in aws_types()  # moto lacks it: the reason above still holds


# ------------------------------------------------------------------------------------ trn2.3xlarge, derived

def test_trn2_3xlarge_is_a_trn2_with_one_chip_in_the_regions_aws_lists() -> None:
    from neuronfleet.facts import neuron
    from neuronfleet.facts.catalog import sagemaker_types

    assert CATALOG.regions("trn2.3xlarge") == {"ap-south-2", "sa-east-1", "ap-southeast-4"}
    support = neuron.support("trn2.3xlarge")
    assert (support.family, support.lnc_default, support.lnc_allowed) == ("trn2", 2, (1, 2))
    assert (neuron.logical_cores("trn2.3xlarge", 2), neuron.logical_cores("trn2.3xlarge", 1)) == (4, 8)
    # SageMaker does not serve it (botocore's ProductionVariantInstanceType has no ml.trn2.3xlarge); the new GPU types
    # it serves join the GPU list
    assert "ml.trn2.3xlarge" not in sagemaker_types(AcceleratorFamily.TRAINIUM)
    assert {"ml.p5.4xlarge", "ml.p6-b200.48xlarge", "ml.g7e.2xlarge"} <= set(sagemaker_types(AcceleratorFamily.GPU))


# ------------------------------------------------------------------------------ Capacity Blocks, as data

def _usage_capacity_block() -> set[str]:
    return {t for t, info in aws_types().items() if "capacity-block" in info.get("SupportedUsageClasses", ())}


def test_capacity_block_types_are_the_ones_awss_data_lists() -> None:
    """Instance Capacity Blocks: every type DescribeInstanceTypes lists with usage class ``capacity-block`` that is not
    an UltraServer type; UltraServer Capacity Blocks: trn2u (in that data) and p6e-gb200 (not in it)."""
    from neuronfleet.facts.catalog import capacity_blocks

    blocks = capacity_blocks()
    in_moto = {t for t in blocks.ultraserver_types if t in aws_types()}
    assert blocks.instance_types | in_moto == _usage_capacity_block()
    assert not blocks.instance_types & set(blocks.ultraserver_types)
    assert set(blocks.ultraserver_types) - in_moto == {"p6e-gb200.36xlarge"}
    assert blocks.ultraserver_types == {"trn2u.48xlarge": {"u-trn2x64": 4},
                                        "p6e-gb200.36xlarge": {"u-p6e-gb200x36": 9, "u-p6e-gb200x72": 18}}
    for spec in CATALOG:
        if spec.ultraserver_size > 1 or spec.capacity_block_only:  # UltraServer types are sold as UltraServer blocks
            assert spec.ultraserver_size in blocks.ultraserver_types[spec.instance_type].values()
    assert not blocks.sold_for("trn1.2xlarge") and not blocks.sold_for("inf2.48xlarge")
    assert blocks.sold_for("trn2.3xlarge") and blocks.sold_for("trn2u.48xlarge")


def test_capacity_block_size_limit_is_botocores() -> None:
    import botocore.session

    from neuronfleet.facts.catalog import capacity_blocks

    ec2 = botocore.session.get_session().get_service_model("ec2")
    offerings = ec2.operation_model("DescribeCapacityBlockOfferings").input_shape.members
    assert "Each Capacity Block can have up to 64 instances" in offerings["InstanceCount"].documentation
    assert capacity_blocks().max_instances_per_block == 64
    # UltraServer blocks are asked for by UltraserverType/UltraserverCount; botocore gives the type no enum
    assert {"UltraserverType", "UltraserverCount"} <= set(offerings)
    assert not offerings["UltraserverType"].enum


def test_capacity_block_data_names_its_sources() -> None:
    raw = json.loads((ROOT / "constructs/neuronfleet/facts/data/capacity_blocks.json").read_text())
    assert date.fromisoformat(raw["read"]) <= date.today()
    assert "moto 5.2.5" in raw["instance_blocks"]["source"] and raw["max_instances_per_block_source"]
    assert all(re.search(r"@ [0-9a-f]{40}", v["source"]) for v in raw["ultraserver_blocks"].values())


def _cfn_lint_instance_types() -> set[str]:
    import cfnlint

    path = Path(cfnlint.__file__).parent / "data" / "schemas" / "extensions" / "aws_ec2_instance" / \
        "instancetype_enum.json"
    return {t for region in json.loads(path.read_text()).values() if isinstance(region, dict)
            for t in region.get("enum", ())}


def test_types_cfn_lint_lacks_are_exactly_the_ones_aws_offers_that_its_lists_miss() -> None:
    """CFN_LINT_LAGS excuses E3628 on a launch template: each type in it must be one AWS's own data offers On-Demand
    in some region and that no region of cfn-lint's lists has; a cfn-lint upgrade that adds one fails this."""
    from neuronfleet.facts.catalog import CFN_LINT_LAGS

    listed = _cfn_lint_instance_types()
    assert len(listed) > 500  # the lists were read, not an empty file
    for t in CFN_LINT_LAGS:
        assert "on-demand" in aws_types()[t]["SupportedUsageClasses"] and CATALOG.regions(t), t
        assert t not in listed, f"cfn-lint now lists {t}: drop it from CFN_LINT_LAGS"
    # and every other catalog type cfn-lint lacks is sold only through Capacity Blocks (its own exception)
    assert {s.instance_type for s in CATALOG if s.instance_type not in listed and not s.capacity_block_only} \
        == set(CFN_LINT_LAGS)
