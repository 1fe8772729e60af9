import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from nandrig.characterization.arrhenius import acceleration_factor
from nandrig.characterization.flares import FlaresAccess, FlaresConfig
from nandrig.characterization.flares_wire import rig_blob
from nandrig.characterization.rber import load_models, load_params
from nandrig.errors import NandrigError
from nandrig.host.engine.flares_validate import (AGED_H, REQ_RET_H, YEAR_H, SCENARIOS, Trace, Validator, calibrate, configure_live, live_tables,
                                          pages_under_test, plan, validate)
from nandrig.host.link.rig import Rig

KEYS = {"scenario", "page", "page_type", "wsize", "mix", "ops", "under_target_ops", "uncoverable_ops",
        "below_target_uber_max", "decode_failures", "mean_overprovision", "rewrite_alarms", "read_gain_vs_fixed50"}


@pytest.mark.slow
def test_flares_validate_json_and_report(run_cli, tmp_path):
    """Fresh blocks per scenario at the planned P/E, both page types, one model per page type."""
    db = tmp_path / "f.db"
    res = run_cli("run", "flares-validate", "--rig", "sim", "--scale", "0.05", "--json", "--db", db)
    assert res.code == 0, res.err
    j = json.loads(res.out)
    assert {r["scenario"] for r in j["runs"]} == set(SCENARIOS)
    assert len(j["runs"]) == 3 * 2 * 2 * 6 and {r["on_alarm"] for r in j["runs"]} == {"stops", "evaluates"} and {r["page_type"] for r in j["runs"]} == {"lower", "upper"}
    for r in j["runs"]:
        assert KEYS <= set(r) and set(r["read_gain_vs_fixed50"]) == {"videoserver", "webserver", "varmail"}
    used = [b for s in SCENARIOS for b in j["blocks"][s]] + j["blocks"]["calibration"]
    assert len(used) == len(set(used)) == 5 + 1 + 1 + 8  # no block serves two scenarios
    for s in SCENARIOS:
        assert j["wear"][s]["planned_pe"] == j["wear"][s]["actual_pe"]
    assert j["wear"]["operating-points"]["planned_pe"] == [10, 100, 1000, 3000, 10000]
    assert j["wear"]["long-retention"]["actual_pe"] == [5000]
    cw = j["wear"]["continuous-wear"]["actual_pe"]
    assert cw[0] == 1000 and cw[-1] == 10000
    assert {"lower", "upper"} == set(j["model"]) and "upper pages" in j["model"]["upper"]["model"]
    page = run_cli("report", "--db", db, "--out", tmp_path / "rep")
    assert page.code == 0
    text = (tmp_path / "rep" / "index.html").read_text()
    assert "FLARES validation" in text and "beside ours" in text and "flares_1_continuous-wear_upper.png" in text


def test_too_few_fresh_blocks_fail_before_any_wear(run_cli):
    run_cli("run", "flares-validate", "--rig", "sim", "--blocks", "0-9").assert_one_line_error(
        "needs 15 fresh good blocks")
    with Rig.open("sim", chip="mlc-small", seed=3) as rig:
        before = rig.time_ns()
        with pytest.raises(NandrigError, match="needs 15 fresh good blocks"):
            validate(rig, None, list(range(14)), (2,))
        # nothing calibrated (a year of retention), nothing cycled: block 0 still reads erased
        assert rig.time_ns() == before and rig.read(0, 0, raw=True).data == b"\xff" * rig.info().raw_page_bytes


