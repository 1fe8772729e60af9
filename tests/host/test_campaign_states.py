"""Campaign states a user sees and acts on: running (live in a process), interrupted, failed, cancelled, done."""
import json

import pytest

from nandrig.errors import NandrigError
from nandrig.host.engine.campaigns import create
from nandrig.host.engine.chip_access import open_for_chip
from nandrig.host.storage.store import Store

CHIP = ("--chip", "mlc-small", "--seed", "2")


def interrupted_campaign(db) -> int:
    """A campaign created and never run: what a kill before its first step leaves."""
    store = Store(db)
    try:
        rig, chip_id = open_for_chip(store, "sim", "mlc-small", 2)
        with rig:
            return create(store, rig, chip_id, "endurance", {"blocks": [1, 2], "seed": 1, "cycles": 10,
                                                               "checkpoints": [10]}, "sim")
    finally:
        store.close()


def states(run_cli, db) -> dict[int, str]:
    r = run_cli("ls", "--db", db, "--json")
    assert r.code == 0, r.err
    return {c["id"]: c["state"] for c in json.loads(r.out)}


def test_ls_tells_a_live_campaign_from_an_interrupted_one_and_resume_leaves_the_live_one(run_cli, tmp_path):
    db = tmp_path / "m.db"
    cid = interrupted_campaign(db)
    assert states(run_cli, db) == {cid: "interrupted"}
    holder = Store(db)
    with holder.lock(cid):  # as the process running it holds it
        assert states(run_cli, db) == {cid: "running"}
        r = run_cli("resume", "--db", db)
        assert r.code == 0 and f"campaign {cid} is running in another process; left to it" in r.err
        r = run_cli("resume", "--db", db, "--campaign", cid)
        assert r.code == 1 and "running in another process (pid" in r.err
        r = run_cli("cancel", "--db", db, "--campaign", cid)
        assert r.code == 1 and "stop it (Ctrl-C) first" in r.err
    holder.close()
    assert run_cli("resume", "--db", db).code == 0
    assert states(run_cli, db) == {cid: "done"}


def test_cancel_frees_the_blocks_and_keeps_their_wear(run_cli, tmp_path):
    db = tmp_path / "m.db"
    cid = interrupted_campaign(db)
    store = Store(db)
    with store.tx() as tx:
        tx.execute("UPDATE blocks SET pe = 7 WHERE block = 1")  # wear an earlier step recorded
    store.close()
    r = run_cli("cancel", "--db", db, "--campaign", cid)
    assert r.code == 0 and "blocks 1-2 freed" in r.out
    assert states(run_cli, db) == {cid: "cancelled"}
    assert run_cli("resume", "--db", db).err.strip() == "nothing to resume"
    store = Store(db)
    try:
        assert store.pe_counts(1, [1]) == {1: 7}
        assert store.db.execute("SELECT COUNT(*) FROM blocks WHERE reserved_by IS NOT NULL").fetchone() == (0,)
    finally:
        store.close()
    r = run_cli("cancel", "--db", db, "--campaign", cid)
    assert r.code == 1 and "is cancelled; nothing to cancel" in r.err
    assert run_cli("run", "endurance", "--rig", "sim", *CHIP, "--db", db, "--blocks", "1-2", "--cycles", "10").code == 0


def test_a_step_the_rig_refuses_fails_the_campaign_so_resume_skips_it(run_cli, tmp_path):
    from nandrig.host.engine.campaigns import Runner
    from nandrig.host.link.rig import Rig
    from nandrig.protocol import REPLY_TYPE, Err, Frame

    db = tmp_path / "m.db"
    cid = interrupted_campaign(db)
    store = Store(db)
    try:
        with Rig.open("sim", chip="mlc-small", seed=2) as rig:
            runner = Runner(store, rig, cid, None)
            refusal = Frame(REPLY_TYPE, int(runner.steps[0].op), 1, int(Err.OUT_OF_RANGE), b"")
            with pytest.raises(NandrigError, match="OUT_OF_RANGE; campaign .* failed"):
                runner._apply(0, runner.steps[0], refusal)
    finally:
        store.close()
    assert states(run_cli, db) == {cid: "failed"}
    assert run_cli("resume", "--db", db).err.strip() == "nothing to resume"
    r = run_cli("resume", "--db", db, "--campaign", cid)
    assert r.code == 1 and "is failed; nothing to resume" in r.err


def test_a_page_outside_the_chip_is_refused_before_a_campaign_is_made(run_cli, tmp_path):
    db = tmp_path / "m.db"
    r = run_cli("run", "read-disturb", "--rig", "sim", *CHIP, "--db", db, "--blocks", "5", "--page", "400")
    assert r.code == 1 and "--page 400 is outside the chip's pages 0..31" in r.err
    assert states(run_cli, db) == {}


