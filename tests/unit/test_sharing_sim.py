"""The shared pool's simulation on small inputs worked by hand (two nodes, one-node training jobs), the invariants of
its accounting, the trace parser on the Azure trace's own rows, and the one home of the figures the README and
docs/sharing.md quote: the script's default output."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from neuronfleet.sharing.simulation import (
    SYNTHETIC_CURVE,
    Clock,
    Figures,
    Placement,
    Policy,
    Timings,
    TrainingModel,
    floor_for,
    hourly_demand,
    lost_table,
    simulate,
)
from neuronfleet_contract.pool_schedule import PoolSchedule
from scripts import sharing_sim

TRACE = Path(__file__).resolve().parents[1] / "data" / "azure_llm_trace" / "AzureLLMInferenceTrace_code-head.csv"
ROOT = Path(__file__).resolve().parents[2]
ONE_NODE_JOBS = TrainingModel(job_nodes=1)
DAY_FULL = [1.0 if 8 <= h < 20 else 0.25 for h in range(24)]
"""Both nodes full by day (8 replicas of 4 chips), the night floor's 2 replicas at night."""


def two_nodes(**overrides) -> PoolSchedule:
    args: dict[str, Any] = dict(pool="sim", time_zone="UTC", day=["08:00-20:00"], pool_devices=32,
                                replica_devices=4, day_replicas=8, night_floor=2, checkpoint_deadline=30)
    return PoolSchedule.build(**(args | overrides))


@pytest.fixture(scope="module")
def clock() -> Clock:
    return Clock.of(two_nodes(), DAY_FULL)


def run(clock: Clock, policy: Policy, placement: Placement = Placement.PACKED, **training: Any) -> Figures:
    return simulate(clock, policy, placement, training=replace(ONE_NODE_JOBS, **training))


def chip_minutes(hours: float, chips: int = 16) -> float:
    return hours * 60 / chips


def test_the_notified_night_by_hand(clock) -> None:
    # 20:00 the scale-in empties node 1 (packed); a one-node job starts there and runs 720 minutes to 08:00. It pays
    # 3 + 2 + 5 = 10 minutes of start, then 65-minute cycles (60 of work, a 5-minute write). Notified, its last
    # write starts at 720 - 2 - 5 = 713: the work before is kept (10 cycles = 600, and 53 minutes), the 2 minutes
    # after it are lost
    f = run(clock, Policy.DAY_NIGHT)
    assert chip_minutes(f.training_progress) == pytest.approx(653)
    assert chip_minutes(f.training_lost) == pytest.approx(2)
    assert f.evictions == 1
    assert f.training_allocated == pytest.approx(12 * 16 + 16 / 60)  # the night, and the minute of its exit
    assert f.training_overhead == pytest.approx(f.training_allocated - f.training_progress - f.training_lost)


def test_the_unnotified_night_loses_the_cycle_in_progress(clock) -> None:
    # 10 writes completed by 660; the 60 minutes worked since are lost at 08:00 (a 5-minute write cannot fit 120 s)
    f = run(clock, Policy.DAY_NIGHT_NO_NOTICE)
    assert (chip_minutes(f.training_progress), chip_minutes(f.training_lost)) == pytest.approx((600, 60))
    # a 300 s grace fits the write: the SIGTERM handler saves all 660 minutes, unless the job ignores SIGTERM
    saved = run(clock, Policy.DAY_NIGHT_NO_NOTICE, grace_seconds=300)
    assert (chip_minutes(saved.training_progress), saved.training_lost) == pytest.approx((660, 0))
    ignored = run(clock, Policy.DAY_NIGHT_NO_NOTICE, grace_seconds=300, writes_on_sigterm=False)
    assert chip_minutes(ignored.training_lost) == pytest.approx(60)


