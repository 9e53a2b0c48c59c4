"""Issue 36's "Done when", over every example fleet's templates (and prod with its hot standby, the one fleet with a
failover): no Allow of an action that spends money or moves traffic on a bare ``*`` or ``TYPE/*`` resource without a
condition; every service trust as neuronfleet.core.trust says (its condition keys, or its reason for none); every read
of a bucket the fleet file names bound to the owning account (``s3:ResourceAccount``). Each fleet is synthesised once
per session (tests/conftest.py synth_fleet)."""

from __future__ import annotations

import fnmatch
import re
from typing import Any

import pytest

from neuronfleet.core import s3_reads, trust
from tests.conftest import EXAMPLE_FLEETS, HOT_PROD
from tests.sar_rows import IAM_DATA, action_row, cells

FLEETS = [*EXAMPLE_FLEETS, HOT_PROD]

SPENDING_OR_TRAFFIC = (
    "ec2:PurchaseCapacityBlock", "ec2:PurchaseCapacityBlockExtension", "ec2:PurchaseReservedInstancesOffering",
    "ec2:PurchaseHostReservation", "ec2:PurchaseScheduledInstances", "ec2:CreateCapacityReservation",
    "ec2:CreateCapacityReservationFleet", "ec2:ModifyCapacityReservation", "ec2:ModifyCapacityReservationFleet",
    "ec2:RunInstances", "ec2:CreateFleet", "ec2:RequestSpotInstances", "ec2:RequestSpotFleet",
    "sagemaker:CreateEndpoint", "sagemaker:CreateEndpointConfig", "sagemaker:UpdateEndpoint",
    "sagemaker:UpdateEndpointWeightsAndCapacities", "sagemaker:CreateTrainingJob", "sagemaker:CreateInferenceComponent",
    "sagemaker:UpdateInferenceComponent", "sagemaker:UpdateInferenceComponentRuntimeConfig",
    "application-autoscaling:RegisterScalableTarget", "application-autoscaling:PutScalingPolicy",
    "application-autoscaling:PutScheduledAction", "autoscaling:SetDesiredCapacity", "autoscaling:UpdateAutoScalingGroup",
    "eks:UpdateNodegroupConfig", "eks:CreateNodegroup", "batch:SubmitJob", "batch:UpdateComputeEnvironment",
    "batch:CreateComputeEnvironment", "ecs:RunTask", "ecs:StartTask", "ecs:UpdateService", "fsx:CreateFileSystem",
    "fsx:UpdateFileSystem", "savingsplans:CreateSavingsPlan",
)
"""Actions that spend money or move traffic (issue 36's list, and the other ways an AWS account buys or sizes
capacity): none may be allowed on every resource of a type without a condition."""

_BARE = re.compile(r"^(\*|arn:[^:]*:[^:]*:[^:]*:[^:]*:[A-Za-z0-9-]+/\*)$")
"""``*`` or ``arn:...:<type>/*`` (every resource of a type)."""


