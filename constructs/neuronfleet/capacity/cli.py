"""``neuronfleet capacity search|buy|extend|status|list``: EC2 Capacity Blocks for a fleet file's training clusters,
with the user's AWS credentials (boto3's usual chain), bought only within the fleet file's ``capacity_policy``.

No aws-cdk-lib here. The rules and facts live in :mod:`neuronfleet_contract.capacity_lifecycle`; the EC2 calls (and
the idempotent purchase) in :mod:`neuronfleet_runtime.capacity_block_calls`, shared with the lifecycle function.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from neuronfleet_contract.capacity_lifecycle import (
    SORT_KEYS,
    BlockEnd,
    CapacityPolicy,
    ExtensionOffer,
    Offer,
    duration_refusal,
    extension_history,
    extension_refusals,
    offer_refusals,
    sort_offers,
)
from neuronfleet_contract.tags import FLEET_TAG

from ..cli.output import FINDINGS, OK, BadInput, Moment, emit, json_option, progress
from ..core.problems import MISSING
from ..facts.catalog import capacity_blocks

if TYPE_CHECKING:  # annotations only: the fleet file's pydantic models are built when a command reads one
    from ..fleetfile.schema import Fleet


def load_fleet(path: Path) -> Fleet:
    """:func:`neuronfleet.fleetfile.schema.load_fleet`, imported when a command reads its fleet file (not for
    ``--help``)."""
    from ..fleetfile.schema import load_fleet as load

    return load(path)


def clients(region: str) -> tuple[Any, Any, Any]:
    """(EC2 for describes, EC2 for purchases with SDK retries off, Resource Groups) in ``region``. Tests replace it."""
    try:
        import boto3
    except ImportError:
        raise BadInput.of("boto3", MISSING, "installed (pip install boto3): `neuronfleet capacity` calls EC2 with "
                                            "your AWS credentials") from None
    from botocore.config import Config
    from neuronfleet_runtime.capacity_block_calls import NO_SDK_RETRIES

    session = boto3.Session(region_name=region)
    return (session.client("ec2"), session.client("ec2", config=Config(**NO_SDK_RETRIES)),
            session.client("resource-groups"))


def _api(fleet: Fleet) -> Any:
    import time

    from neuronfleet_runtime.capacity_block_calls import CapacityBlocksApi

    def wait(seconds: float) -> None:   # a purchase whose answer was lost is looked for again, for up to 5 minutes
        progress(f"waiting {seconds:.0f} s, then looking again for what the purchase made (EC2 may take minutes to "
                 "show it; it is never bought twice)...")
        time.sleep(seconds)

    ec2, purchases, groups = clients(fleet.region)
    return CapacityBlocksApi(ec2, purchases=purchases, groups=groups, sleep=wait)


def identity_clients(region: str) -> tuple[Any, Any]:
    """(STS, IAM) with the same credentials as :func:`clients`. Tests replace it."""
    import boto3

    session = boto3.Session(region_name=region)
    return session.client("sts"), session.client("iam")


@dataclass(frozen=True)
class Identity:
    """Whose money a purchase spends: the credentials' account and principal, the account's alias, the region."""

    account: str
    arn: str
    alias: str
    region: str

    def lines(self) -> list[str]:
        return [f"  account: {self.account} (alias: {self.alias})", f"  as:      {self.arn}",
                f"  region:  {self.region}"]


def identity(fleet: Fleet) -> Identity:
    """STS GetCallerIdentity and IAM ListAccountAliases (an account has at most one alias; none, or a denied read,
    is said as such: the purchase does not depend on it). The credentials must be the fleet file's account: a
    purchase made with another account's credentials is refused before anything is asked."""
    from botocore.exceptions import BotoCoreError, ClientError

    sts, iam = identity_clients(fleet.region)
    who = sts.get_caller_identity()
    try:
        aliases = iam.list_account_aliases().get("AccountAliases") or []
        alias = aliases[0] if aliases else "none set"
    except (ClientError, BotoCoreError) as e:
        code = getattr(e, "response", {}).get("Error", {}).get("Code", type(e).__name__)
        alias = f"unknown: iam:ListAccountAliases refused ({code})"
    found = Identity(account=str(who["Account"]), arn=str(who["Arn"]), alias=alias, region=fleet.region)
    if fleet.account and found.account != fleet.account:
        raise BadInput.of("AWS credentials", f"account {found.account}",
                          f"credentials of the fleet file's account {fleet.account} (these are {found.arn}): the "
                          "purchase would be billed to the wrong account", what="neuronfleet capacity")
    return found


