"""A rig that loses power mid-CYCLE: the served virtual rig (its chip saved as it wears, a restart a power-up)
killed while a campaign cycles, then started again over its state. The store must never count a round twice,
and what it cannot know it says: the chip's true P/E lies within [pe, pe + pe_uncertain]."""
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import pytest

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.state_file import load_state

BLOCKS = (1, 2)
CYCLES = 3000  # about 6 s of CYCLE on the exact path of mlc-small


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nandrig(*args, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "nandrig", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)


def serve(port: int, state) -> subprocess.Popen:
    proc = nandrig("sim", "serve", "--port", port, "--chip", "mlc-small", "--seed", 3, "--state", state, "--exact")
    assert "serving" in proc.stderr.readline()
    return proc


def in_flight_done(db) -> int:
    """Block-rounds the running CYCLE's last journaled progress report gave (0 before there is one)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            row = con.execute("SELECT context FROM campaigns").fetchone()
        finally:
            con.close()
    except sqlite3.Error:  # the database is still being made
        return 0
    return json.loads(row[0]).get("in_flight", {}).get("last", [0])[0] if row else 0


@pytest.mark.slow
@pytest.mark.parametrize("then", ["resume", "cancel"])
def test_a_rig_killed_mid_cycle_loses_no_round_and_counts_none_twice(then, tmp_path, run_cli):
    """Resumed, the campaign sends the rounds not confirmed anew and finishes; cancelled, it sends nothing more:
    the chip keeps the wear it had when the power went, within the store's bounds."""
    port, state, db = free_port(), tmp_path / "rig.state", tmp_path / "m.db"
    url = f"socket://127.0.0.1:{port}"
    rig = serve(port, state)
    run = nandrig("run", "endurance", "--rig", url, "--db", db, "--blocks", "1-2", "--cycles", CYCLES,
                  "--checkpoints", CYCLES)
    try:
        deadline = time.monotonic() + 60
        while in_flight_done(db) < 1000:  # well into the CYCLE, its progress journaled
            assert time.monotonic() < deadline and run.poll() is None, run.communicate()
            time.sleep(0.1)
        time.sleep(0.35)  # between two progress reports (0.5 s apart): the chip wears on beyond the last one
        os.killpg(rig.pid, signal.SIGKILL)  # the board loses power
        rig.wait()
        _, err = run.communicate(timeout=60)
        assert run.returncode == 1 and "Traceback" not in err and "lost the rig" in err, err

        # powered up over a fresh chip (its state file lost): refused, nothing recorded
        rig = serve(port, tmp_path / "other.state")
        before = db.read_bytes()
        run_cli("resume", "--db", db).assert_one_line_error("restarted without its state", "--state")
        os.killpg(rig.pid, signal.SIGTERM)
        rig.wait()
        assert db.read_bytes() == before

        rig = serve(port, state)  # powered up over its own chip
        if then == "resume":
            r = run_cli("resume", "--db", db)
            assert r.code == 0 and "campaign 1 done" in r.out + r.err, r.err
        else:
            r = run_cli("cancel", "--db", db, "--campaign", 1)
            assert r.code == 0, r.err
        os.killpg(rig.pid, signal.SIGTERM)
        rig.wait()
    finally:
        for p in (rig, run):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

    chip = VirtualChip.from_state(load_state(state)["chip"])
    con = sqlite3.connect(db)
    rows = con.execute("SELECT block, pe, pe_uncertain FROM blocks WHERE block IN (1, 2) ORDER BY block").fetchall()
    events = [d for k, d in con.execute("SELECT kind, detail FROM events") if k == "rig_restarted"]
    measured = con.execute("SELECT DISTINCT block, pe, pe_uncertain FROM measurements ORDER BY block").fetchall()
    con.close()
    beyond = []
    for block, pe, unc in rows:
        truth = chip.pe_count(block)
        assert pe <= truth <= pe + unc, (block, pe, unc, truth)  # none twice, none unaccounted
        assert (pe >= CYCLES) if then == "resume" else (truth < CYCLES)  # a cancel sends no round anew
        beyond.append(truth - pe)
    assert max(beyond) > 0  # the chip did wear past the last report: the bound was needed
    assert len(events) == 1 and "cut short" in events[0], events
    assert ("sent anew" if then == "resume" else "not sent (cancelled)") in events[0], events
    if then == "resume":
        assert measured == rows  # each measurement carries its block's P/E and its uncertainty
