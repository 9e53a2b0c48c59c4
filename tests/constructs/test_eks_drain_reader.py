"""An EKS training pod hears its Capacity Block node group's drain: before issue 40 nothing on EKS read the flag (the
training Job ran launch.py with no NEURONFLEET_DRAIN_FLAG, so its relay was off). The Job of a Capacity Block node
group now names the flag the lifecycle writes for that node group, at the path FSx for Lustre imports it to (the same
rule as the Batch path's, applied to the same association), and mounts the flags' directory read-only; other node
groups get neither."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from neuronfleet import Capacity
from neuronfleet.eks import manifests
from neuronfleet.eks.drain import drain_reader, flag_path
from neuronfleet.node.launch import DRAIN_FLAG_ENV, drain_settings
from neuronfleet.settings.eks import NeuronNodegroupSettings
from neuronfleet.training.drain import drain_flag_path
from neuronfleet.training.lustre import lustre_storage

ULTRA = NeuronNodegroupSettings(
    name="ultra", instance_type="trn2u.48xlarge", count=4, allow_unlisted_region=True, device_plugin=False, dra=True,
    capacity=Capacity.capacity_block(resource_group_arn="arn:aws:resource-groups:us-east-2:444444444444:group/b",
                                     availability_zone="us-east-2a"))
TUNE = NeuronNodegroupSettings(name="tune", instance_type="trn1.32xlarge", count=2, capacity=Capacity.odcr(
    reservation_id="cr-0a1b2c3d4e5f60721", availability_zone="us-east-2b"))
SERVE = NeuronNodegroupSettings(name="train", instance_type="trn1.32xlarge", count=2)


def _container(group: NeuronNodegroupSettings) -> dict[str, Any]:
    job = next(m for m in manifests.training_job(group) if m["kind"] == "Job")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return dict(container)


def test_a_capacity_block_node_groups_job_watches_its_flag_read_only():
    container = _container(ULTRA)
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env[DRAIN_FLAG_ENV] == "/fsx/data/neuronfleet/drain/ultra.json"
    mounts = container["volumeMounts"]
    assert {"name": "fsx", "mountPath": "/fsx/data/neuronfleet/drain", "subPath": "data/neuronfleet/drain",
            "readOnly": True} in mounts
    assert {"name": "fsx", "mountPath": "/fsx"} in mounts   # the rest of /fsx stays writable (checkpoints)
    # the launcher's relay turns on with it (the Batch path's relay, unchanged)
    settings = drain_settings(env)
    assert settings is not None and settings.flag == Path("/fsx/data/neuronfleet/drain/ultra.json")


@pytest.mark.parametrize("group", [TUNE, SERVE], ids=["odcr", "on-demand"])
def test_no_flag_where_the_lifecycle_writes_none(group):
    container = _container(group)
    assert DRAIN_FLAG_ENV not in {e["name"] for e in container["env"]}
    assert [m["mountPath"] for m in container["volumeMounts"]] == ["/fsx", "/opt/neuronfleet", "/dev/shm"]
    assert drain_reader(group, volume="fsx") == ([], [])


def test_the_path_is_where_the_stacks_fsx_association_imports_the_flag():
    """The EKS stack's storage is lustre_storage, whose association the Batch path's rule reads (training.drain):
    the two agree on every node group's flag."""
    stack = cdk.Stack(cdk.App(), "Storage")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=1, nat_gateways=0, subnet_configuration=[
        ec2.SubnetConfiguration(name="private", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)])
    storage = lustre_storage(Construct(stack, "S"), vpc=vpc, subnet=vpc.isolated_subnets[0],
                             clients=ec2.SecurityGroup(stack, "Clients", vpc=vpc), storage_gib=1200,
                             throughput_mib_per_tib=125, backup_retention_days=0,
                             removal_policy=cdk.RemovalPolicy.DESTROY)
    for name in ("ultra", "pretrain"):
        assert flag_path(name) == drain_flag_path(storage.data_repository, name)
