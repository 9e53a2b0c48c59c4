"""The report's first claim: the net monthly cost of the fleet as deployed against GPU alone for the same work
(lambdas/cost/logic/net.py), built by report.build from the ledger's rows. Issue 35: the prod report said "$1,121.33 a
month saved (5.66 %)" while the hot p5 standby it deploys cost $39,628.80 a month; the pilot's headline was computed
on the GPU fallback pool's CUDA-only work."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from neuronfleet.lambdas.cost.logic.economics import EndpointModel
from neuronfleet.lambdas.cost.logic.net import Overhead, OverheadLine, net_line
from neuronfleet.lambdas.cost.logic.rows import CostRow, family_of
from neuronfleet.lambdas.cost.report import build
from neuronfleet_contract.judge import VariantFigures, Verdict

START = date(2026, 10, 29)
END = START + timedelta(days=30)
# prices as the report's table holds them (SageMaker hosting rates: any table will do, the figures follow from it)
PRICES = {"ml.inf2.48xlarge": {"usd_per_hour": "15.58", "source": "test", "as_of": "2026-11-28"},
          "ml.p5.48xlarge": {"usd_per_hour": "113.07", "source": "test", "as_of": "2026-11-28"},
          "ml.p5en.48xlarge": {"usd_per_hour": "130.00", "source": "test", "as_of": "2026-11-28"}}
OVERHEAD = Overhead(lines=(OverheadLine("NAT gateway x 3", Decimal("98.55"), "test"),
                           OverheadLine("FSx for Lustre 4,800 GiB", Decimal("696.00"), "test")),
                    not_priced=("CloudWatch Logs ingestion: usage-based",))


def day(n: int) -> str:
    return (START + timedelta(days=n)).isoformat()


def row(instance_type: str, amount: Decimal | str, n: int, *, hours: Decimal | int = 24,
        usage: str = "sagemaker-hosting") -> CostRow:
    return CostRow(day=day(n), fleet="nf-prod", service="sagemaker" if usage.startswith("sagemaker") else "ec2",
                   instance_type=instance_type, family=family_of(instance_type) or "?", amount=Decimal(amount),
                   usage_hours=Decimal(hours), usage=usage)


# the reference production fleet, warm: chat on 2 x ml.inf2.48xlarge, the p5 standby a pool of its Neuron variant
# (after ml.p5en.48xlarge), nothing running on GPU; embed with no GPU variant; two trn2 training clusters; the GPU
# fallback pool 2 x p5 for 8 h every third day
CHAT = EndpointModel(endpoint="nfprodinference-chat-1", model="chat", neuron_types=("ml.inf2.48xlarge",),
                     gpu_pool_types=("ml.p5en.48xlarge", "ml.p5.48xlarge"))
EMBED = EndpointModel(endpoint="nfprodinference-embed-1", model="embed", neuron_types=("ml.inf2.xlarge",))


def prod_rows() -> list[CostRow]:
    rows = []
    for n in range(30):
        rows += [row("ml.inf2.48xlarge", Decimal("15.58") * 48, n, hours=48), row("ml.inf2.xlarge", "24", n),
                 row("trn2.48xlarge", "0", n, hours=96, usage="ec2"), row("trn2.48xlarge", "4300", n, hours=0,
                                                                          usage="capacity-block")]
        if n % 3 == 0:
            rows.append(row("p5.48xlarge", Decimal("55.04") * 16, n, hours=16, usage="ec2"))
    return rows


def prod(**kw) -> dict:
    args = dict(fleet="nf-prod", rows=prod_rows(), start=START, end=END, invocations={}, tokens={}, prices=PRICES,
                models=[CHAT, EMBED], throughput={CHAT.endpoint: Decimal(4)}, overhead=OVERHEAD)
    return build(**(args | kw))


def test_a_warm_standby_is_priced_at_the_gpu_types_list_price_and_the_fleet_saves_as_deployed() -> None:
    n = prod()["net"]
    # chat: 1,440 inf2.48xlarge hours at $15.58 = $22,435.20; GPU alone: 1,440 / 4 = 360 p5 hours at the table's
    # $113.07 (a warm standby records no GPU hours) = $40,705.20; the pool's $8,806.40 on both sides; overhead $794.55
    assert [(p["part"], p["as_deployed_usd"], p["gpu_only_usd"]) for p in n["parts"]] == [
        ("neuron_serving", "22435.20", "40705.20"), ("gpu_fallback_pool", "8806.40", "same"),
        ("kit_overhead", "98.55", None), ("kit_overhead", "696.00", None)]
    assert (n["as_deployed_usd"], n["gpu_only_usd"], n["savings_usd"], n["savings_percent"]) == (
        "32036.15", "49511.60", "17475.45", "35.30")
    assert n["per_work"]["savings_percent"] == "44.88"  # before the pool and the kit's own cost
    assert "the price table's list $113.07 per ml.p5.48xlarge instance-hour" in n["parts"][0]["note"]
    assert n["overhead_not_priced"] == ["CloudWatch Logs ingestion: usage-based"]


def test_the_parts_and_what_is_left_out_add_up_to_the_fleets_whole_spend_and_the_kits_own_cost() -> None:
    report = prod()
    n = report["net"]
    assert [(o["part"], o["usd"]) for o in n["outside"]] == [("model", "720.00"), ("training", "129000.00")]
    recorded = sum(Decimal(p["as_deployed_usd"]) for p in n["parts"] if p["part"] != "kit_overhead")
    outside = sum(Decimal(o["usd"]) for o in n["outside"])
    assert recorded + outside == Decimal(report["spend_usd"]["total"])  # 30 of 30 days: monthly = the period
    assert Decimal(n["outside_usd"]) == outside


def test_a_hot_standby_is_in_the_net_and_makes_the_fleet_cost_more_than_gpu_alone() -> None:
    hot = EndpointModel(endpoint=CHAT.endpoint, model="chat", neuron_types=("ml.inf2.48xlarge",),
                        gpu_type="ml.p5.48xlarge", gpu_role="standby", gpu_pool_types=("ml.p5en.48xlarge",))
    rows = prod_rows() + [row("ml.p5.48xlarge", "2713.68", d) for d in range(30)]  # 1 x p5 around the clock
    report = prod(rows=rows, models=[hot, EMBED])
    n = report["net"]
    (standby,) = [p for p in n["parts"] if p["part"] == "gpu_standby"]
    assert (standby["as_deployed_usd"], standby["gpu_only_usd"]) == ("81410.40", None)
    assert Decimal(n["savings_usd"]) < 0
    assert report["story"].startswith(
        "As deployed, the compared serving, the GPU kept beside it and the kit's own running cost come to $113446.55 a "
        "month against $49511.60 on GPU alone for the same work: $63934.95 a month more than GPU alone (129.13% more); "
        "left out for want of a GPU figure: embed, training on Trainium;")
    assert "chat keeps a hot GPU standby on ml.p5.48xlarge" in report["story"]


def test_no_figure_for_the_work_means_no_gpu_alone_figure_and_says_why() -> None:
    n = prod(throughput={})["net"]
    assert n["gpu_only_usd"] is None and n["savings_usd"] is None
    assert "no model's work has a GPU figure yet" in n["why_none"]
    assert [o["part"] for o in n["outside"]] == ["model", "model", "training"]
    assert net_line(n) == (
        "as deployed, the GPU kept beside the work and the kit's own running cost come to $9600.95 a month (no model's "
        "work has a GPU figure yet (a GPU baseline or shadow variant, or a throughput ratio in the fleet file): nothing "
        "to compare the fleet against); left out for want of a GPU figure: chat, embed, training on Trainium")


def test_a_no_go_model_is_left_out_with_the_judges_reason() -> None:
    no_go = Verdict(endpoint=CHAT.endpoint, run_id="r", task="generation", go=False, failing=(), measures={},
                    variants={}, prompts=20, unit="tokens")
    n = prod(verdicts=[no_go])["net"]
    (chat,) = [o for o in n["outside"] if o["what"].startswith("chat")]
    assert "no-go" in chat["why"] and n["gpu_only_usd"] is None


def test_no_recorded_day_is_no_net_with_its_reason() -> None:
    n = prod(rows=[])["net"]
    assert n["as_deployed_usd"] is None and n["why_none"] == "no days of spend recorded" and net_line(n) == ""


def shadow_pilot() -> dict:
    """The pilot: chat on 1 x ml.inf2.24xlarge with a GPU shadow on 1 x ml.g6e.12xlarge serving a copy of every
    request; the GPU fallback pool (g6e.48xlarge on EC2, CUDA-only work) runs 2 instances 8 h every third day."""
    chat = EndpointModel(endpoint="nfpilot-chat-1", model="chat", neuron_types=("ml.inf2.24xlarge",),
                         gpu_type="ml.g6e.12xlarge", gpu_role="shadow", gpu_pool_types=("ml.g6e.12xlarge",))
    rows, calls = [], {}
    for n in range(30):
        rows += [row("ml.inf2.24xlarge", "180", n), row("ml.g6e.12xlarge", "300", n)]
        if n % 3 == 0:
            rows.append(row("g6e.48xlarge", "482.10", n, hours=16, usage="ec2"))
        calls[(chat.endpoint, "neuron", day(n))] = Decimal(1_000_000)
        calls[(chat.endpoint, "gpu", day(n))] = Decimal(1_000_000)
    return build(fleet="nf-prod", rows=rows, start=START, end=END, invocations=calls, tokens={}, prices=PRICES,
                 models=[chat], accelerators={"g6e.48xlarge": ("gpu", 357), "trn1.32xlarge": ("trainium", 512)})


def test_the_pilots_figures_come_from_its_gpu_shadow_never_from_the_fallback_pools_cuda_only_work() -> None:
    report = shadow_pilot()
    # the pool's EC2 rows are the fleet's own GPU work: never priced on Neuron by the evaluation estimate
    assert report["evaluation_estimate"]["lines"] == []
    n = report["net"]
    # chat: Neuron $5,400 against the shadow's $9,000 for the same traffic; the shadow itself is the pilot's cost
    assert [(p["part"], p["as_deployed_usd"], p["gpu_only_usd"]) for p in n["parts"]] == [
        ("neuron_serving", "5400.00", "9000.00"), ("gpu_shadow", "9000.00", None), ("gpu_fallback_pool", "4821.00", "same")]
    assert n["per_work"]["savings_percent"] == "40.00"
    # GPU alone for chat's work is what its shadow cost: the page states that figure once, in the shadow's row
    assert n["parts"][0]["gpu_only_is"] == "gpu_shadow"
    from neuronfleet.lambdas.cost.logic.report_page import render_html
    from tests.unit.test_report_page import figures_stated

    stated = [v for v in figures_stated(render_html(report)) if v]
    assert stated.count(Decimal("9000.00")) == 1, stated
    assert "against the pilot's GPU shadow, measured on the same traffic" in report["story"]
    assert "40.00% less than GPU alone" in report["story"]
    # the net as deployed counts the shadow: during the pilot the fleet pays both
    assert Decimal(n["savings_usd"]) == Decimal("-5400.00")


def test_judged_figures_are_no_capacity_figure_for_the_net() -> None:
    figures = VariantFigures(invocations=20, errors=0, p50_ms=400.0, p99_ms=600.0, units_per_second=250.0,
                             usd_per_million=1.0)
    judged = Verdict(endpoint=CHAT.endpoint, run_id="r", task="generation", go=True, failing=(), measures={},
                     variants={"neuron": figures, "gpu": figures}, prompts=20, unit="tokens")
    assert prod(verdicts=[judged], throughput={})["net"]["gpu_only_usd"] is None


def test_the_hot_warm_cold_figures_in_docs_are_the_kits() -> None:
    """docs/fallback.md's table: prod chat's hot standby, its Neuron serving and GPU alone for the same work, a 30-day
    month at the built-in SageMaker rates (recomputed here, so a price change shows in the doc's test)."""
    from pathlib import Path

    from neuronfleet import load_fleet
    from neuronfleet.facts.prices import price_table

    root = Path(__file__).resolve().parents[2]
    chat = next(e for e in load_fleet(root / "config" / "prod.yaml").endpoints if e.name == "chat")
    gpu = chat.gpu_variant
    assert gpu is not None and gpu.standby == "warm"
    table = price_table()
    rate = {t: Decimal(table[t]["usd_per_hour"]) for t in (chat.instance_type, gpu.instance_type)}
    month = Decimal(720)
    hot = rate[gpu.instance_type] * month  # one instance, the GPU variant's default floor
    neuron = chat.min_instances * rate[chat.instance_type] * month
    alone = chat.min_instances * month / Decimal(str(gpu.neuron_instances_per_gpu_instance)) * rate[gpu.instance_type]
    doc = (root / "docs" / "fallback.md").read_text()
    for figure in (hot, neuron, alone):
        assert f"${figure.quantize(Decimal('0.01')):,}" in doc, figure
    assert hot > alone  # why prod keeps a warm standby


def test_the_bill_the_function_is_given_is_the_kits_own_part_of_the_net() -> None:
    """OVERHEAD_BILL as CostMonitors writes it (neuronfleet_contract.overhead's wire), read back by ReportConfig and
    counted by the report: one part per priced line, the unpriced said once."""
    from neuronfleet.lambdas.cost.logic.net import overhead_of
    from neuronfleet_contract import overhead as wire
    from neuronfleet_contract.cost import ReportConfig

    bill = wire.OverheadBill(region="us-east-2", read=date(2026, 11, 28), priced=(
        wire.PricedLine("nat-gateway-hour", 3, Decimal(2190), Decimal("98.55"), "vpc-q"),
        wire.PricedLine("kms-key-month", 3, Decimal(3), Decimal("3.00"), "kms")),
        unpriced=(wire.UnpricedLine("Logs::LogGroup", 6, None, "usage"),))
    env = {"FLEET": "nf-prod", "LEDGER_TABLE": "t", "REPORT_BUCKET": "b", "PRICES": "{}",
           "ALERTS_TOPIC_ARN": "arn:aws:sns:us-east-2:333333333333:t", wire.VARIABLE: wire.encode(bill)}
    overhead = overhead_of(ReportConfig.from_environment(env).overhead_bill())
    assert overhead is not None
    n = prod(overhead=overhead)["net"]
    kit = [(p["what"], p["as_deployed_usd"]) for p in n["parts"] if p["part"] == "kit_overhead"]
    assert kit == [("the kit's own: NAT gateway hours, 3 resource(s), 2,190 a month", "98.55"),
                   ("the kit's own: KMS customer managed keys, 3 resource(s), 3 a month", "3.00")]
    assert n["overhead_not_priced"] == ["AWS::Logs::LogGroup x 6: usage-based: the volume is not known at synth"]
    assert overhead_of(None) is None