def test_a_program_writes_the_whole_block_and_flares_clock_counts_the_bake_at_25c():
    params = load_params("flares-taco2014")
    with Rig.open("sim", chip="mlc-small", seed=3) as rig:
        pages = pages_under_test(rig.info().pages_per_block)
        v = Validator(rig, {False: params, True: params}, pages)
        tr = v.measure("operating-points", [1, 2], scale=0.01, wear=(5, 40))
        assert tr.planned_pe == tr.actual_pe == [5, 40]
        first_read = tr.ops.index(int(FlaresAccess.READ))
        # the read after a program sees the data one year (less an hour) old, as a 25 degC clock would
        age_s = tr.now_s[first_read] - tr.now_s[first_read - 1]
        assert abs(age_s - AGED_H * 3600) < 60
        rig_age_h = AGED_H / acceleration_factor(125.0)
        assert rig_age_h < 1.0  # while the rig's own clock moved minutes
        last = v.seed * 1_000_003 + v.programs  # every page of the block holds the last program's pattern
        assert sum(c.errors for c in rig.read(2, 0, seed=last).codewords) < 50
        assert sum(c.errors for c in rig.read(2, 0, seed=last + 1).codewords) > 1000
        assert tr.column("errors", 0).shape == tr.column("errors", 1).shape == (len(tr.ops),)


@pytest.mark.parametrize("told", [True, False])
def test_the_rigs_flares_ages_data_by_the_bake_it_is_told_of(told):
    """On the rig, a program's retention is a bake (minutes of the rig's clock) and FLARES_CLOCK tells the rig's
    FLARES the years it stood for: data baked 20 years' worth is past what its t protects, and a read raises the
    rewrite alarm from its age alone (its errors are below half its t); untold, FLARES takes it for hours old."""
    sent = rig_blob(load_models("mlc-3x-demo"))
    live = FlaresConfig(guarded=True)
    with Rig.open("sim", chip="mlc-small", seed=3) as rig:
        live_tables(rig, sent, lambda s: None)
        configure_live(rig, live, sent)
        pages = pages_under_test(rig.info().pages_per_block)
        v, tr = Validator(rig, None, pages, live=live), Trace(pages)
        start = rig.time_ns()
        v._start_point(tr, 1, 0, 3000, 20 * YEAR_H)
        assert (rig.time_ns() - start) / 3.6e12 < 4  # the rig's clock: hours
        assert abs(v.bake_credit_s - 20 * YEAR_H * 3600) < 3600 * 4  # FLARES': twenty years
        assert rig.flares_clock(v.bake_credit_s if told else 0) == (v.now_s() if told else v.now_s() - v.bake_credit_s)
        v._read(tr, 1, 0)
    assert all(2 * e < t for e, t in zip(tr.errors[-1], tr.t_used[-1]))  # a page's errors: below half its t
    assert tr.alarm[-1] == ((True, True) if told else (False, False))


def test_targets_beyond_the_table_are_uncoverable_never_met():
    """An operation whose measured RBER needs more than t_max is counted apart, not as met or as under."""
    params = load_params("flares-taco2014")
    with Rig.open("sim", chip="mlc-small", seed=3) as rig:
        v = Validator(rig, {False: params, True: params}, (2,))
        tr = Trace((2,), ops=[1, 0, 0, 0], errors=[(0,), (5_000,), (1,), (1,)], now_s=[0, 1, 2, 3],
                   pe=[9000] * 4, point=[0, 0, 1, 1], read_busy_ns=[1] * 3, prog_busy_ns=[1])
        target, rber = v.targets(tr, 0)
        assert list(target[:2]) == [v.table.t_max + 1] * 2 and target[2] <= v.table.t_max
        none = np.zeros(4, bool)
        out = v.outcome(tr, 0, target, rber, [v.table.t_max] * 4, none, none, [])
        failed = np.array([False, True, False, True])  # one read beyond reach failed, one within it
        fails = v.outcome(tr, 0, target, rber, [v.table.t_max] * 4, failed, none, [])
        # against an oracle: the operations it covers (t 1..t_reach), the policy's t there, and those below it
        tr.oracle_t = [(3,), (3,), (0,), (v.t_reach + 1,)]
        oracle = v.outcome(tr, 0, target, rber, [2, 4, 5, 9], none, none, [])
    assert out["uncoverable_ops"] == 2 and out["under_target_ops"] == 0
    assert (fails["decode_failures"], fails["uncoverable_failures"]) == (1, 1)  # the policy's miss, and the reach's
    assert len(out["below_target_uber"]) == 2 and out["uncoverable_uber_max"] > 1e-11
    assert out["below_target_uber_max"] == 0.0  # the worst of those under target: none was
    assert out["mean_oracle_t"] is None and out["under_oracle_ops"] is None
    assert (oracle["oracle_ops"], oracle["mean_oracle_t"], oracle["mean_t_where_oracle"],
            oracle["under_oracle_ops"]) == (2, 3.0, 3.0, 1)


