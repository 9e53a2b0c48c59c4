"""Fleet files: the committed ones load; each kind of mistake gets a message naming field, value, allowed."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from neuronfleet import Fleet, FleetConfigError, load_fleet, parse_fleet
from tests.conftest import ROOT, fleet_file

BASE: dict[str, Any] = {
    "name": "nf-test",
    "phase": "pilot",
    "region": "us-east-2",
    "network": {"availability_zones": ["us-east-2a", "us-east-2b"], "training_az": "us-east-2a"},
    "training_clusters": [{"name": "train", "instance_type": "trn2.48xlarge", "count": 2}],
    "endpoints": [{"name": "chat", "instance_type": "ml.inf2.24xlarge", "hf_model_id": "org/model",
                   "tensor_parallel_degree": 12, "min_instances": 1, "max_instances": 2,
                   "allow_non_cached_model": False}],
}


def with_changes(**paths: Any) -> dict[str, Any]:
    """BASE with dotted paths set (``training_clusters.0.count=6``); a value of ... deletes the key."""
    doc = copy.deepcopy(BASE)
    for dotted, value in paths.items():
        *parents, last = dotted.split("__")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
        if value is ...:
            del node[last]
        elif last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value
    return doc


def problems(doc: Any) -> list[str]:
    with pytest.raises(FleetConfigError) as info:
        parse_fleet(doc, source="test.yaml")
    assert str(info.value).startswith("test.yaml: ")
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize("name", ["dev", "pilot", "prod"])
def test_committed_fleet_files_load(name: str) -> None:
    fleet = fleet_file(name)
    assert fleet.name == f"nf-{name}"
    assert fleet.phase == {"dev": "evaluation", "pilot": "pilot", "prod": "production"}[name]
    assert fleet.region == "us-east-2"


def test_prod_is_the_full_example() -> None:
    prod = fleet_file("prod")
    ultra = prod.training_clusters[0]
    assert (ultra.instance_type, ultra.count, ultra.capacity.type) == ("trn2u.48xlarge", 8, "capacity-block")
    assert ultra.capacity.resource_group_arn
    assert any(e.instance_type.startswith("ml.inf2.") and e.gpu_variant for e in prod.endpoints)
    assert prod.fallback.enabled and prod.cost_monitors.enabled


def test_fleet_is_immutable() -> None:
    fleet = parse_fleet(BASE)
    with pytest.raises(ValidationError):
        fleet.name = "other"  # type: ignore[misc]
    assert isinstance(fleet.training_clusters, tuple)


def test_the_base_document_is_valid() -> None:
    fleet = parse_fleet(BASE)
    assert isinstance(fleet, Fleet)
    assert fleet.training_clusters[0].capacity.type == "on-demand"


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"colour": "blue"}, "colour: got 'blue'; allowed: no key 'colour' here; known keys: name, phase"),
        ({"network__vpc_id": "vpc-1"}, "network.vpc_id: got 'vpc-1'; allowed: no key 'vpc_id' here; "
                                             "known keys: availability_zones, training_az, cidr"),
        ({"training_clusters__0__count": "four"}, "training_clusters[0].count: got 'four'; allowed: a whole number"),
        ({"training_clusters__0__count": 0}, "training_clusters[0].count: got 0; allowed: a number >= 1"),
        ({"network__interface_endpoints": "maybe"}, "network.interface_endpoints: got 'maybe'; allowed: true or false"),
        ({"phase": "prodution"}, "phase: got 'prodution'; allowed: 'evaluation', 'pilot' or 'production'"),
        ({"name": "Bad_Name"}, "name: got 'Bad_Name'; allowed: lower-case letters, digits and dashes"),
        ({"region": ...}, "region: got nothing (the field is required); allowed: an AWS region, e.g. "
         "us-east-1, us-east-2, us-west-2 (46 known, from botocore's endpoints data)"),
        ({"training_clusters": "train"}, "training_clusters: got 'train'; allowed: a list"),
        ({"training_clusters__0__instance_type": "trn3.48xlarge"},
         "training_clusters[0].instance_type: got 'trn3.48xlarge'; allowed: 'trn1.2xlarge', 'trn1.32xlarge', "
         "'trn1n.32xlarge', 'trn2.3xlarge', 'trn2.48xlarge' or 'trn2u.48xlarge'"),
        ({"training_clusters__0__instance_type": "p5.48xlarge"},
         "training_clusters[0].instance_type: got 'p5.48xlarge'; allowed: 'trn1.2xlarge'"),
        ({"training_clusters__0__instance_type": "trn2u.48xlarge", "training_clusters__0__count": 6,
          "training_clusters__0__allow_unlisted_region": True},
         "training_clusters[0].count: got 6; allowed: a multiple of 4 (trn2u.48xlarge comes in whole "
         "UltraServers of 4 instances), e.g. 4 or 8"),
        ({"training_clusters__0__instance_type": "trn2u.48xlarge", "training_clusters__0__count": 4,
          "training_clusters__0__capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}},
         "training_clusters[0].instance_type: got 'trn2u.48xlarge'; allowed: a type offered in us-east-2 "
         "(AWS's offerings list it in: ap-south-2); trn2u.48xlarge is sold only through Capacity Blocks"),
        ({"region": "eu-west-1", "network__availability_zones": ["eu-west-1a", "eu-west-1b"],
          "network__training_az": "eu-west-1a"},
         "training_clusters[0].instance_type: got 'trn2.48xlarge'; allowed: a type offered in eu-west-1 "
         "(AWS's offerings list it in: ap-south-2, us-east-2)"),
        ({"network__training_az": "us-east-2c"},
         "network.training_az: got 'us-east-2c'; allowed: one of availability_zones: us-east-2a, us-east-2b"),
        ({"network__availability_zones": ["us-west-2a", "us-east-2a"]},
         "network.availability_zones[0]: got 'us-west-2a'; allowed: an availability zone of "
         "us-east-2: us-east-2a, us-east-2b, us-east-2c"),
        ({"network__availability_zones": ["us-east-2a"]},
         "network.availability_zones: got ['us-east-2a']; allowed: at least 2 entries"),
        ({"network__cidr": "10.0.0.0/8"}, "network.cidr: got '10.0.0.0/8'; allowed: an IPv4 CIDR from /16 to /20"),
        ({"network__flow_logs_retention_days": 10}, "network.flow_logs_retention_days: got 10; allowed: a CloudWatch"),
        ({"training_clusters__0__capacity": {"type": "capacity-block"}},
         "training_clusters[0].capacity.reservation_id: got None; allowed: a reservation id (cr-...) or "
         "resource_group_arn: a capacity-block must be targeted"),
        ({"training_clusters__0__capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0",
                                             "placement_group": True}},
         "training_clusters[0].capacity.placement_group: got True; allowed: false or unset"),
        ({"training_clusters__0__capacity": {"type": "on-demand", "reservation_id": "cr-0123456789abcdef0"}},
         "training_clusters[0].capacity.type: got 'on-demand'; allowed: 'odcr' or 'capacity-block'"),
        ({"training_clusters__0__capacity": {"type": "odcr", "reservation_id": "r-123"}},
         "training_clusters[0].capacity.reservation_id: got 'r-123'; allowed: a capacity reservation id: 'cr-' and 17"),
        ({"training_clusters__0__ami": {"ssm_parameter": "aws/service/x"}},
         "training_clusters[0].ami.ssm_parameter: got 'aws/service/x'; allowed: an SSM parameter name"),
        ({"training_clusters__0__ami": {"ssm_parameter": "/a/b", "ami_id": "ami-0123456789abcdef0"}},
         "training_clusters[0].ami: got {'ssm_parameter': '/a/b', 'ami_id': 'ami-0123456789abcdef0'}; "
         "allowed: either ssm_parameter or ami_id, not both"),
        ({"training_clusters__0__capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0",
                                             "availability_zone": "us-east-2c"}},
         "training_clusters[0].capacity.availability_zone: got 'us-east-2c'; allowed: one of "
         "network.availability_zones (us-east-2a, us-east-2b): the cluster's training subnet is the network's subnet "
         "in the reservation's AZ"),
        ({"training_clusters__0__fsx_storage_gib": 3600},
         "training_clusters[0].fsx_storage_gib: got 3600; allowed: 1200 or a multiple of 2400"),
        ({"training_clusters__0__fsx_throughput_mib_per_tib": 200},
         "training_clusters[0].fsx_throughput_mib_per_tib: got 200; allowed: 125, 250, 500 or 1000"),
        ({"endpoints__0__instance_type": "ml.inf3.xlarge"},
         "endpoints[0].instance_type: got 'ml.inf3.xlarge'; allowed: a SageMaker ProductionVariantInstanceType"),
        ({"endpoints__0__instance_type": "ml.m5.xlarge"},
         "endpoints[0].instance_type: got 'ml.m5.xlarge'; allowed: an Inferentia2 or Trainium type: ml.inf2.xlarge"),
        ({"endpoints__0__instance_type": "ml.inf2.xlarge", "endpoints__0__tensor_parallel_degree": 24},
         "endpoints[0].tensor_parallel_degree: got 24; allowed: a divisor of the 2 NeuronCores of ml.inf2.xlarge: 1, 2"),
        ({"endpoints__0__min_instances": 3}, "endpoints[0].min_instances: got 3; allowed: at most max_instances (2)"),
        ({"endpoints__0__model_data_url": "s3://bucket/model.tar.gz"},
         "endpoints[0].model_data_url: got 's3://bucket/model.tar.gz'; allowed: exactly one of"),
        ({"endpoints__0__container": "custom"}, "endpoints[0].image_uri: got None; allowed: an image URI exactly when"),
        ({"endpoints__0__container": "triton"}, "endpoints[0].container: got 'triton'; allowed: 'vllm-neuronx'"),
        ({"training_clusters__0__instance_type": "trn1.2xlarge",
          "training_clusters__0__capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}},
         "training_clusters[0].capacity.type: got 'capacity-block'; allowed: 'on-demand' or 'odcr' for trn1.2xlarge: "
         "EC2 Capacity Blocks for ML are not sold for it; of the training types they are sold for trn1.32xlarge, "
         "trn2.3xlarge, trn2.48xlarge, trn2u.48xlarge"),
        ({"training_clusters__0__count": 65,
          "training_clusters__0__capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}},
         "training_clusters[0].capacity.reservation_id: got 'cr-0123456789abcdef0'; allowed: a resource_group_arn "
         "holding several Capacity Blocks: one instance Capacity Block holds at most 64 instances"),
        ({"fallback": {"enabled": True, "instance_types": ["p5.48xlarge", "h100.big"]}},
         "fallback.instance_types[1]: got 'h100.big'; allowed: 'p5.48xlarge', 'p5en.48xlarge'"),
        ({"prices": {"trn2.48xlarge": {"usd_per_hour": 30, "source": "EDP"}}},
         "prices.trn2.48xlarge.as_of: got nothing (the field is required)"),
        ({"prices": {"x9.huge": {"usd_per_hour": 1, "source": "s", "as_of": "2026-01-01"}}},
         "prices.x9.huge: got 'x9.huge'; allowed: an instance type of the catalog"),
    ],
)
def test_each_mistake_is_named(changes: dict[str, Any], expected: str) -> None:
    found = problems(with_changes(**changes))
    assert any(p.startswith(expected) for p in found), found


def test_every_problem_is_reported_at_once() -> None:
    doc = with_changes(name="Bad", colour="blue", training_clusters__0__count="x",
                       network__training_az="us-east-2c")
    found = problems(doc)
    # a section's own rules run with the structure checks of other sections
    assert [p.split(":")[0] for p in found] == ["name", "network.training_az", "training_clusters[0].count", "colour"]
    # semantic checks run once the structure is right, and all of them are reported together
    found = problems(with_changes(network__training_az="us-east-2c", endpoints__0__min_instances=5,
                                  training_clusters__0__instance_type="trn3.48xlarge"))
    assert len(found) == 3


def test_duplicate_names_are_rejected() -> None:
    doc = copy.deepcopy(BASE)
    doc["training_clusters"].append(dict(doc["training_clusters"][0]))
    assert problems(doc) == ["training_clusters[1].name: got 'train'; allowed: a name not used by another entry"]


def test_unreadable_or_non_mapping_files(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # a short path: a long one is shortened in the message (a worker's tmp_path is longer)
    with pytest.raises(FleetConfigError, match=r"\(file\): got 'missing.yaml'; allowed: a readable file"):
        load_fleet(Path("missing.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(FleetConfigError, match="allowed: valid YAML"):
        load_fleet(bad)
    bad.write_text("- just\n- a list\n")
    with pytest.raises(FleetConfigError, match=r"\(top level\): got \['just', 'a list'\]; allowed: a mapping"):
        load_fleet(bad)


def test_capacity_block_only_type_with_the_flag_is_accepted() -> None:
    fleet = parse_fleet(with_changes(training_clusters__0__instance_type="trn2u.48xlarge",
                                     training_clusters__0__count=8,
                                     training_clusters__0__allow_unlisted_region=True,
                                     training_clusters__0__capacity={"type": "capacity-block", "resource_group_arn":
                                                                     "arn:aws:resource-groups:us-east-2:111111111111:"
                                                                     "group/blocks"}))
    assert fleet.training_clusters[0].count == 8


def test_price_overrides_reach_the_fleet_catalog() -> None:
    fleet = parse_fleet(with_changes(prices={"trn2.48xlarge": {"usd_per_hour": 30, "source": "EDP 2026",
                                                                 "as_of": "2026-10-01"}}))
    price = fleet.catalog.get("trn2.48xlarge").price
    assert (price.usd_per_hour, price.source, price.as_of.isoformat()) == (30, "EDP 2026", "2026-10-01")


def test_committed_files_have_no_unknown_keys() -> None:
    for path in sorted((ROOT / "config").glob("*.yaml")):
        load_fleet(path)


def test_capacity_blocks_where_ec2_sells_them_are_accepted() -> None:
    """trn2.3xlarge and trn2.48xlarge are sold as instance Capacity Blocks; 64 instances fit one block's id, more fit a
    resource group of blocks."""
    block = {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}
    group = {"type": "capacity-block", "resource_group_arn": "arn:aws:resource-groups:us-east-2:111111111111:group/b"}
    assert parse_fleet(with_changes(training_clusters__0__count=64, training_clusters__0__capacity=block))
    assert parse_fleet(with_changes(training_clusters__0__count=65, training_clusters__0__capacity=group))
    small = parse_fleet(with_changes(region="ap-south-2", network__availability_zones=["ap-south-2a", "ap-south-2b"],
                                     network__training_az="ap-south-2a", training_clusters__0__instance_type="trn2.3xlarge",
                                     training_clusters__0__capacity=block, endpoints=[]))
    assert small.training_clusters[0].logical_cores == 4


def test_isolated_subnets_take_only_training_images_their_ecr_endpoints_reach() -> None:
    """With no NAT gateway, a training image must come from the region's private ECR (or an AWS DLC): the default
    for trn2 (ECR Public) and an image in another region's ECR are refused; the region's own ECR is accepted."""
    isolated = {"network__nat_gateways": 0, "network__interface_endpoints": True, "endpoints": []}
    found = problems(with_changes(**isolated))
    assert len(found) == 1 and found[0].startswith(
        "training_clusters[0].training_image: got None; allowed: an image in an ECR repository of us-east-2 (or an "
        "AWS DLC) when network.nat_gateways is 0: public.ecr.aws/neuron/")
    assert "(the default for trn2.48xlarge)" in found[0] and "give the network a NAT gateway" in found[0]
    other_region = "111111111111.dkr.ecr.us-west-2.amazonaws.com/team/train:torchneuron-2.14-sdk2.33.0"
    (problem,) = problems(with_changes(**isolated, training_clusters__0__training_image=other_region,
                                       training_clusters__0__training_image_sdk="2.33.0"))
    assert problem.startswith("training_clusters[0].training_image: got '111111111111.dkr.ecr.us-west-2.")
    assert "allowed: an image in an ECR repository of us-east-2" in problem
    own = other_region.replace("us-west-2", "us-east-2")
    fleet = parse_fleet(with_changes(**isolated, training_clusters__0__training_image=own,
                                     training_clusters__0__training_image_sdk="2.33.0"))
    assert fleet.training_clusters[0].image == own
