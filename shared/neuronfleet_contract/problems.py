"""How the kit says no, in the words both sides use: one :class:`Problem` per mistake, naming the field (or path),
the value and what is allowed. Pure and standalone, so the constructs (``neuronfleet.core.problems`` re-exports it,
beside the construct error ``InvalidSettings``) and the handlers' contract modules refuse in one format.
"""

from __future__ import annotations

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
