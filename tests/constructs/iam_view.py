"""What a role in a synthesised template may do: every statement of every policy attached to it, and the checks the
job-isolation tests share (training clusters, the GPU pool)."""

from __future__ import annotations

import fnmatch
import json
from typing import Any

from aws_cdk.assertions import Template

SESSION_MANAGER = ["ssm:UpdateInstanceInformation", "ssmmessages:CreateControlChannel", "ssmmessages:CreateDataChannel",
                   "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel"]
"""AWS's AWSCloud9SSMInstanceProfile managed policy, action for action (AWS Managed Policy reference, read
2026-11-23): what an instance needs for Session Manager alone."""


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def role_id(t: Template, *, service: str, description: str | None = None) -> str:
    """The logical id of the one role ``service`` assumes (and whose description contains ``description``)."""
    found = [k for k, r in t.find_resources("AWS::IAM::Role").items()
             if service in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])
             and (description is None or description in r["Properties"].get("Description", ""))]
    assert len(found) == 1, found
    return found[0]


def statements(t: Template, role: str) -> list[dict[str, Any]]:
    """Every statement of every inline policy of ``role`` (its own Policies and each AWS::IAM::Policy naming it)."""
    ref = {"Ref": role}
    docs = [p["Properties"]["PolicyDocument"] for p in t.find_resources("AWS::IAM::Policy").values()
            if ref in p["Properties"]["Roles"]]
    docs += [p["PolicyDocument"] for p in t.find_resources("AWS::IAM::Role")[role]["Properties"].get("Policies", [])]
    return [st for doc in docs for st in doc["Statement"]]


def managed(t: Template, role: str) -> list[str]:
    """The managed policies of ``role``, as the text of their ARNs."""
    return [json.dumps(a) for a in t.find_resources("AWS::IAM::Role")[role]["Properties"].get("ManagedPolicyArns", [])]


def actions(sts: list[dict[str, Any]]) -> set[str]:
    return {a for st in sts if st["Effect"] == "Allow" for a in as_list(st["Action"])}


def allows(sts: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    """The Allow statements whose actions (wildcards included) cover ``action``."""
    return [st for st in sts if st["Effect"] == "Allow"
            and any(fnmatch.fnmatchcase(action.lower(), a.lower()) for a in as_list(st["Action"]))]


FORBIDDEN_FOR_JOBS = ("s3:DeleteObjectVersion", "s3:DeleteObjectVersionTagging", "s3:PutBucketPolicy",
                      "s3:DeleteBucketPolicy", "s3:PutBucketAcl", "s3:PutObjectAcl", "s3:PutObjectVersionAcl",
                      "s3:PutBucketVersioning", "s3:PutLifecycleConfiguration", "s3:DeleteBucket",
                      "s3:PutBucketPublicAccessBlock", "ssm:GetParameter", "ssm:GetParameters",
                      "ssm:GetParametersByPath", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer",
                      "ecs:RegisterContainerInstance", "ssmmessages:OpenDataChannel", "cloudwatch:PutMetricData",
                      "iam:PassRole", "sts:AssumeRole")
"""What job code must never be allowed to do: delete the versions that keep old checkpoints, change who can reach its
bucket, read the account's parameters or every image, or act as the host (the instance role's rights)."""
