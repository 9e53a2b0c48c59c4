"""How neuronfleet says no: one :class:`Problem` per mistake, naming the field, the value and what is allowed.

The construct API and the fleet file share every rule (``neuronfleet.settings``); both report with these
classes, so the same mistake reads the same from Python and from YAML (the fleet file adds the field's path).
No module here imports aws-cdk-lib. ``Problem``, ``render``, ``show`` and ``MISSING`` live in the contract
(``neuronfleet_contract.problems``), so the handlers' contract modules refuse in the same words.
"""

from __future__ import annotations

from collections.abc import Iterable

from neuronfleet_contract.problems import MISSING, Problem, render, show


class InvalidSettings(ValueError):
    """Settings a construct cannot use; ``problems`` lists every mistake found (never a partial object)."""

    def __init__(self, problems: Iterable[Problem], *, what: str = "settings") -> None:
        self.problems = list(problems)
        self.what = what
        super().__init__(render(self.problems, what))


class FleetConfigError(ValueError):
    """A fleet file that cannot be used; ``problems`` lists every mistake found. (Defined here, beside
    :class:`InvalidSettings`, so that catching it imports no pydantic; ``neuronfleet.fleetfile.schema`` re-exports
    it.)"""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(render(problems, f"{source}: the fleet file"))


__all__ = ["MISSING", "FleetConfigError", "InvalidSettings", "Problem", "render", "show"]
