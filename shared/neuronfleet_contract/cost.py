"""The cost monitors' contract: what their functions are told (built by CostMonitors, read once per container by each
handler), the cost bases, the endpoint model the report is given and the resource type it finds endpoints by.

Pure: no boto3, no Powertools, no CDK. ``to_environment`` only encodes (its values may be CDK tokens);
``from_environment`` checks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from . import accelerators as builtin_accelerators
from . import environment, namespaces
from . import overhead as overhead_wire
from . import prices as builtin_prices
from .environment import variable
from .judge import latest_key

Basis = Literal["net_amortized", "unblended"]
BASES: tuple[Basis, ...] = ("net_amortized", "unblended")
"""The cost bases the collector reads (Cost Explorer metrics NetAmortizedCost and UnblendedCost)."""

COLLECTOR_SERVICE = "neuronfleet-cost-collector"
"""The spend collector's Powertools service: the ``service`` dimension of its run's metrics in COST_MONITORS_NAMESPACE
(with ``Fleet``: neuronfleet_contract.health)."""
COLLECTOR_METRICS = ("CostExplorerRequests", "BadRows", "RowsWritten", "RowsRetracted", "UnconfirmedSpend",
                     "UnpublishableSpend")
"""The collector's run metrics (counts, each run publishes all of them; namespaces.COST_MONITORS_NAMESPACE says what
each counts)."""
WASTE_SERVICE = "neuronfleet-waste"
"""The waste detector's Powertools service: the ``service`` dimension of its metrics in WASTE_NAMESPACE."""
WASTE_MALFORMED_METRIC = "MalformedEvents"
"""Count of events the waste detector refused (WASTE_NAMESPACE, neuronfleet_contract.health's dimensions)."""

ENDPOINT_RESOURCE_TYPE = "sagemaker:endpoint"
"""GetResources ``ResourceTypeFilters`` entry: ``service:resourceType`` as in the ARN
(``arn:aws:sagemaker:<region>:<account>:endpoint/<name>``)."""


@dataclass(frozen=True)
class EndpointModel:
    """What the report needs to know of one endpoint (one model): the instance types of its variants and what its GPU
    variant is for. ``gpu_role``: ``baseline`` (a weighted GPU variant serving the same model: a comparison),
    ``standby`` (weight 0: the failover target; its spend is insurance, its traffic a failover), ``shadow`` (a copy
    of the traffic: costs, serves nobody), ``""`` (no GPU variant)."""

    endpoint: str
    neuron_types: tuple[str, ...]
    gpu_type: str = ""
    gpu_role: str = ""
    gpu_pool_types: tuple[str, ...] = ()
    """GPU instance pools of the Neuron variant (and a warm standby's type): capacity fallback, shown apart."""
    model: str = ""
    """The model's name as the fleet file gives it (the endpoint's ``neuronfleet:model`` tag); "" when untagged."""
    created: str = ""
    """When the endpoint was created: DescribeEndpoint's ``CreationTime`` as ISO 8601 in UTC
    (``2026-11-16T09:30:00+00:00``); "" when not read (the report then claims no scale-to-zero saving for it)."""

    @property
    def name(self) -> str:
        """What the report calls the model: its fleet-file name, else the endpoint's name."""
        return self.model or self.endpoint

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> EndpointModel:
        return cls(endpoint=str(doc["endpoint"]), neuron_types=tuple(str(t) for t in doc.get("neuron_types", ())),
                   gpu_type=str(doc.get("gpu_type") or ""), gpu_role=str(doc.get("gpu_role") or ""),
                   gpu_pool_types=tuple(str(t) for t in doc.get("gpu_pool_types", ())), model=str(doc.get("model") or ""),
                   created=str(doc.get("created") or ""))

    def to_json(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "neuron_types": list(self.neuron_types), "gpu_type": self.gpu_type,
                "gpu_role": self.gpu_role, "gpu_pool_types": list(self.gpu_pool_types), "model": self.model,
                "created": self.created}


_TOPIC = "the ARN of the fleet's SNS topic"
_TABLE = "the name of the cost ledger's DynamoDB table"
_FLEET = "the fleet's name"
_NAMESPACE = "a CloudWatch namespace"