def confirm_purchase(what: str, price: Decimal, currency: str, who: Identity, *, yes: bool,
                     max_usd: Decimal | None) -> str | None:
    """Show whose money buys ``what`` and for how much, then ask for the account id or the exact price to be typed
    back. With ``yes``: no question, but ``max_usd`` is required and the price must not exceed it. Returns None to
    buy, else why not."""
    total = f"{_money(price)} {currency or 'USD'}"
    click.echo("\n".join([f"{what}", *who.lines(), f"  total:   {total}, paid up front, no refund"]), err=True)
    if yes:
        assert max_usd is not None  # checked with the options
        if price > max_usd:
            return f"the price {total} exceeds --max-usd {_money(max_usd)}"
        return None
    typed = click.prompt(f"Type the account id ({who.account}) or the exact price ({price}) to buy", default="",
                         show_default=False, err=True).strip()
    if typed in (who.account, str(price), f"{price:.2f}", _money(price)):
        return None
    return f"not confirmed (typed {typed!r}; expected {who.account} or {price})"


def _yes_needs_max_usd(yes: bool, max_usd: Decimal | None) -> None:
    if yes and max_usd is None:
        raise BadInput.of("--yes", "without --max-usd", "--yes together with --max-usd AMOUNT (the most this purchase "
                          "may cost, USD): automation never buys without a ceiling", what="neuronfleet capacity")


@dataclass(frozen=True)
class Target:
    """What to search for: one training cluster of the fleet file, or an instance type."""

    instance_type: str
    instance_count: int | None
    ultraserver_type: str | None
    ultraserver_count: int | None
    group_arn: str | None
    cluster: str | None


