"""The launcher's drain relay (constructs/neuronfleet/node/launch.py), run as the job runs it: ``python3
launch.py -- train.py`` from a copy of the host's /opt/neuronfleet, over a ``torchrun`` stand-in that starts its
workers as torchrun does (each in a session of its own, SIGTERM/SIGINT/SIGHUP/SIGQUIT passed on to them, any other
signal's default action ends it), and workers that record every signal they get and the notice they read then."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from neuronfleet.lambdas.capacity_lifecycle.adapters import Flag
from neuronfleet.node import SCRIPTS, launch, script_text
from neuronfleet_contract.capacity_lifecycle import ClusterRef, drain_key

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="the relay reads Linux's /proc")

TORCHRUN = '''#!{python}
"""torchrun's process shape: --nproc-per-node workers, each in its own session (SubprocessHandler's
start_new_session=True); its four handled signals close the workers with that signal (os.killpg); SIGUSR1 is left at
its default, as torchrun leaves it, so a relay that signalled torchrun would end it."""
import os, signal, subprocess, sys
args = sys.argv[1:]
nproc = int(next(a.split("=", 1)[1] for a in args if a.startswith("--nproc-per-node=")))
program = [a for a in args if not a.startswith("--")]
workers = [subprocess.Popen([sys.executable, *program, str(rank)], start_new_session=True) for rank in range(nproc)]
def close(signum, frame):
    for w in workers:
        try:
            os.killpg(w.pid, signum)
        except ProcessLookupError:
            pass
for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"):
    signal.signal(getattr(signal, name), close)
codes = [w.wait() for w in workers]
bad = [c for c in codes if c]
sys.exit((128 - bad[0] if bad[0] < 0 else bad[0]) if bad else 0)
'''

WORKER = '''import json, os, signal, sys, time
record, stop, delay, rank = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
def log(line):
    with open(record, "a") as f:
        f.write(json.dumps([rank, *line]) + "\\n")
def on_signal(signum, frame):
    notice = os.environ.get("NEURONFLEET_DRAIN_NOTICE", "")
    try:
        body = json.loads(open(notice).read())
    except OSError:
        body = None
    log([signal.Signals(signum).name, body])
time.sleep(delay)  # a worker still importing: no handler yet
signal.signal(signal.SIGUSR1, on_signal)
log(["ready", os.getpid()])
while not os.path.exists(stop):
    time.sleep(0.02)
sys.exit(int(open(stop).read() or 0))
'''


class Job:
    """A launcher run on a tmp host: the scripts as installed, a flag folder as FSx shows it."""

    def __init__(self, tmp: Path, *, nproc: int = 2, poll_s: str = "0.05", delay: float = 0.0,
                 args: tuple[str, ...] = (), env: dict[str, str] | None = None) -> None:
        opt = tmp / "opt"
        opt.mkdir()
        for name in SCRIPTS:
            (opt / name).write_text(script_text(name))
        bindir = tmp / "bin"
        bindir.mkdir()
        torchrun = bindir / "torchrun"
        torchrun.write_text(TORCHRUN.format(python=sys.executable))
        torchrun.chmod(0o755)
        (tmp / "train.py").write_text(WORKER)
        self.flag = tmp / "fsx" / "data" / drain_key("pretrain")
        self.flag.parent.mkdir(parents=True)
        self.notice = tmp / "notice" / "drain.json"
        self.record, self.stop = tmp / "record.jsonl", tmp / "stop"
        self.nproc = nproc
        full_env = {"PATH": f"{bindir}:{os.environ['PATH']}", "NEURONFLEET_NPROC_PER_NODE": str(nproc),
                    "NEURONFLEET_NODE_ADDRESS": "127.0.0.1", "NEURONFLEET_DRAIN_FLAG": str(self.flag),
                    "NEURONFLEET_DRAIN_POLL_S": poll_s, "NEURONFLEET_DRAIN_NOTICE": str(self.notice),
                    **(env or {})}
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, str(opt / "launch.py"), "--skip-health-gate", *args, "--", str(tmp / "train.py"),
             str(self.record), str(self.stop), str(delay)],
            env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def lines(self) -> list[list[Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def signals(self, name: str = "SIGUSR1") -> list[list[Any]]:
        return [line for line in self.lines() if line[1] == name]

    def wait_for(self, what: Callable[[], bool], timeout: float = 20.0) -> None:
        end = time.monotonic() + timeout
        while not what():
            assert self.proc.poll() is None, ("launcher ended", self.proc.returncode, self.proc.communicate())
            assert time.monotonic() < end, ("timed out", self.lines())
            time.sleep(0.02)

    def ready(self) -> None:
        self.wait_for(lambda: len([x for x in self.lines() if x[1] == "ready"]) == self.nproc)

    def settle(self, polls: int = 10) -> None:
        """Long enough for the launcher to have polled the flag several times."""
        time.sleep(polls * 0.05)

    def end(self, code: int = 0, timeout: float = 20.0) -> tuple[int, str, str]:
        self.stop.write_text(str(code))
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def write(self, text: str | bytes) -> None:
        """As FSx shows a changed object: the file replaced."""
        tmp = self.flag.with_suffix(".tmp")
        tmp.write_bytes(text if isinstance(text, bytes) else text.encode())
        tmp.replace(self.flag)


class _S3:
    """Captures the lifecycle function's PutObject: the flag exactly as the publisher writes it."""

    def __init__(self) -> None:
        self.body = b""

    def put_object(self, **kwargs: Any) -> None:
        self.body = kwargs["Body"]


