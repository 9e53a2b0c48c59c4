"""The report's "What is confirmed on this account" section from neuronfleet verify's records (confirmations.py)."""

from __future__ import annotations

import json
from datetime import date

from neuronfleet.lambdas.cost.logic import confirmations as c
from neuronfleet.lambdas.cost.logic.report_page import confirmed_section
from neuronfleet_contract.cost import verify_key

RECORD = {"fleet": "prod", "region": "us-east-2", "at": "2026-11-27T09:30:00+00:00", "version": "0.1.0",
          "checks": [{"id": "cw-publish", "outcome": "holds", "seen": "3 series", "fix": ""},
                     {"id": "node-fetch", "outcome": "broken", "seen": "403 on the script", "fix": "grant it"},
                     {"id": "block-fee", "outcome": "not yet", "seen": "no fee billed", "fix": "after 24 h"},
                     {"id": "vllm-shape", "outcome": "unchecked", "seen": "needs an invocation", "fix": "run x"}],
          "not_applying": [{"id": "data-export", "why": "Cost Explorer"}],
          "listed": ["cw-publish", "node-fetch", "block-fee", "vllm-shape", "data-export", "kueue-chart"]}


def test_each_outcome_becomes_its_line_with_the_date_and_a_check_never_run_is_unconfirmed() -> None:
    record = c.parse(json.dumps(RECORD).encode(), "s3://b/verify/prod/2026-11-27.json")
    assert isinstance(record, c.Record)
    assert c.lines(record) == [
        "cw-publish: confirmed (holds) on 2026-11-27",
        "node-fetch: broken on 2026-11-27: 403 on the script",
        "block-fee: not yet on 2026-11-27: no fee billed",
        "vllm-shape: unchecked on 2026-11-27: needs an invocation",
        "data-export: does not apply to this fleet (verify 2026-11-27)",
        f"kueue-chart: unconfirmed (never run on this account): {c.RUN_IT}",
    ]


def test_no_record_is_one_line() -> None:
    assert c.lines(None) == [f"No verify record: nothing is confirmed on this account yet; {c.RUN_IT}."]


def test_a_malformed_record_is_one_line_naming_it_never_an_exception() -> None:
    where = "s3://b/verify/prod/2026-11-27.json"
    bad = [b"{not json", b"[]", json.dumps({**RECORD, "at": None}).encode(),
           json.dumps({**RECORD, "checks": [{"id": "x", "outcome": "fine"}]}).encode(),
           json.dumps({**RECORD, "checks": ["x"]}).encode(), b"\xff\xfe"]
    for raw in bad:
        got = c.parse(raw, where)
        assert isinstance(got, str), raw
        assert got.startswith(f"The verify record {where} cannot be read (")
        assert c.lines(got) == [got]
    assert "outcome: got 'fine'" in str(c.parse(bad[3], where))


def test_the_newest_of_several_dates_is_chosen_by_its_name() -> None:
    keys = ["verify/prod/2026-11-02.json", "verify/prod/2026-11-27.json", "verify/prod/2026-11-09.json",
            "verify/prod/latest.json", "verify/prod/2026-13-40.json", "verify/prod/old/2026-12-01.json",
            "verify/production/2026-12-30.json"]
    assert c.newest(keys, "prod") == "verify/prod/2026-11-27.json"
    assert c.newest(["verify/prod/notes.txt"], "prod") is None
    assert verify_key("prod", date(2026, 11, 29)) == "verify/prod/2026-11-29.json"  # the contract's layout


def test_the_page_shows_the_section_only_when_it_was_read() -> None:
    html = confirmed_section({"confirmed_on_account": c.lines(None)})
    assert "What is confirmed on this account" in html and "No verify record" in html
    assert confirmed_section({}) == ""
