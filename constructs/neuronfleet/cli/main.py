"""``neuronfleet``: the kit's one command line. ``neuronfleet --help`` lists the subcommands.

How a feature adds a subcommand (the one way):

1. In the feature's own folder, a module that imports no aws-cdk-lib at import time (import it inside the command
   body if you need it) defines a click command or group, e.g. ``neuronfleet/capacity/cli.py``::

       import click
       from neuronfleet.cli.output import BadInput, CheckLine, emit, exit_code_of, json_option, OK

       @click.group(help="Capacity Blocks and reservations.")
       def capacity() -> None: ...

       @capacity.command(help="List the fleet's Capacity Blocks.")
       @click.option("-c", "--config", "config", required=True, type=click.Path(dir_okay=False))
       @json_option
       def status(config: str, as_json: bool) -> int:
           ...
           emit(payload, text, as_json=as_json)
           return OK

2. Add one line to :data:`COMMANDS` below: ``"capacity": "neuronfleet.capacity.cli:capacity"``, and its one-line
   help to :data:`SHORT_HELP` (the command's own short help, as click makes it; tests/cli/test_command_line.py
   checks they agree). The root loads the module lazily: only when that subcommand runs, never for
   ``neuronfleet --help``, which lists :data:`SHORT_HELP` (loading every command module would build the fleet
   file's pydantic models and import what each command needs: most of the CLI's start time).

The rules every command follows (helpers in :mod:`neuronfleet.cli.output`):

- return the exit code: ``OK`` (0) done / nothing blocking, ``FINDINGS`` (1) something blocking found
  (``exit_code_of(lines)`` for ok/warning/blocking :class:`~neuronfleet.cli.output.CheckLine` s); bad usage or input
  is exit 2: raise ``BadInput([...Problem...], what)`` or ``BadInput.of(field, value, allowed)``, or just let
  ``FleetConfigError`` / ``InvalidSettings`` propagate (the root renders them the same way). An unexpected exception
  is one line and exit 3, never a traceback (``NEURONFLEET_DEBUG=1`` shows it).
- ``@json_option`` gives ``--json``; print with ``emit(payload, text, as_json=...)``; progress lines go to stderr
  with ``progress(...)`` so ``--json`` output stays one object.
- a fleet file is ``-c/--config PATH``, read with ``neuronfleet.load_fleet``, imported inside the command body:
  a command module imports at top level only what its ``--help`` needs (no pydantic, boto3 or aws-cdk-lib;
  tests/unit/test_lazy_imports.py checks what each command loads).
- tests call :func:`main` with a list of arguments and read its return value and capsys.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import Any

import click

from .output import INTERNAL, JSON_KEY, OK, bad_input_from

COMMANDS: dict[str, str] = {
    "validate": "neuronfleet.cli.validate:validate",
    "estimate": "neuronfleet.cli.estimate:estimate",
    "preflight": "neuronfleet.preflight.commands:preflight",
    "synth": "neuronfleet.cli.cdk:synth",
    "diff": "neuronfleet.cli.cdk:diff",
    "deploy": "neuronfleet.cli.cdk:deploy",
    "capacity": "neuronfleet.capacity.cli:capacity",
    "judge": "neuronfleet.judge.commands:judge",
    "report": "neuronfleet.cli.report:report",
    "prices": "neuronfleet.cli.prices:prices",
    "verify": "neuronfleet.verify.commands:verify",
    "eks": "neuronfleet.eks.commands:eks",
}
"""Subcommand name -> ``module:attribute`` of its click command or group (loaded on first use)."""

SHORT_HELP: dict[str, str] = {
    "validate": "Check a fleet file (no AWS call).",
    "estimate": "What your GPU spend would cost on Trainium/Inferentia (no Node.js).",
    "preflight": "Check the account before a deploy (quotas, offerings, reservations, images, AMIs).",
    "synth": "Synthesise the fleet file's stacks (no AWS call).",
    "diff": "Compare the fleet file's stacks with what is deployed (your credentials).",
    "deploy": "Deploy the fleet file's stacks (your credentials; run preflight first).",
    "capacity": "EC2 Capacity Blocks: search, buy, extend, status, list.",
    "judge": "The pilot judge: prompt sets and verdicts (docs/judge.md).",
    "report": "Draw a stored migration report (a report.json, or one in S3) as its HTML page.",
    "prices": "The prices the kit estimates with: refresh them from the AWS Price List Query API.",
    "verify": "Check on the account the facts no public source confirmed (docs/checks.md).",
    "eks": "Amazon EKS (scheduler: eks): the files a user applies to the cluster.",
}
"""Subcommand name -> its line in ``neuronfleet --help``, so that the root's help loads no command module. Each is
the command's own short help (``get_short_help_str``); a command missing here is loaded to ask it."""


class _Root(click.Group):
    """The root group: subcommands from :data:`COMMANDS`, loaded lazily; the kit's input errors rendered."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *super().list_commands(ctx)})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own listing (name, short help), from :data:`SHORT_HELP` where it has the name, without importing
        the command's module."""
        found: list[tuple[str, str | click.Command]] = []
        for name in self.list_commands(ctx):
            if name in COMMANDS and name in SHORT_HELP:
                found.append((name, SHORT_HELP[name]))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                found.append((name, command))
        if not found:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in found)
        rows = [(name, said if isinstance(said, str) else said.get_short_help_str(limit)) for name, said in found]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            module, _, attr = COMMANDS[cmd_name].partition(":")
            command = getattr(import_module(module), attr)
            if not isinstance(command, click.Command):
                raise TypeError(f"COMMANDS[{cmd_name!r}]: {COMMANDS[cmd_name]} is not a click command")
            return command
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            bad = bad_input_from(exc, as_json=bool(ctx.meta.get(JSON_KEY)))
            if bad is None:
                raise
            raise bad from None


@click.group(cls=_Root, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="neuronfleet", prog_name="neuronfleet")
def cli() -> None:
    """Move ML work from NVIDIA GPUs to AWS Trainium and Inferentia: check a fleet file, estimate the saving,
    check the account before a deploy.

    Exit codes: 0 ok, 1 something blocking found, 2 bad usage or input, 3 unexpected error.
    """


def main(argv: Sequence[str] | None = None) -> int:
    """The ``neuronfleet`` console script: run one command line, return its exit code (no traceback reaches a
    user; ``NEURONFLEET_DEBUG=1`` re-raises)."""
    try:
        result = cli.main(args=list(argv) if argv is not None else None, prog_name="neuronfleet",
                          standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort:
        click.echo("neuronfleet: aborted", err=True)
        return 130
    except Exception as exc:
        if os.environ.get("NEURONFLEET_DEBUG"):
            raise
        bad = bad_input_from(exc)
        if bad is not None:
            bad.show()
            return bad.exit_code
        click.echo(f"neuronfleet: unexpected {type(exc).__name__}: {exc} (this is a neuronfleet bug; "
                   "NEURONFLEET_DEBUG=1 shows the traceback)", err=True)
        return INTERNAL
    return result if isinstance(result, int) else OK


if __name__ == "__main__":
    sys.exit(main())
