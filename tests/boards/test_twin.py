"""A chip's digital twin (`nandrig sim profile --from-db`): fitted to campaigns on some of a die's blocks, it
answers held-out conditions on the others as the die does."""
from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from nandrig.characterization.twin import check_rber
from nandrig.host.storage.store import Store
from nandrig.host.views.export import export_rows
from nandrig.virtual_chip.chip import VirtualChip
from nandrig.virtual_chip.profile import load_profile

DIE = ("--chip", "mlc-3x", "--seed", "29")  # a die no other test uses
LABEL = "sim:mlc-3x:29"
HELD_OUT_RETENTION = ("retention", "--blocks", "32-61", "--wear", "2000,5000,8000", "--times", "1w,3mo,6mo")
HELD_OUT_LATENCY = ("latency", "--blocks", "62-63", "--checkpoints", "500,5000")
HELD_OUT_DISTURB = ("read-disturb", "--blocks", "78-83", "--pe", "6000", "--reads", "3000000", "--points", "4")


def _run(run_cli, db, *args, chip=DIE):
    r = run_cli("run", *args, "--rig", "sim", *chip, "--db", db)
    assert r.code == 0, r.err


def _ops(db, cid) -> tuple[dict, dict]:
    """Mean busy time per (operation, page type), and mean busy energy per operation."""
    store = Store(db, read_only=True)
    try:
        pm = store.page_map(1)
        times, energy = defaultdict(list), defaultdict(list)
        for o, e in store.op_energy(cid):
            kind = "" if o.op == "erase" else pm.page_type(o.page).name.lower()
            times[(o.op, kind)].append(o.busy_ns)
            energy[(o.op, kind)].append(e[0])
        return {k: float(np.mean(v)) for k, v in times.items()}, {k: float(np.mean(v)) for k, v in energy.items()}
    finally:
        store.close()


def _rows(db, cid) -> list[dict]:
    store = Store(db, read_only=True)
    try:
        return export_rows(store, store.campaign(cid), by_block=True)
    finally:
        store.close()


