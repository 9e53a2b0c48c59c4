"""``neuronfleet report``: the migration report the weekly function stored, read back and drawn as its HTML page.

The cost stack's report function stores ``reports/<fleet>/<date>/report.json`` (and the page) in its report bucket.
This command reads such a record, from a local file or from ``s3://bucket/key`` with your credentials, and writes
the page with the same pure renderer the function uses (``cost.logic.report_page.render_html``), so a report can be
drawn again, offline, after the renderer improves. No aws-cdk-lib, no Node.js.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..core.problems import Problem
from .output import OK, BadInput, Said, emit, json_option

WHAT = "report"
RECORD = "a migration report record (report.json, as the cost stack's report function stores it)"


def _read(source: str) -> bytes:
    if source.startswith("s3://"):
        bucket, _, key = source[5:].partition("/")
        if not bucket or not key:
            raise BadInput.of("SOURCE", source, "s3://BUCKET/KEY of a report.json", what=WHAT)
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        try:
            return boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
        except NoCredentialsError:
            raise BadInput.of("SOURCE", source, "an object your AWS credentials may read (none found: configure "
                              "a profile or environment credentials)", what=WHAT) from None
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "?")
            raise BadInput.of("SOURCE", source, f"an object your credentials may read (S3 answered {code}; "
                              "reading needs s3:GetObject on it)", what=WHAT) from None
        except BotoCoreError as exc:
            raise BadInput.of("SOURCE", source, f"an S3 object reachable from here ({type(exc).__name__})",
                              what=WHAT) from None
    try:
        return Path(source).read_bytes()
    except OSError as exc:
        raise BadInput.of("SOURCE", source, f"a readable report.json or s3://BUCKET/KEY ({exc.strerror})",
                          what=WHAT) from None


def load_record(source: str) -> dict[str, Any]:
    """The report record at ``source``; BadInput naming what is wrong with it."""
    raw = _read(source)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadInput([Problem("SOURCE", Said("bytes that are not UTF-8 text"), RECORD)], WHAT) from None
    except json.JSONDecodeError as exc:
        raise BadInput([Problem("SOURCE", Said(f"no JSON ({exc.msg}, line {exc.lineno})"), RECORD)], WHAT) from None
    if not isinstance(doc, dict):
        raise BadInput([Problem("SOURCE", Said(f"a JSON {type(doc).__name__}"), RECORD)], WHAT)
    missing = [k for k in ("fleet", "period") if k not in doc]
    if missing or not isinstance(doc.get("period"), dict):
        raise BadInput([Problem(f"SOURCE: {(missing or ['period'])[0]}", doc.get((missing or ['period'])[0]),
                                f"{RECORD}: it has fleet and period")], WHAT)
    return doc


@click.command("report", short_help="Draw a stored migration report (a report.json, or one in S3) as its HTML page.")
@click.argument("source")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the page (default: report.html beside a local SOURCE, else ./report.html).")
@json_option
def report(source: str, output: Path | None, as_json: bool) -> int:
    """Draw a stored migration report (SOURCE: a report.json, or s3://BUCKET/KEY with your credentials) as its
    HTML page, and print its headline."""
    from neuronfleet.lambdas.cost.logic.report_page import render_html

    doc = load_record(source)
    try:
        page = render_html(doc)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadInput([Problem("SOURCE", Said(f"a record the page cannot draw ({type(exc).__name__}: "
                                               f"{str(exc)[:120]})"), RECORD)], WHAT) from None
    target = output or (Path(source).with_name("report.html") if not source.startswith("s3://")
                        else Path("report.html"))
    try:
        target.write_text(page)
    except OSError as exc:
        raise BadInput.of("--output", str(target), f"a file you may write ({exc.strerror})", what=WHAT) from None
    period = doc["period"]
    headline = str(doc.get("story") or "; ".join(doc.get("verdict", [])[:1]) or "no headline in this record")
    synthetic = " [synthetic figures]" if doc.get("synthetic") else ""
    emit({"fleet": doc["fleet"], "period": period, "headline": headline, "page": str(target),
          "synthetic": bool(doc.get("synthetic"))},
         f"{doc['fleet']}, {period.get('start')} to {period.get('end')}: {headline}{synthetic}\npage: {target}",
         as_json=as_json)
    return OK
