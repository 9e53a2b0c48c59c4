"""``neuronfleet estimate``: the workload declared, never guessed (usage type, tag, --workload, unknown), sizing by
the model at a tensor-parallel degree Neuron supports, and the serving team's export of issue 35 line by line."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from neuronfleet import CATALOG
from neuronfleet.cli.estimate import PRICE_REGION
from neuronfleet.cli.main import main
from neuronfleet.cli.output import BAD_INPUT, OK
from neuronfleet.cost.exports import read_export
from neuronfleet.facts.catalog import AcceleratorFamily, accelerators_of
from neuronfleet.facts.prices import price_table
from neuronfleet.lambdas.cost.logic.evaluation import (
    NEURON_CORES,
    Declared,
    ModelSize,
    Work,
    estimate,
    tensor_parallel_degree,
    workload_of,
)
from neuronfleet.lambdas.cost.logic.rows import CostRow
from tests.publisher_examples import cli_outputs, response_errors

SAMPLE = cli_outputs("ce-get-cost-and-usage")[0]
"""aws-cli's own GetCostAndUsage example (tests/data/aws_cli/ce-get-cost-and-usage.rst, verbatim): grouped by the
SERVICE dimension and the TAG Environment, keys ``Environment$`` (untagged) and ``Environment$Dev``."""

SERVING = (("USE1-BoxUsage:g6e.12xlarge", "Environment$", "7590.00", "720"),
           ("USE1-BoxUsage:p5.48xlarge", "Environment$", "39628.80", "720"),
           ("USE1-Host:ml.g5.2xlarge", "Environment$", "1090.80", "720"),
           ("USE1-Host:ml.p4d.24xlarge", "Environment$", "27135.36", "720"))
"""Issue 35's serving team: vLLM on EC2 g6e/p5, SageMaker ml.g5/ml.p4d endpoints, a month of hours."""


def tagged_export(tmp_path: Path, groups: tuple[tuple[str, str, str, str], ...]) -> Path:
    """The publisher's example as a team exports it for the estimate: its TAG grouping (Environment) and its two
    groups kept verbatim, SERVICE replaced by USAGE_TYPE (the S3 groups get an S3 usage type), GPU groups added."""
    doc = copy.deepcopy(SAMPLE)
    assert doc["GroupDefinitions"][1] == {"Type": "TAG", "Key": "Environment"}
    doc["GroupDefinitions"][0] = {"Type": "DIMENSION", "Key": "USAGE_TYPE"}
    period = doc["ResultsByTime"][0]
    assert [g["Keys"][1] for g in period["Groups"]] == ["Environment$", "Environment$Dev"]
    for g in period["Groups"]:
        g["Keys"][0] = "USE1-TimedStorage-ByteHrs"
    template = period["Groups"][0]
    for usage_type, tag, usd, hours in groups:
        g = copy.deepcopy(template)
        g["Keys"] = [usage_type, tag]
        g["Metrics"]["UnblendedCost"]["Amount"] = usd
        g["Metrics"]["BlendedCost"]["Amount"] = usd
        g["Metrics"]["UsageQuantity"] = {"Amount": hours, "Unit": "Hrs"}
        period["Groups"].append(g)
    assert response_errors("ce", "GetCostAndUsage", doc) == []
    path = tmp_path / "ce.json"
    path.write_text(json.dumps(doc))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["estimate", *args, "--json"]) == OK
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return,unused-ignore]


