"""The job definition names the cluster's drain flag (NEURONFLEET_DRAIN_FLAG) where FSx imports what the lifecycle
function writes, and only when the cluster's data repository association brings it there."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_fsx as fsx
from aws_cdk.assertions import Template

from neuronfleet import Capacity, CapacityLifecycle, FleetAlerts, TrainiumCluster, TrainiumClusterSettings
from neuronfleet.settings.capacity import CapacityPolicySettings
from neuronfleet.training import cluster as cluster_module
from neuronfleet.training import drain
from neuronfleet_contract.capacity_lifecycle import drain_key
from tests.conftest import ENV, AzStack, network

GROUP = "arn:aws:resource-groups:us-east-2:111111111111:group/blocks"
SETTINGS = TrainiumClusterSettings(instance_type="trn2.48xlarge", count=2, capacity=Capacity.capacity_block(
    resource_group_arn=GROUP, availability_zone="us-east-2b"))
POLICY = CapacityPolicySettings(max_upfront_fee_usd=Decimal(20000), max_usd_per_instance_hour=Decimal(45))


def _job_environment(t: Template) -> dict[str, str]:
    (jd,) = t.find_resources("AWS::Batch::JobDefinition").values()
    (rng,) = jd["Properties"]["NodeProperties"]["NodeRangeProperties"]
    return {e["Name"]: e["Value"] for e in rng["Container"]["Environment"]}


def _stack(name: str) -> tuple[AzStack, Any, FleetAlerts]:
    stack = AzStack(cdk.App(), name, env=ENV)
    return stack, network(stack), FleetAlerts(stack, "Alerts", emails=["ml-platform@example.com"])


def test_the_flag_path_is_the_one_the_lifecycle_writes_for_a_cluster_it_names_by_construct_id() -> None:
    stack, net, alerts = _stack("Drain")
    c = TrainiumCluster(stack, "Pretrain", vpc=net.vpc, subnet=net.training_subnet, settings=SETTINGS)
    lifecycle = CapacityLifecycle(stack, "Lifecycle", fleet="nf-test", clusters=[c], topic=alerts.topic,
                                  policy=POLICY)
    (name,) = lifecycle.cluster_names
    env = _job_environment(Template.from_stack(stack))
    assert env[drain.DRAIN_FLAG_ENV] == f"/fsx/data/{drain_key(name)}" == "/fsx/data/neuronfleet/drain/pretrain.json"


def _container(t: Template) -> dict[str, Any]:
    (jd,) = t.find_resources("AWS::Batch::JobDefinition").values()
    (rng,) = jd["Properties"]["NodeProperties"]["NodeRangeProperties"]
    return dict(rng["Container"])


def test_only_the_lifecycle_writes_a_flag() -> None:
    """Issue 36, finding 8: the job role may not put or delete anything under the flags' prefix (an explicit Deny over
    its Allow on the whole bucket), and the job container sees the flags' directory read-only over its read-write
    /fsx; the lifecycle's own role still writes the cluster's flag."""
    stack, net, alerts = _stack("DrainReadOnly")
    c = TrainiumCluster(stack, "Pretrain", vpc=net.vpc, subnet=net.training_subnet, settings=SETTINGS)
    CapacityLifecycle(stack, "Lifecycle", fleet="nf-test", clusters=[c], topic=alerts.topic, policy=POLICY)
    t = Template.from_stack(stack)
    job_role = stack.get_logical_id(c.job_role.node.default_child)  # type: ignore[arg-type]
    statements = [st for p in t.find_resources("AWS::IAM::Policy").values() if {"Ref": job_role} in p["Properties"][
        "Roles"] for st in p["Properties"]["PolicyDocument"]["Statement"]]
    [deny] = [st for st in statements if st["Effect"] == "Deny"]
    assert sorted(deny["Action"]) == sorted(drain.FLAG_WRITE_ACTIONS) == [
        "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:PutObject"]
    assert json.dumps(deny["Resource"]).endswith(f'"/{drain.FLAG_PREFIX}*"]]}}') and drain.FLAG_PREFIX == (
        "neuronfleet/drain/")
    assert drain_key("pretrain").startswith(drain.FLAG_PREFIX)
    assert any(st["Effect"] == "Allow" and "s3:PutObject" in st["Action"] for st in statements)  # the rest: writable
    container = _container(t)
    volumes = {v["Name"]: v["Host"]["SourcePath"] for v in container["Volumes"]}
    mounts = {m["SourceVolume"]: (m["ContainerPath"], m.get("ReadOnly", False)) for m in container["MountPoints"]}
    assert volumes["drainflags"] == "/fsx/data/neuronfleet/drain"
    assert mounts["drainflags"] == ("/fsx/data/neuronfleet/drain", True) and mounts["fsx"] == ("/fsx", False)
    # the flag the job watches is inside the read-only directory
    assert _job_environment(t)[drain.DRAIN_FLAG_ENV].startswith(mounts["drainflags"][0] + "/")


def test_a_cluster_named_otherwise_by_a_mapping_watches_the_flag_of_that_name() -> None:
    """A cluster's drain_name is given when it is built (TrainiumCluster(drain_name=...)) and never set after: the
    lifecycle's mapping must name it so, and its job watches the flag of that name."""
    stack, net, alerts = _stack("DrainMapped")
    c = TrainiumCluster(stack, "Cluster", vpc=net.vpc, subnet=net.training_subnet, settings=SETTINGS,
                        drain_name="pretrain-a")
    assert c.drain_name == "pretrain-a"
    lifecycle = CapacityLifecycle(stack, "Lifecycle", fleet="nf-test", clusters={"pretrain-a": c},
                                  topic=alerts.topic, policy=POLICY)
    assert lifecycle.cluster_names == ("pretrain-a",) and c.drain_name == "pretrain-a"
    env = _job_environment(Template.from_stack(stack))
    assert env[drain.DRAIN_FLAG_ENV] == "/fsx/data/neuronfleet/drain/pretrain-a.json"


