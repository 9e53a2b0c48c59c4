"""Asynchronous endpoints in the money: their spend by model, the hours they spent at zero instances (zero cost), what
scaling to zero saved against an always-on endpoint, and which workloads of an export are bursty enough to suggest
asynchronous inference or batch. Pure: no AWS calls.

**Async spend is read from the usage type.** SageMaker bills asynchronous inference hosting under its own usage type,
``<region>-AsyncInf:ml.<type>`` (real-time hosting: ``Host:``), so a ledger row is an asynchronous endpoint's
whatever the endpoint's configuration says. Sources, read 2026-11-29: AWS Billing user guide, "Tracking your AWS Free
Tier usage" (https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/tracking-free-tier-usage.html), lists the
SageMaker usage type ``AsyncInf:ml.m.xlarge-AsyncInfParent``: the ``AsyncInf:`` prefix is AWS's; public notes quoting
the AmazonSageMaker Price List offer file give ``USE1-AsyncInf:ml.g6e.2xlarge`` and ``AsyncInf:ml.g6.xlarge``
(eu-west-3). No AWS source read shows an ``AsyncInf:ml.inf2.*`` or ``ml.trn1.*`` row: unconfirmed, checked on a real
account by ``neuronfleet verify``'s manual check ``async-usage-type`` (docs/checks.md). If the usage type differs,
the endpoint's spend is still counted as SageMaker hosting (rows.py) but not as asynchronous here.

**Saved by scaling to zero** (one figure per endpoint): an always-on endpoint runs at least one instance every hour of
the recorded days; its cost is those hours at the rate the endpoint was billed (its spend / its instance-hours, both
from the ledger). Saved = that cost - what it was billed. The rate is the endpoint's own billed asynchronous rate: a
real-time endpoint's ``Host:`` rate of the same type is not read (the offer-file quotes above give both the same
price for g6e.2xlarge; not confirmed for Neuron types).

**Only since the endpoint existed**: the always-on comparison covers the recorded days on or after the endpoint's
creation (DescribeEndpoint ``CreationTime``, the model's ``created``), and on its creation day only the hours after
it; an endpoint created partway through the period is never counted at zero instances before it existed. Its creation
time not read: the line says so and claims no saving; created after the last recorded day: no saving either.

**Hours at zero cost**: on a day with ``h`` instance-hours, instances ran at most ``h`` of its 24 hours, so at least
``24 - h`` hours had none (a lower bound: two instances at once leave more idle time than that). A recorded day with
no row is 24 idle hours.

**Bursty** (:func:`shape`), from an export's own fields only (each row's day, Cost Explorer's ``TimePeriod.Start`` or
CUR's ``line_item_usage_start_date``, and its usage hours, ``UsageQuantity``/``line_item_usage_amount``): over the
export's days, a workload's *duty* is its instance-hours over what its busiest day's instances would run all period
(``days x 24 x ceil(peak day's hours / 24)``). Bursty when the duty is below :data:`BURSTY_DUTY` (sized for its peak,
it would sit idle most of the time) over at least :data:`MIN_DAYS` days; an export of fewer days (a monthly export:
one period) cannot tell. A real-time endpoint bills every hour whatever its traffic, so its rows are never bursty by
this measure: burstiness shows in instances and jobs that come and go, the work asynchronous inference (scale to zero)
and batch transform (a job per run) fit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, time
from decimal import Decimal
from typing import Any

from neuronfleet_contract.cost import EndpointModel

from .economics import show
from .rows import CostRow

ASYNC_USAGE = "AsyncInf:"
"""The usage-type infix of SageMaker asynchronous inference hosting (sources above)."""
HOURS_PER_DAY = Decimal(24)
BURSTY_DUTY = Decimal("0.5")
"""Below this share of its peak capacity's hours a workload is bursty."""
MIN_DAYS = 7
"""The fewest days an export must cover to judge a workload's shape (a week: weekday/weekend swings included)."""
CHECK_ID = "async-usage-type"
"""verify's manual check of the usage type (docs/checks.md)."""