LOOKBACK_DAYS = 3
"""Default: days collected per run at least."""
MONTH_CLOSE_DAYS = 5
"""Default: during the first this-many days of a month the previous month is re-read."""
BASIS: Basis = "net_amortized"
"""Default: the cost basis of the Spend metric and the report."""
Source = Literal["cost-explorer", "athena"]
SOURCES: tuple[Source, ...] = ("cost-explorer", "athena")
"""Where the collector may read spend."""
SPEND_SOURCE: Source = "cost-explorer"
"""Default: where the collector reads spend."""
PERIOD_DAYS = 30
"""Default: days per report."""
PRICE_STALE_DAYS = 180
"""Default: a price read longer ago than this is flagged stale in the report."""
PRICE_CACHE_DAYS = 7
"""Default: a live price is read again after this many days."""
LIVE_PRICES = True
"""Default: the report reads current On-Demand prices from the AWS Price List Query API."""
IDLE_PERCENT = 20
"""Default: an instance is idle below this NeuronCore utilisation (percent)..."""
IDLE_HOURS = 6
"""...in every one of the last this many hours."""


def _athena(c: Any) -> bool:
    return bool(c.source == "athena")


def _reservations(c: Any) -> bool:
    return bool(c.reservation_ids or c.resource_group_arns)