@pytest.mark.slow
def test_a_twin_fitted_on_blocks_0_31_answers_held_out_conditions_on_blocks_32_63(run_cli, tmp_path):
    db, twin_db, twin = tmp_path / "die.db", tmp_path / "twin.db", tmp_path / "twin.json"
    _run(run_cli, db, "latency", "--blocks", "0-1", "--checkpoints", "1,10000")
    _run(run_cli, db, "retention", "--blocks", "2-25", "--wear", "1000,3000,6000,10000", "--times", "1h,1d,1mo,1y")
    _run(run_cli, db, "read-disturb", "--blocks", "26-31", "--pe", "3000", "--reads", "3000000", "--points", "4")
    r = run_cli("sim", "profile", "--from-db", db, "--chip", LABEL, "--out", twin, "--campaign", "1",
                "--campaign", "2", "--campaign", "3", "--json")
    assert r.code == 0, r.err
    parts = {p["field"]: p for p in json.loads(r.out)["parts"]}
    assert parts["timing.t_prog_msb_us"]["ci95"] and "not identified" in parts["physics.mu"]["source"]
    # the block-to-block spread, from the blocks' scatter beyond counting noise: the die's own in its interval
    die = load_profile("mlc-3x")
    lo, hi = parts["variation.block_sigma"]["ci95"]
    assert lo <= die.variation.block_sigma <= hi, parts["variation.block_sigma"]
    # read disturb's size, from the read-disturb campaign: the die's own in its interval
    lo, hi = parts["physics.rd_shift"]["ci95"]
    assert lo <= die.physics.rd_shift <= hi, parts["physics.rd_shift"]
    # the die's own factory-bad blocks, as its scans found them (block 25 among 0-31), not a seed's draw
    assert json.loads(twin.read_text())["defects"]["factory_bad"] == sorted(
        b for b in range(32) if b in VirtualChip("mlc-3x", 29).factory_bad) == [25]

    _run(run_cli, db, *HELD_OUT_RETENTION)
    _run(run_cli, db, *HELD_OUT_LATENCY)
    _run(run_cli, db, *HELD_OUT_DISTURB)
    # the report runs the die's six campaigns again on the twin (kept: they are the twin's campaigns 1-6)
    r = run_cli("report", "--db", db, "--out", tmp_path / "rep", "--twin", twin, "--twin-db", twin_db)
    assert r.code == 0, r.err

    checks = check_rber(_rows(db, 4), _rows(twin_db, 4))
    table = "\n".join(f"{c.pe:>6} {c.retention_h:>7.0f} h {c.measured:.3e} {c.twin:.3e} z {c.z:+.2f}" for c in checks)
    assert len(checks) == 12
    within = sum(abs(c.z) <= 2 for c in checks)
    assert within >= 0.9 * len(checks), table
    # the report's section says the same, campaign by campaign, with a verdict
    page = (tmp_path / "rep" / "index.html").read_text()
    summary = page[page.index("against the measured campaigns"):]
    row = lambda cid: summary[summary.index(f"<tr><td>{cid}</td>"):].split("</tr>")[0]  # noqa: E731
    assert "held out" in row(4) and f"<td>{within} of 12</td>" in row(4) and "agrees" in row(4), row(4)
    assert "held out" in row(5) and "<td>5 of 5</td><td>5 of 5</td>" in row(5) and "agrees" in row(5), row(5)
    assert all("fitted to" in row(c) for c in (1, 2, 3)) and "agrees" in row(3)
    # read disturb at another wear on other blocks: its most read level as the die's (the fresh levels, a few
    # tens of errors, are where the twin reads high: the Vth placement it keeps generic)
    disturbed = check_rber(_rows(db, 6), _rows(twin_db, 6))
    assert "held out" in row(6) and abs(max(disturbed, key=lambda c: c.reads).z) <= 2, disturbed

    times, energy = _ops(db, 5)
    twin_times, twin_energy = _ops(twin_db, 5)
    assert set(times) == set(twin_times) == {("erase", ""), ("program", "lower"), ("program", "upper"),
                                             ("read", "lower"), ("read", "upper")}
    for k in times:
        assert abs(twin_times[k] / times[k] - 1) <= 0.02, (k, twin_times[k], times[k])
        assert abs(twin_energy[k] / energy[k] - 1) <= 0.05, (k, twin_energy[k], energy[k])

    # a twin of the twin: the training campaigns on the twin (the report's runs 1 and 2), fitted again, give back
    # the twin's own values
    again = tmp_path / "twin2.json"
    r = run_cli("sim", "profile", "--from-db", twin_db, "--chip", f"sim:{twin.resolve()}:0", "--out", again,
                "--campaign", "1", "--campaign", "2", "--campaign", "3", "--json")
    assert r.code == 0, r.err
    first, second = json.loads(twin.read_text()), json.loads(again.read_text())
    outside = [(p["field"], p["ci95"], first[p["field"].split(".")[0]][p["field"].split(".")[1]])
               for p in json.loads(r.out)["parts"] if p["field"].startswith(("timing.", "power.")) and p["ci95"]
               and not p["ci95"][0] <= first[p["field"].split(".")[0]][p["field"].split(".")[1]] <= p["ci95"][1]]
    assert len(outside) <= 1, outside  # 95 % intervals: one of a dozen may miss by chance
    spread = next(p for p in json.loads(r.out)["parts"] if p["field"] == "variation.block_sigma")
    assert spread["ci95"][0] <= first["variation"]["block_sigma"] <= spread["ci95"][1], spread
    from nandrig.virtual_chip.calibrate import GRID_H, GRID_PE, population_rber
    from nandrig.virtual_chip.profile import ChipProfile

    # the wear and retention laws (eq. 5) the data identify: the first twin's within the second's intervals
    laws = [p for p in second["twin"]["parts"] if p["field"].startswith("rber.") and p["ci95"]]
    assert len(laws) >= 3 and all(p["ci95"][0] <= parts[p["field"]]["value"] <= p["ci95"][1] for p in laws), laws
    # the physics' constants have no intervals; their RBER where the training measured (1,000-10,000 P/E, a day
    # to a year) comes back within 25 % (measured: 25 % at 1,000 P/E and a day, 11 % from a month on)
    pe, hours = (a.ravel() for a in np.meshgrid(GRID_PE[2:], GRID_H[1:]))
    p1, p2 = ChipProfile.from_mapping(first), ChipProfile.from_mapping(second)
    ratio = population_rber(p2.physics, p2, pe, hours) / population_rber(p1.physics, p1, pe, hours)
    assert np.all(np.abs(ratio - 1) <= 0.3), ratio

    # FLARES tables from the twin (the die's training retention campaign run on it, fitted per page type) give
    # the die's validation the verdict that tables from the die's own fit give it
    verdicts = {}
    for name, store, cid, blocks in (("direct", db, 2, "64-70"), ("twin", twin_db, 2, "71-77")):
        csv, params = tmp_path / f"{name}.csv", tmp_path / f"{name}-params.json"
        assert run_cli("export", "--db", store, "--campaign", cid, "--by-block", "--out", csv).code == 0
        r = run_cli("fit", "--csv", csv, "--save", params)
        assert r.code == 0, r.err
        r = run_cli("run", "flares-validate", "--rig", "sim", *DIE, "--db", db, "--params", params, "--blocks",
                    blocks, "--scale", "0.01", "--json")
        assert r.code == 0, r.err
        verdicts[name] = {t: (v["met"], v["mean_t"]) for t, v in json.loads(r.out)["verdict"]["page_types"].items()}
    direct, from_twin = verdicts["direct"], verdicts["twin"]
    assert set(direct) == {"lower", "upper"} and all(from_twin[t][0] == direct[t][0] for t in direct), verdicts
    # and they protect alike: the mean t written per page type within 10 % (measured: 4 % and 0.3 %)
    assert all(abs(from_twin[t][1] / direct[t][1] - 1) <= 0.1 for t in direct), verdicts