def _text(value: Any) -> str:
    """A resource as text, its tokens as ${...}."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        return "".join(_text(p) for p in value["Fn::Join"][1])
    if "Ref" in value:
        return "${" + value["Ref"].replace("AWS::", "") + "}"
    if "Fn::GetAtt" in value:
        return "${" + ".".join(value["Fn::GetAtt"]) + "}"
    if "Fn::ImportValue" in value:
        return "${Import}"
    return "${?}"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _allows(templates: dict[str, dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """(stack, policy's logical id, statement) of every Allow in an identity policy of every template."""
    out = []
    for stack, template in templates.items():
        for lid, r in template.get("Resources", {}).items():
            docs = []
            if r["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
                docs = [r["Properties"]["PolicyDocument"]]
            elif r["Type"] == "AWS::IAM::Role":
                docs = [p["PolicyDocument"] for p in r["Properties"].get("Policies", [])]
            out += [(stack, lid, st) for d in docs for st in d["Statement"] if st["Effect"] == "Allow"]
    return out


def unbounded_spending(templates: dict[str, dict[str, Any]]) -> list[str]:
    """Each Allow of a :data:`SPENDING_OR_TRAFFIC` action (also by a wildcard action) on ``*`` or ``TYPE/*`` with no
    condition, as ``stack/policy: actions on resource``."""
    found = []
    for stack, lid, st in _allows(templates):
        covered = sorted({s for a in _list(st["Action"]) for s in SPENDING_OR_TRAFFIC
                          if fnmatch.fnmatchcase(s.lower(), a.lower())})
        if not covered or "Condition" in st:
            continue
        for resource in map(_text, _list(st.get("Resource", "*"))):
            if _BARE.match(resource.replace("${Partition}", "aws").replace("${Region}", "r")
                           .replace("${AccountId}", "0")):
                found.append(f"{stack}/{lid}: {', '.join(covered)} on {resource}")
    return found


def untrusted_services(templates: dict[str, dict[str, Any]]) -> list[str]:
    """Each role's trust statement whose service is not in core.trust.TRUSTS, or lacks the keys it should carry."""
    found = []
    for stack, template in templates.items():
        for lid, r in template.get("Resources", {}).items():
            if r["Type"] != "AWS::IAM::Role":
                continue
            for st in r["Properties"]["AssumeRolePolicyDocument"]["Statement"]:
                for service in _list(st.get("Principal", {}).get("Service", [])):
                    fact = trust.TRUSTS.get(_text(service))
                    keys = {k for op in st.get("Condition", {}).values() for k in op}
                    if fact is None:
                        found.append(f"{stack}/{lid}: {_text(service)} is not in neuronfleet.core.trust.TRUSTS")
                    elif not set(fact.keys) <= keys:
                        found.append(f"{stack}/{lid}: {fact.service} without {sorted(set(fact.keys) - keys)}")
    return found


def unowned_bucket_reads(templates: dict[str, dict[str, Any]]) -> list[str]:
    """Each Allow of s3:GetObject or s3:ListBucket on a bucket named in the template by its name (a fleet file's URI:
    not a bucket of the stack, which is a reference) without ``s3:ResourceAccount``."""
    found = []
    for stack, lid, st in _allows(templates):
        actions = {a.lower() for a in _list(st["Action"])}
        if not actions & {a.lower() for a in s3_reads.READ_ACTIONS}:
            continue
        for resource in map(_text, _list(st.get("Resource", []))):
            named = re.match(r"^arn:[^:]+:s3:::[^/$]+(/|$)", resource) is not None  # a literal bucket name
            owner = {k for op in st.get("Condition", {}).values() for k in op}
            if named and s3_reads.OWNER_KEY not in owner:
                found.append(f"{stack}/{lid} ({st.get('Sid', '')}): {resource}")
    return found


def _templates(fleet: Any) -> dict[str, dict[str, Any]]:
    return {short: fleet.template_json(short) for short in fleet.stacks}


@pytest.mark.parametrize("name", FLEETS)
def test_no_spending_or_traffic_action_on_every_resource_without_a_condition(synth_fleet, name: str) -> None:
    assert unbounded_spending(_templates(synth_fleet(name))) == []


@pytest.mark.parametrize("name", FLEETS)
def test_every_service_trust_carries_its_documented_keys(synth_fleet, name: str) -> None:
    assert untrusted_services(_templates(synth_fleet(name))) == []


@pytest.mark.parametrize("name", FLEETS)
def test_reads_of_buckets_the_fleet_file_names_are_bound_to_their_owner(synth_fleet, name: str) -> None:
    assert unowned_bucket_reads(_templates(synth_fleet(name))) == []


def test_the_prod_fleets_reads_by_name_are_there_to_check(synth_fleet) -> None:
    """The bucket-read check above sees the fleet file's reads (not vacuous): prod's model artifacts by name."""
    reads = [st for _, _, st in _allows(_templates(synth_fleet(HOT_PROD))) if "s3:GetObject" in _list(st["Action"])
             and any(re.match(r"^arn:[^:]+:s3:::[^$]", _text(r)) for r in _list(st["Resource"]))]
    assert reads and all(st["Condition"] == {"StringEquals": {"s3:ResourceAccount": "333333333333"}}
                         for st in reads if st.get("Sid") == "ReadGpuModelArtifact")


# ------------------------------------------------------------------------------------------------ the checks themselves


def _policy(*statements: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {"s": {"Resources": {"P": {"Type": "AWS::IAM::Policy", "Properties": {"PolicyDocument": {
        "Statement": list(statements)}}}}}}


@pytest.mark.parametrize(("statement", "found"), [
    ({"Effect": "Allow", "Action": "batch:SubmitJob", "Resource": ["arn:aws:batch:r:1:job-definition/*"]}, 1),
    ({"Effect": "Allow", "Action": "sagemaker:Update*", "Resource": "*"}, 1),
    ({"Effect": "Allow", "Action": "application-autoscaling:RegisterScalableTarget", "Resource": {"Fn::Join": ["", [
        "arn:", {"Ref": "AWS::Partition"}, ":application-autoscaling:us-east-2:1:scalable-target/*"]]}}, 1),
    ({"Effect": "Allow", "Action": "application-autoscaling:RegisterScalableTarget", "Resource": "*",
      "Condition": {"StringEquals": {"aws:ResourceTag/k": "v"}}}, 0),
    ({"Effect": "Allow", "Action": "sagemaker:UpdateEndpoint", "Resource": "arn:aws:sagemaker:r:1:endpoint/chat"}, 0),
    ({"Effect": "Allow", "Action": "sagemaker:DescribeEndpoint", "Resource": "*"}, 0),
    ({"Effect": "Deny", "Action": "*", "Resource": "*"}, 0),
])
def test_the_spending_check_finds_what_it_should(statement, found) -> None:
    assert len(unbounded_spending(_policy(statement))) == found


def test_the_trust_check_finds_a_missing_key_and_an_unknown_service() -> None:
    def role(principal: str, condition: dict[str, Any] | None = None) -> dict[str, Any]:
        st = {"Effect": "Allow", "Principal": {"Service": principal}, "Action": "sts:AssumeRole"}
        return {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {
            "Statement": [st | ({"Condition": condition} if condition else {})]}}}
    templates = {"s": {"Resources": {
        "Ok": role("sagemaker.amazonaws.com", {"ArnLike": {"aws:SourceArn": "arn:aws:sagemaker:r:1:*"}}),
        "Bare": role("sagemaker.amazonaws.com"), "Lambda": role("lambda.amazonaws.com"),
        "Other": role("glue.amazonaws.com")}}}
    assert untrusted_services(templates) == [
        "s/Bare: sagemaker.amazonaws.com without ['aws:SourceArn']",
        "s/Other: glue.amazonaws.com is not in neuronfleet.core.trust.TRUSTS"]


def test_the_bucket_check_finds_a_read_by_name_without_its_owner() -> None:
    read = {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::team-prompts/chat.jsonl"}
    own = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": {"Fn::Join": ["", [
        {"Fn::GetAtt": ["Bucket", "Arn"]}, "/*"]]}}
    assert len(unowned_bucket_reads(_policy(read, own))) == 1
    partitioned = read | {"Resource": {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::team-prompts/c"]]}}
    assert len(unowned_bucket_reads(_policy(partitioned))) == 1
    assert unowned_bucket_reads(_policy(read | {"Condition": {"StringEquals": {"s3:ResourceAccount": "1"}}})) == []


def test_every_trust_without_keys_says_why_and_every_trust_has_a_source() -> None:
    assert trust.TRUSTS
    for fact in trust.TRUSTS.values():
        assert fact.source and (fact.keys or len(fact.why_none) > 40), fact.service


# ------------------------------------------------------------------------------------------------ the S3 facts

S3_ROWS = (IAM_DATA / "list_amazons3-read-rows.html").read_text()


@pytest.mark.parametrize("action", s3_reads.READ_ACTIONS)
def test_the_owner_key_is_a_condition_key_of_each_read(action: str) -> None:
    assert s3_reads.OWNER_KEY in action_row(S3_ROWS, "amazons3-" + action.split(":")[1])[1]


def test_the_owner_key_filters_by_the_resource_owners_account() -> None:
    assert cells(S3_ROWS, "amazons3-s3_ResourceAccount") == [
        ["s3:ResourceAccount"], ["Filters access by the resource owner AWS account ID"], ["String"]]
