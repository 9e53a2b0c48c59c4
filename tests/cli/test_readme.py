"""The README's snippets run as pasted: the construct examples, in order, as one program."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def readme_program(*, sections: tuple[str, str] = ("## Constructs", "## Layout"), offline: bool = True) -> str:
    """The README's ```python blocks between two headings, joined into one program.

    ``offline=False`` leaves out the offline test kit's snippet (it needs the ``test`` extra, moto)."""
    text = (ROOT / "README.md").read_text()
    start, end = text.index(sections[0]), text.index(sections[1])
    blocks = re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)
    if not offline:
        blocks = [b for b in blocks if "neuronfleet.offline" not in b]
    return "\n".join(blocks)


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