def test_a_database_without_the_campaigns_a_part_needs_names_them(run_cli, tmp_path):
    db = tmp_path / "lat.db"
    _run(run_cli, db, "latency", "--blocks", "0-1", "--checkpoints", "1", chip=("--chip", "mlc-small", "--seed", "8"))
    r = run_cli("sim", "profile", "--from-db", db, "--chip", "sim:mlc-small:8", "--out", tmp_path / "t.json")
    r.assert_one_line_error("nandrig run endurance", "nandrig run retention")
    run_cli("sim", "profile", "--from-db", db, "--chip", "nobody", "--out", tmp_path / "t.json"
            ).assert_one_line_error("no chip 'nobody'", "sim:mlc-small:8")
    run_cli("sim", "profile", "--from-db", db, "--chip", "sim:mlc-small:8", "--campaign", "7", "--out",
            tmp_path / "t.json").assert_one_line_error("campaign 7")
    assert not (tmp_path / "t.json").exists()


def test_the_report_refuses_a_twin_it_cannot_set_against_the_campaigns(run_cli, tmp_path):
    db = tmp_path / "lat.db"
    _run(run_cli, db, "latency", "--blocks", "0-1", "--checkpoints", "1", chip=("--chip", "mlc-small", "--seed", "8"))
    plain, other = tmp_path / "plain.json", tmp_path / "other.json"
    plain.write_text(json.dumps({"name": "plain"}))
    other.write_text(json.dumps({"name": "twin-x", "twin": {"chip": "sim:mlc-small:9", "campaigns": [1]}}))
    report = lambda *a: run_cli("report", "--db", db, "--out", tmp_path / "rep", *a)  # noqa: E731
    report("--twin", plain).assert_one_line_error("not a chip's twin", "nandrig sim profile --from-db")
    report("--twin", other).assert_one_line_error("twin twin-x is of chip sim:mlc-small:9", "sim:mlc-small:8")
    report("--twin", tmp_path / "none.json").assert_one_line_error("none.json")
    report("--twin", other, "--twin-db", db).assert_one_line_error("--twin-db", "new database")
    report("--twin", other, "--twin", other, "--twin-db", tmp_path / "t.db").assert_one_line_error("exactly one")
    assert not (tmp_path / "t.db").exists()
