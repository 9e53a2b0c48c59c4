"""Every example fleet's functions fit Lambda's 4 KB environment, counted as CloudFormationLimits counts it (the
rule ``lambda-environment-size``: keys and values, references at their longest), and the cost report keeps room for
at least ten pilot judges' records: the built-in price table travels in the code (neuronfleet_contract/data/
prices.json), the environment carries only the fleet file's overrides (neuronfleet_contract.prices.carried).

One synth per fleet (the session's synth_fleet fixture)."""

from __future__ import annotations

import copy
import json
import re
from importlib import util
from pathlib import Path
from typing import Any

import pytest

from neuronfleet.core.limits import assembly_exports, template_problems
from neuronfleet.core.rules import LAMBDA_ENVIRONMENT_BYTES, RESOURCE_NAMES, TOKEN_ESTIMATE_CHARS
from neuronfleet_contract.cost import JudgeRecords, _pack_prices, judges_environment
from tests.conftest import EXAMPLE_FLEETS

JUDGES = 10
"""The judges the report's environment must hold beside everything else (ReportConfig.judges)."""


def _templates(fleet: Any) -> dict[str, dict[str, Any]]:
    return {fleet.stacks[short].stack_name: fleet.template_json(short) for short in fleet.stacks}


def _report(templates: dict[str, dict[str, Any]]) -> tuple[str, str]:
    """(stack name, logical id) of the cost report's function."""
    (found,) = [(name, logical) for name, t in templates.items() for logical, r in t["Resources"].items()
                if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Handler") == "cost.report.handler"]
    return found


def _environment_problems(templates: dict[str, dict[str, Any]]) -> list[str]:
    exports = assembly_exports(templates.values())
    return [str(p) for name, t in templates.items() for p in template_problems(name, t, exports)
            if p.rule == "lambda-environment-size"]


def _with_variable(templates: dict[str, dict[str, Any]], where: tuple[str, str], name: str, value: str
                   ) -> dict[str, dict[str, Any]]:
    out = copy.deepcopy(templates)
    out[where[0]]["Resources"][where[1]]["Properties"]["Environment"]["Variables"][name] = value
    return out


def _longest_judges(n: int) -> str:
    """JUDGE_RECORDS for ``n`` judges at their longest: each its own records bucket (imported from its inference
    stack: sized as a reference, TOKEN_ESTIMATE_CHARS) and an endpoint name of SageMaker's longest (63)."""
    longest = RESOURCE_NAMES["sagemaker-endpoint"].max_length
    records = [JudgeRecords(endpoint=f"{i:02d}".ljust(longest, "e"), bucket=f"{i:02d}".ljust(TOKEN_ESTIMATE_CHARS, "b"))
               for i in range(n)]
    (value,) = judges_environment(records).values()
    return value


@pytest.mark.parametrize("name", EXAMPLE_FLEETS)
def test_every_function_fits_lambdas_4_kb_and_the_report_holds_ten_judges_more(synth_fleet, name: str) -> None:
    fleet = synth_fleet(name)
    templates = _templates(fleet)
    assert _environment_problems(templates) == []
    report = _report(templates)
    judged = _with_variable(templates, report, "JUDGE_RECORDS", _longest_judges(JUDGES))
    assert _environment_problems(judged) == [], f"{name}: the report has no room for {JUDGES} judges"


@pytest.mark.parametrize("name", ["prod"])
def test_the_whole_price_table_in_the_environment_would_be_refused(synth_fleet, name: str) -> None:
    """What the report carried before (the whole table, packed): with ten judges it passes Lambda's 4 KB, and the
    check says so naming PRICES. The environment carries none of the built-in table today."""
    from neuronfleet.facts.prices import price_table
    from neuronfleet_contract.cost import _prices

    fleet = synth_fleet(name)
    templates = _templates(fleet)
    report = _report(templates)
    variables = templates[report[0]]["Resources"][report[1]]["Properties"]["Environment"]["Variables"]
    assert _prices(json.loads(variables["PRICES"])) == {}  # prod's fleet file overrides no price
    whole = json.dumps(_pack_prices(price_table(fleet.fleet.catalog, fleet.fleet.region)))
    judged = _with_variable(templates, report, "JUDGE_RECORDS", _longest_judges(JUDGES))
    (problem,) = _environment_problems(_with_variable(judged, report, "PRICES", whole))
    assert "PRICES" in problem and "allowed: at most 4,096" in problem


def test_the_4_kb_is_the_limit_cfn_lint_checks() -> None:
    """LAMBDA_ENVIRONMENT_BYTES (AWS Lambda quotas: 4 KB for all of a function's variables) is the figure cfn-lint's
    own rule E3697 holds (cfnlint/rules/resources/lmbd/FunctionEnvironmentSize.py of the installed cfn-lint)."""
    spec = util.find_spec("cfnlint.rules.resources.lmbd.FunctionEnvironmentSize")
    assert spec is not None and spec.origin is not None
    text = Path(spec.origin).read_text()
    assert 'id = "E3697"' in text
    assert re.findall(r"max_size = (\d+)", text) == [str(LAMBDA_ENVIRONMENT_BYTES)]
