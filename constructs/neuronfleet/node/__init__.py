"""Scripts that run on a training node (Python standard library only, python3 3.9+: the AL2023 host's).

They land in ``/opt/neuronfleet`` on the host and the job definition mounts that directory read-only into the job
container; the job command is ``python3 /opt/neuronfleet/launch.py``. ``utilisation.py`` runs on the host, fed by
neuron-monitor: it publishes the kit's NeuronCore utilisation metric. ``sigv4.py`` is the SigV4 signer and IMDSv2
credentials utilisation.py and fetch.py import (from beside them on the host).

EC2 takes at most 16 KB of user data, so the user data writes only :data:`BOOTSTRAP` (the fetcher and its signer)
and runs ``fetch.py``, which downloads :data:`SCRIPTS` (an S3 asset: a zip of exactly these files, no directory)
with the instance role and unpacks them into ``/opt/neuronfleet``.
"""

from __future__ import annotations

import ast
from importlib import resources

SCRIPTS = ("health_gate.py", "launch.py", "utilisation.py", "sigv4.py")
"""The files the node scripts' S3 asset carries (fetch.py refuses any member with a path: a zip of these only)."""
BOOTSTRAP = ("sigv4.py", "fetch.py")
"""The files the user data writes inline, before anything else: fetch.py then gets :data:`SCRIPTS`."""
HOST_DIR = "/opt/neuronfleet"


def script_text(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text()


def bootstrap_text(name: str) -> str:
    """A :data:`BOOTSTRAP` file as the user data should carry it: the same code without its docstrings and comments
    (``ast.unparse``; 23.4 KB of source -> 15.1 KB, 12.1 KB -> 7.4 KB gzip+base64), for EC2's 16 KB. The full file
    arrives with the asset and replaces it. tests/unit/test_node_fetch.py runs the fetcher in this form."""
    tree = ast.parse(script_text(name))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                            and isinstance(s.value.value, str))]
            node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]
    return "#!/usr/bin/env python3\n" + ast.unparse(tree) + "\n"


def node_directory() -> str:
    """This package's directory on disk: the training cluster's S3 asset of :data:`SCRIPTS` is made from it."""
    return str(resources.files(__name__))