def test_a_read_past_the_retention_its_t_was_written_for_is_due_a_refresh_not_under_target():
    """The policy's promise is the retention its tables give the t it wrote at the data's wear, and at least the
    retention target: a read within it below its target t is under target; one past it is counted apart (its
    decode failure, and the program of its data, too)."""
    params = load_params("flares-taco2014")
    year = int(REQ_RET_H * 3600)
    with Rig.open("sim", chip="mlc-small", seed=3) as rig:
        v = Validator(rig, {False: params, True: params}, (2,))
        ft = v.tables[v.upper[0]]
        t = next(t for t in range(ft.t_min, ft.t_max) if (ft.max_ret_seconds(t, 3000) or 0) > year)
        limit = ft.max_ret_seconds(t, 3000)
        short = next(t for t in range(ft.t_min, ft.t_max) if 0 < (ft.max_ret_seconds(t, 3000) or 0) < year)
        tr = Trace((2,), ops=[1, 0, 0, 0, 1, 0], errors=[(0,), (10,), (10,), (10,), (0,), (10,)],
                   now_s=[0, limit - 60, limit + 60, limit + 120, limit + 200, limit + 200 + year - 60],
                   pe=[3000] * 6, point=[0] * 6, read_busy_ns=[1] * 4, prog_busy_ns=[1] * 2)
        target, rber = v.targets(tr, 0)
        chosen = [t] * 4 + [short] * 2  # the second program promised less than the target: its read is a miss
        assert all(np.array(chosen) < target) and max(target) <= v.t_reach
        failed = np.array([False, False, False, True, False, False])
        out = v.outcome(tr, 0, target, rber, chosen, failed, np.ones(6, bool), [2])  # an alarm at the first
    assert list(v.past_retention(tr, 0, chosen)) == [True, False, True, True, False, False]
    assert (out["under_target_ops"], out["past_retention_ops"], out["past_retention_under_target"]) == (3, 3, 3)
    assert (out["decode_failures"], out["past_retention_failures"]) == (0, 1)
    assert out["first_below_target_op"] == 1 and len(out["below_target_uber"]) == 3
    assert (out["past_retention_reads"], out["past_retention_flagged"]) == (2, 2)  # the alarm lasts to the next program


def test_flares_validate_bad_wordline(run_cli):
    run_cli("run", "flares-validate", "--rig", "sim", "--chip", "mlc-small", "--wordline", "99"
            ).assert_one_line_error("wordline 99")


def test_flares_in_the_rig_run_and_report(run_cli, tmp_path):
    """--on-rig: the rig picks t and decodes; its failures are the decoder's, its t never above its cap."""
    db = tmp_path / "f.db"
    res = run_cli("run", "flares-validate", "--rig", "sim", "--chip", "mlc-small", "--on-rig", "--wsize", "5",
                  "--mix", "1", "--scale", "0.02", "--json", "--db", db)
    assert res.code == 0, res.err
    j = json.loads(res.out)
    assert j["flares_in_rig"] and j["codeword_bytes"] == 2048 and "upper pages" in j["model"]["upper"]["model"]
    assert len(j["blocks"]["calibration"]) == 8 and j["rig_tables"]["models"] == 2
    assert [(r["scenario"], r["page_type"], r["wsize"], r["mix"]) for r in j["runs"]] == [
        (s, kind, 5, 1.0) for s in SCENARIOS for kind in ("lower", "upper")]
    assert j["t_reach"] == 26  # mlc-small's spare holds parity for t <= 26: a target above it is beyond reach
    for r in j["runs"]:
        assert KEYS <= set(r) and 1 <= r["mean_t"] <= 26
    page = run_cli("report", "--db", db, "--out", tmp_path / "rep")
    assert page.code == 0 and "flares_1_operating-points_lower.png" in (tmp_path / "rep" / "index.html").read_text()