@dataclass(frozen=True)
class CollectorConfig(environment.Configured):
    ledger_table: str = field(metadata=variable("LEDGER_TABLE", allowed=_TABLE))
    """The cost ledger (``LEDGER_TABLE``)."""
    instance_types: Sequence[str] = field(metadata=variable(
        "INSTANCE_TYPES", decode=lambda d: _nonempty_strings(d),
        allowed='a JSON list of instance types, e.g. ["trn2.48xlarge"]'))
    """The accelerator instance types to ask Cost Explorer for, EC2 and ``ml.`` names (``INSTANCE_TYPES``, JSON)."""
    lookback_days: int = field(default=LOOKBACK_DAYS, metadata=variable("LOOKBACK_DAYS", minimum=1, unit="days"))
    """Days collected per run at least (``LOOKBACK_DAYS``); the month Cost Explorer may still revise is added."""
    metrics_namespace: str = field(default=namespaces.SPEND_NAMESPACE, metadata=variable(
        "METRICS_NAMESPACE", allowed=_NAMESPACE))
    """Where the Spend metric goes (``METRICS_NAMESPACE``)."""
    fleet: str | None = field(default=None, metadata=variable("FLEET", allowed=_FLEET))
    """The fleet whose rows this collector writes and publishes (``FLEET``; unset: every fleet's)."""
    basis: str = field(default=BASIS, metadata=variable("COST_BASIS", choices=BASES))
    """The cost basis the Spend metric uses: net_amortized | unblended (``COST_BASIS``)."""
    backfill_days: int = field(default=0, metadata=variable("BACKFILL_DAYS", unit="days"))
    """Days read on the first run, when the ledger holds no collector state (``BACKFILL_DAYS``; 0: none)."""
    month_close_days: int = field(default=MONTH_CLOSE_DAYS, metadata=variable("MONTH_CLOSE_DAYS", unit="days"))
    """During the first this-many days of a month the previous month is re-read (``MONTH_CLOSE_DAYS``)."""
    capacity_blocks: bool = field(default=True, metadata=variable("CAPACITY_BLOCKS"))
    """Read the account's Capacity Blocks (EC2 DescribeCapacityBlocks) to amortise their fees
    (``CAPACITY_BLOCKS``)."""
    source: str = field(default=SPEND_SOURCE, metadata=variable("SPEND_SOURCE", choices=SOURCES))
    """Where spend is read: cost-explorer | athena (the CUR 2.0 export) (``SPEND_SOURCE``)."""
    athena_workgroup: str = field(default="", metadata=variable(
        "ATHENA_WORKGROUP", allowed="the Athena workgroup's name", written=_athena, required=_athena))
    """The Athena workgroup of the CUR queries (``ATHENA_WORKGROUP``; with source athena)."""
    athena_table: str = field(default="", metadata=variable(
        "ATHENA_TABLE", allowed="the CUR 2.0 table, database.table", written=_athena, required=_athena))
    """The CUR 2.0 table, database.table (``ATHENA_TABLE``; with source athena)."""
    reservation_ids: Sequence[str] = field(default=(), metadata=variable(
        "FLEET_RESERVATIONS", written=_reservations, allowed="a JSON list of capacity reservation ids"))
    """The fleet's capacity reservations by id (``FLEET_RESERVATIONS``, JSON list): their Capacity Blocks' fees
    are the fleet's even untagged."""
    resource_group_arns: Sequence[str] = field(default=(), metadata=environment.arns(
        "FLEET_RESERVATION_GROUPS", written=_reservations, allowed="a JSON list of resource group ARNs"))
    """The capacity-reservation resource groups its clusters target (``FLEET_RESERVATION_GROUPS``: their shared ARN
    prefix once, then the names, as the capacity alerts' function has them)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "instance_types", tuple(self.instance_types))
        object.__setattr__(self, "reservation_ids", tuple(self.reservation_ids))
        object.__setattr__(self, "resource_group_arns", tuple(self.resource_group_arns))


@dataclass(frozen=True)
class JudgeRecords:
    """Where one pilot judge keeps its verdict records: the report reads the endpoint's latest verdict at
    :attr:`key` (``<prefix><endpoint>/latest.json``, neuronfleet_contract.judge.latest_key) in :attr:`bucket`."""

    endpoint: str
    bucket: str
    prefix: str = "judge/"

    @property
    def key(self) -> str:
        return latest_key(self.prefix, self.endpoint)


@dataclass(frozen=True)
class BatchJob:
    """One batch job of the fleet, as the report attributes batch transform spend by it: its name, its model's name
    (the ``neuronfleet:model`` tag its transform jobs carry: the fleet file's ``model_name``, else the job's name) and
    its instance type (``ml.inf2.xlarge``)."""

    name: str
    model: str
    instance_type: str


@dataclass(frozen=True)
class ReportConfig(environment.Configured):
    fleet: str = field(metadata=variable("FLEET", allowed=_FLEET))
    """The fleet reported on (``FLEET``)."""
    ledger_table: str = field(metadata=variable("LEDGER_TABLE", allowed=_TABLE))
    """The cost ledger (``LEDGER_TABLE``)."""
    report_bucket: str = field(metadata=variable("REPORT_BUCKET", allowed="the name of the report bucket"))
    """Where the JSON and HTML reports go (``REPORT_BUCKET``)."""
    topic_arn: str = field(metadata=variable("ALERTS_TOPIC_ARN", allowed=_TOPIC))
    """Where the summary goes (``ALERTS_TOPIC_ARN``)."""
    prices: Mapping[str, Mapping[str, str]] = field(metadata=variable(
        "PRICES", encode=lambda r: _carried_prices(r), of_config=True, decode=lambda d: _prices(d),
        allowed='a JSON object {instance type: {"usd_per_hour": "<decimal>", "source": ..., "as_of": ...}}'))
    """The price table: instance type -> usd_per_hour, source, as_of, region, sourced (neuronfleet.facts.prices.
    price_table). Always the whole table: the entries given are put on the kit's built-in table for
    :attr:`price_region`, which the function's code ships (neuronfleet_contract/data/prices.json;
    neuronfleet_contract.prices.merged), and the environment carries only the entries that differ from it
    (``PRICES``, JSON, packed: the fleet file's overrides; prices.carried): the whole table would not fit Lambda's
    4 KB. The fleet's
    endpoints are not configured: the report finds those tagged with the fleet when it runs (discovery.py)."""
    price_region: str = field(default="", metadata=variable(
        "PRICE_REGION", allowed="an AWS region name", written=lambda r: bool(r.price_region)))
    """The fleet's region, which the built-in table's notes name (``PRICE_REGION``, only when set; "": not known at
    synthesis, no note)."""
    period_days: int = field(default=PERIOD_DAYS, metadata=variable("PERIOD_DAYS", minimum=1, unit="days"))
    """Days per report (``PERIOD_DAYS``)."""
    tokens_namespace: str = field(default=namespaces.WORKLOAD_NAMESPACE, metadata=variable(
        "TOKENS_NAMESPACE", allowed=_NAMESPACE))
    """Where the workloads publish Tokens (``TOKENS_NAMESPACE``)."""
    basis: str = field(default=BASIS, metadata=variable("COST_BASIS", choices=BASES))
    """The cost basis the report uses and names: net_amortized | unblended (``COST_BASIS``)."""
    stale_after_days: int = field(default=PRICE_STALE_DAYS, metadata=variable(
        "PRICE_STALE_DAYS", minimum=1, unit="days"))
    """A price read longer ago than this is flagged stale in the report (``PRICE_STALE_DAYS``)."""
    accelerators: Mapping[str, tuple[str, int]] = field(default_factory=dict, metadata=variable(
        "ACCELERATORS", encode=lambda a: _carried_accelerators(a), decode=lambda d: _accelerators(d),
        allowed='a JSON object {instance type: "<t|i|g><GiB>"} (trainium, inferentia, gpu; accelerator memory)'))
    """EC2 type -> (family, accelerator memory GiB) from the instance catalog: which of an endpoint's variants is
    Neuron and which GPU, and the evaluation estimate maps GPU work to Neuron types with enough accelerator memory.
    Always the whole map: the types given are put on the map the function's code ships
    (neuronfleet_contract/data/accelerators.json; neuronfleet_contract.accelerators.merged), and the environment
    carries only the types that differ from it (``ACCELERATORS``, JSON, ``{type: "<t|i|g><GiB>"}``: a catalog of the
    user's own)."""
    live_prices: bool = field(default=LIVE_PRICES, metadata=variable("LIVE_PRICES"))
    """Read current On-Demand prices from the AWS Price List Query API when the report runs (``LIVE_PRICES``:
    true | false); the fleet file's overrides stay on top, the catalog is the fallback (pricelist.py)."""
    price_cache_days: int = field(default=PRICE_CACHE_DAYS, metadata=variable(
        "PRICE_CACHE_DAYS", minimum=1, unit="days"))
    """A live price is read again after this many days (``PRICE_CACHE_DAYS``); until then the container's copy or
    the ledger's is used."""
    judges: Sequence[JudgeRecords] = field(default=(), metadata=variable(
        "JUDGE_RECORDS", encode=lambda j: _pack_judges(j), decode=lambda d: _judges(d),
        written=lambda r: bool(r.judges),
        allowed='a JSON list [[records bucket, key prefix, [endpoint name, ...]], ...]'))
    """The pilot judges whose latest verdict records the report reads (``JUDGE_RECORDS``, JSON, only when there are
    any: ``[[bucket, prefix, [endpoint, ...]], ...]``, one entry per bucket and prefix). Each judge adds its
    endpoint's name (and its bucket's, unless shared) to Lambda's 4 KB environment: about 110 bytes with a bucket of
    its own (docs/cost.md says how many fit)."""
    batch_jobs: Sequence[BatchJob] = field(default=(), metadata=variable(
        "BATCH_JOBS", encode=lambda j: _pack_batch_jobs(j), decode=lambda d: _batch_jobs(d),
        written=lambda r: bool(r.batch_jobs),
        allowed="a JSON list [[job name, model name, instance type], ...], one entry per job, names unique"))
    """The fleet's batch jobs (``BATCH_JOBS``, JSON, only when there are any: ``[[name, model, type], ...]``): the
    report attributes each instance type's batch transform spend to the model of the one job on that type
    (cost.logic.batch_spend). About 60 bytes of Lambda's 4 KB environment per job."""
    overhead: str = field(default="", metadata=variable(
        overhead_wire.VARIABLE, allowed="the overhead bill", check=overhead_wire.decode,
        written=lambda r: bool(r.overhead)))
    """The kit's own running cost as priced at synth (``OVERHEAD_BILL``: neuronfleet_contract.overhead's compact
    wire, written by CostMonitors from neuronfleet.cost.overhead.bill_of_materials; may be a CDK token); "" for none.
    The report counts it in the net as deployed (cost.logic.net)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "judges", tuple(self.judges))
        object.__setattr__(self, "batch_jobs", tuple(self.batch_jobs))
        # the whole tables, whatever part was given: the built-in ones the code ships, the given entries on top
        object.__setattr__(self, "prices", builtin_prices.merged(self.prices, self.price_region or None))
        object.__setattr__(self, "accelerators", builtin_accelerators.merged(self.accelerators))

    def overhead_bill(self) -> overhead_wire.OverheadBill | None:
        """The decoded bill, or None when the function was given none."""
        return overhead_wire.decode(self.overhead) if self.overhead else None


def _carried_prices(report: ReportConfig) -> dict[str, Any]:
    """``PRICES``: the entries that differ from the built-in table, packed."""
    return _pack_prices(builtin_prices.carried(report.prices, report.price_region or None))


def _carried_accelerators(accelerators: Mapping[str, tuple[str, int]]) -> dict[str, str]:
    """``ACCELERATORS``: the types that differ from the built-in map, ``{type: "<t|i|g><GiB>"}``."""
    return {k: f"{f[0]}{gib}" for k, (f, gib) in builtin_accelerators.carried(accelerators).items()}


@dataclass(frozen=True)
class WasteConfig(environment.Configured):
    topic_arn: str = field(metadata=variable("ALERTS_TOPIC_ARN", allowed=_TOPIC))
    """Where the warnings go (``ALERTS_TOPIC_ARN``)."""
    ledger_table: str = field(metadata=variable("ANNOUNCEMENTS_TABLE", allowed="the name of the announcements table"))
    """Which idle instances are already announced (``ANNOUNCEMENTS_TABLE``, see neuronfleet_runtime.announcements)."""
    neuron_namespace: str = field(default=namespaces.NEURON_NAMESPACE, metadata=variable(
        "NEURON_NAMESPACE", allowed=_NAMESPACE))
    """Where neuron-monitor publishes utilisation (``NEURON_NAMESPACE``)."""
    utilization_metric: str = field(default=namespaces.NEURON_CORE_UTILIZATION, metadata=variable(
        "UTILIZATION_METRIC", allowed="a CloudWatch metric name"))
    """Its metric, dimension InstanceId (``UTILIZATION_METRIC``)."""
    idle_percent: float = field(default=IDLE_PERCENT, metadata=variable(
        "IDLE_PERCENT", above=0, at_most=100, unit="percent"))
    """An instance is idle below this NeuronCore utilisation (``IDLE_PERCENT``)..."""
    idle_hours: int = field(default=IDLE_HOURS, metadata=variable("IDLE_HOURS", minimum=1, unit="hours"))
    """...in every one of the last this many hours (``IDLE_HOURS``)."""
    fleet: str = field(default="", metadata=variable("FLEET", allowed=_FLEET, required=lambda _: True))
    """The fleet whose instances, reservations and endpoints are judged: its ``neuronfleet:fleet`` tag (``FLEET``;
    the endpoints are found by it when the detector runs)."""
    reservation_ids: Sequence[str] = field(default=(), metadata=variable(
        "RESERVATION_IDS", allowed="a JSON list of capacity reservation ids"))
    """Capacity reservations of the fleet besides those tagged with it (``RESERVATION_IDS``, JSON list)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "reservation_ids", tuple(self.reservation_ids))


def judges_environment(judges: Sequence[JudgeRecords], *, to_json: Callable[[Any], str] = json.dumps
                       ) -> dict[str, str]:
    """``JUDGE_RECORDS`` of :class:`ReportConfig` (nothing without judges): CostMonitors adds it when it is told
    of a judge after the function exists."""
    return {"JUDGE_RECORDS": to_json(_pack_judges(judges))} if judges else {}


def _pack_judges(judges: Sequence[JudgeRecords]) -> list[list[Any]]:
    """One ``[bucket, prefix, [endpoints]]`` per bucket and prefix, in the order first given."""
    packed: dict[tuple[str, str], list[str]] = {}
    for j in judges:
        packed.setdefault((str(j.bucket), str(j.prefix)), []).append(str(j.endpoint))
    return [[bucket, prefix, endpoints] for (bucket, prefix), endpoints in packed.items()]


def _judges(doc: Any) -> tuple[JudgeRecords, ...]:
    if not isinstance(doc, list):
        raise ValueError("expected a list")
    out = []
    for entry in doc:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str) and entry[0].strip()
                and isinstance(entry[1], str)):
            raise ValueError(f"expected [bucket, prefix, [endpoint, ...]], got {entry!r}")
        out += [JudgeRecords(endpoint=e, bucket=entry[0], prefix=entry[1]) for e in environment.strings(entry[2])]
    return tuple(out)


