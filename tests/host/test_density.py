"""`nandrig run density`: MLC and pseudo-SLC blocks of one chip side by side, and what the campaign reports."""
import json

import pytest

from nandrig.virtual_chip.profile import load_profile
from nandrig.chip.geometry import page_map
from nandrig.host.storage.store import Store


@pytest.fixture(scope="module")
def density(tmp_path_factory):
    from nandrig.cli import main

    db = tmp_path_factory.mktemp("density") / "d.db"
    args = ["run", "density", "--rig", "sim", "--chip", "mlc-small", "--seed", "4", "--db", str(db),
            "--blocks", "2-9", "--checkpoints", "100,1000,10000", "--times", "1y", "--json"]
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    return json.loads(out.getvalue()), db


def test_each_mode_is_measured_at_every_checkpoint_fresh_and_after_retention(density):
    res, _ = density
    assert res["state"] == "done" and res["blocks"] == {"mlc": [2, 3, 4, 5], "pslc": [6, 7, 8, 9]}
    assert [(r["pe"], r["retention_h"]) for r in res["checkpoints"]] == \
           [(pe, h) for pe in (100, 1000, 10000) for h in (0.0, 8760.0)]
    for r in res["checkpoints"]:
        assert r["pslc"]["upper"] is None and r["pslc"]["bits"] == r["mlc"]["bits"] // 2  # lower pages only
        # pSLC's wide margins: fewer errors than MLC's at the same P/E, and its 95 % upper limit below MLC's rate
        assert r["pslc"]["errors"] <= r["mlc"]["errors"]
    late = res["checkpoints"][-1]
    assert late["mlc"]["errors"] > 100 and late["rber_ratio_95_upper"] < 0.01


def test_pslc_programs_at_the_lower_page_speed_and_reads_at_one_reference(density):
    res, _ = density
    t = load_profile("mlc-small").timing
    mean_page = (t.t_prog_lsb_us + t.t_prog_msb_us) / 2
    fresh = [r for r in res["checkpoints"] if not r["retention_h"]]
    for r in fresh:
        assert r["pslc"]["tprog_us"] == pytest.approx(r["mlc"]["tprog_lower_us"], rel=0.15)
        assert r["tprog_ratio"] == pytest.approx(t.t_prog_lsb_us / mean_page, rel=0.15)
        assert r["tr_ratio"] == pytest.approx(t.t_r_lsb_us / ((t.t_r_lsb_us + t.t_r_us) / 2), rel=0.05)
    # MLC program time falls with wear (charge trapping); a pSLC block ages ten times slower
    assert fresh[-1]["tprog_ratio"] > fresh[0]["tprog_ratio"]


def test_every_cycle_is_counted_in_both_modes(density):
    res, db = density
    store = Store(db)
    try:
        rows = dict(store.db.execute("SELECT block, pe FROM blocks WHERE block BETWEEN 2 AND 9"))
        c = store.campaigns()[0]
        ops = store.op_times(c.id)
    finally:
        store.close()
    worn = {b for bs in res["worn_out"].values() for b in bs}
    assert all(pe == 10000 for b, pe in rows.items() if b not in worn)
    lower = sum(1 for p in range(32) if not page_map(p, 32)[1])
    per_block = {b: sum(1 for o in ops if o.block == b and o.op == "program" and o.pe == 10000) for b in range(2, 10)}
    assert {b: n for b, n in per_block.items() if b not in worn} == \
           {b: (32 if b < 6 else lower) for b in range(2, 10) if b not in worn}
