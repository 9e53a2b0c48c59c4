#!/usr/bin/env python3
"""Reference app: reads one fleet file and builds its stacks.

The only place that reads CDK context or the environment:
    cdk synth -c env=prod          -> config/prod.yaml
    cdk synth -c config=path.yaml  -> any fleet file
    (neither)                      -> config/dev.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

from aws_cdk import App

from neuronfleet import FleetConfigError, Problem, load_fleet
from stacks import build_fleet

ROOT = Path(__file__).resolve().parent


def fleet_path(app: App) -> Path:
    config = app.node.try_get_context("config")
    if config:
        return Path(config)
    env = app.node.try_get_context("env") or "dev"
    path = ROOT / "config" / f"{env}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in (ROOT / "config").glob("*.yaml")))
        raise FleetConfigError("cdk context", [Problem("env", env, f"one of {known} (config/NAME.yaml), "
                                                                   "or -c config=PATH for any fleet file")])
    return path


def main() -> int:
    app = App()
    try:
        fleet = load_fleet(fleet_path(app))
    except FleetConfigError as exc:
        print(f"neuronfleet: {exc}\nNothing was synthesised.", file=sys.stderr)
        return 1
    build_fleet(app, fleet)
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
