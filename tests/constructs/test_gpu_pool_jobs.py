"""The GPU pool's jobs (issue 36, findings 3 and 7): the GPU-queue move submits only the fleet's GPU job definitions,
bounded in IAM by their revision ARNs (the Service Authorization Reference's rows for batch:SubmitJob, pinned from
tests/data/iam/), and those job definitions cannot reach the instance role: multi-node parallel, which AWS Batch runs
in awsvpc mode, on hosts whose ECS agent blocks IMDS for awsvpc tasks (with IMDSv2's hop limit 1)."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import aws_cdk as cdk
import botocore.session
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from neuronfleet import Capacity, FleetAlerts, GpuPool, GpuPoolSettings, TrainiumCluster, TrainiumClusterSettings
from neuronfleet.capacity.lifecycle import CapacityLifecycle
from neuronfleet.core.problems import InvalidSettings
from neuronfleet.core.rules import check_resource_name
from neuronfleet.fallback import gpu_pool
from neuronfleet.settings.capacity import CapacityPolicySettings
from neuronfleet.training.batch import ECS_AGENT_CONFIG, IMDS_HOP_LIMIT
from tests.conftest import ENV, EXAMPLE_FLEETS, AzStack, fleet_file, network, new_app, properties
from tests.constructs import iam_view
from tests.sar_rows import IAM_DATA, action_row, cells

ROWS = (IAM_DATA / "list_awsbatch-submit-job-rows.html").read_text()
IMAGE = "public.ecr.aws/example/finetune-cuda:2026.11"
REPOSITORY = "arn:aws:ecr:us-east-2:111111111111:repository/finetune-cuda"


# ------------------------------------------------------------------------ the facts, pinned to their sources


def test_submit_jobs_resource_types_and_condition_keys_are_the_references():
    assert action_row(ROWS, "awsbatch-SubmitJob") == (gpu_pool.SUBMIT_JOB.resource_types,
                                                      gpu_pool.SUBMIT_JOB.condition_keys, ())


def test_a_job_definition_has_no_condition_key_and_only_its_revision_a_tag():
    """No condition can bound a job definition named without revision; a revision's tags can (but any holder of
    batch:TagResource sets them): the kit names the revisions by ARN."""
    (name, arn, keys) = cells(ROWS, "awsbatch-job-definition")[:3]
    assert name == ["job-definition"] and tuple(keys) == gpu_pool.JOB_DEFINITION_KEYS == ()
    assert "".join(arn[0].split()) == "arn:${Partition}:batch:${Region}:${Account}:job-definition/${JobDefinitionName}"
    (name, arn, keys) = cells(ROWS, "awsbatch-job-definition-revision")[:3]
    assert name == ["job-definition-revision"] and "".join(arn[0].split()) == gpu_pool.JOB_DEFINITION_REVISION_ARN
    assert tuple(keys) == gpu_pool.DEFINITION_REVISION_KEYS
    assert cells(ROWS, "awsbatch-aws_ResourceTag___TagKey_")[1] == ["Filters access by the tags associated with the "
                                                                    "resource"]


def test_the_job_resource_type_the_reference_calls_required_is_named():
    """The reference marks ``job*`` required for SubmitJob; Batch's user guide asks for the queue and the job
    definition only. The kit follows the guide and says so (docs/checks.md: the one SubmitJob on a real account)."""
    assert "job*" in gpu_pool.SUBMIT_JOB.resource_types
    (name, arn, _keys) = cells(ROWS, "awsbatch-job")[:3]
    assert name == ["job"] and "".join(arn[0].split()) == "arn:${Partition}:batch:${Region}:${Account}:job/${JobId}"


def test_a_job_definition_name_is_what_batch_takes():
    doc = botocore.session.get_session().get_service_model("batch").operation_model("RegisterJobDefinition") \
        .input_shape.members["jobDefinitionName"].documentation
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", doc))
    assert "It can be up to 128 letters long. It can contain uppercase and lowercase letters, numbers, hyphens (-), " \
           "and underscores (_)." in text
    assert check_resource_name("batch-job-definition", "a" * 128)
    for bad in ("a" * 129, "finetune.cuda", ""):
        with pytest.raises(ValueError, match="batch-job-definition name of at most 128"):
            check_resource_name("batch-job-definition", bad)


def test_the_mode_batch_runs_multinode_jobs_in_is_the_one_the_agent_keeps_from_imds():
    assert gpu_pool.JOB_NETWORK_MODES == {"container": "host", "multinode": "awsvpc"}
    assert gpu_pool.IMDS_BLOCKED_IN == "awsvpc" and ECS_AGENT_CONFIG == {"ECS_AWSVPC_BLOCK_IMDS": "true"}
    assert IMDS_HOP_LIMIT == 1


# ------------------------------------------------------------------------ one pool, one lifecycle


def _stack(*, definitions: int) -> tuple[cdk.Stack, GpuPool, CapacityLifecycle]:
    app = new_app()   # cdk-nag's AwsSolutions: every finding acknowledged with a reason, or synth fails
    stack = AzStack(app, "Jobs", env=ENV)
    net = network(stack)
    alerts = FleetAlerts(stack, "Alerts", emails=["ml-platform@example.com"])
    cluster = TrainiumCluster(stack, "Pretrain", vpc=net.vpc, subnet=net.training_subnet,
                              settings=TrainiumClusterSettings(instance_type="trn2.48xlarge", count=2,
                                                               capacity=Capacity.capacity_block(
                                                                   reservation_id="cr-0123456789abcdef0",
                                                                   availability_zone="us-east-2b")))
    pool = GpuPool(stack, "Gpu", vpc=net.vpc, vpc_subnets=ec2.SubnetSelection(subnets=net.vpc.private_subnets[:1]),
                   settings=GpuPoolSettings(instance_types=("p5.48xlarge", "g6e.48xlarge"), max_vcpus=384))
    repository = ecr.Repository.from_repository_arn(stack, "Images", REPOSITORY)
    for i in range(definitions):
        pool.add_job_definition(f"Finetune{i}", image=ecs.ContainerImage.from_ecr_repository(repository, "2026.11"),
                                job_definition_name=f"finetune-cuda-{i}", nodes=2, command=["python", "train.py"])
    lifecycle = CapacityLifecycle(stack, "Lifecycle", fleet="nf-test", clusters=[cluster], topic=alerts.topic,
                                  pool=pool, policy=CapacityPolicySettings(
                                      max_upfront_fee_usd=Decimal(20000), max_usd_per_instance_hour=Decimal(45),
                                      fallback_after_minutes=60))
    return stack, pool, lifecycle


@pytest.fixture(scope="module")
def built() -> tuple[cdk.Stack, GpuPool, CapacityLifecycle, Template]:
    stack, pool, lifecycle = _stack(definitions=2)
    return stack, pool, lifecycle, Template.from_stack(stack)


def _function(t: Template) -> dict[str, Any]:
    (fn,) = [p for p in properties(t, "AWS::Lambda::Function").values()
             if p.get("Handler") == "capacity_lifecycle.handler.handler"]
    return fn


def _role_statements(t: Template) -> list[dict[str, Any]]:
    return iam_view.statements(t, _function(t)["Role"]["Fn::GetAtt"][0])


def test_the_lifecycle_may_submit_the_fleets_gpu_definitions_by_revision_arn_and_no_other(built):
    stack, pool, _lifecycle, t = built
    (submit,) = iam_view.allows(_role_statements(t), "batch:SubmitJob")
    refs = [{"Ref": stack.get_logical_id(d.node.default_child)} for d in pool.job_definitions.values()]
    assert "Condition" not in submit
    assert submit["Resource"] == [stack.resolve(pool.job_queue.job_queue_arn), *refs]   # Ref: the revision ARN
    assert "job-definition/*" not in json.dumps(submit)
    env = _function(t)["Environment"]["Variables"]
    assert json.dumps(env["GPU_JOB_DEFINITIONS"]).count('"Ref"') == 2   # the function knows the same two


def test_the_fleets_gpu_definitions_run_in_awsvpc_with_the_pools_job_role(built):
    stack, pool, _lifecycle, t = built
    definitions = properties(t, "AWS::Batch::JobDefinition")
    ours = {k: d for k, d in definitions.items() if d.get("JobDefinitionName", "").startswith("finetune-cuda-")}
    assert len(ours) == 2
    job_role = stack.resolve(pool.job_role.role_arn)
    for d in ours.values():
        assert gpu_pool.JOB_NETWORK_MODES[d["Type"]] == gpu_pool.IMDS_BLOCKED_IN   # multinode: awsvpc
        (node_range,) = d["NodeProperties"]["NodeRangeProperties"]
        assert d["NodeProperties"]["NumNodes"] == 2 and node_range["TargetNodes"] == "0:1"
        container = node_range["Container"]
        assert container["JobRoleArn"] == job_role and container["InstanceType"] == "p5.48xlarge"
        assert {"Type": "GPU", "Value": "8"} in container["ResourceRequirements"]
        assert "NetworkConfiguration" not in container   # no mode to choose: Batch's for multinode is awsvpc
        # the image is pulled with the definition's execution role, from its own repository only
        pulls = iam_view.allows(iam_view.statements(t, container["ExecutionRoleArn"]["Fn::GetAtt"][0]),
                                "ecr:BatchGetImage")
        assert [p["Resource"] for p in pulls] == [REPOSITORY]
    lts = properties(t, "AWS::EC2::LaunchTemplate")
    pool_lts = [lt for lt in lts.values() if lt["LaunchTemplateData"]["InstanceType"] in ("p5.48xlarge", "g6e.48xlarge")]
    assert len(pool_lts) == 2
    for lt in pool_lts:
        data = lt["LaunchTemplateData"]
        assert data["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": IMDS_HOP_LIMIT}
        assert "echo ECS_AWSVPC_BLOCK_IMDS=true >> /etc/ecs/ecs.config" in json.dumps(data["UserData"])


def test_a_lifecycle_with_no_gpu_definition_may_submit_nothing():
    stack, _pool, _lifecycle = _stack(definitions=0)
    t = Template.from_stack(stack)
    acts = iam_view.actions(_role_statements(t))
    assert "batch:SubmitJob" not in acts and "batch:CancelJob" not in acts
    assert "GPU_JOB_DEFINITIONS" not in _function(t)["Environment"]["Variables"]


def test_bad_job_definitions_and_late_ones_are_refused():
    _built, pool, _lifecycle = _stack(definitions=1)
    image = ecs.ContainerImage.from_registry(IMAGE)
    with pytest.raises(ValueError, match=r"^add_job_definition\('Late'\): got a job definition after .*Lifecycle.* "
                                         r"was granted SubmitJob"):
        pool.add_job_definition("Late", image=image, job_definition_name="late")
    stack = AzStack(cdk.App(), "Bad", env=ENV)
    fresh = GpuPool(stack, "Gpu", vpc=network(stack).vpc, settings=GpuPoolSettings(instance_types=("g6e.48xlarge",)))
    role = iam.Role(stack, "R", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    with pytest.raises(ValueError, match=r"^job_definitions: got none \(the pool has no job definition"):
        fresh.grant_submit_jobs(role)
    with pytest.raises(ValueError, match=r"^job_definition_name: got 'a.b'; allowed: a batch-job-definition name of "
                                         r"at most 128"):
        fresh.add_job_definition("A", image=image, job_definition_name="a.b")
    with pytest.raises(ValueError, match=r"^nodes: got 0; allowed: a whole number, at least 1"):
        fresh.add_job_definition("A", image=image, job_definition_name="a", nodes=0)
    with pytest.raises(ValueError, match=r"^instance_type: got 'p5.48xlarge'; allowed: one of the pool's types "
                                         r"\(g6e.48xlarge\)"):
        fresh.add_job_definition("A", image=image, job_definition_name="a", instance_type="p5.48xlarge")
    fresh.add_job_definition("A", image=image, job_definition_name="a")
    with pytest.raises(ValueError, match=r"^job_definition_name: got 'a' again"):
        fresh.add_job_definition("B", image=image, job_definition_name="a")


# ------------------------------------------------------------------------ every example fleet with a GPU pool

POOLED = [name for name in EXAMPLE_FLEETS if fleet_file(name).fallback.enabled]


def test_some_example_fleets_have_a_gpu_pool():
    assert POOLED == ["pilot", "prod"]


def _allows(template: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for r in template.get("Resources", {}).values():
        if r["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::Role"):
            docs = [r["Properties"].get("PolicyDocument")] + [p["PolicyDocument"] for p in
                                                             r["Properties"].get("Policies", [])]
            out += [s for d in docs if d for s in d["Statement"] if s["Effect"] == "Allow"]
    return out


@pytest.mark.parametrize("name", POOLED)
def test_no_example_fleet_may_submit_any_job_definition_and_its_gpu_jobs_cannot_reach_imds(synth_fleet, name):
    fleet = synth_fleet(name)
    for short in fleet.stacks:
        for s in _allows(fleet.template_json(short)):
            if iam_view.allows([s], "batch:SubmitJob"):
                assert "Condition" in s or "job-definition/*" not in json.dumps(s["Resource"]), (short, s)
    pool = fleet.stacks["fallback"].pool
    template = fleet.template("fallback")
    definitions = properties(template, "AWS::Batch::JobDefinition")
    assert len(definitions) == len(pool.job_definitions)
    assert all(gpu_pool.JOB_NETWORK_MODES[d["Type"]] == gpu_pool.IMDS_BLOCKED_IN for d in definitions.values())
    for lt in properties(template, "AWS::EC2::LaunchTemplate").values():
        data = lt["LaunchTemplateData"]
        assert data["MetadataOptions"]["HttpPutResponseHopLimit"] == IMDS_HOP_LIMIT
        assert "echo ECS_AWSVPC_BLOCK_IMDS=true >> /etc/ecs/ecs.config" in json.dumps(data["UserData"])


def test_prods_fleet_file_gives_its_pool_the_job_definition_a_held_job_moves_to(synth_fleet):
    """config/prod.yaml names one GPU job definition (fallback.job_definitions): the pool registers it (multi-node,
    its own ECR repository the only one its execution role may pull from), and the lifecycle may submit it and
    nothing else, so prod's fallback_after_minutes moves a held finetune job tagged with it."""
    fleet = synth_fleet("prod")
    pool = fleet.stacks["fallback"].pool
    assert list(pool.job_definitions) == ["finetune-cuda"]
    (definition,) = properties(fleet.template("fallback"), "AWS::Batch::JobDefinition").values()
    assert definition["JobDefinitionName"] == "finetune-cuda" and definition["Type"] == "multinode"
    text = json.dumps(fleet.template_json("fallback"))
    assert "333333333333.dkr.ecr.us-east-2." in text and "finetune-cuda:2026-11-28" in text
    pulls = [s for s in _allows(fleet.template_json("fallback")) if iam_view.allows([s], "ecr:BatchGetImage")]
    assert pulls and all(json.dumps(s["Resource"]).count("repository/finetune-cuda") == 1 for s in pulls), pulls
    submits = [s for short in fleet.stacks for s in _allows(fleet.template_json(short))
               if iam_view.allows([s], "batch:SubmitJob")]
    assert len(submits) == 1 and len(submits[0]["Resource"]) == 2  # the GPU queue and finetune-cuda's revision


def test_a_fleet_files_gpu_job_definitions_are_checked_with_the_field_named():
    with pytest.raises(InvalidSettings) as raised:
        GpuPoolSettings(instance_types=["p5.48xlarge"], job_definitions=[
            {"name": "cuda", "image": "public.ecr.aws/team/cuda:1", "instance_type": "g6e.48xlarge"},
            {"name": "cuda", "image": "public.ecr.aws/team/cuda:1"}])
    assert [(p.path, p.value) for p in raised.value.problems] == [
        ("job_definitions[0].instance_type", "g6e.48xlarge"), ("job_definitions[1].name", "cuda")]
    with pytest.raises(InvalidSettings, match=r"job_definitions\[0\].image: got 'public.ecr.aws/team/cuda'; "
                                              "allowed: an image with a tag or a digest"):
        GpuPoolSettings(job_definitions=[{"name": "cuda", "image": "public.ecr.aws/team/cuda"}])
