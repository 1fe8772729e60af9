"""SIGKILL a running endurance campaign at random instants, resume each time: nothing lost, nothing twice; in
an SQLite file and in a PostgreSQL server."""
import random
import sqlite3
import subprocess
import sys
import time
from contextlib import closing

import pytest

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.state_file import load_state

ARGS = ["endurance", "--rig", "sim", "--chip", "mlc-small", "--seed", "3", "--blocks", "1-6",
        "--cycles", "5000", "--step", "50"]


def nandrig(*args: str) -> list[str]:
    return [sys.executable, "-m", "nandrig", *args]


def query(db, sql: str) -> list[tuple]:
    """``sql``'s rows from the store at ``db`` (an SQLite file or a PostgreSQL URL), as another process sees it."""
    if str(db).startswith("postgresql://"):
        import psycopg

        with psycopg.connect(str(db), connect_timeout=5) as con:
            return con.execute(sql).fetchall()
    with closing(sqlite3.connect(db, timeout=1)) as con:
        return con.execute(sql).fetchall()


def outcome(db) -> tuple[str, dict, dict]:
    per_page = subprocess.run(nandrig("export", "--db", str(db), "--campaign", "1", "--csv", "--per-page"),
                              check=True, capture_output=True, text=True).stdout
    pe_db = dict(query(db, "SELECT block, pe FROM blocks WHERE block BETWEEN 0 AND 7"))
    state = query(db, "SELECT state FROM campaigns WHERE id=1")[0][0]
    sim_state = query(db, "SELECT sim_state FROM chips")[0][0]
    chip = VirtualChip.from_state(load_state(sim_state)["chip"])
    pe_chip = {b: chip.pe_count(b) for b in pe_db}
    assert state == "done"
    return per_page, pe_db, pe_chip


def campaign_step(db) -> int | None:
    """The campaign's cursor, or None before it exists."""
    try:
        rows = query(db, "SELECT step FROM campaigns WHERE id=1")
    except Exception:  # no database or no table yet (either engine's error)
        return None
    return rows[0][0] if rows else None


def wait_for_progress(db, proc, since: int | None) -> None:
    """Until the (re)started process has done a step: a kill during interpreter start-up tests nothing."""
    while (step := campaign_step(db)) is None or (since is not None and step <= since):
        assert proc.poll() is None, "the campaign finished before it could be killed"
        time.sleep(0.002)


@pytest.mark.slow
@pytest.mark.parametrize("engine,kills", [("sqlite", 20), ("postgres", 10)])
def test_sigkill_then_resume_equals_an_uninterrupted_run(engine, kills, tmp_path, request):
    if engine == "postgres":
        database = request.getfixturevalue("pg_database")
        ref_db, db = database(), database()
    else:
        ref_db, db = tmp_path / "ref" / "run.db", tmp_path / "killed" / "run.db"
        ref_db.parent.mkdir()
        db.parent.mkdir()
    subprocess.run(nandrig("run", *ARGS, "--db", str(ref_db)), check=True, capture_output=True)
    reference = outcome(ref_db)

    rng = random.Random(7)
    proc = subprocess.Popen(nandrig("run", *ARGS, "--db", str(db)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    killed = 0
    mid_step = 0
    since = None
    for _ in range(kills):
        wait_for_progress(db, proc, since)
        time.sleep(rng.uniform(0.0, 0.03))  # a random instant within the next step or two
        if proc.poll() is not None:
            break
        proc.kill()
        proc.wait()
        killed += 1
        mid_step += query(db, "SELECT count(*) FROM journal")[0][0]  # killed with a request in flight
        since = campaign_step(db)
        proc = subprocess.Popen(nandrig("resume", "--db", str(db)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert proc.wait(120) == 0
    assert killed == kills, f"the campaign ended after {killed} kills; make it longer"
    assert mid_step >= kills * 3 // 20, f"only {mid_step} kills landed while a rig request was in flight"
    per_page, pe_db, pe_chip = outcome(db)
    assert pe_db == reference[1] and pe_chip == reference[2] and pe_db == pe_chip
    assert per_page == reference[0]
