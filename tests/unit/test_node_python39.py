"""The node scripts' promise, Python 3.9 (AL2023's python3), checked on every run with no 3.9 interpreter:

- each file (neuronfleet.node.SCRIPTS and BOOTSTRAP, and the stripped BOOTSTRAP the user data carries) parses with
  ``ast.parse(..., feature_version=(3, 9))``: the parser refuses 3.10+ syntax such as ``match`` and ``except*``;
- an AST scan finds what parses on 3.9 but fails there when it runs: ``X | Y`` of types evaluated at run time
  (PEP 604, 3.10; annotations count only without ``from __future__ import annotations``), ``zip(strict=)``,
  ``dataclass``/``field`` with ``slots=``/``kw_only=``, ``int.bit_count``, ``itertools.pairwise``, ``aiter``/``anext``
  (3.10); ``tomllib``, ``datetime.UTC``, ``enum.StrEnum``, ``contextlib.chdir``, ``ExceptionGroup`` (3.11); the
  ``typing`` names added after 3.9. Code under ``if TYPE_CHECKING:`` never runs and is not scanned.

tests/unit/test_node_fetch.py also runs them under a real 3.9 where one is installed (``~/.pyenv``).
"""

from __future__ import annotations

import ast

import pytest

from neuronfleet.node import BOOTSTRAP, SCRIPTS, bootstrap_text, node_directory, script_text

FEATURE_VERSION = (3, 9)

NEWER_MODULE_NAMES = {
    "typing": {"TypeAlias": "3.10", "ParamSpec": "3.10", "ParamSpecArgs": "3.10", "ParamSpecKwargs": "3.10",
               "Concatenate": "3.10", "TypeGuard": "3.10", "is_typeddict": "3.10", "Self": "3.11",
               "LiteralString": "3.11", "Never": "3.11", "assert_never": "3.11", "assert_type": "3.11",
               "reveal_type": "3.11", "Required": "3.11", "NotRequired": "3.11", "TypeVarTuple": "3.11",
               "Unpack": "3.11", "dataclass_transform": "3.11", "get_overloads": "3.11", "override": "3.12",
               "TypeAliasType": "3.12"},
    "itertools": {"pairwise": "3.10", "batched": "3.12"},
    "datetime": {"UTC": "3.11"},
    "enum": {"StrEnum": "3.11", "ReprEnum": "3.11", "verify": "3.11"},
    "contextlib": {"chdir": "3.11", "aclosing": "3.10"},
    "hashlib": {"file_digest": "3.11"},
}
NEWER_MODULES = {"tomllib": "3.11"}
NEWER_BUILTINS = {"ExceptionGroup": "3.11", "BaseExceptionGroup": "3.11", "aiter": "3.10", "anext": "3.10",
                  "EncodingWarning": "3.10"}
NEWER_METHODS = {"bit_count": "3.10 (int.bit_count)"}
NEWER_KEYWORDS = {"zip": {"strict": "3.10"}, "dataclass": {"slots": "3.10", "kw_only": "3.10"},
                  "field": {"kw_only": "3.10"}}
BUILTIN_TYPES = {"int", "str", "bytes", "float", "bool", "complex", "dict", "list", "tuple", "set", "frozenset", "type",
                 "object", "bytearray", "memoryview", "range", "slice"}
LOWERCASE_TYPE_ATTRIBUTES = {"datetime", "date", "time", "timedelta", "timezone"}  # datetime.datetime and the like


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


