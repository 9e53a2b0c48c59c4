"""The cutover's arithmetic (constructs/neuronfleet/settings/cutover.py): how many baking periods a deployment waits and
the default MaximumExecutionTimeoutInSeconds, at the edges where a rounding or a missing bound would let SageMaker
refuse the update or end it early. SageMaker's bounds come from facts/data/deployment_guardrails.json (held to
botocore by test_guardrail_facts.py)."""

from __future__ import annotations

import pytest

from neuronfleet.facts.guardrails import guardrails
from neuronfleet.settings.cutover import DEPLOYMENT_MARGIN_S, CutoverSettings

LO, HI = guardrails().max_execution_timeout_s


@pytest.mark.parametrize(("step", "steps"), [(10, 10), (20, 5), (25, 4), (30, 4), (33, 4), (34, 3), (50, 2)])
def test_linear_steps_round_up(step: int, steps: int) -> None:
    """A 30 % step moves 30, 60, 90 and then the last 10 %: four steps, four baking periods (not 100 // 30 = 3)."""
    assert CutoverSettings(traffic="linear", step_percent=step).steps == steps


@pytest.mark.parametrize(("traffic", "step", "steps"), [("rolling", 30, 4), ("rolling", 25, 4),
                                                          ("canary", 10, 1), ("all_at_once", None, 1)])
def test_other_traffic_steps(traffic: str, step: int | None, steps: int) -> None:
    assert CutoverSettings(traffic=traffic, step_percent=step).steps == steps


def test_waits_count_each_step_and_the_final_bake() -> None:
    c = CutoverSettings(traffic="linear", step_percent=30, bake_s=600, final_bake_s=900)
    assert c.waits_s == 4 * 600 + 900
    r = CutoverSettings(traffic="rolling", step_percent=30, bake_s=600, final_bake_s=900)
    assert r.waits_s == 4 * 600  # rolling has no final bake


def test_default_timeout_is_waits_plus_provisioning_plus_margin() -> None:
    c = CutoverSettings(traffic="canary", bake_s=600, final_bake_s=600)
    assert c.timeout_s(1200) == 1200 + 1200 + DEPLOYMENT_MARGIN_S


def test_default_timeout_is_capped_at_sagemakers_maximum() -> None:
    """Ten linear steps of an hour each plus an hour's final bake need 11 hours of waits; SageMaker refuses more than
    its maximum (28,800 s), so the default is that maximum, never above."""
    c = CutoverSettings(traffic="linear", step_percent=10, bake_s=3600, final_bake_s=3600)
    assert c.waits_s == 11 * 3600
    assert HI == 28800
    assert c.timeout_s(3600) == HI


def test_default_timeout_is_raised_to_sagemakers_minimum() -> None:
    c = CutoverSettings(traffic="all_at_once", bake_s=0, final_bake_s=0)
    assert c.timeout_s(0) == LO == 600
