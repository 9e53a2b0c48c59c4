"""The Service Quotas preflight compares with, as data with sources (read 2026-11-23).

botocore ships no quota codes and no AWS page read here lists them for these families, so the account's own
answer is the authority: preflight lists the quotas of the service (``ListServiceQuotas``) and finds each by its
*name*; the code beside it is a cross-check only. When a name is not in the account's list, the line is a warning
naming the console check (Service Quotas console -> the service -> search the name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class QuotaFact:
    service: str
    name: str
    code: str
    """As third-party sources give it; not confirmed by an AWS publication read here."""
    source: str


_SOURCES = ("third-party code and docs found by find_string on 2026-11-23 (e.g. a Go provider's constants "
            "'QuotaCodeTrn = \"L-2C3B7624\" // Running On-Demand Trn instances', training notes quoting 'Running "
            "On-Demand Trn instances | L-2C3B7624'); one Terraform module gives L-2C49D5F8 for Trn: codes unconfirmed")

EC2_ON_DEMAND: dict[str, QuotaFact] = {
    "trn": QuotaFact("ec2", "Running On-Demand Trn instances", "L-2C3B7624", _SOURCES),
    "inf": QuotaFact("ec2", "Running On-Demand Inf instances", "L-1945791B", _SOURCES),
    "p": QuotaFact("ec2", "Running On-Demand P instances", "L-417A185B", _SOURCES),
    "g": QuotaFact("ec2", "Running On-Demand G and VT instances", "L-DB2E81BA", _SOURCES),
}
"""EC2 On-Demand vCPU quotas by instance family letter(s). The quota counts vCPUs (aws-cli's get-service-quota
example: 'Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances', L-1216C47A, UsageMetric Resource vCPU;
tests/data/aws_cli/service-quotas-get-service-quota.rst)."""

SAGEMAKER_ENDPOINT_NAME = "{instance_type} for endpoint usage"
"""The SageMaker quota of running endpoint instances of one type, e.g. 'ml.inf2.48xlarge for endpoint usage' (the
name the Service Quotas console shows; third-party pages only, unconfirmed): counts instances."""

_LETTERS = re.compile(r"^(?:ml\.)?(trn|inf|p|g)\d")


def ec2_quota(instance_type: str) -> QuotaFact | None:
    """The On-Demand vCPU quota an EC2 type runs under (trn2u.48xlarge -> Trn, p6e-gb200 -> P), or None."""
    m = _LETTERS.match(instance_type)
    return EC2_ON_DEMAND.get(m.group(1)) if m else None
