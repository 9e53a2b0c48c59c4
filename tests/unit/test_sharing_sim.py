"""The shared pool's simulation on small inputs (the script runs it at Rainier's size): chip-hours conserved, the
night's training and the morning's loss as the model says, the trace parser on the Azure trace's own rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuronfleet.sharing.simulation import SYNTHETIC_CURVE, TrainingModel, floor_for, hourly_demand, simulate_day
from neuronfleet_contract.pool_schedule import PoolSchedule
from scripts import sharing_sim

TRACE = Path(__file__).resolve().parents[1] / "data" / "azure_llm_trace" / "AzureLLMInferenceTrace_code-head.csv"


def two_nodes(**overrides) -> PoolSchedule:
    args = dict(pool="sim", time_zone="UTC", day=["08:00-20:00"], pool_devices=32, replica_devices=4,
                day_replicas=8, night_floor=2, checkpoint_deadline=30)
    return PoolSchedule.build(**(args | overrides))


@pytest.fixture(scope="module")
def flat() -> sharing_sim.DayResult:
    return simulate_day(two_nodes(), [0.5] * 24)


def test_chip_hours_are_conserved(flat) -> None:
    for figures in (flat.shared, flat.inference_only):
        assert figures.total == pytest.approx(32 * 24)


def test_a_flat_half_load_day(flat) -> None:
    # by day: 4 replicas x 4 chips serve; at night the floor (2 x 4 = 8 chips), training on the whole node left (16)
    assert flat.shared.inference == pytest.approx(12 * 16 + 12 * 8)
    assert flat.shared.training == pytest.approx(12 * 16)
    assert flat.shared.idle == pytest.approx(12 * 16 + 12 * 8)
    assert flat.shared.unserved == pytest.approx(12 * 8)  # 16 chips of demand over an 8-chip floor, 12 night hours
    assert flat.inference_only.inference == pytest.approx(24 * 16) and flat.inference_only.training == 0
    assert [h for h in flat.hourly if h[0] in (7, 8)] == [(7, 8, 16, 8), (8, 16, 0, 16)]


def test_the_morning_loss_with_and_without_the_signal(flat) -> None:
    # the night began at 20:00 the day before; 12 hours of hourly checkpoints, each written in 5 minutes: SIGTERM's
    # 120 s cannot finish one, so the work since 07:00 (60 minutes) is lost; signalled, the 2-minute margin
    assert flat.training_lost_without_signal == pytest.approx(16 * 60 / 60)
    assert flat.training_lost_with_signal == pytest.approx(16 * 2 / 60)
    assert flat.reclaim_seconds_with_signal == 30 * 60 + 15 and flat.reclaim_seconds_without_signal == 120
    quick = simulate_day(two_nodes(), [0.5] * 24, training=TrainingModel(checkpoint_write=1))
    assert quick.training_lost_without_signal == 0  # a write within the grace period saves the work


def test_the_floor_serves_the_busiest_night_hour() -> None:
    assert floor_for(SYNTHETIC_CURVE, ["07:00-23:00"], "UTC", 128) == 43  # 23:00 at 0.33 of 128
    s = two_nodes(day=["07:00-23:00"], night_floor=floor_for(SYNTHETIC_CURVE, ["07:00-23:00"], "UTC", 8))
    assert simulate_day(s, SYNTHETIC_CURVE).shared.unserved == 0


def test_a_bad_curve_is_refused() -> None:
    with pytest.raises(ValueError, match="24 fractions"):
        simulate_day(two_nodes(), [0.5] * 23)
    with pytest.raises(ValueError, match="24 fractions"):
        simulate_day(two_nodes(), [1.5] * 24)


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


def test_the_script_prints_labelled_figures(capsys) -> None:
    assert sharing_sim.main(["--nodes", "2", "--replica-chips", "4", "--time-zone", "UTC"]) == 0
    out = capsys.readouterr().out
    assert "SYNTHETIC demand curve" in out and "32 Trainium2 chips" in out and "shared (day/night)" in out


def test_the_script_refuses_a_bad_schedule(capsys) -> None:
    assert sharing_sim.main(["--nodes", "2", "--night-floor", "9"]) == 2
    assert "--night_floor: got 9; allowed: at most day_replicas (8)" in capsys.readouterr().err
    assert sharing_sim.main(["--nodes", "2", "--deadline", "600"]) == 2
    assert "--checkpoint_deadline_minutes: got 600" in capsys.readouterr().err


def test_the_page_and_the_readme_show_the_scripts_own_output(capsys) -> None:
    """docs/sharing.md carries the default run's output verbatim and the README its figures: neither goes stale."""
    root = Path(__file__).resolve().parents[2]
    assert sharing_sim.main([]) == 0
    out = capsys.readouterr().out.rstrip()
    assert out in (root / "docs" / "sharing.md").read_text()
    shared = next(line for line in out.splitlines() if line.startswith("shared (day/night)"))
    alone = next(line for line in out.splitlines() if line.startswith("inference only"))
    lost = next(line for line in out.splitlines() if line.startswith("training chip-hours lost"))
    readme = " ".join((root / "README.md").read_text().split())
    used, used_alone = round(float(shared.split()[-1].rstrip("%"))), round(float(alone.split()[-1].rstrip("%")))
    with_signal, without = (int(n.replace(",", "")) for n in lost.split(":")[1].split()[::5][:2])
    assert f"{used} % of chip-hours used instead of {used_alone} %" in readme
    assert f"{with_signal} instead of {without} training chip-hours lost" in readme