def test_undeclared_ec2_gpu_rows_are_unknown_with_both_targets_and_out_of_the_totals(tmp_path, capsys) -> None:
    path = tagged_export(tmp_path, SERVING)
    out = run(capsys, str(path))
    by = {x["gpu_type"]: x for x in out["lines"]}
    g6e = by["g6e.12xlarge"]
    assert (g6e["workload"], g6e["workload_from"], g6e["neuron_type"], g6e["neuron_estimate_usd"]) == (
        "unknown", "unknown", None, None)
    assert set(g6e["targets"]) == {"inference", "training"}
    assert g6e["targets"]["inference"]["neuron_type"].startswith("inf2.")
    assert g6e["targets"]["training"]["neuron_type"].startswith("trn")
    assert all(t["neuron_estimate_usd"] for t in g6e["targets"].values())
    # SageMaker hosting rows are inference by their usage type; only they are in the totals
    assert {(x["gpu_type"], x["workload"], x["workload_from"]) for x in out["lines"] if x["workload"] != "unknown"} == {
        ("ml.g5.2xlarge", "inference", "usage type"), ("ml.p4d.24xlarge", "inference", "usage type")}
    assert out["gpu_spend_usd"] == "28226.16"  # 1090.80 + 27135.36: the unknown lines are left out
    assert out["unknown"]["gpu_spend_usd"] == "47218.80" and "--workload-tag KEY" in out["unknown"]["note"]
    assert not any(x["workload"] == "training" for x in out["lines"])
    assert main(["estimate", str(path)]) == OK
    text = capsys.readouterr().out
    assert "left out of the total: 2 line(s), $47218.80 of GPU spend whose workload nobody declared" in text
    assert "<- as inference" in text and "<- as training" in text


def test_the_serving_team_declared_as_inference_is_estimated_line_by_line_at_built_in_prices(tmp_path, capsys) -> None:
    """Issue 35's done-when: no --price; SageMaker rows at SageMaker rates, EC2 rows at EC2 rates. p5's 640 GiB fit
    no Inferentia type memory-matched: the model (70B in bf16) sizes it."""
    table = price_table(CATALOG, PRICE_REGION)  # what the command uses without --region or a fleet file
    assert {"ml.g5.2xlarge", "ml.p4d.24xlarge", "ml.inf2.xlarge", "ml.inf2.48xlarge"} <= set(table)
    out = run(capsys, str(tagged_export(tmp_path, SERVING)), "--workload", "inference",
              "--params", "p5.48xlarge=70B", "--dtype", "bf16")
    by = {x["gpu_type"]: x for x in out["lines"]}
    assert set(by) == {"g6e.12xlarge", "p5.48xlarge", "ml.g5.2xlarge", "ml.p4d.24xlarge"} and not out["not_estimated"]
    assert {t: (x["workload"], x["workload_from"]) for t, x in by.items()} == {
        "g6e.12xlarge": ("inference", "--workload"), "p5.48xlarge": ("inference", "--workload"),
        "ml.g5.2xlarge": ("inference", "usage type"), "ml.p4d.24xlarge": ("inference", "usage type")}
    assert by["ml.g5.2xlarge"]["neuron_type"] == "ml.inf2.xlarge"        # 22 GiB: memory-matched
    assert by["ml.p4d.24xlarge"]["neuron_type"] == "ml.inf2.48xlarge"    # 320 GiB
    assert by["g6e.12xlarge"]["neuron_type"] == "inf2.24xlarge"          # 178 GiB
    assert by["p5.48xlarge"]["neuron_type"] == "inf2.24xlarge"           # 130.4 GiB at TP 12 x 16 GiB
    assert "tensor-parallel degree 12" in by["p5.48xlarge"]["mapping"]
    for x in by.values():
        neuron = Decimal(table[x["neuron_type"]]["usd_per_hour"])
        assert x["neuron_price"] == table[x["neuron_type"]]
        assert x["neuron_estimate_usd"] == str((720 * neuron).quantize(Decimal("0.01")))
        assert x["break_even_neuron_instances_per_gpu_instance"] == str(
            (Decimal(x["gpu_spend_usd"]) / (720 * neuron)).quantize(Decimal("0.01")))
    total = sum(Decimal(x["neuron_estimate_usd"]) for x in by.values())
    assert abs(Decimal(out["neuron_estimate_usd"]) - total) <= Decimal("0.02") and out["unknown"] is None


