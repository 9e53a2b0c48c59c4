"""A day of one shared Trainium pool, node by node: useful chip-hours (demand served + training progress kept) of the
kit's day/night clock against nothing at night and Kueue's plain borrowing, and the training work lost at reclaims
by checkpoint interval and grace period (neuronfleet.sharing.simulation; README and docs/sharing.md quote it).

    python scripts/sharing_sim.py                                   # 32 trn2.48xlarge (512 chips), synthetic curve
    python scripts/sharing_sim.py --trace AzureLLMInferenceTrace_code_1week.csv --trace-tz UTC
    python scripts/sharing_sim.py --inference-load 15 --checkpoint-write 10   # change an assumption

Every figure is labelled with where its demand comes from: SYNTHETIC for the built-in curve, the trace's file name
otherwise; every assumption is printed with its value. Exit 2 with field/value/allowed on bad input.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from neuronfleet.sharing.simulation import (
    CHECKPOINT_INTERVALS,
    CHIPS_PER_NODE,
    GRACE_PERIODS,
    SYNTHETIC_CURVE,
    Clock,
    Placement,
    Policy,
    Timings,
    TrainingModel,
    floor_for,
    hourly_demand,
    lost_table,
    simulate,
)
from neuronfleet_contract.pool_schedule import InvalidSchedule, PoolSchedule

RUNS: tuple[tuple[Policy, Placement], ...] = (
    (Policy.INFERENCE_ONLY, Placement.PACKED),
    (Policy.DAY_NIGHT, Placement.PACKED), (Policy.DAY_NIGHT, Placement.SPREAD),
    (Policy.DAY_NIGHT_NO_NOTICE, Placement.PACKED), (Policy.DAY_NIGHT_NO_NOTICE, Placement.SPREAD),
    (Policy.PLAIN_RECLAIM, Placement.PACKED), (Policy.PLAIN_RECLAIM, Placement.SPREAD))


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = p.add_mutually_exclusive_group()
    size.add_argument("--nodes", type=int, default=32, help="trn2.48xlarge nodes in the pool (16 chips each)")
    size.add_argument("--ultraservers", type=int, help="Trn2 UltraServers in the pool (4 trn2u.48xlarge, 64 chips); "
                      "the model is node by node: thousands of nodes take minutes")
    p.add_argument("--replica-chips", type=int, default=4, help="Neuron devices one inference replica takes")
    p.add_argument("--time-zone", default="America/New_York")
    p.add_argument("--day", action="append", help="a day window (repeatable), default '07:00-23:00'")
    p.add_argument("--deadline", type=int, default=30, help="checkpoint deadline, minutes before the morning")
    p.add_argument("--night-floor", type=int, help="inference replicas at night (default: the busiest night hour's)")
    defaults, times = TrainingModel(), Timings()
    p.add_argument("--job-nodes", type=int, default=defaults.job_nodes)
    p.add_argument("--checkpoint-every", type=int, default=defaults.checkpoint_every)
    p.add_argument("--checkpoint-write", type=int, default=defaults.checkpoint_write)
    p.add_argument("--grace", type=int, default=defaults.grace_seconds, help="terminationGracePeriodSeconds")
    p.add_argument("--job-start", type=int, default=times.job_start)
    p.add_argument("--compile-cache-load", type=int, default=times.compile_cache_load)
    p.add_argument("--checkpoint-restore", type=int, default=times.checkpoint_restore)
    p.add_argument("--inference-load", type=int, default=times.inference_load)
    p.add_argument("--trace", type=Path, help="a CSV in the Azure LLM inference trace schema (TIMESTAMP,...)")
    p.add_argument("--trace-tz", default="UTC", help="the time zone of the trace's TIMESTAMPs")
    return p.parse_args(argv)


def assumptions(model: TrainingModel, times: Timings) -> list[str]:
    return [
        "Assumptions (each a flag; none measured on Trainium2; sources in neuronfleet.sharing.simulation.Timings):",
        f"  training job start {times.job_start} min, compile-cache load {times.compile_cache_load} min (a Neuron "
        f"persistent-cache hit), checkpoint restore {times.checkpoint_restore} min: paid at every admission",
        f"  checkpoint every {model.checkpoint_every} min, each write {model.checkpoint_write} min with training "
        f"stalled; training jobs of {model.job_nodes} whole nodes",
        f"  inference replica model load {times.inference_load} min before it serves; demand above ready replicas "
        "is unserved",
        f"  notified job: last checkpoint done {model.margin} min before the morning, exits {model.exit_seconds} s "
        f"after SIGTERM; grace period {model.grace_seconds} s; a job writes a checkpoint on SIGTERM "
        f"({'yes' if model.writes_on_sigterm else 'no'}), which saves its work only if the write fits the grace",
        "  useful = demand served + training progress kept; allocated = chips held by inference or training pods",
        "  packed: scale-in empties the sparsest nodes (a pod-deletion-cost kept current); spread: Kubernetes' own "
        "scale-in order (doubled-up pods first) without one; Kueue preempts the newest training job first",
    ]


def report(clock: Clock, *, label: str, model: TrainingModel, times: Timings) -> str:
    schedule = clock.schedule
    nodes = schedule.pool_devices // CHIPS_PER_NODE
    lines = [f"Shared pool, one day ({label}): {schedule.pool_devices:,} Trainium2 chips ({nodes:,} nodes of "
             f"{CHIPS_PER_NODE}), {schedule.time_zone}, day {', '.join(schedule.day)}, up to "
             f"{schedule.day_replicas:,} replicas of {schedule.replica_devices} chips, night floor "
             f"{schedule.night_floor:,}, checkpoint deadline {int(schedule.checkpoint_deadline.seconds // 60)} min",
             "", *assumptions(model, times), "",
             f"{'chip-hours':<30}{'useful %':>9}{'allocated %':>12}{'served':>9}{'unserved':>9}{'training kept':>14}"
             f"{'lost':>7}{'overhead':>9}{'evictions':>10}"]
    for policy, placement in RUNS:
        f = simulate(clock, policy, placement, training=model, timings=times)
        name = policy.value if policy is Policy.INFERENCE_ONLY else f"{policy.value}, {placement.value}"
        lines.append(f"{name:<30}{f.useful_percent:>8.1f}%{f.allocated_percent:>11.1f}%{f.served:>9,.0f}"
                     f"{f.unserved:>9,.0f}{f.training_progress:>14,.0f}{f.training_lost:>7,.0f}"
                     f"{f.training_overhead:>9,.0f}{f.evictions:>10,}")
    notified = simulate(clock, Policy.DAY_NIGHT, training=model, timings=times).training_lost
    lines += ["", "training chip-hours lost in the day, packed, by checkpoint interval and grace period:"]
    head = "".join(f"{f'{g} s':>8}" for g in GRACE_PERIODS)
    tables = {p: lost_table(clock, p, training=model, timings=times)
              for p in (Policy.DAY_NIGHT_NO_NOTICE, Policy.PLAIN_RECLAIM)}
    lines.append(f"{'every':<8}{'day/night, no notice':>24}{'':>4}{'Kueue plain reclaim':>24}")
    lines.append(f"{'':<8}{head}{'':>4}{head}")
    for every in CHECKPOINT_INTERVALS:
        row = [f"{tables[p][every, g]:>8,.0f}" for p in tables for g in GRACE_PERIODS]
        lines.append(f"{f'{every} min':<8}{''.join(row[:3])}{'':>4}{''.join(row[3:])}")
    ignores = simulate(clock, Policy.DAY_NIGHT_NO_NOTICE, training=TrainingModel(
        **{**model.__dict__, "grace_seconds": max(GRACE_PERIODS), "writes_on_sigterm": False}), timings=times)
    lines += [f"day/night with the notice: {notified:,.0f} at every interval and grace (the {model.margin} min "
              "between the last checkpoint and the morning)",
              f"zero only where a {model.checkpoint_write} min write fits the grace ({model.checkpoint_write * 60} s "
              f"or more) and the job writes on SIGTERM: SIGTERM is then its notice; a job that ignores SIGTERM "
              f"loses {ignores.training_lost:,.0f} with a {max(GRACE_PERIODS)} s grace",
              f"the morning, first new replica serving: {math.ceil(model.exit_seconds / 60) + times.inference_load} "
              f"min with the notice (the job's exit, then the model load), "
              f"{math.ceil(model.grace_seconds / 60) + times.inference_load} min without (the grace period, then "
              "the model load)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    chips = args.ultraservers * 4 * CHIPS_PER_NODE if args.ultraservers else args.nodes * CHIPS_PER_NODE
    day = args.day or ["07:00-23:00"]
    try:
        if args.trace:
            with args.trace.open(newline="") as rows:
                curve, label = hourly_demand(rows, time_zone=args.trace_tz), f"demand from {args.trace.name}"
        else:
            curve, label = SYNTHETIC_CURVE, "SYNTHETIC demand curve"
        if args.replica_chips < 1 or CHIPS_PER_NODE % args.replica_chips:
            raise ValueError(f"--replica-chips: got {args.replica_chips}; allowed: a divisor of {CHIPS_PER_NODE} "
                             "(replicas share nodes)")
        for name in ("job_start", "compile_cache_load", "checkpoint_restore", "inference_load"):
            if getattr(args, name) < 0:
                raise ValueError(f"--{name.replace('_', '-')}: got {getattr(args, name)}; allowed: 0 or more")
        replicas = chips // args.replica_chips
        floor = args.night_floor if args.night_floor is not None else floor_for(curve, day, args.time_zone, replicas)
        schedule = PoolSchedule.build(pool="sim", time_zone=args.time_zone, day=day, pool_devices=chips,
                                      replica_devices=args.replica_chips, day_replicas=replicas, night_floor=floor,
                                      checkpoint_deadline=args.deadline, field_prefix="--")
        model = TrainingModel(checkpoint_every=args.checkpoint_every, checkpoint_write=args.checkpoint_write,
                              grace_seconds=args.grace, job_nodes=args.job_nodes)
        times = Timings(job_start=args.job_start, compile_cache_load=args.compile_cache_load,
                        checkpoint_restore=args.checkpoint_restore, inference_load=args.inference_load)
        text = report(Clock.of(schedule, curve), label=label, model=model, times=times)
    except (InvalidSchedule, ValueError, OSError) as error:
        print(f"sharing_sim: {error}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
