"""The migration report is told of the pilot fleet's judge (config/pilot.yaml, the shared session synth): the cost
stack imports the judge's records bucket name from the inference stack (one export), the report's environment names
the judge's latest record, its role may read exactly that object and list exactly that key; the cost stack depends on
the inference stack, never the reverse."""

from __future__ import annotations

import json
from typing import Any

import pytest

from neuronfleet.core.problems import InvalidSettings
from neuronfleet_contract.cost import JudgeRecords, ReportConfig
from neuronfleet_contract.judge import latest_key


@pytest.fixture(scope="module")
def pilot(synth_fleet) -> Any:
    return synth_fleet("pilot")


def _exports(template: dict[str, Any]) -> dict[str, Any]:
    """Export name -> the value exported."""
    return {o["Export"]["Name"]: o["Value"] for o in template.get("Outputs", {}).values() if "Export" in o}


def _report(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    (hit,) = [(k, r) for k, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::Function"
              and r["Properties"]["Handler"] == "cost.report.handler"]
    return hit


def _replace_imports(value: Any, by: str) -> Any:
    """A template value with each Fn::ImportValue as ``by`` and joins made (what the function sees)."""
    if isinstance(value, dict) and "Fn::ImportValue" in value:
        return by
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(_replace_imports(p, by) for p in parts)
    if isinstance(value, dict) and value == {"Ref": "AWS::Partition"}:
        return "aws"
    if isinstance(value, dict):  # another reference (the ledger's Ref, the topic's ...): a name
        return "resolved"
    return value


def test_the_report_is_told_where_the_judges_latest_record_lives(pilot) -> None:
    judge = pilot.stacks["inference"].judges["Chat"]
    cost, inference = pilot.template_json("cost"), pilot.template_json("inference")
    _, fn = _report(cost)
    raw = fn["Properties"]["Environment"]["Variables"]["JUDGE_RECORDS"]
    (imported,) = {json.dumps(p["Fn::ImportValue"]) for p in raw["Fn::Join"][1] if isinstance(p, dict)}
    # the import is the inference stack's export of the judge's own records bucket (its Ref: the name)
    bucket_logical = pilot.stacks["inference"].resolve(judge.records_bucket.node.default_child.logical_id)
    assert _exports(inference)[json.loads(imported)] == {"Ref": bucket_logical}
    env = {k: _replace_imports(v, "records-bucket") for k, v in fn["Properties"]["Environment"]["Variables"].items()}
    told = ReportConfig.from_environment(env)
    assert told.judges == (JudgeRecords(endpoint=judge.endpoint.endpoint_name, bucket="records-bucket"),)
    assert told.judges[0].key == latest_key("judge/", judge.endpoint.endpoint_name)


def test_the_report_may_read_exactly_the_latest_record_and_list_exactly_its_key(pilot) -> None:
    judge = pilot.stacks["inference"].judges["Chat"]
    key = latest_key("judge/", judge.endpoint.endpoint_name)
    cost = pilot.template_json("cost")
    statements = [s for r in cost["Resources"].values() if r["Type"] == "AWS::IAM::Policy"
                  and any(x.get("Ref", "").startswith("CostMonitorsReportRole") for x in r["Properties"]["Roles"])
                  for s in r["Properties"]["PolicyDocument"]["Statement"]]
    inference = pilot.stacks["inference"].stack_name
    # one (action, resource, condition) per resource: CDK merges statements of one action (the report's other reads,
    # e.g. neuronfleet verify's records, may share a statement with the judge's)
    each = [(s["Action"], r, s.get("Condition")) for s in statements
            for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])]
    on_judge = [x for x in each if f'"Fn::ImportValue": "{inference}:' in json.dumps(x[1])]
    got = sorted((action, _replace_imports(r, "records-bucket"), condition) for action, r, condition in on_judge)
    assert got == [("s3:GetObject", f"arn:aws:s3:::records-bucket/{key}", None),
                   ("s3:ListBucket", "arn:aws:s3:::records-bucket", {"StringEquals": {"s3:prefix": key}})]


def test_one_export_per_judge_and_the_cost_stack_depends_on_the_inference_stack_only(pilot) -> None:
    inference, cost = pilot.stacks["inference"], pilot.stacks["cost"]
    exported = _exports(pilot.template_json("inference"))
    assert len(exported) == 1  # the judge's records bucket name; the ARNs are built from it in the cost stack
    imports = {json.dumps(v) for v in _walk(pilot.template_json("cost")) if isinstance(v, dict)
               and "Fn::ImportValue" in v and str(v["Fn::ImportValue"]).startswith(inference.stack_name)}
    assert imports == {json.dumps({"Fn::ImportValue": name}) for name in exported}
    assert inference in cost.dependencies and cost not in inference.dependencies
    assert not any(isinstance(v, dict) and "Fn::ImportValue" in v and cost.stack_name in str(v["Fn::ImportValue"])
                   for v in _walk(pilot.template_json("inference")))


def test_a_judge_is_told_once_and_only_a_judge(pilot) -> None:
    monitors, judge = pilot.stacks["cost"].monitors, pilot.stacks["inference"].judges["Chat"]
    with pytest.raises(InvalidSettings, match=r"judges: got .*; allowed: one judge per endpoint"):
        monitors.add_judge(judge)
    with pytest.raises(InvalidSettings, match="judges") as err:
        monitors.add_judge("s3://judge-records/judge/chat/latest.json")
    assert "PilotJudge" in str(err.value)
    assert len(monitors.judges) == 1


def _walk(value: Any) -> Any:
    yield value
    if isinstance(value, dict):
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)
