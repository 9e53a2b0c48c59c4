"""The one write ``neuronfleet verify`` makes: its result, next to the fleet's reports, for the weekly report.

The record (the ``--json`` payload, plus ``at``, the kit's ``version`` and ``listed``, every check the kit has) goes
to ``s3://<report bucket>/verify/<fleet>/<YYYY-MM-DD>.json`` (the key layout is the report's own:
neuronfleet_contract.cost.verify_key). The bucket is found read-only, as the checks find the fleet's parts: the fleet's
Lambda function (tag ``neuronfleet:fleet``) whose handler is the report's, and its ``REPORT_BUCKET`` environment
variable (ReportConfig). Nothing here raises: each outcome is one line for stderr.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from neuronfleet_contract.cost import verify_key as key

REPORT_HANDLER = "cost.report.handler"
"""The report function's entry point (CostMonitors deploys it; a test holds the two together)."""
BUCKET_VARIABLE = "REPORT_BUCKET"


def report_bucket(functions: Sequence[Mapping[str, Any]]) -> str | None:
    """The report bucket named in the environment of the fleet's report function (ListFunctions' configurations)."""
    for f in functions:
        if f.get("Handler") == REPORT_HANDLER:
            bucket = ((f.get("Environment") or {}).get("Variables") or {}).get(BUCKET_VARIABLE)
            if bucket:
                return str(bucket)
    return None


def record(payload: Mapping[str, Any], *, at: datetime, version: str, listed: Sequence[str]) -> dict[str, Any]:
    return {**payload, "at": at.isoformat(), "version": version, "listed": list(listed)}


def save(reads: Any, fleet: Any, payload: Mapping[str, Any], *, at: datetime, listed: Sequence[str]) -> str:
    """Write the record; the line saying where it went, or why nothing was written."""
    from neuronfleet import __version__

    from ..preflight.checks import Failed

    if not fleet.cost_monitors.enabled:
        return "verify record not saved: the fleet's cost monitors are disabled (no report bucket)"
    functions = reads.functions()
    if isinstance(functions, Failed):
        return f"verify record not saved: the report function could not be found ({functions.code}: {functions.message})"
    bucket = report_bucket(functions)
    if bucket is None:
        return (f"verify record not saved: no function of the fleet has the handler {REPORT_HANDLER} "
                "(deploy the cost monitors' stack first)")
    where = f"s3://{bucket}/{key(fleet.name, at.date())}"
    body = json.dumps(record(payload, at=at, version=__version__, listed=listed), indent=1, default=str)
    try:
        reads.client("s3").put_object(Bucket=bucket, Key=key(fleet.name, at.date()), Body=body.encode(),
                                      ContentType="application/json")
    except Exception as exc:  # botocore's ClientError and BotoCoreError, and anything else: one line, never a traceback
        return f"verify record not saved to {where}: {type(exc).__name__}: {exc}"
    return f"verify record saved to {where}"
