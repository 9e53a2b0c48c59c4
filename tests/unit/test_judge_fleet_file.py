"""The fleet file's `judge:` and `cutover:` sections of an endpoint (config/pilot.yaml carries both): bad thresholds are
refused with the field's path, the value and what is allowed, before anything is synthesised."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from neuronfleet import FleetConfigError, parse_fleet
from neuronfleet.fleetfile.yamlsafe import load_yaml_file
from tests.conftest import ROOT

PILOT: dict[str, Any] = load_yaml_file(ROOT / "config" / "pilot.yaml")


def test_the_pilot_fleet_judges_and_guards_its_chat_endpoint() -> None:
    (chat,) = parse_fleet(PILOT).endpoints
    assert chat.judge is not None and chat.judge.bucket == "nf-pilot-prompts"
    assert chat.judge.tolerances.min_token_agreement == 0.95
    assert chat.cutover is not None and (chat.cutover.traffic, chat.cutover.percent) == ("canary", 25)


@pytest.mark.parametrize(("section", "key", "value", "path", "allowed"), [
    ("judge", "tolerances", {"min_token_agreement": -0.1}, "endpoints[0].judge.tolerances.min_token_agreement",
     ">= 0"),
    ("judge", "tolerances", {"max_task_score_drop": 2}, "endpoints[0].judge.tolerances.max_task_score_drop", "<= 1"),
    ("judge", "prompts", "s3://nf-pilot-prompts/", "endpoints[0].judge.prompts", "s3://bucket/key"),
    ("cutover", "step_percent", 80, "endpoints[0].cutover.step_percent", "1 to 50 (percent)"),
    ("cutover", "traffic", "rolling", "endpoints[0].cutover.traffic", "exclude multi-variant endpoints"),
    ("cutover", "bake_s", -5, "endpoints[0].cutover.bake_s", ">= 0"),
])
def test_bad_thresholds_are_refused_with_path_value_and_allowed(section: str, key: str, value: Any, path: str,
                                                                allowed: str) -> None:
    doc = copy.deepcopy(PILOT)
    doc["endpoints"][0][section][key] = value
    with pytest.raises(FleetConfigError) as err:
        parse_fleet(doc)
    (problem,) = [p for p in err.value.problems if p.path == path]
    assert allowed in problem.allowed
    assert f"{path}: got" in str(err.value)
