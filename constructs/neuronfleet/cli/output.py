"""What every ``neuronfleet`` subcommand shares: exit codes, ``--json``, errors in the kit's field/value/allowed form,
progress on stderr, and ok / warning / blocking check lines (preflight and other checkers).

No aws-cdk-lib here (importing the CLI must not start Node.js), and no pydantic: every command imports this module,
and ``neuronfleet --help`` reads no fleet file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

import click

from neuronfleet.core.problems import FleetConfigError, InvalidSettings, Problem, render, show

OK = 0
"""Exit code: the command did what was asked and found nothing blocking."""
FINDINGS = 1
"""Exit code: the command ran and found something blocking (a failed check, a blocking preflight line), or some
checks could not run (``unchecked`` lines: a check not made is not a pass)."""
BAD_INPUT = 2
"""Exit code: bad usage or input (an unknown flag, a fleet file or CSV that cannot be used); nothing was done."""
INTERNAL = 3
"""Exit code: an unexpected error inside neuronfleet (one line, no traceback; NEURONFLEET_DEBUG=1 shows it)."""

JSON_KEY = "neuronfleet.json"
"""``ctx.meta`` key: whether the running command was given ``--json`` (errors are then JSON too)."""

F = TypeVar("F", bound=Callable[..., Any])


def json_option(f: F) -> F:
    """Add ``--json`` to a command: its result (and any input error) printed as one JSON object on stdout."""

    def remember(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
        ctx.meta[JSON_KEY] = bool(value)
        return bool(value)

    return click.option("--json", "as_json", is_flag=True, callback=remember, expose_value=True, is_eager=True,
                        help="Print one JSON object on stdout instead of text.")(f)


def emit(payload: Any, text: str, *, as_json: bool) -> None:
    """Print the result: ``payload`` as JSON (``--json``), else ``text``."""
    click.echo(json.dumps(payload, indent=1, default=str) if as_json else text)


def progress(message: str) -> None:
    """One progress line on stderr (never mixed into ``--json`` output on stdout)."""
    click.echo(message, err=True)


class Said(str):
    """A value shown as it is in a problem's ``got`` (a description such as ``a JSON list``, not quoted)."""

    def __repr__(self) -> str:
        return str(self)


class BadInput(click.ClickException):
    """Input neuronfleet cannot use: every problem with its field, value and what is allowed. Exit code 2."""

    exit_code = BAD_INPUT

    def __init__(self, problems: Sequence[Problem], what: str, *, as_json: bool = False) -> None:
        self.problems, self.what, self.as_json = list(problems), what, as_json
        super().__init__(render(self.problems, what))

    @classmethod
    def of(cls, path: str, value: Any, allowed: str, *, what: str = "input") -> BadInput:
        """One problem: ``BadInput.of("--price", "p5=abc", "TYPE=USD, USD a number >= 0")``."""
        return cls([Problem(path, value, allowed)], what)

    def payload(self) -> dict[str, Any]:
        return {"error": self.what, "problems": [{"path": p.path, "value": show(p.value), "allowed": p.allowed}
                                                 for p in self.problems]}

    def show(self, file: Any = None) -> None:
        if self.as_json:
            click.echo(json.dumps(self.payload(), indent=1))
        else:
            click.echo(f"neuronfleet: {self.format_message()}", err=True)


def bad_input_from(exc: Exception, *, as_json: bool = False) -> BadInput | None:
    """The kit's own input errors (:class:`FleetConfigError`, :class:`InvalidSettings`) as :class:`BadInput`."""
    if isinstance(exc, BadInput):
        exc.as_json = exc.as_json or as_json
        return exc
    if isinstance(exc, FleetConfigError):
        return BadInput(exc.problems, f"{exc.source}: the fleet file", as_json=as_json)
    if isinstance(exc, InvalidSettings):
        return BadInput(exc.problems, exc.what, as_json=as_json)
    return None


class Moment(click.ParamType):
    """A point in time as ISO 8601: a date (``2026-12-01``, midnight), a date and time with or without seconds
    (``2026-12-01T00:00``, ``2026-12-01 00:00:30``), with or without a zone (``Z``, ``+02:00``). Without a zone it
    is UTC. The value is an aware datetime in UTC."""

    name = "time"
    allowed = ("an ISO 8601 date or time, e.g. 2026-12-01, 2026-12-01T00:00, 2026-12-01T00:00:00Z or "
               "2026-12-01T09:00+09:00 (no zone: UTC)")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, datetime):
            moment = value
        else:
            try:
                moment = datetime.fromisoformat(str(value).strip())
            except ValueError:
                self.fail(f"got {value!r}; allowed: {self.allowed}", param, ctx)
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


Status = Literal["ok", "warning", "blocking", "unchecked"]
"""ok; warning (checked, worth a look, not blocking); blocking; unchecked (the check could not run: no answer)."""


@dataclass(frozen=True)
class CheckLine:
    """One line of a checker's report (preflight, judge): what was checked, how it stands, and the fix."""

    status: Status
    check: str
    detail: str
    fix: str = ""


def exit_code_of(lines: Iterable[CheckLine]) -> int:
    """:data:`FINDINGS` when any line is blocking or could not be checked, else :data:`OK` (warnings do not fail a
    run): exit 0 means every check ran and none blocks."""
    return FINDINGS if any(line.status in ("blocking", "unchecked") for line in lines) else OK


def check_lines_text(lines: Sequence[CheckLine]) -> str:
    """Lines as text, one per check, the fix indented under it, and a one-line count."""
    mark = {"ok": "ok      ", "warning": "WARNING ", "blocking": "BLOCKING", "unchecked": "UNCHECKED"}
    out = []
    for line in lines:
        out.append(f"{mark[line.status]} {line.check}: {line.detail}")
        if line.fix and line.status != "ok":
            out.append(f"         fix: {line.fix}")
    counts = {s: sum(1 for line in lines if line.status == s) for s in ("ok", "warning", "blocking", "unchecked")}
    total = f"{counts['ok']} ok, {counts['warning']} warning(s), {counts['blocking']} blocking"
    if counts["unchecked"]:
        total += (f", {counts['unchecked']} NOT CHECKED (could not run: see the UNCHECKED lines; "
                  "the run does not pass until they are checked)")
    out.append(total)
    return "\n".join(out)


def check_lines_payload(lines: Sequence[CheckLine]) -> dict[str, Any]:
    return {"lines": [asdict(line) for line in lines],
            "blocking": sum(1 for line in lines if line.status == "blocking"),
            "warnings": sum(1 for line in lines if line.status == "warning"),
            "unchecked": sum(1 for line in lines if line.status == "unchecked")}
