"""The catalog's accelerator facts the functions need, in one home: ``data/accelerators.json`` in this package.

Per EC2 type: its accelerator family (trainium | inferentia | gpu) and accelerator memory in GiB. The instance catalog
(neuronfleet.facts.catalog) reads both from the file, every function's code ships it (the contract is staged beside
each handler; the wheel's package-data holds it), and the report's environment (``ACCELERATORS``) carries only what
differs from it (:func:`carried`: a catalog of the user's own), put back on the file's map when read (:func:`merged`).
Pure: no boto3, no Powertools, no CDK.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

Accelerator = tuple[str, int]
"""(family, accelerator memory GiB)."""


@cache
def data() -> dict[str, Any]:
    """The packaged file as it is: ``types`` (EC2 type -> family, accelerator_memory_gib) and ``about``."""
    doc: dict[str, Any] = json.loads(
        resources.files(__package__ or "neuronfleet_contract").joinpath("data", "accelerators.json").read_text())
    return doc


@cache
def _builtin() -> dict[str, Accelerator]:
    return {t: (str(a["family"]), int(a["accelerator_memory_gib"])) for t, a in data()["types"].items()}


def builtin() -> dict[str, Accelerator]:
    """EC2 type -> (family, accelerator memory GiB), as the file holds them (a fresh copy)."""
    return dict(_builtin())


def carried(given: Mapping[str, Accelerator]) -> dict[str, Accelerator]:
    """What an environment must carry of ``given`` (a catalog's whole map): the types the file lacks or holds
    otherwise."""
    known = _builtin()
    return {t: (str(a[0]), int(a[1])) for t, a in given.items() if known.get(t) != (a[0], a[1])}


def merged(given: Mapping[str, Accelerator]) -> dict[str, Accelerator]:
    """The file's map with ``given`` (what an environment carried) on top."""
    return builtin() | {t: (str(a[0]), int(a[1])) for t, a in given.items()}