def test_useful_counts_demand_served_not_replicas(clock) -> None:
    # by day 8 replicas serve 32 chips of demand; at night 2 replicas serve 8. At 08:00 the 6 new replicas load for
    # 5 minutes (2 ready: 8 of 32 chips served): 24 x 5 chip-minutes unserved with nothing at night. Day/night adds
    # the minute node 1's training pod takes to exit: 4 replicas wait for it (16 chips unserved one more minute)
    alone = run(clock, Policy.INFERENCE_ONLY)
    assert alone.unserved * 60 == pytest.approx(24 * 5)
    assert alone.served == pytest.approx(12 * 32 + 12 * 8 - 24 * 5 / 60)
    assert alone.useful == alone.served and alone.training_allocated == 0
    shared = run(clock, Policy.DAY_NIGHT)
    assert shared.unserved * 60 == pytest.approx(24 * 5 + 16)
    assert shared.useful == pytest.approx(shared.served + shared.training_progress)
    # a night floor above demand is allocated, not useful
    idle_floor = simulate(Clock.of(two_nodes(night_floor=4), DAY_FULL), Policy.INFERENCE_ONLY)
    assert idle_floor.served == pytest.approx(alone.served)


def test_spread_survivors_leave_no_whole_node(clock) -> None:
    # scale-in from 4 + 4 to 2 replicas: doubled-up pods first leaves 1 + 1, so no node is whole for training
    for policy in (Policy.DAY_NIGHT, Policy.DAY_NIGHT_NO_NOTICE, Policy.PLAIN_RECLAIM):
        f = run(clock, policy, Placement.SPREAD)
        assert f.training_allocated == 0 and f.evictions == 0
    # a job larger than the whole nodes free is never admitted, however packed
    assert run(clock, Policy.DAY_NIGHT, job_nodes=2).training_allocated == 0


def test_plain_reclaim_preempts_without_notice() -> None:
    # at 02:00 demand needs 6 replicas: node 0 takes 4, the job on node 1 is preempted (20:00 + 360 min: 5 writes
    # done by 335, 25 minutes lost), node 1 frees after the 120 s grace; at 03:00 the scale-in empties it again and
    # a new job runs to 08:00 (300 min: 4 writes done by 270, 30 lost)
    spike = list(DAY_FULL)
    spike[2] = 0.75
    f = run(Clock.of(two_nodes(), spike), Policy.PLAIN_RECLAIM)
    assert f.evictions == 2 and chip_minutes(f.training_lost) == pytest.approx(55)
    clocked = run(Clock.of(two_nodes(), spike), Policy.DAY_NIGHT)  # the clock holds inference at its floor
    assert clocked.evictions == 1 and clocked.unserved > run(Clock.of(two_nodes(), DAY_FULL), Policy.DAY_NIGHT).unserved


def test_the_lost_table_and_the_notice(clock) -> None:
    table = lost_table(clock, Policy.DAY_NIGHT_NO_NOTICE, training=ONE_NODE_JOBS)
    assert chip_minutes(table[60, 120]) == pytest.approx(60) and table[60, 300] == 0
    assert chip_minutes(table[90, 120]) == pytest.approx(720 - 10 - 7 * 95)  # 7 writes by 675: 35 lost
    notified = [simulate(clock, Policy.DAY_NIGHT, training=replace(ONE_NODE_JOBS, checkpoint_every=e,
                                                                   grace_seconds=g)).training_lost
                for e in (15, 30, 45, 60, 90) for g in (30, 120, 300)]
    assert notified == [pytest.approx(2 * 16 / 60)] * 15  # the margin, whatever the interval and the grace


def test_timings_are_paid_at_each_admission(clock) -> None:
    slow = simulate(clock, Policy.DAY_NIGHT, training=ONE_NODE_JOBS,
                    timings=Timings(job_start=10, compile_cache_load=0, checkpoint_restore=0, inference_load=0))
    # 10 minutes of start as before, the same kept work; no model load: only the exit minute is unserved
    assert chip_minutes(slow.training_progress) == pytest.approx(653) and slow.unserved * 60 == pytest.approx(16)


