"""Each function's code asset: its own handler package and the packages every handler may import, nothing else.

The files are staged at synth into a folder named by their content (``<tmp>/neuronfleet-assets/<package>-<digest>``),
then handed to ``lambda_.Code.from_asset``: no Docker, no network. The folder holds ``<package>/``,
``neuronfleet_contract/`` and ``neuronfleet_runtime/`` at its root, so a function imports them under the same names as
the tests do, and its asset hash changes only with those files (a cost edit does not redeploy the failover).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

SHARED_PACKAGES = ("neuronfleet_contract", "neuronfleet_runtime")
"""Staged with every function: the contract (what the constructs and the handlers agree on) and the shared runtime."""

_SKIPPED_PARTS = {"__pycache__"}
_SKIPPED_SUFFIXES = (".pyc", ".pyo")


def lambda_source_dir() -> Path:
    """The folder of the Lambda sources: ``lambdas/`` in the repository, ``neuronfleet/lambdas`` in the wheel."""
    return Path(str(resources.files("neuronfleet.lambdas")))


def shared_source_dir(package: str) -> Path:
    """The folder of one of :data:`SHARED_PACKAGES`: ``shared/<package>`` in the repository, ``<package>`` in the
    wheel (both installed as top-level packages)."""
    return Path(str(resources.files(package)))


def handler_packages(source: Path | None = None) -> tuple[str, ...]:
    """The handler packages a function can be built from (the folders of ``source`` other than the shared ones)."""
    root = source or lambda_source_dir()
    return tuple(sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file() and p.name not in SHARED_PACKAGES))


def asset_files(package: str, source: Path | None = None, shared: Mapping[str, Path] | None = None) -> dict[str, bytes]:
    """The files of ``package``'s asset, by their path in it: the package (from ``source``, the Lambda sources by
    default) and :data:`SHARED_PACKAGES` (from ``shared``: name -> folder, the installed ones by default)."""
    root = source or lambda_source_dir()
    known = handler_packages(root)
    if package not in known:
        raise ValueError(f"handler package: got {package!r}; allowed: one of {', '.join(known)} (the kit's handlers)")
    folders = {package: root / package} | {name: (shared or {}).get(name) or shared_source_dir(name)
                                          for name in SHARED_PACKAGES}
    files = {}
    for name, folder in folders.items():
        for path in sorted(folder.rglob("*")):
            relative = Path(name, path.relative_to(folder))
            if path.is_file() and not _SKIPPED_PARTS & set(relative.parts) and not path.name.endswith(_SKIPPED_SUFFIXES):
                files[relative.as_posix()] = path.read_bytes()
    return files


def digest(files: Mapping[str, bytes]) -> str:
    """SHA-256 over the files' paths and contents (the name of their staging folder)."""
    sha = hashlib.sha256()
    for name in sorted(files):
        sha.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return sha.hexdigest()


def stage(package: str, *, source: Path | None = None, shared: Mapping[str, Path] | None = None,
          into: Path | None = None) -> Path:
    """The folder holding ``package``'s asset files, written once per content (reused by later synths)."""
    files = asset_files(package, source, shared)
    cache = into or Path(tempfile.gettempdir()) / "neuronfleet-assets"
    folder = cache / f"{package}-{digest(files)[:32]}"
    if folder.is_dir():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{package}-", dir=cache))
    try:
        for name, content in files.items():
            target = partial / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        os.replace(partial, folder)
    except OSError:
        if not folder.is_dir():  # another synth staged the same content first: theirs is ours
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return folder
