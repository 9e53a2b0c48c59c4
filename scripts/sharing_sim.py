"""A day of one shared Trainium pool: chip-hours by role with and without sharing, training work lost at the morning
reclaim with and without the checkpoint signal (neuronfleet.sharing.simulation; docs/sharing.md shows its output).

    python scripts/sharing_sim.py                                   # 32 trn2.48xlarge (512 chips), synthetic curve
    python scripts/sharing_sim.py --ultraservers 2000               # 2,000 Trn2 UltraServers (128,000 chips)
    python scripts/sharing_sim.py --trace AzureLLMInferenceTrace_code_1week.csv --trace-tz UTC

Every figure is labelled with where its demand comes from: SYNTHETIC for the built-in curve, the trace's file name
otherwise. Exit 2 with field/value/allowed on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from neuronfleet.sharing.simulation import (
    CHIPS_PER_NODE,
    SYNTHETIC_CURVE,
    DayResult,
    TrainingModel,
    floor_for,
    hourly_demand,
    simulate_day,
)
from neuronfleet_contract.pool_schedule import InvalidSchedule, PoolSchedule


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = p.add_mutually_exclusive_group()
    size.add_argument("--nodes", type=int, default=32, help="trn2.48xlarge nodes in the pool (16 chips each)")
    size.add_argument("--ultraservers", type=int, help="Trn2 UltraServers in the pool (4 trn2u.48xlarge, 64 chips)")
    p.add_argument("--replica-chips", type=int, default=4, help="Neuron devices one inference replica takes")
    p.add_argument("--time-zone", default="America/New_York")
    p.add_argument("--day", action="append", help="a day window (repeatable), default '07:00-23:00'")
    p.add_argument("--deadline", type=int, default=30, help="checkpoint deadline, minutes before the morning")
    p.add_argument("--night-floor", type=int, help="inference replicas at night (default: the busiest night hour's)")
    p.add_argument("--checkpoint-every", type=int, default=60)
    p.add_argument("--checkpoint-write", type=int, default=5)
    p.add_argument("--trace", type=Path, help="a CSV in the Azure LLM inference trace schema (TIMESTAMP,...)")
    p.add_argument("--trace-tz", default="UTC", help="the time zone of the trace's TIMESTAMPs")
    return p.parse_args(argv)


def report(result: DayResult, *, label: str, schedule: PoolSchedule) -> str:
    lines = [f"Shared pool, one day ({label}): {result.pool_chips:,} Trainium2 chips, {schedule.time_zone}, "
             f"day {', '.join(schedule.day)}, {result.day_replicas:,} replicas of {result.replica_chips} chips by day, "
             f"night floor {result.night_floor:,}, checkpoint deadline {int(schedule.checkpoint_deadline.seconds // 60)}"
             " min",
             "",
             f"{'chip-hours':<24}{'inference':>14}{'training':>14}{'idle':>14}{'unserved':>12}{'used %':>9}"]
    for name, f in (("shared (day/night)", result.shared), ("inference only", result.inference_only)):
        used = 100 * (f.inference + f.training) / f.total if f.total else 0.0
        lines.append(f"{name:<24}{f.inference:>14,.0f}{f.training:>14,.0f}{f.idle:>14,.0f}{f.unserved:>12,.0f}"
                     f"{used:>8.1f}%")
    lines += ["",
              f"training chip-hours lost at the morning reclaim: {result.training_lost_with_signal:,.0f} with the "
              f"checkpoint signal, {result.training_lost_without_signal:,.0f} without",
              f"inference waits for the chips after the morning: {result.morning_wait_with_signal:,.0f} s with the "
              f"signal (the checkpointed job's exit), {result.reclaim_seconds_without_signal:,.0f} s without "
              "(SIGTERM's grace period, the job killed mid-write); inference pods' own start not included",
              f"reclaim latency, signal to chips free: {result.reclaim_seconds_with_signal:,.0f} s (the deadline plus "
              "the exit)",
              "",
              "hour  inference  training  idle   (chips at the hour's first minute, shared pool)"]
    lines += [f"{h:02d}:00 {i:>10,} {t:>9,} {d:>5,}" for h, i, t, d in result.hourly]
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
        if chips % args.replica_chips:
            raise ValueError(f"replica-chips: got {args.replica_chips}; allowed: a divisor of the pool's {chips}")
        replicas = chips // args.replica_chips
        floor = args.night_floor if args.night_floor is not None else floor_for(curve, day, args.time_zone, replicas)
        schedule = PoolSchedule.build(pool="sim", time_zone=args.time_zone, day=day, pool_devices=chips,
                                      replica_devices=args.replica_chips, day_replicas=replicas, night_floor=floor,
                                      checkpoint_deadline=args.deadline, field_prefix="--")
        model = TrainingModel(checkpoint_every=args.checkpoint_every, checkpoint_write=args.checkpoint_write)
        result = simulate_day(schedule, curve, training=model)
    except (InvalidSchedule, ValueError, OSError) as error:
        print(f"sharing_sim: {error}", file=sys.stderr)
        return 2
    print(report(result, label=label, schedule=schedule))
    return 0


if __name__ == "__main__":
    sys.exit(main())