def test_a_tag_says_the_workload_per_row_in_the_publishers_tag_grouping(tmp_path, capsys) -> None:
    path = tagged_export(tmp_path, (("USE1-BoxUsage:g6e.12xlarge", "Environment$inference", "100", "10"),
                                    ("USE1-BoxUsage:g6e.12xlarge", "Environment$Training", "200", "20"),
                                    ("USE1-BoxUsage:g6e.12xlarge", "Environment$Dev", "300", "30"),
                                    ("USE1-BoxUsage:g6e.12xlarge", "Environment$", "400", "40")))
    got = read_export(path, workload_tag="Environment")
    assert [label for label, _ in got.labels] == ["inference", "Training", "", ""]
    assert got.other_labels == {"tag Environment=Dev": 1}
    out = run(capsys, str(path), "--workload-tag", "Environment")
    lines = {(x["workload"], x["workload_from"]): x["gpu_spend_usd"] for x in out["lines"]}
    # Dev says neither: undeclared like the untagged row, so unknown (never training)
    assert lines == {("inference", "tag Environment=inference"): "100.00",
                     ("training", "tag Environment=Training"): "200.00", ("unknown", "unknown"): "700.00"}
    out = run(capsys, str(path), "--workload-tag", "Environment", "--workload", "g6e.12xlarge=inference")
    assert {(x["workload"], x["workload_from"]): x["gpu_spend_usd"] for x in out["lines"]}[
        ("inference", "--workload TYPE=")] == "700.00"


CUR2_HEADER = ("line_item_usage_start_date,line_item_line_item_type,line_item_usage_type,line_item_usage_amount,"
               "line_item_unblended_cost,resource_tags\n")


def test_cur2_resource_tags_and_the_legacy_tag_column_say_the_workload(tmp_path, capsys) -> None:
    cur2 = tmp_path / "cur2.csv"
    cur2.write_text(CUR2_HEADER
                    + '2026-11-01T00:00:00Z,Usage,USE1-BoxUsage:g5.2xlarge,10,12.12,"{""user_workload"":""inference""}"\n'
                    + "2026-11-01T00:00:00Z,Usage,USE1-BoxUsage:g5.2xlarge,10,12.12,\n")
    got = read_export(cur2, workload_tag="workload")
    assert [label for label, _ in got.labels] == ["inference", ""]
    out = run(capsys, str(cur2), "--workload-tag", "workload")
    assert sorted((x["workload"], x["workload_from"]) for x in out["lines"]) == [
        ("inference", "tag workload=inference"), ("unknown", "unknown")]
    legacy = tmp_path / "cur.csv"
    legacy.write_text("lineItem/LineItemType,lineItem/UsageType,lineItem/UsageAmount,lineItem/UnblendedCost,"
                      "resourceTags/user:workload\nUsage,USE1-BoxUsage:g5.2xlarge,10,12.12,training\n")
    out = run(capsys, str(legacy), "--workload-tag", "workload")
    assert [(x["workload"], x["workload_from"]) for x in out["lines"]] == [("training", "tag workload=training")]
    assert main(["estimate", str(legacy), "--workload-tag", "team"]) == BAD_INPUT
    assert "--workload-tag: got 'team'; allowed: a tag the export carries: no resourceTags/user:team column" in \
        capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text(CUR2_HEADER + "2026-11-01T00:00:00Z,Usage,USE1-BoxUsage:g5.2xlarge,10,12.12,workload=inference\n")
    assert main(["estimate", str(bad), "--workload-tag", "workload"]) == BAD_INPUT
    assert "line 2: resource_tags: got 'workload=inference'; allowed: a JSON object of tag keys to values" in \
        capsys.readouterr().err


def test_sagemaker_usage_types_decide_and_a_contradicting_declaration_is_refused(tmp_path, capsys) -> None:
    row = CostRow(day="", fleet="", service="sagemaker", instance_type="ml.g5.2xlarge", family="gpu",
                  amount=Decimal(1), usage_hours=Decimal(1), usage="sagemaker-training", usage_type="Train:ml.g5.2xlarge")
    assert workload_of(row, Declared(every="inference")) == ("training", "usage type")
    for usage_type in ("USE1-Host:ml.g5.2xlarge", "USE1-AsyncInf:ml.g5.2xlarge", "USE1-Transform:ml.g5.2xlarge"):
        assert workload_of(replace(row, usage_type=usage_type)) == ("inference", "usage type")
    ec2 = CostRow(day="", fleet="", service="ec2", instance_type="p5.48xlarge", family="gpu", amount=Decimal(1),
                  usage_hours=Decimal(1), usage="ec2", usage_type="USE1-BoxUsage:p5.48xlarge")
    assert workload_of(ec2) == ("unknown", "unknown")
    assert workload_of(Work(ec2, "inference", "tag team=inference"), Declared(every="training")) == (
        "inference", "tag team=inference")
    path = tagged_export(tmp_path, (("USE1-Host:ml.g5.2xlarge", "Environment$", "10", "10"),))
    assert main(["estimate", str(path), "--workload", "ml.g5.2xlarge=training"]) == BAD_INPUT
    assert ("--workload: got 'ml.g5.2xlarge=training'; allowed: the workload of GPU rows whose usage type does not "
            "say; ml.g5.2xlarge's row USE1-Host:ml.g5.2xlarge is inference by its usage type") in capsys.readouterr().err


