"""Regenerate the AWS facts the library ships as data (constructs/neuronfleet/data/*.json).

- instance_type_offerings.json: EC2 DescribeInstanceTypeOfferings (location type: region) for the
  catalog's types, from the copy of AWS's data that ships inside moto.
- sagemaker_instance_types.json: every ProductionVariantInstanceType of botocore's SageMaker service model.

The library reads these files; it never imports moto, and loading botocore's SageMaker model at synth
(over a second) is avoided. tests/test_catalog.py runs `--check` against the installed moto and botocore.

    python scripts/refresh_data.py          # rewrite the files
    python scripts/refresh_data.py --check  # exit 1 if a committed file is stale
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "constructs" / "neuronfleet" / "data"


def offerings() -> dict[str, object]:
    import moto

    sys.path.insert(0, str(ROOT / "constructs"))
    from neuronfleet.catalog import _SPECS

    folder = Path(moto.__file__).parent / "ec2" / "resources" / "instance_type_offerings" / "region"
    regions: dict[str, list[str]] = {s.instance_type: [] for s in sorted(_SPECS, key=lambda s: s.instance_type)}
    for path in sorted(folder.glob("*.json.gz")):
        region = path.name.removesuffix(".json.gz")
        with gzip.open(path) as fh:
            for row in json.load(fh):
                if row["InstanceType"] in regions:
                    regions[row["InstanceType"]].append(region)
    return {"source": f"EC2 DescribeInstanceTypeOfferings (region), as shipped in moto {moto.__version__}",
            "regions": regions}


def sagemaker_types() -> dict[str, object]:
    import botocore
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return {"source": f"botocore {botocore.__version__} SageMaker service model: ProductionVariantInstanceType",
            "instance_types": sorted(model.shape_for("ProductionVariantInstanceType").enum)}


FILES = {"instance_type_offerings.json": offerings, "sagemaker_instance_types.json": sagemaker_types}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for name, build in FILES.items():
        target = DATA / name
        text = json.dumps(build(), indent=1, sort_keys=True) + "\n"
        if args.check:
            if not target.is_file() or target.read_text() != text:
                stale.append(name)
        else:
            target.write_text(text)
            print(f"wrote {target.relative_to(ROOT)}")
    if stale:
        print(f"stale: {', '.join(stale)}: run python scripts/refresh_data.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
