"""The base of every settings object: validated once, frozen, and reported as :class:`Problem`s.

Both paths build the same objects: a construct receives them from Python, the fleet file parses YAML into
them. A mistake raises :class:`InvalidSettings` (Python) or ``FleetConfigError`` (fleet file) with the same
text; the fleet file puts the field's path in front.
"""

from __future__ import annotations

import os
import types
import typing
from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any, ClassVar, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from ..core.problems import MISSING, InvalidSettings, Problem
from ..core.rules import close_matches, name_rule

Int = Annotated[int, Strict()]
"""A whole number: ``yes``, ``4.0`` or ``"4"`` are refused, not converted."""
PositiveInt = Annotated[int, Strict(), Field(ge=1)]
NonNegativeInt = Annotated[int, Strict(), Field(ge=0)]
Number = Annotated[float, Strict()]
"""A finite number (the models refuse .inf and .nan)."""
Bool = Annotated[bool, Strict()]

Name = Annotated[str, AfterValidator(name_rule)]
"""A name that becomes part of stack names, construct ids and AWS resource names."""


SCHEMA_DOCS = "NEURONFLEET_SCHEMA_DOCS"
"""The environment variable scripts/fleet_schema.py sets to ``1`` before it imports neuronfleet: the models then read
their fields' attribute docstrings as descriptions (pydantic's ``use_attribute_docstrings``), which the published
JSON Schema (docs/fleet-file.schema.json) carries. Nothing else reads a description (errors say field, value and
allowed), and on Python 3.11 pydantic finds them by tokenizing and parsing every model class's source: about 0.2 s of
CPU in every process that imports the settings (each ``neuronfleet`` command, each synth), so by default it is off."""


class Settings(BaseModel):
    """Frozen, no unknown keys, finite numbers. Construct it like a dataclass (keyword arguments);
    a mistake raises :class:`InvalidSettings` listing every problem, never a half-built object."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, validate_default=False,
                              use_attribute_docstrings=os.environ.get(SCHEMA_DOCS) == "1")
    what: ClassVar[str] = ""

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InvalidSettings(problems_from(exc, type(self)), what=type(self).what or type(self).__name__) \
                from None

    @model_validator(mode="after")
    def _check_rules(self) -> Self:
        raise_problems(self._problems())
        return self

    def _problems(self) -> Iterator[Problem]:
        """The rules that span fields (paths relative to this object); run once every field is valid."""
        return iter(())


class Problems(ValueError):
    """Raised inside a model validator to carry cross-field problems (paths relative to the model)."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(map(str, self.problems)))


def raise_problems(problems: Iterable[Problem]) -> None:
    found = list(problems)
    if found:
        raise Problems(found)


# ------------------------------------------------------------------------------- ValidationError -> Problem


def problems_from(exc: ValidationError, root: type[BaseModel]) -> list[Problem]:
    out: list[Problem] = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        ctx = err.get("ctx") or {}
        if isinstance(ctx.get("error"), Problems | InvalidSettings):
            # Problems: a model's cross-field rules; InvalidSettings: a nested settings object (pydantic calls
            # its __init__), its paths relative to that object

            out.extend(p.under(path(loc)) for p in ctx["error"].problems)
        elif err["type"] == "missing":
            out.append(Problem(path(loc), MISSING, describe(root, loc)))
        elif err["type"] == "extra_forbidden":
            known = fields_at(root, loc[:-1])
            near = close_matches(str(loc[-1]), known, n=1, cutoff=0.75) if known else ""
            out.append(Problem(path(loc), err.get("input"),
                               f"no key {loc[-1]!r} here" + (f" (did you mean {near!r}?)" if near else "")
                               + "; known keys: " + (", ".join(known) or "none")))
        else:
            out.append(Problem(path(loc), err.get("input"), allowed_from(err)))
    return out


def path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if part == "[key]":  # pydantic marks an error in a mapping's key; the key itself names the field
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_KINDS = {
    "int_parsing": "a whole number", "int_type": "a whole number", "int_from_float": "a whole number",
    "float_parsing": "a number", "float_type": "a number", "finite_number": "a finite number",
    "bool_parsing": "true or false", "bool_type": "true or false", "string_type": "text",
    "tuple_type": "a list", "list_type": "a list", "dict_type": "a mapping", "mapping_type": "a mapping",
    "model_type": "a mapping of settings", "model_attributes_type": "a mapping of settings",
    "date_from_datetime_parsing": "a date (YYYY-MM-DD)", "date_parsing": "a date (YYYY-MM-DD)",
    "date_type": "a date (YYYY-MM-DD)", "is_instance_of": "an object of the right type",
}
_BOUNDS = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}


