#!/usr/bin/env python3
"""neuronfleet job launcher (Python standard library only): health gate, rank order, then torchrun.

    python3 /opt/neuronfleet/launch.py [--skip-health-gate] [--dry-run] [--no-drain-relay] -- train.py [ARGS...]

1. Runs the health gate (health_gate.py); a failing gate ends the launch with its exit code.
2. Orders the nodes. On UltraServer types (NEURONFLEET_ULTRASERVER_SIZE=4, trn2u.48xlarge) every node reads its
   UltraServer identity from the Neuron driver's sysfs (/sys/class/neuron_device/server_id_4, node_id_4,
   ultraserver_mode) and publishes it on the shared file system; once all AWS_BATCH_JOB_NUM_NODES nodes have,
   every node sorts them the same way (UltraServer, then node within it), checks that they form whole
   UltraServers and takes its rank from its place. Other types keep AWS Batch's node index.
3. Sets the runtime variables Neuron documents for UltraServers (NEURON_GLOBAL_TOPOID,
   NEURON_GLOBAL_TOPOID0_HOST, NEURON_RT_ULTRASERVER_MODE, NEURON_RT_ULTRASERVER_SERVER_ID,
   NEURON_RT_ULTRASERVER_NODE_ID) and replaces itself with
   ``torchrun --nnodes N --nproc-per-node P --node-rank R --master-addr A --master-port 29500 train.py ...``
   where P is the node's logical NeuronCores (NEURONFLEET_NPROC_PER_NODE).

4. With a drain flag to watch (NEURONFLEET_DRAIN_FLAG, set by TrainiumCluster's job definition: the cluster's
   Capacity Block checkpoint flag as FSx for Lustre imports it, /fsx/data/neuronfleet/drain/<cluster>.json), it does
   not replace itself: it starts torchrun in its own session, forwards the signals torchrun handles (SIGTERM from
   TerminateJob/docker stop, SIGINT, SIGHUP, SIGQUIT) and relays the flag while torchrun runs (see "Drain relay").
   It ends with torchrun's exit code (128+N when a signal N ended it). --no-drain-relay, or
   NEURONFLEET_DRAIN_RELAY=off, keeps the plain exec.

Drain relay. Every NEURONFLEET_DRAIN_POLL_S seconds (default 30) the launcher reads the flag. A flag that appears,
or whose deadline changes, is (1) written, as read, to the notice file NEURONFLEET_DRAIN_NOTICE (default
/tmp/neuronfleet/drain.json; the variable is in the training processes' environment from their start, and the file
exists only while a drain is on), then (2) signalled once, with NEURONFLEET_DRAIN_SIGNAL (default SIGUSR1), to each
training process: torchrun's children, its workers. Not to torchrun itself: torchrun handles only SIGTERM, SIGINT,
SIGHUP and SIGQUIT (recent releases take another list, --signals-to-handle) and answers each by stopping its workers
(that signal, then SIGKILL after 30 s): it forwards nothing that lets training go on, and any other signal's default
action ends torchrun. Nor to its process group: torchrun starts each worker in a session of its own
(SubprocessHandler, start_new_session=True), so the group does not hold them. A worker is
signalled only once it catches (or ignores) the signal (SigCgt/SigIgn in /proc/<pid>/status): the default action of
SIGUSR1 would end it, so a worker still importing, or a script that never handles the signal, is left alone (it can
read the notice file instead) and the relay never ends the job. Workers that start catching it later (a torchrun
restart, a slow start) are signalled at a later poll, once each per flag. A flag that is not a JSON object with an
ISO 8601 "deadline" (or is over 64 KiB, or cannot be read) is logged once and ignored (nothing written, nothing
signalled); a removed flag (the block was extended, or ended) removes the notice, and the next flag is signalled
again. A new reason or block list under the same deadline rewrites the notice without a signal.

Exit codes: those of the health gate; 76 when the nodes do not form whole UltraServers (or one is not in
UltraServer mode); 75 when the other nodes never published (a node that died: a host fault, retried); 78 for a
drain setting that is not valid (named with its value and what is allowed); otherwise torchrun's.

Sources (read 2026-11-22): Neuron's UltraServer init script and guide (aws-neuron-sdk
src/k8/k8s-ultraserver-init-script.sh, deploy/eks/ultraserver.rst: the sysfs files, the sort order, the 4-node
config's mode X4=1, the five variables); AWS Batch "Multi-node parallel jobs: environment variables"
(AWS_BATCH_JOB_NODE_INDEX, AWS_BATCH_JOB_NUM_NODES, AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS); Neuron's
torchrun guidance (--nproc_per_node=64 on trn2.48xlarge at LNC=2, 32 on trn1.32xlarge). Read 2026-11-26, torchrun's
signal handling in pytorch/pytorch: torch/distributed/elastic/multiprocessing/api.py at
0068f5a3a1cae3c3e6e1e71173dbb5d8262271b1 (PContext.start registers _terminate_process_handler, which raises
SignalException, for TORCHELASTIC_SIGNALS_TO_HANDLE, default "SIGTERM,SIGINT,SIGHUP,SIGQUIT"; close(death_sig)
sends it to the workers and SIGKILLs those alive after the timeout); torch/distributed/launcher/api.py at
0580428e8959a0088eba2086d00fa21b77fe3659 (launch_agent sets that variable from --signals-to-handle, default the
four; shutdown_timeout 30 s); elastic/multiprocessing/subprocess_handler/subprocess_handler.py at
0fe931b9c7565a064afe41e4c737e4a7f4a93b80 (each worker: Popen(..., start_new_session=True); close: os.killpg);
issue 154849 "Torchrun should handle SIGUSR1 and SIGUSR2" (it handles only those four) and pull request 160690.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

try:  # as the neuronfleet.node package (tests) or as a script in /opt/neuronfleet
    from . import health_gate
except ImportError:  # pragma: no cover - the script form
    import health_gate  # type: ignore[no-redef,import-not-found]

SYSFS_ULTRASERVER = "sys/class/neuron_device"
NO_SERVER = "0000000000000000"
MODES = {4: 1, 2: 3, 1: 4}
"""UltraServer node config -> the mode Neuron's init script passes (X4=1; 2-node X2V=3 or X2H=2; X1=4)."""
MASTER_PORT = 29500


