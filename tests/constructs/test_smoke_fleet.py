"""config/smoke.yaml, the smoke run of docs/day-one.md: the fleet is the smallest one over docs/checks.md's unconfirmed
paths (issue 41), the cost the page quotes is what scripts/fleet_cost.py prints from the kit's prices now, that figure
agrees with the constructs' own price methods, and what the page says a destroy leaves is what the templates retain.
(Synthesised, gated and deployed into moto with the other example fleets: tests/conftest.py EXAMPLE_FLEETS,
tests/moto/test_moto_deploy.py.)"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from neuronfleet.fleetfile.schema import parse_fleet
from neuronfleet.fleetfile.yamlsafe import load_yaml_file
from scripts.fleet_cost import fleet_cost, main, render
from tests.conftest import ROOT, fleet_file

DAY_ONE = ROOT / "docs" / "day-one.md"
SMOKE = ROOT / "config" / "smoke.yaml"


def _quoted_output() -> str:
    """The output block docs/day-one.md quotes after the fleet_cost.py command."""
    text = DAY_ONE.read_text()
    command = "scripts/fleet_cost.py -c config/smoke.yaml"
    assert command in text
    after_command = text.split(command, 1)[1].split("```", 1)[1]  # past the command's own block
    blocks = re.findall(r"```\n(.*?)\n```", after_command, flags=re.S)
    assert blocks, "docs/day-one.md: no output block after the fleet_cost.py command"
    return blocks[0]


def test_smoke_is_one_on_demand_node_one_inf2_endpoint_with_its_failover_and_the_cost_monitors() -> None:
    from neuronfleet import CATALOG

    smoke = fleet_file("smoke")
    (cluster,) = smoke.training_clusters
    assert (cluster.count, cluster.capacity.type, cluster.scheduler) == (1, "on-demand", "batch")
    assert cluster.instance_type in ("trn2.3xlarge", "trn1.2xlarge")
    assert CATALOG.offered_in(cluster.instance_type, smoke.region)  # AWS's offerings data, as the kit records it
    (endpoint,) = smoke.endpoints
    assert (endpoint.instance_type, endpoint.min_instances, endpoint.max_instances) == ("ml.inf2.xlarge", 1, 1)
    gpu = endpoint.live_gpu_variant  # hot or shadow, running instances
    assert gpu is not None and not gpu.shadow and gpu.min_instances == 1  # live: the failover's target, hot
    assert endpoint.hf_token_secret_arn is None
    assert smoke.cost_monitors.enabled
    # the smallest: nothing bought, no GPU training pool, no judge (docs/day-one.md says what is left out, and why)
    assert not smoke.fallback.enabled and smoke.capacity_policy is None and endpoint.judge is None


def test_a_type_with_no_price_and_a_reservation_are_refused_by_name() -> None:
    with pytest.raises(SystemExit, match=r"endpoint chat, GPU shadow \(min_instances\): ml\.g6e\.12xlarge: the kit has "
                                         r"no price for it; set one under prices:"):
        fleet_cost(fleet_file("pilot"), [])
    doc: dict[str, Any] = load_yaml_file(SMOKE)
    doc["training_clusters"][0]["capacity"] = {"type": "odcr", "reservation_id": "cr-0a1b2c3d4e5f60718"}
    with pytest.raises(SystemExit, match=r"training_clusters smoke: capacity odcr: its cost is the reservation's"):
        fleet_cost(parse_fleet(doc, source="smoke with an ODCR"), [])


def test_hours_out_of_order_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["-c", str(SMOKE), "--hours", "1", "--training-hours", "2"])
    assert "--hours 1 --training-hours 2: allowed: 0 <= training hours <= hours" in capsys.readouterr().err


def test_the_cost_day_one_quotes_is_the_kits(synth_fleet: Callable[[str], Any]) -> None:
    """The quoted block is the script's output on today's prices and templates; a changed price or resource fails
    here: run the command again and paste its output (with the date)."""
    from neuronfleet.facts.prices import hosting_usd_per_hour
    from neuronfleet.inference.endpoint import NeuronEndpoint

    fleet = synth_fleet("smoke")
    cost = fleet_cost(fleet.fleet, list(fleet.stacks.values()))
    assert render(cost, "config/smoke.yaml", Decimal(4), Decimal(1)) == _quoted_output()
    # the same standing cost from the constructs' own methods: the Neuron variant at its hosting rate, the standby's
    # NeuronEndpoint.standby_usd_per_hour(), the bill the cost monitors carry
    (endpoint,) = [c for s in fleet.stacks.values() for c in s.node.find_all() if isinstance(c, NeuronEndpoint)]
    (monitors,) = [c for s in fleet.stacks.values() for c in s.node.find_all() if type(c).__name__ == "CostMonitors"]
    standing = Decimal(str(hosting_usd_per_hour("ml.inf2.xlarge"))) + Decimal(str(endpoint.standby_usd_per_hour()))
    assert endpoint.standby_usd_per_hour() > 0
    assert cost.standing_hourly - cost.overhead_hourly == standing
    assert cost.overhead_monthly == monitors.overhead_bill().total_monthly_usd > 0  # what the cost report is given
    assert cost.run(Decimal(4), Decimal(1)) == 4 * cost.standing_hourly + cost.training_hourly
    assert any("UNSOURCED" in line.render(cost.region) for line in cost.training)  # trn2.3xlarge's rate: said so


def test_what_a_destroy_leaves_is_what_the_templates_retain(synth_fleet: Callable[[str], Any]) -> None:
    fleet = synth_fleet("smoke")
    retained = sorted((short, r["Type"]) for short in fleet.stacks
                      for r in fleet.template_json(short)["Resources"].values() if r.get("DeletionPolicy") == "Retain")
    # docs/day-one.md, "What the templates retain": the FSx file system and its data and access-log buckets, the
    # compile-cache bucket and its access-log bucket, the ledger, the report and access-log buckets, the topic's key,
    # the flow-log group
    assert retained == sorted([
        ("train-smoke", "AWS::FSx::FileSystem"), ("train-smoke", "AWS::S3::Bucket"), ("train-smoke", "AWS::S3::Bucket"),
        ("inference", "AWS::S3::Bucket"), ("inference", "AWS::S3::Bucket"),
        ("cost", "AWS::DynamoDB::Table"), ("cost", "AWS::S3::Bucket"), ("cost", "AWS::S3::Bucket"),
        ("alerts", "AWS::KMS::Key"), ("network", "AWS::Logs::LogGroup")])
    text = DAY_ONE.read_text()
    for named in ("FSx for Lustre", "data and access-log", "compile-cache bucket and its access-log bucket",
                  "ledger table", "report and access-log buckets", "KMS key", "flow-log group"):
        assert named in text
