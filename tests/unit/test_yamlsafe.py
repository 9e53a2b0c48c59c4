"""neuronfleet.fleetfile.yamlsafe: no input crashes or exhausts the fleet-file reader; each refusal says where and why."""

from __future__ import annotations

import time
import tracemalloc
from datetime import date
from pathlib import Path

import pytest

from neuronfleet.core.problems import Problem
from neuronfleet.fleetfile.yamlsafe import MAX_BYTES, MAX_NODES, YamlProblem, load_yaml_file, load_yaml_text
from tests.conftest import EXAMPLE_FLEETS

ROOT = Path(__file__).resolve().parents[2]


def problem(data: bytes) -> Problem:
    with pytest.raises(YamlProblem) as info:
        load_yaml_text(data, source="fleet.yaml")
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith("fleet.yaml: ")
    return info.value.problem


def billion_laughs(levels: int = 9) -> bytes:
    lines = ["lol0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"lol{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("name", EXAMPLE_FLEETS)
def test_the_shipped_fleet_files_load_as_pyyaml_loads_them(name: str) -> None:
    import yaml

    path = ROOT / "config" / f"{name}.yaml"
    assert load_yaml_file(path) == yaml.safe_load(path.read_text())


def test_plain_python_out() -> None:
    data = b"a: 1\nb: 2.5\nc: [x, true, null]\nd: 2026-10-01\ne: {f: 'g'}\ncount: yes\n"
    assert load_yaml_text(data, source="f") == {"a": 1, "b": 2.5, "c": ["x", True, None], "d": date(2026, 10, 1),
                                                "e": {"f": "g"}, "count": True}


def test_byte_order_mark_is_allowed() -> None:
    assert load_yaml_text(b"\xef\xbb\xbfname: nf-dev\n", source="f") == {"name": "nf-dev"}


def test_empty_document_is_none() -> None:
    assert load_yaml_text(b"# only a comment\n", source="f") is None


def test_non_utf8_byte_names_line_column_and_byte() -> None:
    p = problem(b"name: nf-dev\nregion: us-\xe9ast-2\n")
    assert (p.path, p.value, p.allowed) == ("line 2, column 12", "byte 0xe9", "UTF-8 text (save the file as UTF-8)")


def test_duplicate_key_names_key_and_both_lines() -> None:
    p = problem(b"name: a\nnetwork:\n  cidr: x\n  nat: 1\n  cidr: y\n")
    assert (p.path, p.value, p.allowed) == ("line 5, column 3", "cidr",
                                            "a key used once in this mapping (first at line 3)")


def test_duplicate_top_level_key() -> None:
    assert problem(b"region: us-east-2\naccount: '1'\nregion: us-west-2\n").path == "line 3, column 1"


def test_same_key_in_different_mappings_is_fine() -> None:
    assert load_yaml_text(b"a: {name: x}\nb: {name: y}\n", source="f") == {"a": {"name": "x"}, "b": {"name": "y"}}


def test_merge_keys_still_work_and_may_be_overridden() -> None:
    data = b"base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n"
    assert load_yaml_text(data, source="f") == {"base": {"x": 1, "y": 2}, "d": {"x": 1, "y": 3}}


def test_billion_laughs_is_refused_fast_and_small() -> None:
    tracemalloc.start()
    start = time.perf_counter()
    try:
        p = problem(billion_laughs(9))
    finally:
        seconds = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert seconds < 1.0
    assert peak < 50 * 1024 * 1024
    assert p.allowed == f"at most {MAX_NODES:,} values with every alias (*name) expanded"
    assert p.path.startswith("line ")


def test_aliases_within_the_limit_are_fine() -> None:
    assert load_yaml_text(billion_laughs(3), source="f")["lol2"][0][0][0] == "lol"


def test_recursive_alias_is_refused() -> None:
    p = problem(b"a: &x [1, *x]\n")
    assert p.path == "line 1, column 4" and "not recursive" in p.allowed


def test_syntax_error_has_one_based_line_and_column() -> None:
    p = problem(b"name: nf-dev\nnetwork: [a, b\nregion: x\n")
    assert p.path == "line 3, column 7"
    assert p.value == "region: x"
    assert p.allowed.startswith("valid YAML here (the parser says: ")


def test_tab_indentation_says_use_spaces() -> None:
    p = problem(b"network:\n\tcidr: x\n")
    assert p.path == "line 2, column 1" and p.allowed.endswith("indent with spaces, not tabs")


def test_control_character() -> None:
    p = problem(b"name: a\x07b\n")
    assert (p.path, p.value) == ("line 1, column 8", "character U+0007")


def test_language_tags_are_refused() -> None:
    p = problem(b"account: !!python/object/apply:os.system ['id']\n")
    assert p.path == "line 1, column 10" and p.allowed.startswith("plain YAML without language tags")


@pytest.mark.parametrize("data", [b"a: !!binary aGVsbG8=\n", b"a: !!set {x, y}\n", b"a: !!omap [{x: 1}]\n"])
def test_non_plain_types_are_refused(data: bytes) -> None:
    assert problem(data).allowed.startswith("plain YAML: mappings, lists")


def test_impossible_date() -> None:
    p = problem(b"as_of: 2026-02-30\n")
    assert (p.path, p.value) == ("line 1, column 8", "2026-02-30")


def test_huge_integer() -> None:
    p = problem(b"count: " + b"9" * 5000 + b"\n")
    assert p.path == "line 1, column 8" and "whole number" in p.allowed


def test_deep_nesting_is_refused_without_recursion_error() -> None:
    p = problem(b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n")
    assert p.path.startswith("line 1, column ") and "nested at most" in p.allowed


def test_two_documents() -> None:
    assert problem(b"a: 1\n---\nb: 2\n").path == "line 2, column 1"


def test_oversize_input_is_refused_before_parsing() -> None:
    p = problem(b"#" * (MAX_BYTES + 1))
    assert p.path == "(file)" and p.allowed == f"a file of at most {MAX_BYTES:,} bytes"


def test_oversize_file_is_not_read_whole(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" + b"#" * (3 * MAX_BYTES))
    with pytest.raises(YamlProblem) as info:
        load_yaml_file(big)
    assert info.value.problem.path == "(file)"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(YamlProblem) as info:
        load_yaml_file(tmp_path / "nope.yaml")
    p = info.value.problem
    assert p.path == "(file)" and p.allowed.startswith("a readable file")


@pytest.mark.parametrize("data", [b"\x00", b"[", b"{a: 1", b"a: *nope\n", b"&a [*a]", b"? ? ?", b"%YAML 9.9\n---\na\n",
                                  b"a: 'unterminated\n", b"\xff\xfe", b"!!int x\n", b"- &a x\n- *a *a\n"])
def test_garbage_never_escapes_as_another_exception(data: bytes) -> None:
    problem(data)
