"""``neuronfleet verify -c FLEET``: the facts of docs/checks.md checked on the account the fleet is deployed in."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from ..cli.output import BadInput, emit, json_option, progress
from .outcomes import Finding, exit_code, unchecked
from .registry import Check, Context


def _checks(ids: Sequence[str]) -> tuple[Check, ...]:
    from . import CHECKS

    known = {c.id: c for c in CHECKS}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise BadInput.of("--check", unknown[0], f"one of {', '.join(known)}", what="verify")
    return tuple(known[i] for i in ids) if ids else CHECKS


def run_checks(checks: Sequence[Check], context: Context) -> tuple[list[tuple[Check, Finding]], list[tuple[Check, str]]]:
    """(check, finding) for each check that applies to the fleet, and (check, why not) for the others. A check that
    fails unexpectedly is ``unchecked`` naming the error (never a traceback, never the others stopped)."""
    found, skipped = [], []
    for check in checks:
        why_not = check.not_applying(context.fleet)
        if why_not:
            skipped.append((check, why_not))
            continue
        try:
            finding = check.check(context)
        except Exception as exc:  # a bug of one check: said, and the others still run
            finding = unchecked(f"the check failed: {type(exc).__name__}: {exc}",
                                "a neuronfleet bug: report it with this line (NEURONFLEET_DEBUG=1 is no help here)")
        found.append((check, finding))
    return found, skipped


def listing(checks: Sequence[Check]) -> list[dict[str, Any]]:
    return [{"id": c.id, "fact": c.fact, "read_only": c.run is not None, "by_hand": c.by_hand,
             **({"permission": c.permission} if c.run else {"manual": c.manual})} for c in checks]


def text_of(found: Sequence[tuple[Check, Finding]], skipped: Sequence[tuple[Check, str]]) -> str:
    width = max((len(c.id) for c, _ in found), default=0)
    lines = []
    for check, finding in found:
        lines.append(f"{finding.outcome:<9} {check.id:<{width}}  {finding.seen}")
        if finding.fix:
            lines.append(f"{'':<9} {'':<{width}}  -> {finding.fix}")
    if skipped:
        lines.append(f"not run (they do not apply to this fleet): {', '.join(c.id for c, _ in skipped)}")
    counts = {o: sum(1 for _, f in found if f.outcome == o) for o in ("holds", "broken", "not yet", "unchecked")}
    lines.append(", ".join(f"{n} {o}" for o, n in counts.items()))
    return "\n".join(lines)


@click.command(short_help="Check on the account the facts no public source confirmed (docs/checks.md).",
               help="""After a deploy, check each fact docs/checks.md lists as unconfirmed on the account the fleet is
deployed in, with your credentials and read-only calls (describe, list, get): each check holds, is broken (what breaks
and the fix), not yet (too early: when to run again) or unchecked (why; a check that would need a change to the
account, such as an invocation or a test job, is never run: its command is listed for you). Exit 0: nothing broken
or unchecked; 1: something broken or unchecked; 2: bad usage, or no usable AWS credentials (checked first with STS
GetCallerIdentity: nothing else is called).

The one write: after a run, the result (the --json payload, its time and the kit's version) is saved to the fleet's
report bucket as verify/<fleet>/<YYYY-MM-DD>.json, where the weekly migration report reads it ("What is confirmed on
this account"). --no-save skips it; a failed write is one line on stderr and leaves the exit code as it is; a fleet
with cost monitors disabled has no report bucket: nothing is written.""")
@click.option("-c", "--config", "config", type=click.Path(path_type=Path, dir_okay=False),
              help="The fleet file (YAML) of the deployed fleet, e.g. config/prod.yaml.")
@click.option("--check", "ids", multiple=True, help="Run only this check (repeatable); --list names them.")
@click.option("--list", "list_only", is_flag=True, help="List the checks (no AWS call, no fleet file needed).")
@click.option("--no-save", "no_save", is_flag=True,
              help="Do not write the result to the report bucket (verify/<fleet>/<date>.json): the only write verify "
                   "makes.")
@json_option
def verify(config: Path | None, ids: tuple[str, ...], list_only: bool, as_json: bool, no_save: bool) -> int:
    checks = _checks(ids)
    if list_only:
        emit({"checks": listing(checks)}, "\n".join(
            f"{c.id:<28} {'read-only' if c.run else 'by hand  '}  {c.fact}" for c in checks), as_json=as_json)
        return 0
    if config is None:
        raise BadInput.of("-c/--config", None, "the fleet file of the deployed fleet (or --list)", what="verify")
    from neuronfleet import load_fleet

    from ..preflight.checks import Failed
    from ..preflight.commands import caller_problem
    from .reads import Reads

    fleet = load_fleet(config)
    reads = Reads(fleet.region, fleet.name)
    caller = reads.caller()
    if isinstance(caller, Failed):
        raise BadInput([caller_problem(caller, fleet.region)], "verify")
    progress(f"verifying {fleet.name} in {fleet.region} as {caller}")
    now = datetime.now(UTC)
    found, skipped = run_checks(checks, Context(fleet=fleet, reads=reads, now=now))
    payload = {"config": str(config), "fleet": fleet.name, "region": fleet.region, "caller": caller,
               "checks": [{"id": c.id, "outcome": f.outcome, "seen": f.seen, "fix": f.fix} for c, f in found],
               "not_applying": [{"id": c.id, "why": why} for c, why in skipped]}
    emit(payload, f"verify of {fleet.name} ({config}) in {fleet.region}\n" + text_of(found, skipped), as_json=as_json)
    if not no_save:
        from . import CHECKS
        from .records import save

        progress(save(reads, fleet, payload, at=now, listed=[c.id for c in CHECKS]))
    return exit_code(f for _, f in found)
