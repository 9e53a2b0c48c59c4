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

from importlib import resources

SCRIPTS = ("health_gate.py", "launch.py", "utilisation.py", "sigv4.py")
"""The files the node scripts' S3 asset carries (fetch.py refuses any member with a path: a zip of these only)."""
BOOTSTRAP = ("sigv4.py", "fetch.py")
"""The files the user data writes inline, before anything else: fetch.py then gets :data:`SCRIPTS`."""
HOST_DIR = "/opt/neuronfleet"


def script_text(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text()


def node_directory() -> str:
    """This package's directory on disk: the training cluster's S3 asset of :data:`SCRIPTS` is made from it."""
    return str(resources.files(__name__))
