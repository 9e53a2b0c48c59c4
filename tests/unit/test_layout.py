"""Guards for the layout traps of DESIGN.md."""

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
    library = [p for p in ROOT.glob("constructs/neuronfleet/**/*.py") if not {"offline", "node"} & set(p.parts)]
    for path in [*library, *ROOT.glob("stacks/**/*.py")]:
        text = path.read_text()
        if "try_get_context" in text or "os.environ" in text or "os.getenv" in text:
            readers.append(path.relative_to(ROOT))
    assert readers == []
