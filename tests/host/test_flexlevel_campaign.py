"""`nandrig run flexlevel`: soft reads after wear and retention, stored as each level's bit errors, decoded by
the rate-8/9 LDPC code in the campaign's results, with a report section; refused before any wear when the chip
cannot move its references that far."""
import json

import pytest

from nandrig.host.kinds.flexlevel import summary_lines
from nandrig.host.storage.store import Store
from nandrig.host.views.report import write_report


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "flex.db")


def test_soft_reads_after_retention_give_each_level_its_frames_and_latency(run_cli, db, tmp_path):
    res = run_cli("run", "flexlevel", "--rig", "sim", "--db", db, "--chip", "mlc-3x", "--seed", "1", "--blocks", "3",
                  "--pe", "5000", "--retention", "1mo,1y", "--levels", "2", "--json")
    assert res.code == 0, res.err
    out = json.loads(res.out[res.out.index("{"):])
    assert out["code"] == {"n": 36864, "k": 32768, "rate": pytest.approx(8 / 9)} and out["offsets"] == [0, -4]
    conds = {(x["retention_h"], x["page_type"]): x for x in out["conditions"]}
    assert set(conds) == {(h, t) for h in (0.0, 720.0, 8760.0) for t in ("lower", "upper")}
    for x in conds.values():
        assert x["pe"] == 5000 and x["pages"] == 64
        first = x["levels"][0]
        assert first["frames"] == 30  # 32 test pages of 34,560 bits: 30 frames of 36,864
        # one level's LLR decision is the hard read: its errors are the page's RBER on the test half
        assert first["llr_rber"] == pytest.approx(x["rber"], rel=0.5, abs=2e-6)
        # every level read costs a sensing and a transfer: the second doubles the first
        if len(x["levels"]) > 1:
            assert x["levels"][1]["read_us"] == pytest.approx(2 * first["read_us"])
    assert conds[8760.0, "upper"]["rber"] > 10 * conds[0.0, "upper"]["rber"] > 0
    # the hard read decodes every frame here (RBER about 1e-3, far below the code's reach): one level is enough
    assert all(x["levels_decoding_all"] == 1 for x in conds.values())
    store = Store(db)
    try:  # each level's reads are their own checkpoint, at their offset: no summary pools two levels
        cps = store.db.execute('SELECT label, "offset", retention_h FROM checkpoints ORDER BY step').fetchall()
    finally:
        store.close()
    # ... and each carries the retention since programming: both waits, not the last one alone
    assert [tuple(r) for r in cps] == [(f"{h}h at {o:+d}", o, pytest.approx(float(h))) for h in (0, 720, 8760)
                                       for o in (0, -4)]
    page = (tmp_path / "report" / "index.html")
    write_report(db, tmp_path / "report")
    html = page.read_text()
    assert "flexlevel_1" in html and "verdict: every frame decoded, with hard reads alone at 6 of 6" in html


def assert_nothing_created(db) -> None:
    store = Store(db)
    try:
        assert store.campaigns() == []
    finally:
        store.close()


@pytest.mark.parametrize("chip, args, words", [
    ("mlc-3x", ("--levels", "5", "--step", "70"), ("5 sensing levels 70 steps apart", "offsets -140..+140", "-128..127")),
    ("mlc-small", ("--levels", "3", "--step", "101"), ("offsets -101..+101", "-100..100")),
    ("mlc-samsung", (), ("no read-retry table",)),
])
def test_sensing_offsets_the_chip_cannot_set_are_refused_before_any_wear(run_cli, db, chip, args, words):
    res = run_cli("run", "flexlevel", "--rig", "sim", "--db", db, "--chip", chip, "--seed", "2", "--blocks", "1-2",
                  "--pe", "1000", *args)
    res.assert_one_line_error(*words)
    assert_nothing_created(db)


def test_reduced_state_blocks_read_back_through_reducecode_with_fewer_errors(run_cli, db):
    """Half the wear level's blocks in reduced state (three levels a cell, ReduceCode), read with VR2 and VR3 at
    the middle of L1 and L3: at 10k P/E after a year their data bits err several times less than normal pages'
    (FlexLevel reports 2-9x)."""
    res = run_cli("run", "flexlevel", "--rig", "sim", "--db", db, "--chip", "mlc-3x", "--seed", "1", "--blocks",
                  "20-21", "--pe", "10000", "--retention", "1y", "--levels", "1", "--reduced-refs", "60,-60", "--json")
    assert res.code == 0, res.err
    out = json.loads(res.out[res.out.index("{"):])
    red = {x["retention_h"]: x for x in out["reduced"]}
    assert set(red) == {0.0, 8760.0}
    for x in red.values():
        assert x["pe"] == 10000 and x["data_bits"] == 64 * 51_840 and x["pairs_read_as_l3_l3"] == 0
    aged = red[8760.0]
    assert aged["normal_over_reduced"] > 2 and aged["data_rber"] > 0
    assert aged["normal_rber"] == pytest.approx(
        sum(x["rber"] for x in out["conditions"] if x["retention_h"] == 8760.0) / 2)
    # its data in LDPC frames from the one read: every other wordline's data for the LLRs, the rest decoded
    assert aged["frames"]["frames"] == 32 * 51_840 // 36_864 and aged["frames"]["failures"] == 0
    # a read of data costs both the wordline's pages in reduced state, one page at the levels needed in normal
    normal = {x["page_type"]: x["levels"][0]["read_us"] for x in out["conditions"] if x["retention_h"] == 8760.0}
    assert aged["normal_read_us"] == normal
    assert aged["read_us"] == pytest.approx(sum(normal.values()), rel=0.01)
    line = next(ln for ln in summary_lines(out) if "8760h" in ln and "reduced" in ln)
    assert f"a read {aged['read_us']:.0f} us" in line and f"upper page {normal['upper']:.0f} us" in line, line


