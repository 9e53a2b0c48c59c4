"""The pilot judges' latest verdict records as the report takes them: a record read is a Verdict, anything else a
note on the endpoint (never a failed report).

Pure: bytes in (what the adapter read from ``latest.json``), a :class:`~neuronfleet_contract.judge.Verdict` or a
sentence out. The adapter (adapters/judge_records.py) says what S3 answered: missing, refused, unreachable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from neuronfleet_contract.cost import JudgeRecords
from neuronfleet_contract.judge import RECORD_SCHEMA, Verdict

NOT_JUDGED = "not judged yet: the judge has written no verdict record"


@dataclass(frozen=True)
class Read:
    """What reading the judges' records gave: the verdicts, and per endpoint a note where there is none."""

    verdicts: tuple[Verdict, ...] = ()
    notes: Mapping[str, str] = field(default_factory=dict)


def parse_record(raw: bytes, record: JudgeRecords) -> Verdict | str:
    """The verdict in ``raw`` (the bytes of ``record``'s ``latest.json``), or why it cannot be used: not JSON, not
    a verdict record of schema ``neuronfleet.judge.verdict/1``, or a record of another endpoint."""
    where = f"s3://{record.bucket}/{record.key}"
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return f"the judge's record {where} is not JSON ({exc.__class__.__name__}): left out"
    if not isinstance(doc, dict):
        return f"the judge's record {where} is not a JSON object: left out"
    try:
        verdict = Verdict.from_json(doc)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return f"the judge's record {where} is not a verdict record ({RECORD_SCHEMA}): {_why(exc)}: left out"
    if verdict.endpoint != record.endpoint:
        return (f"the judge's record {where} is about endpoint {verdict.endpoint!r}, not {record.endpoint!r}: "
                "left out")
    return verdict


def _why(exc: Exception) -> str:
    text = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
    return text if len(text) <= 160 else text[:157] + "..."


def gather(results: Sequence[tuple[JudgeRecords, Verdict | str]]) -> Read:
    """One Read from each record's verdict or note."""
    verdicts = tuple(v for _, v in results if isinstance(v, Verdict))
    notes = {r.endpoint: v for r, v in results if isinstance(v, str)}
    return Read(verdicts=verdicts, notes=notes)
