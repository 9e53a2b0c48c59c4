"""Large fleets: training capacity in several AZs, endpoints spread over stacks stably, CloudFormation's per-stack
quotas checked before anything is written, descriptions within their limit."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml

from neuronfleet import FleetConfigError, parse_fleet
from neuronfleet.core.rules import CDK_DESCRIPTION_CHARS, CLOUDFORMATION_QUOTAS, fits_description
from neuronfleet.fleetfile.schema import Fleet
from stacks.fleet import build_fleet, describe, template_problems
from tests.conftest import EXAMPLE_FLEETS, ROOT, new_app

DEV = yaml.safe_load((ROOT / "config" / "dev.yaml").read_text())


def fleet(**changes: Any) -> Fleet:
    return parse_fleet({**DEV, **changes}, source="test")


def endpoints(*names: str) -> list[dict[str, Any]]:
    return [{**DEV["endpoints"][0], "name": n} for n in names]


def where(f: Fleet) -> dict[str, str]:
    """Each endpoint's stack."""
    return {e.name: part for part, es in f.inference_partitions().items() for e in es}


NAMES = [f"model-{i:02d}" for i in range(12)]


def test_one_stack_by_default_named_as_before() -> None:
    assert list(fleet(endpoints=endpoints(*NAMES[:3])).inference_partitions()) == ["inference"]


@pytest.mark.parametrize("change", ["insert in the middle", "remove one", "reverse the order", "append"])
def test_no_existing_endpoint_moves_when_others_come_go_or_move(change: str) -> None:
    before = where(fleet(endpoints=endpoints(*NAMES), inference_stacks=4))
    names = {"insert in the middle": [*NAMES[:6], "new-model", *NAMES[6:]], "remove one": NAMES[:5] + NAMES[6:],
             "reverse the order": NAMES[::-1], "append": [*NAMES, "another-model"]}[change]
    after = where(fleet(endpoints=endpoints(*names), inference_stacks=4))
    assert {n: after[n] for n in before if n in after} == {n: before[n] for n in after if n in before}
    assert len(set(before.values())) > 1  # they really are spread


def _templates(f: Fleet) -> dict[str, dict[str, Any]]:
    app = new_app()
    build_fleet(app, f)
    assembly = app.synth()
    return {s.stack_name: s.template for s in assembly.stacks}