def _pack_batch_jobs(jobs: Sequence[BatchJob]) -> list[list[str]]:
    """``BATCH_JOBS``: one ``[name, model, instance type]`` per job, in the order given."""
    return [[str(j.name), str(j.model), str(j.instance_type)] for j in jobs]


def _batch_jobs(doc: Any) -> tuple[BatchJob, ...]:
    if not isinstance(doc, list):
        raise ValueError("expected a list")
    out: list[BatchJob] = []
    for entry in doc:
        if not (isinstance(entry, list) and len(entry) == 3
                and all(isinstance(v, str) and v.strip() for v in entry)):
            raise ValueError(f"expected [job name, model name, instance type], each a non-blank text, got {entry!r}")
        if any(j.name == entry[0] for j in out):
            raise ValueError(f"batch job {entry[0]!r} is named twice")
        out.append(BatchJob(name=entry[0], model=entry[1], instance_type=entry[2]))
    return tuple(out)


def _nonempty_strings(doc: Any) -> tuple[str, ...]:
    out = environment.strings(doc)
    if not out:
        raise ValueError("the list is empty")
    return out


_FAMILY_LETTER = {"t": "trainium", "i": "inferentia", "g": "gpu"}


def _accelerators(doc: Any) -> dict[str, tuple[str, int]]:
    if not isinstance(doc, dict):
        raise ValueError("expected an object")
    out = {}
    for t, v in doc.items():
        if not isinstance(v, str) or v[:1] not in _FAMILY_LETTER or not v[1:].isdigit():
            raise ValueError(f"{t}: expected <t|i|g><GiB>, got {v!r}")
        out[t] = (_FAMILY_LETTER[v[0]], int(v[1:]))
    return out


