"""What may import what (docs/layout.md, "What may import what"): constructs -> shared <- functions.

Three source folders: constructs/ (the library, ``neuronfleet``), lambdas/ (the functions' handlers, shipped as
``neuronfleet.lambdas``) and shared/ (``neuronfleet_contract``, what both sides agree on, and ``neuronfleet_runtime``,
handler code several functions share), each imported by its real name in the tests and deployed. The table below is
the rule; the tests hold every module of the tree to it."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "constructs" / "neuronfleet"
LAMBDAS = ROOT / "lambdas"
SHARED = ROOT / "shared"
CONTRACT = SHARED / "neuronfleet_contract"
RUNTIME = SHARED / "neuronfleet_runtime"

COMMAND_LINE = ("cli/", "preflight/", "verify/", "capacity/cli.py", "judge/commands.py", "cost/exports.py",
                "eks/commands.py")
"""The library's command-line modules (``neuronfleet ...`` on the user's machine, never synth): they run the
functions' own logic and AWS readers where one home serves both (``neuronfleet estimate`` and ``report`` the cost
report's estimate and page, ``prices refresh`` its Price List reader, ``capacity`` the lifecycle's Capacity Block
calls, the account check its reservation reader). A construct never does."""

RULES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # room: (first-party top-level names it may import, third-party ones); the standard library always
    "contract": (frozenset({"neuronfleet_contract"}), frozenset()),
    "runtime": (frozenset({"neuronfleet_contract", "neuronfleet_runtime"}), frozenset({"boto3", "botocore"})),
    "function": (frozenset({"neuronfleet_contract", "neuronfleet_runtime"}),
                 frozenset({"boto3", "botocore", "aws_lambda_powertools"})),
    "construct": (frozenset({"neuronfleet", "neuronfleet_contract"}),
                  frozenset({"aws_cdk", "constructs", "jsii", "pydantic", "yaml", "boto3", "botocore", "moto",
                             "health_gate", "sigv4"})),
    "command line": (frozenset({"neuronfleet", "neuronfleet_contract", "neuronfleet_runtime"}),
                     frozenset({"aws_cdk", "constructs", "click", "yaml", "boto3", "botocore"})),
}
"""``health_gate`` and ``sigv4`` are the node scripts' imports of each other (they run as plain files on an
instance: constructs/neuronfleet/node). A function may also import its own package (``cost.logic``), never another
function's; the command line may import a function's ``logic`` and ``adapters`` (``neuronfleet.lambdas.<function>.
logic...``), never a handler module."""

FUNCTIONS = tuple(sorted(p.name for p in LAMBDAS.iterdir() if (p / "__init__.py").is_file()))


def imported_modules(path: Path, package: str, text: str | None = None) -> set[str]:
    """Every module ``path`` imports (its ``text`` when given), relative imports resolved against ``package`` (the
    module's own package)."""
    return set(_imports_of(path.read_text() if text is None else text, package))


@functools.cache
def _imports_of(text: str, package: str) -> frozenset[str]:
    """:func:`imported_modules` of one source text (parsed once per process: the layer and contract tests read the
    whole library several times, planting one module each time)."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}  # a module or a name in one
    return frozenset(found)


def handler_imports(imports: set[str]) -> set[str]:
    return {m for m in imports if m == "neuronfleet.lambdas" or m.startswith("neuronfleet.lambdas.")}


def test_the_check_resolves_relative_imports(tmp_path: Path) -> None:
    source = "from .lambdas.cost.rows import X\nfrom ..lambdas import failover\nfrom neuronfleet_contract import tags\n"
    path = tmp_path / "probe.py"
    path.write_text(source)
    assert imported_modules(path, "neuronfleet.settings") == {
        "neuronfleet.settings.lambdas.cost.rows", "neuronfleet.settings.lambdas.cost.rows.X", "neuronfleet.lambdas",
        "neuronfleet.lambdas.failover", "neuronfleet_contract", "neuronfleet_contract.tags"}
    assert handler_imports(imported_modules(path, "neuronfleet")) == {
        "neuronfleet.lambdas.cost.rows", "neuronfleet.lambdas.cost.rows.X"}


def room_of(path: Path) -> tuple[str, str]:
    """(room, the module's package) of a source file of the tree."""
    if path.is_relative_to(LIBRARY):
        relative = path.relative_to(LIBRARY).as_posix()
        room = "command line" if relative.startswith(COMMAND_LINE) else "construct"
        return room, ".".join(["neuronfleet", *path.relative_to(LIBRARY).parts[:-1]])
    if path.is_relative_to(SHARED):
        return ("contract" if path.is_relative_to(CONTRACT) else "runtime"), ".".join(path.relative_to(SHARED).parts[:-1])
    return "function", ".".join(path.relative_to(LAMBDAS).parts[:-1])


def breaches(path: Path, text: str | None = None) -> set[str]:
    """The imports of ``path`` (its ``text`` when given) that its room's rule does not allow."""
    room, package = room_of(path)
    first_party, third_party = RULES[room]
    own = {package.split(".")[0]} if room == "function" else set()
    out = set()
    for module in imported_modules(path, package, text):
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top == "__future__":
            continue
        if module.startswith("neuronfleet.lambdas"):
            parts = module.split(".")
            reused = room == "command line" and len(parts) > 3 and parts[2] in FUNCTIONS and parts[3] in {
                "logic", "adapters"}
            if not reused and module != "neuronfleet.lambdas":
                out.add(module)
            continue
        if top not in first_party | third_party | own:
            out.add(module)
    return out


def tree_sources() -> list[Path]:
    return sorted(p for folder in (LIBRARY, LAMBDAS, SHARED) for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_imports_only_what_its_room_may() -> None:
    sources = tree_sources()
    assert {room_of(p)[0] for p in sources} == set(RULES)  # every room has modules: the table is not stale
    found = {p.relative_to(ROOT).as_posix(): sorted(breaches(p)) for p in sources}
    assert {k: v for k, v in found.items() if v} == {}, "see docs/layout.md, 'What may import what'"


@pytest.mark.parametrize(("where", "source", "breach"), [
    ("constructs/neuronfleet/inference/probe.py", "from ..lambdas.failover import logic\n", "neuronfleet.lambdas.failover"),
    ("constructs/neuronfleet/inference/probe.py", "from neuronfleet_runtime import topic\n", "neuronfleet_runtime"),
    ("constructs/neuronfleet/cli/probe.py", "from ..lambdas.cost import report\n", "neuronfleet.lambdas.cost.report"),
    ("shared/neuronfleet_contract/probe.py", "import boto3\n", "boto3"),
    ("shared/neuronfleet_contract/probe.py", "from neuronfleet.core import args\n", "neuronfleet.core"),
    ("shared/neuronfleet_runtime/probe.py", "import aws_cdk\n", "aws_cdk"),
    ("lambdas/failover/probe.py", "from cost.logic import rows\n", "cost.logic"),
    ("lambdas/failover/probe.py", "from neuronfleet.facts import catalog\n", "neuronfleet.facts"),
])
def test_the_rule_refuses_each_kind_of_breach(where: str, source: str, breach: str) -> None:
    """Each rule bites: an import of each forbidden kind, as if in a module at ``where``, is named."""
    assert breach in breaches(ROOT / where, source)
    assert breaches(ROOT / where, "import json\n") == set()


def test_the_rule_lets_the_command_line_reuse_a_functions_logic() -> None:
    assert breaches(LIBRARY / "cli" / "report.py") == set()
    assert any(m.startswith("neuronfleet.lambdas.cost.logic") for m in imported_modules(
        LIBRARY / "cli" / "report.py", "neuronfleet.cli"))


def test_the_contract_imports_neither_side_nor_aws() -> None:
    assert len(list(CONTRACT.rglob("*.py"))) > 1, CONTRACT
    for path in sorted(CONTRACT.rglob("*.py")):
        imports = imported_modules(path, "neuronfleet_contract")
        outside = {m for m in imports if m.split(".")[0] not in {"neuronfleet_contract", "__future__"}
                   and m.split(".")[0] not in sys.stdlib_module_names}
        assert outside == set(), f"{path.name} imports {outside}: the contract is pure and stands alone"


def test_handlers_reach_shared_code_under_one_name() -> None:
    assert sorted(LAMBDAS.rglob("_shared.py")) == []
    for path in sorted(LAMBDAS.rglob("*.py")):
        tree = ast.parse(path.read_text())
        depth = len(path.relative_to(LAMBDAS).parts) - 1  # folders inside lambdas/: a relative import stays in them
        parents = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > depth]
        assert parents == [], f"{path.relative_to(ROOT)}: import neuronfleet_contract / neuronfleet_runtime instead"


def test_the_library_uses_the_contract_the_handlers_use() -> None:
    code = ("import neuronfleet.core.tagging as t, neuronfleet_contract.tags as c, "
            "neuronfleet.lambdas.cost.logic.rows as r; "
            "assert t.FLEET_TAG is c.FLEET_TAG and r.FLEET_TAG is c.FLEET_TAG; print(c.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "neuronfleet_contract.tags"


def test_cost_logic_makes_no_aws_call() -> None:
    """lambdas/cost/logic holds the pure rules; every boto3/botocore call lives in lambdas/cost/adapters."""
    assert len(list((LAMBDAS / "cost" / "logic").glob("*.py"))) > 1
    for path in sorted((LAMBDAS / "cost" / "logic").glob("*.py")):
        imports = imported_modules(path, "cost.logic")
        aws = {m for m in imports if m.split(".")[0] in {"boto3", "botocore"}}
        assert aws == set(), f"{path.name} imports {aws}: move the call into cost/adapters"