class TopologyError(RuntimeError):
    """The job's nodes cannot be ordered into whole UltraServers."""


@dataclass(frozen=True)
class NodeRecord:
    index: int
    address: str
    server_id: str
    node_id: int
    modes: tuple[int, ...]


def read_identity(root: Path, size: int, index: int, address: str) -> NodeRecord:
    """This node's UltraServer identity from the Neuron driver's sysfs (missing files: not in an UltraServer)."""
    base = root / SYSFS_ULTRASERVER

    def read(name: str, default: str) -> str:
        try:
            return (base / name).read_text().strip() or default
        except OSError:
            return default

    node = read(f"node_id_{size}", "-1")
    modes = tuple(int(m) for m in read("ultraserver_mode", "").replace(",", " ").split() if m.isdigit())
    return NodeRecord(index=index, address=address, server_id=read(f"server_id_{size}", NO_SERVER),
                      node_id=int(node) if node.lstrip("-").isdigit() else -1, modes=modes)


def order(records: Sequence[NodeRecord], size: int) -> list[NodeRecord]:
    """The nodes in rank order (UltraServer, node id, address), checked to form whole UltraServers."""
    if size <= 1:
        return sorted(records, key=lambda r: r.index)
    if len(records) % size:
        raise TopologyError(f"{len(records)} nodes do not form whole UltraServers of {size}: submit the job with a "
                            f"multiple of {size} nodes")
    servers: dict[str, list[NodeRecord]] = {}
    for r in records:
        if r.server_id in ("", NO_SERVER):
            raise TopologyError(f"node {r.index} ({r.address}) reports no UltraServer ({SYSFS_ULTRASERVER}/"
                                f"server_id_{size} missing or zero): it is not a trn2u node in {size}-node mode")
        if MODES[size] not in r.modes:
            raise TopologyError(f"node {r.index} ({r.address}) does not support the {size}-node UltraServer mode "
                                f"(ultraserver_mode lists {list(r.modes) or 'nothing'})")
        servers.setdefault(r.server_id, []).append(r)
    for server, members in sorted(servers.items()):
        if len(members) != size:
            got = ", ".join(str(m.index) for m in sorted(members, key=lambda m: m.index))
            raise TopologyError(f"UltraServer {server}: this job has {len(members)} of its {size} nodes (job nodes "
                                f"{got}); a job must take whole UltraServers, its other nodes run another job or "
                                "are missing")
        if len({m.node_id for m in members}) != size:
            raise TopologyError(f"UltraServer {server}: node ids {sorted(m.node_id for m in members)} are not "
                                f"{size} distinct ids")
    return sorted(records, key=lambda r: (r.server_id, r.node_id, r.address))


