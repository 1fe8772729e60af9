import json
import sqlite3

import numpy as np
import pytest

from nandrig.errors import NandrigError
from nandrig.host.views.report import write_report
from nandrig.host.views.export import export_rows
from nandrig.host.storage.store import SCHEMA_VERSION, Store


@pytest.fixture
def db(tmp_path):
    return tmp_path / "bench.db"


def run(run_cli, db, *args, chip="mlc-small", seed="2"):
    res = run_cli("run", *args, "--rig", "sim", "--db", db, "--chip", chip, "--seed", seed)
    assert res.code == 0, res.err
    return res


def rows(db, cid):
    store = Store(db)
    try:
        return export_rows(store, store.campaign(cid))
    finally:
        store.close()


def test_every_kind_runs_and_measures_the_expected_physics(run_cli, db, tmp_path):
    run(run_cli, db, "endurance", "--blocks", "1-2", "--cycles", "3000", "--step", "1000")
    run(run_cli, db, "retention", "--blocks", "3-6", "--wear", "2000,10000", "--times", "1d,1mo,1y")
    run(run_cli, db, "read-disturb", "--blocks", "7-7", "--reads", "8000000", "--points", "4")
    run(run_cli, db, "program-disturb", "--blocks", "8-8", "--page", "9", "--repeats", "2,20")
    run(run_cli, db, "latency", "--blocks", "10-10", "--checkpoints", "1,10000")
    run(run_cli, db, "vth", "--blocks", "11-12", "--pe", "10000", "--retention", "1y", "--offsets=-60:10:10")

    endurance = rows(db, 1)
    assert [r["pe"] for r in endurance] == [1, 10, 100, 1000, 2000, 3000]
    retention = rows(db, 2)
    for pe in (2000, 10000):
        series = [r["errors"] for r in retention if r["pe"] == pe]
        assert len(series) == 4 and series[-1] > series[0] and series[-1] == max(series)
    assert [r["retention_h"] for r in retention if r["pe"] == 10000] == [0, 24, 720, 8760]
    disturb = rows(db, 3)
    assert disturb[-1]["reads"] == 8_000_000 and disturb[-1]["errors"] > 5 * max(disturb[0]["errors"], 1)
    pd = rows(db, 4)
    assert pd[-1]["errors"] > pd[0]["errors"]
    store = Store(db)
    progs = [(p, busy) for op, b, p, pe, busy in store.op_times(5) if op == "program" and pe == 1]
    assert len(progs) == 32 and max(b for _, b in progs) / min(b for _, b in progs) > 4  # slow and fast pages
    store.close()
    vth = rows(db, 6)
    best = min(vth, key=lambda r: r["errors"])
    assert best["offset"] < 0  # charge loss moved the states down: lower references read better

    page = write_report(db, tmp_path / "report")
    text = page.read_text()
    for name in ("rber_vs_pe_1.png", "required_t_1.png", "pages_1.png", "latency_5.png", "read_disturb_3.png",
                 "program_disturb_4.png", "vth_6.png"):
        assert (tmp_path / "report" / name).stat().st_size > 5000 and name in text
    assert "Campaigns and provenance" in text and "nandrig-virtual" in text


def test_export_csv_feeds_fit(run_cli, db, tmp_path):
    run(run_cli, db, "retention", "--blocks", "1-6", "--wear", "1000,5000,10000", "--times", "1d,1w,1mo,3mo,1y")
    out = tmp_path / "r.csv"
    assert run_cli("export", "--db", db, "--campaign", "1", "--csv", "--out", out).code == 0
    header = out.read_text().splitlines()[0].split(",")
    assert {"pe", "retention_h", "rber", "bits"} <= set(header)
    res = run_cli("fit", "--csv", out, "--json")
    assert res.code == 0, res.err
    assert json.loads(res.out)["n_points"] >= 10


