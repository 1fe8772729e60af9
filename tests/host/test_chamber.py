"""Thermal chambers through pyvisa, against pyvisa-sim's simulated instruments (tests/host/chambers.yaml)."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from nandrig.characterization.arrhenius import acceleration_factor
from nandrig.errors import NandrigError
from nandrig.host.lab.chamber import ChamberConfig, ScpiChamber

SIM = f"{Path(__file__).with_name('chambers.yaml')}@sim"
FAST = {"visa_library": SIM, "soak_s": 600.0, "poll_s": 10.0, "reach_timeout_s": 3600.0}


class Clock:
    """Simulated time: sleeping advances it."""

    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


def chamber(name: str, clock: Clock, **settings) -> ScpiChamber:
    cfg = ChamberConfig.load(f"TCPIP::{name}.lab::INSTR", {**FAST, **settings})
    return ScpiChamber(cfg, sleep=clock.sleep, clock=clock)


def bake(equiv_h: float, temp_c: float) -> dict:
    return {"equiv_h": equiv_h, "actual_h": equiv_h / acceleration_factor(temp_c), "temp_c": temp_c}


def test_a_bake_soaks_first_then_runs_until_the_equivalent_time_is_reached():
    clock = Clock()
    ch = chamber("good", clock)
    meta = bake(2000.0, 125.0)
    start = clock()
    done = ch.wait(meta, {})
    assert done["temp_c"] == pytest.approx(125.0) and done["temp_min_c"] == done["temp_max_c"] == 125.0
    # the bake began after the 600 s soak and ends on the first poll past the plan
    assert clock() - start == pytest.approx(600.0 + done["actual_h"] * 3600.0)
    assert meta["equiv_h"] <= done["equiv_h"] < meta["equiv_h"] + acceleration_factor(125.0) * 10.0 / 3600.0
    assert done["actual_h"] == pytest.approx(meta["actual_h"], abs=10.0 / 3600.0)
    assert ch.measure() == 25.0  # back to ambient afterwards


def test_a_cool_chamber_bakes_longer_for_the_same_equivalent_time():
    """1 degC under the set point (inside tolerance): the Arrhenius integral of what it measured sets the end."""
    clock = Clock()
    done = chamber("cool", clock).wait(bake(2000.0, 125.0), {})
    assert done["temp_c"] == pytest.approx(124.0)
    assert done["equiv_h"] >= 2000.0
    ratio = acceleration_factor(125.0) / acceleration_factor(124.0)  # about 1.08 at 1.1 eV
    assert done["actual_h"] == pytest.approx(2000.0 / acceleration_factor(124.0), abs=10.0 / 3600.0)
    assert done["actual_h"] > 1.05 * 2000.0 / acceleration_factor(125.0) and ratio > 1.05


def test_a_chamber_that_never_reaches_its_set_point_bakes_nothing():
    clock = Clock()
    state: dict = {}
    with pytest.raises(NandrigError, match=r"did not hold 125 degC .*\(last 40 degC\): nothing recorded as baked"):
        chamber("cold", clock).wait(bake(100.0, 125.0), state)
    assert "bake_started" not in state and clock() - 1_000_000.0 >= 3600.0


def test_a_resumed_bake_continues_and_counts_the_unlogged_gap():
    clock = Clock()
    meta, state = bake(200_000.0, 125.0), {}  # 4.3 h at 125 degC
    saves = []

    def killed() -> None:  # the process dies after the bake's second save (a minute in)
        saves.append(json.loads(json.dumps(state)))  # what the store kept
        if len(saves) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        chamber("good", clock).wait(meta, state, killed)
    kept = saves[-1]
    before = kept["equiv_h"]
    clock.sleep(1800.0)  # half an hour with nobody watching
    resumed = []
    done = chamber("good", clock).wait(meta, kept, lambda: resumed.append(dict(kept)))
    assert done["unlogged_h"] == pytest.approx(0.5)  # from the last save to the resume
    assert resumed[0]["equiv_h"] - before == pytest.approx(acceleration_factor(125.0) * 0.5)
    assert meta["equiv_h"] <= done["equiv_h"] < meta["equiv_h"] + acceleration_factor(125.0) * 10.0 / 3600.0
    assert done["actual_h"] == pytest.approx(meta["actual_h"], abs=20.0 / 3600.0)  # the gap was baked time


def test_an_unlogged_gap_counts_at_the_cooler_end():
    """Saved at 125 degC, resumed on a chamber reading 124: the gap ages the data at 124 (the lower bound)."""
    clock, state = Clock(), {}
    saves = []

    def killed() -> None:
        saves.append(json.loads(json.dumps(state)))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        chamber("good", clock).wait(bake(200_000.0, 125.0), state, killed)
    kept = saves[-1]
    clock.sleep(3600.0)
    resumed = []
    chamber("cool", clock).wait(bake(200_000.0, 125.0), kept, lambda: resumed.append(dict(kept)))
    assert resumed[0]["equiv_h"] == pytest.approx(acceleration_factor(124.0) * 1.0)


def test_a_chamber_that_acknowledges_and_answers_in_fields():
    clock = Clock()
    ch = chamber("ack", clock, set_command="TEMP,S{c:.1f}", set_reply="OK", measure_query="MON?", ambient_c=None)
    done = ch.wait(bake(50.0, 85.0), {})
    assert done["temp_c"] == pytest.approx(85.0) and ch.measure() == 85.0  # left at its set point


@pytest.mark.parametrize("settings, message", [
    ({"visa_library": "/nonexistent/chambers.yaml@sim"}, "does not answer"),
    ({"measure_query": "MEAS:HUM?"}, "gave no temperature"),
    ({"set_command": "TEMP,S{c:.1f}", "set_reply": "OK"}, "refused"),
])
def test_instrument_faults_are_one_line(settings, message):
    with pytest.raises(NandrigError, match=message):
        chamber("good", Clock(), **settings).wait(bake(1.0, 85.0), {})


def test_settings_are_checked():
    with pytest.raises(NandrigError, match="unknown soak"):
        ChamberConfig.load("X", {"soak": 1})
    with pytest.raises(NandrigError, match="no {c}"):
        ChamberConfig.load("X", {"set_command": "SOUR:TEMP"})
    with pytest.raises(NandrigError, match="set_command"):
        ChamberConfig.load("X", {"set_command": "SOUR:TEMP {c:q}"})
    with pytest.raises(NandrigError, match="wrong kind"):
        ChamberConfig.load("X", {"poll_s": "10"})
    with pytest.raises(NandrigError, match="must be > 0"):
        ChamberConfig.load("X", {"poll_s": 0})


def _settings(tmp_path: Path, **extra) -> Path:
    f = tmp_path / "chamber.json"
    f.write_text(json.dumps({"visa_library": SIM, "soak_s": 0.05, "poll_s": 0.02, "reach_timeout_s": 0.3, **extra}))
    return f


def test_a_retention_campaign_through_a_chamber(run_cli, tmp_path):
    db = tmp_path / "r.db"
    res = run_cli("run", "retention", "--rig", "sim", "--chip", "mlc-small", "--db", db, "--blocks", "0-1",
                  "--wear", "10", "--times", "2h", "--oven", "scpi:TCPIP::cool.lab::INSTR", "--temp", "125",
                  "--chamber", _settings(tmp_path))
    assert res.code == 0, res.err
    with sqlite3.connect(db) as con:
        (ret, actual, temp, extra), = con.execute(
            "SELECT retention_h, actual_h, temp_c, extra FROM checkpoints WHERE retention_h > 0")
    bakes = json.loads(extra)["bakes"]
    assert temp == pytest.approx(124.0) and bakes[0]["chamber"] == "TCPIP::cool.lab::INSTR"
    assert ret >= 2.0 and actual == pytest.approx(bakes[0]["actual_h"])


def _retention(run_cli, db: Path, oven: str, settings: Path):
    return run_cli("run", "retention", "--rig", "sim", "--chip", "mlc-small", "--db", db, "--blocks", "0-1",
                   "--wear", "10", "--times", "2h", "--oven", oven, "--temp", "125", "--chamber", settings)


def test_a_chamber_that_never_reaches_its_set_point_stops_the_campaign_unbaked(run_cli, tmp_path):
    """The campaign stops at its wait (resumable), nothing recorded as baked."""
    db = tmp_path / "r.db"
    res = _retention(run_cli, db, "scpi:TCPIP::cold.lab::INSTR", _settings(tmp_path))
    assert res.code != 0 and "Traceback" not in res.err
    last = res.err.strip().splitlines()[-1]
    assert "did not hold 125 degC" in last and "nothing recorded as baked" in last
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM checkpoints WHERE retention_h > 0").fetchone() == (0,)
        assert con.execute("SELECT state FROM campaigns").fetchone() != ("done",)


@pytest.mark.parametrize("oven, words", [
    ("scpi:TCPIP::nobody.lab::INSTR", ("gave no temperature",)),
    ("scpi:", ("--oven",)),
])
def test_a_chamber_that_does_not_answer_is_refused_before_any_wear(run_cli, tmp_path, oven, words):
    db = tmp_path / "r.db"
    _retention(run_cli, db, oven, _settings(tmp_path)).assert_one_line_error(*words)
    if db.exists():
        with sqlite3.connect(db) as con:
            assert con.execute("SELECT COUNT(*) FROM campaigns").fetchone() == (0,)


def test_chamber_settings_need_a_chamber(run_cli, tmp_path):
    run_cli("run", "retention", "--rig", "sim", "--db", tmp_path / "r.db", "--blocks", "0-1", "--chamber",
            _settings(tmp_path)).assert_one_line_error("--chamber goes with --oven scpi")
