"""neuronfleet verify's record round-trips through the report bucket (moto): verify saves it, the weekly report reads
the newest and shows it in "What is confirmed on this account" (report.run as tests/moto/test_cost_moto.py runs it)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from neuronfleet.lambdas.cost import report
from neuronfleet.lambdas.cost.adapters.spend_ledger import SpendLedger
from neuronfleet.lambdas.cost.adapters.verify_records import VerifyRecordStore
from neuronfleet.lambdas.cost.adapters.work import Work
from neuronfleet.lambdas.cost.logic.discovery import Discovered
from neuronfleet.verify.records import REPORT_HANDLER, save
from tests.moto.test_cost_moto import PRICES, TODAY, aws  # noqa: F401 (aws: the fixture)

FLEET = SimpleNamespace(name="nf-prod", cost_monitors=SimpleNamespace(enabled=True))


class Reads:
    """verify's reads as the report function shows through ListFunctions, and the real (moto) S3 client."""

    def __init__(self, s3: Any, functions: list[dict[str, Any]]) -> None:
        self._s3, self._functions = s3, functions

    def functions(self) -> list[dict[str, Any]]:
        return self._functions

    def client(self, service: str, region: str | None = None) -> Any:
        assert service == "s3"
        return self._s3


REPORT_FUNCTION = {"Handler": REPORT_HANDLER, "Environment": {"Variables": {"REPORT_BUCKET": "reports"}}}


def payload(outcome: str) -> dict[str, Any]:
    return {"fleet": "nf-prod", "region": "us-east-2", "caller": "arn:aws:iam::123456789012:user/me",
            "checks": [{"id": "cw-publish", "outcome": outcome, "seen": "3 series", "fix": "" if outcome == "holds"
                        else "run again"}], "not_applying": [{"id": "data-export", "why": "Cost Explorer"}]}


def run_report(aws: dict[str, Any]) -> dict[str, Any]:  # noqa: F811
    return report.run(today=TODAY, fleet="nf-prod", period_days=3, prices=PRICES, ledger=SpendLedger(aws["table"]),
                      usage=Work(aws["cw"], "NeuronFleet/Workload"), s3=aws["s3"], bucket="reports", sns=aws["sns"],
                      topic_arn=aws["topic"], endpoints=Discovered(models=()), verified=VerifyRecordStore(aws["s3"]))


def test_verify_saves_and_the_report_shows_the_newest_record(aws) -> None:  # noqa: F811
    reads = Reads(aws["s3"], [REPORT_FUNCTION])
    listed = ["cw-publish", "data-export", "kueue-chart"]
    assert run_report(aws)["confirmed_on_account"][0].startswith("No verify record")
    line = save(reads, FLEET, payload("not yet"), at=datetime(2026, 11, 2, 8, tzinfo=UTC), listed=listed)
    assert line == "verify record saved to s3://reports/verify/nf-prod/2026-11-02.json"
    save(reads, FLEET, payload("holds"), at=datetime(2026, 11, 3, 8, tzinfo=UTC), listed=listed)
    stored = json.loads(aws["s3"].get_object(Bucket="reports", Key="verify/nf-prod/2026-11-03.json")["Body"].read())
    assert (stored["at"], stored["version"], stored["caller"]) == ("2026-11-03T08:00:00+00:00", "0.1.0",
                                                                   "arn:aws:iam::123456789012:user/me")
    out = run_report(aws)
    assert out["confirmed_on_account"] == [
        "cw-publish: confirmed (holds) on 2026-11-03",
        "data-export: does not apply to this fleet (verify 2026-11-03)",
        "kueue-chart: unconfirmed (never run on this account): run `neuronfleet verify -c <fleet file>` after a "
        "deploy"]
    page = aws["s3"].get_object(Bucket="reports", Key="reports/nf-prod/2026-11-04/report.html")["Body"].read().decode()
    assert "What is confirmed on this account" in page and "cw-publish: confirmed (holds) on 2026-11-03" in page


def test_a_failed_write_or_no_report_function_is_one_line_and_nothing_is_written(aws) -> None:  # noqa: F811
    at = datetime(2026, 11, 3, tzinfo=UTC)
    missing = Reads(aws["s3"], [{**REPORT_FUNCTION, "Environment": {"Variables": {"REPORT_BUCKET": "no-such"}}}])
    line = save(missing, FLEET, payload("holds"), at=at, listed=[])
    assert line.startswith("verify record not saved to s3://no-such/verify/nf-prod/2026-11-03.json: NoSuchBucket")
    assert "\n" not in line
    assert save(Reads(aws["s3"], []), FLEET, payload("holds"), at=at, listed=[]).startswith(
        f"verify record not saved: no function of the fleet has the handler {REPORT_HANDLER}")
    off = SimpleNamespace(name="nf-prod", cost_monitors=SimpleNamespace(enabled=False))
    assert save(Reads(aws["s3"], [REPORT_FUNCTION]), off, payload("holds"), at=at, listed=[]) == (
        "verify record not saved: the fleet's cost monitors are disabled (no report bucket)")
    assert "Contents" not in aws["s3"].list_objects_v2(Bucket="reports", Prefix="verify/")


def test_the_report_handler_verify_looks_for_is_the_one_cost_monitors_deploys() -> None:
    import inspect

    from neuronfleet.cost import monitors

    assert f'handler="{REPORT_HANDLER}"' in inspect.getsource(monitors)


def test_the_command_saves_after_a_run_and_no_save_writes_nothing(monkeypatch, capsys) -> None:
    """``neuronfleet verify -c config/smoke.yaml`` in moto, the report function shown by ListFunctions: a run writes
    its record (the control); ``--no-save`` writes nothing and says nothing of it."""
    from pathlib import Path

    import boto3
    from moto import mock_aws

    from neuronfleet.cli.main import main
    from neuronfleet.verify.reads import Reads as VerifyReads

    smoke = str(Path(__file__).resolve().parents[2] / "config" / "smoke.yaml")
    monkeypatch.setattr(VerifyReads, "functions", lambda self: [REPORT_FUNCTION])
    for var, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(var, value)
    with mock_aws():
        s3 = boto3.client("s3", region_name="sa-east-1")
        s3.create_bucket(Bucket="reports", CreateBucketConfiguration={"LocationConstraint": "sa-east-1"})
        argv = ["verify", "-c", smoke, "--check", "batch-capacity-block", "--json"]
        assert main([*argv, "--no-save"]) == 0
        out = capsys.readouterr()
        assert json.loads(out.out)["fleet"] == "nf-smoke" and "verify record" not in out.err
        assert "Contents" not in s3.list_objects_v2(Bucket="reports")
        assert main(argv) == 0
        assert "verify record saved to s3://reports/verify/nf-smoke/" in capsys.readouterr().err
        (saved,) = s3.list_objects_v2(Bucket="reports")["Contents"]
        assert saved["Key"].startswith("verify/nf-smoke/")
