"""`neuronfleet judge`: a prompt set checked as the deployed judge reads it; a verdict record in one line."""

from __future__ import annotations

import json
from pathlib import Path

from neuronfleet.cli.main import main
from neuronfleet_contract.judge import Failing, VariantFigures, Verdict


def test_a_good_prompt_set_is_counted(tmp_path: Path, capsys) -> None:
    p = tmp_path / "prompts.jsonl"
    p.write_text('{"prompt": "2+2?", "reference": "4"}\n{"prompt": "hello"}\n')
    assert main(["judge", "prompts", str(p), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"path": str(p), "prompts": 2, "with_reference": 1}


def test_an_empty_or_malformed_prompt_set_is_exit_2_with_field_value_allowed(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["judge", "prompts", str(empty)]) == 2
    err = capsys.readouterr().err
    assert f"{empty}: got 'no prompts'; allowed: at least one line" in err and "Traceback" not in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": ""}\n')
    assert main(["judge", "prompts", str(bad), "--json"]) == 2
    (problem,) = json.loads(capsys.readouterr().out)["problems"]
    assert problem["path"] == f"{bad} line 1.prompt" and "non-empty string" in problem["allowed"]


def test_a_verdict_record_prints_its_line_and_exits_1_on_no_go(tmp_path: Path, capsys) -> None:
    figures = VariantFigures(invocations=3, errors=0, p50_ms=50.0, p99_ms=60.0, units_per_second=100.0,
                             usd_per_million=20.0)
    record = Verdict(endpoint="chat", run_id="r1", task="generation", go=False,
                     failing=(Failing("token agreement", 0.8, 0.95, "neuron"),), measures={"token_agreement": 0.8},
                     variants={"neuron": figures, "gpu": figures}, prompts=3, unit="tokens")
    path = tmp_path / "latest.json"
    path.write_text(json.dumps(record.to_json()))
    assert main(["judge", "verdict", str(path)]) == 1
    assert capsys.readouterr().out.startswith("chat: NO-GO: token agreement (neuron) 0.8 against a limit of 0.95")
    path.write_text("{}")
    assert main(["judge", "verdict", str(path)]) == 2
