"""``neuronfleet verify``: every fact docs/checks.md lists as unconfirmed, checked on the user's account after a deploy
with read-only calls (docs/cli.md)."""

from __future__ import annotations

from . import batch_jobs, capacity, cost, inference, kubernetes, training
from .registry import Check

CHECKS: tuple[Check, ...] = (*training.CHECKS, *cost.CHECKS, *capacity.CHECKS, *inference.CHECKS, *kubernetes.CHECKS,
                               *batch_jobs.CHECKS)
"""Every check, one per row of docs/checks.md (tests/unit/test_verify.py holds the two to each other)."""

__all__ = ["CHECKS", "Check"]
