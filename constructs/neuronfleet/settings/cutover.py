"""Settings of an endpoint's cutover: how SageMaker's deployment guardrails move its traffic when the endpoint's
configuration changes (blue/green with canary or linear steps and baking periods, or rolling), and which hardware
its serving variant runs on. Every bound is SageMaker's (``facts/data/deployment_guardrails.json``)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import ClassVar, Literal

from pydantic import Field

from ..core.problems import Problem
from ..facts.guardrails import guardrails
from ._base import Bool, Int, Settings

_G = guardrails()
Traffic = Literal["canary", "linear", "all_at_once", "rolling"]
DEFAULT_STEP_PERCENT = {"canary": 10, "linear": 20, "rolling": 25}
"""neuronfleet's defaults (within SageMaker's limits): a 10 % canary; linear steps of 20 % (five steps); rolling
batches of 25 %."""
DEFAULT_BAKE_S = 600
"""neuronfleet's default baking period of each step and of the end (ten minutes: two of the endpoint alarms' 5-minute
periods)."""
DEPLOYMENT_MARGIN_S = 600
"""Added to the waits and the model's download and startup timeouts for the default deployment timeout."""


class CutoverSettings(Settings):
    """How an update of the endpoint moves traffic (UpdateEndpoint's DeploymentConfig), with its alarms (the endpoint's
    and, with a judge, the judge's verdict) as auto-rollback alarms: any of them in ALARM during a baking period rolls
    all traffic back to the old fleet.

    ``serve_on``: which hardware the endpoint's serving variant runs (``neuron``, or ``gpu``: the GPU variant's
    model on its instance type, a GPU-only endpoint). Changing it is the cutover, and changing it back is the reverse
    move, both under these guardrails (the variant keeps its name, which guardrails require)."""

    what: ClassVar[str] = "cutover"
    traffic: Traffic = "canary"
    """``canary``: ``step_percent`` of the new fleet first, then the rest; ``linear``: steps of ``step_percent``;
    ``all_at_once``; ``rolling``: batches of ``step_percent`` (single-variant endpoints only)."""
    step_percent: Int | None = None
    """The canary, linear step or rolling batch, in percent of the new fleet's capacity (CAPACITY_PERCENT). Default:
    canary 10, linear 20, rolling 25."""
    bake_s: Int = Field(default=DEFAULT_BAKE_S, ge=_G.wait_interval_s[0], le=_G.wait_interval_s[1])
    """The baking period after each step (WaitIntervalInSeconds, 0-3600)."""
    final_bake_s: Int = Field(default=DEFAULT_BAKE_S, ge=_G.termination_wait_s[0], le=_G.termination_wait_s[1])
    """Blue/green: the wait after the last step before the old fleet is terminated (TerminationWaitInSeconds, 0-3600)."""
    max_deployment_s: Int | None = Field(default=None, ge=_G.max_execution_timeout_s[0],
                                         le=_G.max_execution_timeout_s[1])
    """MaximumExecutionTimeoutInSeconds (600-28800). Default: the waits plus the model's download and startup
    timeouts plus 10 minutes, within SageMaker's bounds."""
    serve_on: Literal["neuron", "gpu"] = "neuron"
    pause_scaling: Bool = False
    """Deregister the serving variant from Application Auto Scaling (no scalable target, no schedules). SageMaker fails
    an update that changes the instance type of a variant that is a scalable target ("Update endpoints that use auto
    scaling", https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html, read 2026-11-23), and a
    ``serve_on`` change does: deploy ``pause_scaling: true`` first, then the ``serve_on`` change, then
    ``pause_scaling: false`` (three deploys; CloudFormation removes a resource only after it updated the others)."""

    def _problems(self) -> Iterator[Problem]:
        p = self.step_percent
        if self.traffic == "all_at_once":
            if p is not None:
                yield Problem("step_percent", p, "unset with traffic all_at_once (one step of 100 %)")
        elif self.traffic == "canary" and p is not None and not 1 <= p <= _G.canary_max_percent:
            yield Problem("step_percent", p, f"1 to {_G.canary_max_percent} (percent): SageMaker's canary is at most "
                          f"{_G.canary_max_percent} % of the new fleet's capacity ({_G.sources['canary']})")
        elif self.traffic == "linear" and p is not None and not _linear_ok(p):
            lo, hi = _G.linear_step_percent
            yield Problem("step_percent", p, f"{lo} to {hi} (percent): SageMaker's linear steps are {lo}-{hi} % of "
                          f"the new fleet's capacity ({_G.sources['linear']})")
        elif self.traffic == "rolling" and p is not None and not _rolling_ok(p):
            lo, hi = _G.rolling_batch_percent
            yield Problem("step_percent", p, f"{lo} to {hi} (percent): SageMaker's rolling batches are {lo}-{hi} % "
                          "of the variant's instances (botocore RollingUpdatePolicy.MaximumBatchSize)")
        if self.max_deployment_s is not None and self.max_deployment_s <= self.waits_s:
            yield Problem("max_deployment_s", self.max_deployment_s,
                          f"more than the deployment's waits ({self.waits_s} s: {self.steps} step(s) of bake_s "
                          f"{self.bake_s}" + ("" if self.traffic == "rolling" else f" and final_bake_s "
                                              f"{self.final_bake_s}") + "), at most "
                          f"{_G.max_execution_timeout_s[1]}")

    @property
    def percent(self) -> int:
        """The step in percent (100 for all at once)."""
        return 100 if self.traffic == "all_at_once" else self.step_percent or DEFAULT_STEP_PERCENT[self.traffic]

    @property
    def steps(self) -> int:
        """Baking periods before the end: a canary bakes once, linear and rolling once per step."""
        if self.traffic in ("all_at_once", "canary"):
            return 1
        return math.ceil(100 / self.percent)

    @property
    def waits_s(self) -> int:
        return self.steps * self.bake_s + (0 if self.traffic == "rolling" else self.final_bake_s)

    def timeout_s(self, provisioning_s: int) -> int:
        """MaximumExecutionTimeoutInSeconds: the setting, or the waits plus ``provisioning_s`` plus a margin."""
        if self.max_deployment_s is not None:
            return self.max_deployment_s
        lo, hi = _G.max_execution_timeout_s
        return min(hi, max(lo, self.waits_s + provisioning_s + DEPLOYMENT_MARGIN_S))


def _linear_ok(p: int) -> bool:
    lo, hi = _G.linear_step_percent
    return lo <= p <= hi


def _rolling_ok(p: int) -> bool:
    lo, hi = _G.rolling_batch_percent
    return lo <= p <= hi
