"""The published JSON Schema of the fleet file (docs/fleet-file.schema.json): current, and true to the loader on the
kit's own fleet files (each validates) and on mistakes a schema can see (each refused by both)."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest
import yaml

from neuronfleet import FleetConfigError, parse_fleet
from tests.conftest import EXAMPLE_FLEETS, ROOT

SCHEMA = json.loads((ROOT / "docs" / "fleet-file.schema.json").read_text())


def test_the_published_schema_is_the_loaders() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "fleet_schema.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("name", EXAMPLE_FLEETS)
def test_every_example_fleet_file_validates_against_the_schema(name: str) -> None:
    doc = yaml.safe_load((ROOT / "config" / f"{name}.yaml").read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)


@pytest.mark.parametrize(("mistake", "path"), [
    ({"nmae": "x"}, "nmae"),                                   # a misspelt key
    ({"phase": "staging"}, "phase"),                            # a value outside the choices
    ({"training_clusters": [{"name": "t", "instance_type": "trn2.48xlarge", "count": "2"}]}, "count"),
])
def test_a_mistake_the_schema_sees_is_refused_by_the_schema_and_the_loader(mistake: dict, path: str) -> None:
    doc = yaml.safe_load((ROOT / "config" / "dev.yaml").read_text())
    doc.update(mistake)
    errors = list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(doc))
    assert errors, "the schema let it through"
    with pytest.raises(FleetConfigError, match=path):
        parse_fleet(doc, source="f.yaml")
