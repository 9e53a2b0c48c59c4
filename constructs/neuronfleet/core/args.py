"""Construct arguments, checked the same way by every construct: one name and one type per kind of argument.

The kit's conventions (aws-cdk-lib's own, where it has one):

- the alerts topic is ``topic: sns.ITopic``;
- several subnets are ``vpc_subnets: ec2.SubnetSelection``; a construct
  that launches into exactly one subnet (a training cluster on reserved capacity, which lives in one AZ) takes
  ``subnet: ec2.ISubnet``;
- a length of time is a ``Duration``; settings objects, which a fleet file fills, keep seconds (``*_s``);
- a settings argument is its settings class (or a dict of its fields); anything else raises
  :class:`~neuronfleet.core.problems.InvalidSettings` naming the argument, the type given and the type expected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from .problems import InvalidSettings, Problem

S = TypeVar("S")


def wrong_type(argument: str, value: Any, expected: str, *, what: str) -> InvalidSettings:
    """The error for an argument of the wrong type: ``<what>: <argument>: got <value>; allowed: <expected> (got a
    <type>)``."""
    return InvalidSettings([Problem(argument, value, f"{expected} (got a {type(value).__name__})")], what=what)


def settings_argument(value: Any, cls: type[S], *, what: str, argument: str = "settings") -> S:
    """``value`` as a ``cls``: the object itself, or a dict of its fields; anything else (a list, a string) is
    refused with InvalidSettings naming the argument and both types."""
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return cls(**value)
    raise wrong_type(argument, value, f"a {cls.__name__} (or a dict of its fields)", what=what)


def string_list(argument: str, value: Any, *, what: str) -> list[str]:
    """A list of strings; one string is one item (never split into characters)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping) or not hasattr(value, "__iter__"):
        raise wrong_type(argument, value, "a list of strings (or one string)", what=what)
    items = list(value)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise wrong_type(f"{argument}[{i}]", item, "a string", what=what)
    return items


def duck(argument: str, value: Any, attribute: str, expected: str, *, what: str) -> None:
    """Refuse ``value`` unless it has ``attribute`` (jsii interfaces such as ``sns.ITopic`` or ``ec2.ISubnet`` are
    protocols isinstance cannot check: a topic has ``topic_arn``, a subnet ``subnet_id``)."""
    if value is None or isinstance(value, str | Mapping | list | tuple) or not (
            hasattr(type(value), attribute) or hasattr(value, attribute)):  # a jsii class's property: no round trip
        raise wrong_type(argument, value, expected, what=what)


def check_argument(field: str, value: Any, rule: Any) -> None:
    """Check one construct argument that is not part of a settings object with a rule of ``neuronfleet.core.rules``
    (raise :class:`InvalidSettings` naming the argument)."""
    try:
        rule(value)
    except ValueError as exc:
        raise InvalidSettings([Problem(field, value, str(exc))], what="argument") from None
