"""EC2 Capacity Blocks: search, buy, extend, status; the one adapter the ``neuronfleet capacity`` command and the
lifecycle function share.

Purchases are made idempotent here, because AWS's are not (``neuronfleet_contract.capacity_lifecycle.
NO_CLIENT_TOKEN``: neither PurchaseCapacityBlock nor PurchaseCapacityBlockExtension takes a ClientToken):

- before a purchase, and after any answer that leaves it unclear whether AWS bought (a timeout, a 5xx, a lost
  connection), the adapter looks for what that purchase would have made: a reservation tagged with the offering id
  (``PURCHASE_TAG``); for an extension, every source EC2 offers (``EXTENSION_MOVES_END``): the block's extension
  history (payment-pending or payment-succeeded, of the same offering or starting at the block's current end), the
  reservation's own EndDate and the block's EndDate (either later than the end the offer extends). Found: nothing is
  bought again.
- EC2's describes are eventually consistent: a purchase may not show anywhere for a while
  (``EC2_CONSISTENCY_WINDOW``). So after an unclear answer no second attempt is made until the window has passed
  since it and every source was read again after that; a caller that cannot wait so long (``patience``) gets
  :class:`Unclear` naming the earliest time another attempt may be made. A caller that records its attempts
  (``on_attempt``, called just before each purchase request) passes the last one to a later call (``earlier``):
  the window then holds across runs.
- throttling (``RequestLimitExceeded``, ``Throttling``) is retried here with backoff, each retry after that look;
  give the purchase calls a client whose SDK retries are off (:data:`NO_SDK_RETRIES`), so botocore never resends a
  purchase by itself.
- a definite refusal (any other 4xx) is raised at once as :class:`Refused`; when the attempts run out with the
  outcome unknown, :class:`Unclear` says what to check on the account.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from neuronfleet_contract.capacity_lifecycle import (
    EC2_CONSISTENCY_WINDOW,
    FEE_TAG,
    PLATFORM,
    PURCHASE_TAG,
    ExtensionOffer,
    Offer,
    extension_offer,
    offer,
)
from neuronfleet_contract.tags import FLEET_TAG

from . import reservations

NO_SDK_RETRIES: dict[str, Any] = {"retries": {"total_max_attempts": 1, "mode": "standard"}}
"""botocore ``Config(**NO_SDK_RETRIES)`` for the client that purchases: one attempt per call, the adapter retries."""
THROTTLED = frozenset({"RequestLimitExceeded", "Throttling", "ThrottlingException", "TooManyRequestsException"})
ATTEMPTS = 4
BACKOFF_S = 2.0
MAX_PAGES = 100


WINDOW = EC2_CONSISTENCY_WINDOW.value
SAME_TIME_S = 60
"""Two timestamps EC2 gives for the same moment (an offer's start, a reservation's end) within this many seconds."""


def _now() -> datetime:
    return datetime.now(UTC)


def _sleep(seconds: float) -> None:
    time.sleep(seconds)   # looked up at each call (a test's patch of time.sleep holds)


class Refused(Exception):
    """AWS refused the call (a 4xx other than throttling): nothing was bought."""


class Unclear(Exception):
    """The purchase's outcome is unknown after every attempt: the message says what to look at."""


def _code(error: Exception) -> tuple[str, int]:
    response = getattr(error, "response", None) or {}
    return (str(response.get("Error", {}).get("Code", "")),
            int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0))


def _definite(error: Exception) -> bool:
    """A refusal that certainly bought nothing: a 4xx answer (not throttling), or a request never sent."""
    from botocore.exceptions import ClientError, ParamValidationError

    if isinstance(error, ParamValidationError):
        return True
    if isinstance(error, ClientError):
        code, status = _code(error)
        return code not in THROTTLED and 400 <= status < 500
    return False


def _pages(call: Callable[..., Mapping[str, Any]], key: str, **kwargs: Any) -> Iterator[Mapping[str, Any]]:
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = call(**kwargs)
        yield from page.get(key) or ()
        token = page.get("NextToken")
        if not token:
            return
        if token in seen:
            raise RuntimeError(f"{key}: EC2 answered the same NextToken twice ({token[:20]}...): stopped")
        seen.add(token)
        kwargs["NextToken"] = token
    raise RuntimeError(f"{key}: more than {MAX_PAGES} pages: stopped")


