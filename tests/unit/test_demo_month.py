"""scripts/demo.py's month of SYNTHETIC usage and its batch step (issue 43), on the generated rows, without a demo run:
an asynchronous endpoint is billed under ``AsyncInf:`` for a few hours on alternate days (never the always-on
``Host:`` row) with no ``Invocations``, so the report's "Scaling to zero" section has rows to read; a real-time
endpoint keeps its ``Host:`` row and its invocations every day; one batch run is one line."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from neuronfleet import load_fleet
from neuronfleet.lambdas.cost.logic.batch_spend import BatchJob, batch_spend
from neuronfleet.lambdas.cost.logic.rows import parse_page
from neuronfleet.lambdas.cost.logic.scale_to_zero import async_spend, is_async
from neuronfleet_contract.cost import EndpointModel
from scripts.demo import ASYNC_HOURS, BATCH_HOURS, ROOT, batch_run_line, month_of_usage, scale_to_zero_lines

TODAY = date(2026, 11, 29)


def _month(env: str, models: list[dict[str, Any]]) -> tuple[Any, list[Any], list[dict[str, Any]], list[str]]:
    fleet = load_fleet(ROOT / "config" / f"{env}.yaml")
    pages, points, story = month_of_usage(fleet, models, TODAY)
    rows = [r for p in pages for r in parse_page(p)[0]]
    return fleet, rows, points, story


def test_an_async_endpoint_is_billed_asyncinf_hours_on_alternate_days_without_invocations() -> None:
    model = {"endpoint": "nf-batch-summarise", "neuron_types": ["ml.inf2.xlarge"], "model": "summarise",
             "created": "2026-10-01T00:00:00+00:00"}  # before the month: every recorded day compared
    fleet, rows, points, story = _month("batch", [model])
    assert [e.invocation for e in fleet.endpoints] == ["async"]
    hosting = [r for r in rows if r.usage == "sagemaker-hosting"]
    assert len(hosting) == 15 and all(is_async(r) for r in hosting)  # 15 of the 30 days, none Host:
    assert {r.usage_type for r in hosting} == {"AsyncInf:ml.inf2.xlarge"}
    assert {r.usage_hours for r in hosting} == {Decimal(str(ASYNC_HOURS))}
    assert len({r.day for r in hosting}) == 15
    metrics = [d["MetricName"] for p in points for d in p["MetricData"]]
    assert "Invocations" not in metrics and metrics.count("Tokens") == 15
    assert any("asynchronous" in line and "alternate days" in line for line in story)
    # what the report's "Scaling to zero" section reads of those rows
    (saved,) = async_spend(rows, [EndpointModel.from_json(model)], sorted({r.day for r in hosting}))
    assert saved["model"] == "summarise" and Decimal(saved["instance_hours"]) == 15 * Decimal(str(ASYNC_HOURS))
    # over the 15 days it ran (the batch job's nights are other days of the ledger: see the batch test below)
    assert saved["days"] == 15 and Decimal(saved["idle_hours_at_least"]) == 15 * 24 - 15 * Decimal(str(ASYNC_HOURS))
    assert Decimal(saved["saved_usd"]) > 0
    assert scale_to_zero_lines({"scale_to_zero": [saved]}) == [f"    scaling to zero: {saved['line']}"]
    assert "scaling to zero saved $" in saved["line"] and scale_to_zero_lines({"scale_to_zero": []}) == []


def test_a_batch_job_is_billed_synthetic_transform_hours_every_third_night_and_nothing_else() -> None:
    model = {"endpoint": "nf-batch-summarise", "neuron_types": ["ml.inf2.xlarge"], "model": "summarise"}
    fleet, rows, _, story = _month("batch", [model])
    (job,) = fleet.batch_jobs
    transform = [r for r in rows if r.usage == "sagemaker-transform"]
    assert len(transform) == 10 and len({r.day for r in transform}) == 10  # every third night of 30
    assert {r.usage_type for r in transform} == {f"Tsform:{job.instance_type}"}
    assert {r.usage_hours for r in transform} == {Decimal(str(BATCH_HOURS))}
    assert {r.workload for r in transform} == {"inference"}
    assert any(line.startswith(f"batch job {job.name}:") and "every third night" in line for line in story)
    # the async endpoint on the same type keeps only its AsyncInf: rows: no transform row in its hosting
    assert all(r.usage_type.startswith("AsyncInf:") for r in rows if r.usage == "sagemaker-hosting")
    (line,) = batch_spend(rows, [])  # the report as deployed: its configuration names no batch job
    assert line["model"] is None and Decimal(line["instance_hours"]) == 10 * Decimal(str(BATCH_HOURS))
    assert line["line"].startswith("model not known: $")
    (line,) = batch_spend(rows, [BatchJob(job.name, "summarise", job.instance_type)])
    assert line["model"] == "summarise" and Decimal(line["spend_usd"]) == sum((r.amount for r in transform), Decimal(0))


def test_a_real_time_endpoint_keeps_its_host_row_and_invocations_every_day() -> None:
    fleet, _, _, _ = _month("dev", [])
    models = [{"endpoint": f"ep-{e.name}", "neuron_types": [e.instance_type]} for e in fleet.endpoints]
    assert models and not any(e.is_async for e in fleet.endpoints)
    _, rows, points, _ = _month("dev", models)
    hosting = [r for r in rows if r.usage == "sagemaker-hosting" and r.instance_type == models[0]["neuron_types"][0]]
    assert hosting and not any(is_async(r) for r in hosting)
    assert len({r.day for r in hosting}) == 30
    invocations = [d for p in points for d in p["MetricData"] if d["MetricName"] == "Invocations"]
    assert len({d["Timestamp"] for d in invocations}) == 30


def test_one_line_per_batch_run() -> None:
    job = {"TransformJobName": "nightly-summaries-0a1b2c3d4e5f6a7b", "TransformJobStatus": "Completed",
           "ModelName": "NightlySummariesModel-abc", "TransformResources": {"InstanceType": "ml.inf2.xlarge",
                                                                             "InstanceCount": 1},
           "TransformInput": {"DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                                              "S3Uri": "s3://b/batch/nightly-summaries/input/"}}},
           "TransformOutput": {"S3OutputPath": "s3://b/batch/nightly-summaries/output/"}}
    assert batch_run_line(job) == (
        "batch run nightly-summaries-0a1b2c3d4e5f6a7b: Completed on 1 x ml.inf2.xlarge, model NightlySummariesModel-abc, "
        "s3://b/batch/nightly-summaries/input/ -> s3://b/batch/nightly-summaries/output/")


def test_an_endpoint_moto_created_today_is_dated_to_the_synthetic_months_first_day(capsys) -> None:
    from neuronfleet.lambdas.cost.logic.discovery import Discovered
    from scripts.demo import with_fleet_variants

    today = EndpointModel(endpoint="nf-batch-summarise", neuron_types=("ml.inf2.xlarge",), model="summarise",
                          created="2026-11-29T05:50:00+00:00")
    older = EndpointModel(endpoint="nf-batch-older", neuron_types=("ml.inf2.xlarge",), model="older",
                          created="2026-10-01T00:00:00+00:00")
    found = with_fleet_variants(Discovered(models=(today, older)), {}, month_start=date(2026, 10, 30))
    assert [m.created for m in found.models] == ["2026-10-30T00:00:00+00:00", "2026-10-01T00:00:00+00:00"]
    assert "nf-batch-summarise: created today in moto; dated 2026-10-30" in capsys.readouterr().out
    assert with_fleet_variants(Discovered(models=(today,)), {}).models[0].created == today.created