def published(deadline: datetime, reason: str = "Capacity Block cr-0123 ends", blocks: tuple[str, ...] = (
        "cr-0123456789abcdef0",)) -> bytes:
    """The flag's bytes from the lifecycle function's own writer (lambdas/capacity_lifecycle/adapters.py Flag)."""
    s3 = _S3()
    ref = ClusterRef(name="pretrain", queue_arn="arn:aws:batch:us-east-2:111111111111:job-queue/q",
                     instance_type="trn2.48xlarge", drain_bucket="data-bucket")
    Flag(s3).raise_(ref, deadline=deadline, reason=reason, blocks=blocks)
    return s3.body


D1 = datetime(2026, 11, 30, 11, 20, tzinfo=UTC)
D2 = datetime(2026, 11, 30, 10, 50, tzinfo=UTC)


def test_one_signal_per_flag_to_every_worker_none_for_a_corrupt_one_again_after_remove_and_recreate(tmp_path) -> None:
    job = Job(tmp_path)
    job.ready()
    workers = sorted(x[2] for x in job.lines() if x[1] == "ready")
    job.write(published(D1))
    job.wait_for(lambda: len(job.signals()) == 2)
    # each worker got it once, with the flag's content already in the notice the variable names
    assert sorted(x[0] for x in job.signals()) == ["0", "1"]
    assert all(x[2] == json.loads(published(D1)) for x in job.signals())
    # rewritten (the lifecycle's next pass) with the same deadline and a new reason: the notice follows, no signal
    job.write(published(D1, reason="still ending"))
    job.wait_for(lambda: json.loads(job.notice.read_text())["reason"] == "still ending")
    job.settle()
    assert len(job.signals()) == 2
    # a new deadline is a new flag
    job.write(published(D2))
    job.wait_for(lambda: len(job.signals()) == 4)
    assert [x[2]["deadline"] for x in job.signals()[2:]] == [D2.isoformat()] * 2
    # corrupt (a half-imported file): logged, ignored, the notice kept
    job.write(published(D1)[:20])
    job.settle()
    assert len(job.signals()) == 4 and json.loads(job.notice.read_text())["deadline"] == D2.isoformat()
    # removed (the block was extended): the notice goes; the same flag again is signalled again
    job.flag.unlink()
    job.wait_for(lambda: not job.notice.exists())
    job.settle()
    job.write(published(D2))
    job.wait_for(lambda: len(job.signals()) == 6)
    job.settle()
    code, out, err = job.end(3)
    assert code == 3  # the worker's exit code, through torchrun, passed through
    assert len(job.signals()) == 6 and not job.signals("SIGTERM")
    relayed = [line for line in err.splitlines() if "SIGUSR1 sent" in line]
    assert len(relayed) <= 6 and all(str(w) in "".join(relayed) for w in workers), err
    assert err.count("ignored: not JSON") == 1, err
    assert "removed: the drain is off" in err and "torchrun exited 3" in err
    assert "drain relay: watching" in out


