"""What a check of ``neuronfleet verify`` is, and how one runs. Pure: no AWS call (the reads come in the run's
:class:`Context`).

Each :class:`Check` answers one row of docs/checks.md, by its ``id`` (the row's first cell; tests/unit/test_verify.py
holds the rows and the checks to each other). A check that verify can make with read-only calls has a ``run``; one
that would need a change to the account (an invocation, a test deploy, a shell on an instance) has none: verify lists
it as ``unchecked`` with the command to run by hand (``by_hand``), and never runs it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..preflight.checks import Failed
from .outcomes import Finding, unchecked

if TYPE_CHECKING:
    from ..fleetfile.schema import Fleet

ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
"""A check id: lowercase words joined by hyphens (``batch-capacity-block``)."""


@dataclass(frozen=True)
class Context:
    """One run: the fleet file, the account's reads (:class:`~neuronfleet.verify.reads.Reads`) and the time."""

    fleet: Fleet
    reads: Any
    now: datetime


@dataclass(frozen=True)
class Check:
    id: str
    fact: str
    """The unconfirmed fact, in a line (the row's first column says it whole)."""
    by_hand: str
    """The one check on the account, as docs/checks.md gives it."""
    run: Callable[[Context], Finding] | None = None
    """The read-only check; None: it needs what verify never does (``manual`` says what)."""
    manual: str = ""
    """Why verify does not make this check itself (a change to the account, a shell on an instance, a source outside
    AWS)."""
    permission: str = ""
    """The IAM actions the check's reads need (the fix when access is denied)."""
    applies: Callable[[Fleet], str] | None = None
    """'' when the check applies to the fleet, else why not (the fleet has no such part): then it is not run."""

    def __post_init__(self) -> None:
        if not ID.match(self.id):
            raise ValueError(f"Check.id: got {self.id!r}; allowed: lowercase words joined by hyphens")
        if (self.run is None) == (not self.manual):
            raise ValueError(f"Check {self.id}: give either run (a read-only check) or manual (why there is none)")
        if not self.by_hand.strip():
            raise ValueError(f"Check {self.id}: by_hand is empty; allowed: the command docs/checks.md gives")

    def not_applying(self, fleet: Fleet) -> str:
        return self.applies(fleet) if self.applies else ""

    def check(self, context: Context) -> Finding:
        """The finding of this check on the account: its run, or ``unchecked`` with the command to run by hand."""
        if self.run is None:
            return unchecked(f"not made by verify: {self.manual}", f"by hand: {self.by_hand}")
        return self.run(context)


VERIFY_AGAIN = "run neuronfleet verify again"


def unreadable(failed: Failed, check: Check) -> Finding:
    """A read that gave no answer: ``unchecked``, the fix matching the cause (preflight's reading of a failure)."""
    fix = {
        "credentials": "refresh the credentials (aws sso login, AWS_PROFILE, ...), check them with aws sts "
                       f"get-caller-identity, and {VERIFY_AGAIN}",
        "access denied": f"allow {check.permission or 'the read'} to the caller and {VERIFY_AGAIN}, or check by "
                         f"hand: {check.by_hand}",
        "throttled": f"throttled after botocore's standard retries: {VERIFY_AGAIN} in a minute",
        "network": f"the AWS endpoint did not answer: check the network or proxy and {VERIFY_AGAIN}",
    }.get(failed.cause, f"check by hand: {check.by_hand}")
    return unchecked(f"could not read: {failed.cause} ({failed})", fix)
