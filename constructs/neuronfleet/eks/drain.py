"""Where an EKS training pod finds its node group's Capacity Block drain flag, for the launcher's drain relay.

The capacity lifecycle (lambdas/capacity_lifecycle, a Capacity Block node group: neuronfleet_contract.
capacity_lifecycle.NodegroupRef) writes the flag at ``s3://<data bucket>/`` + ``drain_key(<node group>)``; the EKS
stack's FSx for Lustre imports it through its data repository association (file system path ``/data``, linked to the
bucket's root, NEW/CHANGED/DELETED imported: neuronfleet.training.lustre.lustre_storage), and a training pod mounts the
file system at ``/fsx`` (eks.manifests.fsx_volume), so the pod reads it at ``/fsx/data/neuronfleet/drain/<node
group>.json``. The Job passes that path as ``NEURONFLEET_DRAIN_FLAG``, the variable the Batch path's job definition
sets (constructs/neuronfleet/node/launch.py, "Drain relay": the launcher polls it, writes the notice file and signals
each torchrun worker once). Only node groups on Capacity Blocks get one: the lifecycle writes no other.

The flags' directory is mounted a second time, read-only, over the pod's read-write ``/fsx`` (a ``subPath`` of the
same volume), as the Batch path binds it read-only into the job container (training.drain.drain_volumes): a pod may not
write, replace or delete a flag there, which FSx's auto-export would carry to S3 past the training role's Deny.
"""

from __future__ import annotations

import posixpath
from typing import Any

from neuronfleet_contract.capacity_lifecycle import drain_key

from ..node.launch import DRAIN_FLAG_ENV  # the variable launch.py reads
from ..settings.eks import NeuronNodegroupSettings

FSX_MOUNT = "/fsx"
"""Where a training pod mounts the EKS stack's FSx for Lustre (eks.manifests.training_job)."""
DATA_PATH = "data"
"""The data repository association's file system path (``/data``, training.lustre.lustre_storage), below the mount."""


def flag_path(name: str) -> str:
    """The drain flag of node group ``name`` as a training pod sees it."""
    return posixpath.join(FSX_MOUNT, DATA_PATH, drain_key(name))


def drain_reader(group: NeuronNodegroupSettings, *, volume: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the container's env, its extra volume mounts) that let ``group``'s training pods hear the drain: the flag's
    path in ``NEURONFLEET_DRAIN_FLAG`` and the flags' directory of ``volume`` (the FSx claim's volume) read-only. Nothing
    for a node group that is not on Capacity Blocks."""
    if group.capacity.type != "capacity-block":
        return [], []
    path = flag_path(group.name)
    directory = posixpath.dirname(path)
    return ([{"name": DRAIN_FLAG_ENV, "value": path}],
            [{"name": volume, "mountPath": directory, "subPath": posixpath.relpath(directory, FSX_MOUNT),
              "readOnly": True}])