@pytest.mark.parametrize("args, words", [
    (("--blocks", "1", "--reduced-refs", "60,-60"), ("half of each wear level's blocks",)),
    (("--blocks", "1-2", "--reduced-refs", "200,-60"), ("outside this chip's retry range",)),
    (("--blocks", "1-2", "--reduced-refs", "60"), ("--reduced-refs takes VR2,VR3",)),
    (("--blocks", "1-2", "--reduced-verify", "40,0,40"), ("needs --reduced-refs",)),
    (("--blocks", "1-2", "--reduced-refs", "60,-60", "--reduced-verify", "41,0,0"),
     ("PV1 +41", "outside this chip's verify range -40..40")),
    (("--blocks", "1-2", "--reduced-refs", "60,-60", "--reduced-verify", "40,40"), ("--reduced-verify takes PV1,PV2,PV3",)),
])
def test_reduced_state_it_cannot_give_is_refused_before_any_wear(run_cli, db, args, words):
    res = run_cli("run", "flexlevel", "--rig", "sim", "--db", db, "--chip", "mlc-3x", "--seed", "2", "--pe", "1000",
                  *args)
    res.assert_one_line_error(*words)
    assert_nothing_created(db)


NUNMA = {"pe": [2], "retention_h": [0.0], "levels": 1, "reduced_refs": [100, -20], "reduced_verify": [40, 0, 40],
         "blocks": [1, 2, 3, 4], "seed": 5, "oven": "virtual"}


def test_the_reduced_blocks_alone_are_programmed_at_the_moved_verify_levels():
    """NUNMA's setting is made just before the reduced blocks' erase and programs and set back to 0 after them:
    no CYCLE, and no other group's programs, run under it."""
    from nandrig.chip.geometry import Geometry
    from nandrig.host.kinds import steps
    from nandrig.host.kinds.flexlevel import FlexLevelParams, plan

    g = Geometry(2048, 64, 64, 64)
    p = FlexLevelParams.from_mapping({**NUNMA, "pe": [2, 3], "blocks": list(range(1, 9))})
    out = plan(p, g)
    setting = [i for i, s in enumerate(out) if isinstance(s, steps.SetVerify)]
    assert [out[i].offsets for i in setting] == [(40, 0, 40), (0, 0, 0)] * 2
    for on, off in zip(setting[0::2], setting[1::2]):
        between = out[on + 1:off]
        assert {type(s) for s in between} == {steps.Erase, steps.Program}
        assert {s.block for s in between} in ({3, 4}, {7, 8})  # each wear level's reduced half


def test_a_rig_restarted_between_the_setting_and_the_programs_gets_the_setting_again(tmp_path):
    """The verify levels (like the read references) live in the chip's features, which a power-up clears. A rig
    restart found before a step makes the plan's latest settings again, so the reduced blocks are still programmed
    at the moved levels, and the store says the rig restarted."""
    from nandrig.boards.sim.server import VirtualRig
    from nandrig.host.engine.campaigns import Runner, create
    from nandrig.host.kinds import steps
    from nandrig.host.link.rig import Rig
    from nandrig.host.link.transport import InProcessTransport
    from nandrig.virtual_chip.chip import VirtualChip

    vr = VirtualRig(VirtualChip("mlc-3x", 3))
    rig, store = Rig(InProcessTransport(vr)), Store(str(tmp_path / "s.db"))
    try:
        info = rig.info()
        chip_id = store.add_chip("mlc-3x:3", info, rig.read_param_page(), None)
        cid = create(store, rig, chip_id, "flexlevel", NUNMA, "restart")
        runner = Runner(store, rig, cid, None)
        first_program = next(i for i, s in enumerate(runner.steps)
                             if isinstance(s, steps.Program) and s.block == 3)

        def power_cut(i, step):
            if i == first_program:  # after the setting, before the first program under it
                vr.boot ^= 0x5A5A
                vr.at.chip.power_up()

        runner.on_step = power_cut
        assert runner.run().state == "done"
        events = [e for e in store.events(cid) if e[1] == "rig_restarted"]
    finally:
        store.close()
    wls = [vr.at.chip.blocks[b].wls for b in (3, 4)]
    assert all(tuple(w.verify) == (40, 0, 40) for blk in wls for w in blk.values())
    assert all(w.verify is None for w in vr.at.chip.blocks[1].wls.values())
    assert vr.at.chip.verify_offsets is None and vr.at.chip.read_offsets == (0, 0, 0)  # both set back at the end
    assert len(events) == 1
