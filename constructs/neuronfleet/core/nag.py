"""cdk-nag acknowledgements that name exactly what they acknowledge."""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct


def render(scope: IConstruct, value: str) -> str:
    """Render a (possibly tokenised) string the way cdk-nag writes it in a finding id:
    ``{"Fn::GetAtt": ["X", "Arn"]}`` as ``<X.Arn>``, ``{"Ref": "X"}`` as ``<X>``, joins concatenated. A string
    without a token (CDK encodes string tokens as ``${Token[...]}``) is its own rendering: no jsii round trip."""
    if "${Token[" not in value:
        return value
    return _render(Stack.of(scope).resolve(value))


def _render(node: Any) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, dict) and len(node) == 1:
        (fn, arg), = node.items()
        if fn == "Ref":
            return f"<{arg}>"
        if fn == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>"
        if fn == "Fn::Join":
            return arg[0].join(_render(part) for part in arg[1])
    raise ValueError(f"cannot render {node!r} as a cdk-nag finding id")


def acknowledge_wildcards(scope: IConstruct, reason: str, *, resources: tuple[str, ...] = (),
                          actions: tuple[str, ...] = ()) -> None:
    """Acknowledge AwsSolutions-IAM5 findings for these wildcard resources (ARNs, tokens allowed) and actions."""
    findings = [f"AwsSolutions-IAM5[Resource::{render(scope, arn)}]" for arn in resources] + [
        f"AwsSolutions-IAM5[Action::{action}]" for action in actions]
    if findings:  # one round trip for all of them
        Validations.of(scope).acknowledge(*(Acknowledgment(id=f, reason=reason) for f in findings))
