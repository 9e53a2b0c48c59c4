"""What every AWS Batch compute environment of the kit shares: how a redeploy treats running jobs.

Used by :class:`neuronfleet.GpuPool` (``GpuPoolSettings.update_timeout_minutes``) and available to any
settings object that builds a compute environment through ``neuronfleet.training.batch``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, Strict

from ..facts.catalog import BATCH_UPDATE_TIMEOUT_MINUTES

_MIN, _AWS_DEFAULT, _MAX = BATCH_UPDATE_TIMEOUT_MINUTES

UpdateTimeoutMinutes = Annotated[int, Strict(), Field(ge=_MIN, le=_MAX)]
"""How long an infrastructure update of a compute environment waits for a running job before it replaces the
job's instance (Batch UpdatePolicy ``jobExecutionTimeoutMinutes``: 1 to 7,200 minutes)."""

DEFAULT_UPDATE_TIMEOUT_MINUTES: int = _MAX
"""5 days, the most Batch allows (its own default is 30 minutes, which would end a multi-day job 30 minutes
into any redeploy that changes the launch template). Batch's API reference warns that a longer wait delays
security patches on busy instances; the kit's compute environments scale to 0 when idle, so an instance lives
only as long as its jobs."""

AllocationStrategy = Literal["BEST_FIT_PROGRESSIVE", "BEST_FIT_PROGRESSIVE_ORDERED"]
"""On-Demand allocation strategies a kit compute environment may use (botocore's batch model, ComputeResource
``allocationStrategy``, read 2026-11-22):

- ``BEST_FIT_PROGRESSIVE`` (default): among the types large enough for the queued jobs, Batch prefers the lower
  cost per vCPU, and moves to other types when it cannot get more of the ones it chose. It does *not* follow the
  order of the list. It is one of the strategies the Batch user guide names as supporting infrastructure
  updates (https://docs.aws.amazon.com/batch/latest/userguide/infrastructure-updates.html, read 2026-11-22), the
  mechanism that lets a redeploy wait for running jobs.
- ``BEST_FIT_PROGRESSIVE_ORDERED``: Batch selects types in the order of ``instanceTypes``, skipping those too
  small for the job (EC2 On-Demand only). CloudFormation's schema accepts it; the user guide's infrastructure
  update page (as read on 2026-11-22) does not list it, so whether a launch-template change then updates in
  place rather than failing is not confirmed.
"""
