"""CostMonitors tells the report function the fleet's batch jobs (``batch_jobs=``: its ``BATCH_JOBS``, read back
by the function's own ReportConfig), refuses what the function would refuse, and adds nothing for a fleet without
batch jobs; the reference app maps config/batch.yaml's ``batch_jobs`` to it (name, report name, instance type)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template

from neuronfleet import CostMonitors
from neuronfleet.core.problems import InvalidSettings
from neuronfleet.cost.monitors import BatchJob
from neuronfleet_contract.cost import ReportConfig
from tests.cdk_support import ENV, AzStack

NIGHTLY = BatchJob(name="nightly-summaries", model="summarise-batch", instance_type="ml.inf2.xlarge")


def _report_environment(template: Mapping[str, Any]) -> dict[str, Any]:
    (hit,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"
              and r["Properties"]["Handler"] == "cost.report.handler"]
    variables: dict[str, Any] = hit["Properties"]["Environment"]["Variables"]
    return variables


def _monitors(**kwargs: Any) -> dict[str, Any]:
    stack = AzStack(cdk.App(), "S", env=ENV)
    CostMonitors(stack, "Cost", fleet_name="nf", topic=sns.Topic(stack, "Topic"), **kwargs)
    return _report_environment(Template.from_stack(stack).to_json())


def test_the_report_is_told_the_batch_jobs_and_reads_them_back() -> None:
    other = BatchJob(name="weekly-digest", model="digest", instance_type="ml.trn1.2xlarge")
    env = _monitors(batch_jobs=[NIGHTLY, other])
    # the function's own reading of its variable (the rest of its configuration made plain)
    plain = {"FLEET": "nf", "LEDGER_TABLE": "t", "REPORT_BUCKET": "b", "ALERTS_TOPIC_ARN": "arn", "PRICES": "{}",
             "BATCH_JOBS": env["BATCH_JOBS"]}
    assert ReportConfig.from_environment(plain).batch_jobs == (NIGHTLY, other)


def test_no_batch_jobs_no_variable() -> None:
    assert "BATCH_JOBS" not in _monitors()


@pytest.mark.parametrize(("jobs", "says"), [
    ([NIGHTLY, BatchJob(name="nightly-summaries", model="other", instance_type="ml.trn1.2xlarge")], "given twice"),
    ([("nightly-summaries", "summarise-batch", "ml.inf2.xlarge")], "neuronfleet_contract.cost.BatchJob"),
])
def test_what_the_function_would_refuse_is_refused_at_synth(jobs: list[Any], says: str) -> None:
    with pytest.raises(InvalidSettings, match="batch_jobs") as err:
        _monitors(batch_jobs=jobs)
    assert says in str(err.value)


def test_the_batch_fleets_cost_stack_names_its_job_and_model(synth_fleet) -> None:
    fleet = synth_fleet("batch")
    env = _report_environment(fleet.template_json("cost"))
    plain = {"FLEET": "nf", "LEDGER_TABLE": "t", "REPORT_BUCKET": "b", "ALERTS_TOPIC_ARN": "arn", "PRICES": "{}",
             "BATCH_JOBS": env["BATCH_JOBS"]}
    assert ReportConfig.from_environment(plain).batch_jobs == (
        BatchJob(name="nightly-summaries", model="nightly-summaries", instance_type="ml.inf2.xlarge"),)


def test_the_reference_app_tells_the_report_each_jobs_report_name() -> None:
    """model_name, when the fleet file gives one, is the model the report names (else the job's name)."""
    import yaml

    from neuronfleet import parse_fleet
    from stacks.fleet import report_batch_jobs
    from tests.conftest import ROOT

    raw = yaml.safe_load((ROOT / "config" / "batch.yaml").read_text())
    (nightly,) = raw["batch_jobs"]
    weekly = {**nightly, "name": "weekly-digest", "model_name": "digest", "instance_type": "ml.trn1.2xlarge"}
    fleet = parse_fleet({**raw, "batch_jobs": [nightly, weekly]})
    assert report_batch_jobs(fleet) == [
        BatchJob(name="nightly-summaries", model="nightly-summaries", instance_type="ml.inf2.xlarge"),
        BatchJob(name="weekly-digest", model="digest", instance_type="ml.trn1.2xlarge")]