def _endpoint_stacks(templates: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Endpoint (by the construct id in its logical id) -> stack that holds its AWS::SageMaker::Endpoint."""
    out = {}
    for stack, t in templates.items():
        for logical, res in t["Resources"].items():
            if res["Type"] == "AWS::SageMaker::Endpoint":
                out[logical.split("Endpoint")[0]] = stack
    return out


def test_templates_keep_every_endpoint_in_its_stack_when_one_is_inserted_in_the_middle() -> None:
    few = NAMES[:6]
    before = _endpoint_stacks(_templates(fleet(endpoints=endpoints(*few), inference_stacks=3)))
    after = _endpoint_stacks(_templates(fleet(endpoints=endpoints(*few[:3], "inserted", *few[3:]),
                                              inference_stacks=3)))
    assert len(before) == 6 and len(after) == 7 and len(set(before.values())) > 1
    assert {k: after[k] for k in before} == before


def test_clusters_launch_in_the_az_of_their_capacity(tmp_path: Path) -> None:
    group = "arn:aws:resource-groups:us-east-2:111111111111:group/blocks-{}"
    clusters = [{"name": f"c{az}", "instance_type": "trn2.48xlarge", "count": 2,
                 "capacity": {"type": "capacity-block", "availability_zone": f"us-east-2{az}",
                              "resource_group_arn": group.format(az)}} for az in "abc"]
    f = fleet(network={**DEV["network"], "availability_zones": ["us-east-2a", "us-east-2b", "us-east-2c"]},
              training_clusters=clusters, endpoints=[])
    templates = _templates(f)
    network = templates["nf-dev-network"]["Resources"]
    for az in "abc":
        (env,) = [r["Properties"] for r in templates[f"nf-dev-train-c{az}"]["Resources"].values()
                  if r["Type"] == "AWS::Batch::ComputeEnvironment"]
        (subnet_import,) = env["ComputeResources"]["Subnets"]
        (subnet,) = [r for k, r in network.items()
                     if r["Type"] == "AWS::EC2::Subnet" and k in json.dumps(subnet_import)]
        assert subnet["Properties"]["AvailabilityZone"] == f"us-east-2{az}"


def test_a_clusters_resources_do_not_grow_with_its_instances() -> None:
    group = "arn:aws:resource-groups:us-east-2:111111111111:group/blocks-{}"
    clusters = [{"name": f"n{count}", "instance_type": "trn2u.48xlarge", "count": count, "job_nodes": min(count, 1000),
                 "allow_unlisted_region": True, "capacity": {"type": "capacity-block",
                                                             "resource_group_arn": group.format(count)}}
                for count in (4, 4000)]
    templates = _templates(fleet(training_clusters=clusters, endpoints=[]))
    kinds = {count: sorted(r["Type"] for r in templates[f"nf-dev-train-n{count}"]["Resources"].values())
             for count in (4, 4000)}
    assert kinds[4] == kinds[4000] and len(kinds[4]) > 20
    (big,) = [r["Properties"] for r in templates["nf-dev-train-n4000"]["Resources"].values()
              if r["Type"] == "AWS::Batch::ComputeEnvironment"]
    assert big["ComputeResources"]["MaxvCpus"] == 4000 * 192  # the count lives in values, not in resources


def test_a_capacity_az_outside_the_network_is_refused() -> None:
    clusters = [{"name": "c", "instance_type": "trn2.48xlarge", "count": 2,
                 "capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0",
                              "availability_zone": "us-east-2c"}}]
    with pytest.raises(FleetConfigError, match=r"training_clusters\[0\]\.capacity\.availability_zone: got "
                                                r"'us-east-2c'; allowed: one of network\.availability_zones"):
        fleet(training_clusters=clusters)


def test_a_stack_over_the_resource_quota_is_refused_by_app_py_before_anything_is_written(tmp_path: Path) -> None:
    crowded = {**DEV, "endpoints": endpoints(*(f"m{i:02d}" for i in range(40)))}
    path = tmp_path / "crowded.yaml"
    path.write_text(yaml.safe_dump(crowded))
    out = tmp_path / "cdk.out"
    env = {"CDK_CONTEXT_JSON": json.dumps({"config": str(path)}), "CDK_OUTDIR": str(out),
           "PATH": str(Path(sys.executable).parent)}
    result = subprocess.run([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert "inference_stacks: got 1; allowed: enough stacks that each holds at most 500 resources: " \
           "nf-dev-inference would hold" in result.stderr
    (fits,) = re.findall(r"; (\d+) stacks would fit this fleet", result.stderr)
    at_fits, below = ({**crowded, "inference_stacks": n} for n in (int(fits), int(fits) - 1))
    assert _largest_inference_stack(at_fits) <= 500 < _largest_inference_stack(below)
    assert "Traceback" not in result.stderr
    assert not [p for p in out.rglob("*") if p.is_file()]  # App() makes the folder; nothing is written in it


def _largest_inference_stack(mapping: dict[str, Any]) -> int:
    """Resources of the largest inference stack of a fleet file, built (CDK's metadata resource included)."""
    from stacks.fleet import _resources

    app = new_app()
    try:
        stacks = build_fleet(app, parse_fleet(mapping, source="test"))
    except FleetConfigError:
        return 501
    return max(_resources(s) + 1 for s in stacks if "-inference" in s.stack_name)


def test_descriptions_stay_within_cloudformations_and_cdks_limits() -> None:
    items = [f"model-{i:03d} (ml.inf2.48xlarge)" for i in range(200)]
    text = describe("neuronfleet nf-rainier: Neuron endpoints", items)
    assert fits_description(text) and len(text.encode()) <= CLOUDFORMATION_QUOTAS["description_bytes"]
    assert text.endswith(" more)") and "model-000 (ml.inf2.48xlarge)" in text
    assert describe("short", ["a", "b"]) == "short (a, b)"
    cdk.Stack(new_app(), "Fits", description=text)


def test_cdk_refuses_descriptions_over_512_characters_as_recorded() -> None:
    cdk.Stack(new_app(), "AtLimit", description="x" * CDK_DESCRIPTION_CHARS)
    with pytest.raises(RuntimeError, match="Stack description must be <= 1024 bytes"):
        cdk.Stack(new_app(), "Over", description="x" * (CDK_DESCRIPTION_CHARS + 1))


def test_a_lambda_environment_over_4_kb_is_refused_with_its_largest_variables() -> None:
    big = {"Resources": {"Report": {"Type": "AWS::Lambda::Function", "Properties": {"Environment": {"Variables": {
        "MODELS": {"Fn::Join": ["", ["[", *[{"Fn::ImportValue": f"x{i}"} for i in range(70)], "]"]]},
        "FLEET": "nf-big"}}}}}}
    (problem,) = template_problems("nf-big-cost", big)
    assert str(problem).startswith("nf-big-cost.Report: got '4,499 bytes of environment'; allowed: at most 4,096")
    assert "MODELS (4,482)" in str(problem)
    small = {"Resources": {"F": {"Type": "AWS::Lambda::Function", "Properties": {"Environment": {"Variables": {
        "A": "x" * 4000}}}}}}
    assert template_problems("s", small) == []


def test_a_role_whose_inline_policies_pass_iams_limit_is_refused() -> None:
    def policy(i: int, groups: int) -> dict[str, Any]:
        return {"Type": "AWS::IAM::Policy", "Properties": {"Roles": [{"Ref": "CollectorRole"}], "PolicyDocument": {
            "Statement": [{"Action": "resource-groups:ListGroupResources", "Effect": "Allow", "Resource": [
                {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"},
                                   f":resource-groups:us-east-2:111111111111:group/g{i}-{g}"]]}
                for g in range(groups)]}]}}}
    role = {"Type": "AWS::IAM::Role", "Properties": {"Policies": [{"PolicyDocument": {"Statement": []}}]}}
    big = {"Resources": {"CollectorRole": role, "P1": policy(1, 80), "P2": policy(2, 80),
                         "Other": {**policy(3, 80), "Properties": {**policy(3, 80)["Properties"], "Roles": ["imported"]}}}}
    (problem,) = template_problems("nf-big-cost", big)  # AWS::Partition at its longest, aws-us-gov (10)
    assert str(problem).startswith("nf-big-cost.CollectorRole: got '11,062 characters")
    assert "allowed: at most 10,240" in str(problem)
    assert template_problems("nf-big-cost", {"Resources": {"CollectorRole": role, "P1": policy(1, 80)}}) == []


