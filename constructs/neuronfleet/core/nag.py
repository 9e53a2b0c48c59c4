"""cdk-nag acknowledgements that name exactly what they acknowledge."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from weakref import WeakKeyDictionary

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct

from .lookups import stack_of

_RENDERED: WeakKeyDictionary[Stack, dict[str, str]] = WeakKeyDictionary()
"""Stack -> tokenised string -> its rendering: a token resolves the same way anywhere in one stack."""


def render(scope: IConstruct, value: str) -> str:
    """Render a (possibly tokenised) string the way cdk-nag writes it in a finding id:
    ``{"Fn::GetAtt": ["X", "Arn"]}`` as ``<X.Arn>``, ``{"Ref": "X"}`` as ``<X>``, joins concatenated. A string
    without a token (CDK encodes string tokens as ``${Token[...]}``) is its own rendering: no jsii round trip; a
    tokenised one is resolved once per stack."""
    if "${Token[" not in value:
        return value
    stack = stack_of(scope)
    rendered = _RENDERED.setdefault(stack, {})
    if value not in rendered:
        rendered[value] = _render(stack.resolve(value))
    return rendered[value]


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
    acknowledge_wildcard_groups(scope, [(reason, resources, actions)])


def acknowledge_wildcard_groups(scope: IConstruct,
                                groups: Iterable[tuple[str, tuple[str, ...], tuple[str, ...]]]) -> None:
    """:func:`acknowledge_wildcards` for several ``(reason, resources, actions)`` at once: two round trips for all."""
    acknowledgments = [Acknowledgment(id=f, reason=reason) for reason, resources, actions in groups for f in (
        *(f"AwsSolutions-IAM5[Resource::{render(scope, arn)}]" for arn in resources),
        *(f"AwsSolutions-IAM5[Action::{action}]" for action in actions))]
    if acknowledgments:
        Validations.of(scope).acknowledge(*acknowledgments)
