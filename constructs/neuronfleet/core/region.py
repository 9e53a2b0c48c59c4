"""Region-dependent rules, applied where a construct's stack has a concrete region."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from aws_cdk import Token
from constructs import IConstruct

from .lookups import region_of
from .problems import InvalidSettings, Problem

_UNRESOLVED: dict[str, bool] = {}


def _unresolved(region: str) -> bool:
    """``Token.is_unresolved(region)``, asked once per value."""
    if region not in _UNRESOLVED:
        _UNRESOLVED[region] = Token.is_unresolved(region)
    return _UNRESOLVED[region]


def check_in_region(scope: IConstruct, what: str, problems: Callable[[str], Iterable[Problem]]) -> None:
    """Raise :class:`InvalidSettings` with ``problems(region)`` when the stack's region is known (an
    environment-agnostic stack defers these checks to CloudFormation)."""
    region = region_of(scope)
    if _unresolved(region):
        return
    found = list(problems(region))
    if found:
        raise InvalidSettings(found, what=what)
