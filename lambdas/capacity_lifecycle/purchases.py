"""Every Capacity Block purchase or extension in the account and region, whoever made it, announced once on the
fleet's topic: who (the caller's ARN), what (offering and reservation ids), and the price where the event holds it.

EventBridge delivers CloudTrail's record of the API call (detail-type ``AWS API Call via CloudTrail``, source
``aws.ec2``, ``detail.eventName`` PurchaseCapacityBlock or PurchaseCapacityBlockExtension; a trail with logging must be
on: neuronfleet_contract.capacity_lifecycle.CLOUDTRAIL_API_CALL). The record's envelope is CloudTrail's (userIdentity,
eventID, eventTime, errorCode...: CloudTrail user guide, "CloudTrail record contents"); AWS publishes no example of
these two event names, so the members read inside ``requestParameters``/``responseElements`` are looked for by name
at any depth, in either case (EC2 records some calls with lower-camel members, ``instancesSet``, and newer ones
wrapped in a ``<Operation>Request`` object): tests/unit/test_capacity_purchases.py builds the events from AWS's
generic example and says so.

Announced once per CloudTrail event (its ``eventID``), through an announcements outbox in the announcer's own table,
which the lifecycle role (the only kit role that may buy) cannot write. A malformed event is refused: a log line and
the ``MalformedEvents`` metric (namespaces.CAPACITY_NAMESPACE, service ``neuronfleet-capacity-purchases``), never an
exception (a retry would not mend it). A failed purchase (``errorCode``) is announced too, as an attempt.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from neuronfleet_runtime.announcements import Ledger
from neuronfleet_runtime.fleet_metrics import per_fleet
from neuronfleet_runtime.topic import Topic

from neuronfleet_contract import namespaces
from neuronfleet_contract.capacity_alert import ANNOUNCEMENTS_METRIC, MALFORMED_METRIC
from neuronfleet_contract.capacity_lifecycle import (
    CLOUDTRAIL_API_CALL,
    EC2_EVENT_SOURCE,
    FEE_TAG,
    PURCHASE_EVENTS,
    PURCHASES_SERVICE,
    PurchaseAnnouncerConfig,
)

logger = Logger(service=PURCHASES_SERVICE)
metrics = Metrics(namespace=namespaces.CAPACITY_NAMESPACE, service=PURCHASES_SERVICE)

KEEP = timedelta(days=30)
"""How long an event's claim is kept: EventBridge retries a target for at most 24 hours (its default retry policy);
CloudTrail may deliver an event late, never a month late."""
DEPTH = 6
NO_BLOCK_FEE = ("not in the event: EC2's answer to PurchaseCapacityBlock is the capacity reservations, with no fee "
                "(botocore ec2 PurchaseCapacityBlockResult), and the request names only the offering. Read it in Cost "
                "Explorer (usage type <region>-CapacityBlockFee:<instance type>, record type Upfront) once billed, "
                "or from the offering before it is bought (aws ec2 describe-capacity-block-offerings)")


def no_extension_fee(reservation_ids: tuple[str, ...]) -> str:
    ids = " ".join(reservation_ids) or "<reservation id>"
    return ("not in the event (CloudTrail recorded no response elements with a fee): read UpfrontFee with aws ec2 "
            f"describe-capacity-block-extension-history --capacity-reservation-ids {ids}")


class Malformed(ValueError):
    """An event the announcer cannot read (names the member, the value and what is allowed)."""


@dataclass(frozen=True)
class PurchaseCall:
    """One purchase call as CloudTrail recorded it."""

    event_id: str
    name: str
    who: str
    account: str
    region: str
    at: str
    offering_ids: tuple[str, ...]
    reservation_ids: tuple[str, ...]
    price: str
    error: str = ""
    source: str = ""

    @property
    def extension(self) -> bool:
        return self.name == "PurchaseCapacityBlockExtension"


def _walk(node: Any, depth: int = 0) -> Iterator[tuple[str, Any, Mapping[str, Any]]]:
    """(key, value, the mapping holding it) for every member at any depth (lists walked through)."""
    if depth > DEPTH:
        return
    if isinstance(node, Mapping):
        for k, v in node.items():
            yield str(k), v, node
            yield from _walk(v, depth + 1)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item, depth + 1)


def _named(node: Any, *names: str) -> list[str]:
    """Every string value of a member called one of ``names`` (any case), in order, once each."""
    wanted = {n.lower() for n in names}
    found = [str(v) for k, v, _ in _walk(node) if k.lower() in wanted and isinstance(v, str) and v.strip()]
    return list(dict.fromkeys(found))


def _tag(node: Any, key: str) -> str | None:
    """The value of tag ``key`` in any tag list (``{"key", "value"}`` in either case)."""
    for _, v, holder in _walk(node):
        if v == key and any(k.lower() == "key" for k in holder) and holder.get("value", holder.get("Value")):
            return str(holder.get("value", holder.get("Value")))
    return None


def _fees(node: Any) -> list[str]:
    """Each ``upfrontFee`` (any case) with its sibling currency, as written."""
    out = []
    for k, v, holder in _walk(node):
        if k.lower() == "upfrontfee" and v not in (None, ""):
            try:
                amount = Decimal(str(v))
            except InvalidOperation:
                continue
            currency = next((str(c) for ck, c in holder.items() if ck.lower() == "currencycode" and c), "")
            out.append(f"${amount} {currency}".rstrip())
    return list(dict.fromkeys(out))


def _text(doc: Mapping[str, Any], member: str, where: str, *, allowed: str) -> str:
    value = doc.get(member)
    if not isinstance(value, str) or not value.strip():
        raise Malformed(f"{where}.{member}: got {value!r}; allowed: {allowed}")
    return value


def parse(event: Any) -> PurchaseCall:
    """The purchase call an EventBridge event carries; :class:`Malformed` naming the member otherwise."""
    if not isinstance(event, Mapping):
        raise Malformed(f"event: got {type(event).__name__}; allowed: a JSON object (an EventBridge event)")
    kind = event.get("detail-type")
    if kind != CLOUDTRAIL_API_CALL:
        raise Malformed(f"detail-type: got {kind!r}; allowed: {CLOUDTRAIL_API_CALL!r}")
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        raise Malformed(f"detail: got {type(detail).__name__}; allowed: a CloudTrail record (a JSON object)")
    if detail.get("eventSource") != EC2_EVENT_SOURCE:
        raise Malformed(f"detail.eventSource: got {detail.get('eventSource')!r}; allowed: {EC2_EVENT_SOURCE!r}")
    name = detail.get("eventName")
    if name not in PURCHASE_EVENTS:
        raise Malformed(f"detail.eventName: got {name!r}; allowed: one of {', '.join(PURCHASE_EVENTS)}")
    event_id = _text(detail, "eventID", "detail", allowed="CloudTrail's id of the event (a non-blank string)")
    identity = detail.get("userIdentity")
    if not isinstance(identity, Mapping):
        raise Malformed(f"detail.userIdentity: got {type(identity).__name__}; allowed: a JSON object (who called)")
    who = str(identity.get("arn") or "") or " ".join(
        str(x) for x in (identity.get("type"), identity.get("principalId"), identity.get("invokedBy")) if x) \
        or "unknown (userIdentity names no arn, type or principal)"
    request, response = detail.get("requestParameters") or {}, detail.get("responseElements") or {}
    offerings = tuple(_named(request, "capacityBlockExtensionOfferingId", "capacityBlockOfferingId")
                      or _named(response, "capacityBlockExtensionOfferingId", "capacityBlockOfferingId"))
    reservations = tuple(dict.fromkeys([*_named(request, "capacityReservationId"),
                                        *_named(response, "capacityReservationId")]))
    fees = _fees(response)
    tagged = _tag(request, FEE_TAG) or _tag(response, FEE_TAG)
    if fees:
        price = ", ".join(fees) + " (upfront, from the response elements)"
    elif tagged:
        price = (f"${tagged} (the {FEE_TAG} tag the buyer set on the reservations: neuronfleet capacity buy writes "
                 "the offer's fee there; another buyer could write anything)")
    else:
        price = no_extension_fee(reservations) if name == "PurchaseCapacityBlockExtension" else NO_BLOCK_FEE
    error = " ".join(str(x) for x in (detail.get("errorCode"), detail.get("errorMessage")) if x)
    return PurchaseCall(event_id=event_id, name=str(name), who=who,
                        account=str(detail.get("recipientAccountId") or event.get("account") or "?"),
                        region=str(detail.get("awsRegion") or event.get("region") or "?"),
                        at=str(detail.get("eventTime") or event.get("time") or "?"), offering_ids=offerings,
                        reservation_ids=reservations, price=price, error=error,
                        source=" ".join(str(x) for x in (detail.get("sourceIPAddress"), detail.get("userAgent")) if x))


def say(call: PurchaseCall) -> tuple[str, str]:
    """The SNS subject and message."""
    what = "Capacity Block extension" if call.extension else "Capacity Block"
    verb = "purchase attempt refused" if call.error else "purchased"
    short = call.who.rsplit("/", 1)[-1] if "/" in call.who else call.who
    lines = [f"{what} {verb} in account {call.account}, {call.region}, at {call.at} ({call.name}).",
             f"Who: {call.who}" + (f" (from {call.source})" if call.source else ""),
             f"Offering: {', '.join(call.offering_ids) or 'not in the event'}",
             f"Reservation(s): {', '.join(call.reservation_ids) or 'not in the event'}",
             f"Price: {call.price}"]
    if call.error:
        lines.append(f"AWS refused it: {call.error}. Nothing was bought by this call.")
    else:
        lines.append("Capacity Blocks and their extensions are paid up front and not refunded. If this purchase was "
                     "not expected, find out from the caller above now.")
    lines.append(f"CloudTrail event {call.event_id}.")
    return (f"neuronfleet: {what} {verb} by {short}"[:100], "\n".join(lines))


def run(event: Any, *, ledger: Ledger, alerts: Topic, now: datetime, deadline: float | None = None) -> dict[str, Any]:
    """Announce the purchase once (the announcer's outbox); refuse a malformed event (log, MalformedEvents)."""
    try:
        call = parse(event)
    except Malformed as e:
        logger.error("malformed event refused", extra={"reason": str(e), "event": repr(event)[:500]})
        metrics.add_metric(name=MALFORMED_METRIC, unit=MetricUnit.Count, value=1)
        return {"announced": [], "refused": str(e)}
    box = ledger.outbox(alerts, deadline=deadline)
    box.complete()
    outcome = box.once(f"purchase-event#{call.event_id}", expires=now + KEEP, say=say(call))
    if box.sent:
        metrics.add_metric(name=ANNOUNCEMENTS_METRIC, unit=MetricUnit.Count, value=len(box.sent))
    logger.info("capacity purchase", extra={"event_id": call.event_id, "event_name": call.name, "who": call.who,
                                            "outcome": str(outcome), "announced": box.sent})
    box.finish()
    return {"announced": box.sent, "outcome": str(outcome)}


@cache
def container() -> tuple[Ledger, Topic]:
    s = PurchaseAnnouncerConfig.from_environment()
    return Ledger(boto3.client("dynamodb"), s.ledger_table), Topic(boto3.client("sns"), s.topic_arn)


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    per_fleet(metrics)
    ledger, alerts = container()
    return run(event, ledger=ledger, alerts=alerts, now=datetime.now(UTC),
               deadline=time.time() + context.get_remaining_time_in_millis() / 1000)
