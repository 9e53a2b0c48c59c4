"""Guard for refactors: every example fleet's templates equal their committed snapshots, byte for byte once the
asset hashes are replaced by a placeholder (logical ids, properties, order of lists: all compared).

The snapshots live in tests/data/templates/<fleet>/<stack>.json (sorted keys). After an intended template change,
regenerate them and review the diff::

    .venv/bin/python -m tests.constructs.test_template_snapshots --update
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLE_FLEETS, ROOT, SynthesizedFleet, fleet_file

SNAPSHOTS = ROOT / "tests" / "data" / "templates"
ASSET_HASH = re.compile(r"\b[0-9a-f]{64}\b")
"""A CDK asset hash (SHA-256, hex): the name of a Lambda's S3 key (``<hash>.zip``) and of its staged folder."""
PLACEHOLDER = "<asset-hash>"
REGENERATE = "regenerate with: .venv/bin/python -m tests.constructs.test_template_snapshots --update"


def normalised(template: dict[str, Any]) -> str:
    """The template as the snapshot stores it: sorted keys, asset hashes (and the S3 keys derived from them)
    replaced by :data:`PLACEHOLDER`."""
    text = json.dumps(template, indent=1, sort_keys=True, ensure_ascii=False)
    return ASSET_HASH.sub(PLACEHOLDER, text) + "\n"


def snapshot_path(fleet: str, stack: str) -> Path:
    return SNAPSHOTS / fleet / f"{stack}.json"


def test_normalised_replaces_asset_hashes_only() -> None:
    digest = "7793dc0012077c175d5d43adda8134139d72740b53fabbfff1ab6f23fd49ac93"
    text = normalised({"Code": {"S3Key": f"{digest}.zip"}, "Id": "Fn" + "a" * 63, "Tag": "b" * 65})
    assert f'"{PLACEHOLDER}.zip"' in text and digest not in text
    assert "a" * 63 in text and "b" * 65 in text  # not a 64-hex word: kept


@pytest.mark.parametrize("fleet", EXAMPLE_FLEETS)
def test_templates_equal_snapshots(fleet: str, synth_fleet: Callable[[str], SynthesizedFleet]) -> None:
    synthesized = synth_fleet(fleet)
    stored = {p.stem for p in (SNAPSHOTS / fleet).glob("*.json")}
    assert stored == set(synthesized.stacks), f"{fleet}: stacks differ from the snapshots; {REGENERATE}"
    for stack in sorted(synthesized.stacks):
        expected = snapshot_path(fleet, stack).read_text()
        actual = normalised(synthesized.template_json(stack))
        assert actual == expected, f"{fleet}/{stack}: template differs from its snapshot; {REGENERATE}"


@pytest.mark.parametrize("fleet", ["prod-hot"])  # prod with its hot standby: a failover too (tests/conftest.py)
def test_each_handler_package_is_its_own_asset(fleet: str, synth_fleet: Callable[[str], SynthesizedFleet]) -> None:
    """A cost edit does not redeploy the failover: functions of one handler package share an S3 key, others differ."""
    keys: dict[str, set[str]] = {}
    synthesized = synth_fleet(fleet)
    for stack in synthesized.stacks:
        for resource in synthesized.template_json(stack)["Resources"].values():
            if resource["Type"] == "AWS::Lambda::Function" and "S3Key" in resource["Properties"].get("Code", {}):
                package = resource["Properties"]["Handler"].split(".")[0]
                keys.setdefault(package, set()).add(resource["Properties"]["Code"]["S3Key"])
    assert set(keys) == {"capacity_alert", "capacity_lifecycle", "cost", "failover"}
    assert all(len(k) == 1 for k in keys.values()), keys
    assert len(set.union(*keys.values())) == len(keys)


def update() -> None:
    """Rewrite every snapshot from a fresh synth of every example fleet."""
    for fleet in EXAMPLE_FLEETS:
        synthesized = SynthesizedFleet(fleet_file(fleet))
        folder = SNAPSHOTS / fleet
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.json"):
            old.unlink()
        for stack in sorted(synthesized.stacks):
            snapshot_path(fleet, stack).write_text(normalised(synthesized.template_json(stack)))
            print(snapshot_path(fleet, stack).relative_to(ROOT))


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(__doc__)
    update()
