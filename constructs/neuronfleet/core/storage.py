"""Buckets the way every neuronfleet part needs them: encrypted, TLS-only, private, retained, logged."""

from __future__ import annotations

from aws_cdk import Acknowledgment, RemovalPolicy, Validations
from aws_cdk import aws_s3 as s3
from constructs import Construct

from .nag import acknowledge


def secure_bucket(scope: Construct, construct_id: str, *, versioned: bool = False,
                  access_logs: s3.IBucket | None = None, log_prefix: str | None = None,
                  bucket_name: str | None = None, removal_policy: RemovalPolicy = RemovalPolicy.RETAIN) -> s3.Bucket:
    """An S3-encrypted, SSL-only, public-access-blocked bucket that survives stack deletion.

    With ``access_logs`` its server access logs go there; without, the bucket is itself a log bucket
    (and is acknowledged as such for cdk-nag's AwsSolutions-S1). ``bucket_name``: CloudFormation generates one
    unless given (``PhysicalName.GENERATE_IF_NEEDED`` lets a stack of another region name it). ``removal_policy``:
    RETAIN unless asked; with DESTROY, CloudFormation still cannot delete a bucket that holds objects (no
    auto-delete custom resource: the kit adds none), so the stack's deletion fails until it is emptied.
    """
    bucket = s3.Bucket(
        scope, construct_id, encryption=s3.BucketEncryption.S3_MANAGED, enforce_ssl=True, versioned=versioned,
        bucket_name=bucket_name,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL, removal_policy=removal_policy,
        server_access_logs_bucket=access_logs, server_access_logs_prefix=log_prefix if access_logs else None,
        object_ownership=None if access_logs else s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
    )
    if access_logs is None:
        Validations.of(bucket).acknowledge(Acknowledgment(
            id="AwsSolutions-S1", reason="This is a server access log bucket; it does not log itself"))
    # the compliance packs' and checkov's findings the kit keeps (core.nag.ACKNOWLEDGED has each reason)
    acknowledge(bucket, "S3BucketReplicationEnabled", "S3DefaultEncryptionKMS",
                *(() if versioned else ("S3BucketVersioningEnabled", "CKV_AWS_21")),
                *(() if access_logs else ("S3BucketLoggingEnabled", "CKV_AWS_18")))
    return bucket
