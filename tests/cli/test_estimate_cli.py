"""``neuronfleet estimate``: AWS's own export formats, skipped rows counted, --price/--ratio, saving and break-even per
line, why a line has no estimate; and no Node.js."""

from __future__ import annotations

import copy
import csv
import gzip
import json
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from neuronfleet import CATALOG
from neuronfleet.cli.main import main
from neuronfleet.cli.output import BAD_INPUT, OK
from neuronfleet.cost.exports import ALREADY_NEURON, NOT_INSTANCE_TIME, NOT_USAGE, detect, read_export
from neuronfleet.facts.prices import price_table
from tests.publisher_examples import cli_outputs, response_errors
from tests.unit import test_cur_sql

SAMPLE = cli_outputs("ce-get-cost-and-usage")[0]
"""aws-cli's own GetCostAndUsage example (tests/data/aws_cli/ce-get-cost-and-usage.rst, verbatim)."""


def write(tmp_path: Path, name: str, doc: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def by_usage_type(*groups: tuple[str, str, str]) -> dict:
    """The publisher's example as a user exports it for the estimate: grouped by USAGE_TYPE; its two S3 groups
    kept (with an S3 usage type), GPU groups added (usage type, UnblendedCost, UsageQuantity)."""
    doc = copy.deepcopy(SAMPLE)
    doc["GroupDefinitions"] = [{"Type": "DIMENSION", "Key": "USAGE_TYPE"}]
    period = doc["ResultsByTime"][0]
    for g in period["Groups"]:
        g["Keys"] = ["USE2-TimedStorage-ByteHrs"]
    template = period["Groups"][0]
    for usage_type, usd, hours in groups:
        g = copy.deepcopy(template)
        g["Keys"] = [usage_type]
        g["Metrics"]["UnblendedCost"]["Amount"] = usd
        g["Metrics"]["BlendedCost"]["Amount"] = usd
        g["Metrics"]["UsageQuantity"] = {"Amount": hours, "Unit": "Hrs"}
        period["Groups"].append(g)
    assert response_errors("ce", "GetCostAndUsage", doc) == []  # botocore 1.44.5's output shape holds it
    return doc


def test_the_publishers_example_grouped_by_service_is_refused_naming_the_grouping_it_needs(tmp_path, capsys) -> None:
    assert response_errors("ce", "GetCostAndUsage", SAMPLE) == []
    path = write(tmp_path, "ce.json", SAMPLE)
    assert detect(path) == "cost-explorer"
    assert main(["estimate", str(path)]) == BAD_INPUT
    err = capsys.readouterr().err
    assert ("the Cost Explorer export: GroupDefinitions: got 'DIMENSION:SERVICE, TAG:Environment'; allowed: a "
            "grouping by the USAGE_TYPE dimension (aws ce get-cost-and-usage --group-by Type=DIMENSION,"
            "Key=USAGE_TYPE") in err
    assert "Traceback" not in err


def test_a_cost_explorer_export_skips_and_counts_non_gpu_rows_and_gives_saving_and_break_even(tmp_path, capsys) -> None:
    doc = by_usage_type(("USE2-BoxUsage:p5.48xlarge", "5504.00", "100"), ("USE2-BoxUsage:trn2.48xlarge", "447.01", "10"))
    path = write(tmp_path, "ce.json", doc)
    assert main(["estimate", str(path), "--json", "--workload", "training"]) == OK
    out = json.loads(capsys.readouterr().out)
    assert out["input"]["skipped"] == {
        ALREADY_NEURON: {"rows": 1, "usd": "447.01"},
        NOT_INSTANCE_TIME: {"rows": 2, "usd": "40.6226137778"},  # the example's two S3 groups
    }
    (line,) = out["lines"]
    trn2 = Decimal(str(CATALOG.get("trn2.48xlarge").price.usd_per_hour))
    assert (line["gpu_type"], line["neuron_type"], line["workload"], line["workload_from"]) == (
        "p5.48xlarge", "trn2.48xlarge", "training", "--workload")
    assert line["savings_usd"] == str((Decimal("5504.00") - 100 * trn2).quantize(Decimal("0.01")))
    # break-even in Neuron instances per GPU instance: the GPU hourly price over the Neuron one
    assert line["break_even_neuron_instances_per_gpu_instance"] == str(
        (Decimal("5504.00") / (100 * trn2)).quantize(Decimal("0.01")))
    assert (line["neuron_instances_per_gpu_instance"], line["ratio_from"]) == ("1", "assumed")
    assert main(["estimate", str(path), "--workload", "training"]) == OK
    text = capsys.readouterr().out
    assert "skipped 2 row(s), $40.62: not accelerator instance time" in text
    assert "p5.48xlarge        training  --workload" in text
    assert line["break_even_neuron_instances_per_gpu_instance"] in text


def test_ratio_and_price_overrides_reach_every_line(tmp_path, capsys) -> None:
    doc = by_usage_type(("USE2-BoxUsage:p5.48xlarge", "5504.00", "100"), ("USE2-Host:ml.g6e.xlarge", "20.00", "10"))
    path = write(tmp_path, "ce.json", doc)
    assert main(["estimate", str(path), "--json"]) == OK
    out = json.loads(capsys.readouterr().out)
    # SageMaker rows are priced at SageMaker rates (the built-in table's), the undeclared p5 row is unknown
    (g6e,) = [x for x in out["lines"] if x["gpu_type"] == "ml.g6e.xlarge"]
    assert (g6e["workload"], g6e["workload_from"], g6e["neuron_type"]) == ("inference", "usage type", "ml.inf2.24xlarge")
    assert g6e["neuron_price"] == price_table()["ml.inf2.24xlarge"]
    assert main(["estimate", str(path), "--json", "--workload", "p5.48xlarge=training", "--price",
                 "ml.inf2.24xlarge=1.5", "--ratio", "2",
                 "--ratio", "p5.48xlarge=0.5"]) == OK
    lines = {x["gpu_type"]: x for x in json.loads(capsys.readouterr().out)["lines"]}
    # 2 Neuron instances per GPU instance: twice the hours; p5 given its own ratio 0.5: half the hours
    assert lines["ml.g6e.xlarge"]["neuron_type"] == "ml.inf2.24xlarge"  # memory-matched: 44 GiB
    assert lines["ml.g6e.xlarge"]["neuron_estimate_usd"] == "30.00"  # 10 h x 2 x $1.5
    assert lines["ml.g6e.xlarge"]["neuron_price"]["source"] == "--price on the command line"
    assert (lines["ml.g6e.xlarge"]["neuron_instances_per_gpu_instance"], lines["ml.g6e.xlarge"]["ratio_from"]) == (
        "2", "given with --ratio")
    assert lines["p5.48xlarge"]["neuron_instance_hours"] == "50.00"
    assert lines["ml.g6e.xlarge"]["break_even_neuron_instances_per_gpu_instance"] == "1.33"  # $20 / (10 h x $1.5)


@pytest.mark.parametrize(("args", "message"), [
    (["--price", "p5.48xlarge=cheap"], "--price: got 'p5.48xlarge=cheap'; allowed: TYPE=USD per instance-hour"),
    (["--price", "m5.large=1"], "--price: got 'm5.large=1'; allowed: TYPE=USD"),
    (["--ratio", "0"], "--ratio: got '0'; allowed: N or GPU_TYPE=N, N the Neuron instances per GPU instance"),
    (["--ratio", "trn2.48xlarge=1"], "--ratio: got 'trn2.48xlarge=1'; allowed: N or GPU_TYPE=N"),
    (["--workload", "serving"], "--workload: got 'serving'; allowed: inference | training (every GPU row), or "
                                "GPU_TYPE=inference"),
    (["--workload", "inf2.xlarge=inference"], "--workload: got 'inf2.xlarge=inference'; allowed: inference"),
    (["--model-gib", "0"], "--model-gib: got '0'; allowed: N or GPU_TYPE=N, N the model's size in GiB"),
    (["--params", "70B"], "--dtype: got '(not given)'; allowed: bf16 | fp16 | fp8 | int8"),
    (["--params", "lots", "--dtype", "bf16"], "--params: got 'lots'; allowed: N or GPU_TYPE=N"),
    (["--workload-tag", "team"], "GroupDefinitions: got 'DIMENSION:USAGE_TYPE'; allowed: a grouping by the TAG team "
                                 "beside USAGE_TYPE, as --workload-tag team asks"),
])
def test_bad_overrides_are_exit_2_naming_flag_value_and_allowed(tmp_path, capsys, args, message) -> None:
    path = write(tmp_path, "ce.json", by_usage_type(("USE2-BoxUsage:p5.48xlarge", "1", "1")))
    assert main(["estimate", str(path), *args]) == BAD_INPUT
    assert message in capsys.readouterr().err


def test_exactly_one_source_of_spend(tmp_path, capsys) -> None:
    assert main(["estimate"]) == BAD_INPUT
    assert "EXPORT | --csv | --cost-explorer: got '0 given'; allowed: exactly one source of spend" in \
        capsys.readouterr().err


def _cur_csv(path: Path, *, gz: bool = False) -> Path:
    """The collector's CUR 2.0 sample lines (tests/unit/test_cur_sql.py, CUR 2.0 column names) as a Data Exports
    CSV: a header of column names, one line item a row, empty for NULL."""
    names = ["line_item_usage_start_date", "line_item_product_code", "line_item_line_item_type",
             "line_item_usage_type", "line_item_usage_amount", "line_item_unblended_cost",
             "line_item_net_unblended_cost", "savings_plan_savings_plan_effective_cost", "reservation_effective_cost"]
    assert all(n in test_cur_sql.SCHEMA for n in names)
    opener = gzip.open if gz else open
    with opener(path, "wt", newline="") as fh:  # type: ignore[operator]
        w = csv.writer(fh)
        w.writerow(names)
        for line in test_cur_sql.LINES:
            w.writerow(["" if v is None else v for v in line[:9]])
    return path


def test_a_cur2_export_agrees_with_the_collectors_athena_query(tmp_path) -> None:
    got = read_export(_cur_csv(tmp_path / "cur.csv.gz", gz=True))
    assert got.format == "cur2"
    con = duckdb.connect()
    con.execute(test_cur_sql.SCHEMA)
    con.executemany("INSERT INTO cur VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [x for x in test_cur_sql.LINES if not x[0].startswith("2026-10")])
    sql_rows = test_cur_sql.run(con, "spend_by_fleet_usage_type_day")
    gpu_sql = sum(Decimal(str(r["net_amortized_cost"])) for r in sql_rows if ":p5." in r["usage_type"])
    assert sum(r.amount for r in got.rows) == gpu_sql == Decimal("550.4")  # block fee and its refund net out
    assert {r.usage for r in got.rows} == {"ec2", "capacity-block"}
    assert got.skipped == {ALREADY_NEURON: 6, NOT_INSTANCE_TIME: 2, NOT_USAGE: 4}


def test_a_cur2_export_without_its_cost_column_names_the_columns_it_needs(tmp_path, capsys) -> None:
    path = tmp_path / "cur.csv"
    path.write_text("line_item_usage_type,line_item_usage_amount\nUSE2-BoxUsage:p5.48xlarge,1\n")
    assert main(["estimate", str(path)]) == BAD_INPUT
    assert "the CUR 2.0 export: (header): got 'line_item_usage_amount, line_item_usage_type'; allowed: the columns " \
           "line_item_unblended_cost" in capsys.readouterr().err


def test_a_legacy_cur_header_is_read_under_its_own_names(tmp_path) -> None:
    path = tmp_path / "cur.csv"
    path.write_text("lineItem/LineItemType,lineItem/UsageType,lineItem/UsageAmount,lineItem/UnblendedCost\n"
                    "Usage,USE2-BoxUsage:p5.48xlarge,10,550.40\nTax,,0,3.00\n")
    got = read_export(path)
    assert got.format == "cur" and [(r.instance_type, r.amount, r.usage_hours) for r in got.rows] == [
        ("p5.48xlarge", Decimal("550.40"), Decimal(10))]
    assert got.skipped == {NOT_USAGE: 1}


def test_a_parquet_export_is_refused_with_the_format_to_choose(tmp_path, capsys) -> None:
    path = tmp_path / "cur.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 16)
    assert main(["estimate", str(path)]) == BAD_INPUT
    assert "got 'a Parquet file'; allowed: CSV or gzip CSV" in capsys.readouterr().err


def test_usage_type_beside_another_grouping_is_found_by_its_definition(tmp_path, capsys) -> None:
    doc = by_usage_type(("USE2-BoxUsage:p5.48xlarge", "5504.00", "100"))
    doc["GroupDefinitions"] = [{"Type": "TAG", "Key": "Environment"}, {"Type": "DIMENSION", "Key": "USAGE_TYPE"}]
    for g in doc["ResultsByTime"][0]["Groups"]:
        g["Keys"] = ["Environment$Dev", g["Keys"][0]]
    assert response_errors("ce", "GetCostAndUsage", doc) == []
    assert main(["estimate", str(write(tmp_path, "ce.json", doc)), "--json"]) == OK
    (line,) = json.loads(capsys.readouterr().out)["lines"]
    assert (line["gpu_type"], line["gpu_spend_usd"]) == ("p5.48xlarge", "5504.00")


def test_live_cost_explorer_without_credentials_is_one_line_exit_2(monkeypatch, capsys) -> None:
    from botocore.exceptions import NoCredentialsError

    import neuronfleet.cli.estimate as estimate_module

    def no_credentials(days: int) -> list:
        raise NoCredentialsError()

    monkeypatch.setattr(estimate_module, "rows_from_cost_explorer", no_credentials)
    assert main(["estimate", "--cost-explorer"]) == BAD_INPUT
    err = capsys.readouterr().err
    assert "--cost-explorer: got 'NoCredentialsError: Unable to locate credentials'; allowed: credentials allowed " \
           "ce:GetCostAndUsage" in err and "Traceback" not in err


def test_a_bad_amount_names_the_group_the_metric_and_the_value(tmp_path, capsys) -> None:
    doc = by_usage_type(("USE2-BoxUsage:p5.48xlarge", "5504.00", "100"))
    doc["ResultsByTime"][0]["Groups"][-1]["Metrics"]["UnblendedCost"]["Amount"] = "lots"
    assert main(["estimate", str(write(tmp_path, "ce.json", doc))]) == BAD_INPUT
    assert ("the Cost Explorer export: ResultsByTime[2017-09-01] USE2-BoxUsage:p5.48xlarge: "
            "Metrics.UnblendedCost.Amount: got 'lots'; allowed: a decimal number of USD") in capsys.readouterr().err
