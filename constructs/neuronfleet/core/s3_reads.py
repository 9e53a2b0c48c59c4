"""Reads of buckets the fleet file names (a model artifact, the judge's prompt set): by name, and only while the bucket
belongs to the account that should own it (issue 36, finding 8; docs/security.md, "Bucket reads"). One home: every
grant of such a read is built here (and neuronfleet.eks.cluster's serving model read uses the same condition).

A bucket name is global: if the bucket named is deleted and its name taken by another account, a read by name alone
would read that account's object (a model or prompts someone else chose). ``s3:ResourceAccount`` ("Filters access by
the resource owner AWS account ID") is a condition key of ``s3:GetObject`` and ``s3:ListBucket`` (Service
Authorization Reference, Amazon S3, as copied in salesforce/policy_sentry
``policy_sentry/shared/data/docs/list_amazons3.html`` @ c0d416cc, read 2026-11-28; the rows verbatim in
tests/data/iam/list_amazons3-read-rows.html, pinned by tests/constructs/test_security_bounds.py).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack

from .pseudo import pseudo

OWNER_KEY = "s3:ResourceAccount"
"""The condition key the kit bounds bucket reads with (GetObject's and ListBucket's, per the reference above)."""
READ_ACTIONS = ("s3:GetObject", "s3:ListBucket")


def owner_condition(stack: Stack, owner_account: str | None = None) -> dict[str, Any]:
    """``StringEquals s3:ResourceAccount`` = ``owner_account`` (default: the stack's account)."""
    return {"StringEquals": {OWNER_KEY: owner_account or stack.account}}


def object_arn(uri: str) -> str:
    """The ARN of the object (or, for a key ending in ``*``, the objects) an ``s3://bucket/key`` URI names, in the
    stack's partition. The URI is a fleet file's, already refused by ``rules.s3_uri`` if its key holds ``*``, ``?``
    or ``${``."""
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return f"arn:{pseudo().partition}:s3:::{bucket}/{key}"


def read_object_statement(stack: Stack, sid: str, uri: str, *, owner_account: str | None = None) -> dict[str, Any]:
    """An Allow of ``s3:GetObject`` on the object ``uri`` names, while its bucket belongs to ``owner_account``
    (default: the stack's account), as IAM's JSON."""
    return {"Sid": sid, "Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [object_arn(uri)],
            "Condition": owner_condition(stack, owner_account)}
