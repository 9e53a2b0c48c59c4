#!/usr/bin/env python3
"""neuronfleet job launcher (Python standard library only): health gate, rank order, then torchrun.

    python3 /opt/neuronfleet/launch.py [--skip-health-gate] [--dry-run] -- train.py [ARGS...]

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

Exit codes: those of the health gate; 76 when the nodes do not form whole UltraServers (or one is not in
UltraServer mode); 75 when the other nodes never published (a node that died: a host fault, retried).

Sources (read 2026-11-22): Neuron's UltraServer init script and guide (aws-neuron-sdk
src/k8/k8s-ultraserver-init-script.sh, deploy/eks/ultraserver.rst: the sysfs files, the sort order, the 4-node
config's mode X4=1, the five variables); AWS Batch "Multi-node parallel jobs: environment variables"
(AWS_BATCH_JOB_NODE_INDEX, AWS_BATCH_JOB_NUM_NODES, AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS); Neuron's
torchrun guidance (--nproc_per_node=64 on trn2.48xlarge at LNC=2, 32 on trn1.32xlarge).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from collections.abc import Mapping, Sequence
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


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="neuronfleet: health gate, UltraServer rank order, torchrun")
    parser.add_argument("--skip-health-gate", action="store_true")
    parser.add_argument("--dry-run", action="store_true", help="print the command and environment, run nothing")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="-- train.py [args]")
    args = parser.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("nothing to launch: give the training script after --")
    env = dict(os.environ if env is None else env)
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
    if args.dry_run:
        return 0
    os.execvpe(cmd[0], cmd, {**env, **extra})
    return 0  # pragma: no cover - exec does not return


if __name__ == "__main__":
    raise SystemExit(main())
