"""The README and its docs/ pages: the construct snippets run as pasted, in order, as one program; every relative link
lands on a file and heading that exist; the first screen gets a newcomer to `make demo` and to a real deploy."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PROGRAM_PAGES = ("docs/constructs.md", "docs/catalog.md", "docs/network.md", "docs/training.md", "docs/inference.md",
                 "docs/fallback.md", "docs/cost.md", "docs/offline.md")
"""The pages whose ```python blocks make one program, in this order (each page says it continues the previous)."""


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def readme_program(*, offline: bool = True) -> str:
    """The construct pages' ```python blocks, in order, joined into one program.

    ``offline=False`` leaves out the offline test kit's snippet (it needs the ``test`` extra, moto)."""
    blocks = [b for page in PROGRAM_PAGES for b in python_blocks((ROOT / page).read_text())]
    if not offline:
        blocks = [b for b in blocks if "neuronfleet.offline" not in b]
    return "\n".join(blocks)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_no_python_snippet_is_left_out_of_the_program() -> None:
    """A ```python block on a page outside the program would never run: it is either in a program page or marked
    ```py (not run, with the reason beside it)."""
    outside = {p.relative_to(ROOT).as_posix(): len(python_blocks(p.read_text())) for p in pages()
               if p.relative_to(ROOT).as_posix() not in PROGRAM_PAGES}
    assert not {k: n for k, n in outside.items() if n}, outside


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower-case, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def headings(text: str) -> set[str]:
    out, fence = set(), False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and (m := re.match(r"#+ (.*)", line)):
            out.add(anchor(m.group(1)))
    return out


def test_every_relative_link_lands_on_a_file_and_heading_that_exist() -> None:
    broken = []
    for page in pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, fragment = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.name}: {target} (no file)")
            elif fragment and dest.suffix == ".md" and fragment not in headings(dest.read_text()):
                broken.append(f"{page.name}: {target} (no heading)")
    assert not broken, broken


def test_the_first_screen_names_the_two_commands_and_leads_to_a_real_deploy() -> None:
    text = (ROOT / "README.md").read_text()
    first_screen = "\n".join(text.splitlines()[:40])
    assert "make demo" in first_screen and "make test" in first_screen
    sections = [m.group(1) for m in re.finditer(r"^## (.*)$", text, flags=re.M)]
    assert "Two commands" in sections[:2] and "Deploy for real" in sections[:3], sections
    deploy = text.split("## Deploy for real", 1)[1]
    for prerequisite in ("Quotas", "Cost Explorer enabled", "Cost allocation tags activated",
                         "E-mail subscriptions confirmed", "docs/checks.md"):
        assert prerequisite in deploy, prerequisite
    assert len(text.splitlines()) < 200  # a README a newcomer finishes; reference lives in docs/


@pytest.mark.slow
def test_readme_snippets_run_as_pasted(tmp_path: Path) -> None:
    program = readme_program()
    assert program.count("\n") > 40 and "app.synth()" in program and "offline_aws" in program
    (tmp_path / "readme_app.py").write_text(program)
    env = {**os.environ, "CDK_OUTDIR": str(tmp_path / "cdk.out")}
    run = subprocess.run([sys.executable, "readme_app.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    # the settings example prints the construct API's message
    assert "training cluster: count: got 6; allowed: a multiple of 4" in run.stdout
    # the offline kit deployed the stack into the account and region it was synthesised for
    assert "('MyTeam', '111111111111', 'us-east-2', 'CREATE_COMPLETE')" in run.stdout
    assert (tmp_path / "cdk.out" / "MyTeam.template.json").is_file()
