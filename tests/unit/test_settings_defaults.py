"""Defaults live in the contract only: every field of a user's settings (neuronfleet.settings, pydantic) that has a
counterpart in a function's configuration (neuronfleet_contract, ``*Config``) defaults to the contract's value, and
its source says so by name: a copied literal (``= 360`` where the contract says DECIDE_BEFORE_MINUTES) is refused
even while the two agree, since the next change to one would leave the other behind."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from neuronfleet import settings as user_settings
from neuronfleet.settings.capacity import CapacityPolicySettings
from neuronfleet.settings.cost import CostMonitorSettings
from neuronfleet.settings.judge import JudgeTolerances, PilotJudgeSettings
from neuronfleet_contract.capacity_lifecycle import CapacityPolicy
from neuronfleet_contract.cost import CollectorConfig as CollectorConfig
from neuronfleet_contract.cost import ReportConfig as ReportConfig
from neuronfleet_contract.cost import WasteConfig as WasteConfig
from neuronfleet_contract.judge import JudgeConfig as JudgeConfig
from neuronfleet_contract.judge import Tolerances

COUNTERPARTS: dict[type[BaseModel], tuple[type, ...]] = {
    CapacityPolicySettings: (CapacityPolicy,),
    CostMonitorSettings: (CollectorConfig, ReportConfig, WasteConfig),
    JudgeTolerances: (Tolerances,),
    PilotJudgeSettings: (JudgeConfig,),
}
"""Each user's settings class and the contract configurations it is turned into."""

RENAMED = {"idle_utilisation_percent": "idle_percent", "price_stale_days": "stale_after_days",
           "report_period_days": "period_days"}
"""Settings fields named otherwise in the contract (the fleet file's words)."""
UNITS = {"_minutes": timedelta(minutes=1), "_hours": timedelta(hours=1), "_days": timedelta(days=1)}
"""A settings field ``x_minutes`` is the contract's timedelta ``x``, counted in minutes."""

APART = {("CostMonitorSettings", "backfill_days"): (
    "the fleet file backfills 60 days on a fleet's first run; a CostMonitors built without one backfills none")}
"""Counterparts whose defaults differ on purpose, and why."""
TRIVIAL = (None, False, (), "")
"""Defaults that say "nothing": written as they are, there is nothing to copy."""


def contract_field(settings: type[BaseModel], name: str) -> tuple[type, dataclasses.Field[Any], timedelta | None]:
    """(configuration, its field, the unit) of a settings field's counterpart; KeyError if it has none."""
    for config in COUNTERPARTS[settings]:
        fields = {f.name: f for f in dataclasses.fields(config)}
        target = RENAMED.get(name, name)
        if target in fields:
            return config, fields[target], None
        for suffix, unit in UNITS.items():
            if target.endswith(suffix) and target.removesuffix(suffix) in fields:
                return config, fields[target.removesuffix(suffix)], unit
    raise KeyError(name)


def contract_default(f: dataclasses.Field[Any], unit: timedelta | None) -> Any:
    value = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]
    return value // unit if unit is not None and value is not None else value


def pairs() -> list[tuple[type[BaseModel], str]]:
    out = []
    for settings in COUNTERPARTS:
        for name, info in settings.model_fields.items():
            try:
                _, f, _ = contract_field(settings, name)
            except KeyError:
                continue
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            if info.default is not PydanticUndefined and has_default:
                out.append((settings, name))
    return out


PAIRS = pairs()


def test_the_walk_finds_the_counterparts() -> None:
    assert len(PAIRS) >= 20  # the walk is not empty: every loop below runs
    assert (CapacityPolicySettings, "decide_before_minutes") in PAIRS
    assert (CostMonitorSettings, "idle_utilisation_percent") in PAIRS


def test_every_settings_class_that_builds_a_configuration_is_listed() -> None:
    """A new settings class turned into a contract configuration must join COUNTERPARTS (or the walk misses it)."""
    listed = {cls.__name__ for cls in COUNTERPARTS}
    builders = set()
    for name in dir(user_settings):
        cls = getattr(user_settings, name)
        if isinstance(cls, type) and issubclass(cls, BaseModel):
            source = inspect.getsource(cls)
            if any(f"{config.__name__}(" in source for configs in COUNTERPARTS.values() for config in configs):
                builders.add(cls.__name__)
    assert builders and builders <= listed


@pytest.mark.parametrize(("settings", "name"), PAIRS, ids=lambda p: p if isinstance(p, str) else p.__name__)
def test_a_settings_default_is_the_contracts(settings: type[BaseModel], name: str) -> None:
    config, f, unit = contract_field(settings, name)
    ours = settings.model_fields[name].default
    ours = ours.contract() if hasattr(ours, "contract") else ours  # nested settings: the configuration they make
    theirs = contract_default(f, unit)
    if (settings.__name__, name) in APART:
        assert ours != theirs, f"{settings.__name__}.{name} now agrees with {config.__name__}: drop it from APART"
        return
    assert ours == theirs, f"{settings.__name__}.{name} defaults to {ours!r}, {config.__name__}.{f.name} to {theirs!r}"


def default_expression(settings: type[BaseModel], name: str) -> ast.expr:
    """The expression a settings field's default is written as: ``= X`` or ``Field(default=X, ...)``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(settings)))
    (node,) = [n for n in tree.body[0].body  # type: ignore[attr-defined]
               if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == name]
    value = node.value
    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "Field":
        (value,) = [k.value for k in value.keywords if k.arg == "default"]
    assert value is not None
    return value


def copied(expression: ast.expr) -> bool:
    """Whether a default is written as a value (a literal, or a call of literals such as Decimal(0)) rather than by
    a name (the contract's constant, or a class of the contract's)."""
    return not [n for n in ast.walk(expression)
                if isinstance(n, ast.Attribute) or (isinstance(n, ast.Name) and n.id != "Decimal")]


@pytest.mark.parametrize(("settings", "name"), PAIRS, ids=lambda p: p if isinstance(p, str) else p.__name__)
def test_a_settings_default_names_the_contracts_constant(settings: type[BaseModel], name: str) -> None:
    if (settings.__name__, name) in APART or any(settings.model_fields[name].default is t for t in TRIVIAL):
        return
    expression = default_expression(settings, name)
    assert not copied(expression), (f"{settings.__name__}.{name} = {ast.unparse(expression)}: a copy of the "
                                    "contract's default; import the contract's constant")


def test_a_copied_literal_is_seen() -> None:
    assert copied(ast.parse("360", mode="eval").body)
    assert copied(ast.parse("Decimal(0)", mode="eval").body)
    assert not copied(ast.parse("DECIDE_BEFORE_MINUTES", mode="eval").body)
    assert not copied(ast.parse("WasteConfig.idle_hours", mode="eval").body)