def test_flares_in_the_rig_with_tables_sent_from_a_fit(run_cli):
    """--on-rig --params: the rig decides with tables made from that fit (per page type), sent at run time."""
    res = run_cli("run", "flares-validate", "--rig", "sim", "--chip", "mlc-small", "--on-rig", "--params",
                  "mlc-3x-demo", "--scale", "0.02", "--json", "--no-density-control")  # both page types throughout
    assert res.code == 0, res.err
    j = json.loads(res.out)
    sent = rig_blob(load_models("mlc-3x-demo"))
    assert j["rig_tables"]["crc"] == f"{sent.crc:08x}" and "(lower, upper pages)" in j["model"]["model"]
    assert "calibration" not in j["blocks"]
    t = {(r["scenario"], r["page_type"]): r["mean_t"] for r in j["runs"]}
    assert t["continuous-wear", "upper"] > t["continuous-wear", "lower"]  # the upper pages' model asks more


def test_a_rig_that_lost_its_tables_gets_them_again():
    sent = rig_blob(load_models("mlc-3x-demo"))
    with Rig.open("sim", chip="mlc-small", seed=3) as rig:
        live_tables(rig, sent, lambda s: None)
        rig.flares_tables(None)  # as after a power cycle
        configure_live(rig, FlaresConfig(), sent)
        assert rig.flares_config(FlaresConfig()).tables.crc == sent.crc


@pytest.mark.parametrize("args, message", [
    (["--wsize", "5"], "use them with --on-rig"),
    (["--on-rig", "--params", "no-such-set"], "unknown parameter set"),
])
def test_flares_in_the_rig_options_are_checked(run_cli, args, message):
    res = run_cli("run", "flares-validate", "--rig", "sim", *args)
    assert res.code != 0 and message in res.err and "Traceback" not in res.err


@pytest.mark.slow
def test_continuous_wear_on_fresh_blocks_per_page_type():
    """3,000 operations from 1,000 to 10,000 P/E on a fresh block, reads at the end of the protected year: with the
    evaluation run through rewrite alarms FLARES (WSIZE 10, MIX 0.5) never falls below either page type's target;
    with the paper's rule (an alarm ends the evaluation) the upper page's t freezes and it does."""
    with Rig.open("sim", chip="mlc-3x", seed=0) as rig:
        pages = pages_under_test(rig.info().pages_per_block)
        models, _ = calibrate(rig, list(range(7, 15)))
        v = Validator(rig, models, pages)
        tr = v.measure("continuous-wear", [6], scale=0.3)
        assert tr.planned_pe == tr.actual_pe and tr.actual_pe[0] == 1000 and tr.actual_pe[-1] == 10_000
        for i in range(len(pages)):
            target, rber = v.targets(tr, i)
            through = v.replay(tr, i, target, rber, wsize=10, mix_pm=500, evaluate_on_alarm=True)
            paper = v.replay(tr, i, target, rber, wsize=10, mix_pm=500)
            assert through["ops"] == 3000 and through["uncoverable_ops"] == 0
            assert through["under_target_ops"] == 0 and through["decode_failures"] == 0
            if v.upper[i]:  # the lower page's look-ahead t stays clear of the alarm; the upper page's does not
                assert paper["under_target_ops"] > 1000 and paper["rewrite_alarms"] > 100



def test_a_law_the_data_do_not_constrain_gives_way_to_one_they_bound():
    """mlc-small die 0's upper pages: the log retention law wins the AIC but leaves its time constant loose (an
    infinite band), so the calibration bounds the power law instead, and says why; die 7's log law stands."""
    for seed, law in ((0, "power"), (7, "log")):
        with Rig.open("sim", chip="mlc-small", seed=seed) as rig:
            info = rig.info()
            bad = set(rig.scan_bad(0, info.blocks))
            models, about = calibrate(rig, plan([b for b in range(info.blocks) if b not in bad], True)["calibration"],
                                      bound=0.999)
        upper = about["upper"]
        assert upper["law"] == law and 1.0 < upper["bound"]["factor"] < 100.0
        assert upper.get("law_chosen", "").startswith("the log retention law (lower AIC)") == (law == "power")
        assert 0 < models[True].rber(10_000, 8760.0) < 1e-2