def test_a_simulated_chips_state_is_found_beside_the_database_from_any_folder(run_cli, tmp_path, monkeypatch):
    (tmp_path / "lab").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "lab")
    cid = interrupted_campaign("m.db")  # a relative path, as a user types it
    monkeypatch.chdir(tmp_path / "elsewhere")
    r = run_cli("resume", "--db", "../lab/m.db")
    assert r.code == 0, r.err
    store = Store(tmp_path / "lab" / "m.db")
    try:
        rig, chip_id = open_for_chip(store, "sim", "mlc-small", 2)
        with rig:  # the chip that campaign wore, not a fresh one from the current folder
            assert rig.t.rig.chip.pe_count(1) == 10
            again = create(store, rig, chip_id, "endurance", {"blocks": [3], "seed": 1, "cycles": 10,
                                                              "checkpoints": [10]}, "sim")
    finally:
        store.close()
    assert not (tmp_path / "elsewhere" / "m.db.rigs").exists()
    (tmp_path / "lab" / "m.db.rigs" / "mlc-small-seed2.state").unlink()
    run_cli("resume", "--db", "../lab/m.db", "--campaign", again).assert_one_line_error("state file", "missing")
    assert states(run_cli, "../lab/m.db") == {cid: "done", again: "interrupted"}  # kept for when it is back
    run_cli("run", "endurance", "--rig", "sim", *CHIP, "--db", "../lab/m.db", "--blocks", "4",
            "--cycles", "1").assert_one_line_error("history", "missing")
    # blocks a campaign holds are refused from the database alone, before any rig is opened
    run_cli("run", "endurance", "--rig", "sim", *CHIP, "--db", "../lab/m.db", "--blocks", "3",
            "--cycles", "1").assert_one_line_error("block 3", f"campaign {again}")


def test_ctrl_c_says_where_the_campaign_stands_and_resume_finishes_it(run_cli, tmp_path):
    import signal
    import sqlite3
    import subprocess
    import sys
    import time

    db = tmp_path / "m.db"
    proc = subprocess.Popen([sys.executable, "-m", "nandrig", "run", "endurance", "--rig", "sim", *CHIP,
                             "--db", str(db), "--blocks", "1", "--cycles", "20000", "--step", "10"],
                            stderr=subprocess.PIPE, text=True,
                            # as from a terminal: a runner (or a library in this process) may ignore SIGINT,
                            # and a child inherits an ignored signal
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    step = 0
    while step < 5:
        assert proc.poll() is None
        time.sleep(0.05)
        if not db.exists():  # a probe must not make the file the campaign is about to create
            continue
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
            step = (con.execute("SELECT step FROM campaigns").fetchone() or (0,))[0]
            con.close()
        except sqlite3.Error:
            pass
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130 and "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("nandrig: interrupted: campaign 1 at step ") and "nandrig resume --db" in last, err
    r = run_cli("resume", "--db", db)
    assert r.code == 0 and "campaign 1 done" in r.out


def test_looking_at_a_database_another_process_is_writing_changes_nothing(run_cli, tmp_path):
    """ls, export and report open the database read-only: they work while a writer holds it, write nothing and
    create nothing."""
    import sqlite3

    db = tmp_path / "m.db"
    r = run_cli("run", "endurance", "--rig", "sim", *CHIP, "--db", db, "--blocks", "1", "--cycles", "20")
    assert r.code == 0, r.err
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")  # a campaign's transaction in flight
    try:
        before = db.read_bytes()
        assert states(run_cli, db) == {1: "done"}
        r = run_cli("export", "--db", db, "--campaign", "1", "--csv")
        assert r.code == 0 and r.out.count("\n") > 1, r.err
        r = run_cli("report", "--db", db, "--out", tmp_path / "report")
        assert r.code == 0, r.err
        assert db.read_bytes() == before
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    store = Store(db, read_only=True)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.set_state(1, "running", "")
    finally:
        store.close()
    run_cli("ls", "--db", tmp_path / "none.db").assert_one_line_error("none.db")
    assert not (tmp_path / "none.db").exists()


def test_a_damaged_database_gets_one_line_and_nothing_written_into_it(run_cli, tmp_path):
    """A table's page overwritten (a bad sector, a copy cut short): writing commands refuse before a rig is taken,
    reading ones say it cannot be read; the file is left byte for byte as it was, for recovery."""
    import sqlite3

    db = tmp_path / "m.db"
    r = run_cli("run", "endurance", "--rig", "sim", *CHIP, "--db", db, "--blocks", "0-1", "--cycles", "2")
    assert r.code == 0, r.err
    con = sqlite3.connect(db)
    page_size, = con.execute("PRAGMA page_size").fetchone()
    root, = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'measurements'").fetchone()
    con.close()
    with open(db, "r+b") as f:  # a b-tree page header that claims cells the page does not have
        f.seek(page_size * (root - 1))
        f.write(bytes([0x0D, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 7]) + b"\xee" * 200)
    state = tmp_path / "m.db.rigs" / "mlc-small-seed2.state"
    before, state_before = db.read_bytes(), state.read_bytes()
    for args in (("run", "endurance", "--rig", "sim", *CHIP, "--db", db, "--blocks", "2", "--cycles", "1"),
                 ("resume", "--db", db), ("cancel", "--db", db, "--campaign", "1")):
        run_cli(*args).assert_one_line_error("database", "damaged", "nothing was written")
    for args in (("export", "--db", db, "--campaign", "1", "--csv"), ("report", "--db", db, "--out", tmp_path / "r")):
        run_cli(*args).assert_one_line_error("database", "malformed", "restore a copy")
    assert db.read_bytes() == before and state.read_bytes() == state_before  # no rig was opened
