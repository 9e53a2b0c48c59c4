"""Settings of the fleet's capacity policy: what ``neuronfleet capacity buy`` and the Capacity Block lifecycle function
may buy, extend and fall back to. The fleet file's ``capacity_policy:`` section parses into it.

The rules it is judged by (and the lifecycle facts with their sources) live in
:mod:`neuronfleet_contract.capacity_lifecycle`; this object holds the defaults and checks the fields.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Annotated, ClassVar

from pydantic import Field

from neuronfleet_contract.capacity_lifecycle import (
    CHECKPOINT_LEAD_MINUTES,
    DECIDE_BEFORE_MINUTES,
    EXTENSION_BUDGET_USD,
    EXTENSION_HOURS,
    CapacityPolicy,
    duration_refusal,
)

from ..core.problems import Problem
from ._base import Bool, Settings

Usd = Annotated[Decimal, Field(ge=0, max_digits=14, decimal_places=4, allow_inf_nan=False)]
Minutes = Annotated[int, Field(strict=True, ge=1)]


class CapacityPolicySettings(Settings):
    """What the kit may buy for the fleet. Money has no default: a fleet file that wants purchases names its limits.

    - ``max_upfront_fee_usd``: the most one Capacity Block may cost (its whole upfront fee);
    - ``max_usd_per_instance_hour``: the most per instance-hour (fee / (instances x hours));
    - ``availability_zones``: where a block may be (empty: the network's training AZ, filled in by the fleet file);
    - ``start_after`` / ``start_before``: the window an offer's start must fall in (timezone-aware, ISO 8601);
    - ``allow_extension``, ``extension_budget_usd`` (per block, all its extensions), ``extension_hours``;
    - ``fleet_extension_budget_usd``: the most all the fleet's extensions may cost in a calendar month (UTC), across
      its blocks and lifecycle functions, held atomically before each purchase (default: ``extension_budget_usd``);
    - ``decide_before_minutes``: how long before a block's end the lifecycle function extends or drains;
    - ``checkpoint_lead_minutes``: how long before the instances stop the jobs are told to checkpoint;
    - ``fallback_after_minutes``: a job held for Trainium capacity longer goes to the GPU pool (if it names a GPU job
      definition); unset: held jobs are only announced.
    """

    what: ClassVar[str] = "capacity_policy"
    max_upfront_fee_usd: Usd
    max_usd_per_instance_hour: Usd
    availability_zones: tuple[str, ...] = ()
    start_after: datetime | None = None
    start_before: datetime | None = None
    allow_extension: Bool = False
    extension_budget_usd: Usd = EXTENSION_BUDGET_USD
    fleet_extension_budget_usd: Usd | None = None
    extension_hours: Annotated[int, Field(strict=True, ge=24)] = EXTENSION_HOURS
    decide_before_minutes: Minutes = DECIDE_BEFORE_MINUTES
    checkpoint_lead_minutes: Minutes = CHECKPOINT_LEAD_MINUTES
    fallback_after_minutes: Minutes | None = None

    def _problems(self) -> Iterator[Problem]:
        for name in ("start_after", "start_before"):
            when = getattr(self, name)
            if when is not None and when.tzinfo is None:
                yield Problem(name, when.isoformat(), "a date and time with its offset (e.g. 2026-12-01T00:00:00Z)")
        if self.start_after and self.start_before and self.start_before.tzinfo and self.start_after.tzinfo \
                and self.start_before <= self.start_after:
            yield Problem("start_before", self.start_before.isoformat(),
                          f"later than start_after ({self.start_after.isoformat()})")
        refusal = duration_refusal(self.extension_hours, what="extension_hours")
        if refusal:
            yield Problem("extension_hours", self.extension_hours, refusal.limit)
        if self.allow_extension and self.extension_budget_usd <= 0:
            yield Problem("extension_budget_usd", str(self.extension_budget_usd),
                          "more than 0 when allow_extension is true (the most one block's extensions may cost)")
        if self.allow_extension and self.fleet_extension_budget_usd is not None and self.fleet_extension_budget_usd <= 0:
            yield Problem("fleet_extension_budget_usd", str(self.fleet_extension_budget_usd),
                          "more than 0 when allow_extension is true (the most all the fleet's extensions may cost a "
                          "month), or unset for extension_budget_usd")
        if self.checkpoint_lead_minutes >= self.decide_before_minutes:
            yield Problem("checkpoint_lead_minutes", self.checkpoint_lead_minutes,
                          f"less than decide_before_minutes ({self.decide_before_minutes}): the extension is decided "
                          "before the jobs are told to checkpoint")

    def policy(self, *, training_azs: Sequence[str] = ()) -> CapacityPolicy:
        """The policy the command and the lifecycle function apply (``training_azs``: the network's, used when
        ``availability_zones`` is empty)."""
        return CapacityPolicy(
            max_upfront_fee_usd=self.max_upfront_fee_usd, max_usd_per_instance_hour=self.max_usd_per_instance_hour,
            availability_zones=tuple(self.availability_zones or training_azs), start_after=self.start_after,
            start_before=self.start_before, allow_extension=self.allow_extension,
            extension_budget_usd=self.extension_budget_usd, extension_hours=self.extension_hours,
            fleet_extension_budget_usd=self.fleet_extension_budget_usd,
            decide_before=timedelta(minutes=self.decide_before_minutes),
            checkpoint_lead=timedelta(minutes=self.checkpoint_lead_minutes),
            fallback_after=None if self.fallback_after_minutes is None
            else timedelta(minutes=self.fallback_after_minutes))
