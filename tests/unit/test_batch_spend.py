"""Batch transform in the money (lambdas/cost/logic/batch_spend.py): each transform row of the ledger in exactly one
line, attributed to the model of the one batch job on its instance type, a row no job explains shown with no model
and why, and no transform row in an endpoint's line (the report's per-model table and "Scaling to zero")."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from neuronfleet.lambdas.cost.logic.batch_spend import NO_JOBS, BatchJob, batch_spend
from neuronfleet.lambdas.cost.logic.report_page import render_html
from neuronfleet.lambdas.cost.logic.rows import CostRow, parse_page
from neuronfleet.lambdas.cost.report import build
from neuronfleet_contract.cost import EndpointModel

FLEET = "nf-batch"
NIGHTLY = BatchJob(name="nightly-summaries", model="summarise-batch", instance_type="ml.inf2.xlarge")
SUMMARISE = EndpointModel(endpoint="nf-batch-summarise", neuron_types=("ml.inf2.xlarge",), model="summarise",
                          created="2026-10-01T00:00:00+00:00")


def group(usage_type: str, usd: str, hours: str) -> dict[str, object]:
    """One Cost Explorer group as the collector's query returns it (usage type and the fleet tag)."""
    return {"Keys": [usage_type, f"neuronfleet:fleet${FLEET}"], "Metrics": {
        "NetAmortizedCost": {"Amount": usd, "Unit": "USD"}, "UnblendedCost": {"Amount": usd, "Unit": "USD"},
        "UsageQuantity": {"Amount": hours, "Unit": "Hrs"}}}


def rows_of(*days: tuple[str, list[dict[str, object]]]) -> list[CostRow]:
    page = {"ResultsByTime": [{"TimePeriod": {"Start": d, "End": d}, "Groups": g, "Estimated": False}
                              for d, g in days]}
    rows, bad = parse_page(page)
    assert not bad
    return rows


def test_each_transform_row_is_attributed_once_to_the_one_job_on_its_type() -> None:
    rows = rows_of(("2026-11-02", [group("USE2-Tsform:ml.inf2.xlarge", "1.95", "2.5")]),
                   ("2026-11-05", [group("USE2-Transform:ml.inf2.xlarge", "0.78", "1")]))  # both prefixes counted
    (line,) = batch_spend(rows, [NIGHTLY])
    assert (line["model"], line["job"], line["instance_type"]) == ("summarise-batch", "nightly-summaries",
                                                                   "ml.inf2.xlarge")
    assert (Decimal(line["spend_usd"]), Decimal(line["instance_hours"]), line["days"]) == (
        Decimal("2.73"), Decimal("3.5"), 2)
    assert line["line"].startswith("summarise-batch: $2.73 for 3.50 instance-hours on ml.inf2.xlarge over 2 day(s)")


def test_a_row_no_job_explains_is_shown_with_no_model_and_why() -> None:
    rows = rows_of(("2026-11-02", [group("USE2-Tsform:ml.inf2.xlarge", "2", "2"),
                                   group("USE2-Tsform:ml.trn1.2xlarge", "5", "3")]))
    lines = {x["instance_type"]: x for x in batch_spend(rows, [NIGHTLY])}
    assert lines["ml.inf2.xlarge"]["model"] == "summarise-batch"
    other = lines["ml.trn1.2xlarge"]
    assert other["model"] is None and other["job"] is None and Decimal(other["spend_usd"]) == 5
    assert other["line"] == ("model not known: $5.00 for 3.00 instance-hours on ml.trn1.2xlarge over 1 day(s) with runs, "
                             "not attributed to a model (no batch job of this fleet is configured on this type)")
    (none,) = batch_spend(rows[:1], [])
    assert none["model"] is None and none["line"].endswith(f"({NO_JOBS})")
    shared = batch_spend(rows[:1], [NIGHTLY, BatchJob("weekly", "other", "ml.inf2.xlarge")])
    assert [x["model"] for x in shared] == [None]
    assert "shared by batch jobs nightly-summaries, weekly: Cost Explorer has no per-job figure" in shared[0]["line"]


def test_a_transform_row_is_never_in_an_endpoints_line_nor_counted_twice() -> None:
    """The async endpoint and the batch job run on the same type: the endpoint's lines read its AsyncInf: rows only,
    the batch line its Tsform: rows only, and together they are the fleet's whole inference spend."""
    rows = rows_of(*[(f"2026-11-0{d}", [group("USE2-AsyncInf:ml.inf2.xlarge", "2.34", "3")]
                      + ([group("USE2-Tsform:ml.inf2.xlarge", "1.95", "2.5")] if d % 2 else []))
                     for d in range(1, 8)])
    out = build(fleet=FLEET, rows=rows, start=date(2026, 11, 1), end=date(2026, 11, 8), invocations={}, tokens={},
                prices={}, models=[SUMMARISE], batch_jobs=[NIGHTLY])
    (model,) = out["unit_economics"]["models"]
    (async_line,) = out["scale_to_zero"]
    (batch_line,) = out["batch_transform"]
    assert Decimal(model["neuron_spend_usd"]) == Decimal(async_line["spend_usd"]) == 7 * Decimal("2.34")
    assert Decimal(batch_line["spend_usd"]) == 4 * Decimal("1.95") and batch_line["model"] == "summarise-batch"
    assert Decimal(model["neuron_spend_usd"]) + Decimal(batch_line["spend_usd"]) == Decimal(out["spend_usd"]["total"])
    assert out["unattributed"] == {} and "batch_transform" in out["sources"]
    page = render_html(out)
    assert "Batch transform: spend by model" in page and page.count(batch_line["line"]) == 1


def test_no_transform_rows_no_section() -> None:
    rows = rows_of(("2026-11-02", [group("USE2-AsyncInf:ml.inf2.xlarge", "2.34", "3")]))
    out = build(fleet=FLEET, rows=rows, start=date(2026, 11, 1), end=date(2026, 11, 8), invocations={}, tokens={},
                prices={}, models=[SUMMARISE], batch_jobs=[NIGHTLY])
    assert out["batch_transform"] == [] and "Batch transform" not in render_html(out)