@pytest.mark.slow
def test_with_its_database_the_validation_wears_only_free_fresh_blocks_and_records_it(run_cli, tmp_path):
    """flares-validate --db: the chip's record gets the P/E the chip really took; blocks a campaign holds or
    that carry wear are refused from the database before any rig is opened; by default they are passed over."""
    import glob

    from nandrig.virtual_chip.chip import VirtualChip
    from nandrig.boards.sim.state_file import load_state

    db = tmp_path / "f.db"
    base = ("run", "flares-validate", "--rig", "sim", "--scale", "0.01", "--params", "flares-taco2014", "--db", db)
    assert run_cli("run", "endurance", "--rig", "sim", "--db", db, "--blocks", "2", "--cycles", "5").code == 0
    r = run_cli(*base, "--json")
    assert r.code == 0, r.err
    used = {int(b) for b in json.loads(r.out)["block_wear"]}
    assert 2 not in used and len(used) == 7  # the endurance campaign's worn block passed over
    chip = VirtualChip.from_state(load_state(glob.glob(str(tmp_path / "f.db.rigs" / "*"))[0])["chip"])
    con = sqlite3.connect(db)
    recorded = dict(con.execute("SELECT block, pe FROM blocks WHERE pe > 0"))
    con.close()
    assert recorded == {b: chip.pe_count(b) for b in used | {2}}  # every cycle the chip took, on record
    state = glob.glob(str(tmp_path / "f.db.rigs" / "*"))[0]
    before = Path(state).read_bytes()
    run_cli(*base, "--blocks", f"{min(used)}-{min(used) + 20}").assert_one_line_error(f"block {min(used)}", "fresh")
    assert Path(state).read_bytes() == before  # refused before the rig was opened


def test_density_control_runs_a_block_beyond_reach_as_pslc_from_its_next_erase(run_cli):
    """mlc-small's spare gives t <= 14 per 1 KB codeword: the upper page goes beyond reach early in continuous wear.
    FLARES in the rig says so (BEYOND_REACH); from the block's next erase only its lower pages are written (at the
    rig's strongest t, outside FLARES), the upper page is out of service, and every P/E is still counted."""
    # guarded FLARES: the paper's FLARES stops evaluating at the rewrite alarms of a page aged by the rig's clock, so
    # it never finds the page beyond reach (its reads then fail to decode: docs/flares.md)
    args = ("run", "flares-validate", "--rig", "sim", "--chip", "mlc-small", "--on-rig", "--params", "mlc-3x-demo",
            "--scale", "0.02", "--policy", "guarded", "--json")
    on, off = (json.loads(run_cli(*args, *extra).out) for extra in ((), ("--no-density-control",)))
    runs = {(r["scenario"], r["page_type"]): r for r in on["runs"]}
    sw = on["density_control"]["continuous-wear"]["switches"]
    assert sw and sw[0]["from"] == "mlc" and sw[0]["to"] == "pslc"
    upper, lower = runs["continuous-wear", "upper"], runs["continuous-wear", "lower"]
    assert upper["first_beyond_reach_op"] < sw[0]["op"]  # the decision came first, the switch at the next erase
    total = 20 * 10  # 20 operating points at scale 0.02, a program and nine reads each; the lower page held them all
    assert upper["ops"] == sw[0]["op"] and upper["ops"] + upper["not_in_service_ops"] == total
    assert lower["ops"] == total and lower["pslc_ops"] == total - sw[0]["op"] and lower["decode_failures"] == 0
    assert on["wear"]["continuous-wear"]["actual_pe"][-1] == 10000  # pSLC cycles count as P/E like any other
    assert off["density_control"] is None
    assert all(r["not_in_service_ops"] == 0 and r["pslc_ops"] == 0 for r in off["runs"])
    assert {r["scenario"]: r["beyond_reach_decisions"] for r in off["runs"] if r["page_type"] == "upper"}[
        "continuous-wear"] > 0  # without density control the rig keeps saying so, and the page stays beyond reach