_PROVENANCE = ("source", "as_of", "region", "sourced", "note")
"""Shared by many prices, packed once (a fleet outside the catalog's region gets the same "read in ..." note on
each catalog price: per type, it alone outgrew the report's 4 KB environment)."""


def _pack_prices(prices: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The price table in less room (Lambda environments hold 4 KB in all): each distinct provenance (source, as_of,
    region, sourced) once in the list under ``"*"``, each type with its price and the index ``"p"`` of its
    provenance (none for the first); a type with nothing but its price is written as the price alone (``"1.34"``)
    or the price and its index (``["2.2", 1]``). :func:`_prices` reads these, the older single-object ``"*"`` and
    the plain form."""
    profiles: list[dict[str, Any]] = []
    packed: dict[str, Any] = {"*": profiles}
    for t, p in prices.items():
        profile = {k: p[k] for k in _PROVENANCE if k in p}  # a field the entry lacks stays absent
        if profile not in profiles:
            profiles.append(profile)
        index = profiles.index(profile)
        rest = {k: v for k, v in p.items() if k not in _PROVENANCE}
        if set(rest) == {"usd_per_hour"}:
            packed[t] = [str(rest["usd_per_hour"]), index] if index else str(rest["usd_per_hour"])
        else:
            packed[t] = rest | ({"p": index} if index else {})
    return packed


def _prices(doc: Any) -> dict[str, dict[str, str]]:
    if not isinstance(doc, dict):
        raise ValueError("expected an object")
    common = doc.get("*") or {}
    profiles = common if isinstance(common, list) else [common]
    if not all(isinstance(p, dict) for p in profiles):
        raise ValueError('"*": expected an object or a list of objects')
    out = {}
    for instance_type, given in doc.items():
        if instance_type == "*":
            continue
        price = given
        if isinstance(given, str):
            given = {"usd_per_hour": given}
        elif isinstance(given, list) and len(given) == 2 and isinstance(given[0], str):
            given = {"usd_per_hour": given[0], "p": given[1]}
        if isinstance(given, dict):
            index = given.get("p", 0)
            if not isinstance(index, int) or not 0 <= index < len(profiles):
                raise ValueError(f'{instance_type}: "p" must index the list under "*"')
            price = {**profiles[index], **{k: v for k, v in given.items() if k != "p"}}
        if not isinstance(price, dict) or "usd_per_hour" not in price:
            raise ValueError(f"{instance_type}: expected an object with usd_per_hour")
        out[instance_type] = {k: str(v) for k, v in price.items() if v is not None}
    return out


VERIFY_PREFIX = "verify"
"""Where ``neuronfleet verify`` writes its records in the fleet's report bucket (:func:`verify_key`): the command
writes them, the report function reads the newest (its role may read only that fleet's prefix: CostMonitors), the
report shows what they confirmed (cost.logic.confirmations)."""


def verify_prefix(fleet: str) -> str:
    return f"{VERIFY_PREFIX}/{fleet}/"


def verify_key(fleet: str, day: date) -> str:
    """Where the record of a verify run on ``day`` (UTC) goes: one a day, the day's last run kept."""
    return f"{verify_prefix(fleet)}{day.isoformat()}.json"
