"""Unit economics per model and the verdict on GPU spend that could move: each defect of issue 15, reproduced with
its numbers and shown fixed."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from neuronfleet.lambdas.cost.logic.economics import EndpointModel, Spend, cost_per_million, divide, show, show_unit, verdict
from neuronfleet.lambdas.cost.logic.rows import CostRow, family_of
from neuronfleet.lambdas.cost.report import build

START = date(2026, 10, 23)
END = START + timedelta(days=30)
CHAT = EndpointModel(endpoint="chat", neuron_types=("ml.inf2.48xlarge",), gpu_type="ml.p5.48xlarge",
                     gpu_role="baseline")
EMBED = EndpointModel(endpoint="embed", neuron_types=("ml.inf2.xlarge",))


def hosting(instance_type: str, amount: str, day: int = 0, fleet: str = "f") -> CostRow:
    return CostRow(day=(START + timedelta(days=day)).isoformat(), fleet=fleet, service="sagemaker",
                   instance_type=instance_type, family=family_of(instance_type) or "?", amount=Decimal(amount),
                   usage_hours=Decimal(24), usage="sagemaker-hosting")


def day(n: int) -> str:
    return (START + timedelta(days=n)).isoformat()


def report(rows: list[CostRow], models: list[EndpointModel], invocations=None, tokens=None) -> dict:
    return build(fleet="f", rows=rows, start=START, end=END, invocations=invocations or {}, tokens=tokens or {},
                 prices={}, models=models)


def test_a_cheap_embeddings_endpoint_no_longer_makes_the_chat_model_look_98_percent_cheaper() -> None:
    # chat: Neuron $6,230 for 1M calls, its GPU baseline $10,000 for 1M; embed: $1,000 for 50M calls. Pooled, the
    # Neuron figure was ($7,230 / 51M) = $141.76/M against $10,000/M: "98.6% cheaper". Per model: 37.7%.
    rows = [hosting("ml.inf2.48xlarge", "6230"), hosting("ml.p5.48xlarge", "10000"), hosting("ml.inf2.xlarge", "1000")]
    calls = {("chat", "neuron", day(0)): Decimal(1_000_000), ("chat", "gpu", day(0)): Decimal(1_000_000),
             ("embed", "neuron", day(0)): Decimal(50_000_000)}
    econ = report(rows, [CHAT, EMBED], calls)["unit_economics"]
    chat, embed = econ["models"]
    assert chat["units"]["inferences"]["neuron_usd_per_million"] == "6230.00"
    assert chat["units"]["inferences"]["gpu_usd_per_million"] == "10000.00"
    assert chat["units"]["inferences"]["comparison"]["savings_percent"] == "37.70"
    assert embed["units"]["inferences"]["neuron_usd_per_million"] == "20.00"
    assert "comparison" not in embed["units"]["inferences"]  # no GPU served the embeddings model: nothing to compare
    assert econ["compared"]["inferences"] == {"models_compared": ["chat"], "savings_usd": "3770.00", "why_none": None}


def test_a_gpu_standby_that_served_a_failover_is_shown_apart_never_as_savings() -> None:
    # weight-0 p5 standby, $1,333.33 a day for 30 days; on day 12 a failover: it served 1,000 requests. Pooled, that
    # read $40,000,000 per million on GPU and "savings 100%".
    standby = EndpointModel(endpoint="chat", neuron_types=("ml.inf2.48xlarge",), gpu_type="ml.p5.48xlarge",
                            gpu_role="standby")
    rows = [hosting("ml.p5.48xlarge", "1333.33", d) for d in range(30)]
    rows += [hosting("ml.inf2.48xlarge", "400", d) for d in range(30)]
    calls = {("chat", "neuron", day(d)): Decimal(100_000) for d in range(30)}
    calls[("chat", "gpu", day(12))] = Decimal(1000)
    out = report(rows, [standby], calls)
    chat = out["unit_economics"]["models"][0]
    assert "comparison" not in chat["units"]["inferences"] and "gpu_usd_per_million" not in chat["units"]["inferences"]
    assert chat["standby"]["days"] == 29 and chat["standby"]["usd"] == "38666.57"
    assert chat["failover"]["days"] == [day(12)] and chat["failover"]["inferences"] == "1000"
    assert chat["failover"]["gpu_usd_per_million"] == "1333330.00"
    assert "never as savings" in chat["failover"]["note"]
    assert out["unit_economics"]["compared"]["inferences"]["savings_usd"] is None
    # the standby is not GPU spend that could move, and the verdict states no figure (the net holds the standby's)
    assert out["verdict"][0].startswith("Inference: no GPU inference work outside the fleet's own models to move")
    assert "$" not in out["verdict"][0]


def test_a_fleet_already_on_inferentia_is_not_told_migration_will_save_40_to_50_percent() -> None:
    lines = verdict(Spend.of([hosting("ml.inf2.48xlarge", "4000", d) for d in range(30)]), 30)
    assert lines == ["Inference: no GPU inference work outside the fleet's own models to move (the fleet's own "
                     "serving is in the net)."]


def test_nine_recorded_days_at_1k_a_day_read_30k_a_month() -> None:
    rows = [hosting("ml.p5.48xlarge", "1000", d) for d in range(21, 30)]
    out = report(rows, [CHAT])
    assert out["period"]["recorded_days"] == 9
    assert out["verdict"] == ["Inference: the GPU inference work that could move is over $10,000 a month (a monthly "
                              "rate from 9 of 30 recorded days), where the migration guide (quoted) says migrating "
                              "inference pays."]


def test_no_recorded_days_is_a_verdict_with_its_reason_not_a_division_by_zero() -> None:
    assert verdict(Spend.of([]), 0) == ["No verdict: 0 days of spend recorded (no days to scale a monthly rate from)."]
    assert report([], [CHAT])["verdict"][0].startswith("No verdict: 0 of 30 days")


def test_cost_per_million_is_never_rounded_before_it_is_multiplied_back() -> None:
    # 10B tokens at $40 (Neuron) against 10B at $49 (GPU): $0.004 and $0.0049 per million. Rounded to cents both
    # read 0.00 and the savings became -$40; true: $9 saved, 18.4%.
    rows = [hosting("ml.inf2.48xlarge", "40"), hosting("ml.p5.48xlarge", "49")]
    tokens = {("chat", "neuron", day(0)): Decimal(10**10), ("chat", "gpu", day(0)): Decimal(10**10)}
    t = report(rows, [CHAT], tokens=tokens)["unit_economics"]["models"][0]["units"]["tokens"]
    assert (t["neuron_usd_per_million"], t["gpu_usd_per_million"]) == ("0.004000", "0.004900")
    assert t["comparison"] == {"gpu_baseline_usd": "49.00", "savings_usd": "9.00", "savings_percent": "18.37",
                               "why_none": None}
    # 0.105 per million rounded to 0.11 used to turn a $10.50 baseline into $11.00
    assert cost_per_million(Decimal("10.50"), Decimal(100_000_000)).value == Decimal("0.105")
    rows = [hosting("ml.inf2.48xlarge", "10"), hosting("ml.p5.48xlarge", "10.50")]
    tokens = {("chat", "neuron", day(0)): Decimal(100_000_000), ("chat", "gpu", day(0)): Decimal(100_000_000)}
    t = report(rows, [CHAT], tokens=tokens)["unit_economics"]["models"][0]["units"]["tokens"]
    assert t["comparison"]["gpu_baseline_usd"] == "10.50" and t["comparison"]["savings_usd"] == "0.50"


def test_every_division_is_guarded_with_its_reason() -> None:
    assert divide(Decimal(1), Decimal(0), why_not="no tokens recorded").reason == "no tokens recorded"
    assert divide(Decimal(1), Decimal("NaN"), why_not="x").reason == "x (not a finite number)"
    rows = [hosting("ml.inf2.48xlarge", "100"), hosting("ml.p5.48xlarge", "100")]
    inf = report(rows, [CHAT])["unit_economics"]["models"][0]["units"]["inferences"]
    assert inf["neuron_usd_per_million"] is None and inf["neuron_why_none"] == "no Neuron inferences recorded"
    assert inf["comparison"] is None and inf["why_none"] == "no GPU inferences recorded"
    assert show_unit(Decimal("0.0000123456")) == "0.00001235" and show(Decimal("12.345")) == "12.35"


def test_a_type_two_endpoints_share_is_not_split_by_invocations() -> None:
    a = EndpointModel(endpoint="a", neuron_types=("ml.inf2.xlarge",))
    b = EndpointModel(endpoint="b", neuron_types=("ml.inf2.xlarge",))
    out = report([hosting("ml.inf2.xlarge", "70")], [a, b])
    assert out["unattributed"] == {"ml.inf2.xlarge": "$70.00 not attributed to a model: shared by a/neuron, "
                                                     "b/neuron: Cost Explorer has no per-endpoint figure"}
    assert out["unit_economics"]["models"][0]["neuron_spend_usd"] == "0.00"


def _acc() -> dict:
    from neuronfleet import CATALOG
    from neuronfleet.facts.catalog import accelerators_of

    return accelerators_of(CATALOG)


def _ml_prices(*types: str) -> dict:
    return {t: {"usd_per_hour": str(p), "source": "test sheet", "as_of": "2026-11-01"} for t, p in types}


def test_sagemaker_inference_on_p5_is_not_mapped_to_a_training_chip() -> None:
    from neuronfleet.lambdas.cost.logic.evaluation import estimate

    prices = _ml_prices(("ml.p5.48xlarge", "113"), ("ml.trn2.48xlarge", "60"), ("ml.inf2.48xlarge", "15"))
    out = estimate([hosting("ml.p5.48xlarge", "1130")], prices, accelerators=_acc())
    # p5 has 640 GiB; no inference type has as much: not estimated, with the reason (never ml.trn2 by default)
    assert out["lines"] == [] and out["not_estimated_why"] == {
        "ml.p5.48xlarge": "no inferentia type has 640 GiB of accelerator memory"}


def test_a_g6e_xlarge_model_is_not_mapped_to_an_inf2_xlarge_with_less_memory() -> None:
    from neuronfleet.lambdas.cost.logic.evaluation import estimate

    prices = _ml_prices(("ml.g6e.xlarge", "2.5"), ("ml.inf2.xlarge", "0.99"), ("ml.inf2.24xlarge", "8.9"))
    (line,) = estimate([hosting("ml.g6e.xlarge", "60")], prices, accelerators=_acc())["lines"]
    assert line["neuron_type"] == "ml.inf2.24xlarge"  # 44 GiB of GPU memory: inf2.xlarge/8xlarge (32) are too small
    assert line["mapping"] == "cheapest inferentia type with >= 44 GiB of accelerator memory"


def test_the_estimate_uses_the_pilots_measured_throughput_and_leaves_the_standby_out() -> None:
    # pilot: chat on 2 inf2.48xlarge-days served 2M calls, its GPU baseline 1 p5-day served 4M: one p5 instance-hour
    # does the work of 4 inf2.48xlarge instance-hours (measured), not 1 (the old 1:1 pricing of 55.04 vs 44.70)
    rows = [CostRow(day=day(0), fleet="f", service="sagemaker", instance_type="ml.inf2.48xlarge", family="inferentia",
                    amount=Decimal(360), usage_hours=Decimal(48), usage="sagemaker-hosting"),
            CostRow(day=day(0), fleet="f", service="sagemaker", instance_type="ml.p5.48xlarge", family="gpu",
                    amount=Decimal(2712), usage_hours=Decimal(24), usage="sagemaker-hosting")]
    calls = {("chat", "neuron", day(0)): Decimal(2_000_000), ("chat", "gpu", day(0)): Decimal(4_000_000)}
    prices = _ml_prices(("ml.p5.48xlarge", "113"), ("ml.inf2.48xlarge", "7.5"))
    acc = {**_acc(), "p5.48xlarge": ("gpu", 320)}  # a model that needs 320 GiB: fits an inf2.48xlarge (384)
    out = build(fleet="f", rows=rows, start=START, end=END, invocations=calls, tokens={}, prices=prices,
                models=[CHAT], accelerators=acc)
    (line,) = out["evaluation_estimate"]["lines"]
    assert line["throughput"] == "measured by the pilot: 4 Neuron instances per GPU instance"
    assert (line["neuron_instance_hours"], line["neuron_estimate_usd"]) == ("96.00", "720.00")
    # the same p5 as a weight-0 standby: nothing to move, nothing estimated
    standby = EndpointModel(endpoint="chat", neuron_types=("ml.inf2.48xlarge",), gpu_type="ml.p5.48xlarge",
                            gpu_role="standby")
    out = build(fleet="f", rows=rows, start=START, end=END, invocations=calls, tokens={}, prices=prices,
                models=[standby], accelerators=acc)
    assert out["evaluation_estimate"]["lines"] == [] and out["evaluation_estimate"]["gpu_spend_usd"] == "0.00"