def test_a_mapping_that_names_a_cluster_otherwise_is_refused_and_changes_nothing() -> None:
    stack, net, alerts = _stack("DrainMismatch")
    c = TrainiumCluster(stack, "Cluster", vpc=net.vpc, subnet=net.training_subnet, settings=SETTINGS)
    with pytest.raises(ValueError, match=r"clusters\['pretrain-a'\]: got .*Cluster, built with drain_name 'cluster'; "
                                         r"allowed: a cluster built with drain_name='pretrain-a'"):
        CapacityLifecycle(stack, "Lifecycle", fleet="nf-test", clusters={"pretrain-a": c}, topic=alerts.topic,
                          policy=POLICY)
    assert c.drain_name == "cluster"
    with pytest.raises(AttributeError):
        c.drain_name = "other"  # type: ignore[misc]


def test_no_flag_path_for_a_cluster_whose_association_does_not_import_it(monkeypatch) -> None:
    real = cluster_module.lustre_storage

    def without_import(*args: Any, **kwargs: Any) -> Any:
        storage = real(*args, **kwargs)  # the association exports only: a deleted flag never reaches /fsx
        storage.data_repository.s3 = fsx.CfnDataRepositoryAssociation.S3Property(
            auto_export_policy=fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(
                events=["NEW", "CHANGED", "DELETED"]))
        return storage

    monkeypatch.setattr(cluster_module, "lustre_storage", without_import)
    stack, net, _ = _stack("NoImport")
    TrainiumCluster(stack, "Pretrain", vpc=net.vpc, subnet=net.training_subnet, settings=SETTINGS)
    t = Template.from_stack(stack)
    (link,) = t.find_resources("AWS::FSx::DataRepositoryAssociation").values()
    assert "AutoImportPolicy" not in link["Properties"]["S3"]
    env = _job_environment(t)
    assert drain.DRAIN_FLAG_ENV not in env and env["DATA_DIR"] == "/fsx/data"
    assert "drainflags" not in json.dumps(_container(t)["Volumes"])  # no relay, no flags' mount