def test_blocks_are_reserved_and_bad_blocks_never(run_cli, db):
    run(run_cli, db, "endurance", "--blocks", "1-3", "--cycles", "10", "--step", "10", seed="3")
    # a finished campaign frees its blocks
    run(run_cli, db, "endurance", "--blocks", "2-4", "--cycles", "20", "--step", "10", seed="3")
    res = run_cli("run", "endurance", "--rig", "sim", "--db", db, "--chip", "mlc-small", "--seed", "3",
                  "--blocks", "8-10", "--cycles", "10")
    # mlc-small seed 3's factory bad block is left out, never erased
    assert res.code == 0 and "skipping factory bad block 9: 2 of 3 blocks left" in res.err
    store = Store(db)
    marks = dict(store.db.execute("SELECT block, factory_bad FROM blocks WHERE factory_bad IS NOT NULL"))
    pe9 = store.pe_counts(1, [9])[9]
    store.close()
    assert marks == {1: 0, 2: 0, 3: 0, 4: 0, 8: 0, 9: 1, 10: 0}  # scanned before reserving, nothing else touched
    assert pe9 == 0


def test_running_campaigns_never_share_blocks(db):
    from nandrig.host.engine.campaigns import create
    from nandrig.host.engine.chip_access import open_for_chip

    store = Store(db)
    rig, chip_id = open_for_chip(store, "sim", "mlc-small", 2)
    with rig:
        create(store, rig, chip_id, "endurance", {"blocks": [1, 2], "seed": 1, "cycles": 5, "checkpoints": [5]}, "sim")
        with pytest.raises(Exception, match="reserved by campaign 1"):
            create(store, rig, chip_id, "endurance", {"blocks": [2, 3], "seed": 1, "cycles": 5, "checkpoints": [5]}, "sim")
    store.close()


@pytest.mark.parametrize("args,words", [
    (["run", "endurance", "--blocks", "5-99"], ["outside"]),
    (["run", "endurance", "--blocks", "x"], ["--blocks"]),
    (["run", "endurance", "--blocks", "6-2"], ["after the last"]),
    (["run", "endurance", "--blocks", "1-2", "--cycles", "0"], ["--cycles"]),
    (["run", "endurance", "--blocks", "1-2", "--cycles", "100", "--checkpoints", "5,500"], ["checkpoints"]),
    (["run", "retention", "--blocks", "1-2", "--wear", "1,2,3"], ["3 wear levels need at least 3 blocks"]),
    (["run", "retention", "--blocks", "1-4", "--times", "1y,1d"], ["increase"]),
    (["run", "retention", "--blocks", "1-4", "--times", "soon"], ["duration"]),
    (["run", "vth", "--blocks", "1-2", "--offsets", "a:b"], ["--offsets"]),
    (["run", "teleport", "--blocks", "1-2"], ["no such command"]),
])
def test_bad_campaign_options(run_cli, db, args, words):
    res = run_cli(*args, "--rig", "sim", "--db", db, "--chip", "mlc-small")
    res.assert_one_line_error(*words)


def test_database_from_a_newer_nandrig_is_refused(run_cli, db, tmp_path):
    run(run_cli, db, "endurance", "--blocks", "1-1", "--cycles", "10", "--step", "10")
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    con.commit()
    con.close()
    for args in (["ls"], ["resume"], ["export", "--campaign", "1", "--csv"], ["report", "--out", str(tmp_path / "r")]):
        run_cli(*args, "--db", db).assert_one_line_error("newer nandrig")
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE x (a)")
    con.close()
    run_cli("ls", "--db", other).assert_one_line_error("not a nandrig database")


def test_resume_and_export_errors(run_cli, db):
    run(run_cli, db, "endurance", "--blocks", "1-1", "--cycles", "10", "--step", "10")
    res = run_cli("resume", "--db", db)
    assert res.code == 0 and "nothing to resume" in res.err
    run_cli("resume", "--db", db, "--campaign", "1").assert_one_line_error("done")
    run_cli("export", "--db", db, "--campaign", "7", "--csv").assert_one_line_error("no campaign 7")
    res = run_cli("ls", "--db", db)
    assert "endurance" in res.out and "done" in res.out


