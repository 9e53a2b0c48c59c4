"""Where a training job finds its cluster's Capacity Block drain flag, for the launcher's drain relay.

The lifecycle function writes the flag at ``s3://<data bucket>/`` + :func:`neuronfleet_contract.capacity_lifecycle.
drain_key` (the one home of that rule); the cluster's FSx for Lustre, mounted at ``/fsx``, imports it through its data
repository association (file system path ``/data``, linked to the bucket's root), so the job reads it at
``/fsx/data/neuronfleet/drain/<cluster>.json``. The job definition passes that path as ``NEURONFLEET_DRAIN_FLAG``
(``constructs/neuronfleet/node/launch.py``, "Drain relay"), and only when the association imports the flag's
creation, change and deletion: otherwise the file would never appear, or never go.
"""

from __future__ import annotations

import posixpath
from typing import Protocol

from aws_cdk import aws_fsx as fsx

from neuronfleet_contract.capacity_lifecycle import drain_key

from ..core.lookups import lazy_string
from ..node.launch import DRAIN_FLAG_ENV  # the variable launch.py reads

FSX_MOUNT = "/fsx"
"""Where the cluster's hosts mount FSx for Lustre (TrainiumCluster's user data) and the job container sees it."""
IMPORTED_EVENTS = frozenset({"NEW", "CHANGED", "DELETED"})
"""The auto-import events the relay needs: the flag written, rewritten (a new deadline) and deleted (extended)."""


def imports_flags(association: fsx.CfnDataRepositoryAssociation | None) -> bool:
    """Whether the association links a file system path to the bucket's root and auto-imports every event the relay
    needs (a token or an escape hatch the kit cannot read counts as no)."""
    if association is None:
        return False
    s3 = association.s3
    policy = getattr(s3, "auto_import_policy", None)
    events = getattr(policy, "events", None)
    if not isinstance(events, list) or not set(events) >= IMPORTED_EVENTS:
        return False
    path, repository = association.file_system_path, association.data_repository_path
    return isinstance(path, str) and path.startswith("/") and isinstance(repository, str) and (
        repository.rstrip("/").count("/") == 2)  # s3://<bucket>/: the bucket's root, where drain_key is relative


def drain_flag_path(association: fsx.CfnDataRepositoryAssociation | None, cluster: str) -> str | None:
    """The flag's path as the job sees it, or None when the association does not bring it there."""
    if not imports_flags(association):
        return None
    assert association is not None
    return posixpath.join(FSX_MOUNT, association.file_system_path.strip("/"), drain_key(cluster))


class _Cluster(Protocol):
    data_repository: fsx.CfnDataRepositoryAssociation
    drain_name: str


def drain_environment(cluster: _Cluster) -> dict[str, str]:
    """The job definition's ``NEURONFLEET_DRAIN_FLAG`` for a cluster whose association imports the flag (nothing
    otherwise). The cluster's ``drain_name`` is read at synthesis, so it may be set after the cluster is built."""
    if drain_flag_path(cluster.data_repository, "x") is None:
        return {}
    return {DRAIN_FLAG_ENV: lazy_string(lambda: str(drain_flag_path(cluster.data_repository, cluster.drain_name)))}
