"""Regenerate the AWS facts the library ships as data (constructs/neuronfleet/facts/data/*.json).

- instance_type_offerings.json: EC2 DescribeInstanceTypeOfferings (location type: region) for the
  catalog's types, from the copy of AWS's data that ships inside moto.
- sagemaker_instance_types.json: every ProductionVariantInstanceType of botocore's SageMaker service model.
- regions.json: every region of every partition in botocore's endpoints data (neuronfleet.core.rules.region).
- availability_zones.json: the AZ names per region in moto's copy of AWS's data: the per-AZ
  DescribeInstanceTypeOfferings files and moto's zone table (neuronfleet.core.rules.availability_zone).
- neuron_ecs_amis.json: per region, the AMI of AWS's SSM public parameter
  /aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended, as shipped in moto (the training
  clusters' pinned default AMI; neuronfleet.facts.neuron).
- gpu_ecs_amis.json: the same for /aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended (the GPU
  pool's pinned default AMI; neuronfleet.facts.catalog.gpu_ecs_amis).

A file's "as_of" (the date it was generated) is not compared by --check and is kept when nothing else changed.

The library reads these files; it never imports moto, and loading botocore's SageMaker model at synth
(over a second) is avoided. tests/unit/test_catalog.py runs `--check` against the installed moto and botocore.

    python scripts/refresh_data.py          # rewrite the files
    python scripts/refresh_data.py --check  # exit 1 if a committed file is stale
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "constructs" / "neuronfleet" / "facts" / "data"


def offerings() -> dict[str, object]:
    import moto

    sys.path.insert(0, str(ROOT / "constructs"))
    from neuronfleet.facts.catalog import _SPECS

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


def regions() -> dict[str, object]:
    import botocore

    endpoints = json.loads((Path(botocore.__file__).parent / "data" / "endpoints.json").read_text())
    names = sorted({r for p in endpoints["partitions"] for r in p["regions"]})
    return {"source": f"botocore {botocore.__version__} data/endpoints.json: the regions of every partition",
            "as_of": date.today().isoformat(), "regions": names}


def availability_zones() -> dict[str, object]:
    import moto
    from moto.ec2.models.availability_zones_and_regions import RegionsAndZonesBackend

    folder = Path(moto.__file__).parent / "ec2" / "resources" / "instance_type_offerings" / "availability-zone"
    zones: dict[str, set[str]] = {}
    for path in sorted(folder.glob("*.json.gz")):
        with gzip.open(path) as fh:
            zones[path.name.removesuffix(".json.gz")] = {row["Location"] for row in json.load(fh)}
    for region, table in RegionsAndZonesBackend.zones.items():
        zones.setdefault(region, set()).update(z.name for z in table if z.zone_type == "availability-zone")
    return {"source": f"moto {moto.__version__}: EC2 DescribeInstanceTypeOfferings (availability-zone) data and "
                      "the zone table of moto/ec2/models/availability_zones_and_regions.py",
            "as_of": date.today().isoformat(),
            "availability_zones": {r: sorted(z) for r, z in sorted(zones.items())}}


NEURON_ECS_AMI_PARAMETER = "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended"
GPU_ECS_AMI_PARAMETER = "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended"


def ecs_amis(parameter: str) -> dict[str, object]:
    """Per region, the image id, name and version of one ECS-optimized AMI SSM public parameter (moto's copy)."""
    import moto

    folder = Path(moto.__file__).parent / "ssm" / "resources" / "ecs" / "optimized_amis"
    found: dict[str, dict[str, str]] = {}
    for path in sorted(folder.glob("*.json.gz")):
        with gzip.open(path) as fh:
            node = json.load(fh)
        for part in parameter.strip("/").split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        if node:
            found[path.name.removesuffix(".json.gz")] = {
                k: node[k]["Value"] for k in ("image_id", "image_name", "image_version")}
    return {"source": f"AWS SSM public parameter {parameter} (image_id, image_name, image_version) "
                      f"per region, as shipped in moto {moto.__version__} (moto/ssm/resources/ecs/optimized_amis)",
            "parameter": parameter + "/image_id", "as_of": date.today().isoformat(),
            "regions": found}


def neuron_ecs_amis() -> dict[str, object]:
    return ecs_amis(NEURON_ECS_AMI_PARAMETER)


def gpu_ecs_amis() -> dict[str, object]:
    return ecs_amis(GPU_ECS_AMI_PARAMETER)


FILES = {"instance_type_offerings.json": offerings, "sagemaker_instance_types.json": sagemaker_types,
         "regions.json": regions, "availability_zones.json": availability_zones,
         "neuron_ecs_amis.json": neuron_ecs_amis, "gpu_ecs_amis.json": gpu_ecs_amis}


def _same_but_date(old_text: str, new: dict[str, object]) -> bool:
    try:
        old = json.loads(old_text)
    except ValueError:
        return False
    return isinstance(old, dict) and {k: v for k, v in old.items() if k != "as_of"} == \
        {k: v for k, v in new.items() if k != "as_of"}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for name, build in FILES.items():
        target = DATA / name
        data = build()
        old = target.read_text() if target.is_file() else ""
        if args.check:
            if not _same_but_date(old, data):
                stale.append(name)
        elif not _same_but_date(old, data):
            target.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            print(f"wrote {target.relative_to(ROOT)}")
    if stale:
        print(f"stale: {', '.join(stale)}: run python scripts/refresh_data.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