def test_the_floor_serves_the_busiest_night_hour() -> None:
    assert floor_for(SYNTHETIC_CURVE, ["07:00-23:00"], "UTC", 128) == 43  # 23:00 at 0.33 of 128


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="24 fractions"):
        Clock.of(two_nodes(), [0.5] * 23)
    with pytest.raises(ValueError, match="24 fractions"):
        Clock.of(two_nodes(), [1.5] * 24)
    with pytest.raises(ValueError, match="checkpoint_every: got 0; allowed: 1 or more"):
        TrainingModel(checkpoint_every=0)
    with pytest.raises(ValueError, match="whole 16-chip nodes"):
        simulate(Clock.of(two_nodes(pool_devices=24, day_replicas=6), DAY_FULL), Policy.DAY_NIGHT)


def test_hourly_demand_from_the_azure_trace_rows() -> None:
    with TRACE.open(newline="") as rows:
        curve = hourly_demand(rows)
    assert curve[18] == 1.0 and sum(curve) == 1.0  # every row of the publisher's head falls in 18:xx
    with TRACE.open(newline="") as rows:
        assert hourly_demand(rows, time_zone="America/New_York")[18] == 1.0  # read as local wall-clock time
    body = TRACE.read_text().splitlines()
    shifted = [*body, body[1].replace("18:17", "06:17"), body[2].replace("18:17", "06:17")]
    curve = hourly_demand(shifted)
    assert curve[6] == pytest.approx(2 / 12, abs=1e-4) and curve[18] == 1.0
    with pytest.raises(ValueError, match="line 3: TIMESTAMP got 'soon'"):
        hourly_demand([body[0], body[1], "soon,1,2"])
    with pytest.raises(ValueError, match="header has TIMESTAMP"):
        hourly_demand(["time,tokens", "x,1"])


def test_the_script_refuses_bad_input(capsys) -> None:
    assert sharing_sim.main(["--nodes", "2", "--night-floor", "9"]) == 2
    assert "--night_floor: got 9; allowed: at most day_replicas (8)" in capsys.readouterr().err
    assert sharing_sim.main(["--nodes", "2", "--deadline", "600"]) == 2
    assert "--checkpoint_deadline_minutes: got 600" in capsys.readouterr().err
    assert sharing_sim.main(["--nodes", "2", "--replica-chips", "3"]) == 2
    assert "--replica-chips: got 3; allowed: a divisor of 16" in capsys.readouterr().err
    assert sharing_sim.main(["--nodes", "2", "--inference-load", "-1"]) == 2
    assert "--inference-load: got -1; allowed: 0 or more" in capsys.readouterr().err


@pytest.fixture(scope="module")
def default_output() -> str:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert sharing_sim.main([]) == 0
    return buffer.getvalue().rstrip()


def number(cell: str) -> int:
    return int(cell.replace(",", ""))


def row(out: str, name: str) -> list[str]:
    line = next(line for line in out.splitlines() if line.startswith(name))
    return re.findall(r"[\d,.]+%?", line[len(name):])


def test_the_page_shows_the_scripts_own_output(default_output) -> None:
    """docs/sharing.md carries the default run's output verbatim, assumptions included: it cannot go stale."""
    assert default_output in (ROOT / "docs" / "sharing.md").read_text()
    assert "SYNTHETIC demand curve" in default_output and "Assumptions" in default_output