def test_a_flag_there_at_start_waits_for_the_workers_handler_and_a_corrupt_first_flag_never_signals(tmp_path):
    job = Job(tmp_path, nproc=1, delay=1.0)
    job.write(b'{"deadline": "tomorrow", "reason": "x", "blocks": []}')
    job.settle()
    job.write(published(D1))  # there before the worker catches SIGUSR1: its default action would end the worker
    job.ready()
    job.wait_for(lambda: len(job.signals()) == 1)
    job.settle()
    code, _, err = job.end(0)
    assert code == 0 and len(job.signals()) == 1
    assert "do not handle SIGUSR1 (yet): not signalled" in err, err
    assert "ignored: \"deadline\" is 'tomorrow'" in err, err


def test_an_unreadable_flag_or_a_huge_one_is_logged_once_and_never_signals(tmp_path) -> None:
    job = Job(tmp_path, nproc=1)
    job.ready()
    job.flag.mkdir()  # not a file: an OSError at every poll, logged once
    job.settle()
    job.flag.rmdir()
    job.write(b'{"deadline": "2026-11-30T11:20:00+00:00", "reason": "' + b"x" * 70000 + b'"}')
    job.settle()
    assert not job.signals()
    job.write(published(D1))
    job.wait_for(lambda: len(job.signals()) == 1)
    code, _, err = job.end(0)
    assert code == 0 and len(job.signals()) == 1
    assert err.count("error, ignored") == 1 and "IsADirectoryError" in err, err
    assert err.count("ignored: larger than 65536 bytes") == 1, err


def test_a_notice_that_cannot_be_written_does_not_hold_the_signal_back(tmp_path) -> None:
    (tmp_path / "blocked").write_text("a file where the notice's folder should be")
    job = Job(tmp_path, nproc=1, env={"NEURONFLEET_DRAIN_NOTICE": str(tmp_path / "blocked" / "drain.json")})
    job.ready()
    job.write(published(D1))
    job.wait_for(lambda: len(job.signals()) == 1)
    code, _, err = job.end(0)
    assert code == 0 and job.signals()[0][2] is None  # signalled; the worker found no notice
    assert f"cannot write {tmp_path / 'blocked' / 'drain.json'}" in err and f"the flag is at {job.flag}" in err


def test_the_configured_signal_is_the_one_sent(tmp_path) -> None:
    job = Job(tmp_path, nproc=1, env={"NEURONFLEET_DRAIN_SIGNAL": "usr2"})
    job.ready()
    job.write(published(D1))
    job.settle(20)
    code, _, err = job.end(0)
    # the worker catches SIGUSR1 only: SIGUSR2 would end it, so the relay holds it back
    assert code == 0 and job.lines() and not job.signals() and "do not handle SIGUSR2" in err


@pytest.mark.parametrize("off", [("--no-drain-relay",), ()])
def test_off_the_launcher_replaces_itself_with_torchrun_and_relays_nothing(tmp_path, off) -> None:
    job = Job(tmp_path, nproc=1, args=off, env={} if off else {"NEURONFLEET_DRAIN_RELAY": "off"})
    job.ready()
    # exec: the launcher's process is torchrun now (the worker's parent)
    assert Path(f"/proc/{job.proc.pid}/cmdline").read_bytes().split(b"\0")[1].endswith(b"torchrun")
    job.write(published(D1))
    job.settle()
    code, out, _ = job.end(4)
    assert code == 4 and not job.signals() and not job.notice.exists()
    assert "drain relay: off" in out


def test_sigterm_from_terminate_job_reaches_the_workers_through_torchrun(tmp_path) -> None:
    job = Job(tmp_path, nproc=2)
    job.ready()
    job.proc.send_signal(signal.SIGTERM)
    _, err = job.proc.communicate(timeout=20)
    # each worker ended by SIGTERM (its default action), torchrun reports it, the launcher passes it on
    assert job.proc.returncode == 128 + signal.SIGTERM, err
    assert "torchrun exited 143" in err


