"""``neuronfleet eks examples -c FLEET -o DIR``: the example manifests docs/eks.md and docs/sharing.md tell users to
apply, written from the fleet file (no aws-cdk-lib: the manifests are plain dicts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..cli.output import BadInput, emit, json_option

PLACEHOLDER_IMAGE = "REPLACE-ME.example/your-serving-image:tag"
"""The inference image when ``--inference-image`` is not given: an obvious placeholder (the kit has no serving
image of its own), said in the output."""


@click.group(help="Amazon EKS (scheduler: eks): the files a user applies to the cluster.")
def eks() -> None:
    """The ``eks`` command group."""


def _files(config: Path, cluster_name: str | None, image: str, notes: list[str] | None = None
           ) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """(cluster name, file name -> objects) for the fleet's ``scheduler: eks`` cluster; ``notes`` gets what to check
    before submitting (eks.manifests.placement_notes)."""
    notes = [] if notes is None else notes
    from .. import load_fleet
    from ..fleetfile.eks_section import EksSection, cluster_settings
    from ..sharing import manifests as pool_manifests
    from . import manifests

    fleet = load_fleet(str(config))
    entries = [c for c in fleet.training_clusters if c.scheduler == "eks"]
    names = [c.name for c in entries]
    if not entries:
        raise BadInput.of("training_clusters[].scheduler", sorted({c.scheduler for c in fleet.training_clusters}),
                          "a fleet with at least one training cluster of scheduler: eks (docs/eks.md)",
                          what="eks examples")
    if cluster_name is None and len(entries) > 1:
        raise BadInput.of("--cluster", None, f"one of {', '.join(names)} (the fleet has {len(entries)} EKS clusters)",
                          what="eks examples")
    entry = entries[0] if cluster_name is None else next((c for c in entries if c.name == cluster_name), None)
    if entry is None:
        raise BadInput.of("--cluster", cluster_name, f"one of {', '.join(names)}", what="eks examples")
    section = entry.eks or EksSection()
    settings = cluster_settings(entry, entry.name, section, fleet.network.training_az)
    pool: dict[str, list[dict[str, Any]]] = {}
    queues: dict[str, str] = {}   # a pool's UltraServer node group has no placement queue: the pool's training one
    if section.sharing is not None:
        schedule = section.sharing.pool_schedule(settings, entry.name)
        group_name = section.sharing.shared_node_group(settings)
        group = next(g for g in settings.node_groups if g.name == group_name)
        pool = pool_manifests.examples(schedule, group, inference_image=image, deployment=section.sharing.deployment)
        if manifests.places_whole_ultraservers(group):
            queues[group_name] = pool_manifests.names(schedule.pool)["training_queue"]
    files = manifests.examples(settings, inference_image=image, queues=queues) | pool
    notes.extend(manifests.placement_notes(settings))
    return entry.name, files


@eks.command(short_help="Write the example manifests the docs apply (node scripts, training Job, serving, pool).",
             help="""Write every example manifest docs/eks.md and docs/sharing.md tell you to apply, one YAML file per
object group, into DIR: node-scripts.yaml (the health gate and launcher ConfigMap), training-job.yaml (the training
Job, its headless Service and, on a DRA node group, its ResourceClaimTemplate), inference.yaml (the serving
Deployment) and, with eks.sharing, pool-training-job.yaml and pool-inference.yaml (the shared pool's Job and
Deployment). A file that exists with other content is never overwritten unless --force; an identical one is left as
it is. Exit 2: no scheduler: eks cluster, or a file that differs without --force.""")
@click.option("-c", "--config", "config", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="The fleet file (YAML), e.g. config/eks.yaml.")
@click.option("-o", "--output", "output", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="The directory to write into (created if missing).")
@click.option("--cluster", "cluster_name", default=None,
              help="The scheduler: eks training cluster (needed when the fleet has more than one).")
@click.option("--inference-image", "image", default=PLACEHOLDER_IMAGE, show_default=True,
              help="Your serving image (the Deployments' container image).")
@click.option("--force", is_flag=True, help="Overwrite files that exist with other content.")
@json_option
def examples(config: Path, output: Path, cluster_name: str | None, image: str, force: bool, as_json: bool) -> int:
    import yaml

    notes: list[str] = []
    name, files = _files(config, cluster_name, image, notes)
    texts = {file: yaml.safe_dump_all([json.loads(json.dumps(o)) for o in objects], sort_keys=False)
             for file, objects in files.items()}  # json round trip: no shared dicts, no YAML anchors
    differ = [f for f, text in texts.items() if (output / f).is_file() and (output / f).read_text() != text]
    if differ and not force:
        raise BadInput.of("--output", str(output / differ[0]),
                          f"a file that does not exist or already holds these objects; {', '.join(differ)} in "
                          f"{output} differ{'s' if len(differ) == 1 else ''} from what would be written: pass --force "
                          "to overwrite", what="eks examples")
    output.mkdir(parents=True, exist_ok=True)
    rows = []
    for file, text in texts.items():
        path = output / file
        state = "unchanged" if path.is_file() and path.read_text() == text else (
            "overwritten" if path.is_file() else "written")
        if state != "unchanged":
            path.write_text(text)
        rows.append({"file": str(path), "state": state,
                     "objects": [f"{o['kind']}/{o['metadata']['name']}" for o in files[file]]})
    lines = [f"{r['state']:<11} {r['file']}  ({', '.join(r['objects'])})" for r in rows]
    if image == PLACEHOLDER_IMAGE:
        lines.append(f"the Deployments' image is the placeholder {PLACEHOLDER_IMAGE}: pass --inference-image")
    lines += [f"check: {n}" for n in notes]
    emit({"cluster": name, "directory": str(output), "inference_image": image, "files": rows, "checks": notes},
         "\n".join([f"cluster {name}: {len(rows)} files in {output}", *lines]), as_json=as_json)
    return 0
