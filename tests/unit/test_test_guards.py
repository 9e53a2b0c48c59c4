"""Guards on the tests themselves (issue 38, part 6), each shown refusing a planted breach as well as passing the tree:

- a unit test builds no CDK construct: no module under tests/unit imports aws_cdk, cdk_nag or the CDK helpers
  (tests/cdk_support.py, the CDK names tests/conftest.py forwards, the ``synth_fleet`` fixture); those tests live in
  tests/constructs;
- no test names a path of one machine (a checkout, a home folder, a temporary file): the data a test reads is
  under tests/data, a temporary file comes from ``tmp_path``.

The checks read the files as text and syntax trees (nothing is imported), so this module itself loads no CDK.
"""

from __future__ import annotations

import ast
import re

import pytest

from tests.conftest import ROOT

TESTS = ROOT / "tests"
UNIT = TESTS / "unit"

# ----------------------------------------------------------------------------------------- no CDK in tests/unit

CDK_MODULES = ("aws_cdk", "cdk_nag", "jsii", "tests.cdk_support")
CDK_HELPERS = frozenset({"AZS", "ENV", "AzStack", "network", "properties", "SynthesizedFleet", "new_app"})
"""The names tests/conftest.py forwards to tests/cdk_support.py (its _CDK_SUPPORT): importing one loads aws-cdk-lib."""
CDK_FIXTURES = frozenset({"synth_fleet"})


def _under(module: str, roots: tuple[str, ...]) -> bool:
    return any(module == root or module.startswith(root + ".") for root in roots)


def cdk_uses(source: str) -> list[str]:
    """What in one test module's source loads the CDK: imports and the fleet-synthesising fixture, with line numbers."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if _under(a.name, CDK_MODULES)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = {a.name for a in node.names}
            if _under(node.module, CDK_MODULES) or (node.module == "tests" and "cdk_support" in names):
                found.append(f"{node.lineno}: from {node.module} import ...")
            elif node.module == "tests.conftest" and names & CDK_HELPERS:
                found.append(f"{node.lineno}: from tests.conftest import {', '.join(sorted(names & CDK_HELPERS))}")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
            found += [f"{node.lineno}: {node.name} asks for the {f} fixture" for f in sorted(arguments & CDK_FIXTURES)]
    return found


def test_no_unit_test_loads_the_cdk() -> None:
    modules = sorted(UNIT.rglob("*.py"))
    assert len(modules) > 40, modules
    breaches = {str(p.relative_to(ROOT)): uses for p in modules if (uses := cdk_uses(p.read_text()))}
    assert breaches == {}, f"move these tests to tests/constructs: {breaches}"


def test_the_cdk_guard_refuses_each_kind_of_breach() -> None:
    planted = {
        "import aws_cdk as cdk\n": "1: import aws_cdk",
        "from aws_cdk.assertions import Template\n": "1: from aws_cdk.assertions import ...",
        "from cdk_nag import NIST80053R5Checks\n": "1: from cdk_nag import ...",
        "import tests.cdk_support\n": "1: import tests.cdk_support",
        "from tests import cdk_support\n": "1: from tests import ...",
        "from tests.conftest import ROOT, AzStack\n": "1: from tests.conftest import AzStack",
        "def test_x(synth_fleet):\n    pass\n": "1: test_x asks for the synth_fleet fixture",
    }
    assert {source: cdk_uses(source) for source in planted} == {source: [use] for source, use in planted.items()}
    assert cdk_uses("import aws_cdk_lib_facts\nfrom tests.conftest import ROOT\nimport jsonschema\n") == []


# ------------------------------------------------------------------------------------------ no machine paths

MACHINE_PATH = re.compile(r"(?<![\w.~/-])/(?:work|home|Users|root|tmp|private|var/folders|mnt)/")
PRODUCT_PATHS = ("/tmp/neuronfleet",)
"""Paths of the product, not of the machine running the tests: the node scripts' folder on an instance or a pod
(constructs/neuronfleet/node, neuronfleet.eks.manifests), which tests read back from commands and messages."""


def machine_paths(source: str) -> list[str]:
    """Lines of a test module's source that name an absolute path of one machine."""
    found = []
    for number, line in enumerate(source.splitlines(), 1):
        rest = line
        for allowed in PRODUCT_PATHS:
            rest = rest.replace(allowed + "/", "").replace(allowed, "")
        if MACHINE_PATH.search(rest):
            found.append(f"{number}: {line.strip()}")
    return found


def test_no_test_names_a_machine_path() -> None:
    modules = sorted(TESTS.rglob("*.py"))
    assert len(modules) > 100, modules
    breaches = {str(p.relative_to(ROOT)): lines for p in modules if (lines := machine_paths(p.read_text()))}
    assert breaches == {}, f"copy the file under tests/data (with its source) or use tmp_path: {breaches}"


def test_the_machine_path_guard_refuses_each_kind() -> None:
    # written in pieces so that this module's own text names no such path
    planted = [f'SDK = Path("/{root}/x/repo")' for root in ("work", "home", "Users", "root", "tmp", "var/folders")]
    planted += [f"# see /{'tmp'}/notes25/newuser.md", f"'/{'mnt'}/data/x'"]
    assert [machine_paths(line) for line in planted] == [[f"1: {line}"] for line in planted]
    allowed = ["f'{tmp_path}/scripts/'", "'python3 /tmp/neuronfleet/utilisation.py'", f"'s3://b/{'home'}/x'",
               f"'https://example.com/{'work'}/x'", f"'~/{'work'}/x'", f"'./{'tmp'}/x'", f"'tests/data/{'home'}/x'"]
    assert [machine_paths(line) for line in allowed] == [[] for _ in allowed]