@pytest.mark.parametrize("name", EXAMPLE_FLEETS)
def test_the_example_fleets_fit_every_quota(synth_fleet, name: str) -> None:
    fleet = synth_fleet(name)
    assert [p for s in fleet.stacks.values() for p in template_problems(s.stack_name, fleet.template_json(
        next(k for k, v in fleet.stacks.items() if v is s)))] == []


def test_a_capacity_az_outside_the_network_gets_the_same_message_from_the_construct_api() -> None:
    from neuronfleet import Capacity, InvalidSettings
    from tests.conftest import ENV, AzStack, network

    stack = AzStack(new_app(), "Az", env=ENV)
    net = network(stack)  # us-east-2a, us-east-2b
    with pytest.raises(InvalidSettings) as raised:
        net.training_subnet_for(Capacity.capacity_block(reservation_id="cr-0123456789abcdef0",
                                                        availability_zone="us-east-2c"))
    with pytest.raises(FleetConfigError) as refused:
        fleet(training_clusters=[{"name": "c", "instance_type": "trn2.48xlarge", "count": 2, "capacity": {
            "type": "capacity-block", "reservation_id": "cr-0123456789abcdef0", "availability_zone": "us-east-2c"}}])
    (api,) = raised.value.problems
    (file,) = refused.value.problems
    assert (file.path, file.value, file.allowed) == (f"training_clusters[0].{api.path}", api.value, api.allowed)


def _function_environments(template: dict[str, Any]) -> dict[str, int]:
    """Handler -> bytes of its environment, as template_problems estimates them."""
    from neuronfleet.core.limits import _deployed_length

    return {r["Properties"]["Handler"]: sum(len(k) + _deployed_length(v) for k, v in
                                            r["Properties"]["Environment"]["Variables"].items())
            for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"}


def _variables(template: dict[str, Any], handler: str) -> dict[str, Any]:
    (function,) = [r for r in template["Resources"].values()
                   if r["Type"] == "AWS::Lambda::Function" and r["Properties"]["Handler"] == handler]
    return dict(function["Properties"]["Environment"]["Variables"])


def test_a_fleet_of_100_endpoints_synthesises_with_its_cost_monitors() -> None:
    """The report and the waste detector find the fleet's endpoints by its tag when they run: nothing in their
    environment grows with the endpoints, and the cost stack imports nothing from the inference stacks."""
    from scripts.bench_scale import rainier

    prod = yaml.safe_load((ROOT / "config" / "prod.yaml").read_text())

    def cost_template(endpoints: int) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        mapping = rainier(clusters=1, ultraservers=2, endpoints=endpoints)
        mapping["cost_monitors"] = prod["cost_monitors"]  # bench_scale's fleet, with the cost monitors
        templates = _templates(parse_fleet(mapping, source="test"))
        return templates, templates["nf-rainier-cost"]

    templates, cost = cost_template(100)
    assert sum(r["Type"] == "AWS::SageMaker::Endpoint" for t in templates.values() for r in t["Resources"].values()) == 100
    assert [p for name, t in templates.items() for p in template_problems(name, t)] == []
    sizes = _function_environments(cost)
    # the report's price table grows with the catalog (31 types), not with the fleet: a budget under Lambda's 4 KB
    assert sizes["cost.report.handler"] < 3_000 and sizes["cost.waste.handler"] < 500, sizes
    assert "Fn::ImportValue" not in json.dumps(cost).replace('"Fn::ImportValue": "nf-rainier-alerts:', "")
    # the same for 1 endpoint as for 100, but the kit's own running cost: more endpoints, more alarms and keys counted
    # (the same lines, their counts and totals larger: a few digits, never a line per endpoint)
    from neuronfleet_contract import overhead as wire

    one = cost_template(1)[1]
    for handler in sizes:
        many_vars, one_vars = _variables(cost, handler), _variables(one, handler)
        assert {k: v for k, v in many_vars.items() if k != wire.VARIABLE} == \
            {k: v for k, v in one_vars.items() if k != wire.VARIABLE}, handler
    many_bill, one_bill = (wire.decode(_variables(t, "cost.report.handler")[wire.VARIABLE]) for t in (cost, one))
    assert [line.key for line in many_bill.priced] == [line.key for line in one_bill.priced]
    assert many_bill.total_usd > one_bill.total_usd
    assert abs(sizes["cost.report.handler"] - _function_environments(one)["cost.report.handler"]) < 40
