"""The contract's one codec (neuronfleet_contract.environment): each type of its table written and read back, the
error a wrong value raises (the variable, the value, what is allowed), tokens passed through, the variables a
configuration writes only sometimes, and the documents (the capacity policy's SSM value) the same metadata writes."""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import pytest

from neuronfleet_contract import environment
from neuronfleet_contract.capacity_lifecycle import CapacityPolicy
from neuronfleet_contract.environment import Configured, InvalidEnvironment, variable

CONTRACT = Path(environment.__file__).parent
TOKEN = "${Token[TOKEN.77]}"


@dataclass(frozen=True)
class Inner:
    name: str
    count: int = 1


@dataclass(frozen=True)
class Every(Configured):
    text: str = field(metadata=variable("TEXT", allowed="a name"))
    whole: int = field(default=3, metadata=variable("WHOLE", minimum=1, unit="days"))
    number: float = field(default=0.5, metadata=variable("NUMBER", above=0, at_most=1, unit="(share)"))
    flag: bool = field(default=True, metadata=variable("FLAG"))
    money: Decimal = field(default=Decimal("1.50"), metadata=variable("MONEY", allowed="a decimal"))
    wait: timedelta = field(default=timedelta(hours=2), metadata=variable("WAIT_HOURS", unit="hours"))
    when: datetime | None = field(default=None, metadata=variable("WHEN", allowed="an ISO 8601 instant"))
    kind: Literal["a", "b"] = field(default="a", metadata=variable("KIND", choices=("a", "b")))
    names: tuple[str, ...] = field(default=(), metadata=variable("NAMES"))
    inner: Inner = field(default=Inner("x"), metadata=variable("INNER", decode=lambda d: Inner(**d)))
    table: Mapping[str, float] = field(default_factory=dict, metadata=variable("TABLE", decode=dict))
    region: str = field(default="", metadata=variable("REGION", allowed="a region", written=lambda e: bool(e.region)))
    blank: str = field(default="", metadata=variable("BLANK", allowed="anything", blank=True))
    kept: str = "not in the environment"


FULL = Every(text="t", whole=14, number=0.25, flag=False, money=Decimal("12.3400"), wait=timedelta(hours=5),
             when=datetime(2026, 12, 1, 8, tzinfo=UTC), kind="b", names=("n1", "n2"), inner=Inner("y", 2),
             table={"neuron": 1.5}, region="us-east-2")


def test_each_type_of_the_table_is_written_as_today_and_read_back() -> None:
    env = FULL.to_environment()
    assert env == {"TEXT": "t", "WHOLE": "14", "NUMBER": "0.25", "FLAG": "false", "MONEY": "12.3400",
                   "WAIT_HOURS": "5", "WHEN": "2026-12-01T08:00:00+00:00", "KIND": "b", "NAMES": '["n1", "n2"]',
                   "INNER": '{"name": "y", "count": 2}', "TABLE": '{"neuron": 1.5}', "REGION": "us-east-2",
                   "BLANK": ""}
    assert Every.from_environment(env) == FULL
    assert Every.from_environment({"TEXT": "t"}) == Every(text="t")  # every other field its default


def test_a_value_of_none_and_a_variable_written_only_sometimes_are_left_out() -> None:
    env = Every(text="t").to_environment()
    assert "WHEN" not in env and "REGION" not in env and "BLANK" in env
    assert "kept" not in json.dumps(env)


def test_tokens_pass_through_untouched_and_json_goes_through_the_given_encoder() -> None:
    seen: list[Any] = []

    def to_json(doc: Any) -> str:
        seen.append(doc)
        return TOKEN

    env = Every(text=TOKEN, names=(TOKEN,)).to_environment(to_json=to_json)
    assert env["TEXT"] == TOKEN and env["NAMES"] == TOKEN
    assert [TOKEN] in seen  # a list, as the stack's to_json_string is given today


