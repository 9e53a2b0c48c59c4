"""One codec for the contract's configurations: a function's environment <-> its frozen ``*Config`` dataclass.
Pure, standard library only: no AWS imports.

Each field of a configuration declares its environment variable and how it travels with :func:`variable` (its
``dataclasses.field(metadata=...)``): the name, what is allowed (the error text), a unit for whole numbers and
durations, bounds, the choices of a text, and for the few values that need it a custom JSON encoder or decoder (the
failover's default-alarm elision, the shared prefix of ARNs). The field's type says the rest (:data:`SCALARS`): str,
int, float, bool, Decimal, timedelta (whole ``unit``), datetime (ISO 8601); tuples, mappings and nested dataclasses
travel as JSON. A field without a variable is not in the environment.

:class:`Configured` gives a configuration ``to_environment`` (only encodes: its values may be CDK tokens, so a text is
``str(value)`` and a JSON value goes through ``to_json``, ``Stack.of(scope).to_json_string`` on the construct side)
and ``from_environment`` (checks). A variable that is missing or malformed raises :class:`InvalidEnvironment`, naming
the variable, the value and what is allowed. The process environment is read in ``from_environment`` only (a test
holds the contract and lambdas/ to that).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Self, TypeVar

T = TypeVar("T")

ENV = "neuronfleet_contract.environment"
"""The metadata key of a field's :class:`Variable`."""


class InvalidEnvironment(ValueError):
    """A variable of the function's environment is missing or malformed; the function cannot run."""

    def __init__(self, variable: str, value: str | None, allowed: str) -> None:
        self.variable, self.value, self.allowed = variable, value, allowed
        got = "nothing (the variable is not set)" if value is None else _show(value)
        super().__init__(f"environment variable {variable}: got {got}; allowed: {allowed}")


def _show(value: str) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


UNITS = {"minutes": timedelta(minutes=1), "hours": timedelta(hours=1), "days": timedelta(days=1),
         "seconds": timedelta(seconds=1)}
"""The units a timedelta may travel in (a whole number of them)."""


@dataclasses.dataclass(frozen=True)
class Variable:
    """How one field travels: see :func:`variable`."""

    name: str
    allowed: str = ""
    unit: str = ""
    minimum: int = 0
    above: float = -math.inf
    at_most: float = math.inf
    choices: tuple[str, ...] = ()
    blank: bool = False
    encode: Callable[[Any], Any] | None = None
    decode: Callable[[Any], Any] | None = None
    written: Callable[[Any], bool] | None = None
    required: Callable[[Any], bool] | None = None
    of_config: bool = False
    check: Callable[[str], Any] | None = None


def variable(name: str, *, allowed: str = "", unit: str = "", minimum: int = 0, above: float = -math.inf,
             at_most: float = math.inf, choices: Sequence[str] = (), blank: bool = False,
             encode: Callable[[Any], Any] | None = None,
             decode: Callable[[Any], Any] | None = None, written: Callable[[Any], bool] | None = None,
             required: Callable[[Any], bool] | None = None, of_config: bool = False,
             check: Callable[[str], Any] | None = None) -> dict[str, Variable]:
    """The metadata of a configuration field carried by the environment variable ``name``:
    ``field(default=..., metadata=variable(name, ...))``.

    ``allowed``: what a value may be, as an error tells it (derived for numbers and durations from ``unit`` and the
    bounds); ``unit``: the unit of a whole number (``days``) or of a timedelta (one of :data:`UNITS`), or the word of
    a number (``percent``); ``minimum``: the least whole number; ``above``/``at_most``: a number's bounds; ``choices``:
    the texts allowed; ``blank``: a blank text is a value. ``encode``: value -> JSON document, ``decode``: JSON
    document -> value (raising ValueError, TypeError or KeyError on a wrong shape), for values the type alone cannot
    say; ``of_config``: ``encode`` is given the whole configuration, not the value; ``check``: called on a text read
    (raising InvalidEnvironment itself). ``written``: whether the configuration writes the variable (default: unless
    the value is None); ``required``: whether a missing variable is refused though the field has a default, given
    the fields read before it (an object with their values as attributes)."""
    return {ENV: Variable(name, allowed, unit, minimum, above, at_most, tuple(choices), blank, encode, decode,
                          written, required, of_config, check)}


# ------------------------------------------------------------------------------------------------ the types

def _hints(cls: type) -> dict[str, Any]:
    hints: dict[str, Any] | None = cls.__dict__.get("__config_hints__")
    if hints is None:
        hints = typing.get_type_hints(cls)
        type.__setattr__(cls, "__config_hints__", hints)
    return hints


