"""cdk-nag acknowledgements that name exactly what they acknowledge."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from weakref import WeakKeyDictionary

from aws_cdk import Acknowledgment, CfnResource, Stack, Validations
from constructs import IConstruct

from .lookups import stack_of

_RENDERED: WeakKeyDictionary[Stack, dict[str, str]] = WeakKeyDictionary()
"""Stack -> tokenised string -> its rendering: a token resolves the same way anywhere in one stack."""


def render(scope: IConstruct, value: str) -> str:
    """Render a (possibly tokenised) string the way cdk-nag writes it in a finding id:
    ``{"Fn::GetAtt": ["X", "Arn"]}`` as ``<X.Arn>``, ``{"Ref": "X"}`` as ``<X>``, joins concatenated. A string
    without a token (CDK encodes string tokens as ``${Token[...]}``) is its own rendering: no jsii round trip; a
    tokenised one is resolved once per stack."""
    if "${Token[" not in value:
        return value
    stack = stack_of(scope)
    rendered = _RENDERED.setdefault(stack, {})
    if value not in rendered:
        rendered[value] = _render(stack.resolve(value))
    return rendered[value]


def _render(node: Any) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, dict) and len(node) == 1:
        (fn, arg), = node.items()
        if fn == "Ref":
            return f"<{arg}>"
        if fn == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>"
        if fn == "Fn::Join":
            return arg[0].join(_render(part) for part in arg[1])
    raise ValueError(f"cannot render {node!r} as a cdk-nag finding id")


def acknowledge_wildcards(scope: IConstruct, reason: str, *, resources: tuple[str, ...] = (),
                          actions: tuple[str, ...] = ()) -> None:
    """Acknowledge AwsSolutions-IAM5 findings for these wildcard resources (ARNs, tokens allowed) and actions."""
    acknowledge_wildcard_groups(scope, [(reason, resources, actions)])


def acknowledge_wildcard_groups(scope: IConstruct,
                                groups: Iterable[tuple[str, tuple[str, ...], tuple[str, ...]]]) -> None:
    """:func:`acknowledge_wildcards` for several ``(reason, resources, actions)`` at once: two round trips for all."""
    acknowledgments = [Acknowledgment(id=f, reason=reason) for reason, resources, actions in groups for f in (
        *(f"AwsSolutions-IAM5[Resource::{render(scope, arn)}]" for arn in resources),
        *(f"AwsSolutions-IAM5[Action::{action}]" for action in actions))]
    if acknowledgments:
        Validations.of(scope).acknowledge(*acknowledgments)


# ------------------------------------------------------------------------------------------------ compliance packs
# Issue 36 (docs/security.md, "Scanners: checkov and cdk-nag packs"): what cdk-nag's NIST 800-53 R5, HIPAA Security
# and PCI DSS 3.2.1 packs and checkov find in the kit's templates and the kit keeps, each with its reason. One table,
# rule id -> reason: a cdk-nag id is "<pack>-<rule>" exactly as cdk-nag 3.0.2 names it in the validation report
# (NagPack.applyRule: `${packName}-${rule.name}`; packs NIST.800.53.R5, HIPAA.Security, PCI.DSS.321); a checkov id is
# its check id. :func:`acknowledge` applies them where the kit creates the resources.

NIST, HIPAA, PCI = "NIST.800.53.R5", "HIPAA.Security", "PCI.DSS.321"
_ALL_THREE = (NIST, HIPAA, PCI)

INLINE_POLICIES = ("Each kit role has a policy of its own, statement by statement with named resources (least "
                   "privilege); a managed policy would be shared between roles and broader")
LOG_GROUP_KMS = ("CloudWatch Logs encrypts every log group at rest; the kit's function and flow-log groups hold no "
                 "secret (secrets stay out of logs and environments); a customer key ($1 a month plus requests) is "
                 "the owner's choice")
S3_REPLICATION = ("The kit's buckets hold data the fleet rebuilds or keeps elsewhere (training copies, captures, "
                  "records, reports, exports, access logs); cross-region replication would double their storage")
S3_KMS = ("SSE-S3 default encryption, TLS only, public access blocked (core.storage.secure_bucket); a customer key "
          "adds a charge per request and no reader control the bucket policy and IAM do not already give")
S3_VERSIONING = ("A bucket of server access logs or query results, each object written once and never edited in "
                 "place: versions would keep nothing more; the training data, export, report and judge record "
                 "buckets are versioned")
S3_LOG_BUCKET = "A server access log bucket: logging it to itself or to another log bucket recurses"
LAMBDA_CONCURRENCY = ("A scheduled or event-driven single-purpose function at a low event rate; functions that must "
                      "not overlap have reserved concurrency 1; reserving more takes from the account's unreserved "
                      "pool")
LAMBDA_VPC = ("Calls AWS APIs only (signed, TLS); the function that must reach the VPC (the pool schedule, the "
              "cluster's API) runs in it")
LAMBDA_ENV_KMS = ("Lambda encrypts environment variables at rest with an AWS managed key; the kit's environments "
                  "hold names and limits, never a secret")
KUBECTL_PROVIDER = ("aws-cdk-lib's kubectl provider (aws_eks_v2), a CloudFormation custom resource: it runs only "
                    "during a deployment, a failure fails that deployment, and its event cannot be replayed later "
                    "(CloudFormation's response URL expires), so a dead-letter queue or reserved concurrency adds "
                    "nothing; its log groups hold kubectl output, no secret")
DYNAMODB_BACKUP = ("Point-in-time recovery is on; the tables hold announcement and ledger records that expire or "
                   "the functions rebuild, encrypted at rest by DynamoDB")
PUBLIC_SUBNETS = ("The public subnets hold only the NAT gateways, which need a public address and a route to the "
                  "internet gateway; instances, functions and endpoints are in the private subnets")
EFA_SELF = ("EFA needs all traffic (protocol -1) to and from the security group itself (AWS PCS user guide, "
            "'Create a security group to support EFA communications'); the rule's only source is the group, no "
            "address range")
DEFAULT_SECURITY_GROUP = ("Nothing of the kit uses the VPC's default security group (every group is named); "
                          "closing it takes aws-cdk-lib's Lambda-backed custom resource, which the kit avoids: close "
                          "it account-wide instead (Security Hub control EC2.2 with AWS Config remediation)")
SAGEMAKER_LOCAL_STORAGE = ("An instance type of this endpoint has local NVMe storage: SageMaker refuses KmsKeyId "
                           "then and the instance encrypts that storage with a hardware module (CreateEndpointConfig "
                           "KmsKeyId); endpoints without local storage get the kit's rotated key")
SQS_MANAGED = ("SSE-SQS encrypts this dead-letter queue at rest (SqsManagedSseEnabled: true); checkov 3.3.30's "
               "CKV_AWS_27 reads only KmsMasterKeyId")
SAGEMAKER_ENIS = ("SageMaker's VpcConfig: SageMaker creates and deletes the endpoint's network interfaces with this "
                  "role in the subnets and groups of the model, not known as ARNs beforehand; the ec2:Describe* "
                  "actions have no resource-level permissions")
SESSION_MANAGER = ("Session Manager (the kit's replacement for SSH): ssmmessages and ssm:UpdateInstanceInformation "
                   "on *, as AWS's AWSCloud9SSMInstanceProfile managed policy grants them (training.batch)")
EKS_SECRETS = ("EKS envelope-encrypts all Kubernetes API data, secrets included, with an AWS owned KMS key on "
               "Kubernetes 1.28 and later (the kit serves 1.36); a customer key is EncryptionConfig, which "
               "CloudFormation adds only by replacing the cluster (docs/security.md)")

ACKNOWLEDGED: dict[str, str] = {
    **{f"{p}-IAMNoInlinePolicy": INLINE_POLICIES for p in _ALL_THREE},
    **{f"{p}-CloudWatchLogGroupEncrypted": LOG_GROUP_KMS for p in _ALL_THREE}, "CKV_AWS_158": LOG_GROUP_KMS,
    **{f"{p}-S3BucketReplicationEnabled": S3_REPLICATION for p in _ALL_THREE},
    **{f"{p}-S3DefaultEncryptionKMS": S3_KMS for p in _ALL_THREE},
    **{f"{p}-S3BucketVersioningEnabled": S3_VERSIONING for p in _ALL_THREE}, "CKV_AWS_21": S3_VERSIONING,
    **{f"{p}-S3BucketLoggingEnabled": S3_LOG_BUCKET for p in _ALL_THREE}, "CKV_AWS_18": S3_LOG_BUCKET,
    **{f"{p}-LambdaConcurrency": LAMBDA_CONCURRENCY for p in (NIST, HIPAA)}, "CKV_AWS_115": LAMBDA_CONCURRENCY,
    **{f"{p}-LambdaInsideVPC": LAMBDA_VPC for p in _ALL_THREE}, "CKV_AWS_117": LAMBDA_VPC,
    "CKV_AWS_173": LAMBDA_ENV_KMS,
    **{f"{p}-LambdaDLQ": KUBECTL_PROVIDER for p in (NIST, HIPAA)}, "CKV_AWS_116": KUBECTL_PROVIDER,
    **{f"{p}-DynamoDBInBackupPlan": DYNAMODB_BACKUP for p in (NIST, HIPAA)}, "CKV_AWS_119": DYNAMODB_BACKUP,
    **{f"{p}-VPCSubnetAutoAssignPublicIpDisabled": PUBLIC_SUBNETS for p in _ALL_THREE},
    **{f"{p}-VPCNoUnrestrictedRouteToIGW": PUBLIC_SUBNETS for p in _ALL_THREE},
    **{f"{p}-EC2RestrictedCommonPorts": EFA_SELF for p in _ALL_THREE},
    **{f"{p}-VPCDefaultSecurityGroupClosed": DEFAULT_SECURITY_GROUP for p in _ALL_THREE},
    **{f"{p}-SageMakerEndpointConfigurationKMSKeyConfigured": SAGEMAKER_LOCAL_STORAGE for p in _ALL_THREE},
    "CKV_AWS_27": SQS_MANAGED,
    "CKV_AWS_109": SAGEMAKER_ENIS, "CKV_AWS_111": SAGEMAKER_ENIS,
    "CKV_AWS_58": EKS_SECRETS,
}
"""Every finding the kit keeps: rule id -> reason (cdk-nag ``<pack>-<rule>``, checkov ``CKV_...``)."""

_REASON_OVERRIDES = {"CKV_AWS_111": {SESSION_MANAGER}}
"""Rule ids whose reason depends on the resource: the alternatives :func:`acknowledge` accepts besides the table's."""


