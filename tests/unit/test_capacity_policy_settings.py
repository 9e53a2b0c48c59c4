"""The fleet's capacity policy settings: defaults, field rules (field, value, allowed), and the policy they give."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from neuronfleet import InvalidSettings
from neuronfleet.settings.capacity import CapacityPolicySettings

MONEY = {"max_upfront_fee_usd": 5000, "max_usd_per_instance_hour": "25.5"}


def test_the_policy_takes_the_networks_training_az_when_it_names_none():
    p = CapacityPolicySettings(**MONEY).policy(training_azs=["us-east-2b"])
    assert p.availability_zones == ("us-east-2b",) and p.max_usd_per_instance_hour == Decimal("25.5")
    assert not p.allow_extension and p.fallback_after is None and p.decide_before == timedelta(hours=6)
    own = CapacityPolicySettings(**MONEY, availability_zones=("us-east-2c",), fallback_after_minutes=90)
    assert own.policy(training_azs=["us-east-2b"]).availability_zones == ("us-east-2c",)
    assert own.policy().fallback_after == timedelta(minutes=90)


@pytest.mark.parametrize(("extra", "text"), [
    ({"max_upfront_fee_usd": -1}, "max_upfront_fee_usd: got -1; allowed: a number >= 0"),
    ({"extension_hours": 36}, "extension_hours: got 36; allowed: whole days (24 h steps) up to 336 h"),
    ({"extension_hours": 504 + 24}, "extension_hours: got 528"),
    ({"allow_extension": True}, "extension_budget_usd: got '0'; allowed: more than 0 when allow_extension"),
    ({"allow_extension": True, "extension_budget_usd": 10, "fleet_extension_budget_usd": 0},
     "fleet_extension_budget_usd: got '0'; allowed: more than 0 when allow_extension is true"),
    ({"start_after": "2026-12-01T00:00:00"}, "start_after: got '2026-12-01T00:00:00'; allowed: a date and time with"),
    ({"start_after": "2026-12-02T00:00:00Z", "start_before": "2026-12-01T00:00:00Z"},
     "start_before: got '2026-12-01T00:00:00+00:00'; allowed: later than start_after"),
    ({"checkpoint_lead_minutes": 400}, "checkpoint_lead_minutes: got 400; allowed: less than decide_before_minutes"),
    ({"fallback_after_minutes": 0}, "fallback_after_minutes: got 0"),
    ({"max_spend": 1}, "max_spend"),
])
def test_each_field_rule_names_field_value_and_what_is_allowed(extra, text):
    with pytest.raises(InvalidSettings, match="capacity_policy") as e:
        CapacityPolicySettings(**{**MONEY, **extra})
    assert text in str(e.value)


def test_money_has_no_default():
    with pytest.raises(InvalidSettings, match="max_usd_per_instance_hour: got nothing"):
        CapacityPolicySettings(max_upfront_fee_usd=1)


def test_the_start_window_reaches_the_policy():
    p = CapacityPolicySettings(**MONEY, start_after="2026-12-01T00:00:00Z").policy()
    assert p.start_after == datetime(2026, 12, 1, tzinfo=UTC)


def _fleet(tmp_path, policy: str):
    from pathlib import Path

    from neuronfleet import load_fleet

    path = tmp_path / "f.yaml"
    prod = (Path(__file__).resolve().parents[2] / "config" / "prod.yaml").read_text()
    section = "\ncapacity_policy:\n  max_upfront_fee_usd: 1000\n  max_usd_per_instance_hour: 50\n"
    path.write_text(prod.split("\ncapacity_policy:")[0] + section + policy)
    return load_fleet(path)


def test_the_fleet_file_section_parses_and_a_fallback_slower_than_batchs_cancel_is_refused(tmp_path):
    from neuronfleet import FleetConfigError

    assert _fleet(tmp_path, "  fallback_after_minutes: 45\n").capacity_policy.fallback_after_minutes == 45
    with pytest.raises(FleetConfigError, match=r"capacity_policy.fallback_after_minutes: got 120; allowed: less than "
                                               r"training_clusters\[0\].capacity_wait_timeout_s \(7200 s = 120 min\)"):
        _fleet(tmp_path, "  fallback_after_minutes: 120\n")


def test_the_fleet_wide_extension_budget_reaches_the_policy_and_defaults_to_the_per_block_one():
    extend = {**MONEY, "allow_extension": True, "extension_budget_usd": 300}
    assert CapacityPolicySettings(**extend).policy().fleet_extension_budget_usd is None
    assert CapacityPolicySettings(**extend).policy().fleet_budget == Decimal(300)
    own = CapacityPolicySettings(**extend, fleet_extension_budget_usd=900).policy()
    assert (own.fleet_extension_budget_usd, own.fleet_budget) == (Decimal(900), Decimal(900))


def test_a_zero_fleet_wide_budget_reads_the_same_from_the_construct_api_and_the_fleet_file(tmp_path):
    from neuronfleet import FleetConfigError

    allowed = "fleet_extension_budget_usd: got '0'; allowed: more than 0 when allow_extension is true"
    with pytest.raises(InvalidSettings) as api:
        CapacityPolicySettings(**MONEY, allow_extension=True, extension_budget_usd=10, fleet_extension_budget_usd=0)
    with pytest.raises(FleetConfigError) as file:
        _fleet(tmp_path, "  allow_extension: true\n  extension_budget_usd: 10\n  fleet_extension_budget_usd: 0\n")
    assert allowed in str(api.value) and f"capacity_policy.{allowed}" in str(file.value)