def test_the_readme_quotes_the_scripts_figures(default_output) -> None:
    readme = " ".join((ROOT / "README.md").read_text().split())
    pct = {name: row(default_output, name)[0].replace("%", " %")
           for name in ("nothing at night", "day/night, notice, packed", "day/night, notice, spread",
                        "Kueue plain reclaim, packed")}
    lost_notice = re.search(r"day/night with the notice: ([\d,]+) ", default_output)
    assert lost_notice
    table = [row(default_output, f"{every} min") for every in (15, 30, 45, 60, 90)]
    unnotified = [number(cells[1]) for cells in table]  # the 120 s column, day/night
    plain_lost = row(default_output, "Kueue plain reclaim, packed")[5]
    expected = (f"{pct['day/night, notice, packed']} of chip-hours useful (demand served plus training progress "
                f"kept) instead of {pct['nothing at night']} with nothing at night, "
                f"{pct['day/night, notice, spread']} if scale-in leaves inference spread over the nodes, and "
                f"{pct['Kueue plain reclaim, packed']} with Kueue's plain borrowing (no clock: {plain_lost} "
                f"training chip-hours lost to preemption); {lost_notice.group(1)} training chip-hours lost at the "
                f"morning with the checkpoint notice, {min(unnotified)}-{max(unnotified)} without (checkpoints every "
                "15-90 min, 120 s grace)")
    assert expected in readme


def test_the_pages_reading_quotes_the_same_figures(default_output) -> None:
    """The prose under the output ("Read:") restates figures: each is taken from the output here, so it cannot
    drift from it."""
    page = " ".join((ROOT / "docs" / "sharing.md").read_text().split())
    reading = page[page.index("Read: - **The kit's clock, packed**"):page.index("## The same pattern on AWS Batch")]
    packed, alone, spread = (row(default_output, name) for name in
                             ("day/night, notice, packed", "nothing at night", "day/night, notice, spread"))
    plain = row(default_output, "Kueue plain reclaim, packed")
    table = [row(default_output, f"{every} min") for every in (15, 30, 45, 60, 90)]
    unnotified = [cells[1] for cells in table]
    notice = re.search(r"day/night with the notice: ([\d,]+) ", default_output)
    ignores = re.search(r"ignores SIGTERM loses ([\d,]+) with a 300 s grace", default_output)
    assert notice and ignores
    for phrase in (f"makes {packed[0].replace('%', ' %')} of the pool's chip-hours useful against "
                   f"{alone[0].replace('%', ' %')} with nothing at night; it allocates {packed[1].replace('%', ' %')}",
                   f"**Spread survivors cancel it**: {spread[0].replace('%', ' %')}, training never admitted",
                   f"({plain[0].replace('%', ' %')}) because", f"{plain[7]} preemptions a day",
                   f"{plain[5]} training chip-hours lost", f"({plain[3]} chip-hours against {packed[3]})",
                   f": {min(unnotified, key=number)}-{max(unnotified, key=number)} training chip-hours at a 120 s grace",
                   f"the 60-minute case ({table[3][1]})", f"the 2-minute margin, {notice.group(1)},",
                   f"({ignores.group(1)} at 300 s)"):
        assert phrase in reading, phrase
    assert all(cells[2] == "0" for cells in table)  # the 300 s column: the zeros the reading explains


def test_kueue_preempts_the_most_recently_admitted_first() -> None:
    """Kueue's CandidatesOrdering, criterion 4, "Workloads admitted more recently first" (kueue@8eab6877
    pkg/scheduler/preemption/common/ordering.go; TestCandidatesOrdering case "old workloads last"): with equal
    priority and both in the training ClusterQueue, a replica that finds no room evicts the younger job."""
    from neuronfleet.sharing.simulation import _Job, _Pool, _Tally

    pool = _Pool(3, 4, ONE_NODE_JOBS, Timings(), _Tally(range(0, 100)))
    pool.inference[0] = 4
    older, younger = _Job(0, [1], 16), _Job(10, [2], 16)
    pool.owner[1], pool.owner[2] = older, younger
    pool.jobs += [older, younger]
    pool.scale_out(5, 20, preempts=True)
    assert pool.jobs == [older] and pool.owner[2] is None and pool.free_at[2] == 22  # the 120 s grace
    assert sum(pool.inference) == 4  # the replica waits for the node to free
    pool.scale_out(5, 22, preempts=True)
    assert pool.inference == [4, 0, 1] and pool.jobs == [older]
