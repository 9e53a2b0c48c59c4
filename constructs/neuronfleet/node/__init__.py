"""Scripts that run on a training node (Python standard library only).

The launch template's user data writes them to ``/opt/neuronfleet`` on the host and the job definition mounts
that directory read-only into the job container; the job command is ``python3 /opt/neuronfleet/launch.py``.
``utilisation.py`` runs on the host, fed by neuron-monitor: it publishes the kit's NeuronCore utilisation metric.
"""

from __future__ import annotations

from importlib import resources

SCRIPTS = ("health_gate.py", "launch.py", "utilisation.py")
HOST_DIR = "/opt/neuronfleet"


def script_text(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text()
