"""The kit's own running cost as a function is told it: the wire format of the overhead bill and its reader.

``neuronfleet.cost.overhead.bill_of_materials`` prices, at synth, what a fleet deploys besides accelerator instances
(NAT gateways, interface endpoints, FSx, KMS keys, functions, alarms, ...). A Lambda's environment holds at most 4 KB
for all its variables, so the bill travels compact (a few hundred bytes): per line its key, how many resources, the
monthly quantity of the priced unit, the monthly USD and a short source key; per line not priced its key, how many
resources and a reason code. The whole citations live in the construct library's data file
(neuronfleet/facts/data/overhead_prices.json, keyed by the same source keys; docs/cost.md lists them).

Wire (JSON, no spaces)::

    {"v": 1, "r": "us-east-2", "d": "2026-11-28", "t": "181.52",
     "p": [["nat-gateway-hour", 3, "2190", "98.55", "vpc-q"], ...],
     "u": [["fsx-lustre:PERSISTENT_2:SSD:250", 2, "6000", "unsourced"], ["Logs::LogGroup", 6, null, "usage"]]}

``r``: the fleet's region; ``d``: when the prices were read; ``t``: the total of the ``p`` lines (checked on read).
Quantities are whole units a month; a CloudFormation type's ``AWS::`` prefix is left out on the wire and restored on
read. A source key ending in ``-q`` is a third party's copy of AWS's price (quoted).
Pure: no AWS imports. :func:`decode` refuses a malformed value with :class:`InvalidEnvironment` naming the variable,
the value and what is allowed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from .environment import InvalidEnvironment

VARIABLE = "OVERHEAD_BILL"
"""The environment variable the bill travels in."""
VERSION = 1

LABELS: dict[str, str] = {
    "nat-gateway-hour": "NAT gateway hours",
    "nat-gateway-gb": "NAT gateway data processed (0 GB basis: traffic unknown at synth)",
    "public-ipv4-hour": "public IPv4 address hours (Elastic IPs)",
    "interface-endpoint-az-hour": "interface VPC endpoint hours, per AZ",
    "kms-key-month": "KMS customer managed keys",
    "alarm-metric-month": "CloudWatch alarm metrics (standard resolution)",
    "dashboard-month": "CloudWatch dashboards",
    "lambda-request": "Lambda requests (scheduled invocations)",
    "lambda-gb-second": "Lambda duration, GB-seconds (scheduled, at each function's timeout: an upper bound)",
    "eks-cluster-hour": "EKS cluster hours",
}
"""What each priced key is, as the report shows it. Keys not listed (e.g. ``fsx-lustre:...``) show as themselves."""

REASONS: dict[str, str] = {
    "usage": "usage-based: the volume is not known at synth",
    "unsourced": "no public source confirmed its price (docs/checks.md)",
    "unknown": "quantity unknown at synth (an unresolved value)",
    "events": "invoked by events, not on a schedule: usage-based",
    "free": "no charge",
    "unpriced": "no price read for it (docs/cost.md)",
}
"""Why a line is not priced, by the code the wire carries."""


@dataclass(frozen=True)
class PricedLine:
    """A priced line: ``count`` resources, ``quantity`` units a month, ``monthly_usd``, from ``source_key``."""

    key: str
    count: int
    quantity: Decimal
    monthly_usd: Decimal
    source_key: str

    @property
    def what(self) -> str:
        return LABELS.get(self.key, self.key)


@dataclass(frozen=True)
class UnpricedLine:
    """A line with no figure: ``count`` resources of ``key`` (``quantity`` when known) and why (``reason`` code)."""

    key: str
    count: int
    quantity: Decimal | None
    reason: str

    @property
    def why(self) -> str:
        return REASONS[self.reason]


@dataclass(frozen=True)
class OverheadBill:
    """The kit's own running cost a month, as priced at synth: its lines, their total, region and price date."""

    region: str
    read: date
    priced: tuple[PricedLine, ...]
    unpriced: tuple[UnpricedLine, ...]

    @property
    def total_usd(self) -> Decimal:
        return sum((line.monthly_usd for line in self.priced), Decimal(0))


def _money(value: Decimal) -> str:
    return str(value.quantize(Decimal("0.01")))


def _number(value: Decimal) -> str:
    return format(value.quantize(Decimal(1)), "f")  # a month's units, whole: the figure is the monthly USD


_AWS = "AWS::"


def _short(key: str) -> str:
    return key.removeprefix(_AWS)


def _long(key: str) -> str:
    return key if "::" not in key or key.startswith(_AWS) else _AWS + key


