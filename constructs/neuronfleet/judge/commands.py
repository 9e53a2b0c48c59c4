"""``neuronfleet judge``: check a prompt set before it goes to S3, and read a verdict record.

No aws-cdk-lib here (``neuronfleet --help`` starts no Node.js): the prompt set's parser and the verdict record are the
judge's contract (``neuronfleet_contract.judge``), the same the deployed function uses.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..cli.output import FINDINGS, OK, BadInput, Said, emit, json_option
from ..core.problems import MISSING, Problem


@click.group("judge")
def judge() -> None:
    """The pilot judge: prompt sets and verdicts (docs/judge.md)."""


@judge.command("prompts")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@json_option
def prompts(path: Path, as_json: bool) -> int:
    """Check a prompt set (JSON Lines, {"prompt": ..., "reference": ...} a line) as the judge reads it."""
    from neuronfleet_contract.judge import PromptSetError, parse_prompt_set

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BadInput.of("PATH", str(path), f"a readable file ({exc.strerror})", what="judge prompts") \
            from None
    try:
        found = parse_prompt_set(raw, source=str(path))
    except PromptSetError as exc:
        raise BadInput.of(exc.field, exc.value, exc.allowed, what="the prompt set") from None
    graded = sum(1 for p in found if p.reference is not None)
    emit({"path": str(path), "prompts": len(found), "with_reference": graded},
         f"{path}: {len(found)} prompts, {graded} with a reference (task score): the judge reads it", as_json=as_json)
    return OK


@judge.command("verdict")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@json_option
def verdict(path: Path, as_json: bool) -> int:
    """Print a verdict record (latest.json, downloaded from the judge's records bucket) in one line; exit 1 on no-go."""
    from neuronfleet_contract.judge import RECORD_SCHEMA, Verdict

    what, record_is = "judge verdict", f"a verdict record as the judge writes it (schema {RECORD_SCHEMA})"
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise BadInput.of("PATH", str(path), f"a readable file ({exc.strerror})", what=what) from None
    except json.JSONDecodeError as exc:
        raise BadInput([Problem(str(path), Said(f"no JSON ({exc.msg}, line {exc.lineno})"),
                                record_is)], what) from None
    except UnicodeDecodeError:
        raise BadInput([Problem(str(path), Said("bytes that are not UTF-8 text"), record_is)], what) from None
    if not isinstance(doc, dict):
        raise BadInput([Problem(str(path), Said(f"a JSON {type(doc).__name__}"), record_is)], what)
    if doc.get("schema") != RECORD_SCHEMA:
        raise BadInput([Problem(f"{path}: schema", doc.get("schema", MISSING),
                                f"{RECORD_SCHEMA!r}, the schema of the judge's verdict records (latest.json)")],
                       what)
    try:
        record = Verdict.from_json(doc)
    except KeyError as exc:
        raise BadInput([Problem(f"{path}: {exc.args[0]}", MISSING, record_is)], what) from None
    except (ValueError, TypeError) as exc:
        raise BadInput([Problem(str(path), Said(str(exc)[:200]), record_is)], what) from None
    emit(record.to_json(), record.line(), as_json=as_json)
    return OK if record.go else FINDINGS