def _association(path: str = "/data", repository: str = "s3://bucket/", events: list[str] | None = None
                 ) -> fsx.CfnDataRepositoryAssociation:
    return fsx.CfnDataRepositoryAssociation(
        cdk.Stack(), "Link", file_system_id="fs-1", file_system_path=path, data_repository_path=repository,
        s3=fsx.CfnDataRepositoryAssociation.S3Property(auto_import_policy=(
            fsx.CfnDataRepositoryAssociation.AutoImportPolicyProperty(events=events)) if events is not None else None))


@pytest.mark.parametrize(("association", "path"), [
    (_association(events=["NEW", "CHANGED", "DELETED"]), "/fsx/data/neuronfleet/drain/c.json"),
    (_association(path="/datasets/", events=["DELETED", "NEW", "CHANGED"]), "/fsx/datasets/neuronfleet/drain/c.json"),
    (_association(events=["NEW", "CHANGED"]), None),        # a removed flag (extended block) would never go
    (_association(events=[]), None),
    (_association(events=None), None),
    (_association(repository="s3://bucket/team/", events=["NEW", "CHANGED", "DELETED"]), None),  # not the root
    (None, None),
])
def test_the_association_decides_whether_the_flag_reaches_the_file_system(association, path) -> None:
    assert drain.drain_flag_path(association, "c") == path


# ------------------------------------------------------------------------------ the reference app (its snapshots)

TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "templates"


def _lifecycle_cluster_names(capacity: dict[str, Any]) -> set[str]:
    """The names in the lifecycle functions' CLUSTERS (a JSON string CloudFormation joins around bucket/queue
    references): the names the flags are written under."""
    names: set[str] = set()
    for res in capacity["Resources"].values():
        if res["Type"] != "AWS::Lambda::Function":
            continue
        value = res["Properties"].get("Environment", {}).get("Variables", {}).get("CLUSTERS")
        if value is None:
            continue
        text = "".join(p if isinstance(p, str) else "ref" for p in value["Fn::Join"][1]) \
            if isinstance(value, dict) else value
        names |= {c["name"] for c in json.loads(text)}
    return names


def test_the_prod_fleets_jobs_watch_the_flags_its_lifecycle_writes() -> None:
    """tests/data/templates/prod (kept current by test_template_snapshots): each Batch cluster's job definition names
    /fsx/data/ + drain_key(name) for a name the capacity stack's lifecycle function writes under."""
    prod = TEMPLATES / "prod"
    written = _lifecycle_cluster_names(json.loads((prod / "capacity.json").read_text()))
    watched = {_job_environment(Template.from_json(json.loads(p.read_text())))[drain.DRAIN_FLAG_ENV]
               for p in sorted(prod.glob("train-*.json"))}
    assert written == {"pretrain", "finetune"}
    assert watched == {f"/fsx/data/{drain_key(name)}" for name in written}


def _user_data_bytes(t: dict[str, Any]) -> int:
    """The launch template's user data as EC2 counts it (raw, before its base64): the MIME document (a base64 part
    counted as ceil(n/3)*4), tokens as 80 bytes."""
    (lt,) = [r for r in t["Resources"].values() if r["Type"] == "AWS::EC2::LaunchTemplate"]
    total = 0
    for part in lt["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]["Fn::Join"][1]:
        if isinstance(part, str):
            total += len(part.encode())
        elif "Fn::Base64" in part:
            raw = sum(len(p.encode()) if isinstance(p, str) else 80 for p in part["Fn::Base64"]["Fn::Join"][1])
            total += -(-raw // 3) * 4
        else:  # a reference in the plain-text script part
            total += 80
    return total


def test_the_training_user_data_fits_ec2s_16_kb() -> None:
    """The node scripts are an S3 asset the user data fetches (they were 29 KB of user data at 7026a26)."""
    # EC2 User Guide, "Work with instance user data" (read 2026-11-26): "User data is limited to 16 KB, in raw form,
    # before it is base64-encoded"
    size = _user_data_bytes(json.loads((TEMPLATES / "prod" / "train-pretrain.json").read_text()))
    assert size <= 16 * 1024, size
