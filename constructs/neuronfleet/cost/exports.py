"""GPU spend read from the files AWS writes, for the evaluation estimate (``neuronfleet estimate FILE``).

Formats, detected from the file itself (:func:`read_export`):

- ``cost-explorer``: the JSON of ``aws ce get-cost-and-usage`` (botocore's GetCostAndUsage response, one object or
  a list of pages), grouped by the ``USAGE_TYPE`` dimension (any other groupings beside it are summed over), with
  the ``UnblendedCost`` metric (``NetAmortizedCost`` used when present) and ``UsageQuantity`` for hours. Each group is
  read by the collector's own parser (``neuronfleet.lambdas.cost.logic.rows.parse``), so both agree on usage types,
  metrics and bad values.
- ``cur2``: a CUR 2.0 export of AWS Data Exports in CSV (optionally gzip), read by column name (CUR 2.0 names are
  snake case: ``line_item_usage_type``, ``line_item_unblended_cost``, ...; see tests/data/cur2/README.md). Cost per
  line item type as the collector's Athena query reads it (``neuronfleet_contract.cur``): Usage at net unblended
  (else unblended) cost, SavingsPlanCoveredUsage at the Savings Plan effective cost, DiscountedUsage at the
  reservation's effective cost, SavingsPlanNegation left out, a Capacity Block fee (Fee, or its Refund) at
  unblended cost; every other line item type (Tax, Credit, RIFee, ...) is not instance time and is counted as such.
- ``cur``: the legacy CUR's CSV (``lineItem/UsageType``, ...), read the same way under its own column names.
- ``simple``: ``instance_type,amount_usd,hours[,workload]`` rows, for spend from elsewhere.

The workload a row's export says (``workload_tag``, the simple CSV's ``workload`` column) is kept beside the row
(:meth:`ExportRows.work`): a cost allocation tag whose values say ``inference`` or ``training`` (case-insensitive) is
read from a Cost Explorer answer grouped by USAGE_TYPE and that TAG (its keys read ``KEY$value``, ``KEY$`` when
untagged: aws-cli's get-cost-and-usage example, tests/data/aws_cli), from CUR 2.0's ``resource_tags`` map (the key as
given, else CUR's column-safe form ``user_<key>`` with every character outside ``[A-Za-z0-9_]`` as ``_``, as
neuronfleet_contract.cur.FLEET_TAG_COLUMN; a CSV export writes the map as a JSON object: not confirmed on a
publisher's example, see docs/checks.md) and from the legacy CUR's ``resourceTags/user:KEY`` column. A value that is
neither is no label (counted in :attr:`ExportRows.other_labels`): the row's workload is then declared or unknown.

A row that is not accelerator instance time (storage, data transfer, CPU instances) or is already Neuron
(Trainium, Inferentia) is skipped and counted, never an error; a value that cannot be read is an error naming the
line, the column, the value and what is allowed (:class:`neuronfleet.InvalidSettings`).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import IO, Any, Literal

from ..core.problems import InvalidSettings, Problem
from ..lambdas.cost.logic.evaluation import WORKLOADS, Work
from ..lambdas.cost.logic.rows import UNTAGGED, CostRow, family_of, parse, usage_of

Format = Literal["cost-explorer", "cur2", "cur", "simple"]
FORMATS: tuple[Format, ...] = ("cost-explorer", "cur2", "cur", "simple")

NOT_INSTANCE_TIME = "not accelerator instance time (storage, transfer, CPU instances, ...)"
ALREADY_NEURON = "already on Neuron (Trainium, Inferentia)"
NOT_USAGE = "not usage (tax, credit, reservation or Savings Plan bookkeeping, ...)"

CUR2_COLUMNS = {
    "usage_type": "line_item_usage_type", "line_item_type": "line_item_line_item_type",
    "usage_amount": "line_item_usage_amount", "unblended": "line_item_unblended_cost",
    "net_unblended": "line_item_net_unblended_cost", "sp_effective": "savings_plan_savings_plan_effective_cost",
    "ri_effective": "reservation_effective_cost", "start": "line_item_usage_start_date",
    "instance_type": "product_instance_type", "tags": "resource_tags",
}
"""The CUR 2.0 columns read (AWS Data Exports' CUR 2.0 table dictionary; tests/data/cur2/README.md)."""

LEGACY_CUR_COLUMNS = {
    "usage_type": "lineItem/UsageType", "line_item_type": "lineItem/LineItemType",
    "usage_amount": "lineItem/UsageAmount", "unblended": "lineItem/UnblendedCost",
    "net_unblended": "lineItem/NetUnblendedCost", "sp_effective": "savingsPlan/SavingsPlanEffectiveCost",
    "ri_effective": "reservation/EffectiveCost", "start": "lineItem/UsageStartDate",
    "instance_type": "product/instanceType", "tags": "resourceTags/",
}
"""The same columns under the legacy CUR's names (CUR user guide, "Line item details")."""

_REQUIRED = ("usage_type", "unblended")
SIMPLE_USAGE_TYPE = "(simple CSV: no usage type)"
"""The usage type of a simple CSV row: none was billed, so the row's workload never comes from its usage."""


@dataclass
class ExportRows:
    """The GPU rows of one export, what was skipped and why (reason -> rows, reason -> USD)."""

    source: str
    format: Format
    rows: list[CostRow] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    skipped_usd: dict[str, Decimal] = field(default_factory=dict)
    labels: list[tuple[str, str]] = field(default_factory=list)
    """Per row of :attr:`rows`: (the workload its export says or "", where that comes from)."""
    workload_tag: str | None = None
    other_labels: Counter[str] = field(default_factory=Counter)
    """Values of the workload tag (or column) on GPU rows that say neither inference nor training -> rows."""

    def add(self, row: CostRow, label: str = "", label_from: str = "") -> None:
        """A GPU row with the workload its export says ("" when none); other rows are skipped as already Neuron."""
        if row.family != "gpu":
            self.skip(ALREADY_NEURON, row.amount)
            return
        said = label.strip().lower()
        if label.strip() and said not in WORKLOADS:
            self.other_labels[f"{label_from}" if label_from else label] += 1
        self.rows.append(row)
        self.labels.append((label if said in WORKLOADS else "", label_from if said in WORKLOADS else ""))

    def work(self) -> list[Work]:
        """The rows with their labels, as the estimate takes them."""
        labels = self.labels + [("", "")] * (len(self.rows) - len(self.labels))
        return [Work(r, label, source) for r, (label, source) in zip(self.rows, labels, strict=True)]

    def skip(self, reason: str, amount: Decimal = Decimal(0)) -> None:
        self.skipped[reason] += 1
        self.skipped_usd[reason] = self.skipped_usd.get(reason, Decimal(0)) + amount

    def summary(self) -> dict[str, Any]:
        return {"source": self.source, "format": self.format, "gpu_rows": len(self.rows),
                "skipped": {reason: {"rows": n, "usd": str(self.skipped_usd.get(reason, Decimal(0)))}
                            for reason, n in sorted(self.skipped.items())},
                "workload_tag": self.workload_tag, "labels_neither_inference_nor_training": dict(self.other_labels)}


def _open_text(path: Path) -> IO[str]:
    raw = path.read_bytes()[:4]
    if raw[:2] == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return path.open(encoding="utf-8-sig", newline="")


def detect(path: Path) -> Format:
    """The export's format, from its first bytes and its CSV header."""
    try:
        head = path.read_bytes()[:4]
    except OSError as exc:
        raise InvalidSettings([Problem("(file)", str(path), f"a readable file ({exc.strerror})")],
                              what=f"{path}") from None
    if head == b"PAR1":
        raise InvalidSettings([Problem("(file)", "a Parquet file", "CSV or gzip CSV (set the export's file format "
                                       "to text/csv with gzip compression, or convert it)")], what=f"{path}")
    try:
        with _open_text(path) as fh:
            first = fh.read(1 << 16)
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise InvalidSettings([Problem("(file)", str(path), f"UTF-8 text, optionally gzip ({exc})")],
                              what=f"{path}") from None
    stripped = first.lstrip()
    if stripped.startswith(("{", "[")):
        return "cost-explorer"
    header = next(csv.reader(io.StringIO(stripped)), [])
    names = {h.strip() for h in header}
    if CUR2_COLUMNS["usage_type"] in names:
        return "cur2"
    if LEGACY_CUR_COLUMNS["usage_type"] in names:
        return "cur"
    if "instance_type" in names:
        return "simple"
    raise InvalidSettings([Problem("(header)", ",".join(header)[:200],
                                   "a Cost Explorer GetCostAndUsage JSON, a CUR 2.0 CSV (line_item_usage_type, "
                                   "line_item_unblended_cost, ...), a legacy CUR CSV (lineItem/UsageType, ...) or "
                                   "instance_type,amount_usd,hours")], what=f"{path}")


def read_export(path: Path, fmt: Format | None = None, *, workload_tag: str | None = None) -> ExportRows:
    """The GPU rows of the export at ``path`` (format detected unless given), each with the value of
    ``workload_tag`` it carries."""
    fmt = fmt or detect(path)
    if workload_tag is not None and fmt == "simple":
        raise InvalidSettings([Problem("--workload-tag", workload_tag, "an export that carries tags (Cost Explorer "
                                       "grouped by a TAG, CUR 2.0, legacy CUR); a simple CSV says the workload in its "
                                       "workload column")], what=f"{path}")
    if fmt == "cost-explorer":
        try:
            doc = json.loads(_open_text(path).read())
        except (ValueError, OSError) as exc:
            raise InvalidSettings([Problem("(file)", str(path), f"JSON as aws ce get-cost-and-usage writes it "
                                           f"({exc})")], what=f"{path}") from None
        return rows_from_cost_explorer_json(doc, source=str(path), workload_tag=workload_tag)
    if fmt == "simple":
        with _open_text(path) as fh:
            return rows_from_simple_csv(fh, source=str(path))
    with _open_text(path) as fh:
        return rows_from_cur_csv(fh, source=str(path), legacy=fmt == "cur", workload_tag=workload_tag)


def rows_from_cost_explorer_json(doc: Any, *, source: str = "<cost explorer>", workload_tag: str | None = None
                                 ) -> ExportRows:
    """GPU rows of GetCostAndUsage responses grouped by USAGE_TYPE (a response, or a list of pages), and by the TAG
    ``workload_tag`` when given (its value kept as each row's label)."""
    out = ExportRows(source=source, format="cost-explorer", workload_tag=workload_tag)
    pages = doc if isinstance(doc, list) else [doc]
    problems: list[Problem] = []
    for p, page in enumerate(pages):
        where = f"[{p}]" if isinstance(doc, list) else ""
        if not isinstance(page, Mapping):
            problems.append(Problem(where or "(top level)", page, "a GetCostAndUsage response (an object)"))
            continue
        groups = page.get("GroupDefinitions") or []
        kinds = [(g.get("Type"), g.get("Key")) for g in groups if isinstance(g, Mapping)]
        if ("DIMENSION", "USAGE_TYPE") not in kinds:
            shown = ", ".join(f"{t}:{k}" for t, k in kinds) or "no grouping"
            problems.append(Problem(f"{where}GroupDefinitions".lstrip("."), shown,
                                    "a grouping by the USAGE_TYPE dimension (aws ce get-cost-and-usage --group-by "
                                    "Type=DIMENSION,Key=USAGE_TYPE --metrics UnblendedCost UsageQuantity)"))
            continue
        at = kinds.index(("DIMENSION", "USAGE_TYPE"))
        tag_at: int | None = None
        if workload_tag is not None:
            if ("TAG", workload_tag) not in kinds:
                shown = ", ".join(f"{t}:{k}" for t, k in kinds)
                problems.append(Problem(f"{where}GroupDefinitions", shown,
                                        f"a grouping by the TAG {workload_tag} beside USAGE_TYPE, as --workload-tag "
                                        f"{workload_tag} asks (aws ce get-cost-and-usage --group-by Type=DIMENSION,"
                                        f"Key=USAGE_TYPE Type=TAG,Key={workload_tag} ...)"))
                continue
            tag_at = kinds.index(("TAG", workload_tag))
        normalised = {"ResultsByTime": [
            {**period, "Groups": [{**g, "Keys": [_key(g, at), "" if tag_at is None else _key(g, tag_at)]}
                                  if isinstance(g, Mapping) else g
                                  for g in period.get("Groups") or []]} if isinstance(period, Mapping) else period
            for period in page.get("ResultsByTime") or []]}
        parsed = parse(normalised)
        for bad in parsed.bad:
            at_group = f"{where}ResultsByTime[{bad.day}] {'/'.join(bad.keys[:1])}".strip()
            m = _REASON.match(bad.reason)
            problems.append(Problem(f"{at_group}: {m['field']}", _Shown(m["value"]), m["allowed"]) if m else
                            Problem(at_group, bad.reason, "a group the estimate can read"))
        for period in normalised["ResultsByTime"]:
            for g in period.get("Groups", []) if isinstance(period, Mapping) else []:
                key = g["Keys"][0] if isinstance(g, Mapping) and isinstance(g.get("Keys"), list) else None
                if isinstance(key, str) and usage_of(key) is None and not _looks_like_instance(key):
                    out.skip(NOT_INSTANCE_TIME, _amount(g))  # what parse() ignores: not accelerator time
        for row in parsed.rows:
            # parse() reads the second key as the fleet tag ("KEY$value"): here it is the workload tag's value
            value = "" if row.fleet == UNTAGGED or tag_at is None else row.fleet
            out.add(replace(row, fleet=""), value, f"tag {workload_tag}={value}" if value else "")
    if problems:
        raise InvalidSettings(problems, what=f"{source}: the Cost Explorer export")
    return out


_REASON = re.compile(r"^(?P<field>[^:]+): got (?P<value>.*?); allowed: (?P<allowed>.*)$")
"""The collector parser's field/value/allowed reason, taken apart to be re-rooted at the group."""


class _Shown(str):
    """A value already shown as the user wrote it (no second repr)."""

    def __repr__(self) -> str:
        return str(self)


def _looks_like_instance(usage_type: str) -> bool:
    """A usage type naming an accelerator type without ``usage:`` (parse() reports those as bad, not skipped)."""
    return re.search(r"(trn|inf|p|g)\d+[a-z]*\.", usage_type) is not None and ":" not in usage_type


def _amount(group: Any) -> Decimal:
    try:
        return Decimal(str(group["Metrics"]["UnblendedCost"]["Amount"]))
    except (KeyError, TypeError, InvalidOperation):
        return Decimal(0)


def _key(group: Mapping[str, Any], at: int) -> Any:
    keys = group.get("Keys")
    return keys[at] if isinstance(keys, list) and len(keys) > at else keys


def _decimal(raw: str | None, where: str, column: str, problems: list[Problem], *, empty: Decimal | None
             ) -> Decimal | None:
    text = (raw or "").strip()
    if not text:
        return empty
    try:
        value = Decimal(text)
    except InvalidOperation:
        value = Decimal("NaN")
    if not value.is_finite():
        problems.append(Problem(f"{where}: {column}", raw, "a decimal number"))
        return None
    return value


_BLOCK_FEE = "CapacityBlockFee:"
_USAGE_COST = {"Usage": "net_unblended", "SavingsPlanCoveredUsage": "sp_effective",
               "DiscountedUsage": "ri_effective"}


def cur2_tag_keys(key: str) -> tuple[str, ...]:
    """The keys a tag may have in CUR 2.0's ``resource_tags`` map: as given, then CUR's column-safe form
    (``user_`` prefix, every character outside ``[A-Za-z0-9_]`` as ``_``; ``neuronfleet:fleet`` ->
    ``user_neuronfleet_fleet``)."""
    safe = "user_" + re.sub(r"[^A-Za-z0-9_]", "_", key.removeprefix("user:"))
    return (key, safe) if key != safe else (key,)


def legacy_tag_column(key: str) -> str:
    """The legacy CUR's column of a user-defined cost allocation tag (``resourceTags/user:KEY``)."""
    return f"resourceTags/{key if key.startswith(('user:', 'aws:')) else 'user:' + key}"


def _cur_label(rec: Mapping[str, str | None], where: str, workload_tag: str, legacy: bool,
               problems: list[Problem]) -> str:
    """The workload tag's value on a CUR line item ("" when untagged)."""
    if legacy:
        return (rec.get(legacy_tag_column(workload_tag)) or "").strip()
    raw = (rec.get(CUR2_COLUMNS["tags"]) or "").strip()
    if not raw:
        return ""
    try:
        tags = json.loads(raw)
    except ValueError:
        tags = None
    if not isinstance(tags, Mapping):
        problems.append(Problem(f"{where}: {CUR2_COLUMNS['tags']}", raw[:120], "a JSON object of tag keys to values "
                                "(CUR 2.0's resource_tags map)"))
        return ""
    for k in cur2_tag_keys(workload_tag):
        if k in tags:
            return str(tags[k] or "").strip()
    return ""


def rows_from_cur_csv(fh: Iterable[str], *, source: str = "<cur>", legacy: bool = False,
                      workload_tag: str | None = None) -> ExportRows:
    """GPU rows of a CUR 2.0 (or legacy CUR) CSV export, one per line item, with the value of ``workload_tag``."""
    names = LEGACY_CUR_COLUMNS if legacy else CUR2_COLUMNS
    out = ExportRows(source=source, format="cur" if legacy else "cur2", workload_tag=workload_tag)
    reader = csv.DictReader(fh)
    header = set(reader.fieldnames or [])
    if workload_tag is not None:
        column = legacy_tag_column(workload_tag) if legacy else names["tags"]
        if column not in header:
            raise InvalidSettings([Problem("--workload-tag", workload_tag, f"a tag the export carries: no {column} "
                                           "column in its header (activate the tag as a cost allocation tag and "
                                           "include " + ("it" if legacy else "resource_tags") + " in the export)")],
                                  what=f"{source}: the {'legacy CUR' if legacy else 'CUR 2.0'} export")
    missing = [names[k] for k in _REQUIRED if names[k] not in header]
    if missing:
        raise InvalidSettings([Problem("(header)", ", ".join(sorted(header))[:200] or "nothing",
                                       f"the columns {', '.join(missing)} (and line_item_usage_amount for hours)")],
                              what=f"{source}: the {'legacy CUR' if legacy else 'CUR 2.0'} export")
    problems: list[Problem] = []
    for n, rec in enumerate(reader, start=2):
        where = f"line {n}"
        usage_type = (rec.get(names["usage_type"]) or "").strip()
        kind = (rec.get(names["line_item_type"]) or "Usage").strip()
        unblended = _decimal(rec.get(names["unblended"]), where, names["unblended"], problems, empty=Decimal(0))
        if unblended is None:
            continue
        parsed = usage_of(usage_type)
        if parsed is None:
            instance_type = (rec.get(names["instance_type"]) or "").strip()
            if family_of(instance_type) is None or kind not in _USAGE_COST:
                out.skip(NOT_INSTANCE_TIME if kind in _USAGE_COST else NOT_USAGE, unblended)
                continue
            parsed = ("sagemaker-hosting" if instance_type.startswith("ml.") else "ec2", instance_type)
        usage, instance_type = parsed
        block_fee = _BLOCK_FEE in usage_type and kind in ("Fee", "Refund")
        if not block_fee and kind not in _USAGE_COST:
            out.skip(NOT_USAGE, unblended)
            continue
        if block_fee:
            amount: Decimal | None = unblended
        else:
            column = names[_USAGE_COST[kind]]
            amount = _decimal(rec.get(column), where, column, problems, empty=None) if column in header else None
            if amount is None and kind != "Usage":
                if column in header and (rec.get(column) or "").strip():
                    continue  # a bad value, already a problem
                problems.append(Problem(f"{where}: {column}", rec.get(column), f"the effective cost of a {kind} "
                                        "line item (the export must include that column)"))
                continue
            amount = unblended if amount is None else amount
        hours = Decimal(0)
        if not block_fee and names["usage_amount"] in header:
            got = _decimal(rec.get(names["usage_amount"]), where, names["usage_amount"], problems, empty=Decimal(0))
            if got is None:
                continue
            hours = got
        family = family_of(instance_type) or ""
        label = _cur_label(rec, where, workload_tag, legacy, problems) if workload_tag is not None else ""
        out.add(CostRow(day=(rec.get(names["start"]) or "")[:10], fleet="", usage=usage,
                        service="sagemaker" if instance_type.startswith("ml.") else "ec2",
                        instance_type=instance_type, family=family, amount=amount, usage_hours=hours,
                        unblended=unblended, usage_type=usage_type),
                label, f"tag {workload_tag}={label}" if label else "")
    if problems:
        raise InvalidSettings(problems, what=f"{source}: the {'legacy CUR' if legacy else 'CUR 2.0'} export")
    return out


def rows_from_simple_csv(fh: Iterable[str], *, source: str = "<csv>") -> ExportRows:
    """``instance_type,amount_usd,hours[,workload]`` rows; hours may be empty (spend / the GPU price is used)."""
    out = ExportRows(source=source, format="simple")
    problems: list[Problem] = []
    for n, rec in enumerate(csv.DictReader(fh), start=2):
        where = f"line {n}"
        instance_type = (rec.get("instance_type") or "").strip()
        amount = _decimal(rec.get("amount_usd"), where, "amount_usd", problems, empty=None)
        hours = _decimal(rec.get("hours"), where, "hours", problems, empty=Decimal(0))
        if amount is None and (rec.get("amount_usd") or "").strip() == "":
            problems.append(Problem(f"{where}: amount_usd", rec.get("amount_usd"), "a decimal number of USD"))
        for column, value in (("amount_usd", amount), ("hours", hours)):
            if value is not None and value < 0:
                problems.append(Problem(f"{where}: {column}", rec.get(column), "a finite number >= 0"))
        kind = (rec.get("workload") or "").strip()
        if kind not in ("", *WORKLOADS):
            problems.append(Problem(f"{where}: workload", kind, "inference | training, or empty (then declared with "
                                    "--workload, else unknown)"))
            continue
        if amount is None or hours is None or amount < 0 or hours < 0:
            continue
        family = family_of(instance_type)
        if family is None:
            out.skip(NOT_INSTANCE_TIME, amount)
            continue
        ml = instance_type.startswith("ml.")
        # no billed usage type (SIMPLE_USAGE_TYPE): the workload is the column's, else declared, else unknown
        out.add(CostRow(day="", fleet="", service="sagemaker" if ml else "ec2", instance_type=instance_type,
                        family=family, amount=amount, usage_hours=hours, usage_type=SIMPLE_USAGE_TYPE,
                        usage=("sagemaker-hosting" if kind == "inference" else "sagemaker-training"
                               if kind == "training" else "sagemaker-processing") if ml else "ec2"),
                kind, "simple CSV column" if kind else "")
    if problems:
        raise InvalidSettings(problems, what=f"{source}: the spend CSV")
    return out