def ultraserver_env(ordered: Sequence[NodeRecord], me: NodeRecord, size: int) -> dict[str, str]:
    """The variables Neuron's UltraServer init script sets for the runtime, for this node."""
    if size <= 1:
        return {}
    return {"NEURON_GLOBAL_TOPOID": str(ordered.index(me)), "NEURON_GLOBAL_TOPOID0_HOST": ordered[0].address,
            "NEURON_RT_ULTRASERVER_MODE": str(MODES[size]), "NEURON_RT_ULTRASERVER_SERVER_ID": me.server_id,
            "NEURON_RT_ULTRASERVER_NODE_ID": str(me.node_id)}


def publish_and_gather(folder: Path, me: NodeRecord, nodes: int, timeout_s: float, poll_s: float = 2.0) -> list[
        NodeRecord]:
    """Write this node's record to the shared folder and wait for all ``nodes`` records."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".node-{me.index}.tmp"
    tmp.write_text(json.dumps(asdict(me)))
    tmp.replace(folder / f"node-{me.index}.json")
    deadline = time.monotonic() + timeout_s
    while True:
        found = sorted(folder.glob("node-*.json"))
        if len(found) >= nodes:
            out = []
            for p in found:
                raw = json.loads(p.read_text())
                out.append(NodeRecord(**{**raw, "modes": tuple(raw["modes"])}))
            return out
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(found)} of {nodes} nodes published to {folder} within {timeout_s:.0f} s")
        time.sleep(poll_s)


def own_address(env: Mapping[str, str]) -> str:
    if env.get("NEURONFLEET_NODE_ADDRESS"):
        return env["NEURONFLEET_NODE_ADDRESS"]
    main = env.get("AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS")
    if main:  # the route towards the main node picks this node's private address (UDP connect sends nothing)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((main, MASTER_PORT))
            return str(s.getsockname()[0])
    return socket.gethostbyname(socket.gethostname())


def plan(env: Mapping[str, str], root: Path, address: str, program: Sequence[str],
         gather: object = None) -> tuple[list[str], dict[str, str]]:
    """The torchrun command and the extra environment for this node."""
    nodes = int(env.get("AWS_BATCH_JOB_NUM_NODES", "1"))
    index = int(env.get("AWS_BATCH_JOB_NODE_INDEX", "0"))
    size = int(env.get("NEURONFLEET_ULTRASERVER_SIZE", "1"))
    nproc = env.get("NEURONFLEET_NPROC_PER_NODE", "")
    if not nproc.isdigit():
        raise ValueError("NEURONFLEET_NPROC_PER_NODE is not set to a whole number (the node's logical NeuronCores)")
    me = read_identity(root, size, index, address) if size > 1 else NodeRecord(index, address, NO_SERVER, -1, ())
    extra: dict[str, str] = {}
    if size > 1:
        job = env.get("AWS_BATCH_JOB_ID", "local").split("#", 1)[0]
        attempt = env.get("AWS_BATCH_JOB_ATTEMPT", "1")
        folder = Path(env.get("NEURONFLEET_RENDEZVOUS_DIR", "/fsx/.neuronfleet/rendezvous")) / job / attempt
        timeout = float(env.get("NEURONFLEET_RENDEZVOUS_TIMEOUT_S", "900"))
        records = (gather or publish_and_gather)(folder, me, nodes, timeout)  # type: ignore[operator]
        ordered = order(records, size)
        me = next(r for r in ordered if r.index == index)
        rank = ordered.index(me)
        master = ordered[0].address
        extra = ultraserver_env(ordered, me, size)
    else:
        rank = index
        master = env.get("AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS") or address
    cmd = ["torchrun", f"--nnodes={nodes}", f"--nproc-per-node={nproc}", f"--node-rank={rank}",
           f"--master-addr={master}", f"--master-port={env.get('NEURONFLEET_MASTER_PORT', MASTER_PORT)}", *program]
    return cmd, extra


# ------------------------------------------------------------------------------------------------ drain relay

DRAIN_FLAG_ENV = "NEURONFLEET_DRAIN_FLAG"
DRAIN_NOTICE_ENV = "NEURONFLEET_DRAIN_NOTICE"
DRAIN_SIGNAL_ENV = "NEURONFLEET_DRAIN_SIGNAL"
DRAIN_POLL_ENV = "NEURONFLEET_DRAIN_POLL_S"
DRAIN_RELAY_ENV = "NEURONFLEET_DRAIN_RELAY"
DEFAULT_DRAIN_NOTICE = "/tmp/neuronfleet/drain.json"
DEFAULT_DRAIN_SIGNAL = "SIGUSR1"
DEFAULT_DRAIN_POLL_S = 30.0
"""The flag's deadline is 10 minutes before the instances stop and the lifecycle writes it from 45 minutes before
(checkpoint_lead_minutes); a 30 s poll is small beside both and costs one stat() per node."""
FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")
"""What the launcher passes on to torchrun: the signals torchrun handles by default (it stops its workers)."""


@dataclass(frozen=True)
class DrainSettings:
    flag: Path
    notice: Path
    signal: signal.Signals
    poll_s: float


def drain_settings(env: Mapping[str, str], off: bool = False) -> DrainSettings | None:
    """The relay's settings from the job's environment; None when it is off or there is no flag to watch.
    Raises ValueError naming the variable, its value and what is allowed."""
    switch = env.get(DRAIN_RELAY_ENV, "on").strip().lower()
    if switch not in ("on", "off"):
        raise ValueError(f"{DRAIN_RELAY_ENV}={env[DRAIN_RELAY_ENV]!r} is not valid; allowed: on, off")
    flag = env.get(DRAIN_FLAG_ENV, "").strip()
    if off or switch == "off" or not flag:
        return None
    name = env.get(DRAIN_SIGNAL_ENV, DEFAULT_DRAIN_SIGNAL).strip().upper()
    name = name if name.startswith("SIG") or name.isdigit() else "SIG" + name
    try:
        sig = signal.Signals(int(name)) if name.isdigit() else signal.Signals[name]
    except (KeyError, ValueError):
        raise ValueError(f"{DRAIN_SIGNAL_ENV}={env[DRAIN_SIGNAL_ENV]!r} is not a signal; allowed: a name such as "
                         "SIGUSR1, SIGUSR2 or SIGTERM, or its number") from None
    if sig in (signal.SIGKILL, signal.SIGSTOP):
        raise ValueError(f"{DRAIN_SIGNAL_ENV}={env[DRAIN_SIGNAL_ENV]!r} cannot be caught, so a training process "
                         "cannot act on it; allowed: a signal it can handle, such as SIGUSR1")
    raw = env.get(DRAIN_POLL_ENV, str(DEFAULT_DRAIN_POLL_S))
    try:
        poll = float(raw)
    except ValueError:
        poll = -1.0
    if not 0 < poll <= 3600:
        raise ValueError(f"{DRAIN_POLL_ENV}={raw!r} is not valid; allowed: seconds between checks of the drain "
                         "flag, more than 0 and at most 3600")
    return DrainSettings(flag=Path(flag), notice=Path(env.get(DRAIN_NOTICE_ENV, "").strip() or DEFAULT_DRAIN_NOTICE),
                         signal=sig, poll_s=poll)


def parse_flag(text: str) -> tuple[dict[str, object], datetime.datetime]:
    """The flag's object and its deadline; ValueError saying what is wrong."""
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(body, dict):
        raise ValueError(f"not a JSON object (a {type(body).__name__})")
    deadline = body.get("deadline")
    if not isinstance(deadline, str):
        raise ValueError(f'"deadline" is {deadline!r}; allowed: an ISO 8601 date-time string')
    try:  # Python < 3.11 reads no "Z"
        when = datetime.datetime.fromisoformat(deadline[:-1] + "+00:00" if deadline.endswith("Z") else deadline)
    except ValueError:
        raise ValueError(f'"deadline" is {deadline!r}; allowed: an ISO 8601 date-time') from None
    if when.tzinfo is None:
        raise ValueError(f'"deadline" is {deadline!r}: no UTC offset; allowed: an ISO 8601 date-time with one')
    return body, when