def is_async(row: CostRow) -> bool:
    """Whether a ledger row is asynchronous inference hosting, by its billed usage type (``USE2-AsyncInf:ml...``)."""
    ut = row.usage_type
    return ut.startswith(ASYNC_USAGE) or f"-{ASYNC_USAGE}" in ut


def async_spend(rows: Iterable[CostRow], models: Sequence[EndpointModel], days: Sequence[str]) -> list[dict[str, Any]]:
    """Per asynchronous endpoint (its Neuron type carries ``AsyncInf:`` rows that exactly one endpoint of ``models``
    serves on): its spend and instance-hours over ``days`` (the recorded days), the hours it spent at zero instances
    (at least), and what scaling to zero saved against the same endpoint always on (one instance every hour, at its own
    billed rate). A type two endpoints share is left out (no per-endpoint figure exists), as attribute_hosting does."""
    owners: dict[str, list[EndpointModel]] = {}
    for m in models:
        for t in m.neuron_types:
            owners.setdefault(t, []).append(m)
    recorded = sorted(set(days))
    per: dict[tuple[str, str], dict[str, Decimal]] = {}
    spend: dict[tuple[str, str], dict[str, Decimal]] = {}
    for r in rows:
        if r.usage != "sagemaker-hosting" or not is_async(r) or len(owners.get(r.instance_type, [])) != 1:
            continue
        (m,) = owners[r.instance_type]
        key = (m.endpoint, r.instance_type)
        got = per.setdefault(key, {})
        got[r.day] = got.get(r.day, Decimal(0)) + r.usage_hours
        paid = spend.setdefault(key, {})
        paid[r.day] = paid.get(r.day, Decimal(0)) + r.amount
    out = []
    by_endpoint = {m.endpoint: m for m in models}
    for (endpoint, instance_type), got in sorted(per.items()):
        m = by_endpoint[endpoint]
        out.append(_entry(m, instance_type, got, spend[(endpoint, instance_type)], recorded))
    return out


def created_at(model: EndpointModel) -> datetime | None:
    """The endpoint's creation time (its ``created``, DescribeEndpoint's ``CreationTime``) in UTC; None when not
    read or not a timestamp with a time zone (never guessed)."""
    try:
        when = datetime.fromisoformat(model.created) if model.created else None
    except ValueError:
        return None
    return None if when is None or when.tzinfo is None else when.astimezone(UTC)


