"""Guards for the layout traps of docs/DESIGN.md."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import constructs

from tests.conftest import ROOT


def test_constructs_is_the_installed_package_not_the_source_folder() -> None:
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    assert Path(constructs.__file__).resolve().is_relative_to(site), constructs.__file__
    assert hasattr(constructs, "Construct")


def test_source_root_is_not_a_package() -> None:
    assert (ROOT / "constructs" / "neuronfleet" / "__init__.py").is_file()
    assert not (ROOT / "constructs" / "__init__.py").exists(), "constructs/ would shadow the PyPI constructs"


def test_only_app_reads_context_or_environment() -> None:
    readers = []
    # neuronfleet.offline is the test kit: it sets up moto's environment (MOTO_ACCOUNT_ID, fake credentials)
    # neuronfleet.node holds the scripts that run on a training node (their configuration is the job's environment)
    # neuronfleet.cli and neuronfleet.preflight are the user's command line, not synth: NEURONFLEET_DEBUG, the CDK
    # CLI's environment and PATH (the venv's Node.js) are theirs to read
    # settings/_base.py reads one variable, NEURONFLEET_SCHEMA_DOCS (scripts/fleet_schema.py's switch for the fleet
    # file's JSON schema descriptions: pydantic reads attribute docstrings only then, issue 42); no template depends on it
    library = [p for p in ROOT.glob("constructs/neuronfleet/**/*.py")
               if not {"offline", "node", "cli", "preflight"} & set(p.parts)]
    for path in [*library, *ROOT.glob("stacks/**/*.py")]:
        text = path.read_text()
        if path == ROOT / "constructs/neuronfleet/settings/_base.py":
            text = text.replace("os.environ.get(SCHEMA_DOCS)", "")
        if "try_get_context" in text or "os.environ" in text or "os.getenv" in text:
            readers.append(path.relative_to(ROOT))
    assert readers == []


def test_the_design_notes_the_code_cites_are_in_the_repository() -> None:
    """Code and tests cite docs/DESIGN.md; the file is there, and nothing cites a DESIGN.md elsewhere."""
    assert (ROOT / "docs" / "DESIGN.md").is_file()
    sources = [p for folder in ("constructs", "lambdas", "shared", "stacks", "tests", "scripts")
               for p in (ROOT / folder).rglob("*.py") if p != Path(__file__)]
    cited = [p for p in sources if "DESIGN.md" in p.read_text()]
    assert cited, "the citations this test guards are gone: drop the test or the file"
    stray = [str(p.relative_to(ROOT)) for p in cited
             if any("DESIGN.md" in line and "docs/DESIGN.md" not in line for line in p.read_text().splitlines())]
    assert stray == [], stray


def test_the_wheel_lists_every_package_of_the_tree() -> None:
    """pyproject.toml names its packages one by one (the library and the Lambda sources live in two folders): a
    folder with an __init__.py that the list misses would be left out of the wheel, and its imports fail there."""
    import tomllib

    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = {name: ROOT / folder for name, folder in setup["package-dir"].items()}
    mapped = {folder.resolve() for folder in roots.values()}
    found = set()
    for name, folder in roots.items():
        for init in folder.rglob("__init__.py"):
            inside = init.parent.resolve()
            owner = [m for m in mapped if inside.is_relative_to(m)]
            if "__pycache__" in init.parts or max(owner, key=lambda m: len(m.parts)) != folder.resolve():
                continue  # a folder another mapping names (shared/neuronfleet_contract) counts under that name
            found.add(".".join([name, *init.parent.relative_to(folder).parts]))
    assert sorted(found - set(setup["packages"])) == [], "add these to [tool.setuptools] packages"
    assert sorted(set(setup["packages"]) - found) == [], "these listed packages have no folder"
