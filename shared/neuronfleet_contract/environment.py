"""Typed reads of a Lambda's environment for the settings objects. Pure: no AWS imports.

Each handler's settings module (``*/settings.py``) reads its variables through :class:`Variables`, in its
``from_environment`` and nowhere else (a test holds every other module of lambdas/ to that). A variable that
is missing or malformed raises :class:`InvalidEnvironment`, naming the variable, the value and what is allowed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")
N = TypeVar("N", int, float)


class InvalidEnvironment(ValueError):
    """A variable of the function's environment is missing or malformed; the function cannot run."""

    def __init__(self, variable: str, value: str | None, allowed: str) -> None:
        self.variable, self.value, self.allowed = variable, value, allowed
        got = "nothing (the variable is not set)" if value is None else _show(value)
        super().__init__(f"environment variable {variable}: got {got}; allowed: {allowed}")


def _show(value: str) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


class Variables:
    """The variables of one environment, read as the types the settings need."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env

    def text(self, name: str, *, allowed: str, default: str | None = None) -> str:
        """A non-blank string; ``default`` when the variable is not set (required without one)."""
        raw = self._env.get(name)
        if raw is None and default is not None:
            return default
        if raw is None or not raw.strip():
            raise InvalidEnvironment(name, raw, allowed)
        return raw

    def whole(self, name: str, *, default: int, minimum: int, unit: str) -> int:
        """A whole number of ``unit``, at least ``minimum``; ``default`` when not set."""
        return self._scalar(name, default, int, lambda v: v >= minimum, f"a whole number of {unit}, at least {minimum}")

    def number(self, name: str, *, default: float, above: float, at_most: float, unit: str) -> float:
        """A number of ``unit`` in (``above``, ``at_most``]; ``default`` when not set."""
        return self._scalar(name, default, float, lambda v: above < v <= at_most,
                            f"a number of {unit} above {above:g} and at most {at_most:g}")

    def namespace(self, name: str, *, default: str) -> str:
        """A CloudWatch namespace; ``default`` (one of neuronfleet_contract.namespaces) when not set."""
        return self.text(name, default=default, allowed="a CloudWatch namespace")

    def _scalar(self, name: str, default: N, convert: Callable[[str], N], fits: Callable[[N], bool], allowed: str) -> N:
        raw = self._env.get(name)
        if raw is None:
            return default
        try:
            value = convert(raw)
        except ValueError:
            raise InvalidEnvironment(name, raw, allowed) from None
        if not fits(value):
            raise InvalidEnvironment(name, raw, allowed)
        return value

    def json(self, name: str, parse: Callable[[Any], T], *, allowed: str, default: T | None = None) -> T:
        """A JSON document, shaped by ``parse`` (which raises ValueError, TypeError or KeyError on a wrong
        shape); ``default`` when not set (required without one)."""
        raw = self._env.get(name)
        if raw is None and default is not None:
            return default
        if raw is None:
            raise InvalidEnvironment(name, raw, allowed)
        try:
            return parse(json.loads(raw))
        except (ValueError, TypeError, KeyError) as exc:
            reason = f" ({exc})" if isinstance(exc, ValueError) and not isinstance(exc, json.JSONDecodeError) else ""
            raise InvalidEnvironment(name, raw, allowed + reason) from exc


def strings(doc: Any) -> tuple[str, ...]:
    """A JSON list of non-blank strings, as a tuple."""
    if not isinstance(doc, list) or not all(isinstance(s, str) and s.strip() for s in doc):
        raise ValueError("expected a list of non-blank strings")
    return tuple(doc)


TOKEN_MARKER = "${Token["
"""How aws-cdk-lib encodes an unresolved string in a construct's values: such a string is not the deployed text."""


def shared_prefix(values: list[str]) -> Any:
    """``values`` as a JSON document that takes less of a function's 4 KB environment: ``{"prefix": p, "names":
    [...]}`` when they share a prefix ending at a ``/`` or ``:`` (ARNs of one kind, account and region share
    ``arn:aws:resource-groups:us-east-2:111111111111:group/``), else the list itself. Unresolved (token) values are
    never split. :func:`prefixed_strings` reads either form back."""
    if len(values) < 2 or any(TOKEN_MARKER in v for v in values):
        return list(values)
    first, last = min(values), max(values)
    common = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), min(len(first), len(last)))
    cut = max(first.rfind("/", 0, common), first.rfind(":", 0, common)) + 1
    if cut == 0 or any(len(v) == cut for v in values):
        return list(values)
    return {"prefix": first[:cut], "names": [v[cut:] for v in values]}


def prefixed_strings(doc: Any) -> tuple[str, ...]:
    """A JSON list of non-blank strings, or ``{"prefix": p, "names": [...]}`` (:func:`shared_prefix`), as a tuple."""
    if isinstance(doc, dict):
        prefix, names = doc["prefix"], strings(doc["names"])
        if not isinstance(prefix, str) or not prefix.strip():
            raise ValueError("prefix is not a non-blank string")
        return tuple(prefix + n for n in names)
    return strings(doc)
