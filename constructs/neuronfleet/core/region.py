"""Region-dependent rules, applied where a construct's stack has a concrete region."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from aws_cdk import Stack, Token
from constructs import IConstruct

from .problems import InvalidSettings, Problem


def check_in_region(scope: IConstruct, what: str, problems: Callable[[str], Iterable[Problem]]) -> None:
    """Raise :class:`InvalidSettings` with ``problems(region)`` when the stack's region is known (an
    environment-agnostic stack defers these checks to CloudFormation)."""
    region = Stack.of(scope).region
    if Token.is_unresolved(region):
        return
    found = list(problems(region))
    if found:
        raise InvalidSettings(found, what=what)
