"""Defects a first user met (the walkthrough of 2026-11-23, /tmp/notes25/newuser.md), each pinned: the help's own
examples are accepted, a fix prints what a user can paste, numbers read the right way round."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import click
import pytest

from neuronfleet.cli.main import main
from neuronfleet.cli.output import Moment

ISO = re.compile(r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?)?(?:Z|[+-]\d\d:\d\d)?")


def test_capacity_search_accepts_the_start_times_its_help_shows(capsys) -> None:
    assert main(["capacity", "search", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    examples = ISO.findall(help_text)
    assert "2026-12-01T00:00" in examples and len(examples) >= 3, help_text
    from neuronfleet.capacity.cli import search

    for example in examples:
        ctx = search.make_context("search", ["-c", "x.yaml", "--hours", "24", "--start-after", example,
                                             "--end-before", example])
        assert ctx.params["start_after"].tzinfo is UTC, example
    assert "(a zone, or UTC when none is given)" in help_text


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-12-01T00:00", datetime(2026, 12, 1, tzinfo=UTC)),
    ("2026-12-01", datetime(2026, 12, 1, tzinfo=UTC)),
    ("2026-12-01T00:00:30", datetime(2026, 12, 1, 0, 0, 30, tzinfo=UTC)),
    ("2026-12-01 06:00", datetime(2026, 12, 1, 6, tzinfo=UTC)),
    ("2026-12-01T00:00:00Z", datetime(2026, 12, 1, tzinfo=UTC)),
    ("2026-12-01T09:00+09:00", datetime(2026, 12, 1, tzinfo=UTC)),
])
def test_a_moment_is_iso_8601_with_or_without_seconds_or_a_zone(text, expected) -> None:
    assert Moment().convert(text, None, None) == expected


def test_a_bad_moment_names_the_value_and_what_is_allowed() -> None:
    with pytest.raises(click.BadParameter) as info:
        Moment().convert("next tuesday", None, None)
    assert "got 'next tuesday'; allowed: an ISO 8601 date or time, e.g. 2026-12-01" in str(info.value)
    assert "(no zone: UTC)" in str(info.value)
