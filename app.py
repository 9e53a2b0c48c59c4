#!/usr/bin/env python3
"""Reference app: reads one fleet file and builds its stacks.

The only place that reads CDK context or the environment:
    cdk synth -c env=prod          -> config/prod.yaml
    cdk synth -c config=path.yaml  -> any fleet file
    (neither)                      -> config/dev.yaml

The fleet file is validated before aws_cdk is imported: importing aws-cdk-lib starts Node.js (jsii), which
takes over a second and hundreds of MB, and a bad file must fail fast and write nothing to cdk.out.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuronfleet import FleetConfigError, Problem, load_fleet

if TYPE_CHECKING:
    from neuronfleet import Fleet

ROOT = Path(__file__).resolve().parent

CONTEXT_ENV = "CDK_CONTEXT_JSON"
"""The CLI passes context (cdk.json, cdk.context.json, -c) as JSON in this variable (cxapi.CONTEXT_ENV)."""
CONTEXT_OVERFLOW_ENV = "CONTEXT_OVERFLOW_LOCATION_ENV"
"""...and what does not fit in the environment in a JSON file named here (cxapi.CONTEXT_OVERFLOW_LOCATION_ENV);
aws-cdk-lib's App.loadContext merges both the same way."""


def cdk_context() -> dict[str, Any]:
    """The context App() will see, read without starting Node.js."""
    context: dict[str, Any] = {}
    raw = os.environ.get(CONTEXT_ENV)
    if raw:
        context.update(json.loads(raw))
    overflow = os.environ.get(CONTEXT_OVERFLOW_ENV)
    if overflow:
        context.update(json.loads(Path(overflow).read_text()))
    return context


def fleet_path(context: dict[str, Any]) -> Path:
    config = context.get("config")
    if config:
        return Path(config)
    env = context.get("env") or "dev"
    path = ROOT / "config" / f"{env}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in (ROOT / "config").glob("*.yaml")))
        raise FleetConfigError("cdk context", [Problem("env", env, f"one of {known} (config/NAME.yaml), "
                                                                   "or -c config=PATH for any fleet file")])
    return path


def synth(fleet: Fleet) -> None:
    """Build and write the fleet's stacks. What only the built stacks show (the library's CloudFormationLimits: the
    resources per stack before any template is written; template size, Lambda environments and inline policies in
    the written templates) raises FleetConfigError and leaves the output folder as it was: what this run wrote is
    removed."""
    from aws_cdk import App

    from neuronfleet import CloudFormationLimits
    from stacks import build_fleet
    from stacks.limits import fleet_problems

    outdir = Path(os.environ.get("CDK_OUTDIR") or "cdk.out")
    before = set(outdir.iterdir()) if outdir.is_dir() else set()
    app = App()
    limits = CloudFormationLimits(app)
    try:
        stacks = build_fleet(app, fleet)
        try:
            app.synth()
        except RuntimeError:  # CDK's validation failed: the limits' findings, in the fleet file's terms
            if not limits.problems:
                raise
            raise FleetConfigError(fleet.name, fleet_problems(fleet, stacks, limits.problems)) from None
    except FleetConfigError:
        for path in (set(outdir.iterdir()) if outdir.is_dir() else set()) - before:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        raise


def main() -> int:
    try:
        fleet = load_fleet(fleet_path(cdk_context()))
    except FleetConfigError as exc:
        print(f"neuronfleet: {exc}\nNothing was synthesised.", file=sys.stderr)
        return 1
    except (ValueError, OSError) as exc:  # unreadable context: the CLI's JSON, or its overflow file
        print(f"neuronfleet: cdk context: {exc}\nNothing was synthesised.", file=sys.stderr)
        return 1
    try:
        synth(fleet)
    except FleetConfigError as exc:  # what only the built stacks show (CloudFormation's per-stack quotas)
        print(f"neuronfleet: {exc}\nNothing was synthesised.", file=sys.stderr)
        return 1
    return 0


def exit_now(code: int) -> None:
    """End the process once the cloud assembly is written: the exit handlers run (jsii stops Node.js), the streams
    are flushed, and the interpreter's teardown (freeing aws-cdk-lib's tens of thousands of Python classes and the
    constructs' objects, about 0.6 s for prod, nothing a synth needs) is skipped."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
