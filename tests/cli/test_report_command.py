"""``neuronfleet report``: a stored report.json (local or s3://) drawn again as its page, with its headline; bad
sources refused in one line (field, value, allowed), exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from neuronfleet.cli.main import main
from tests.unit.test_report_page import judged, prod_report


def stored_report() -> dict:
    report = prod_report(verdicts=[judged()], synthetic="generated for the test")
    report.pop("_unit_costs")  # the function publishes these to CloudWatch and stores the rest (report.publish)
    return json.loads(json.dumps(report))


def test_a_local_record_is_drawn_beside_itself_with_its_headline(tmp_path: Path, capsys) -> None:
    record = stored_report()
    source = tmp_path / "report.json"
    source.write_text(json.dumps(record))
    assert main(["report", str(source)]) == 0
    out = capsys.readouterr().out
    page = (tmp_path / "report.html").read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page and "Migration report: nf-prod" in page
    assert out.splitlines()[0].startswith("nf-prod, ") and out.splitlines()[0].endswith("[synthetic figures]")
    assert record["story"] in out
    assert main(["report", str(source), "--json", "-o", str(tmp_path / "x.html")]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert (payload["fleet"], payload["page"], payload["synthetic"]) == ("nf-prod", str(tmp_path / "x.html"), True)


@mock_aws
def test_an_s3_record_is_read_with_the_users_credentials(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-2")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    s3 = boto3.client("s3", region_name="us-east-2")
    s3.create_bucket(Bucket="nf-reports", CreateBucketConfiguration={"LocationConstraint": "us-east-2"})
    s3.put_object(Bucket="nf-reports", Key="reports/nf-prod/2026-11-23/report.json", Body=json.dumps(stored_report()))
    out_page = tmp_path / "page.html"
    assert main(["report", "s3://nf-reports/reports/nf-prod/2026-11-23/report.json", "-o", str(out_page)]) == 0
    assert "Migration report: nf-prod" in out_page.read_text()
    assert main(["report", "s3://nf-reports/reports/nf-prod/missing/report.json", "-o", str(out_page)]) == 2
    err = capsys.readouterr().err
    assert "SOURCE: got 's3://nf-reports/reports/nf-prod/missing/report.json'; allowed: an object your " \
           "credentials may read (S3 answered NoSuchKey" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("content", "said"), [
    (b"{not json", "got no JSON (Expecting property name enclosed in double quotes, line 1)"),
    (b"[1, 2]", "got a JSON list"),
    (b'{"fleet": "x"}', "SOURCE: period: got None"),
    (b"\xff\xfe", "got bytes that are not UTF-8 text"),
])
def test_a_bad_record_is_one_line_and_exit_2(tmp_path: Path, capsys, content: bytes, said: str) -> None:
    source = tmp_path / "report.json"
    source.write_bytes(content)
    assert main(["report", str(source)]) == 2
    err = capsys.readouterr().err
    assert said in err and "allowed: a migration report record" in err and "Traceback" not in err
    assert not (tmp_path / "report.html").exists()


def test_a_missing_file_is_named(tmp_path: Path, capsys) -> None:
    assert main(["report", str(tmp_path / "nope.json")]) == 2
    assert "SOURCE: got" in capsys.readouterr().err