@dataclass(frozen=True)
class Purchase:
    """What a buy or an extension left on the account. ``already``: it was there before this call bought anything."""

    reservations: tuple[Mapping[str, Any], ...] = ()
    extensions: tuple[Mapping[str, Any], ...] = ()
    already: bool = False
    notes: tuple[str, ...] = ()

    @property
    def reservation_ids(self) -> list[str]:
        return [str(r["CapacityReservationId"]) for r in self.reservations]


@dataclass
class CapacityBlocksApi:
    """``ec2``: describes (SDK retries on); ``purchases``: the client that buys (SDK retries off: NO_SDK_RETRIES;
    ``ec2`` when not given); ``groups``: Resource Groups, for UltraServer blocks. ``sleep`` backs off and waits out
    the consistency window."""

    ec2: Any
    purchases: Any = None
    groups: Any = None
    sleep: Callable[[float], None] = _sleep
    log: list[str] = field(default_factory=list)
    clock: Callable[[], datetime] = _now
    """The time (UTC) the consistency window is measured with; tests move it with ``sleep``."""

    def __post_init__(self) -> None:
        if self.purchases is None:
            self.purchases = self.ec2

    # ------------------------------------------------------------------------------------------------ read

    def search(self, *, hours: int, instance_types: Sequence[str] = (), instance_count: int | None = None,
               ultraserver_type: str | None = None, ultraserver_count: int | None = None,
               start_after: datetime | None = None, end_before: datetime | None = None) -> list[Offer]:
        """DescribeCapacityBlockOfferings, every page, as offers (InstanceTypePreferences for several types)."""
        args: dict[str, Any] = {"CapacityDurationHours": hours}
        if len(instance_types) == 1:
            args["InstanceType"] = instance_types[0]
        elif instance_types:
            args["InstanceTypePreferences"] = list(instance_types)
        for key, value in (("InstanceCount", instance_count), ("UltraserverType", ultraserver_type),
                           ("UltraserverCount", ultraserver_count), ("StartDateRange", start_after),
                           ("EndDateRange", end_before)):
            if value is not None:
                args[key] = value
        return [offer(o) for o in _pages(self.ec2.describe_capacity_block_offerings, "CapacityBlockOfferings",
                                          **args)]

    def purchased(self, offering_id: str) -> list[Mapping[str, Any]]:
        """The reservations a purchase of ``offering_id`` made (found by PURCHASE_TAG)."""
        return list(_pages(self.ec2.describe_capacity_reservations, "CapacityReservations",
                           Filters=[{"Name": f"tag:{PURCHASE_TAG}", "Values": [offering_id]}]))

    def reservations(self, ids: Sequence[str]) -> list[Mapping[str, Any]]:
        if not ids:
            return []
        return list(_pages(self.ec2.describe_capacity_reservations, "CapacityReservations",
                           CapacityReservationIds=list(ids)))

    def blocks(self, *, fleet: str | None = None, block_ids: Sequence[str] = ()) -> list[Mapping[str, Any]]:
        """DescribeCapacityBlocks (the fleet's by the fleet tag when ``fleet`` is given)."""
        args: dict[str, Any] = {}
        if block_ids:
            args["CapacityBlockIds"] = list(block_ids)
        if fleet:
            args["Filters"] = [{"Name": f"tag:{FLEET_TAG}", "Values": [fleet]}]
        return list(_pages(self.ec2.describe_capacity_blocks, "CapacityBlocks", **args))

    def status(self, block_ids: Sequence[str]) -> list[Mapping[str, Any]]:
        """DescribeCapacityBlockStatus of the blocks (interconnect health, capacity)."""
        if not block_ids:
            return []
        return list(_pages(self.ec2.describe_capacity_block_status, "CapacityBlockStatuses",
                           CapacityBlockIds=list(block_ids)))

    def extension_offers(self, reservation_id: str, hours: int) -> list[ExtensionOffer]:
        return [extension_offer(o) for o in _pages(
            self.ec2.describe_capacity_block_extension_offerings, "CapacityBlockExtensionOfferings",
            CapacityReservationId=reservation_id, CapacityBlockExtensionDurationHours=hours)]

    def extension_history(self, *reservation_ids: str) -> list[Mapping[str, Any]]:
        """DescribeCapacityBlockExtensionHistory of these reservations (one request, every page): the lifecycle asks
        for one block's, the cost collector for all of its fleet's at once."""
        return list(_pages(self.ec2.describe_capacity_block_extension_history, "CapacityBlockExtensions",
                           CapacityReservationIds=list(reservation_ids)))

    # ------------------------------------------------------------------------------------------------ buy

    def buy(self, o: Offer, *, fleet: str, tags: Mapping[str, str] | None = None) -> Purchase:
        """Buy ``o`` once, tagged with the fleet and the offering (TagSpecifications on its capacity reservations)."""
        all_tags = {**(tags or {}), FLEET_TAG: fleet, PURCHASE_TAG: o.offering_id, FEE_TAG: str(o.upfront_fee)}
        request = {"CapacityBlockOfferingId": o.offering_id, "InstancePlatform": PLATFORM,
                   "TagSpecifications": [{"ResourceType": "capacity-reservation",
                                          "Tags": [{"Key": k, "Value": v} for k, v in sorted(all_tags.items())]}]}

        def found() -> Purchase | None:
            held = self.purchased(o.offering_id)
            return Purchase(reservations=tuple(held), already=True) if held else None

        def call() -> Purchase:
            answer = self.purchases.purchase_capacity_block(**request)
            return Purchase(reservations=tuple(answer.get("CapacityReservations") or
                                               [answer["CapacityReservation"]]))

        return self._once(f"offering {o.offering_id}", found, call, check=(
            f"aws ec2 describe-capacity-reservations --filters Name=tag:{PURCHASE_TAG},Values={o.offering_id}"))

    def extend(self, reservation_id: str, x: ExtensionOffer, *, earlier: datetime | None = None,
               patience: timedelta = WINDOW, on_attempt: Callable[[datetime], None] | None = None) -> Purchase:
        """Buy extension ``x`` of ``reservation_id`` once: not when any source shows it, or another extension from
        the same end, bought (:meth:`extension_found`), and never a second time inside the consistency window of an
        attempt whose answer was lost (this call's, or ``earlier``: a previous run's). ``patience``: how long this
        call may wait for the window; ``on_attempt(now)`` runs just before each purchase request (a failure stops
        the purchase)."""

        def call() -> Purchase:
            answer = self.purchases.purchase_capacity_block_extension(
                CapacityBlockExtensionOfferingId=x.offering_id, CapacityReservationId=reservation_id)
            return Purchase(extensions=tuple(answer.get("CapacityBlockExtensions") or ()))

        return self._once(f"extension {x.offering_id} of {reservation_id}", lambda: self.extension_found(
            reservation_id, x), call, check=(
            f"aws ec2 describe-capacity-block-extension-history --capacity-reservation-ids {reservation_id}; aws ec2 "
            f"describe-capacity-reservations --capacity-reservation-ids {reservation_id} (EndDate)"),
            earlier=earlier, patience=patience, on_attempt=on_attempt)

    def extension_found(self, reservation_id: str, x: ExtensionOffer) -> Purchase | None:
        """What shows that ``x`` (or another extension from the end it extends, ``x.start``) was bought, from every
        source EC2 offers (EXTENSION_MOVES_END): the extension history (payment-pending or payment-succeeded: a
        failed payment bought nothing), the reservation's EndDate, the block's EndDate. None when none does."""
        mine = [e for e in self.extension_history(reservation_id)
                if e.get("CapacityBlockExtensionStatus") in ("payment-pending", "payment-succeeded")
                and (e.get("CapacityBlockExtensionOfferingId") == x.offering_id
                     or _same_time(e.get("CapacityBlockExtensionStartDate"), x.start))]
        if mine:
            return Purchase(extensions=tuple(mine), already=True, notes=("in the block's extension history",))
        held = self.reservations([reservation_id])
        moved = [r for r in held if _later(r.get("EndDate"), x.start)]
        if moved:
            return Purchase(reservations=tuple(moved), already=True, notes=(
                f"the reservation's end moved to {moved[0]['EndDate']} (was {x.start.isoformat()})",))
        block_ids = sorted({str(r["CapacityBlockId"]) for r in held if r.get("CapacityBlockId")})
        ended = [b for b in self.blocks(block_ids=block_ids) if _later(b.get("EndDate"), x.start)] if block_ids \
            else []
        if ended:
            return Purchase(reservations=tuple(held), already=True, notes=(
                f"the block's end moved to {ended[0]['EndDate']} (was {x.start.isoformat()})",))
        return None

    def _confirmed(self, what: str, found: Callable[[], Purchase | None], unclear_at: datetime | None,
                   patience: timedelta, *, check: str) -> Purchase | None:
        """``found()`` once; after an attempt whose answer was lost (at ``unclear_at``), again with backoff until it
        finds the purchase or a read starting after the consistency window says it is not there (then None: a
        second attempt may be made). :class:`Unclear` when that would take longer than ``patience``."""
        waited, pause = 0.0, BACKOFF_S
        while True:
            settled = unclear_at is None or self.clock() >= unclear_at + WINDOW
            held = found()
            if held is not None or settled:
                return held
            assert unclear_at is not None
            step = min(pause, max((unclear_at + WINDOW - self.clock()).total_seconds(), 0.001))
            if waited + step > patience.total_seconds():
                raise Unclear(
                    f"{what}: the answer to an attempt at {unclear_at.isoformat()} was lost and nothing shows it yet; "
                    f"EC2's describes may lag a purchase by up to {int(WINDOW.total_seconds() // 60)} min "
                    f"(EC2_CONSISTENCY_WINDOW, unconfirmed), so no second attempt before "
                    f"{(unclear_at + WINDOW).isoformat()}. Check: {check}")
            self.sleep(step)
            waited, pause = waited + step, pause * 2

    def _once(self, what: str, found: Callable[[], Purchase | None], call: Callable[[], Purchase], *,
              check: str, earlier: datetime | None = None, patience: timedelta = WINDOW,
              on_attempt: Callable[[datetime], None] | None = None) -> Purchase:
        unclear: list[str] = []
        unclear_at = earlier
        for attempt in range(ATTEMPTS):
            held = self._confirmed(what, found, unclear_at, patience, check=check)
            if held is not None:
                notes = (f"{what}: found after an unclear answer ({'; '.join(unclear)}): bought once",) if unclear \
                    else ()
                return Purchase(held.reservations, held.extensions, already=not unclear, notes=held.notes + notes)
            if on_attempt is not None:
                on_attempt(self.clock())
            try:
                return call()
            except Exception as e:
                if _definite(e):
                    raise Refused(f"{what}: {e}") from e
                code, _ = _code(e)
                if code in THROTTLED:   # refused before it was processed: nothing to wait for but the backoff
                    self.log.append(f"{what}: attempt {attempt + 1} throttled ({code}); backing off")
                    self.sleep(BACKOFF_S * 2 ** attempt)
                    continue
                unclear.append(f"{type(e).__name__}: {e}")
                unclear_at = self.clock()
                self.log.append(f"{what}: attempt {attempt + 1} did not answer clearly ({e}); looking before retrying")
        held = self._confirmed(what, found, unclear_at, patience, check=check)
        if held is not None:
            return Purchase(held.reservations, held.extensions, already=False,
                            notes=(*held.notes, f"{what}: found after {ATTEMPTS} unclear attempts"))
        raise Unclear(f"{what}: no clear answer after {ATTEMPTS} attempts ({'; '.join(unclear) or 'throttled'}); "
                      f"nothing found yet. Check before buying again: {check}")

    # ------------------------------------------------------------------------------------------------ group

    def add_to_group(self, group: str, reservation_arns: Sequence[str]) -> list[str]:
        """Add the reservations to the capacity-reservation resource group (GroupResources), those not in it yet.
        Returns problems (empty when all are in, or pending); never raises for a resource AWS failed to add."""
        if self.groups is None:
            raise ValueError("add_to_group needs a Resource Groups client")
        held = reservations.group_members(self.groups, [group])
        todo = [a for a in reservation_arns if a.rsplit("/", 1)[-1] not in held]
        if not todo:
            return []
        answer = self.groups.group_resources(Group=group, ResourceArns=todo)
        return [f"{f.get('ResourceArn', '?')}: {f.get('ErrorCode', '')} {f.get('ErrorMessage', '')}".strip()
                for f in answer.get("Failed") or ()]


def _utc(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _same_time(value: Any, when: datetime) -> bool:
    v = _utc(value)
    return v is not None and abs((v - when).total_seconds()) < SAME_TIME_S


def _later(value: Any, when: datetime) -> bool:
    """EC2's timestamp ``value`` is later than ``when`` (by more than SAME_TIME_S)."""
    v = _utc(value)
    return v is not None and (v - when).total_seconds() >= SAME_TIME_S
