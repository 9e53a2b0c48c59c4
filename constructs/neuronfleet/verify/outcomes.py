"""What a check of ``neuronfleet verify`` finds, and the exit code of a run. Pure: no AWS call, no aws-cdk-lib.

A check answers one row of docs/checks.md (a fact no public source confirmed offline) on the user's account, after
a deploy, with read-only calls. Its finding is one of:

- ``holds``: the account shows the fact;
- ``broken``: the account shows it wrong: ``fix`` says what breaks and what to do;
- ``not yet``: too early to tell (no instance launched yet, a fee not billed yet): ``fix`` says when to run again;
- ``unchecked``: the check could not run (credentials, access denied, throttled, the fleet has no such part, or the
  check needs a change to the account, which verify never makes: ``fix`` gives the command to run by hand).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, get_args

Outcome = Literal["holds", "broken", "not yet", "unchecked"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

FAILING: frozenset[Outcome] = frozenset({"broken", "unchecked"})
"""Outcomes that make the run exit 1: a broken fact, or one not checked (a check not made is not a pass). ``not yet``
does not: nothing is wrong, the account cannot tell yet (the line says when to run again)."""


@dataclass(frozen=True)
class Finding:
    outcome: Outcome
    seen: str
    """What the account showed (or why nothing could be read), in a line."""
    fix: str = ""
    """broken: what breaks and the fix; not yet: when to run again; unchecked: what would let it run, or the
    command to run by hand."""

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"Finding.outcome: got {self.outcome!r}; allowed: one of {', '.join(OUTCOMES)}")
        if not self.seen.strip():
            raise ValueError("Finding.seen: got an empty text; allowed: what the account showed, in a line")
        if self.outcome != "holds" and not self.fix.strip():
            raise ValueError(f"Finding.fix: got nothing for a {self.outcome!r} finding; allowed: what to do next")


def holds(seen: str) -> Finding:
    return Finding("holds", seen)


def broken(seen: str, fix: str) -> Finding:
    return Finding("broken", seen, fix)


def not_yet(seen: str, again: str) -> Finding:
    return Finding("not yet", seen, again)


def unchecked(seen: str, fix: str) -> Finding:
    return Finding("unchecked", seen, fix)


def exit_code(findings: Iterable[Finding]) -> int:
    """0: nothing broken and nothing unchecked; 1: something broken or unchecked."""
    return 1 if any(f.outcome in FAILING for f in findings) else 0
