"""GPU pool, endpoint failover and capacity alerts, as synthesised from config/prod.yaml."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from neuronfleet import (
    CATALOG,
    EndpointFailover,
    EndpointSettings,
    FleetNetwork,
    GpuPool,
    GpuPoolSettings,
    InvalidSettings,
    NeuronEndpoint,
    StaticAzStack,
)
from neuronfleet.core.functions import RUNTIME, lambda_source_dir
from neuronfleet.settings import GPU_ECS_AMI_PARAMETER
from tests.conftest import ENV, AzStack, network, properties
from tests.constructs import iam_view


@pytest.fixture(scope="module")
def prod(synth_fleet):
    return synth_fleet("prod")


@pytest.fixture(scope="module")
def fallback(prod) -> Template:
    return prod.template("fallback")


def _launch_template_ids(t: Template) -> dict[str, str]:
    """Logical id of each launch template, by the instance type it is for."""
    return {lt["LaunchTemplateData"]["InstanceType"]: k for k, lt in properties(t, "AWS::EC2::LaunchTemplate").items()}


def test_one_compute_environment_holds_every_type_and_the_whole_ceiling(prod, fallback) -> None:
    """The pool's ceiling is the fleet file's max_vcpus: one environment for every type, not one per type."""
    (env,) = properties(fallback, "AWS::Batch::ComputeEnvironment").values()
    res = env["ComputeResources"]
    wanted = list(prod.fleet.fallback.instance_types)
    assert res["InstanceTypes"] == wanted == ["p5.48xlarge", "p5en.48xlarge", "g6e.48xlarge"]
    assert (res["MinvCpus"], res["MaxvCpus"]) == (0, prod.fleet.fallback.max_vcpus) == (0, 1536)
    assert len(res["Subnets"]) == 3
    # the pool's EFA group on the environment (what MNP task interfaces take) and on every launch-template interface
    (efa,) = [k for k, g in properties(fallback, "AWS::EC2::SecurityGroup").items() if "EFA" in g["GroupDescription"]]
    assert res["SecurityGroupIds"] == [{"Fn::GetAtt": [efa, "GroupId"]}]
    assert {json.dumps(i["Groups"]) for lt in properties(fallback, "AWS::EC2::LaunchTemplate").values()
            for i in lt["LaunchTemplateData"]["NetworkInterfaces"]} == {json.dumps(res["SecurityGroupIds"])}
    assert res["AllocationStrategy"] == "BEST_FIT_PROGRESSIVE"
    # each type launches from its own launch template (its own EFA interface list): the first type's is the
    # environment's, the others are overrides that target exactly their type
    lts = _launch_template_ids(fallback)
    spec = res["LaunchTemplate"]
    assert spec["LaunchTemplateId"] == {"Ref": lts["p5.48xlarge"]}
    assert spec["Version"] == {"Fn::GetAtt": [lts["p5.48xlarge"], "LatestVersionNumber"]}
    assert [(o["TargetInstanceTypes"], o["LaunchTemplateId"], o["Version"]) for o in spec["Overrides"]] == [
        ([t], {"Ref": lts[t]}, {"Fn::GetAtt": [lts[t], "LatestVersionNumber"]}) for t in wanted[1:]]
    (queue,) = properties(fallback, "AWS::Batch::JobQueue").values()
    (order,) = queue["ComputeEnvironmentOrder"]
    assert order["ComputeEnvironment"]["Fn::GetAtt"][0] in fallback.find_resources("AWS::Batch::ComputeEnvironment")
    pool = prod.stacks["fallback"].pool
    assert pool.describe()["max_vcpus"] == 1536 and pool.compute_environments == [pool.compute_environment]


def test_redeploys_wait_for_running_jobs(fallback) -> None:
    """A new AMI or launch-template version becomes one infrastructure update that keeps running jobs and waits
    for them (5 days, Batch's maximum), in place (no replacement of the environment)."""
    (env,) = fallback.find_resources("AWS::Batch::ComputeEnvironment").values()
    props = env["Properties"]
    assert props["UpdatePolicy"] == {"TerminateJobsOnUpdate": False, "JobExecutionTimeoutMinutes": 7200}
    assert props["ReplaceComputeEnvironment"] is False
    assert props["ComputeResources"]["AllocationStrategy"] in ("BEST_FIT_PROGRESSIVE",)  # supports infra updates
    for version in [props["ComputeResources"]["LaunchTemplate"]["Version"],
                    *(o["Version"] for o in props["ComputeResources"]["LaunchTemplate"]["Overrides"])]:
        assert version not in ("$Latest", "$Default")


@pytest.mark.parametrize(("instance_type", "efa"), [("p5.48xlarge", 32), ("p5en.48xlarge", 16), ("g6e.48xlarge", 4)])
def test_every_efa_card_attached_on_gpu_types(fallback, instance_type: str, efa: int) -> None:
    (data,) = [lt["LaunchTemplateData"] for lt in properties(fallback, "AWS::EC2::LaunchTemplate").values()
               if lt["LaunchTemplateData"]["InstanceType"] == instance_type]
    interfaces = data["NetworkInterfaces"]
    got = [(i["NetworkCardIndex"], i["DeviceIndex"], i.get("InterfaceType", "interface")) for i in interfaces]
    # EC2 user guide's current layout: ENA primary at 0/0, EFA-only at 0/1 and at device 0 of every other card
    assert got == [(0, 0, "interface"), (0, 1, "efa-only")] + [(c, 0, "efa-only") for c in range(1, efa)]
    assert sum(t != "interface" for *_, t in got) == efa == CATALOG.get(instance_type).efa_interfaces
    assert all("SubnetId" not in i for i in interfaces)  # AWS Batch takes subnets from the compute environment
    assert data["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 1}
    assert data["BlockDeviceMappings"][0]["Ebs"]["Encrypted"] is True
    tags = {(t["Key"], t["Value"]) for spec in data["TagSpecifications"] for t in spec["Tags"]}
    assert ("neuronfleet:accelerator-family", "gpu") in tags and ("neuronfleet:fleet", "nf-prod") in tags


def test_gpu_ami_is_pinned_and_efa_group_rules(fallback) -> None:
    """The ECS GPU AMI recorded for us-east-2 (data/gpu_ecs_amis.json), not an SSM parameter re-read at every
    deploy: a redeploy makes no new launch-template version, so Batch replaces nothing."""
    from neuronfleet.facts.catalog import gpu_ecs_amis

    params = fallback.to_json().get("Parameters", {})
    assert not any(p.get("Default") == GPU_ECS_AMI_PARAMETER for p in params.values())
    images = {lt["LaunchTemplateData"]["ImageId"] for lt in properties(fallback, "AWS::EC2::LaunchTemplate").values()}
    assert images == {gpu_ecs_amis()["us-east-2"]} and images.pop().startswith("ami-")
    for ingress in properties(fallback, "AWS::EC2::SecurityGroupIngress").values():
        assert "CidrIp" not in ingress and ingress["SourceSecurityGroupId"] == ingress["GroupId"]


def _pool(**settings: Any) -> Template:
    stack, net = _net()
    GpuPool(stack, "P", vpc=net.vpc, vpc_subnets=net.compute_subnets, settings=GpuPoolSettings(**settings))
    return Template.from_stack(stack)


@pytest.mark.parametrize(("data_file", "field"), [("gpu_ecs_amis.json", "ami_id"), ("neuron_ecs_amis.json", "ami")])
def test_a_region_with_no_recorded_ami_is_refused_by_the_one_rule(data_file: str, field: str) -> None:
    """GpuPool and TrainiumCluster pick their ECS AMI through one function (training.batch.ecs_machine_image)."""
    from neuronfleet.facts.catalog import gpu_ecs_amis
    from neuronfleet.facts.neuron import ecs_neuron_amis
    from neuronfleet.training.batch import ecs_machine_image

    recorded = gpu_ecs_amis() if data_file.startswith("gpu") else ecs_neuron_amis()
    assert "mx-central-1" not in recorded  # a region AWS lists with no recorded ECS AMI (as of the data)
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(account="111111111111", region="mx-central-1"))
    with pytest.raises(InvalidSettings) as raised:
        ecs_machine_image(stack, ami_id=None, follow_latest=False, parameter="/aws/service/x", recorded=recorded,
                          data_file=data_file, field=field, what="pool")
    problem = raised.value.problems[0]
    assert (problem.path, problem.value) == (field, None)
    assert f"neuronfleet/facts/data/{data_file}" in problem.allowed and "follow_latest: true" in problem.allowed
    image, pinned = ecs_machine_image(stack, ami_id="ami-0123456789abcdef0", follow_latest=False, parameter="/p",
                                      recorded=recorded, data_file=data_file, field=field, what="pool")
    assert pinned and image.get_image(stack).image_id == "ami-0123456789abcdef0"


def test_follow_latest_resolves_the_gpu_ami_parameter_at_deploy() -> None:
    t = _pool(follow_latest=True)
    assert any(p.get("Default") == GPU_ECS_AMI_PARAMETER for p in t.to_json()["Parameters"].values())


def test_pinned_ami_and_ordered_strategy_and_shorter_wait() -> None:
    t = _pool(instance_types=["g6e.48xlarge", "g5.48xlarge"], max_vcpus=384, ami_id="ami-0123456789abcdef0",
              update_timeout_minutes=60, allocation_strategy="BEST_FIT_PROGRESSIVE_ORDERED")
    assert not any(p.get("Default") == GPU_ECS_AMI_PARAMETER for p in t.to_json().get("Parameters", {}).values())
    images = {json.dumps(lt["LaunchTemplateData"]["ImageId"]) for lt in properties(t, "AWS::EC2::LaunchTemplate").values()}
    assert images == {'"ami-0123456789abcdef0"'}
    (env,) = properties(t, "AWS::Batch::ComputeEnvironment").values()
    assert env["UpdatePolicy"] == {"TerminateJobsOnUpdate": False, "JobExecutionTimeoutMinutes": 60}
    assert env["ComputeResources"]["AllocationStrategy"] == "BEST_FIT_PROGRESSIVE_ORDERED"
    assert env["ComputeResources"]["InstanceTypes"] == ["g6e.48xlarge", "g5.48xlarge"]
    # g5.48xlarge has one card: ENA primary and one EFA-only interface on it
    lts = {lt["LaunchTemplateData"]["InstanceType"]: lt["LaunchTemplateData"]
           for lt in properties(t, "AWS::EC2::LaunchTemplate").values()}
    assert [(i["NetworkCardIndex"], i["DeviceIndex"], i.get("InterfaceType", "interface"))
            for i in lts["g5.48xlarge"]["NetworkInterfaces"]] == [(0, 0, "interface"), (0, 1, "efa-only")]


@pytest.mark.parametrize("part", [0, 1], ids=["first-11", "last-11"])
def test_gpu_types_of_the_catalog_fit_one_pool(part: int) -> None:
    """As many GPU types as one pool takes (the first type's launch template and 10 overrides) are one compute
    environment behind one queue (a queue takes at most 3): that many pools cover every catalog GPU type offered in
    the stack's region (us-east-2: 32 since the g5/g6/g6e sizes joined the catalog), each type with its own interface
    layout."""
    from neuronfleet.facts.catalog import BATCH_COMPUTE_ENVIRONMENTS_PER_QUEUE, BATCH_LAUNCH_TEMPLATE_OVERRIDES
    from neuronfleet.settings.fallback import GPU_TYPES

    most = 1 + BATCH_LAUNCH_TEMPLATE_OVERRIDES
    offered = [t for t in GPU_TYPES if CATALOG.offered_in(t, ENV.region)]
    types = offered[:most] if part == 0 else offered[-most:]
    assert most < len(offered) <= BATCH_COMPUTE_ENVIRONMENTS_PER_QUEUE * most
    t = _pool(instance_types=types, max_vcpus=1536)
    (env,) = properties(t, "AWS::Batch::ComputeEnvironment").values()
    assert env["ComputeResources"]["InstanceTypes"] == types and len(types) == most
    assert len(env["ComputeResources"]["LaunchTemplate"]["Overrides"]) == most - 1
    t.resource_count_is("AWS::Batch::JobQueue", 1)
    lts = {lt["LaunchTemplateData"]["InstanceType"]: lt["LaunchTemplateData"]["NetworkInterfaces"]
           for lt in properties(t, "AWS::EC2::LaunchTemplate").values()}
    for instance_type in types:
        layout = [(s.network_card, s.device_index, s.interface_type)
                  for s in CATALOG.get(instance_type).network_interfaces()]
        assert [(i["NetworkCardIndex"], i["DeviceIndex"], i.get("InterfaceType", "interface"))
                for i in lts[instance_type]] == layout


def test_routing_parameter_names_cuda_only_workloads(fallback) -> None:
    (param,) = properties(fallback, "AWS::SSM::Parameter").values()
    text = json.dumps(param["Value"])
    assert "custom-cuda-kernels" in text and "flash-attn-v3-eval" in text and "gpu_queue_arn" in text


@pytest.fixture(scope="module")
def pool() -> Template:
    return _pool(instance_types=("p5.48xlarge", "p5en.48xlarge", "g6e.48xlarge"), max_vcpus=1536)


def test_gpu_jobs_get_a_role_of_their_own_and_containers_no_instance_role(pool) -> None:
    """Every launch template: IMDSv2, hop limit 1, and the ECS agent blocking IMDS for awsvpc (multi-node) tasks in
    a user-data part Batch can merge with; a job role with no right until granted; an instance role without
    AmazonSSMManagedInstanceCore (ssm:GetParameter(s) on every parameter) or any data right."""
    lts = properties(pool, "AWS::EC2::LaunchTemplate")
    assert len(lts) == 3
    for lt in lts.values():
        data = lt["LaunchTemplateData"]
        assert data["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 1}
        user_data = json.dumps(data["UserData"])
        assert "multipart/mixed" in user_data
        assert user_data.count("echo ECS_AWSVPC_BLOCK_IMDS=true >> /etc/ecs/ecs.config") == 1
    job_role = iam_view.role_id(pool, service="ecs-tasks.amazonaws.com")
    assert iam_view.statements(pool, job_role) == [] and iam_view.managed(pool, job_role) == []
    host = iam_view.role_id(pool, service="ec2.amazonaws.com")
    (arn,) = iam_view.managed(pool, host)
    assert "AmazonEC2ContainerServiceforEC2Role" in arn
    assert iam_view.statements(pool, host) == [
        {"Action": iam_view.SESSION_MANAGER, "Effect": "Allow", "Resource": "*"}]
    (param,) = properties(pool, "AWS::SSM::Parameter").values()
    routing = json.dumps(param["Value"])
    assert "job_role_arn" in routing and json.dumps({"Fn::GetAtt": [job_role, "Arn"]}) in routing


def _function(t: Template, handler: str) -> dict[str, Any]:
    (fn,) = [f for f in properties(t, "AWS::Lambda::Function").values() if f["Handler"] == handler]
    return fn


def test_failover_function_and_its_least_privilege(synth_fleet) -> None:
    prod = synth_fleet("prod-hot")  # prod with its hot standby (tests/conftest.py HOT_PROD): a failover to check
    t = prod.template("inference")
    fn = _function(t, "failover.handler.handler")
    assert fn["Runtime"] == RUNTIME.name and "DeadLetterConfig" in fn
    assert "Layers" in fn and "AWSLambdaPowertoolsPythonV3" in json.dumps(fn["Layers"])
    watched = json.dumps(fn["Environment"]["Variables"]["FAILOVER_ENDPOINTS"])
    chat = prod.stacks["inference"].endpoints["Chat"]
    # the hot standby it watches costs one ml.p5.48xlarge at SageMaker's rate, not EC2's 55.04
    assert chat.standby_usd_per_hour() == 113.068
    assert chat.endpoint_name in watched and prod.stacks["inference"].endpoints["Embed"].endpoint_name not in watched
    statements = [s for p in properties(t, "AWS::IAM::Policy").values() for s in p["PolicyDocument"]["Statement"]
                  if "sagemaker:UpdateEndpointWeightsAndCapacities" in json.dumps(s["Action"])]
    (statement,) = statements
    resource = json.dumps(statement["Resource"])
    assert f"endpoint/{chat.endpoint_name}" in resource and "*" not in resource.replace('"*"', "")
    t.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(5 minutes)"})
    t.has_resource_properties("AWS::Events::Rule", {"EventPattern": {
        "source": ["aws.cloudwatch"], "detail-type": ["CloudWatch Alarm State Change"],
        "detail": {"alarmName": [{"prefix": f"{chat.endpoint_name}-"}]}}})


def test_capacity_alerts_watch_both_training_clusters(prod, fallback) -> None:
    """(The routes themselves are tested in test_alert_routes.py.)"""
    fn = _function(fallback, "capacity_alert.handler.handler")
    pool = json.dumps(fn["Environment"]["Variables"]["GPU_POOL"])
    assert "p5.48xlarge" in pool and "H100" in pool
    patterns = [r["EventPattern"] for r in properties(fallback, "AWS::Events::Rule").values() if "EventPattern" in r]
    (blocked,) = [p for p in patterns if p["detail-type"] == ["Batch Job Queue Blocked"]]
    assert len(blocked["detail"]["jobQueue"]) == len(prod.fleet.training_clusters)


def test_lambda_asset_holds_the_handlers() -> None:
    from pathlib import Path

    root = Path(lambda_source_dir())
    assert (root / "failover" / "handler.py").is_file() and (root / "capacity_alert" / "handler.py").is_file()


def _net() -> tuple[cdk.Stack, FleetNetwork]:
    stack = AzStack(cdk.App(), "S", env=ENV)
    return stack, network(stack)


def test_failover_refuses_an_endpoint_without_a_live_gpu_variant() -> None:
    stack, net = _net()
    endpoint = NeuronEndpoint(stack, "Solo", vpc=net.vpc,
                              settings=EndpointSettings(instance_type="ml.inf2.xlarge", hf_model_id="o/m",
                                                        allow_non_cached_model=False))
    topic = cdk.aws_sns.Topic(stack, "T")
    with pytest.raises(InvalidSettings, match=r"EndpointFailover: endpoints: got \['Solo'\]; allowed: endpoints that "
                                              r"each have a live 'gpu' variant"):
        EndpointFailover(stack, "F", endpoints=[endpoint], topic=topic)


@pytest.mark.parametrize(("props", "message"), [
    ({"instance_types": ["trn2.48xlarge"]}, "instance_types[0]: got 'trn2.48xlarge'; allowed: 'p5.48xlarge'"),
    ({"instance_types": []}, "instance_types: got []; allowed: at least 1 entry"),
    ({"instance_types": ["p5.48xlarge"], "max_vcpus": 96}, "max_vcpus: got 96; allowed: at least one p5.48xlarge "
                                                           "(192 vCPUs)"),
    # every type must fit under the ceiling, not only the first
    ({"instance_types": ["g6e.12xlarge", "p5.48xlarge"], "max_vcpus": 96},
     "max_vcpus: got 96; allowed: at least one p5.48xlarge (192 vCPUs): below, the pool could never launch p5.48xlarge"),
    ({"instance_types": ["p5.48xlarge", "g6e.48xlarge", "p5.48xlarge"]},
     "instance_types[2]: got 'p5.48xlarge'; allowed: a type not already listed (instance_types[0])"),
    ({"update_timeout_minutes": 7201}, "update_timeout_minutes: got 7201; allowed: a number <= 7200"),
    ({"update_timeout_minutes": 0}, "update_timeout_minutes: got 0; allowed: a number >= 1"),
    ({"ami_id": "ami-0123456789abcdef0", "follow_latest": True},
     "follow_latest: got True; allowed: false with ami_id: a pinned AMI does not follow anything"),
    ({"ami_parameter": "/my/gpu/ami"}, "follow_latest: got False; allowed: true with ami_parameter"),
    ({"allocation_strategy": "BEST_FIT"}, "allocation_strategy: got 'BEST_FIT'; allowed: 'BEST_FIT_PROGRESSIVE'"),
])
def test_gpu_pool_bad_input(props, message) -> None:
    stack, net = _net()
    with pytest.raises(InvalidSettings) as info:
        GpuPool(stack, "P", vpc=net.vpc, vpc_subnets=net.compute_subnets, settings=GpuPoolSettings(**props))
    assert any(str(p).startswith(message) for p in info.value.problems), info.value.problems


def test_gpu_pool_checks_offerings_in_its_region() -> None:
    azs = ["ap-east-1a", "ap-east-1b"]
    stack = StaticAzStack(cdk.App(), "S", availability_zones=azs, env=cdk.Environment(region="ap-east-1"))
    net = network(stack, availability_zones=azs, training_az="ap-east-1b")
    with pytest.raises(InvalidSettings, match=r"instance_types\[0\]: got 'p5.48xlarge'; allowed: a type offered in "
                                              r"ap-east-1 \(AWS's offerings list it in: ap-northeast-1"):
        GpuPool(stack, "P", vpc=net.vpc, vpc_subnets=net.compute_subnets, settings=GpuPoolSettings())


def test_a_job_queue_takes_at_most_three_compute_environments() -> None:
    """Batch's limit, enforced where queues are built (botocore: "up to three compute environments")."""
    from neuronfleet.training.batch import job_queue

    stack, net = _net()
    pool = GpuPool(stack, "P", vpc=net.vpc, vpc_subnets=net.compute_subnets, settings=GpuPoolSettings())
    with pytest.raises(InvalidSettings, match=r"compute_environments: got 4; allowed: 1 to 3 compute environments"):
        job_queue(stack, "Q", compute_environments=[pool.compute_environment] * 4)



def test_a_fleet_with_a_pool_in_isolated_subnets_without_endpoints_is_refused() -> None:
    from neuronfleet import FleetConfigError, parse_fleet

    doc = {"name": "nf-t", "phase": "pilot", "region": "us-east-2",
           "network": {"availability_zones": ["us-east-2a", "us-east-2b"], "training_az": "us-east-2a",
                       "nat_gateways": 0, "interface_endpoints": False},
           "fallback": {"enabled": True, "instance_types": ["g6e.48xlarge"], "max_vcpus": 192}}
    with pytest.raises(FleetConfigError) as info:
        parse_fleet(doc)
    (problem,) = info.value.problems
    assert str(problem).startswith("network.interface_endpoints: got False; allowed: true when nat_gateways is 0 and "
                                   "the fleet has a GPU pool")
    for fixed in ({"interface_endpoints": True}, {"nat_gateways": 1}):
        parse_fleet({**doc, "network": {**doc["network"], **fixed}})  # accepted
