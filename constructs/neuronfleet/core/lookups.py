"""aws-cdk-lib values and lookups the kit reads once: each read from Python is a jsii round trip to Node.js.

A fleet of a hundred endpoints asks for the same ``Duration.minutes(5)``, the same ``Stack.of(...)`` and the same
principal hundreds of times; the answers never change (durations, peers, ports and principals are immutable values,
and a construct never moves to another stack), so each is asked once and shared.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from weakref import WeakKeyDictionary

import jsii
from aws_cdk import ArnFormat, Duration, IStableStringProducer, Lazy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import IConstruct

_STACKS: WeakKeyDictionary[IConstruct, Stack] = WeakKeyDictionary()


@jsii.implements(IStableStringProducer)
class _Produce:
    def __init__(self, produce: Callable[[], str]) -> None:
        self._produce = produce

    def produce(self) -> str:
        return self._produce()


def lazy_string(produce: Callable[[], str]) -> str:
    """A string token that ``produce`` answers once, at synthesis (after every construct is built)."""
    return Lazy.string(_Produce(produce))


def stack_of(scope: IConstruct) -> Stack:
    """``Stack.of(scope)``, asked once per construct (a stack is its own)."""
    stack = _STACKS.get(scope)
    if stack is None:
        stack = _STACKS[scope] = scope if isinstance(scope, Stack) else Stack.of(scope)
    return stack


def in_stack(scope: IConstruct, stack: Stack) -> None:
    """Record that ``scope`` (created below ``stack``, not a stack itself) is in ``stack``: :func:`stack_of` then
    answers without asking."""
    _STACKS[scope] = stack


@cache
def seconds(amount: float) -> Duration:
    return Duration.seconds(amount)


@cache
def minutes(amount: float) -> Duration:
    return Duration.minutes(amount)


@cache
def days(amount: float) -> Duration:
    return Duration.days(amount)


@cache
def service_principal(service: str) -> iam.ServicePrincipal:
    """``iam.ServicePrincipal(service)`` (no conditions: shared by every role it trusts)."""
    return iam.ServicePrincipal(service)


@cache
def any_ipv4() -> ec2.IPeer:
    return ec2.Peer.any_ipv4()


@cache
def tcp(port: int) -> ec2.Port:
    return ec2.Port.tcp(port)


@cache
def all_traffic() -> ec2.Port:
    return ec2.Port.all_traffic()


def region_of(scope: IConstruct) -> str:
    """``Stack.of(scope).region`` (a region name, or a token in an environment-agnostic stack), asked once per
    stack."""
    stack = stack_of(scope)
    region = _REGIONS.get(stack)
    if region is None:
        region = _REGIONS[stack] = stack.region
    return region


_REGIONS: WeakKeyDictionary[Stack, str] = WeakKeyDictionary()


_NAME = "NEURONFLEETRESOURCENAME"
"""Where :func:`arn_in` puts a resource's name into the ARN its stack formatted once."""
_ARNS: WeakKeyDictionary[Stack, dict[tuple[str, str, ArnFormat | None], str]] = WeakKeyDictionary()


def arn_in(stack: Stack, *, service: str, resource: str, resource_name: str,
           arn_format: ArnFormat | None = None) -> str:
    """``stack.format_arn(...)``: the same string, formatted once per stack, service, resource type and format; a
    plain name (no token) is put into it in Python, a tokenised one is formatted by the stack."""
    if "${Token[" in resource_name:
        return stack.format_arn(service=service, resource=resource, resource_name=resource_name,
                                arn_format=arn_format)
    formats = _ARNS.setdefault(stack, {})
    key = (service, resource, arn_format)
    if key not in formats:
        formats[key] = stack.format_arn(service=service, resource=resource, resource_name=_NAME,
                                        arn_format=arn_format)
    return formats[key].replace(_NAME, resource_name)
