"""The migration report's page: charts as inline SVG that parse as XML and carry the report's own figures, model names
as the fleet file gives them, empty sections left out, price notes said once, every value escaped, the story (per
model Neuron against GPU with the judge's verdict, the GPU standby's share, the estimate) told."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import date, timedelta
from decimal import Decimal
from html.parser import HTMLParser

from neuronfleet.lambdas.cost.logic import charts
from neuronfleet.lambdas.cost.logic.discovery import model_tags
from neuronfleet.lambdas.cost.logic.economics import EndpointModel
from neuronfleet.lambdas.cost.logic.report_page import render_html
from neuronfleet.lambdas.cost.logic.rows import CostRow, family_of
from neuronfleet.lambdas.cost.report import build
from neuronfleet_contract.judge import Failing, VariantFigures, Verdict
from neuronfleet_contract.tags import MODEL_TAG

SVG = "{http://www.w3.org/2000/svg}"
START = date(2026, 10, 24)
END = START + timedelta(days=30)
CHAT = EndpointModel(endpoint="nfprodinference-chat-04507f82", model="chat", neuron_types=("ml.inf2.48xlarge",),
                     gpu_type="ml.p5.48xlarge", gpu_role="standby")
EMBED = EndpointModel(endpoint="nfprodinference-embed-1a2b3c4d", model="embed", neuron_types=("ml.inf2.xlarge",))


def day(n: int) -> str:
    return (START + timedelta(days=n)).isoformat()


def row(instance_type: str, amount: str, n: int, usage: str = "sagemaker-hosting", fleet: str = "nf-prod") -> CostRow:
    return CostRow(day=day(n), fleet=fleet, service="sagemaker" if usage.startswith("sagemaker") else "ec2",
                   instance_type=instance_type, family=family_of(instance_type) or "?", amount=Decimal(amount),
                   usage_hours=Decimal(24), usage=usage)


def figures(usd_per_million: float) -> VariantFigures:
    return VariantFigures(invocations=20, errors=0, p50_ms=400.0, p99_ms=600.0, units_per_second=250.0,
                          usd_per_million=usd_per_million)


def judged(*, go: bool = True, neuron: float = 1.0, gpu: float = 2.5, synthetic: bool = False) -> Verdict:
    failing = () if go else (Failing("token agreement", 0.91, 0.95, "neuron"),)
    return Verdict(endpoint=CHAT.endpoint, run_id="run-1", task="generation", go=go, failing=failing,
                   measures={"token_agreement": 0.98 if go else 0.91},
                   variants={"neuron": figures(neuron), "gpu": figures(gpu)}, prompts=20, unit="tokens",
                   synthetic=synthetic)


def prod_report(**kw) -> dict:
    rows = []
    for n in range(30):
        rows += [row("ml.inf2.48xlarge", "300", n), row("ml.inf2.xlarge", "20", n), row("ml.p5.48xlarge", "1300", n),
                 row("trn2.48xlarge", "900", n, usage="ec2")]
        if n % 3 == 0:
            rows.append(row("p5.48xlarge", "250", n, usage="ec2"))
    calls = {(m.endpoint, "neuron", day(n)): Decimal(1_000_000) for m in (CHAT, EMBED) for n in range(30)}
    tokens = {(CHAT.endpoint, "neuron", day(n)): Decimal(250_000_000) for n in range(30)}
    args = dict(fleet="nf-prod", rows=rows, start=START, end=END, invocations=calls, tokens=tokens, prices={},
                models=[CHAT, EMBED], price_notes=["19 of 40 prices need a look: 19 stale (read over 180 days ago)"])
    return build(**(args | kw))


def svgs(page: str) -> dict[str, ET.Element]:
    """Each inline chart, parsed as XML (a broken chart fails here), by its data-chart kind (several: kind#n)."""
    out: dict[str, ET.Element] = {}
    for text in re.findall(r"<svg .*?</svg>", page, flags=re.S):
        element = ET.fromstring(text)
        kind = element.get("data-chart") or "?"
        out[kind if kind not in out else f"{kind}#{len(out)}"] = element
    return out


def series(chart: ET.Element) -> dict[str, list[ET.Element]]:
    return {g.get("data-series") or "": [r for r in g.iter(f"{SVG}rect") if r.get("data-value")]
            for g in chart.iter(f"{SVG}g") if g.get("data-series")}


class Headings(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.h2: list[str] = []
        self._in = False

    def handle_starttag(self, tag, attrs):
        self._in = tag == "h2"

    def handle_data(self, data):
        if self._in:
            self.h2.append(data)
            self._in = False


def headings(page: str) -> list[str]:
    parser = Headings()
    parser.feed(page)
    return parser.h2


def test_spend_per_day_is_a_stacked_chart_whose_bars_add_up_to_the_families_totals() -> None:
    report = prod_report()
    chart = svgs(render_html(report))["spend-by-day"]
    drawn = series(chart)
    assert set(drawn) == {"trainium", "inferentia", "gpu"}
    for family, bars in drawn.items():
        assert sum(Decimal(b.get("data-value") or "0") for b in bars) == Decimal(report["spend_usd"]["by_family"][family])
    assert len({b.get("data-day") for b in drawn["inferentia"]}) == 30
    assert next(t.text for t in chart.iter(f"{SVG}title")) == "spend per day by accelerator family (USD)"


def test_neuron_against_gpu_per_model_uses_the_fleet_files_names_and_the_judges_verdict() -> None:
    report = prod_report(verdicts=[judged(neuron=1.0, gpu=2.5)])
    page = render_html(report)
    chart = next(c for k, c in svgs(page).items() if k.startswith("unit-costs"))  # tokens first
    drawn = series(chart)
    chat = report["unit_economics"]["models"][0]
    neuron_per_m = Decimal(chat["units"]["tokens"]["neuron_usd_per_million"])
    assert [b.get("data-model") for b in drawn["neuron"]] == ["chat"]
    # GPU: Neuron's recorded cost per million times the GPU/Neuron ratio the judge measured (2.5)
    assert [Decimal(b.get("data-value") or "0") for b in drawn["gpu"]] == [(neuron_per_m * Decimal("2.5")).quantize(
        Decimal("0.0001"))]
    assert "nfprodinference-chat-04507f82" not in "".join(ET.tostring(c, encoding="unicode")
                                                        for c in svgs(page).values())
    assert "go (20 prompts)" in page
    # embed has no GPU figure: its GPU line says so instead of a bar
    inferences = [c for k, c in svgs(page).items() if k.startswith("unit-costs")][1]
    assert "GPU: not judged yet" in ET.tostring(inferences, encoding="unicode")
    saving = report["savings"][0]
    neuron_month = Decimal(chat["neuron_spend_usd"])  # 30 recorded days: the period is the month
    assert (saving["model"], saving["neuron_usd_month"], saving["gpu_usd_month"], saving["savings_percent"]) == (
        "chat", f"{neuron_month:.2f}", f"{neuron_month * Decimal('2.5'):.2f}", "60.00")
    assert report["story"].startswith("Neuron serves chat for $9000.00 a month where GPU would cost $22500.00")


def test_a_no_go_verdict_names_the_failing_measure_and_claims_no_saving() -> None:
    report = prod_report(verdicts=[judged(go=False)])
    page = render_html(report)
    assert "no-go: token agreement (neuron) 0.91 against a limit of 0.95 (20 prompts)" in page
    assert report["savings"] == [] and "pilot: chat no-go" in report["story"]


def test_a_model_nobody_judged_reads_not_judged_yet_and_claims_no_saving() -> None:
    report = prod_report()
    page = render_html(report)
    assert report["savings"] == [] and report["pilot_verdicts"] == []
    assert page.count("not judged yet") >= 2
    assert "Savings against GPU" not in page


def test_the_standby_is_set_against_the_neuron_spend_it_protects_with_hot_and_warm_explained() -> None:
    report = prod_report()
    standby = report["gpu_standby"]["models"]
    assert [(s["model"], s["mode"], s["standby_usd_month"], s["neuron_usd_month"]) for s in standby] == [
        ("chat", "hot", "39000.00", "9000.00")]
    assert standby[0]["standby_share_percent"] == "81.25"
    page = render_html(report)
    share = svgs(page)["share"]
    assert {k: [b.get("data-value") for b in v] for k, v in series(share).items()} == {
        "Neuron serving (spend)": ["9000.00"], "GPU standby (cost)": ["39000.00"]}
    assert "capacity only" in page and "health and capacity" in page
    assert "hot GPU standby of chat costs $39000.00 a month, 81.25% of the model's cost" in report["story"]


def test_empty_sections_are_left_out_and_the_price_notes_are_said_once_outside_the_verdict() -> None:
    page = render_html(prod_report())
    titles = headings(page)
    assert "Details" not in titles and "Capacity Blocks" not in page and "Kept apart" not in page
    assert titles.index("Prices") > titles.index("Verdict")
    assert page.count("19 of 40 prices need a look") == 1
    verdict_list = page.split("<h2>Verdict</h2>", 1)[1].split("</section>", 1)[0]
    assert "prices need a look" not in verdict_list


def test_every_value_is_escaped_and_the_charts_still_parse() -> None:
    evil = EndpointModel(endpoint="x", model='<script>alert("m")</script>&', neuron_types=("ml.inf2.xlarge",))
    rows = [row("ml.inf2.xlarge", "20", n, fleet="f<b>") for n in range(3)]
    calls = {("x", "neuron", day(n)): Decimal(10) for n in range(3)}
    report = build(fleet="f<b>", rows=rows, start=START, end=END, invocations=calls, tokens={}, prices={},
                   models=[evil], synthetic="made up <img src=x onerror=alert(1)>")
    page = render_html(report)
    assert "<script>" not in page and "<img src=x" not in page and "<b>" not in page
    assert "&lt;script&gt;" in page
    assert svgs(page)  # every chart parsed as XML


def test_a_synthetic_report_says_so_on_the_page_and_in_each_spend_chart_and_table() -> None:
    page = render_html(prod_report(synthetic="generated by scripts/demo.py"))
    assert "SYNTHETIC figures." in page
    assert "synthetic spend per day" in page and "synthetic spend</th>" in page


def test_axis_tops_are_round_numbers() -> None:
    assert [charts.nice_ceiling(Decimal(v)) for v in ("0", "0.003", "7", "1999", "2400", "2600", "60001")] == [
        Decimal(1), Decimal("0.005"), Decimal(10), Decimal(2000), Decimal("2500"), Decimal(5000), Decimal(100000)]


def test_the_model_name_is_read_from_the_endpoints_tag_and_only_for_the_fleet() -> None:
    arn = "arn:aws:sagemaker:us-east-2:333333333333:endpoint/{}"
    mappings = [
        {"ResourceARN": arn.format("nfprodinference-chat-04507f82"),
         "Tags": [{"Key": "neuronfleet:fleet", "Value": "nf-prod"}, {"Key": MODEL_TAG, "Value": "chat"}]},
        {"ResourceARN": arn.format("nfprodinference-embed-1a2b3c4d"),  # untagged: the report keeps the endpoint name
         "Tags": [{"Key": "neuronfleet:fleet", "Value": "nf-prod"}]},
        {"ResourceARN": arn.format("other-chat"),  # another fleet's
         "Tags": [{"Key": "neuronfleet:fleet", "Value": "nf-dev"}, {"Key": MODEL_TAG, "Value": "chat"}]},
        {"ResourceARN": "arn:aws:s3:::not-an-endpoint",
         "Tags": [{"Key": "neuronfleet:fleet", "Value": "nf-prod"}, {"Key": MODEL_TAG, "Value": "x"}]},
    ]
    assert model_tags(mappings, "nf-prod") == {"nfprodinference-chat-04507f82": "chat"}
    assert EMBED.name == "embed" and EndpointModel(endpoint="e", neuron_types=("ml.inf2.xlarge",)).name == "e"


def test_the_page_renders_the_same_from_the_stored_json() -> None:
    """`neuronfleet report` re-renders a stored report.json: the page depends on nothing but the JSON form."""
    report = prod_report(verdicts=[judged()], synthetic="generated")
    report.pop("_unit_costs")  # publish() sends these to CloudWatch and stores the rest
    stored = json.loads(json.dumps(report))
    assert render_html(stored) == render_html(report)


def test_the_judges_verdict_metric_shows_where_no_record_is_given_and_claims_no_saving() -> None:
    """The weekly function reads the judge's Verdict metric (1 go, 0 no-go) per endpoint; its records (with the cost
    figures) are in the judge's own bucket. A metric says go or no-go, never a saving."""
    report = prod_report(judged={CHAT.endpoint: ("2026-11-20", Decimal(0)), EMBED.endpoint: ("2026-11-21", Decimal(1))})
    assert [(v["model"], v["verdict"]) for v in report["pilot_verdicts"]] == [("chat", "no-go"), ("embed", "go")]
    assert report["savings"] == [] and "pilot: chat no-go, embed go" in report["story"]
    page = render_html(report)
    assert "no-go (the judge&#x27;s Verdict metric (NeuronFleet/Judge) on 2026-11-20)" in page
    # a record of the same endpoint wins over its metric
    both = prod_report(verdicts=[judged()], judged={CHAT.endpoint: ("2026-11-20", Decimal(0))})
    assert [(v["model"], v["verdict"]) for v in both["pilot_verdicts"]] == [("chat", "go")]