def test_a_simple_csv_says_the_workload_in_its_column_else_unknown(tmp_path, capsys) -> None:
    path = tmp_path / "gpu.csv"
    path.write_text("instance_type,amount_usd,hours,workload\ng5.2xlarge,12.12,10,inference\nml.g5.2xlarge,15.15,10,\n")
    out = run(capsys, "--csv", str(path))
    assert sorted((x["gpu_type"], x["workload"], x["workload_from"]) for x in out["lines"]) == [
        ("g5.2xlarge", "inference", "simple CSV column"), ("ml.g5.2xlarge", "unknown", "unknown")]
    assert main(["estimate", "--csv", str(path), "--workload-tag", "team"]) == BAD_INPUT
    assert "--workload-tag: got 'team'; allowed: an export that carries tags" in capsys.readouterr().err


def test_sizing_by_the_model_sends_a_small_g6e_xlarge_model_to_inf2_xlarge(tmp_path, capsys) -> None:
    """The issue's example: memory matching alone sends ml.g6e.xlarge (44 GiB) to ml.inf2.24xlarge; a model that
    fits two NeuronCores goes to ml.inf2.xlarge."""
    prices = {t: {"usd_per_hour": p, "source": "test table", "as_of": "2026-11-28"} for t, p in (
        ("ml.g6e.xlarge", "2.5"), ("ml.inf2.xlarge", "0.99"), ("ml.inf2.8xlarge", "2.36"),
        ("ml.inf2.24xlarge", "7.79"), ("ml.inf2.48xlarge", "15.58"))}
    row = CostRow(day="", fleet="", service="sagemaker", instance_type="ml.g6e.xlarge", family="gpu",
                  amount=Decimal(25), usage_hours=Decimal(10), usage="sagemaker-hosting",
                  usage_type="USE1-Host:ml.g6e.xlarge")
    acc = accelerators_of(CATALOG)
    (matched,) = estimate([row], prices, accelerators=acc)["lines"]
    assert matched["neuron_type"] == "ml.inf2.24xlarge" and matched["sizing"].startswith("memory-matched: no model size")
    out = estimate([row], prices, accelerators=acc, models={"": ModelSize(Decimal(15), "--model-gib 15")})
    (sized,) = out["lines"]
    assert sized["neuron_type"] == "ml.inf2.xlarge"
    assert "at tensor-parallel degree 2 (2 NeuronCores x 16 GiB" in sized["mapping"] and sized["sizing"] == "by the model"
    assert "Neuron Calculator" in out["sizing"] and "no headroom is added" in out["sizing"]
    # 8B in bf16 is 14.9 GiB: the same; 40 GiB needs 3 cores -> degree 4 -> inf2.24xlarge (12 cores)
    params = ModelSize.of_params(Decimal(8_000_000_000), "bf16", "--params 8B")
    assert estimate([row], prices, accelerators=acc, models={"ml.g6e.xlarge": params})["lines"][0][
        "neuron_type"] == "ml.inf2.xlarge"
    assert estimate([row], prices, accelerators=acc, models={"": ModelSize(Decimal(40), "x")})["lines"][0][
        "neuron_type"] == "ml.inf2.24xlarge"
    # through the CLI, with the price given
    path = tagged_export(tmp_path, (("USE1-Host:ml.g6e.xlarge", "Environment$", "25", "10"),))
    cli = run(capsys, str(path), "--model-gib", "ml.g6e.xlarge=15", "--price", "ml.inf2.xlarge=0.99")
    assert cli["lines"][0]["neuron_type"] == "ml.inf2.xlarge"


