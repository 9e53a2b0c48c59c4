"""The pilot judges' latest verdict records (S3 GetObject on each judge's ``<prefix><endpoint>/latest.json``).

Thin: what S3 answers becomes a Verdict or a note (logic/verdict_records.py); nothing here fails the report. The
report's role may read exactly each latest record and list exactly that key (PilotJudge.grant_read_latest): S3 answers
a missing object 403 to a reader without ``s3:ListBucket``, so a refusal is checked once with ListObjectsV2 on the
key before it is reported as one (GetObject's documentation, botocore 1.44.5 s3 service-2.json, read 2026-11-23).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from neuronfleet_contract.cost import JudgeRecords
from neuronfleet_contract.judge import Verdict

from ..logic.verdict_records import NOT_JUDGED, Read, gather, parse_record

MAX_RECORD_BYTES = 1024 * 1024
"""A latest.json larger than this is not read (a verdict record is a few KB)."""
MISSING = ("NoSuchKey", "404", "NotFound")
DENIED = ("AccessDenied", "403", "AllAccessDisabled", "InvalidAccessKeyId")


class JudgeRecordStore:
    def __init__(self, client: Any) -> None:
        self._client = client

    def latest(self, records: Sequence[JudgeRecords]) -> Read:
        """Each record's verdict, or a note: not judged yet (no object), refused, unreachable, malformed."""
        return gather([(r, self._one(r)) for r in records])

    def _one(self, record: JudgeRecords) -> Verdict | str:
        where = f"s3://{record.bucket}/{record.key}"
        try:
            got = self._client.get_object(Bucket=record.bucket, Key=record.key)
            if int(got.get("ContentLength") or 0) > MAX_RECORD_BYTES:
                return f"the judge's record {where} is over {MAX_RECORD_BYTES:,} bytes: left out"
            raw = got["Body"].read()
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in MISSING:
                return NOT_JUDGED
            if code in DENIED:
                return NOT_JUDGED if self._absent(record) else (
                    f"the report may not read the judge's record {where} ({code}): check the report role's "
                    "s3:GetObject on it (PilotJudge.grant_read_latest) and the bucket's policy")
            return f"the judge's record {where} could not be read ({code or 'ClientError'}): left out this week"
        except BotoCoreError as exc:
            return f"the judge's record {where} could not be read ({type(exc).__name__}): left out this week"
        return parse_record(raw, record)

    def _absent(self, record: Any) -> bool:
        """Whether the key is certainly not there (the listing of that one key is empty); False when unsure."""
        try:
            listed = self._client.list_objects_v2(Bucket=record.bucket, Prefix=record.key, MaxKeys=1)
        except (ClientError, BotoCoreError):
            return False
        return not any(o.get("Key") == record.key for o in listed.get("Contents", []))