def children(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """The processes whose parent is ``pid`` (torchrun's workers), from /proc/<pid>/stat."""
    out = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
        if len(fields) > 1 and fields[1] == str(pid):
            out.append(int(entry.name))
    return sorted(out)


def handles(pid: int, sig: int, proc: Path = Path("/proc")) -> bool:
    """Whether the process catches or ignores ``sig`` (SigCgt/SigIgn in /proc/<pid>/status): sending it then cannot
    end the process by the signal's default action."""
    try:
        status = (proc / str(pid) / "status").read_text()
    except OSError:
        return False
    masks = {k: int(v, 16) for k, _, v in (line.partition(":\t") for line in status.splitlines())
             if k in ("SigCgt", "SigIgn") and v}
    return bool((masks.get("SigCgt", 0) | masks.get("SigIgn", 0)) >> (sig - 1) & 1)


def _log(message: str) -> None:
    print(f"neuronfleet launch: drain relay: {message}", file=sys.stderr, flush=True)


class DrainRelay:
    """Relays the cluster's drain flag to the training processes (see the module's "Drain relay")."""

    MAX_FLAG_BYTES = 65536
    """The lifecycle's flag is a few hundred bytes; a bigger file is not a flag (and is not read whole)."""

    def __init__(self, settings: DrainSettings, targets: Callable[[], list[int]],
                 catches: Callable[[int, int], bool] = handles, log: Callable[[str], None] = _log) -> None:
        self.settings, self.targets, self.catches, self.log = settings, targets, catches, log
        self.deadline: datetime.datetime | None = None
        """The deadline of the flag being relayed (None: no drain)."""
        self.signalled: set[int] = set()
        """The processes signalled for that flag."""
        self.body: Mapping[str, object] | None = None
        self.raw: bytes | None = None
        """The flag's bytes when last read: the same bytes are not parsed (nor logged) again. Compared by content,
        not by mtime: Lustre keeps whole seconds."""
        self.error: str | None = None
        self.waiting_logged = False
        self.clear_notice()

    def clear_notice(self) -> None:
        try:
            self.settings.notice.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            self.log(f"cannot remove {self.settings.notice}: {exc}")

    def write_notice(self, body: Mapping[str, object]) -> None:
        """The flag for the training processes to read (atomically replaced); a failure is logged, the signal still
        goes (the flag itself is readable at its path)."""
        notice = self.settings.notice
        try:
            notice.parent.mkdir(parents=True, exist_ok=True)
            tmp = notice.with_name(f".{notice.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(body) + "\n")
            tmp.replace(notice)
        except OSError as exc:
            self.log(f"cannot write {notice}: {exc}; the flag is at {self.settings.flag}")

    def poll(self) -> None:
        """One check of the flag; never raises (the launcher must outlive any flag). An error is logged once until
        it changes, and the flag is read again at the next poll."""
        try:
            self._poll()
            self.error = None
        except Exception as exc:  # a relay fault is logged, the training goes on
            message = f"{type(exc).__name__}: {exc}"
            if message != self.error:
                self.log(f"error, ignored (retried every {self.settings.poll_s:g} s): {message}")
            self.error, self.raw = message, None

    def _poll(self) -> None:
        flag = self.settings.flag
        try:
            with open(flag, "rb") as f:
                raw = f.read(self.MAX_FLAG_BYTES + 1)
        except FileNotFoundError:
            if self.deadline is not None:
                self.log(f"{flag} removed: the drain is off (block extended or ended); {self.settings.notice} "
                         "removed")
                self.clear_notice()
            self.deadline, self.body, self.raw, self.signalled, self.waiting_logged = None, None, None, set(), False
            return
        if raw != self.raw:
            self.raw = raw
            try:
                if len(raw) > self.MAX_FLAG_BYTES:
                    raise ValueError(f"larger than {self.MAX_FLAG_BYTES} bytes")
                body, deadline = parse_flag(raw.decode("utf-8"))  # (UnicodeDecodeError is a ValueError)
            except ValueError as exc:
                self.log(f"{flag} ignored: {exc} (expected {{\"deadline\": ISO 8601, \"reason\", \"blocks\"}}; "
                         f"{len(raw)} bytes)")
                return
            if deadline != self.deadline or body != self.body:
                self.write_notice(body)  # a new reason or blocks under the same deadline: the notice follows
            if deadline != self.deadline:
                self.deadline, self.signalled, self.waiting_logged = deadline, set(), False
            self.body = body
        if self.deadline is not None:
            self._signal()

    def _signal(self) -> None:
        sig = self.settings.signal
        pending = [p for p in self.targets() if p not in self.signalled]
        ready = [p for p in pending if self.catches(p, sig)]
        for pid in ready:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                continue
            self.signalled.add(pid)
        assert self.deadline is not None
        if ready:
            self.log(f"drain until {self.deadline.isoformat()}: {sig.name} sent to {len(ready)} training "
                     f"process(es) {ready}; the flag is in {self.settings.notice}")
        waiting = [p for p in pending if p not in ready]
        if waiting and not self.waiting_logged:
            self.waiting_logged = True
            self.log(f"{len(waiting)} training process(es) {waiting} do not handle {sig.name} (yet): not signalled "
                     f"(its default action would end them); checked again every {self.settings.poll_s:g} s; the "
                     f"flag is in {self.settings.notice}")


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def supervise(cmd: Sequence[str], env: Mapping[str, str], settings: DrainSettings) -> int:
    """Run torchrun in its own session, forward the signals it handles, relay the drain flag; its exit code."""
    started: list[subprocess.Popen[bytes]] = []
    early: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        for p in started:
            p.send_signal(signum)  # (nothing once it has ended)
        if not started:
            early.append(signum)

    for name in FORWARDED:  # before torchrun starts: none is lost in between
        signal.signal(getattr(signal, name), forward)
    proc = subprocess.Popen(list(cmd), env={**env, DRAIN_NOTICE_ENV: str(settings.notice)}, start_new_session=True)
    started.append(proc)
    for signum in early:  # one that came while it was starting
        proc.send_signal(signum)
    relay = DrainRelay(settings, targets=lambda: children(proc.pid))
    try:
        pidfd = os.pidfd_open(proc.pid)  # woken when torchrun ends, no busy wait (Linux 5.3, Python 3.9)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            relay.poll()
            if pidfd is not None:
                select.select([pidfd], [], [], settings.poll_s)
                if proc.poll() is not None:
                    break
            else:
                try:
                    proc.wait(timeout=settings.poll_s)
                    break
                except subprocess.TimeoutExpired:
                    pass
    finally:
        if pidfd is not None:
            os.close(pidfd)
    code = _exit_code(proc.wait())
    print(f"neuronfleet launch: torchrun exited {code}", file=sys.stderr, flush=True)
    return code


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="neuronfleet: health gate, UltraServer rank order, torchrun")
    parser.add_argument("--skip-health-gate", action="store_true")
    parser.add_argument("--dry-run", action="store_true", help="print the command and environment, run nothing")
    parser.add_argument("--no-drain-relay", action="store_true",
                        help=f"do not watch the drain flag ({DRAIN_FLAG_ENV}); the same as {DRAIN_RELAY_ENV}=off")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="-- train.py [args]")
    args = parser.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("nothing to launch: give the training script after --")
    env = dict(os.environ if env is None else env)
    try:
        drain = drain_settings(env, off=args.no_drain_relay)
    except ValueError as exc:
        print(f"neuronfleet launch: {exc}", file=sys.stderr, flush=True)
        return health_gate.EXIT_CONFIG
    if not args.skip_health_gate and env.get("NEURONFLEET_HEALTH_GATE", "on") != "off":
        code = health_gate.run(env)
        if code:
            return code
    root = Path(env.get("NEURONFLEET_HOST_ROOT", "/"))
    try:
        cmd, extra = plan(env, root, own_address(env), program)
    except TopologyError as exc:
        print(f"neuronfleet launch: {exc}", file=sys.stderr, flush=True)
        return health_gate.EXIT_TOPOLOGY
    except TimeoutError as exc:
        print(f"neuronfleet launch: {exc}: a node is missing (host fault?)", file=sys.stderr, flush=True)
        return health_gate.EXIT_HARDWARE_FAULT
    except ValueError as exc:
        print(f"neuronfleet launch: {exc}", file=sys.stderr, flush=True)
        return health_gate.EXIT_CONFIG
    for k, v in sorted(extra.items()):
        print(f"neuronfleet launch: {k}={v}", flush=True)
    print("neuronfleet launch: " + " ".join(cmd), flush=True)
    if drain is None:
        why = ("--no-drain-relay" if args.no_drain_relay else f"{DRAIN_RELAY_ENV}=off"
               if env.get(DRAIN_RELAY_ENV, "").strip().lower() == "off" else f"{DRAIN_FLAG_ENV} not set")
        print(f"neuronfleet launch: drain relay: off ({why})", flush=True)
    else:
        print(f"neuronfleet launch: drain relay: watching {drain.flag} every {drain.poll_s:g} s; on a flag, its "
              f"content to {drain.notice} ({DRAIN_NOTICE_ENV}) and {drain.signal.name} once to each torchrun worker "
              "that handles it", flush=True)
    if args.dry_run:
        return 0
    if drain is not None:
        return supervise(cmd, {**env, **extra}, drain)
    os.execvpe(cmd[0], cmd, {**env, **extra})
    return 0  # pragma: no cover - exec does not return


if __name__ == "__main__":
    raise SystemExit(main())
