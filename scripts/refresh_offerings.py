"""Regenerate constructs/neuronfleet/data/instance_type_offerings.json from AWS's offerings data.

The source is the copy of EC2 DescribeInstanceTypeOfferings (location type: region) that ships inside
moto (a dev dependency). The library itself never imports moto; it reads the JSON this writes.

    python scripts/refresh_offerings.py          # rewrite the file
    python scripts/refresh_offerings.py --check  # exit 1 if the committed file is stale
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "constructs" / "neuronfleet" / "data" / "instance_type_offerings.json"


def moto_offerings(instance_types: set[str]) -> dict[str, list[str]]:
    import moto

    folder = Path(moto.__file__).parent / "ec2" / "resources" / "instance_type_offerings" / "region"
    regions: dict[str, list[str]] = {t: [] for t in sorted(instance_types)}
    for path in sorted(folder.glob("*.json.gz")):
        region = path.name.removesuffix(".json.gz")
        with gzip.open(path) as fh:
            for row in json.load(fh):
                if row["InstanceType"] in regions:
                    regions[row["InstanceType"]].append(region)
    return regions


def render() -> str:
    import moto

    sys.path.insert(0, str(ROOT / "constructs"))
    from neuronfleet.catalog import _SPECS

    doc = {
        "source": f"EC2 DescribeInstanceTypeOfferings (region), as shipped in moto {moto.__version__}",
        "regions": moto_offerings({s.instance_type for s in _SPECS}),
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = render()
    if args.check:
        if TARGET.read_text() != text:
            print(f"{TARGET} is stale: run python scripts/refresh_offerings.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
