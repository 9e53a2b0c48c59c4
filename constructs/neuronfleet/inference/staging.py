"""HubModelCopy: one revision of a gated Hugging Face Hub model, copied once into S3 by a function that reads the hub
token from Secrets Manager at run time, so that the SageMaker model serves it from S3 (ModelDataSource, uncompressed)
with network isolation and never holds the token (issue 36, finding 6; docs/security.md, "Secrets: the Hugging Face
token")."""

from __future__ import annotations

from aws_cdk import CustomResource, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet_contract.hub_staging import COPY_FUNCTION_MEMORY_MB, RESOURCE_TYPE, properties

from ..core.functions import FleetFunction
from ..core.lookups import minutes, stack_of
from ..core.nag import acknowledge_wildcards
from ..core.s3_reads import owner_condition

SERVICE_TIMEOUT = Duration.hours(1)
"""How long CloudFormation waits for the copy's answer: ServiceTimeout's most, 3600 s (CloudFormation template
reference, AWS::CloudFormation::CustomResource ServiceTimeout: 1 to 3600 seconds, read 2026-11-28); the function
hands over to a new run of itself every 15 minutes at most (neuronfleet_contract.hub_staging.MAX_RUNS)."""
PREFIX = "hub/"
"""Where copies land in the bucket: ``hub/<owner>/<name>/<revision>/``."""


def copy_prefix(model_id: str, revision: str) -> str:
    return f"{PREFIX}{model_id}/{revision}/"


class HubModelCopy(Construct):
    """Copies ``model_id`` at ``revision`` into ``bucket`` under :func:`copy_prefix` (a custom resource backed by a
    :class:`~neuronfleet.core.functions.FleetFunction`), reading the token of ``secret_arn`` at run time.

    Example::

        copy = HubModelCopy(self, "LlamaCopy", model_id="meta-llama/Llama-3.1-8B-Instruct", revision="<40 hex>",
                            secret_arn=token_arn, bucket=models)
        copy.s3_uri; copy.grant_read(role); model.node.add_dependency(copy.resource)

    The function may read that one secret, write and list under the copy's prefix, and invoke itself (the hand-over
    between runs); nothing else. It runs outside the VPC: it downloads from the Hub over the internet."""

    def __init__(self, scope: Construct, construct_id: str, *, model_id: str, revision: str, secret_arn: str,
                 bucket: s3.IBucket, topic: sns.ITopic | None = None) -> None:
        super().__init__(scope, construct_id)
        self.bucket = bucket
        self.prefix = copy_prefix(model_id, revision)
        self.s3_uri = f"s3://{bucket.bucket_name}/{self.prefix}"
        """The copy's S3 prefix, for ``ModelDataSource.S3DataSource`` (S3Prefix, CompressionType None)."""
        self.copier = FleetFunction(
            self, "Copier", handler="hub_staging.handler.handler", timeout=minutes(15),
            memory_size=COPY_FUNCTION_MEMORY_MB, topic=topic,
            description=f"Copies {model_id}@{revision[:12]} from the Hugging Face Hub into S3 once (custom resource)")
        self.copier.function.configure_async_invoke(retry_attempts=0)  # every error is answered FAILED by the run
        stack = stack_of(self)
        objects = bucket.arn_for_objects(f"{self.prefix}*")
        self.copier.role.add_to_policy(iam.PolicyStatement(
            sid="ReadHubToken", actions=["secretsmanager:GetSecretValue"], resources=[secret_arn]))
        self.copier.role.add_to_policy(iam.PolicyStatement(
            sid="WriteCopy", actions=["s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
            resources=[objects], conditions=owner_condition(stack)))
        self.copier.role.add_to_policy(iam.PolicyStatement(
            sid="ListCopy", actions=["s3:ListBucket", "s3:ListBucketMultipartUploads"], resources=[bucket.bucket_arn],
            conditions={**owner_condition(stack), "StringLike": {"s3:prefix": [f"{self.prefix}*"]}}))
        # the hand-over invokes the function itself: a policy of its own, since the function depends on its role's
        # default policy and that one cannot name the function's ARN
        self.relay_policy = iam.Policy(self, "RelayPolicy", roles=[self.copier.role], statements=[iam.PolicyStatement(
            sid="HandOver", actions=["lambda:InvokeFunction"], resources=[self.copier.function.function_arn])])
        acknowledge_wildcards(self.copier.role, "Writes and lists the copy's own prefix only",
                              resources=(objects,))
        self.resource = CustomResource(self, "Resource", service_token=self.copier.function.function_arn,
                                       resource_type=RESOURCE_TYPE, service_timeout=SERVICE_TIMEOUT,
                                       properties=properties(model_id=model_id, revision=revision,
                                                             secret_arn=secret_arn, bucket=bucket.bucket_name,
                                                             prefix=self.prefix))
        self.resource.node.add_dependency(self.relay_policy)

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """``s3:GetObject`` under the copy's prefix and ``s3:ListBucket`` of it, while the bucket is this account's."""
        stack = stack_of(self)
        objects = self.bucket.arn_for_objects(f"{self.prefix}*")
        grant = iam.Grant.add_to_principal(grantee=grantee, actions=["s3:GetObject"], resource_arns=[objects],
                                           conditions=owner_condition(stack))
        iam.Grant.add_to_principal(grantee=grantee, actions=["s3:ListBucket"], resource_arns=[self.bucket.bucket_arn],
                                   conditions={**owner_condition(stack),
                                               "StringLike": {"s3:prefix": [f"{self.prefix}*"]}})
        if isinstance(grantee, Construct):
            acknowledge_wildcards(grantee, "Reads the hub model's copy under its own prefix only", resources=(objects,))
        return grant