def _target(fleet: Fleet, cluster: str | None, instance_type: str | None, count: int | None) -> Target:
    if cluster:
        found = {c.name: c for c in fleet.training_clusters}
        if cluster not in found:
            raise BadInput.of("--cluster", cluster, "one of the fleet file's training_clusters: "
                              + (", ".join(found) or "(none)"))
        c = found[cluster]
        instance_type, count = c.instance_type, count or c.count
        group = c.capacity.resource_group_arn
    elif instance_type:
        group = None
        count = count or 1
    else:
        raise BadInput.of("--cluster", MISSING, "a training cluster of the fleet file, or --instance-type")
    sold = capacity_blocks()
    if not sold.sold_for(instance_type):
        raise BadInput.of("instance type", instance_type, "a type Capacity Blocks sell: " + ", ".join(sold.types()))
    ultra = sold.ultraserver_types.get(instance_type)
    if ultra:
        (utype, size), = list(ultra.items())[:1]
        if count % size:
            raise BadInput.of("--count", count, f"a multiple of {size} ({instance_type} comes in UltraServers of "
                                                f"{size} instances, {utype})")
        return Target(instance_type, None, utype, count // size, group, cluster)
    return Target(instance_type, count, None, None, group, cluster)


def _policy(fleet: Fleet, *, required: bool) -> CapacityPolicy | None:
    if fleet.capacity_policy is None:
        if required:
            raise BadInput.of("capacity_policy", MISSING, "a capacity_policy section in the fleet file (at least "
                              "max_upfront_fee_usd and max_usd_per_instance_hour): the kit buys nothing without one",
                              what="fleet file")
        return None
    return fleet.capacity_policy.policy(training_azs=[fleet.network.training_az])


def _when(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _t(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def _money(value: Any) -> str:
    return f"${float(value):,.2f}"


def offers_table(offers: Sequence[Offer], policy: CapacityPolicy | None, now: datetime) -> str:
    """Offers as a table for a terminal (one line per offer, the policy's verdict last)."""
    head = ("OFFERING", "INSTANCE TYPE", "AZ", "START (UTC)", "HOURS", "INSTANCES", "ULTRASERVERS", "UPFRONT FEE",
            "$/INSTANCE-H", "POLICY")
    rows = [head]
    for o in offers:
        verdict = "no policy" if policy is None else (
            ", ".join(r.rule for r in offer_refusals(o, policy, now=now)) or "ok")
        rows.append((o.offering_id, o.instance_type, ",".join(o.availability_zones), _t(o.start), f"{o.hours:g}",
                     str(o.instance_count), f"{o.ultraserver_count} x {o.ultraserver_type}" if o.ultraserver else "-",
                     _money(o.upfront_fee), f"{o.usd_per_instance_hour:.2f}", verdict))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    right = {4, 5, 7, 8}
    lines = ["  ".join(cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in enumerate(zip(r, widths,
                                                                                                     strict=True)))
             .rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _offer_json(o: Offer, policy: CapacityPolicy | None, now: datetime) -> dict[str, Any]:
    return {"offering_id": o.offering_id, "instance_type": o.instance_type, "availability_zones":
            list(o.availability_zones), "start": o.start.isoformat(), "end": o.end.isoformat(), "hours": float(o.hours),
            "instance_count": o.instance_count, "ultraserver_type": o.ultraserver_type,
            "ultraserver_count": o.ultraserver_count, "upfront_fee_usd": str(o.upfront_fee),
            "usd_per_instance_hour": str(o.usd_per_instance_hour), "segments": len(o.segments),
            "refusals": None if policy is None else [str(r) for r in offer_refusals(o, policy, now=now)]}


def now() -> datetime:
    """The clock (tests replace it)."""
    return datetime.now(UTC)


_config = click.option("-c", "--config", "config", required=True, type=click.Path(path_type=Path, dir_okay=False),
                       help="The fleet file (YAML), e.g. config/prod.yaml.")


def _search_options(f: Any) -> Any:
    for option in reversed([
        click.option("--cluster", help="A training cluster of the fleet file: its instance type and count."),
        click.option("--instance-type", help="Instead of --cluster: an instance type Capacity Blocks sell."),
        click.option("--count", type=click.IntRange(min=1), help="Instances (default: the cluster's count; "
                                                                  "UltraServer types: a multiple of 4)."),
        click.option("--hours", type=int, required=True, help="Duration: whole days (24..336), then whole weeks "
                                                               "(up to 4368)."),
        click.option("--start-after", type=Moment(), help="Earliest start, ISO 8601 (a zone, or UTC when none "
                                                          "is given), e.g. 2026-12-01T00:00 or 2026-12-01."),
        click.option("--end-before", type=Moment(), help="Latest end, ISO 8601 (no zone: UTC), e.g. "
                                                         "2026-12-08T00:00+01:00."),
    ]):
        f = option(f)
    return f


def _search(fleet: Fleet, target: Target, hours: int, start_after: datetime | None,
            end_before: datetime | None) -> list[Offer]:
    refusal = duration_refusal(hours, what="--hours")
    if refusal:
        raise BadInput.of("--hours", hours, refusal.limit)
    progress(f"searching Capacity Block offerings in {fleet.region} ({target.instance_type}, {hours} h)...")
    found: list[Offer] = _api(fleet).search(
        hours=hours, instance_types=[target.instance_type], instance_count=target.instance_count,
        ultraserver_type=target.ultraserver_type, ultraserver_count=target.ultraserver_count,
        start_after=_when(start_after), end_before=_when(end_before))
    return found


def _purchase_options(f: Any) -> Any:
    f = click.option("--max-usd", type=click.FloatRange(min=0), default=None,
                     help="The most this purchase may cost (USD, its whole upfront fee); required with --yes, which "
                          "refuses a higher price.")(f)
    f = click.option("--yes", is_flag=True, help="Do not ask (automation); needs --max-usd.")(f)

    import functools

    @functools.wraps(f)
    def exact(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("max_usd") is not None:
            kwargs["max_usd"] = Decimal(str(kwargs["max_usd"]))
        return f(*args, **kwargs)
    return exact


def _aws_errors(f: Any) -> Any:
    """AWS's refusals and unclear outcomes as one line and exit 1 (never a traceback): what AWS said, and what to
    check when a purchase's outcome is unknown."""
    import functools

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError
        from neuronfleet_runtime.capacity_block_calls import Refused, Unclear

        try:
            return f(*args, **kwargs)
        except (Refused, Unclear, ClientError, BotoCoreError) as e:
            click.echo(f"neuronfleet capacity: AWS: {e}", err=True)
            return FINDINGS
    return run


@click.group(short_help="EC2 Capacity Blocks: search, buy, extend, status, list.",
             help="EC2 Capacity Blocks for ML for a fleet file's training clusters, with your AWS credentials. "
                  "`buy` and `extend` spend money (paid up front, no refund): they refuse what the fleet file's "
                  "capacity_policy does not allow, show the account, its alias, the region and the total price, and "
                  "ask for the account id or the price to be typed back (--yes with --max-usd for automation).")
def capacity() -> None:
    """The ``capacity`` group."""


@capacity.command(help="Offerings for a cluster (or instance type), as a table; the policy's verdict on each.")
@_config
@_search_options
@click.option("--sort", type=click.Choice(sorted(SORT_KEYS)), default="price", show_default=True,
              help="price: per instance-hour; fee: upfront; start; duration (longest first); az; count.")
@json_option
@_aws_errors
def search(config: Path, cluster: str | None, instance_type: str | None, count: int | None, hours: int,
           start_after: datetime | None, end_before: datetime | None, sort: str, as_json: bool) -> int:
    fleet = load_fleet(config)
    target = _target(fleet, cluster, instance_type, count)
    policy = _policy(fleet, required=False)
    at = now()
    offers = sort_offers(_search(fleet, target, hours, start_after, end_before), sort)
    text = offers_table(offers, policy, at) if offers else "no offering matches"
    if offers and policy is not None:
        text += ("\nPOLICY: ok = within the fleet file's capacity_policy; else the rules it breaks (`buy --offering ID` "
                 "names the offer's value and the limit)")
    if policy is None:
        text += "\n(no capacity_policy in the fleet file: `buy` would refuse every offer)"
    emit({"offers": [_offer_json(o, policy, at) for o in offers]}, text, as_json=as_json)
    return OK


@capacity.command(help="Buy one offering (found again by the same search), tagged with the fleet; UltraServer blocks "
                       "join the cluster's capacity-reservation resource group. A retry never buys twice.")
@_config
@_search_options
@click.option("--offering", required=True, help="The offering id (from `search`).")
@_purchase_options
@json_option
@_aws_errors
def buy(config: Path, cluster: str | None, instance_type: str | None, count: int | None, hours: int,
        start_after: datetime | None, end_before: datetime | None, offering: str, yes: bool,
        max_usd: Decimal | None, as_json: bool) -> int:
    _yes_needs_max_usd(yes, max_usd)
    fleet = load_fleet(config)
    target = _target(fleet, cluster, instance_type, count)
    policy = _policy(fleet, required=True)
    assert policy is not None
    at = now()
    offers = {o.offering_id: o for o in _search(fleet, target, hours, start_after, end_before)}
    if offering not in offers:
        raise BadInput.of("--offering", offering, "an offering the same search returns now: "
                          + (", ".join(offers) or "(none)"))
    o = offers[offering]
    refusals = offer_refusals(o, policy, now=at)
    if refusals:
        emit({"bought": False, "refusals": [str(r) for r in refusals]},
             f"refused by the fleet's capacity_policy ({config}):\n" + "\n".join(f"  - {r}" for r in refusals),
             as_json=as_json)
        return FINDINGS
    say = (f"Buy Capacity Block {o.offering_id}: {o.instance_count} x {o.instance_type}"
           + (f" ({o.ultraserver_count} x {o.ultraserver_type})" if o.ultraserver else "")
           + f" in {','.join(o.availability_zones)}, {_t(o.start)} to {_t(o.end)} UTC")
    why_not = confirm_purchase(say, o.upfront_fee, o.currency, identity(fleet), yes=yes, max_usd=max_usd)
    if why_not:
        emit({"bought": False, "reason": why_not}, f"not bought: {why_not}", as_json=as_json)
        return FINDINGS if yes else OK
    api = _api(fleet)
    bought = api.buy(o, fleet=fleet.name)
    lines = [("already bought (found by its tag): " if bought.already else "bought: ") + ", ".join(
        bought.reservation_ids), *bought.notes]
    problems: list[str] = []
    if target.group_arn:  # the cluster targets a capacity-reservation group: UltraServer blocks, or several blocks
        arns = [str(r["CapacityReservationArn"]) for r in bought.reservations if r.get("CapacityReservationArn")]
        problems = api.add_to_group(target.group_arn, arns)
        lines.append(f"in resource group {target.group_arn}" if not problems else
                     "NOT all added to the resource group: " + "; ".join(problems))
    elif o.ultraserver:
        problems = ["the cluster names no resource_group_arn: the next deploy does not target these blocks"]
        lines.append(problems[0])
    elif target.cluster:
        lines.append("the next deploy targets it once the cluster's capacity names it "
                     f"(reservation_id: {bought.reservation_ids[0]}) or a resource group holding it"
                     if bought.reservation_ids else "")
    emit({"bought": True, "already": bought.already, "reservation_ids": bought.reservation_ids,
          "problems": problems, "notes": list(bought.notes)}, "\n".join(x for x in lines if x), as_json=as_json)
    return FINDINGS if problems else OK


@capacity.command(help="Extend a block of the fleet (cheapest extension offer the policy allows, or --offering). "
                       "A retry never buys twice (the block's extension history is read first).")
@_config
@click.option("--reservation", required=True, help="The block's capacity reservation id (cr-...).")
@click.option("--hours", type=int, default=None, help="Extension length (default: the policy's extension_hours).")
@click.option("--offering", help="An extension offering id (default: the cheapest allowed).")
@click.option("--any-reservation", is_flag=True,
              help="Allow a reservation that is not the fleet's (neither tagged neuronfleet:fleet with it nor named "
                   "in the fleet file).")
@_purchase_options
@json_option
@_aws_errors
def extend(config: Path, reservation: str, hours: int | None, offering: str | None, any_reservation: bool, yes: bool,
           max_usd: Decimal | None, as_json: bool) -> int:
    _yes_needs_max_usd(yes, max_usd)
    fleet = load_fleet(config)
    policy = _policy(fleet, required=True)
    assert policy is not None
    hours = hours or policy.extension_hours
    refusal = duration_refusal(hours, what="--hours")
    if refusal:
        raise BadInput.of("--hours", hours, refusal.limit)
    api = _api(fleet)
    held = api.reservations([reservation])
    if not held or held[0].get("ReservationType") != "capacity-block":
        raise BadInput.of("--reservation", reservation, "a Capacity Block reservation of this account and region")
    r = held[0]
    owner = next((str(t.get("Value")) for t in r.get("Tags") or () if t.get("Key") == FLEET_TAG), "")
    named = {c.capacity.reservation_id for c in fleet.training_clusters if c.capacity.reservation_id}
    if owner != fleet.name and reservation not in named and not any_reservation:
        raise BadInput.of("--reservation", reservation, f"a reservation of fleet {fleet.name}: tagged {FLEET_TAG}="
                          f"{fleet.name} (its tag: {owner or 'none'}) or named in the fleet file (reservation_id: "
                          f"{', '.join(sorted(named)) or 'none'}); --any-reservation to extend another",
                          what="neuronfleet capacity extend")
    past = extension_history(api.extension_history(reservation))
    block = BlockEnd(reservation, _when(r["StartDate"]) or now(), _when(r["EndDate"]) or now(), str(r["State"]),
                     past.pending, past.spent_usd)
    at = now()
    offers: list[ExtensionOffer] = api.extension_offers(reservation, hours)
    verdicts = {x.offering_id: extension_refusals(x, block, policy, now=at) for x in offers}
    allowed = sorted((x for x in offers if not verdicts[x.offering_id]), key=lambda x: x.upfront_fee)
    pick = next((x for x in offers if x.offering_id == offering), None) if offering else (allowed[0] if allowed
                                                                                          else None)
    if pick is None or verdicts[pick.offering_id]:
        reasons = [str(r) for r in (verdicts.get(pick.offering_id, []) if pick else
                                    [r for v in verdicts.values() for r in v])]
        text = (f"no extension of {reservation} bought ({len(offers)} offer(s)):\n"
                + "\n".join(f"  - {x}" for x in reasons or ["no offer"]))
        emit({"extended": False, "refusals": reasons}, text, as_json=as_json)
        return FINDINGS
    say = (f"Extend {reservation} ({owner or 'not the fleet' + chr(39) + 's'}) by extension {pick.offering_id}: "
           f"{pick.hours:g} h to {_t(pick.end)} UTC")
    why_not = confirm_purchase(say, pick.upfront_fee, pick.currency, identity(fleet), yes=yes, max_usd=max_usd)
    if why_not:
        emit({"extended": False, "reason": why_not}, f"not extended: {why_not}", as_json=as_json)
        return FINDINGS if yes else OK
    done = api.extend(reservation, pick)
    emit({"extended": True, "already": done.already, "offering_id": pick.offering_id},
         ("already extended (in its history): " if done.already else "extension bought: ") + pick.offering_id
         + f" ({_money(pick.upfront_fee)}; payment-pending until paid, fails 35 min before the old end if unpaid)",
         as_json=as_json)
    return OK


def _fleet_blocks(fleet: Fleet) -> tuple[Any, list[Any]]:
    """The fleet's blocks: tagged with the fleet (bought by `buy`), and those holding a reservation its training
    clusters name (reservation_id, or a member of resource_group_arn: bought in the console and pasted in)."""
    from neuronfleet_runtime import reservations

    api = _api(fleet)
    found = {b["CapacityBlockId"]: b for b in api.blocks(fleet=fleet.name)}
    ids = {c.capacity.reservation_id for c in fleet.training_clusters if c.capacity.reservation_id}
    groups = sorted({c.capacity.resource_group_arn for c in fleet.training_clusters if c.capacity.resource_group_arn})
    if groups:
        ids |= reservations.group_members(api.groups, groups)
    named = {str(r["CapacityBlockId"]) for r in api.reservations(sorted(ids)) if r.get("CapacityBlockId")}
    if named - set(found):
        found |= {b["CapacityBlockId"]: b for b in api.blocks(block_ids=sorted(named - set(found)))}
    return api, sorted(found.values(), key=lambda b: (str(b.get("StartDate")), b["CapacityBlockId"]))


@capacity.command(name="list", help="The fleet's Capacity Blocks (tagged with the fleet), when they end and stop.")
@_config
@json_option
@_aws_errors
def list_(config: Path, as_json: bool) -> int:
    from neuronfleet_contract.capacity_alert import TERMINATION

    fleet = load_fleet(config)
    _, blocks = _fleet_blocks(fleet)
    rows = [("BLOCK", "STATE", "AZ", "START (UTC)", "END (UTC)", "INSTANCES STOP", "ULTRASERVER", "RESERVATIONS")]
    for b in blocks:
        kind = "ultraserver" if b.get("UltraserverType") else "instances"
        end = _when(b["EndDate"]) or now()
        rows.append((str(b["CapacityBlockId"]), str(b.get("State", "")), str(b.get("AvailabilityZone", "")),
                     _t(_when(b["StartDate"]) or end), _t(end), _t(end - TERMINATION[kind].lead),
                     str(b.get("UltraserverType") or "-"), ",".join(b.get("CapacityReservationIds", []))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    text = "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)
    emit({"blocks": [{k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in b.items()} for b in blocks]},
         text if blocks else f"no Capacity Block tagged with fleet {fleet.name}", as_json=as_json)
    return OK


@capacity.command(help="Interconnect health and capacity of the fleet's blocks (DescribeCapacityBlockStatus); exit 1 "
                       "when an interconnect is impaired.")
@_config
@json_option
@_aws_errors
def status(config: Path, as_json: bool) -> int:
    fleet = load_fleet(config)
    api, blocks = _fleet_blocks(fleet)
    found = api.status([b["CapacityBlockId"] for b in blocks])
    lines = [f"{s['CapacityBlockId']}: interconnect {s.get('InterconnectStatus', '?')}, "
             f"{s.get('TotalAvailableCapacity', '?')} of {s.get('TotalCapacity', '?')} available, "
             f"{s.get('TotalUnavailableCapacity', 0)} unavailable" for s in found]
    impaired = [s for s in found if s.get("InterconnectStatus") == "impaired"]
    emit({"statuses": found}, "\n".join(lines) or f"no Capacity Block tagged with fleet {fleet.name}",
         as_json=as_json)
    return FINDINGS if impaired else OK