@pytest.mark.parametrize(("variable_name", "value", "allowed"), [
    ("TEXT", None, "a name"),
    ("TEXT", "  ", "a name"),
    ("WHOLE", "0", "a whole number of days, at least 1"),
    ("WHOLE", "2.5", "a whole number of days, at least 1"),
    ("NUMBER", "1.5", "a number of (share) above 0 and at most 1"),
    ("NUMBER", "nan", "a number of (share) above 0 and at most 1"),
    ("FLAG", "yes", "true | false"),
    ("MONEY", "lots", "a decimal"),
    ("WAIT_HOURS", "-1", "a whole number of hours, at least 0"),
    ("WHEN", "tomorrow", "an ISO 8601 instant"),
    ("KIND", "c", "a | b"),
    ("NAMES", '["ok", ""]', "a JSON list of non-blank strings (expected a list of non-blank strings)"),
    ("NAMES", "[", "a JSON list of non-blank strings"),
])
def test_a_wrong_value_names_the_variable_the_value_and_what_is_allowed(variable_name: str, value: str | None,
                                                                        allowed: str) -> None:
    env = {"TEXT": "t"} | ({variable_name: value} if value is not None else {})
    if value is None:
        env.pop(variable_name)
    with pytest.raises(InvalidEnvironment) as caught:
        Every.from_environment(env)
    assert (caught.value.variable, caught.value.value, caught.value.allowed) == (variable_name, value, allowed)


def test_a_variable_required_by_the_fields_before_it() -> None:
    @dataclass(frozen=True)
    class Source(Configured):
        source: str = field(default="api", metadata=variable("SOURCE", choices=("api", "table")))
        table: str = field(default="", metadata=variable("TABLE", allowed="a table", required=lambda c: c.source == "table",
                                                         written=lambda c: c.source == "table"))

    assert Source.from_environment({}) == Source()
    assert Source(source="table", table="t").to_environment() == {"SOURCE": "table", "TABLE": "t"}
    assert "TABLE" not in Source().to_environment()
    with pytest.raises(InvalidEnvironment, match="environment variable TABLE: got nothing"):
        Source.from_environment({"SOURCE": "table"})


def test_a_field_without_a_decoder_for_its_json_is_a_programming_error() -> None:
    @dataclass(frozen=True)
    class Odd(Configured):
        inner: Inner = field(metadata=variable("INNER"))

    assert Odd(Inner("a")).to_environment() == {"INNER": '{"name": "a", "count": 1}'}
    with pytest.raises(TypeError, match="needs a decoder"):
        Odd.from_environment({"INNER": "{}"})


def test_the_capacity_policy_document_round_trips_with_its_keys_and_units() -> None:
    policy = CapacityPolicy(max_upfront_fee_usd=Decimal("60000"), max_usd_per_instance_hour=Decimal("45.5"),
                            availability_zones=("us-east-2a",), start_after=datetime(2026, 12, 1, tzinfo=UTC),
                            allow_extension=True, extension_budget_usd=Decimal("900"),
                            fallback_after=timedelta(minutes=30))
    doc = json.loads(policy.to_json())
    assert doc == {"max_upfront_fee_usd": "60000", "max_usd_per_instance_hour": "45.5",
                   "availability_zones": ["us-east-2a"], "start_after": "2026-12-01T00:00:00+00:00",
                   "start_before": None, "allow_extension": True, "extension_budget_usd": "900",
                   "extension_hours": 24, "decide_before_minutes": 360, "checkpoint_lead_minutes": 45,
                   "fallback_after_minutes": 30, "fleet_extension_budget_usd": None}
    assert CapacityPolicy.from_json(policy.to_json(), where="test") == policy
    least = CapacityPolicy.from_document({"max_upfront_fee_usd": "1", "max_usd_per_instance_hour": "2"})
    assert least == CapacityPolicy(max_upfront_fee_usd=Decimal(1), max_usd_per_instance_hour=Decimal(2))


HAND_WRITTEN = ("to_environment", "from_environment", "describe", "parse")
"""The codec methods a configuration of the contract no longer writes by hand."""
LEFT_HAND_WRITTEN = {("capacity_lifecycle.py", "LifecycleConfig", "to_environment"),
                     ("capacity_lifecycle.py", "LifecycleConfig", "from_environment")}
"""Kept, and why: the lifecycle refuses an environment without its policy parameter, and reads its policy from the
SSM parameter the environment names (a value the environment never carries): both then call the codec."""


def test_no_configuration_of_the_contract_writes_its_codec_by_hand() -> None:
    found = set()
    for path in sorted(CONTRACT.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name != "Configured":
                found |= {(path.name, node.name, f.name) for f in node.body
                          if isinstance(f, ast.FunctionDef) and f.name in HAND_WRITTEN}
    assert found == LEFT_HAND_WRITTEN