def _entry(m: EndpointModel, instance_type: str, billed: Mapping[str, Decimal], paid: Mapping[str, Decimal],
           recorded: Sequence[str]) -> dict[str, Any]:
    """One endpoint's line: always on covers only the recorded days on or after its creation, and on its creation day
    only the hours after it; rows of days before it (an earlier endpoint of the same name) are left out."""
    created = created_at(m)
    days = sorted(set(recorded) | set(billed))
    day0 = created.date().isoformat() if created is not None else ""
    period = [d for d in days if d >= day0]
    got = {d: h for d, h in billed.items() if d >= day0}
    spent = sum((usd for d, usd in paid.items() if d >= day0), Decimal(0))
    before = sum(paid.values(), Decimal(0)) - spent
    hours = sum(got.values(), Decimal(0))
    open_hours = {d: HOURS_PER_DAY for d in period}
    if created is not None and day0 in open_hours:
        midnight = datetime.combine(created.date(), time(0), tzinfo=UTC)
        open_hours[day0] = HOURS_PER_DAY - Decimal((created - midnight).total_seconds()) / 3600
    idle = sum((max(Decimal(0), open_hours[d] - got.get(d, Decimal(0))) for d in period), Decimal(0))
    always_on_hours = sum(open_hours.values(), Decimal(0))
    entry: dict[str, Any] = {
        "endpoint": m.endpoint, "model": m.name, "instance_type": instance_type, "created": m.created,
        "days": len(period), "spend_usd": show(spent), "instance_hours": show(hours),
        "idle_hours_at_least": show(idle), "always_on_instance_hours": show(always_on_hours),
        "rate_usd_per_instance_hour": None, "always_on_usd": None, "saved_usd": None}
    since = f" since its creation at {created:%Y-%m-%d %H:%M} UTC" if created is not None and days[0] <= day0 else ""
    if created is None:
        entry["line"] = (f"{m.name}: its creation time (DescribeEndpoint CreationTime) was not read"
                         f"{f' ({m.created!r} is no timestamp with a time zone)' if m.created else ''}: no always-on "
                         "comparison, no saving claimed")
    elif not period:
        entry["line"] = (f"{m.name}: created {created:%Y-%m-%d %H:%M} UTC, after the last recorded day "
                         f"{days[-1] if days else '(none)'}: no recorded day to compare, no saving claimed")
    elif hours > 0:
        rate = spent / hours
        always_on = always_on_hours * rate
        entry |= {"rate_usd_per_instance_hour": show(rate), "always_on_usd": show(always_on),
                  "saved_usd": show(always_on - spent),
                  "line": f"{m.name}: ${show(spent)} for {show(hours)} instance-hours on {instance_type} over "
                          f"{len(period)} recorded days{since}, at least {show(idle)} hours at zero instances; always "
                          f"on it would have cost ${show(always_on)}: scaling to zero saved ${show(always_on - spent)}"}
    else:
        entry["line"] = f"{m.name}: no billed instance-hour to read a rate from"
    if any(d < day0 for d in paid):
        entry["line"] += (f" (${show(before)} billed on days before its creation left out: an earlier "
                          "endpoint of the same name?)")
    entry["source"] = (f"the ledger's {ASYNC_USAGE}{instance_type} rows (Cost Explorer), {len(period)} recorded "
                       "days on or after the endpoint's creation (DescribeEndpoint CreationTime); rate = spend / "
                       "instance-hours; always on = every hour since its creation at that rate "
                       f"(usage type unconfirmed for Neuron types: neuronfleet verify --check {CHECK_ID})")
    return entry


def shape(rows: Iterable[CostRow]) -> dict[str, dict[str, Any]]:
    """Per instance type of ``rows`` (one export's inference rows): its daily instance-hours over the export's days,
    its duty and whether it is bursty (module docstring), or why the export cannot tell."""
    rows = list(rows)
    days = sorted({r.day for r in rows if r.day})
    by_type: dict[str, dict[str, Decimal]] = {}
    for r in rows:
        if r.day:
            daily = by_type.setdefault(r.instance_type, {})
            daily[r.day] = daily.get(r.day, Decimal(0)) + r.usage_hours
    out: dict[str, dict[str, Any]] = {}
    for t, daily in sorted(by_type.items()):
        hours = sum(daily.values(), Decimal(0))
        peak = max(daily.values(), default=Decimal(0))
        if len(days) < MIN_DAYS:
            out[t] = {"bursty": None, "days": len(days),
                      "why": f"the export covers {len(days)} period(s): at least {MIN_DAYS} days are needed to tell a "
                             "bursty workload (export daily: Cost Explorer granularity DAILY, CUR 2.0 daily)"}
            continue
        if peak <= 0:
            out[t] = {"bursty": None, "days": len(days), "why": "no usage hours in the export"}
            continue
        instances = math.ceil(peak / HOURS_PER_DAY)
        duty = hours / (len(days) * HOURS_PER_DAY * instances)
        bursty = duty < BURSTY_DUTY
        out[t] = {"bursty": bursty, "days": len(days), "instance_hours": show(hours),
                  "peak_day_instances": instances, "duty": show(duty),
                  "idle_days": sum(1 for d in days if daily.get(d, Decimal(0)) == 0),
                  "why": (f"duty {show(duty)} below {BURSTY_DUTY}: sized for its peak day ({instances} instance(s)) "
                          "it would sit idle most of the time; on Neuron, serve it from an asynchronous endpoint "
                          "that scales to zero (invocation: async) or a batch job" if bursty else
                          f"duty {show(duty)}: steady enough for an always-on endpoint")}
    return out


def suggestions(shapes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The lines the evaluation prints for bursty workloads."""
    return [f"{t}: bursty ({s['why']})" for t, s in shapes.items() if s.get("bursty")]