def allowed_from(err: Any) -> str:
    ctx = err.get("ctx") or {}
    kind = err["type"]
    if kind in _KINDS:
        return _KINDS[kind]
    if kind in _BOUNDS:
        return f"a number {_BOUNDS[kind]} {next(iter(ctx.values()))}"
    if kind == "string_too_short":
        return f"text of at least {ctx.get('min_length')} character(s)"
    if kind == "string_too_long":
        return f"text of at most {ctx.get('max_length')} characters"
    if kind == "too_short":
        return f"at least {ctx.get('min_length')} entr{'y' if ctx.get('min_length') == 1 else 'ies'}"
    if kind == "too_long":
        return f"at most {ctx.get('max_length')} entries"
    if kind == "literal_error":
        return str(ctx.get("expected"))  # pydantic's "'a', 'b' or 'c'", as choices_text writes it
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    return err["msg"].replace("Input should be", "a value that should be")


def describe(root: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """What a missing field allows, from its annotation: a choice field lists its choices, a field with a rule of
    ``neuronfleet.core.rules`` says what the rule allows, a nested settings object names its keys."""
    declared = annotation_at(root, loc)
    ann = _unwrap(declared)
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return "a mapping of settings: " + ", ".join(ann.model_fields)
    if typing.get_origin(ann) is typing.Literal:
        return choices_text(typing.get_args(ann))
    return _rule_allows(declared) or _rule_allows(_field_metadata(root, loc)) or _PLAIN.get(ann, "a value")


def _field_metadata(root: type[BaseModel], loc: tuple[int | str, ...]) -> Any:
    """The field at ``loc`` as ``Annotated[annotation, *metadata]`` (pydantic moves a field's top-level Annotated
    metadata, e.g. its AfterValidator, out of ``annotation`` into ``metadata``)."""
    parent = _unwrap(annotation_at(root, loc[:-1])) if loc else None
    if not (loc and isinstance(parent, type) and issubclass(parent, BaseModel) and loc[-1] in parent.model_fields):
        return None
    info = parent.model_fields[str(loc[-1])]
    return Annotated[(info.annotation, *info.metadata)] if info.metadata else None


def choices_text(choices: Iterable[Any]) -> str:
    """``'evaluation', 'pilot' or 'production'``: how every choice field's allowed values read (pydantic's own
    wording for a wrong value, ``literal_error``)."""
    shown = [repr(c) for c in choices]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def _rule_allows(ann: Any) -> str:
    """The allowed text of a text field's rule (an ``AfterValidator`` of ``Annotated[str, ...]``): the message the
    rule gives for an empty value, which is what it allows."""
    while typing.get_origin(ann) in (typing.Union, types.UnionType):
        ann = next((a for a in typing.get_args(ann) if a is not type(None)), None)
    if typing.get_origin(ann) is not Annotated or typing.get_args(ann)[0] is not str:
        return ""
    for meta in typing.get_args(ann)[1:]:
        if isinstance(meta, AfterValidator):
            try:
                meta.func("")  # type: ignore[call-arg]
            except ValueError as exc:
                return str(exc)
            except Exception:  # a rule that needs more than a value: say nothing rather than guess
                return ""
    return ""


_PLAIN = {str: "text", int: "a whole number", float: "a number", bool: "true or false"}


def _unwrap(ann: Any) -> Any:
    """Follow Optional/tuple/Mapping/Annotated to the class inside, if any."""
    origin = typing.get_origin(ann)
    if origin is Annotated:
        return _unwrap(typing.get_args(ann)[0])
    if origin in (typing.Union, types.UnionType):
        for a in typing.get_args(ann):
            if a is not type(None):
                return _unwrap(a)
    if origin is tuple:
        return _unwrap(typing.get_args(ann)[0])
    if origin in (Mapping, dict):
        return _unwrap(typing.get_args(ann)[1])
    return ann


def annotation_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> Any:
    ann: Any = root
    for part in loc:
        model = _unwrap(ann)
        if isinstance(part, int):
            continue
        if isinstance(model, type) and issubclass(model, BaseModel) and part in model.model_fields:
            ann = model.model_fields[part].annotation
        elif typing.get_origin(ann) in (Mapping, dict):
            ann = typing.get_args(ann)[1]
        else:
            return None
    return ann


def fields_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    model = _unwrap(annotation_at(root, loc))
    if isinstance(model, type) and issubclass(model, BaseModel):
        return list(model.model_fields)
    return []
