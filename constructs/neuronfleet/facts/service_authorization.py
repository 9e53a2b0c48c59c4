"""A row of the Service Authorization Reference: what an IAM policy can say about one action. The kit's IAM bounds
are built from such rows, each with its source (capacity/iam.py: the Capacity Block purchases; fallback/gpu_pool.py:
Batch SubmitJob; inference/scaling_iam.py: Application Auto Scaling), and tests/sar_rows.py pins each row to the
reference's own text under tests/data/iam. No aws-cdk-lib import here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ActionAuthorization:
    """One action's row: the resource types it authorises (``*``: required) and the condition keys it supports."""

    action: str
    resource_types: tuple[str, ...]
    condition_keys: tuple[str, ...]
    source: str
    """Where the row was read (the reference's page, the copy and its commit, the date)."""
    dependent_actions: tuple[str, ...] = ()