class _Scan(ast.NodeVisitor):
    """Runs over one module; ``found`` lists each 3.10+ idiom that runs, as "line: what (version)"."""

    def __init__(self, tree: ast.Module) -> None:
        self.found: list[str] = []
        self.lazy_annotations = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                                    and any(a.name == "annotations" for a in n.names) for n in tree.body)
        self.classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}

    def _add(self, node: ast.AST, what: str, version: str) -> None:
        self.found.append(f"{getattr(node, 'lineno', 0)}: {what} ({version})")

    # code that never runs, annotations that are never evaluated
    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
                (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            for stmt in node.orelse:
                self.visit(stmt)
            return
        self.generic_visit(node)

    def _annotation(self, node: ast.expr | None) -> None:
        if node is not None and not self.lazy_annotations:
            self.visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        self._annotation(node.annotation)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for child in (*node.decorator_list, node.args, *node.body):
            self.visit(child)
        self._annotation(node.returns)

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._annotation(node.annotation)
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    # the idioms
    def _is_type(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return node.value is None
        if isinstance(node, ast.Name):
            return node.id in BUILTIN_TYPES or node.id in self.classes or (node.id[:1].isupper() and not node.id.isupper())
        if isinstance(node, ast.Attribute):
            return node.attr in LOWERCASE_TYPE_ATTRIBUTES or (node.attr[:1].isupper() and not node.attr.isupper())
        if isinstance(node, ast.Subscript):
            return self._is_type(node.value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self._is_type(node.left) or self._is_type(node.right)
        return False

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.BitOr) and (self._is_type(node.left) or self._is_type(node.right)):
            self._add(node, f"{ast.unparse(node)} evaluated at run time", "3.10")
            return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        for keyword in node.keywords:
            version = NEWER_KEYWORDS.get(_callee(node) or "", {}).get(keyword.arg or "")
            if version:
                self._add(node, f"{_callee(node)}({keyword.arg}=)", version)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        module = node.value.id if isinstance(node.value, ast.Name) else None
        version = NEWER_MODULE_NAMES.get(module or "", {}).get(node.attr) or NEWER_METHODS.get(node.attr)
        if version:
            self._add(node, f"{module + '.' if module in NEWER_MODULE_NAMES else '.'}{node.attr}", version)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in NEWER_BUILTINS:
            self._add(node, node.id, NEWER_BUILTINS[node.id])

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name in NEWER_MODULES:
                self._add(node, f"import {alias.name}", NEWER_MODULES[alias.name])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module in NEWER_MODULES:
            self._add(node, f"from {node.module} import", NEWER_MODULES[node.module])
        for alias in node.names:
            version = NEWER_MODULE_NAMES.get(node.module or "", {}).get(alias.name)
            if version:
                self._add(node, f"from {node.module} import {alias.name}", version)


def python39_problems(source: str) -> list[str]:
    """Why source would not run on Python 3.9: a syntax error under the 3.9 grammar, else each 3.10+ idiom it runs."""
    try:
        tree = ast.parse(source, feature_version=FEATURE_VERSION)
    except SyntaxError as exc:
        return [f"{exc.lineno}: {exc.msg} (syntax)"]
    scan = _Scan(tree)
    scan.visit(tree)
    return scan.found


def node_files() -> dict[str, str]:
    """Every text a host runs: the asset's scripts, the bootstrap files in full and as the user data strips them."""
    files = {name: script_text(name) for name in {*SCRIPTS, *BOOTSTRAP}}
    files |= {f"{name} (user data)": bootstrap_text(name) for name in BOOTSTRAP}
    return files


def test_every_script_of_the_node_folder_is_one_a_host_runs() -> None:
    from pathlib import Path

    on_disk = {p.name for p in Path(node_directory()).glob("*.py")} - {"__init__.py"}
    assert on_disk == {*SCRIPTS, *BOOTSTRAP}


@pytest.mark.parametrize("name", sorted(node_files()))
def test_the_node_script_runs_on_python_3_9(name: str) -> None:
    assert python39_problems(node_files()[name]) == []


LAZY = "from __future__ import annotations\n"


@pytest.mark.parametrize(("source", "problem"), [
    ("match x:\n    case 1:\n        pass\n", "3: Pattern matching is only supported in Python 3.10 and greater (syntax)"),
    ("try:\n    pass\nexcept* OSError:\n    pass\n", "4: Exception groups are only supported in Python 3.11 and greater "
                                                     "(syntax)"),
    ("Http = bytes | None\n", "1: bytes | None evaluated at run time (3.10)"),
    (LAZY + "ok = isinstance(x, int | str)\n", "2: int | str evaluated at run time (3.10)"),
    (LAZY + "Body = dict[str, int] | list[int]\n", "2: dict[str, int] | list[int] evaluated at run time (3.10)"),
    ("class Finding:\n    pass\nfound: Finding | None = None\n", "3: Finding | None evaluated at run time (3.10)"),
    ("def f(x: str | None) -> None:\n    pass\n", "1: str | None evaluated at run time (3.10)"),
    ("import datetime\ndef f() -> datetime.datetime | None:\n    pass\n",
     "2: datetime.datetime | None evaluated at run time (3.10)"),
    ("pairs = list(zip(a, b, strict=True))\n", "1: zip(strict=) (3.10)"),
    ("@dataclass(frozen=True, slots=True)\nclass A:\n    pass\n", "1: dataclass(slots=) (3.10)"),
    ("@dataclasses.dataclass(kw_only=True)\nclass A:\n    pass\n", "1: dataclass(kw_only=) (3.10)"),
    ("ones = mask.bit_count()\n", "1: .bit_count (3.10 (int.bit_count))"),
    ("import itertools\nfor a, b in itertools.pairwise(xs):\n    pass\n", "2: itertools.pairwise (3.10)"),
    ("from itertools import pairwise\n", "1: from itertools import pairwise (3.10)"),
    ("from typing import Self\n", "1: from typing import Self (3.11)"),
    ("from typing import Optional, TypeAlias\n", "1: from typing import TypeAlias (3.10)"),
    ("import typing\nP = typing.ParamSpec('P')\n", "2: typing.ParamSpec (3.10)"),
    ("from datetime import UTC\n", "1: from datetime import UTC (3.11)"),
    ("import datetime\nnow = datetime.datetime.now(datetime.UTC)\n", "2: datetime.UTC (3.11)"),
    ("import tomllib\n", "1: import tomllib (3.11)"),
    ("raise ExceptionGroup('x', [])\n", "1: ExceptionGroup (3.11)"),
])
def test_the_scan_refuses_each_idiom(source: str, problem: str) -> None:
    assert python39_problems(source) == [problem]


@pytest.mark.parametrize("source", [
    LAZY + "def f(x: str | None) -> dict[str, int] | None:\n    y: int | None = None\n",  # never evaluated
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    Http = bytes | None\n    from typing import Self\n",
    "import os\nfd = os.open(p, os.O_WRONLY | os.O_CREAT)\nflags = re.I | re.M\n",  # constants, not types
    "both = masks.get('a', 0) | masks.get('b', 0)\nseen = a | b\nmerged = env | {'X': '1'}\n",
    "name = s.removeprefix('x')\nd = {**a} | b\n",  # 3.9 has these
    "@dataclass(frozen=True)\nclass A:\n    pass\nz = zip(a, b)\n",
])
def test_the_scan_passes_what_3_9_runs(source: str) -> None:
    assert python39_problems(source) == []
