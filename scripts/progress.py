"""Run a command so that a person sees it move: its own output line by line, and a ticker line whenever it has
been silent for 8 s (pip unpacking and byte-compiling, `npm ci`, `cdk synth` print nothing for minutes), so that
with the time a ticker line takes to count a folder, a line comes at least every 10 s.

    python scripts/progress.py LABEL [--watch DIR] -- COMMAND [ARG ...]

prints each line of COMMAND's output (stdout and stderr, merged) as it comes, and after each 8 s of silence
`    ... LABEL: 40 s, still running` (with `--watch DIR`: `, DIR now 612 MB`, the folder being filled). Exits with
COMMAND's exit code. Standard library only: the Makefile runs it with the machine's Python before the venv exists.
scripts/demo.py runs the CDK CLI through `run` with a filter on its lines.
"""

from __future__ import annotations

import argparse
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

EVERY = 8.0
"""Seconds of silence before a ticker line (issue 42: progress at least every 10 s during setup and synth; counting
a 1 GB virtualenv for the line takes up to a second or two on a loaded machine)."""


def _bytes(path: str) -> int:
    try:
        return os.lstat(path).st_blocks * 512
    except OSError:  # removed meanwhile by pip or npm
        return 0


def tree_mb(path: Path) -> int:
    """Disk use of a folder in MB, as `du -sm` counts it (allocated blocks of its files and folders; links not
    followed)."""
    total = 0
    for folder, _, files in os.walk(path):
        total += _bytes(folder) + sum(_bytes(os.path.join(folder, name)) for name in files)
    return -(-total // (1024 * 1024))


def ticker_line(label: str, elapsed: float, watch: Path | None = None) -> str:
    text = f"    ... {label}: {elapsed:.0f} s, still running"
    if watch is not None and watch.exists():
        text += f", {watch} now {tree_mb(watch)} MB"
    return text


def run(cmd: Sequence[str], label: str, *, on_line: Callable[[str], bool | None] | None = None,
        watch: Path | None = None, every: float = EVERY, env: dict[str, str] | None = None, cwd: Path | None = None,
        say: Callable[[str], None] | None = None) -> int:
    """Run ``cmd`` with its stdout and stderr merged; hand each line (without its newline) to ``on_line`` (default:
    print it) and ``say`` a ticker line after each ``every`` seconds in which nothing was shown: ``on_line`` returns
    False for a line it did not show (a filter), which then does not count. Returns the exit code."""
    show = say or (lambda text: print(text, flush=True))
    handle = on_line or show
    child_env = {**(env if env is not None else os.environ), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=child_env, cwd=cwd, text=True, errors="replace", bufsize=1)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\r\n"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    started = last = time.monotonic()
    while True:
        try:
            line = lines.get(timeout=max(0.0, last + every - time.monotonic()))
        except queue.Empty:
            last = time.monotonic()
            show(ticker_line(label, last - started, watch))
            continue
        if line is None:
            break
        if handle(line) is not False:
            last = time.monotonic()
    return proc.wait()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--" not in args:
        print("usage: progress.py LABEL [--watch DIR] -- COMMAND [ARG ...]", file=sys.stderr)
        return 2
    split = args.index("--")
    parser = argparse.ArgumentParser(prog="progress.py")
    parser.add_argument("label")
    parser.add_argument("--watch", type=Path, help="a folder whose size each ticker line reports")
    opts = parser.parse_args(args[:split])
    command = args[split + 1:]
    if not command:
        print("progress.py: no command after --", file=sys.stderr)
        return 2
    started = time.monotonic()
    code = run(command, opts.label, watch=opts.watch)
    print(f"    ... {opts.label}: done in {time.monotonic() - started:.0f} s"
          + (f" ({opts.watch} {tree_mb(opts.watch)} MB)" if opts.watch and opts.watch.exists() else "")
          + ("" if code == 0 else f", exit code {code}"), flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