def test_manual_bake_records_what_the_operator_reports(tmp_path, monkeypatch):
    from nandrig.characterization.arrhenius import acceleration_factor
    from nandrig.host.engine.campaigns import create, run as run_campaign
    from nandrig.host.engine.chip_access import open_for_chip

    answers = iter(["120", "0.25"])
    monkeypatch.setattr("click.prompt", lambda *a, **k: float(next(answers)))
    store = Store(tmp_path / "m.db")
    rig, chip_id = open_for_chip(store, "sim", "mlc-small", 2)
    with rig:
        cid = create(store, rig, chip_id, "retention", {"blocks": [1, 2], "seed": 1, "wear": [3000], "times_h": [8760.0],
                                                        "oven": "manual", "temp_c": 125.0}, "sim")
        run_campaign(store, rig, cid, progress=False)
    row = store.db.execute("SELECT retention_h, actual_h, temp_c FROM checkpoints WHERE label='t=8760h'").fetchone()
    store.close()
    assert row[1] == 0.25 and row[2] == 120.0
    assert row[0] == pytest.approx(0.25 * acceleration_factor(120.0))


def test_wall_clock_oven_waits_only_what_is_left_and_says_when_it_reads(capsys):
    import time

    from nandrig.host.lab.oven import WallClockOven

    now = [1000.0]
    slept = []
    oven = WallClockOven(sleep=lambda s: (slept.append(s), now.__setitem__(0, now[0] + s)), clock=lambda: now[0])
    done = oven.wait({"equiv_h": 1.0, "actual_h": 1.0, "temp_c": 25.0}, {"started": 1000.0 - 1800.0})
    assert sum(slept) == pytest.approx(1800.0) and done["actual_h"] == 1.0
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(1000.0 + 1800.0))
    assert capsys.readouterr().err.strip() == f"retention wait of 1 h at 25 degC (= 1 h at 25 degC): next read at {when}"


@pytest.mark.parametrize("text, want", [
    ("5", [5]), ("1-3", [1, 2, 3]), ("0-2,7,4-5", [0, 1, 2, 4, 5, 7]), ("3-4, 4-5", [3, 4, 5]),
])
def test_block_lists_parse(text, want):
    from nandrig.host.engine.chip_access import format_blocks, parse_blocks

    assert parse_blocks(text, 64) == want
    assert parse_blocks(format_blocks(want), 64) == want


@pytest.mark.parametrize("text, message", [
    ("a-b", "takes ranges"), ("5-3", "after the last"), ("60-70", "outside the chip's blocks 0..63"), ("1,,2", "takes"),
])
def test_bad_block_lists_are_refused(text, message):
    from nandrig.host.engine.chip_access import parse_blocks

    with pytest.raises(NandrigError, match=message):
        parse_blocks(text, 64)


def test_factory_bad_blocks_in_a_range_are_left_out_and_said(run_cli, tmp_path):
    db = tmp_path / "m.db"
    r = run_cli("run", "endurance", "--rig", "sim", "--db", db, "--blocks", "26-29", "--cycles", "10")
    assert r.code == 0 and "skipping factory bad block 28: 3 of 4 blocks left" in r.err
    assert "on blocks 26-27,29 " in r.err
    r = run_cli("run", "endurance", "--rig", "sim", "--db", db, "--blocks", "28", "--cycles", "10")
    assert r.code == 1 and "every block of --blocks is a factory bad block (28)" in r.err


