"""SIGKILL a running endurance campaign at 20 random instants, resume each time: nothing lost, nothing twice."""
import random
import sqlite3
import subprocess
import sys
import time

import pytest

from nandrig.boards.sim.chip import VirtualChip
from nandrig.boards.sim.state_file import load_state

ARGS = ["endurance", "--rig", "sim", "--chip", "mlc-small", "--seed", "3", "--blocks", "1-6",
        "--cycles", "5000", "--step", "50"]


def nandrig(*args: str) -> list[str]:
    return [sys.executable, "-m", "nandrig", *args]


def outcome(db) -> tuple[str, dict, dict]:
    per_page = subprocess.run(nandrig("export", "--db", str(db), "--campaign", "1", "--csv", "--per-page"),
                              check=True, capture_output=True, text=True).stdout
    con = sqlite3.connect(db)
    pe_db = dict(con.execute("SELECT block, pe FROM blocks WHERE block BETWEEN 0 AND 7"))
    state = con.execute("SELECT state FROM campaigns WHERE id=1").fetchone()[0]
    sim_state = con.execute("SELECT sim_state FROM chips").fetchone()[0]
    con.close()
    chip = VirtualChip.from_state(load_state(sim_state)["chip"])
    pe_chip = {b: chip.pe_count(b) for b in pe_db}
    assert state == "done"
    return per_page, pe_db, pe_chip


def campaign_step(db) -> int | None:
    """The campaign's cursor, or None before it exists."""
    try:
        con = sqlite3.connect(db, timeout=1)
        try:
            row = con.execute("SELECT step FROM campaigns WHERE id=1").fetchone()
            return row[0] if row else None
        except sqlite3.Error:
            return None
        finally:
            con.close()
    except sqlite3.Error:
        return None


def wait_for_progress(db, proc, since: int | None) -> None:
    """Until the (re)started process has done a step: a kill during interpreter start-up tests nothing."""
    while (step := campaign_step(db)) is None or (since is not None and step <= since):
        assert proc.poll() is None, "the campaign finished before it could be killed"
        time.sleep(0.002)


@pytest.mark.slow
def test_sigkill_at_20_instants_then_resume_equals_an_uninterrupted_run(tmp_path):
    ref_db = tmp_path / "ref" / "run.db"
    ref_db.parent.mkdir()
    subprocess.run(nandrig("run", *ARGS, "--db", str(ref_db)), check=True, capture_output=True)
    reference = outcome(ref_db)

    db = tmp_path / "killed" / "run.db"
    db.parent.mkdir()
    rng = random.Random(7)
    proc = subprocess.Popen(nandrig("run", *ARGS, "--db", str(db)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kills = 0
    mid_step = 0
    since = None
    for _ in range(20):
        wait_for_progress(db, proc, since)
        time.sleep(rng.uniform(0.0, 0.03))  # a random instant within the next step or two
        if proc.poll() is not None:
            break
        proc.kill()
        proc.wait()
        kills += 1
        con = sqlite3.connect(db)
        mid_step += con.execute("SELECT count(*) FROM journal").fetchone()[0]  # killed with a request in flight
        con.close()
        since = campaign_step(db)
        proc = subprocess.Popen(nandrig("resume", "--db", str(db)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert proc.wait(120) == 0
    assert kills == 20, f"the campaign ended after {kills} kills; make it longer"
    assert mid_step >= 3, f"only {mid_step} kills landed while a rig request was in flight"
    per_page, pe_db, pe_chip = outcome(db)
    assert pe_db == reference[1] and pe_chip == reference[2] and pe_db == pe_chip
    assert per_page == reference[0]
