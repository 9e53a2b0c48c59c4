"""Where a training job finds its cluster's Capacity Block drain flag, for the launcher's drain relay.

The lifecycle function writes the flag at ``s3://<data bucket>/`` + :func:`neuronfleet_contract.capacity_lifecycle.
drain_key` (the one home of that rule); the cluster's FSx for Lustre, mounted at ``/fsx``, imports it through its data
repository association (file system path ``/data``, linked to the bucket's root), so the job reads it at
``/fsx/data/neuronfleet/drain/<cluster>.json``. The job definition passes that path as ``NEURONFLEET_DRAIN_FLAG``
(``constructs/neuronfleet/node/launch.py``, "Drain relay"), and only when the association imports the flag's
creation, change and deletion: otherwise the file would never appear, or never go.

Only the lifecycle writes a flag (issue 36, finding 8). What bounds a job:

- **S3**: the training job role's data grant (training.lustre.grant_data) carries an explicit Deny of
  :data:`FLAG_WRITE_ACTIONS` on the flags' prefix (:func:`deny_flag_writes`); an explicit Deny wins over the role's
  Allow on the whole bucket (IAM User Guide, "Policy evaluation logic"). The lifecycle's own role is another role.
- **The file system**: the Batch job container sees the flags' directory through a read-only bind mount over the
  read-write /fsx (:func:`drain_volumes`), so a job cannot write, replace or delete a flag there; without it, FSx's
  auto-export (NEW, CHANGED, DELETED: training.lustre) would carry a job's write to S3 under FSx's own role, past any
  IAM policy of the job's.
- **What stays open**: a job that may write /fsx/data may still rename a directory above the flags' (the read-only
  mount protects the directory, not its parents' names), which hides the flag from the other jobs' launchers; and a
  job root in its container is root on Lustre unless the file system squashes root (FSx for Lustre's
  ``RootSquashConfiguration``, which the kit does not set: it would change every job's file ownership). docs/security.md
  says so. On EKS, each Capacity Block node group gets a flag of its own (``drain_key(<node group>)``), which its
  training pods read through a read-only ``subPath`` mount the same way (eks.drain); other node groups get none.
"""

from __future__ import annotations

import posixpath
from typing import Protocol

from aws_cdk import aws_batch as batch
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from neuronfleet_contract.capacity_lifecycle import drain_key

from ..node.launch import DRAIN_FLAG_ENV  # the variable launch.py reads

FSX_MOUNT = "/fsx"
"""Where the cluster's hosts mount FSx for Lustre (TrainiumCluster's user data) and the job container sees it."""
FLAG_PREFIX = posixpath.dirname(drain_key("cluster")) + "/"
"""The key prefix of every cluster's flag in its data bucket (``neuronfleet/drain/``), from drain_key, its one home."""
FLAG_WRITE_ACTIONS = ("s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion")
"""What a job may not do on the flags' prefix: write one (PutObject covers copies and multipart uploads), delete
one, or delete a version of one (which would bring an older flag back)."""
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

    @property
    def drain_name(self) -> str: ...


def drain_environment(cluster: _Cluster) -> dict[str, str]:
    """The job definition's ``NEURONFLEET_DRAIN_FLAG`` for a cluster whose association imports the flag (nothing
    otherwise): the flag of the cluster's ``drain_name``, set when the cluster was built."""
    if drain_flag_path(cluster.data_repository, "x") is None:
        return {}
    return {DRAIN_FLAG_ENV: str(drain_flag_path(cluster.data_repository, cluster.drain_name))}



def deny_flag_writes(bucket: s3.IBucket, grantee: iam.IGrantable) -> iam.PolicyStatement:
    """Add to ``grantee``'s policy an explicit Deny of :data:`FLAG_WRITE_ACTIONS` on ``bucket``'s flags' prefix."""
    statement = iam.PolicyStatement(effect=iam.Effect.DENY, actions=list(FLAG_WRITE_ACTIONS),
                                    resources=[bucket.arn_for_objects(FLAG_PREFIX + "*")])
    grantee.grant_principal.add_to_principal_policy(statement)
    return statement


def flag_directory(association: fsx.CfnDataRepositoryAssociation | None) -> str | None:
    """The flags' directory as the job sees it (``/fsx/data/neuronfleet/drain``), or None without the relay."""
    path = drain_flag_path(association, "cluster")
    return posixpath.dirname(path) if path else None


def drain_volumes(cluster: _Cluster) -> list[batch.EcsVolume]:
    """The flags' directory bound read-only into the job container over its read-write /fsx; nothing when the
    association does not bring flags there. Docker mounts a container's binds sorted by destination ("This ensure
    that when mounting, the mounts don't shadow other mounts. For example, if mounting /etc and /etc/resolv.conf,
    /etc/resolv.conf must not be mounted first": moby's daemon/volumes.go ``sortMounts``, read in public copies), so
    the deeper, read-only one wins; not confirmed on the ECS Neuron AMI's Docker (docs/checks.md). The host path need
    not exist: "If the source path location doesn't exist on the host container instance, the Docker daemon creates
    it" (AWS Batch API, ``Host.sourcePath``: botocore 1.44.5's batch model)."""
    directory = flag_directory(cluster.data_repository)
    if directory is None:
        return []
    return [batch.EcsVolume.host(name="drainflags", host_path=directory, container_path=directory, readonly=True)]