def test_the_launcher_ends_with_torchrun_not_at_its_next_poll_and_costs_little_cpu(tmp_path) -> None:
    # the default 30 s poll: the launcher must still end as soon as torchrun does
    job = Job(tmp_path, nproc=1, poll_s="30")
    job.ready()
    time.sleep(1.0)
    ticks = os.sysconf("SC_CLK_TCK")
    fields = Path(f"/proc/{job.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu_s = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime: the launcher alone, start-up included
    t0 = time.monotonic()
    code, _, _ = job.end(0)
    after_stop = time.monotonic() - t0
    assert code == 0
    assert after_stop < 2.0, after_stop  # the worker sees the stop file within 20 ms
    assert cpu_s < 1.0, cpu_s


def test_a_busy_poll_still_costs_little_cpu(tmp_path) -> None:
    job = Job(tmp_path, nproc=2, poll_s="0.01")
    job.ready()
    job.write(published(D1))
    job.wait_for(lambda: len(job.signals()) == 2)
    time.sleep(2.0)
    ticks = os.sysconf("SC_CLK_TCK")
    fields = Path(f"/proc/{job.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu_s = (int(fields[11]) + int(fields[12])) / ticks
    wall = time.monotonic() - job.started
    code, _, _ = job.end(0)
    assert code == 0 and len(job.signals()) == 2
    assert cpu_s < 0.5 * wall, (cpu_s, wall)


# ------------------------------------------------------------------------------------------------ in process


def test_dry_run_prints_what_it_would_watch(capsys) -> None:
    env = {"NEURONFLEET_NPROC_PER_NODE": "64", "NEURONFLEET_NODE_ADDRESS": "10.0.0.1",
           "NEURONFLEET_DRAIN_FLAG": "/fsx/data/neuronfleet/drain/pretrain.json"}
    assert launch.main(["--skip-health-gate", "--dry-run", "--", "train.py"], env=env) == 0
    out = capsys.readouterr().out
    assert ("drain relay: watching /fsx/data/neuronfleet/drain/pretrain.json every 30 s; on a flag, its content to "
            "/tmp/neuronfleet/drain.json (NEURONFLEET_DRAIN_NOTICE) and SIGUSR1 once to each torchrun worker") in out
    assert launch.main(["--skip-health-gate", "--dry-run", "--no-drain-relay", "--", "train.py"], env=env) == 0
    assert "drain relay: off (--no-drain-relay)" in capsys.readouterr().out
    env.pop("NEURONFLEET_DRAIN_FLAG")
    assert launch.main(["--skip-health-gate", "--dry-run", "--", "train.py"], env=env) == 0
    assert "drain relay: off (NEURONFLEET_DRAIN_FLAG not set)" in capsys.readouterr().out


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("NEURONFLEET_DRAIN_SIGNAL", "SIGWHAT", "NEURONFLEET_DRAIN_SIGNAL='SIGWHAT' is not a signal; allowed: a name"),
    ("NEURONFLEET_DRAIN_SIGNAL", "KILL", "NEURONFLEET_DRAIN_SIGNAL='KILL' cannot be caught"),
    ("NEURONFLEET_DRAIN_POLL_S", "0", "NEURONFLEET_DRAIN_POLL_S='0' is not valid; allowed: seconds"),
    ("NEURONFLEET_DRAIN_POLL_S", "soon", "NEURONFLEET_DRAIN_POLL_S='soon' is not valid"),
    ("NEURONFLEET_DRAIN_RELAY", "maybe", "NEURONFLEET_DRAIN_RELAY='maybe' is not valid; allowed: on, off"),
])
def test_a_bad_drain_setting_is_a_configuration_error_naming_it(capsys, variable, value, message) -> None:
    env = {"NEURONFLEET_NPROC_PER_NODE": "64", "NEURONFLEET_NODE_ADDRESS": "10.0.0.1",
           "NEURONFLEET_DRAIN_FLAG": "/fsx/data/neuronfleet/drain/pretrain.json", variable: value}
    assert launch.main(["--skip-health-gate", "--dry-run", "--", "train.py"], env=env) == launch.health_gate.EXIT_CONFIG
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("text", "why"), [
    (b"", "not JSON"),
    (b"[1, 2]", "not a JSON object (a list)"),
    (b'{"reason": "x"}', '"deadline" is None'),
    (b'{"deadline": 1764501600}', '"deadline" is 1764501600'),
    (b'{"deadline": "2026-11-30T11:20:00"}', "no UTC offset"),
])
def test_malformed_flags_say_what_is_wrong(text, why) -> None:
    with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(")", r"\)")):
        launch.parse_flag(text.decode())


def test_the_publishers_flag_and_the_documented_example_parse() -> None:
    body, deadline = launch.parse_flag(published(D1).decode())
    assert deadline == D1 and body["blocks"] == ["cr-0123456789abcdef0"]
    # docs/capacity-blocks.md, "How jobs are told to checkpoint"
    _, deadline = launch.parse_flag('{"deadline": "2026-11-30T11:20:00+00:00", "reason": "...", "blocks": ["cr-..."]}')
    assert deadline == D1
    assert launch.parse_flag('{"deadline": "2026-11-30T11:20:00Z"}')[1] == D1
