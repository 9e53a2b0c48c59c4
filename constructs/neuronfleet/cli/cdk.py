"""``neuronfleet synth|diff|deploy -c PATH``: the fleet-file app through the project's pinned AWS CDK CLI.

The fleet-file app (``app.py``, ``stacks/``, ``cdk.json``, the CDK CLI pinned in ``package-lock.json``) lives in
the repository, not in the wheel (the wheel is the construct library). These commands run the app in the current
folder or the one ``--app-dir`` names, never a parent's, check the fleet file first (a bad one stops here, exit 2, before
Node.js starts), then run ``cdk <command> -c config=<PATH>`` in the app's folder with the CDK CLI ``make setup``
installed (``.venv/bin/cdk``, else ``node_modules/.bin/cdk``). Anything after ``--`` goes to the CDK CLI as is.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import click

from .output import FINDINGS, OK, BadInput, progress

APP_FILES = ("app.py", "cdk.json", "stacks")
"""What makes a folder the fleet-file app."""

NO_APP = ("the folder of the fleet-file app (app.py, cdk.json, stacks/): it ships in the repository, not in the "
          "wheel. Clone the repository, run `make setup` there, then run this command inside it (or pass --app-dir)")


def is_app(folder: Path) -> bool:
    return all((folder / name).exists() for name in APP_FILES)


def find_app(start: Path) -> Path | None:
    """``start`` when it holds the fleet-file app, else None. Never a parent folder (issue 36, finding 8): a parent's
    app.py is code nobody named, and running it would deploy whatever it builds with the user's credentials."""
    return start if is_app(start) else None


def parent_app(start: Path) -> Path | None:
    """The nearest parent of ``start`` holding an app: only to name it in the message, never to run it."""
    return next((folder for folder in start.parents if is_app(folder)), None)


def cdk_cli(app: Path) -> Path | None:
    """The project's pinned CDK CLI: the one ``make setup`` links into .venv/bin, else node_modules/.bin."""
    for candidate in (app / ".venv" / "bin" / "cdk", app / "node_modules" / ".bin" / "cdk"):
        if candidate.exists():
            return candidate
    return None


def cdk_command(command: str, config: Path, app_dir: Path | None, extra: tuple[str, ...]) -> tuple[list[str], Path]:
    """The CDK CLI's argument list and the folder to run it in; raises :class:`BadInput` when either is missing."""
    from neuronfleet.fleetfile.schema import load_fleet  # pydantic: only when a command runs, not for --help

    load_fleet(config)  # a bad fleet file stops here, naming field, value and what is allowed
    folder = (app_dir or Path.cwd()).resolve()
    app = find_app(folder)
    if app is None:
        above = parent_app(folder)
        raise BadInput.of("--app-dir", str(folder), NO_APP if above is None else (
            f"the folder of the fleet-file app (app.py, cdk.json, stacks/) itself: a parent folder holds one "
            f"({above}), which is not run unless named: cd there or pass --app-dir {above}"),
            what=f"neuronfleet {command}")
    cli = cdk_cli(app)
    if cli is None:
        raise BadInput.of("cdk", "not installed in the app's folder", "the pinned CDK CLI: run `make setup` in "
                          f"{app}", what=f"neuronfleet {command}")
    return [str(cli), command, "-c", f"config={config.resolve()}", *extra], app


def _run(command: str, config: Path, app_dir: Path | None, extra: tuple[str, ...]) -> int:
    argv, app = cdk_command(command, config, app_dir, extra)
    env = {**os.environ, "CDK_DISABLE_CLI_TELEMETRY": "true"}
    venv_bin = app / ".venv" / "bin"
    if venv_bin.is_dir():  # the project's own Node.js and Python first, as the Makefile does
        env["PATH"] = os.pathsep.join([str(venv_bin), env.get("PATH", "")])
    progress(f"running in {app}: cdk {' '.join(argv[1:])}")
    result = subprocess.run(argv, cwd=app, env=env, check=False)
    return OK if result.returncode == 0 else FINDINGS


def _command(name: str, summary: str) -> click.Command:
    @click.command(name=name, short_help=summary, context_settings={"ignore_unknown_options": True},
                   help=f"""{summary} The fleet file is checked first; then `cdk {name} -c config=PATH` runs in the
fleet-file app's folder (this folder, or --app-dir; never a parent's) with the project's pinned CDK CLI. Arguments after
`--` go to the CDK CLI, e.g. `neuronfleet {name} -c config/prod.yaml -- --all`. Exit 0 when the CDK CLI succeeds,
1 when it fails, 2 for a bad fleet file or no app.""")
    @click.option("-c", "--config", "config", required=True, type=click.Path(path_type=Path, dir_okay=False),
                  help="The fleet file (YAML), e.g. config/prod.yaml.")
    @click.option("--app-dir", type=click.Path(path_type=Path, file_okay=False),
                  help="The fleet-file app's folder (default: this folder; a parent's app is never run).")
    @click.argument("cdk_args", nargs=-1, type=click.UNPROCESSED)
    def run(config: Path, app_dir: Path | None, cdk_args: tuple[str, ...]) -> int:
        return _run(name, config, app_dir, cdk_args)

    return run


synth = _command("synth", "Synthesise the fleet file's stacks (no AWS call).")
diff = _command("diff", "Compare the fleet file's stacks with what is deployed (your credentials).")
deploy = _command("deploy", "Deploy the fleet file's stacks (your credentials; run preflight first).")
