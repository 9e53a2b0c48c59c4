"""``neuronfleet validate -c PATH``: check a fleet file with the kit's own loader (no AWS call, no Node.js)."""

from __future__ import annotations

from pathlib import Path

import click

from .output import OK, emit, json_option


@click.command(short_help="Check a fleet file (no AWS call).",
               help="Check a fleet file: every problem with its field, value and what is allowed (exit 2), "
                    "else a one-line summary (exit 0). No AWS call.")
@click.option("-c", "--config", "config", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="The fleet file (YAML), e.g. config/prod.yaml.")
@json_option
def validate(config: Path, as_json: bool) -> int:
    from neuronfleet.fleetfile.schema import load_fleet  # the settings' pydantic models: built when a file is read

    fleet = load_fleet(config)
    summary = {
        "config": str(config), "valid": True, "name": fleet.name, "region": fleet.region,
        "training_clusters": [c.name for c in fleet.training_clusters],
        "endpoints": [e.name for e in fleet.endpoints],
    }
    text = (f"{config}: ok, fleet {fleet.name!r} in {fleet.region}: "
            f"{len(fleet.training_clusters)} training cluster(s), {len(fleet.endpoints)} endpoint(s)")
    emit(summary, text, as_json=as_json)
    return OK
