"""`make bench`'s synth guards (issue 42): scripts/bench_floor.py exits 1 when a fleet's kit/floor ratio of CPU-time
medians is above its guard, prod 1.5x and the Rainier fleet 2.0x."""

from __future__ import annotations

from scripts.bench_floor import GUARDS, guard


def test_the_guards_are_issue_42s() -> None:
    assert GUARDS == {"prod": 1.5, "rainier": 2.0}


def test_a_ratio_at_its_guard_passes_and_one_above_fails() -> None:
    lines, ok = guard({"prod kit": 10.5, "prod floor": 7.0, "rainier kit": 24.0, "rainier floor": 12.0},
                      ["prod", "rainier"])
    assert ok and lines == ["guard: prod kit/floor CPU 1.50x, at most 1.5x: ok",
                            "guard: rainier kit/floor CPU 2.00x, at most 2.0x: ok"]
    lines, ok = guard({"prod kit": 10.3, "prod floor": 7.0, "rainier kit": 24.3, "rainier floor": 12.0},
                      ["prod", "rainier"])
    assert not ok and lines[0].endswith(": ok") and lines[1].startswith("guard: rainier kit/floor CPU 2.02x, at most "
                                                                        "2.0x: ABOVE THE GUARD")
    assert guard({"prod kit": 11.0, "prod floor": 7.0}, ["prod"])[1] is False  # --only prod: 1.57x
