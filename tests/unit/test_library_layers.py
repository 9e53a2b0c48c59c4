"""The library's folders in layers (docs/layout.md, "What may import what"): a folder of constructs/neuronfleet
imports only folders below it. An import that runs up (a lower folder importing a higher one) is a back-edge; the
few that remain are listed by name below, so a new one fails here until it is moved or listed with its reason."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.unit.test_contract import LIBRARY, imported_modules

LAYERS = ("core", "facts", "settings", "fleetfile", "node", "alerts", "network", "cost", "cli", "training",
          "fallback", "capacity", "eks", "sharing", "inference", "judge", "preflight", "verify", "offline")
"""Lowest first. core: what every construct shares; facts: AWS and Neuron facts (they use core's CDK helpers);
settings and the fleet-file format over them; node: the scripts an instance runs; then the features, a feature
above the ones it builds on (capacity shifts work to the fallback GPU pool, the EKS path builds on training and
the fallback, sharing on EKS, the judge on the endpoint). cli/ is the command line's kit (output helpers, the root
command dispatching by module name), below the feature command modules that use it (capacity/cli.py,
judge/commands.py) and above cost/ (``neuronfleet estimate`` reads cost/exports.py); preflight/ and verify/ are
command-line checks over all of it; offline/ (the moto test kit) is last. The package's __init__.py (the public
names, re-exported from every folder) is above all of them and not a folder."""

ALLOWED_BACK_EDGES: Mapping[tuple[str, str], str] = {
    ("eks", "sharing"): "eks/commands.py, `neuronfleet eks examples`: one command writes the EKS examples and the "
                        "sharing pool's (sharing builds on eks, so the pool's manifests sit a layer up)",
}
"""The back-edges that remain, each with its reason (at most 3: issue 38). None today: the last one, fallback/ taking
capacity/iam.py's ActionAuthorization, went with that type to facts/service_authorization.py."""


def folder_of(path: Path) -> str | None:
    parts = path.relative_to(LIBRARY).parts
    return parts[0] if len(parts) > 1 else None


def folder_edges(planted: Mapping[Path, str] | None = None) -> dict[tuple[str, str], list[str]]:
    """(folder, folder it imports) -> the importing modules, for every module of the library (and ``planted``:
    path -> source, as if that module were in the tree)."""
    sources: dict[Path, str | None] = {p: None for p in LIBRARY.rglob("*.py") if "__pycache__" not in p.parts}
    sources.update(planted or {})
    edges: dict[tuple[str, str], list[str]] = {}
    for path, text in sorted(sources.items()):
        source = folder_of(path)
        if source is None:
            continue
        package = ".".join(["neuronfleet", *path.relative_to(LIBRARY).parts[:-1]])
        for module in imported_modules(path, package, text):
            parts = module.split(".")
            if parts[0] == "neuronfleet" and len(parts) > 1 and parts[1] != source and (LIBRARY / parts[1]).is_dir():
                edges.setdefault((source, parts[1]), []).append(path.relative_to(LIBRARY).as_posix())
    return edges


def back_edges(edges: Mapping[tuple[str, str], list[str]]) -> dict[tuple[str, str], list[str]]:
    rank = {folder: i for i, folder in enumerate(LAYERS)}
    return {(a, b): sorted(set(w)) for (a, b), w in edges.items() if rank[a] < rank[b]}


def test_every_folder_of_the_library_has_a_layer() -> None:
    folders = {p.name for p in LIBRARY.iterdir() if (p / "__init__.py").is_file()}
    assert len(folders) >= 15 and sorted(folders) == sorted(LAYERS), "place a new folder in LAYERS"


def test_the_only_upward_imports_are_the_listed_ones() -> None:
    edges = folder_edges()
    assert len(edges) > 40, edges  # the graph was read: every feature imports core at least
    found = back_edges(edges)
    assert len(ALLOWED_BACK_EDGES) <= 3
    new = {edge: modules for edge, modules in found.items() if edge not in ALLOWED_BACK_EDGES}
    assert new == {}, "an import runs up a layer (docs/layout.md, 'What may import what'): move it, or list it " \
                      "with its reason"
    assert set(ALLOWED_BACK_EDGES) <= set(found), "a listed back-edge is gone: drop it from ALLOWED_BACK_EDGES"


@pytest.mark.parametrize(("where", "source", "edge"), [
    ("settings/probe.py", "from ..eks.manifests import neuron_chart_values\n", ("settings", "eks")),
    ("core/probe.py", "from neuronfleet.facts import catalog\n", ("core", "facts")),
    ("cost/probe.py", "def main():\n    from ..cli.main import main\n", ("cost", "cli")),
    ("alerts/probe.py", "from .. import training\n", ("alerts", "training")),
])
def test_a_planted_upward_import_is_a_new_back_edge(where: str, source: str, edge: tuple[str, str]) -> None:
    """Each kind of import (relative, absolute, inside a function, of the folder itself) is read."""
    found = back_edges(folder_edges({LIBRARY / where: source}))
    assert edge in found and f"{where}" in found[edge]
    assert edge not in ALLOWED_BACK_EDGES
    assert back_edges(folder_edges({LIBRARY / where: "import json\n"})).keys() == ALLOWED_BACK_EDGES.keys()
