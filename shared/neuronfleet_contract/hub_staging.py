"""What the HubModelCopy construct and the hub_staging function agree on: the custom resource's type, its properties
(built here for the construct, read by ``hub_staging.logic.parse_request``), how many runs a copy may take and the
function's memory."""

from __future__ import annotations

RESOURCE_TYPE = "Custom::HubModelCopy"
MAX_RUNS = 4
"""Runs one copy may take (each up to Lambda's 15 minutes): 4 fill CloudFormation's longest wait for a custom resource
(ServiceTimeout, at most 3600 s). A copy not done by then fails with how far it got; the next deploy resumes it."""
COPY_FUNCTION_MEMORY_MB = 2048
"""The copier's memory: its 4 workers hold one 64 MiB part each, twice over (read, then sent)."""
PROPERTIES = ("ModelId", "Revision", "SecretArn", "Bucket", "Prefix")


def properties(*, model_id: str, revision: str, secret_arn: str, bucket: str, prefix: str) -> dict[str, str]:
    """The custom resource's properties: the secret's ARN, never its value."""
    return dict(zip(PROPERTIES, (model_id, revision, secret_arn, bucket, prefix), strict=True))