def _optional(tp: Any) -> tuple[Any, bool]:
    """(the type, whether None is allowed) of ``X | None``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return args[0], True
    return tp, False


def _scalar(tp: Any) -> Any:
    """The scalar kind of ``tp`` (a Literal of texts is a str), or None for a JSON value."""
    if typing.get_origin(tp) is typing.Literal:
        return str
    for kind in (bool, str, int, float, Decimal, timedelta, datetime):
        if tp is kind:
            return kind
    return None


def document(value: Any, tp: Any = Any) -> Any:
    """``value`` as a JSON document: dataclasses as objects of their fields, tuples and sequences as lists, Decimal
    as its text, timedelta as whole seconds, datetime in ISO 8601; texts as they are (they may be tokens)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: document(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {k: document(v) for k, v in value.items()}
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, timedelta):
        return int(value.total_seconds())
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Sequence):
        return [document(v) for v in value]
    return value


def strings(doc: Any) -> tuple[str, ...]:
    """A JSON list of non-blank strings, as a tuple."""
    if not isinstance(doc, list) or not all(isinstance(s, str) and s.strip() for s in doc):
        raise ValueError("expected a list of non-blank strings")
    return tuple(doc)


# ------------------------------------------------------------------------------------------------ encode

def _text(value: Any, tp: Any, var: Variable) -> str:
    if tp is bool:
        return "true" if value else "false"
    if tp is timedelta:
        return str(value // UNITS[var.unit])
    if tp is datetime:
        return str(value.isoformat())
    return str(value)


def to_environment(config: Any, *, to_json: Callable[[Any], str] = json.dumps) -> dict[str, str]:
    """``config``'s environment: one variable per field that declares one and is written (by default: unless its value
    is None). Texts are ``str(value)`` and JSON values go through ``to_json``, so CDK tokens pass through."""
    hints = _hints(type(config))
    env: dict[str, str] = {}
    for f in dataclasses.fields(config):
        var: Variable | None = f.metadata.get(ENV)
        if var is None:
            continue
        value = getattr(config, f.name)
        if not (var.written(config) if var.written else value is not None):
            continue
        tp, _ = _optional(hints[f.name])
        kind = _scalar(tp)
        if var.encode is not None:
            env[var.name] = to_json(var.encode(config if var.of_config else value))
        elif kind is not None:
            env[var.name] = _text(value, kind, var)
        else:
            env[var.name] = to_json(document(value))
    return env


# ------------------------------------------------------------------------------------------------ decode

def allowed(var: Variable, kind: Any) -> str:
    """What ``var`` allows, as its errors say."""
    if var.allowed:
        return var.allowed
    if kind is timedelta or kind is int:
        return f"a whole number of {var.unit}, at least {var.minimum}"
    if kind is float:
        return f"a number of {var.unit} above {var.above:g} and at most {var.at_most:g}"
    if kind is bool:
        return "true | false"
    if var.choices:
        return " | ".join(var.choices)
    return "a JSON list of non-blank strings"


def _read(raw: str, kind: Any, var: Variable, says: str) -> Any:
    """The value of ``raw`` (a variable that is set); InvalidEnvironment if it is not one ``var`` allows."""
    if kind is str:
        if (not raw.strip() and not var.blank) or (var.choices and raw not in var.choices):
            raise InvalidEnvironment(var.name, raw, says)
        return raw
    if kind is bool:
        if raw not in ("true", "false"):
            raise InvalidEnvironment(var.name, raw, says)
        return raw == "true"
    try:
        convert: dict[Any, Callable[[str], Any]] = {int: int, timedelta: int, float: float, Decimal: Decimal,
                                                    datetime: datetime.fromisoformat}
        value = convert[kind](raw)
    except (ValueError, InvalidOperation):
        raise InvalidEnvironment(var.name, raw, says) from None
    if kind in (int, timedelta) and value < var.minimum:
        raise InvalidEnvironment(var.name, raw, says)
    if kind is float and not var.above < value <= var.at_most:
        raise InvalidEnvironment(var.name, raw, says)
    return value * UNITS[var.unit] if kind is timedelta else value


def _json(raw: str, tp: Any, var: Variable, says: str) -> Any:
    parse = var.decode or (strings if typing.get_origin(tp) in (tuple, Sequence) else None)
    if parse is None:
        raise TypeError(f"{var.name}: a {tp} needs a decoder (variable(..., decode=...))")
    try:
        return parse(json.loads(raw))
    except (ValueError, TypeError, KeyError) as exc:
        reason = f" ({exc})" if isinstance(exc, ValueError) and not isinstance(exc, json.JSONDecodeError) else ""
        raise InvalidEnvironment(var.name, raw, says + reason) from exc


def from_environment(cls: type[T], env: Mapping[str, str] | None = None, **given: Any) -> T:
    """The configuration ``cls`` in ``env`` (the process environment by default); InvalidEnvironment naming the first
    variable that is missing or malformed. ``given``: fields that do not travel in the environment."""
    source = os.environ if env is None else env
    hints = _hints(cls)
    values: dict[str, Any] = dict(given)
    seen = types.SimpleNamespace(**given)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        var: Variable | None = f.metadata.get(ENV)
        if var is None:
            continue
        if var.name not in source:
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            if has_default and not (var.required and var.required(seen)):
                setattr(seen, f.name, f.default if f.default_factory is dataclasses.MISSING else f.default_factory())
                continue
        values[f.name] = _decode(var, hints[f.name], source.get(var.name))
        setattr(seen, f.name, values[f.name])
    return cls(**values)


def _decode(var: Variable, annotation: Any, raw: str | None) -> Any:
    tp, _ = _optional(annotation)
    kind = _scalar(tp) if var.decode is None else None
    says = allowed(var, kind)
    if raw is None:
        raise InvalidEnvironment(var.name, None, says)
    value = _read(raw, kind, var, says) if kind is not None else _json(raw, tp, var, says)
    if var.check is not None:
        var.check(raw)
    return value


def read(cls: type, name: str, env: Mapping[str, str]) -> Any:
    """The one field ``name`` of the configuration ``cls`` from ``env`` (required: InvalidEnvironment when unset)."""
    (f,) = [f for f in dataclasses.fields(cls) if f.name == name]
    return _decode(f.metadata[ENV], _hints(cls)[name], env.get(f.metadata[ENV].name))


# ------------------------------------------------------------------------------------------------ documents

def to_document(config: Any) -> dict[str, Any]:
    """``config`` as a JSON object, one member per field that declares a :func:`variable` (its name is the member's
    key): Decimal as its text, timedelta as a whole number of its unit, datetime in ISO 8601, None as null; a custom
    ``encode`` as in the environment. The same metadata, another carrier: a document a function reads at run time
    (the capacity policy in SSM) rather than its environment."""
    hints = _hints(type(config))
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        var: Variable | None = f.metadata.get(ENV)
        if var is None:
            continue
        value = getattr(config, f.name)
        kind = _scalar(_optional(hints[f.name])[0])
        if var.encode is not None:
            out[var.name] = var.encode(config if var.of_config else value)
        elif value is None or kind in (bool, int, float, str):
            out[var.name] = value
        elif kind is timedelta:
            out[var.name] = int(value // UNITS[var.unit])
        else:
            out[var.name] = document(value)
    return out


def from_document(cls: type[T], doc: Mapping[str, Any]) -> T:
    """The configuration :func:`to_document` wrote; a member that is missing takes its field's default. Raises
    KeyError (a required member is missing), ValueError, TypeError or ArithmeticError on a wrong value."""
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        var: Variable | None = f.metadata.get(ENV)
        if var is None:
            continue
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if var.name not in doc and has_default:
            continue
        raw = doc[var.name]
        tp, optional = _optional(hints[f.name])
        if raw is None and optional:
            values[f.name] = None
            continue
        kind = _scalar(tp)
        if var.decode is not None:
            values[f.name] = var.decode(raw)
        elif kind is timedelta:
            values[f.name] = UNITS[var.unit] * int(raw)
        elif kind is Decimal:
            values[f.name] = Decimal(str(raw))
        elif kind is datetime:
            values[f.name] = datetime.fromisoformat(raw)
        elif kind is not None:
            values[f.name] = kind(raw)
        else:
            values[f.name] = strings(raw)
    return cls(**values)


class Configured:
    """A configuration the environment carries: ``to_environment`` and ``from_environment`` by :func:`variable`."""

    def to_environment(self, *, to_json: Callable[[Any], str] = json.dumps) -> dict[str, str]:
        """The function's environment. Pass ``to_json=Stack.of(scope).to_json_string`` when values are tokens."""
        return to_environment(self, to_json=to_json)

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Self:
        """The configuration in ``env`` (the process environment by default); InvalidEnvironment if one is wrong."""
        return from_environment(cls, os.environ if env is None else env)

    def to_document(self) -> dict[str, Any]:
        """The configuration as a JSON object (:func:`to_document`)."""
        return to_document(self)

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Self:
        """The configuration :meth:`to_document` wrote (:func:`from_document`)."""
        return from_document(cls, doc)


# ------------------------------------------------------------------------------------------------ shared encoders

TOKEN_MARKER = "${Token["
"""How aws-cdk-lib encodes an unresolved string in a construct's values: such a string is not the deployed text."""


def shared_prefix(values: Sequence[str]) -> Any:
    """``values`` as a JSON document that takes less of a function's 4 KB environment: ``{"prefix": p, "names":
    [...]}`` when they share a prefix ending at a ``/`` or ``:`` (ARNs of one kind, account and region share
    ``arn:aws:resource-groups:us-east-2:111111111111:group/``), else the list itself. Unresolved (token) values are
    never split. :func:`prefixed_strings` reads either form back."""
    values = list(values)
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


PREFIXED_ALLOWED = ', or {"prefix": "arn:...:group/", "names": [...]}'
"""What :func:`prefixed_strings` allows besides a list."""


def arns(name: str, *, allowed: str, **more: Any) -> dict[str, Variable]:
    """A field of ARNs of one kind (``name``, JSON): their shared prefix once, then the names (:func:`shared_prefix`),
    so that many fit Lambda's 4 KB."""
    return variable(name, allowed=allowed + PREFIXED_ALLOWED, encode=shared_prefix, decode=prefixed_strings,
                    **more)
