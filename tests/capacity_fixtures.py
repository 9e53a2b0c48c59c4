"""EC2 Capacity Block answers for botocore's Stubber, built on botocore 1.44.5's ec2 shapes.

No publisher example exists for these operations: aws/aws-cli at 07c4fe36 has no page for
describe-capacity-block-offerings, purchase-capacity-block, the extension operations or
describe-capacity-block-status, and botocore's ec2 examples-1.json none (checked 2026-11-23; tests/data/aws_cli/
README.md). So these answers are built from the shapes' members only, and the Stubber checks every one against the
operation's output shape before the code sees it: shape-true, values unconfirmed (an id, a fee, a date are ours).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from botocore.stub import Stubber

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
ACCOUNT = "111111111111"
REGION = "us-east-2"


def client(service: str) -> Any:
    return boto3.client(service, region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")


def offering(oid: str = "cb-0123456789abcdef0", *, instance_type: str = "trn2.48xlarge", az: str = "us-east-2b",
             count: int = 4, start: datetime | None = None, hours: int = 48, fee: str = "3840.00",
             ultraserver: tuple[str, int] | None = None, currency: str = "USD",
             segments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    start = start or NOW + timedelta(days=2)
    doc: dict[str, Any] = {
        "CapacityBlockOfferingId": oid, "InstanceType": instance_type, "AvailabilityZone": az,
        "InstanceCount": count, "StartDate": start, "EndDate": start + timedelta(hours=hours),
        "CapacityBlockDurationHours": hours, "CapacityBlockDurationMinutes": 0, "UpfrontFee": fee,
        "CurrencyCode": currency, "Tenancy": "default", "ZoneType": "availability-zone"}
    if ultraserver:
        doc |= {"UltraserverType": ultraserver[0], "UltraserverCount": ultraserver[1]}
    if segments:
        doc["CapacityBlockOfferingSegments"] = segments
    return doc


def reservation(rid: str = "cr-0aaaabbbbccccdddd", *, instance_type: str = "trn2.48xlarge", count: int = 4,
                start: datetime | None = None, end: datetime | None = None, tags: dict[str, str] | None = None,
                state: str = "scheduled", block_id: str = "cb-block-1") -> dict[str, Any]:
    start = start or NOW + timedelta(days=2)
    return {"CapacityReservationId": rid, "OwnerId": ACCOUNT,
            "CapacityReservationArn": f"arn:aws:ec2:{REGION}:{ACCOUNT}:capacity-reservation/{rid}",
            "InstanceType": instance_type, "InstancePlatform": "Linux/UNIX", "AvailabilityZone": "us-east-2b",
            "Tenancy": "default", "TotalInstanceCount": count, "AvailableInstanceCount": count, "State": state,
            "StartDate": start, "EndDate": end or start + timedelta(hours=48), "EndDateType": "limited",
            "InstanceMatchCriteria": "targeted", "CreateDate": NOW, "ReservationType": "capacity-block",
            "CapacityBlockId": block_id,
            "Tags": [{"Key": k, "Value": v} for k, v in (tags or {}).items()]}


def extension_offering(oid: str = "cbe-0123456789abcdef0", *, block_start: datetime, block_end: datetime,
                       hours: int = 24, fee: str = "1920.00", count: int = 4) -> dict[str, Any]:
    return {"CapacityBlockExtensionOfferingId": oid, "InstanceType": "trn2.48xlarge", "InstanceCount": count,
            "AvailabilityZone": "us-east-2b", "AvailabilityZoneId": "use2-az2", "StartDate": block_start,
            "CapacityBlockExtensionStartDate": block_end,
            "CapacityBlockExtensionEndDate": block_end + timedelta(hours=hours),
            "CapacityBlockExtensionDurationHours": hours, "UpfrontFee": fee, "CurrencyCode": "USD",
            "Tenancy": "default", "ZoneType": "availability-zone"}


def extension(rid: str, offering_id: str, *, start: datetime, hours: int = 24, status: str = "payment-pending",
              fee: str = "1920.00") -> dict[str, Any]:
    return {"CapacityReservationId": rid, "InstanceType": "trn2.48xlarge", "InstanceCount": 4,
            "AvailabilityZone": "us-east-2b", "AvailabilityZoneId": "use2-az2",
            "CapacityBlockExtensionOfferingId": offering_id, "CapacityBlockExtensionDurationHours": hours,
            "CapacityBlockExtensionStatus": status, "CapacityBlockExtensionPurchaseDate": NOW,
            "CapacityBlockExtensionStartDate": start, "CapacityBlockExtensionEndDate": start + timedelta(hours=hours),
            "UpfrontFee": fee, "CurrencyCode": "USD", "ZoneType": "availability-zone"}


def error(stub: Stubber, method: str, code: str, status: int, expected: dict[str, Any] | None = None) -> None:
    stub.add_client_error(method, service_error_code=code, service_message=f"{code} (stubbed)",
                          http_status_code=status, expected_params=expected)