@pytest.mark.parametrize(("neuron_type", "gib", "degree"), [
    ("inf2.xlarge", 32, 2), ("inf2.xlarge", 33, None), ("inf2.24xlarge", 33, 4), ("inf2.24xlarge", 130, 12),
    ("inf2.48xlarge", 193, 24), ("trn1.32xlarge", 33, 8), ("trn1.32xlarge", 129, 32), ("trn1.2xlarge", 40, None),
    ("trn2.48xlarge", 130, 6), ("trn2.48xlarge", 1537, None), ("trn2.3xlarge", 96, 4), ("p5.48xlarge", 1, None),
])
def test_tensor_parallel_degrees_are_the_sourced_ones(neuron_type, gib, degree) -> None:
    assert tensor_parallel_degree(neuron_type, Decimal(gib)) == degree


def test_neuron_core_memory_agrees_with_the_catalog() -> None:
    """Every Neuron type of the catalog has its NeuronCores and GiB per core here, and they multiply to its
    accelerator memory (inf2: 16 GiB per NeuronCore-v2; trn2 at LNC=2: 24 GiB per logical NeuronCore)."""
    neuron = [s for s in CATALOG if s.family in (AcceleratorFamily.INFERENTIA, AcceleratorFamily.TRAINIUM)]
    assert {s.instance_type for s in neuron} == set(NEURON_CORES)
    for s in neuron:
        cm = NEURON_CORES[s.instance_type]
        assert cm.cores * cm.gib_per_core == s.accelerator_memory_gib, s.instance_type
        assert cm.source and all(d <= 64 for d in cm.degrees)


def test_a_fleet_files_model_size_sizes_its_gpu_variants_type(tmp_path, capsys) -> None:
    """config/prod.yaml serves a 140 GiB model (model_size_gib) whose GPU variant is ml.p5.48xlarge: an ml.p5 hosting
    row is sized by it (640 GiB memory-matched fits no Inferentia type)."""
    prod = Path(__file__).parents[2] / "config" / "prod.yaml"
    path = tagged_export(tmp_path, (("USE1-Host:ml.p5.48xlarge", "Environment$", "1130.68", "10"),))
    out = run(capsys, str(path), "--fleet", str(prod), "--price", "ml.inf2.24xlarge=7.79")
    (line,) = out["lines"]
    assert line["sizing"] == "by the model" and f"({prod}: endpoints[0].model_size_gib)" in line["mapping"]
    assert line["neuron_type"] == "ml.inf2.24xlarge"  # 140 GiB: 9 NeuronCores -> degree 12 (12 x 16 = 192 GiB)
    out = run(capsys, str(path), "--price", "ml.inf2.24xlarge=7.79")
    assert out["lines"] == [] and "no inferentia type has 640 GiB" in out["not_estimated_why"]["ml.p5.48xlarge"]


def test_the_text_output_prints_the_suggestion_for_a_bursty_type(tmp_path, capsys) -> None:
    """Issue 43: a daily export whose g5.2xlarge runs 12 h on two of seven days (duty 0.14, bursty) gets the JSON's
    suggestion in the text too, once, after the table; a steady week gets none."""
    from tests.unit.test_scale_to_zero import daily_export

    for hours, bursty in ((["12", "0", "0", "12", "0", "0", "0"], True), (["24"] * 7, False)):
        path = tmp_path / "ce-daily.json"
        path.write_text(json.dumps(daily_export(hours)))
        suggested = run(capsys, str(path), "--workload", "inference")["suggestions"]
        assert main(["estimate", str(path), "--workload", "inference"]) == OK
        text = capsys.readouterr().out
        lines = [line for line in text.splitlines() if line.startswith("suggestion: ")]
        assert lines == [f"suggestion: {s}" for s in suggested]
        assert len(lines) == (1 if bursty else 0)
        assert all(line.startswith("suggestion: g5.2xlarge: bursty (duty 0.14 below 0.5") for line in lines)
