"""``neuronfleet eks examples``: the files docs/eks.md and docs/sharing.md apply, written for config/eks.yaml, parse,
validate offline (Kubernetes 1.36 schemas via kubernetes-validate; Kueue 0.19.2's CRDs for any Kueue object), and the
pool's training Job is admissible (its devices within the inference queue's lendingLimit), Guaranteed, and survives
a reclaim; a fleet without EKS is refused; files that differ are kept without --force."""

from __future__ import annotations

import json
from pathlib import Path

import kubernetes_validate  # type: ignore[import-untyped]
import yaml

from neuronfleet import load_fleet
from neuronfleet.cli.main import main
from neuronfleet.facts.eks_labels import NEURON_RESOURCE
from neuronfleet.facts.eks_pins import DEFAULT_KUBERNETES_VERSION
from neuronfleet.fleetfile.eks_section import cluster_settings
from neuronfleet.sharing import manifests as pool_manifests
from neuronfleet.sharing import pins

from ..unit.test_sharing_manifests import kueue_valid

ROOT = Path(__file__).resolve().parents[2]
EKS = ROOT / "config" / "eks.yaml"
FILES = {"node-scripts.yaml", "training-job.yaml", "inference.yaml", "pool-training-job.yaml", "pool-inference.yaml"}


def _write(tmp_path: Path, *extra: str) -> int:
    return main(["eks", "examples", "-c", str(EKS), "-o", str(tmp_path), *extra])


def _objects(path: Path) -> list[dict]:
    return [o for o in yaml.safe_load_all(path.read_text()) if o]


def _lending_limit() -> int:
    fleet = load_fleet(str(EKS))
    entry = next(c for c in fleet.training_clusters if c.scheduler == "eks")
    assert entry.eks is not None and entry.eks.sharing is not None
    settings = cluster_settings(entry, entry.name, entry.eks, fleet.network.training_az)
    group = settings.node_groups[0]
    queues = [o for o in pool_manifests.kueue_objects(entry.eks.sharing.pool_schedule(settings, entry.name), group)
              if o["kind"] == "ClusterQueue"]
    return next(r["lendingLimit"] for q in queues for r in q["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
                if "lendingLimit" in r)


def test_every_file_parses_and_every_object_validates(tmp_path: Path, capsys) -> None:
    assert _write(tmp_path, "--inference-image", "public.ecr.aws/example/serve:1") == 0
    out = capsys.readouterr().out
    assert {p.name for p in tmp_path.iterdir()} == FILES
    assert all(f in out for f in FILES)  # the output names each file
    kinds = set()
    for file in FILES:
        objects = _objects(tmp_path / file)
        assert objects, file
        for obj in objects:
            kinds.add(obj["kind"])
            if obj["apiVersion"] == pins.KUEUE_API:
                kueue_valid(obj)
            else:
                kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)
    assert {"ConfigMap", "Service", "Job", "Deployment"} <= kinds
    assert [o["kind"] for o in _objects(tmp_path / "pool-training-job.yaml")] == ["Service", "Job"]
    [deployment] = _objects(tmp_path / "pool-inference.yaml")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "public.ecr.aws/example/serve:1"


def test_the_pool_training_job_is_admissible_guaranteed_and_survives_a_reclaim(tmp_path: Path) -> None:
    assert _write(tmp_path) == 0
    [job] = [o for o in _objects(tmp_path / "pool-training-job.yaml") if o["kind"] == "Job"]
    spec = job["spec"]
    [container] = spec["template"]["spec"]["containers"]
    requests, limits = container["resources"]["requests"], container["resources"]["limits"]
    devices = spec["parallelism"] * int(requests[NEURON_RESOURCE])
    lend = _lending_limit()
    assert 0 < devices <= lend, (devices, lend)  # config/eks.yaml: 1 node x 16 <= 16
    assert requests["cpu"] and requests["memory"] and requests == limits  # Guaranteed QoS
    assert spec["podFailurePolicy"]["rules"] and spec["backoffLimitPerIndex"] > 0
    assert spec["completionMode"] == "Indexed"


def test_a_fleet_without_eks_is_refused_with_field_value_allowed(tmp_path: Path, capsys) -> None:
    out_dir = tmp_path / "out"
    assert main(["eks", "examples", "-c", str(ROOT / "config" / "dev.yaml"), "-o", str(out_dir), "--json"]) == 2
    payload = json.loads(capsys.readouterr().out)
    [problem] = payload["problems"]
    assert problem["path"] == "training_clusters[].scheduler" and "scheduler: eks" in problem["allowed"]
    assert "batch" in problem["value"]
    assert not out_dir.exists()


def test_json_lists_the_files(tmp_path: Path, capsys) -> None:
    assert _write(tmp_path, "--json") == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["cluster"] == "pretrain"
    assert {Path(f["file"]).name for f in payload["files"]} == FILES
    assert {f["state"] for f in payload["files"]} == {"written"}
    training = next(f for f in payload["files"] if f["file"].endswith("/pool-training-job.yaml"))
    assert training["objects"] == ["Service/pool-train", "Job/pool-train"]
    assert _write(tmp_path, "--json") == 0  # again: identical files are left as they are
    assert {f["state"] for f in json.loads(capsys.readouterr().out)["files"]} == {"unchanged"}


def test_a_file_that_differs_is_kept_without_force(tmp_path: Path, capsys) -> None:
    assert _write(tmp_path) == 0
    mine = tmp_path / "inference.yaml"
    mine.write_text("# my edits\n")
    capsys.readouterr()
    assert _write(tmp_path) == 2
    err = capsys.readouterr().err
    assert "inference.yaml" in err and "--force" in err
    assert mine.read_text() == "# my edits\n"
    assert _write(tmp_path, "--force") == 0
    assert "overwritten" in capsys.readouterr().out
    assert _objects(mine)[0]["kind"] == "Deployment"