def test_vth_states_rebuilds_each_state_and_its_retention_shift(run_cli, db, tmp_path):
    """Each reference swept alone: every programmed state's centre where the chip put it, and after a year each
    moved down by its share of the chip's charge loss (L1 < L2 < L3), more at 10k P/E than at 1k."""
    from nandrig.virtual_chip.chip import VirtualChip

    res = run(run_cli, db, "vth-states", "--blocks", "1-4", "--pe", "1000,10000", "--retention", "1y",
              "--offsets=-96:96:4", "--json")
    out = json.loads(res.out[res.out.index("{"):])
    chip = VirtualChip("mlc-small", 2)
    ph = chip._physics(1)
    fresh = {x["pe"]: x["states"] for x in out["conditions"] if x["retention_h"] == 0}
    for pe, states in fresh.items():  # the means the chip programs to, seen from each state's reference
        for s, ref in (("L1", 0), ("L2", 2), ("L3", 2)):
            want = (ph.mu[int(s[1])] - ph.vref[ref]) * 1e3
            assert abs(states[s]["centre"] - want) < 30, (pe, s, states[s], want)  # coupling adds ~15 mV
        assert states["L0"]["centre"] is None  # the erased state lies below VR1's reach: only its tail is seen
    for x in out["shifts"]:
        model, _ = ph.retention(np.array([float(x["pe"])]), np.array([8760.0]))
        got = x["centre_shift"]
        assert got["L1"] > got["L2"] > got["L3"] and got["L3"] < 0, x
        for s in ("L1", "L2", "L3"):
            want = -ph.ret_k[int(s[1])] * model[0] * 1e3
            assert abs(got[s] / want - 1) < 0.1, (x["pe"], s, got[s], want)
    shifts = {x["pe"]: x["centre_shift"]["L3"] for x in out["shifts"]}
    assert shifts[10000] < 1.3 * shifts[1000]
    page = write_report(db, tmp_path / "report")
    assert (tmp_path / "report" / "vth_states_1.png").stat().st_size > 5000 and "vth_states_1.png" in page.read_text()


def test_vth_states_on_a_chip_without_a_retry_table_is_refused_before_anything_is_read(run_cli, db):
    res = run_cli("run", "vth-states", "--rig", "sim", "--db", db, "--chip", "mlc-samsung", "--seed", "2",
                  "--blocks", "1-2")
    assert res.code != 0 and "no read-retry table for SAMSUNG K9GBG08U0A" in res.err
    assert len(res.err.strip().splitlines()) == 1
    store = Store(db)
    try:
        assert store.campaigns() == [] and store.unscanned(1, [1, 2]) == [1, 2]
    finally:
        store.close()


def test_latency_meters_each_operation_within_twice_grupps_mlc_energy(run_cli, db):
    """Energy per data bit of each operation and page type (mlc-3x: 4 KiB pages, as Grupp's MLC parts), against
    Table 3's MLC range; idle power too."""
    res = run(run_cli, db, "latency", "--blocks", "1", "--checkpoints", "1", "--json", chip="mlc-3x", seed="1")
    out = json.loads(res.out[res.out.index("{"):])
    ops = out["checkpoints"][0]["ops"]
    assert set(ops) == {"erase", "program_lower", "program_upper", "read_lower", "read_upper"}
    for key, r in ops.items():
        assert r["within_2x"] and r["count"] == (1 if key == "erase" else 64), (key, r)
    assert ops["program_upper"]["nj_per_bit"] / ops["program_lower"]["nj_per_bit"] > 4  # slow pages cost more
    assert out["idle_grupp_mlc_mw"][0] <= out["idle_mw"] <= out["idle_grupp_mlc_mw"][1]


def test_wom_finds_which_pages_take_a_second_write(run_cli, db, tmp_path):
    """Lower pages of wordlines left without an upper page take the second write; a lower page written again
    under its upper page breaks the upper page; an upper page written again keeps wrong bits of its own."""
    res = run(run_cli, db, "wom", "--blocks", "1-3", "--pe", "1000", "--json")
    cls = json.loads(res.out[res.out.index("{"):])["classes"]
    assert cls["lower-alone"]["written twice"]["error_rate"] < 1e-4
    assert cls["lower-under-upper"]["written twice"]["error_rate"] < 1e-4
    assert cls["lower-under-upper"]["written once"]["error_rate"] > 0.05  # the upper pages above them
    assert cls["upper"]["written twice"]["error_rate"] > 0.05 and cls["upper"]["written once"]["error_rate"] < 1e-4
    assert cls["upper"]["written twice"]["pages"] == 16 and "written once" not in cls["lower-alone"]
    page = write_report(db, tmp_path / "report")
    assert (tmp_path / "report" / "wom_1.png").stat().st_size > 5000 and "wom_1.png" in page.read_text()
