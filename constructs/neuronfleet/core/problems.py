"""How neuronfleet says no: one :class:`Problem` per mistake, naming the field, the value and what is allowed.

The construct API and the fleet file share every rule (``neuronfleet.settings``); both report with these
classes, so the same mistake reads the same from Python and from YAML (the fleet file adds the field's path).
No module here imports aws-cdk-lib.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MISSING: Any = object()
"""The value of a required field that was not given."""


@dataclass(frozen=True)
class Problem:
    """One mistake: ``path`` (a field, or a dotted/indexed path in a fleet file), the value, what is allowed."""

    path: str
    value: Any
    allowed: str

    def __str__(self) -> str:
        return f"{self.path}: got {show(self.value)}; allowed: {self.allowed}"

    def under(self, prefix: str) -> Problem:
        """The same problem one level down: ``endpoints[0]`` + ``name`` -> ``endpoints[0].name``."""
        if not prefix:
            return self
        if self.path in ("", "(top level)"):
            return Problem(prefix, self.value, self.allowed)
        joiner = "" if self.path.startswith("[") else "."
        return Problem(f"{prefix}{joiner}{self.path}", self.value, self.allowed)


class InvalidSettings(ValueError):
    """Settings a construct cannot use; ``problems`` lists every mistake found (never a partial object)."""

    def __init__(self, problems: Iterable[Problem], *, what: str = "settings") -> None:
        self.problems = list(problems)
        self.what = what
        super().__init__(render(self.problems, what))


def render(problems: list[Problem], what: str) -> str:
    if len(problems) == 1:
        return f"{what}: {problems[0]}"
    return f"{what}: {len(problems)} problems:\n" + "\n".join(f"  - {p}" for p in problems)


def show(value: Any) -> str:
    """A value as the user wrote it, shortened to 80 characters."""
    if value is MISSING:
        return "nothing (the field is required)"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