def pack_ids(rule: str) -> list[str]:
    """The table's cdk-nag ids of ``rule`` (a rule name without its pack, e.g. ``IAMNoInlinePolicy``)."""
    ids = [i for i in ACKNOWLEDGED if i.partition("-")[2] == rule and not i.startswith("CKV_")]
    if not ids:
        raise KeyError(f"{rule}: no cdk-nag rule of that name in neuronfleet.core.nag.ACKNOWLEDGED")
    return ids


def acknowledge(scope: IConstruct, *rules: str, reason: str | None = None) -> None:
    """Acknowledge ``rules`` on ``scope`` with the table's reasons (``reason``: one of the alternatives the table
    allows for the rule, else the table's).

    A cdk-nag rule name (``IAMNoInlinePolicy``: every pack the table lists it for) is acknowledged on ``scope`` and
    so on every construct under it (cdk-nag reads acknowledgements of the resource's ancestors): one call. A checkov
    id (``CKV_AWS_27``) goes to the ``Metadata.checkov.skip`` list of ``scope``'s CloudFormation resource (``scope``
    itself or its default child), merged with what is there."""
    nag = [Acknowledgment(id=i, reason=ACKNOWLEDGED[i]) for r in rules if not r.startswith("CKV_") for i in pack_ids(r)]
    if nag:
        Validations.of(scope).acknowledge(*nag)
    checkov = [r for r in rules if r.startswith("CKV_")]
    if checkov:
        skip_checkov(scope, *checkov, reason=reason)


def skip_checkov(scope: IConstruct, *ids: str, reason: str | None = None) -> None:
    """Add checkov skips (id and the table's reason as comment) to ``scope``'s CloudFormation resource."""
    resource = scope if isinstance(scope, CfnResource) else scope.node.default_child
    if not isinstance(resource, CfnResource):
        raise TypeError(f"{scope.node.path}: no CloudFormation resource to carry checkov's skip of {', '.join(ids)}")
    metadata = resource.get_metadata("checkov") or {}
    skips = list(metadata.get("skip", []))
    for i in ids:
        comment = ACKNOWLEDGED[i]
        if reason is not None:
            if reason not in _REASON_OVERRIDES.get(i, set()) | {comment}:
                raise ValueError(f"{i}: the reason given is not one neuronfleet.core.nag allows for it")
            comment = reason
        if not any(s.get("id") == i for s in skips):
            skips.append({"id": i, "comment": comment})
    resource.add_metadata("checkov", {**metadata, "skip": skips})
