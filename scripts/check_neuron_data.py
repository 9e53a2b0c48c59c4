"""Check data/neuron_compat.json's training images against AWS's own list (needs a copy of the DLC repository).

The pytorch-training-neuronx tags AWS publishes are listed, one YAML file per image, in
github.com/aws/deep-learning-containers under docs/src/data/pytorch-training-neuronx/ (the source of
available_images.md). Give a checkout, or a bare git directory (its default branch is read):

    git clone --depth 1 https://github.com/aws/deep-learning-containers /tmp/dlc
    python scripts/check_neuron_data.py /tmp/dlc

Exits 1 and names the difference when a published tag is missing from the data, a recorded tag is not
published, or a recorded SDK differs from the tag's. Not part of `make test`: it needs that copy (network).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "constructs" / "neuronfleet" / "facts" / "data" / "neuron_compat.json"
FOLDER = "docs/src/data/pytorch-training-neuronx"


def published(repo: Path) -> dict[str, str]:
    """Tag -> SDK of every image file (the first tag of each file, as available_images.md uses it)."""
    texts: list[str] = []
    if (repo / FOLDER).is_dir():
        texts = [p.read_text() for p in sorted((repo / FOLDER).glob("*.yml"))]
    else:  # a bare git directory
        names = subprocess.run(["git", "--git-dir", str(repo), "ls-tree", "--name-only", f"HEAD:{FOLDER}"],
                               capture_output=True, text=True, check=True).stdout.split()
        texts = [subprocess.run(["git", "--git-dir", str(repo), "show", f"HEAD:{FOLDER}/{n}"], capture_output=True,
                                text=True, check=True).stdout for n in names if n.endswith(".yml")]
    out = {}
    for text in texts:
        sdk = re.search(r'^sdk:\s*"?([\d.]+)"?', text, flags=re.M)
        tag = re.search(r'^tags:\s*\n\s*-\s*"?([^"\n]+)"?', text, flags=re.M)
        if sdk and tag:
            out[tag.group(1)] = sdk.group(1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("repo", type=Path, help="a checkout or bare git directory of aws/deep-learning-containers")
    args = parser.parse_args()
    recorded = {t["tag"]: t["sdk"] for t in json.loads(DATA.read_text())["training_images"]["tags"]}
    found = published(args.repo)
    problems = [f"published, not recorded: {t} (SDK {s})" for t, s in sorted(found.items()) if t not in recorded]
    problems += [f"recorded, not published: {t}" for t in sorted(recorded) if t not in found]
    problems += [f"SDK differs for {t}: recorded {recorded[t]}, published {found[t]}"
                 for t in sorted(recorded) if t in found and found[t] != recorded[t]]
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(found)} published, {len(recorded)} recorded, {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
