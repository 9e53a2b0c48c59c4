"""The newest ``neuronfleet verify`` record of the fleet (S3 ListObjectsV2 + GetObject on ``verify/<fleet>/``).

Thin: what S3 answers becomes a Record or a one-line note (logic/confirmations.py); nothing here fails the report.
The report's role may list only that prefix (s3:ListBucket with an ``s3:prefix`` condition) and get only objects
under it (CostMonitors._grant).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ..logic.confirmations import Record, newest, parse, prefix

MAX_RECORD_BYTES = 1024 * 1024
"""A record larger than this is not read (a verify record is a few KB)."""


class VerifyRecordStore:
    def __init__(self, client: Any) -> None:
        self._client = client

    def latest(self, bucket: str, fleet: str) -> Record | str | None:
        """The newest record, None when there is none, or a line saying why it could not be read."""
        where = f"s3://{bucket}/{prefix(fleet)}"
        try:
            keys: list[str] = []
            for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix(fleet)):
                keys += [str(o.get("Key")) for o in page.get("Contents", [])]
            chosen = newest(keys, fleet)
            if chosen is None:
                return None
            where = f"s3://{bucket}/{chosen}"
            got = self._client.get_object(Bucket=bucket, Key=chosen)
            if int(got.get("ContentLength") or 0) > MAX_RECORD_BYTES:
                return f"The verify record {where} is over {MAX_RECORD_BYTES:,} bytes: not read."
            raw = got["Body"].read()
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", "")) or "ClientError"
            return (f"The verify records {where} could not be read ({code}): check the report role's s3:ListBucket "
                    "and s3:GetObject on that prefix.")
        except BotoCoreError as exc:
            return f"The verify records {where} could not be read ({type(exc).__name__})."
        return parse(raw, where)
