"""The shared storage of a training cluster, whichever scheduler runs it: a versioned S3 data bucket (with its access
logs) and FSx for Lustre PERSISTENT_2 linked to it (/fsx/data <-> the bucket's root), reachable on the Lustre ports
from the clients' security group only. TrainiumCluster (AWS Batch) and the EKS stack build it with this one function."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..core.lookups import days
from ..core.nag import acknowledge_wildcards
from ..core.storage import secure_bucket
from .drain import deny_flag_writes

LUSTRE_PORTS = (ec2.Port.tcp(988), ec2.Port.tcp_range(1018, 1023))
"""FSx for Lustre user guide, "File system access control with Amazon VPC" (read 2026-11-22): TCP 988 and
1018-1023, in and out, between the file system's group and the clients' groups and within each."""

DATA_BUCKET_ACTIONS = ("s3:ListBucket", "s3:GetBucketLocation", "s3:ListBucketMultipartUploads")
DATA_OBJECT_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
                       "s3:ListMultipartUploadParts")
"""What a training job may do with its data bucket (:func:`grant_data`): named actions, no wildcard, so no
``s3:DeleteObjectVersion`` and no bucket policy or ACL change can slip in."""


@dataclass(frozen=True)
class LustreStorage:
    access_logs_bucket: s3.Bucket
    data_bucket: s3.Bucket
    security_group: ec2.SecurityGroup
    file_system: fsx.LustreFileSystem
    data_repository: fsx.CfnDataRepositoryAssociation


def lustre_storage(scope: Construct, *, vpc: ec2.IVpc, subnet: ec2.ISubnet, clients: ec2.SecurityGroup,
                   storage_gib: int, throughput_mib_per_tib: int, backup_retention_days: int,
                   removal_policy: RemovalPolicy) -> LustreStorage:
    """S3 for data and checkpoints, FSx for Lustre linked to it, the Lustre ports open between the file system and
    ``clients`` (whose own rules must allow traffic within itself: client to client)."""
    access_logs = secure_bucket(scope, "AccessLogs", removal_policy=removal_policy)
    data = secure_bucket(scope, "Data", versioned=True, access_logs=access_logs, removal_policy=removal_policy,
                         log_prefix="data/")
    group = ec2.SecurityGroup(
        scope, "LustreSecurityGroup", vpc=vpc, allow_all_outbound=False,
        description="FSx for Lustre: Lustre ports from the cluster and between file servers only",
    )
    for port in LUSTRE_PORTS:  # (LustreFileSystem itself opens 988-1023 between its own servers)
        group.add_ingress_rule(clients, port, "Lustre from the cluster")
        group.add_egress_rule(group, port, "Lustre between servers")
        group.add_egress_rule(clients, port, "Lustre to the cluster")
        clients.add_egress_rule(group, port, "Lustre to FSx")
        clients.add_ingress_rule(group, port, "Lustre from FSx")
    file_system = fsx.LustreFileSystem(
        scope, "Lustre", vpc=vpc, vpc_subnet=subnet, storage_capacity_gib=storage_gib,
        security_group=group, removal_policy=removal_policy,
        file_system_type_version=fsx.FileSystemTypeVersion.V_2_15,
        lustre_configuration=fsx.LustreConfiguration(
            deployment_type=fsx.LustreDeploymentType.PERSISTENT_2,
            per_unit_storage_throughput=throughput_mib_per_tib,
            data_compression_type=fsx.LustreDataCompressionType.LZ4,
            automatic_backup_retention=days(backup_retention_days),
        ),
    )
    events = ["NEW", "CHANGED", "DELETED"]
    link = fsx.CfnDataRepositoryAssociation(
        scope, "LustreS3Link", file_system_id=file_system.file_system_id, file_system_path="/data",
        data_repository_path=f"s3://{data.bucket_name}/",
        batch_import_meta_data_on_create=True,
        s3=fsx.CfnDataRepositoryAssociation.S3Property(
            auto_import_policy=fsx.CfnDataRepositoryAssociation.AutoImportPolicyProperty(events=events),
            auto_export_policy=fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(events=events),
        ),
    )
    return LustreStorage(access_logs, data, group, file_system, link)


def grant_data(bucket: s3.IBucket, grantee: iam.IGrantable) -> iam.Grant:
    """Read and write a cluster's data bucket (``/fsx/data`` is linked to its root, so the whole bucket is the
    cluster's prefix): list it, get, put and delete objects, abort uploads. No version deletes
    (``s3:DeleteObjectVersion``: a delete only adds a marker, so the versioning that keeps old checkpoints holds),
    no bucket policy, ACL, lifecycle or versioning changes; and never a capacity drain flag (an explicit Deny on
    their prefix: :func:`neuronfleet.training.drain.deny_flag_writes`)."""
    objects = bucket.arn_for_objects("*")
    grant = iam.Grant.add_to_principal(grantee=grantee, actions=list(DATA_BUCKET_ACTIONS),
                                       resource_arns=[bucket.bucket_arn])
    grant = grant.combine(iam.Grant.add_to_principal(grantee=grantee, actions=list(DATA_OBJECT_ACTIONS),
                                                     resource_arns=[objects]))
    deny_flag_writes(bucket, grantee)  # only the capacity lifecycle writes a drain flag (training.drain)
    if isinstance(grantee, iam.Role):
        acknowledge_wildcards(grantee, "the cluster's own data bucket, every object in it (/fsx/data is its "
                                       "root): training reads data and writes checkpoints", resources=(objects,))
    return grant
