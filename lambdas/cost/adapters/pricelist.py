"""The Price List adapters of the cost report: GetProducts (every page) and the price cache in the cost ledger; what
their answers mean and which price a run uses is in :mod:`cost.logic.pricelist`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..logic.pricelist import ApiFailed, CacheFailed, endpoint_region, filters, service_of


def plan_endpoint(region: str | None, session: Any) -> tuple[str | None, str]:
    """(the Price List endpoint region, "") for a fleet in ``region``, or (None, why not): a region botocore does not
    know (``session``: a boto3 Session, whose partitions and endpoints are botocore's data), or a partition without
    the API (e.g. aws-us-gov)."""
    if not region:
        return None, "the function's region is not known"
    from botocore.exceptions import UnknownRegionError

    try:
        partition = session.get_partition_for_region(region)
    except UnknownRegionError:
        return None, f"region {region} is not one botocore knows: no live price asked"
    if region not in session.get_available_regions("ec2", partition_name=partition):
        return None, f"region {region} is not one botocore lists for EC2 ({partition}): no live price asked"
    endpoint = endpoint_region(region, session.get_available_regions("pricing", partition_name=partition))
    if endpoint is None:
        return None, f"partition {partition} has no Price List Query API endpoint in botocore: no live price asked"
    return endpoint, ""



PER_TYPE_ERRORS = ("NotFoundException", "InvalidParameterException")
"""Errors about the one query (botocore's pricing model lists them for GetProducts): that type only."""


class PriceListApi:
    """GetProducts, every page (``max_pages`` at most), as the raw PriceList strings."""

    def __init__(self, client: Any, *, max_pages: int = 5) -> None:
        self._client, self._max_pages = client, max_pages
        self.requests = 0

    def products(self, instance_type: str, region: str) -> list[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        kwargs: dict[str, Any] = {"ServiceCode": service_of(instance_type), "Filters": filters(instance_type, region),
                                  "FormatVersion": "aws_v1", "MaxResults": 100}
        out: list[str] = []
        for _ in range(self._max_pages):
            self.requests += 1
            try:
                page = self._client.get_products(**kwargs)
            except ClientError as exc:
                error = exc.response.get("Error", {})
                if error.get("Code") in PER_TYPE_ERRORS:
                    raise ValueError(f"{error.get('Code')}: {error.get('Message', '')}") from None
                raise ApiFailed(f"{error.get('Code', '?')}: {error.get('Message', '')}") from None
            except BotoCoreError as exc:
                raise ApiFailed(f"{type(exc).__name__}: {exc}") from None
            entries = page.get("PriceList")
            if not isinstance(entries, list):
                raise ValueError(f"a GetProducts page without a PriceList list (got {type(entries).__name__})")
            out += entries
            if not page.get("NextToken"):
                return out
            kwargs["NextToken"] = page["NextToken"]
        raise ValueError(f"more than {self._max_pages} pages of products: the filters do not single it out")


def _cache_errors() -> tuple[type[Exception], ...]:
    from botocore.exceptions import BotoCoreError, ClientError

    return (ClientError, BotoCoreError, KeyError, ValueError)


CACHE_ERRORS = _cache_errors()
"""What reading or writing the ledger's price cache may raise: raised as CacheFailed (noted, never failing the
report)."""


class PriceCache:
    """Live prices kept in the cost ledger (DynamoDB, boto3 resource Table): ``pk = PRICE#<region>``, ``sk = <type>``,
    the entry's fields and ``read_at`` (ISO time). One Query reads a region's, one batch writes the new ones."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def load(self, region: str) -> dict[str, tuple[datetime, dict[str, str]]]:
        try:
            return self._load(region)
        except CACHE_ERRORS as exc:
            raise CacheFailed(type(exc).__name__) from exc

    def save(self, region: str, entries: Mapping[str, Mapping[str, str]], read_at: datetime) -> None:
        try:
            self._save(region, entries, read_at)
        except CACHE_ERRORS as exc:
            raise CacheFailed(type(exc).__name__) from exc

    def _load(self, region: str) -> dict[str, tuple[datetime, dict[str, str]]]:
        from boto3.dynamodb.conditions import Key

        out: dict[str, tuple[datetime, dict[str, str]]] = {}
        kwargs: dict[str, Any] = {"KeyConditionExpression": Key("pk").eq(f"PRICE#{region}")}
        while True:
            page = self._table.query(**kwargs)
            for item in page.get("Items", []):
                entry = {k: str(v) for k, v in item.items() if k not in ("pk", "sk", "read_at")}
                out[str(item["sk"])] = (datetime.fromisoformat(str(item["read_at"])), entry)
            if "LastEvaluatedKey" not in page:
                return out
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _save(self, region: str, entries: Mapping[str, Mapping[str, str]], read_at: datetime) -> None:
        with self._table.batch_writer() as batch:
            for t, entry in sorted(entries.items()):
                batch.put_item(Item={**entry, "pk": f"PRICE#{region}", "sk": t, "read_at": read_at.isoformat()})
