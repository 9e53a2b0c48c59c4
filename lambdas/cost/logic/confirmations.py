"""What ``neuronfleet verify`` confirmed on the account: its records in the report bucket, and the report's section
"What is confirmed on this account". Pure: the record's bytes and the listing's keys come in.

``neuronfleet verify`` writes its result (its ``--json`` payload, plus ``at`` and the kit's ``version``) to
``verify/<fleet>/<YYYY-MM-DD>.json`` in the fleet's report bucket (the bucket the report function writes
``reports/<fleet>/<date>/`` to); the weekly report reads the newest of them. The key layout's one home is the
contract (``neuronfleet_contract.cost.verify_key``), which the command, CostMonitors' grant and this module share.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from neuronfleet_contract.cost import verify_prefix as prefix

OUTCOMES = ("holds", "broken", "not yet", "unchecked")
RUN_IT = "run `neuronfleet verify -c <fleet file>` after a deploy"
_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2})\.json$")


def newest(keys: Iterable[str], fleet: str) -> str | None:
    """The key of the newest record among ``keys`` (a listing of :func:`prefix`), by the date it is named after;
    keys not named ``<YYYY-MM-DD>.json`` directly under the prefix are ignored."""
    dated = []
    for k in keys:
        if not k.startswith(prefix(fleet)):
            continue
        match = _DAY.match(k[len(prefix(fleet)):])
        if match:
            try:
                dated.append((date.fromisoformat(match.group(1)), k))
            except ValueError:
                continue
    return max(dated)[1] if dated else None


@dataclass(frozen=True)
class Checked:
    id: str
    outcome: str
    seen: str


@dataclass(frozen=True)
class Record:
    """One verify run: when (``at``, ISO 8601), the kit's version, each check's outcome, the checks that do not
    apply to the fleet, and every check the kit has (``listed``: those not run are unconfirmed)."""

    at: str
    version: str
    checks: tuple[Checked, ...]
    not_applying: tuple[str, ...]
    listed: tuple[str, ...]

    @property
    def day(self) -> str:
        return self.at[:10]


def _text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{field}: got {value!r}; allowed: a non-empty text")
    return value


def parse(raw: bytes | str, where: str) -> Record | str:
    """A record, or one line saying why the record at ``where`` cannot be read (never an exception)."""
    try:
        data = json.loads(raw)
        if not isinstance(data, Mapping):
            raise ValueError(f"the record: got {type(data).__name__}; allowed: a JSON object")
        at = _text(data.get("at"), "at")
        date.fromisoformat(at[:10])
        checks = []
        for i, c in enumerate(data.get("checks") or ()):
            if not isinstance(c, Mapping):
                raise ValueError(f"checks[{i}]: got {c!r}; allowed: an object with id and outcome")
            outcome = _text(c.get("outcome"), f"checks[{i}].outcome")
            if outcome not in OUTCOMES:
                raise ValueError(f"checks[{i}].outcome: got {outcome!r}; allowed: one of {', '.join(OUTCOMES)}")
            checks.append(Checked(_text(c.get("id"), f"checks[{i}].id"), outcome, str(c.get("seen") or "")))
        not_applying = tuple(_text(n.get("id") if isinstance(n, Mapping) else n, "not_applying[].id")
                             for n in data.get("not_applying") or ())
        listed = tuple(_text(i, "listed[]") for i in data.get("listed") or ())
        return Record(at=at, version=str(data.get("version") or "unknown"), checks=tuple(checks),
                      not_applying=not_applying, listed=listed)
    except (ValueError, TypeError, AttributeError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        return f"The verify record {where} cannot be read ({exc}): nothing is shown as confirmed; {RUN_IT}."


def lines(record: Record | str | None) -> list[str]:
    """The section's lines: per check its outcome and date (``holds``: confirmed on the account), the checks that do
    not apply, and the checks never run, unconfirmed with how to run them. No record: one line saying so; a record
    that cannot be read: its one line."""
    if record is None:
        return [f"No verify record: nothing is confirmed on this account yet; {RUN_IT}."]
    if isinstance(record, str):
        return [record]
    day = record.day
    out = []
    for c in record.checks:
        state = "confirmed (holds)" if c.outcome == "holds" else c.outcome
        out.append(f"{c.id}: {state} on {day}" + (f": {c.seen}" if c.outcome != "holds" and c.seen else ""))
    out += [f"{i}: does not apply to this fleet (verify {day})" for i in record.not_applying]
    out += [f"{i}: unconfirmed (never run on this account): {RUN_IT}" for i in never_run(record, record.listed)]
    return out


def never_run(record: Record, listed: Sequence[str]) -> list[str]:
    """The checks of ``listed`` the record neither ran nor found not applying."""
    ran = {c.id for c in record.checks} | set(record.not_applying)
    return [i for i in listed if i not in ran]
