"""Write the fleet file's JSON Schema (docs/fleet-file.schema.json) from the loader's own pydantic models.

The schema is pydantic's ``model_json_schema()`` of ``neuronfleet.Fleet`` (field descriptions from the settings'
attribute docstrings, which the models read only when ``NEURONFLEET_SCHEMA_DOCS=1``: this script sets it before it
imports neuronfleet; neuronfleet.settings._base.SCHEMA_DOCS says why). It describes the shape an editor can check as
you type (YAML language servers read it from a ``# yaml-language-server: $schema=...`` first line); the loader still
decides: the kit's rules that a schema cannot say (AWS's limits across fields, the catalog, the region's AZs) are
checked only by ``neuronfleet validate``.

    python scripts/fleet_schema.py           # rewrite the file
    python scripts/fleet_schema.py --check   # exit 1 if it is stale (tests/unit/test_fleet_schema.py)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "fleet-file.schema.json"
sys.path.insert(0, str(ROOT / "constructs"))
os.environ["NEURONFLEET_SCHEMA_DOCS"] = "1"  # before neuronfleet is imported: the models are built with descriptions


def schema_text() -> str:
    from neuronfleet import Fleet

    if not Fleet.model_config.get("use_attribute_docstrings"):  # neuronfleet was imported before the variable was set
        raise SystemExit("fleet_schema: the settings were built without their docstrings: import neuronfleet after "
                         "this script sets NEURONFLEET_SCHEMA_DOCS=1")

    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **Fleet.model_json_schema()}
    schema["title"] = "neuronfleet fleet file"
    return json.dumps(schema, indent=1, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed schema is stale")
    args = parser.parse_args()
    text = schema_text()
    if args.check:
        if not TARGET.exists() or TARGET.read_text() != text:
            print(f"stale: {TARGET.relative_to(ROOT)}: run python scripts/fleet_schema.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(ROOT)} ({len(text):,} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