# -------------------------------------------------------------------------------- no assertion only inside a loop

_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _is_pytest_call(node: ast.AST, names: set[str]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names \
        and isinstance(node.func.value, ast.Name) and node.func.value.id == "pytest"


def _runs_at_least_once(loop: ast.AST) -> bool:
    """A for loop (or a comprehension's first ``for``) over a written-out tuple, list, set or dict with an element that
    is not ``*unpacked``, or over a non-empty string."""
    items = loop.generators[0].iter if isinstance(loop, ast.GeneratorExp | ast.ListComp | ast.SetComp) else \
        getattr(loop, "iter", None)
    if isinstance(items, ast.Constant):
        return isinstance(items.value, str) and items.value != ""
    elements: list[ast.expr | None] = []
    if isinstance(items, ast.Dict):
        elements = list(items.keys)  # None: a **mapping unpacked
    elif isinstance(items, ast.Tuple | ast.List | ast.Set):
        elements = list(items.elts)
    return any(e is not None and not isinstance(e, ast.Starred) for e in elements)


def _is_pytest_check(node: ast.AST) -> bool:
    if isinstance(node, ast.With | ast.AsyncWith):
        return any(_is_pytest_call(item.context_expr, {"raises", "warns"}) for item in node.items)
    return isinstance(node, ast.Expr) and _is_pytest_call(node.value, {"fail"})


def _checks(node: ast.AST, looped: bool = False) -> list[tuple[ast.AST, bool]]:
    """Every check under node, with whether it may run zero times: inside a loop's body (a for loop's iterable and
    else run whatever the count; a loop over a written-out non-empty display runs), or an ``assert all(... for ...)``,
    true of an empty iterable. A check is an ``assert``, a ``with pytest.raises(...)``/``pytest.warns(...)`` block or
    a ``pytest.fail(...)`` call."""
    found: list[tuple[ast.AST, bool]] = []
    for child in ast.iter_child_nodes(node):
        inside = looped or (isinstance(node, _LOOPS) and child in node.body and not _runs_at_least_once(node))
        if isinstance(child, ast.Assert):
            test = child.test
            vacuous = isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "all" \
                and len(test.args) == 1 and isinstance(test.args[0], ast.GeneratorExp | ast.ListComp | ast.SetComp) \
                and not _runs_at_least_once(test.args[0])
            found.append((child, inside or vacuous))
        elif _is_pytest_check(child):
            found.append((child, inside))
        found += _checks(child, inside)
    return found


def loop_only_tests(source: str) -> list[str]:
    """The test functions of a module that check something, but only where an empty loop skips every check."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            checks = _checks(node)
            if checks and all(looped for _, looped in checks):
                found.append(f"{node.lineno}: {node.name}")
    return found


def test_no_test_checks_only_inside_a_loop() -> None:
    modules = sorted(TESTS.rglob("*.py"))
    assert len(modules) > 100, modules
    breaches = {str(p.relative_to(ROOT)): tests for p in modules if (tests := loop_only_tests(p.read_text()))}
    assert breaches == {}, f"assert the loop ran (its iterable non-empty, or its count) before or after it: {breaches}"


@pytest.mark.parametrize(("source", "flagged"), [
    ("def test_a(xs):\n    for x in xs:\n        assert x\n", True),
    ("def test_a(xs):\n    while xs:\n        assert xs.pop()\n", True),
    ("async def test_a(xs):\n    async for x in xs:\n        assert x\n", True),
    ("def test_a(xs):\n    for x in xs:\n        with pytest.raises(ValueError):\n            f(x)\n", True),
    ("def test_a(xs):\n    for x in xs:\n        if not x:\n            pytest.fail(x)\n", True),
    ("def test_a(xs):\n    assert all(x > 0 for x in xs)\n", True),
    ("def test_a(a, b):\n    assert all(x > 0 for x in (a, b))\n", False),  # written out: two values checked
    ("def test_a(a, b):\n    assert all([x > 0 for x in [*a]])\n", True),
    ("def test_a(xs):\n    for x in xs:\n        for y in x:\n            assert y\n", True),
    ("class TestA:\n    def test_a(self, xs):\n        for x in xs:\n            assert x\n", True),
    ("def test_a(xs):\n    assert xs\n    for x in xs:\n        assert x\n", False),
    ("def test_a():\n    for x in (1, 2):\n        assert x\n", False),  # written out: it runs
    ("def test_a(xs):\n    for x in [*xs, 1]:\n        assert x\n", False),
    ("def test_a(xs):\n    for x in [*xs]:\n        assert x\n", True),
    ("def test_a(xs):\n    for x in ():\n        assert x\n", True),
    ("def test_a():\n    for az in 'abc':\n        assert az\n", False),
    ("def test_a():\n    for az in '':\n        assert az\n", True),
    ("def test_a(xs):\n    for k in {**xs}:\n        assert k\n", True),
    ("def test_a(xs):\n    for x in xs:\n        assert x\n    assert len(xs) == 3\n", False),
    ("def test_a(xs):\n    for x in xs:\n        assert x\n    else:\n        assert xs\n", False),
    ("def test_a(xs):\n    assert xs and all(x > 0 for x in xs)\n", False),
    ("def test_a(xs):\n    with pytest.raises(ValueError):\n        f(xs)\n", False),
    ("def test_a(xs):\n    f(xs)\n", False),  # no check at all: not this guard's business
    ("def helper(xs):\n    for x in xs:\n        assert x\n", False),  # not a test
])
def test_the_loop_guard_flags_a_test_an_empty_loop_passes(source: str, flagged: bool) -> None:
    assert [found.split(": ")[1] for found in loop_only_tests(source)] == (["test_a"] if flagged else [])
