"""The report's batch jobs travel in its environment (``BATCH_JOBS``, neuronfleet_contract.cost.ReportConfig): the
contract's codec carries them both ways, writes nothing for a fleet without batch jobs, refuses a malformed value
naming the variable, and ``report.run`` hands them to ``build()`` (the batch transform section names the model)."""

from __future__ import annotations

import json

import pytest

from neuronfleet_contract.cost import BatchJob, ReportConfig
from neuronfleet_contract.environment import InvalidEnvironment

NIGHTLY = BatchJob(name="nightly-summaries", model="summarise-batch", instance_type="ml.inf2.xlarge")
WEEKLY = BatchJob(name="weekly-digest", model="digest", instance_type="ml.trn1.2xlarge")


def _config(**more: object) -> ReportConfig:
    return ReportConfig(fleet="f", ledger_table="t", report_bucket="b", topic_arn="arn:aws:sns:us-east-2:1:t",
                        prices={}, **more)  # type: ignore[arg-type]


def test_the_batch_jobs_travel_both_ways_in_their_order() -> None:
    env = _config(batch_jobs=[NIGHTLY, WEEKLY]).to_environment()
    assert json.loads(env["BATCH_JOBS"]) == [["nightly-summaries", "summarise-batch", "ml.inf2.xlarge"],
                                             ["weekly-digest", "digest", "ml.trn1.2xlarge"]]
    assert ReportConfig.from_environment(env).batch_jobs == (NIGHTLY, WEEKLY)


def test_a_fleet_without_batch_jobs_gets_no_variable() -> None:
    env = _config().to_environment()
    assert "BATCH_JOBS" not in env and ReportConfig.from_environment(env).batch_jobs == ()


@pytest.mark.parametrize("value", ['{"a": 1}', '[["nightly", "model"]]', '[["nightly", "", "ml.inf2.xlarge"]]',
                                   '[["n", "m", 3]]', '[["n", "m", "ml.inf2.xlarge"], ["n", "o", "ml.trn1.2xlarge"]]',
                                   "not json"])
def test_malformed_batch_jobs_are_refused_naming_the_variable(value: str) -> None:
    env = _config().to_environment() | {"BATCH_JOBS": value}
    with pytest.raises(InvalidEnvironment, match="BATCH_JOBS") as err:
        ReportConfig.from_environment(env)
    assert "[[job name, model name, instance type], ...]" in str(err.value)


def test_each_batch_job_costs_the_reports_environment_what_the_contract_says() -> None:
    """ReportConfig.batch_jobs: about 60 bytes of Lambda's 4 KB per job (names as long as config/batch.yaml's)."""
    def size(jobs: int) -> int:
        env = _config(batch_jobs=[BatchJob(f"nightly-summaries-{i:02d}", f"summarise-batch-{i:02d}", "ml.inf2.xlarge")
                                  for i in range(jobs)]).to_environment()
        return sum(len(k) + len(v) for k, v in env.items())

    per_job = (size(10) - size(0) - len("BATCH_JOBS") - 2) / 10
    assert 55 <= per_job <= 70, per_job


class _Handed(Exception):
    """Raised by the stand-in build(): what report.run handed it."""


class _Empty:
    """A ledger and a usage reader with nothing in them."""

    def rows(self, days: object) -> list[object]:
        return []

    def queried(self, days: object) -> list[str]:
        return []

    def invocations(self, *args: object) -> dict[str, int]:
        return {}

    tokens = verdicts = invocations


def test_report_run_hands_its_batch_jobs_to_build(monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import date

    from neuronfleet.lambdas.cost import report
    from neuronfleet.lambdas.cost.logic.discovery import Discovered

    def build(**kwargs: object) -> None:
        raise _Handed(kwargs["batch_jobs"])

    monkeypatch.setattr(report, "build", build)
    empty = _Empty()
    with pytest.raises(_Handed) as handed:
        report.run(today=date(2026, 11, 28), fleet="f", period_days=7, prices={}, ledger=empty,
                   usage=empty, s3=None, bucket="b", sns=None, topic_arn="t",
                   endpoints=Discovered(models=()), batch_jobs=(NIGHTLY,))
    assert handed.value.args[0] == (NIGHTLY,)


def test_the_handler_hands_its_configurations_batch_jobs_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from neuronfleet.lambdas.cost import report
    from neuronfleet.lambdas.cost.logic.discovery import Discovered

    def run(**kwargs: object) -> None:
        raise _Handed(kwargs["batch_jobs"])

    settings = _config(batch_jobs=[NIGHTLY, WEEKLY])
    endpoints = SimpleNamespace(models=lambda accelerators: Discovered(models=()))
    monkeypatch.setattr(report, "container", lambda: report.Container(
        settings=settings, endpoints=endpoints, ledger=None, usage=None, s3=None, sns=None))
    monkeypatch.setattr(report, "run", run)
    context = SimpleNamespace(function_name="nf-report", memory_limit_in_mb=512, aws_request_id="r-1",
                              invoked_function_arn="arn:aws:lambda:us-east-2:123456789012:function:nf-report")
    with pytest.raises(_Handed) as handed:
        report.handler({"version": "0", "id": "1", "detail-type": "Scheduled Event", "source": "aws.events",
                        "account": "123456789012", "time": "2026-11-02T07:00:00Z", "region": "us-east-2",
                        "resources": [], "detail": {}}, context)
    assert handed.value.args[0] == (NIGHTLY, WEEKLY)