def encode(bill: OverheadBill) -> str:
    """The compact JSON of ``bill`` (monthly figures to the cent; the total is the sum of those)."""
    priced = [[_short(p.key), p.count, _number(p.quantity), _money(p.monthly_usd), p.source_key] for p in bill.priced]
    total = sum((Decimal(row[3]) for row in priced), Decimal(0))  # type: ignore[arg-type]
    doc = {"v": VERSION, "r": bill.region, "d": bill.read.isoformat(), "t": _money(total), "p": priced,
           "u": [[_short(u.key), u.count, None if u.quantity is None else _number(u.quantity), u.reason]
                 for u in bill.unpriced]}
    return json.dumps(doc, separators=(",", ":"))


_SHAPE = ('a JSON object {"v": 1, "r": region, "d": "YYYY-MM-DD", "t": total USD, "p": [[key, count, quantity, '
          'monthly USD, source key], ...], "u": [[key, count, quantity or null, reason], ...]} '
          f"(reasons: {', '.join(REASONS)})")


def decode(text: str | None) -> OverheadBill:
    """Read the bill ``encode`` wrote; a missing or malformed value raises InvalidEnvironment (naming VARIABLE)."""

    def bad(what: str) -> InvalidEnvironment:
        return InvalidEnvironment(VARIABLE, text, f"{_SHAPE}; {what}")

    if text is None:
        raise InvalidEnvironment(VARIABLE, None, _SHAPE)
    try:
        doc = json.loads(text)
    except ValueError:
        raise bad("it is not JSON") from None
    if not isinstance(doc, dict):
        raise bad("it is not a JSON object")
    if doc.get("v") != VERSION:
        raise bad(f"version v is {doc.get('v')!r}, this reader knows {VERSION}")
    region, read = doc.get("r"), doc.get("d")
    if not isinstance(region, str) or not region:
        raise bad(f"region r is {region!r}")
    try:
        day = date.fromisoformat(read) if isinstance(read, str) else None
    except ValueError:
        day = None
    if day is None:
        raise bad(f"price date d is {read!r}")
    priced = tuple(_priced(row, i, bad) for i, row in enumerate(_rows(doc, "p", bad)))
    unpriced = tuple(_unpriced(row, i, bad) for i, row in enumerate(_rows(doc, "u", bad)))
    bill = OverheadBill(region=region, read=day, priced=priced, unpriced=unpriced)
    total = _decimal(doc.get("t"), "total t", bad)
    if total != bill.total_usd:
        raise bad(f"total t is {doc.get('t')!r} but its lines sum to {_money(bill.total_usd)}")
    return bill


def _rows(doc: dict[str, Any], field: str, bad: Any) -> Sequence[Any]:
    rows = doc.get(field)
    if not isinstance(rows, list):
        raise bad(f"{field} is {rows!r}, not a list")
    return rows


def _decimal(value: Any, what: str, bad: Any) -> Decimal:
    if not isinstance(value, str):
        raise bad(f"{what} is {value!r}, not a decimal string")
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise bad(f"{what} is {value!r}, not a decimal") from None
    if not number.is_finite() or number < 0:
        raise bad(f"{what} is {value!r}, not a finite amount of at least 0")
    return number


def _count(value: Any, what: str, bad: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise bad(f"{what} is {value!r}, not a whole number of resources")
    return value


def _key(value: Any, what: str, bad: Any) -> str:
    if not isinstance(value, str) or not value:
        raise bad(f"{what} is {value!r}, not a key")
    return value


def _priced(row: Any, i: int, bad: Any) -> PricedLine:
    if not isinstance(row, list) or len(row) != 5:
        raise bad(f"p[{i}] is {row!r}, not [key, count, quantity, monthly USD, source key]")
    return PricedLine(key=_long(_key(row[0], f"p[{i}] key", bad)), count=_count(row[1], f"p[{i}] count", bad),
                      quantity=_decimal(row[2], f"p[{i}] quantity", bad),
                      monthly_usd=_decimal(row[3], f"p[{i}] monthly USD", bad),
                      source_key=_key(row[4], f"p[{i}] source key", bad))


def _unpriced(row: Any, i: int, bad: Any) -> UnpricedLine:
    if not isinstance(row, list) or len(row) != 4:
        raise bad(f"u[{i}] is {row!r}, not [key, count, quantity or null, reason]")
    if row[3] not in REASONS:
        raise bad(f"u[{i}] reason is {row[3]!r}")
    return UnpricedLine(key=_long(_key(row[0], f"u[{i}] key", bad)), count=_count(row[1], f"u[{i}] count", bad),
                        quantity=None if row[2] is None else _decimal(row[2], f"u[{i}] quantity", bad),
                        reason=row[3])
