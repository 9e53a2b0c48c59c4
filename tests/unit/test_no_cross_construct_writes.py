"""No construct writes another object's attribute after that object is built (issue 38, part 5): a construct's
attributes are set once, by the construct itself, in its constructor or its own methods. An assignment such as
``cluster.drain_name = name`` (CapacityLifecycle did this to TrainiumCluster) is refused; what one construct needs to
tell another is a constructor argument of the other (``TrainiumCluster(drain_name=...)``) or the other's own method
(``CurAnalytics.attach_export``)."""

from __future__ import annotations

import ast

import pytest

from tests.unit.test_contract import LIBRARY

NOT_CONSTRUCTS = ("cli/", "preflight/", "verify/", "node/", "offline/")
"""The command line, the account checks, the instance scripts and the moto kit build no construct."""
ALLOWED = {("core/rules.py", "rule.__name__"): "names a plain rule function, not a construct"}


def foreign_writes(text: str) -> list[str]:
    """Each assignment target ``<x>.<attr>`` whose root is not ``self``/``cls`` (``self.a.b = `` sets one's own
    child's property, as CDK's L1 classes are meant to be used)."""
    found = []
    for node in ast.walk(ast.parse(text)):
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        for target in targets:
            for t in target.elts if isinstance(target, ast.Tuple | ast.List) else [target]:
                if not isinstance(t, ast.Attribute):
                    continue
                root = t.value
                while isinstance(root, ast.Attribute | ast.Subscript | ast.Call):
                    root = root.func if isinstance(root, ast.Call) else root.value
                if not (isinstance(root, ast.Name) and root.id in {"self", "cls"}):
                    found.append(ast.unparse(t))
    return found


def test_no_construct_module_writes_another_objects_attribute() -> None:
    modules = [p for p in sorted(LIBRARY.rglob("*.py")) if "__pycache__" not in p.parts
               and not p.relative_to(LIBRARY).as_posix().startswith(NOT_CONSTRUCTS)]
    assert len(modules) > 50
    found = {(p.relative_to(LIBRARY).as_posix(), w) for p in modules for w in foreign_writes(p.read_text())}
    assert found - ALLOWED.keys() == set(), "set it through a constructor argument or the owner's own method"
    assert ALLOWED.keys() <= found, "an allowed write is gone: drop it from ALLOWED"


@pytest.mark.parametrize(("source", "found"), [
    ("for name, cluster in named.items():\n    cluster.drain_name = name\n", ["cluster.drain_name"]),
    ("analytics.export = self\n", ["analytics.export"]),
    ("a.b.c += 1\n", ["a.b.c"]),
    ("x.y, self.z = 1, 2\n", ["x.y"]),
    ("self.endpoint.deployment_config = None\nself.export: int = 1\nvalue = other.attribute\n", []),
])
def test_the_check_finds_a_write_to_another_object(source: str, found: list[str]) -> None:
    assert foreign_writes(source) == found
