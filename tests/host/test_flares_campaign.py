"""flares-validate with a database is a campaign: its blocks reserved, every rig request journaled and its reply
recorded, and a run killed again and again ends, after `nandrig resume`, exactly as an uninterrupted one."""
from __future__ import annotations

import glob
import json
import random
import sqlite3
import subprocess
import sys
import time
from contextlib import closing

import pytest

from nandrig.boards.sim.state_file import load_state
from nandrig.host.engine.flares_validate import verdict
from nandrig.virtual_chip.chip import VirtualChip

# calibration (with a bound), the rig running FLARES, density control: every path a resume must replay
ARGS = ("run", "flares-validate", "--rig", "sim", "--chip", "mlc-small", "--seed", "4", "--on-rig", "--bound",
        "0.99", "--scale", "0.02")


def nandrig(*args) -> list[str]:
    return [sys.executable, "-m", "nandrig", *map(str, args)]


def query(db, sql: str) -> list[tuple]:
    with closing(sqlite3.connect(db, timeout=5)) as con:
        return con.execute(sql).fetchall()


def requests_done(db) -> int | None:
    try:
        rows = query(db, "SELECT step FROM campaigns WHERE id=1")
    except sqlite3.Error:
        return None
    return rows[0][0] if rows else None


def outcome(db) -> tuple[dict, dict, dict, list]:
    """The stored result, the blocks' recorded P/E, the chip's own P/E, and the recorded requests."""
    result = json.loads(query(db, "SELECT result FROM flares_runs WHERE campaign_id=1")[0][0])
    pe_db = dict(query(db, "SELECT block, pe FROM blocks WHERE pe > 0"))
    chip = VirtualChip.from_state(load_state(glob.glob(f"{db}.rigs/*.state")[0])["chip"])
    calls = query(db, "SELECT n, op, payload, status, reply FROM rig_calls WHERE campaign_id=1 ORDER BY n")
    return result, pe_db, {b: chip.pe_count(b) for b in pe_db}, calls


@pytest.mark.slow
def test_sigkill_five_times_then_resume_gives_the_same_verdict_and_records(tmp_path, run_cli):
    ref = tmp_path / "ref.db"
    r = run_cli(*ARGS, "--db", ref, "--json")
    assert r.code == 0, r.err
    reference = outcome(ref)
    assert json.loads(r.out)["verdict"] == verdict(reference[0])
    assert reference[1] == reference[2]  # every cycle the chip took is on record

    db = tmp_path / "killed.db"
    rng = random.Random(5)
    kills, in_flight, since = 0, 0, None
    proc = subprocess.Popen(nandrig(*ARGS, "--db", db), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(5):
        while (n := requests_done(db)) is None or (since is not None and n <= since + 20):
            assert proc.poll() is None, "the validation ended before it could be killed"
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.05))
        proc.kill()
        proc.wait()
        kills += 1
        in_flight += query(db, "SELECT count(*) FROM journal")[0][0]
        since = requests_done(db)
        listed = subprocess.run(nandrig("ls", "--db", db), capture_output=True, text=True, check=True).stdout
        assert "flares-validate" in listed and "interrupted" in listed and f"{since} requests" in listed
        proc = subprocess.Popen(nandrig("resume", "--db", db), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert kills == 5 and in_flight >= 1, (kills, in_flight)
    got = outcome(db)
    assert got[1] == got[2] == reference[1]  # recorded P/E = the chip's = the uninterrupted run's
    assert got[3] == reference[3]  # request for request, reply for reply
    assert got[0] == reference[0]  # the verdict, every run's figures and the per-operation traces
    assert "FLARES" in out and ("met its target" in out or "missed its target" in out)
    assert query(db, "SELECT state FROM campaigns WHERE id=1")[0][0] == "done"
    assert query(db, "SELECT count(*) FROM blocks WHERE reserved_by IS NOT NULL")[0][0] == 0
    page = run_cli("report", "--db", db, "--out", tmp_path / "rep")
    assert page.code == 0 and "FLARES validation" in (tmp_path / "rep" / "index.html").read_text()


def test_its_blocks_are_reserved_while_it_runs_and_its_record_must_match(tmp_path, run_cli):
    """A stopped validation holds its blocks against other campaigns; a resume whose program asks something else
    than the record holds (another nandrig) is refused in one line; only the request in flight at the stop is
    settled first (its wear counted)."""
    db = tmp_path / "v.db"
    proc = subprocess.Popen(nandrig(*ARGS, "--db", db), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while (n := requests_done(db)) is None or n < 30:
        assert proc.poll() is None
        time.sleep(0.002)
    proc.kill()
    proc.wait()
    held = query(db, "SELECT min(block) FROM blocks WHERE reserved_by=1")[0][0]
    run_cli("run", "endurance", "--rig", "sim", "--chip", "mlc-small", "--seed", "4", "--db", db, "--blocks",
            held, "--cycles", "5").assert_one_line_error(f"block {held} is reserved by campaign 1")
    with closing(sqlite3.connect(db)) as con:  # as if another version's program had made the record
        con.execute("UPDATE rig_calls SET payload = X'00' WHERE campaign_id=1 AND n=3")
        con.commit()
    recorded = len(query(db, "SELECT n FROM rig_calls")) + len(query(db, "SELECT step FROM journal"))
    r = run_cli("resume", "--db", db)
    assert r.code != 0 and "Traceback" not in r.err
    said, error = r.err.splitlines()  # where it stands, then one line of error
    assert said.startswith("resuming campaign 1 (flares-validate) at request ") and "another nandrig version" in error
    assert len(query(db, "SELECT n FROM rig_calls")) == recorded and not query(db, "SELECT step FROM journal")
