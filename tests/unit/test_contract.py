"""The boundary between the construct library and the Lambda handlers: constructs -> neuronfleet_contract <- handlers.

A construct module (constructs/neuronfleet/**) imports the contract, never a handler's module (neuronfleet.lambdas.*);
the contract imports nothing of either side, and the handlers reach the contract and the shared runtime under the
same names in the tests and deployed (no ``_shared`` fallbacks)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "constructs" / "neuronfleet"
LAMBDAS = ROOT / "lambdas"
CONTRACT = LAMBDAS / "neuronfleet_contract"

CLI = {"cost/estimate.py", "cost/exports.py", "cli/estimate.py", "cli/report.py", "cli/prices.py"}
"""The command line runs the cost handlers' pure logic on the user's machine: ``neuronfleet estimate`` (Cost
Explorer rows, CUR 2.0 lines -> the report's own estimate), its export readers and its old entry point,
``neuronfleet report`` (the report page's renderer) and ``neuronfleet prices refresh`` (the report's own Price List
reader, so the CLI's cache and the report read prices alike). Never a construct."""
NOT_YET_MOVED: dict[str, set[str]] = {}
"""Handler modules a construct module may still import: none (the estimate CLI aside). Kept so that a step back is
a visible, reviewed entry here."""


def imported_modules(path: Path, package: str) -> set[str]:
    """Every module ``path`` imports, relative imports resolved against ``package`` (the module's own package)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
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
    return found


def library_modules() -> dict[str, set[str]]:
    out = {}
    for path in sorted(LIBRARY.rglob("*.py")):
        relative = path.relative_to(LIBRARY)
        package = ".".join(["neuronfleet", *relative.parts[:-1]])
        out[relative.as_posix()] = imported_modules(path, package)
    return out


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


def allowed(imported: str, module: str) -> bool:
    """``imported`` is ``module`` or a name defined in it."""
    return imported == module or (imported.startswith(f"{module}.") and "." not in imported[len(module) + 1:])


def test_no_construct_imports_a_handler_module() -> None:
    offending = {name: handler_imports(imports) for name, imports in library_modules().items() if name not in CLI}
    offending = {name: found for name, found in offending.items() if found}
    new = {name: {m for m in found if not any(allowed(m, k) for k in NOT_YET_MOVED.get(name, ()))}
           for name, found in offending.items()}
    assert {k: v for k, v in new.items() if v} == {}, "import the contract (neuronfleet_contract), not a handler"
    assert set(offending) == set(NOT_YET_MOVED), "a module no longer imports a handler: drop it from NOT_YET_MOVED"


def test_the_contract_imports_neither_side_nor_aws() -> None:
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
    for path in sorted((LAMBDAS / "cost" / "logic").glob("*.py")):
        imports = imported_modules(path, "cost.logic")
        aws = {m for m in imports if m.split(".")[0] in {"boto3", "botocore"}}
        assert aws == set(), f"{path.name} imports {aws}: move the call into cost/adapters"
