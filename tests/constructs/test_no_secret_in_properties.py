"""No secret in a resource property (issue 36, finding 6): in every example fleet's templates, no SageMaker model or
endpoint configuration, ECS task definition, Batch job definition or Lambda function holds a CloudFormation dynamic
reference to a secret (``{{resolve:secretsmanager:...}}``, ``{{resolve:ssm-secure:...}}``), written out or built by
``Fn::Join`` / ``Fn::Sub``. CloudFormation resolves such a reference into the property at deploy, and the service then
shows the value to whoever may describe the resource (``sagemaker:DescribeModel``, ``ecs:DescribeTaskDefinition``,
``batch:DescribeJobDefinitions``, ``lambda:GetFunctionConfiguration``: all in AWS's read-only managed policies)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import EXAMPLE_FLEETS

WATCHED_TYPES = ("AWS::SageMaker::Model", "AWS::SageMaker::EndpointConfig", "AWS::ECS::TaskDefinition",
                 "AWS::Batch::JobDefinition", "AWS::Lambda::Function")
"""Resources whose properties their service gives back to readers: every property of theirs is walked, not only the
container environment (a secret in a command line or a tag is read the same way)."""
DYNAMIC_SECRET = re.compile(r"\{\{resolve:(secretsmanager|ssm-secure):", re.IGNORECASE)
"""CloudFormation's dynamic references that resolve a secret value (CloudFormation user guide, "Get values stored in
other services using dynamic references", read 2026-11-28: secretsmanager and ssm-secure; ``ssm`` holds plain
parameters)."""
UNKNOWN = "\0"
"""What an intrinsic that is not a string stands for when a Join or Sub is rendered: it never completes a reference."""


def rendered(node: Any) -> str | None:
    """The string CloudFormation would build from ``node`` as far as the template says it: a literal, a ``Fn::Join``
    of rendered parts, a ``Fn::Sub``'s template; None for anything else."""
    if isinstance(node, str):
        return node
    if isinstance(node, dict) and len(node) == 1:
        (fn, args), = node.items()
        if fn == "Fn::Join" and isinstance(args, list) and len(args) == 2 and isinstance(args[1], list):
            delimiter = args[0] if isinstance(args[0], str) else UNKNOWN
            return delimiter.join(r if (r := rendered(p)) is not None else UNKNOWN for p in args[1])
        if fn == "Fn::Sub":
            template = args[0] if isinstance(args, list) and args else args
            return template if isinstance(template, str) else None
    return None


def secret_references(node: Any, path: str = "") -> Iterator[str]:
    """The path of every string in ``node`` that is, or builds, a dynamic reference to a secret."""
    text = rendered(node)
    if text is not None and DYNAMIC_SECRET.search(text):
        yield path
        return
    if isinstance(node, dict):
        for key, value in node.items():
            yield from secret_references(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from secret_references(value, f"{path}/{i}")


def findings(template: dict[str, Any]) -> list[str]:
    return [f"{logical} ({res['Type']}){where}"
            for logical, res in template.get("Resources", {}).items() if res.get("Type") in WATCHED_TYPES
            for where in secret_references(res.get("Properties", {}), "/Properties")]


TOKEN_ARN = "arn:aws:secretsmanager:us-east-2:222222222222:secret:nf-pilot/hf-token-Ab12Cd"


@pytest.mark.parametrize(("properties", "expected"), [
    ({"PrimaryContainer": {"Environment": {"HF_TOKEN": f"{{{{resolve:secretsmanager:{TOKEN_ARN}:SecretString:::}}}}"}}},
     ["/Properties/PrimaryContainer/Environment/HF_TOKEN"]),
    # what SecretValue.secrets_manager(<a token>) becomes: a Join around the ARN's parts
    ({"PrimaryContainer": {"Environment": {"HF_TOKEN": {"Fn::Join": ["", [
        "{{resolve:secretsmanager:", {"Ref": "TokenSecret"}, ":SecretString:::}}"]]}}}},
     ["/Properties/PrimaryContainer/Environment/HF_TOKEN"]),
    ({"PrimaryContainer": {"Environment": {"T": {"Fn::Join": [":", ["{{resolve", "secretsmanager", "x}}"]]}}}},
     ["/Properties/PrimaryContainer/Environment/T"]),
    ({"Containers": [{"Environment": {"T": {"Fn::Sub": "{{resolve:ssm-secure:/nf/token}}"}}}]},
     ["/Properties/Containers/0/Environment/T"]),
    ({"Containers": [{"Environment": {"T": {"Fn::Sub": ["{{resolve:secretsmanager:${A}}}", {"A": "x"}]}}}]},
     ["/Properties/Containers/0/Environment/T"]),
    # a secret's ARN, a plain parameter, a Join that only looks close: no value is resolved
    ({"PrimaryContainer": {"Environment": {"HF_TOKEN_SECRET_ARN": TOKEN_ARN, "P": "{{resolve:ssm:/nf/p}}",
                                           "J": {"Fn::Join": ["", ["{{resolve:", {"Ref": "Kind"}, ":x}}"]]}}}}, []),
])
def test_the_walk_finds_a_secret_written_out_or_built(properties: dict[str, Any], expected: list[str]) -> None:
    template = {"Resources": {"Model": {"Type": "AWS::SageMaker::Model", "Properties": properties},
                              "Other": {"Type": "AWS::RDS::DBInstance", "Properties": properties}}}
    assert findings(template) == [f"Model (AWS::SageMaker::Model){p}" for p in expected]


def test_every_watched_type_is_walked() -> None:
    ref = "{{resolve:secretsmanager:s:SecretString:token::}}"
    template = {"Resources": {
        "Task": {"Type": "AWS::ECS::TaskDefinition", "Properties": {"ContainerDefinitions": [
            {"Environment": [{"Name": "T", "Value": ref}]}]}},
        "Job": {"Type": "AWS::Batch::JobDefinition", "Properties": {"NodeProperties": {"NodeRangeProperties": [
            {"Container": {"Environment": [{"Name": "T", "Value": ref}]}}]}}},
        "Fn": {"Type": "AWS::Lambda::Function", "Properties": {"Environment": {"Variables": {"T": ref}}}},
        "Config": {"Type": "AWS::SageMaker::EndpointConfig", "Properties": {"Tags": [{"Key": "t", "Value": ref}]}}}}
    assert findings(template) == [
        "Task (AWS::ECS::TaskDefinition)/Properties/ContainerDefinitions/0/Environment/0/Value",
        "Job (AWS::Batch::JobDefinition)/Properties/NodeProperties/NodeRangeProperties/0/Container/Environment/0/Value",
        "Fn (AWS::Lambda::Function)/Properties/Environment/Variables/T",
        "Config (AWS::SageMaker::EndpointConfig)/Properties/Tags/0/Value"]


@pytest.mark.parametrize("name", EXAMPLE_FLEETS)
def test_no_example_fleet_resolves_a_secret_into_a_resource_property(synth_fleet, name: str) -> None:
    fleet = synth_fleet(name)
    found = {short: f for short in fleet.stacks if (f := findings(fleet.template_json(short)))}
    assert found == {}, "a secret resolved into a property its service shows to readers"
