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
