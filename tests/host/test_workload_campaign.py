"""`nandrig run workload` is a campaign: its blocks reserved, every rig request journaled, its state checkpointed;
killed three times and resumed, it ends with the statistics and the wear of a run never stopped."""
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
from nandrig.virtual_chip.chip import VirtualChip

ARGS = ("run", "workload", "--rig", "sim", "--chip", "mlc-small", "--seed", "5", "--blocks", "2-13",
        "--workload", "zipf", "--requests", "700", "--policy", "flares", "--checkpoint-every", "1")


def nandrig(*args) -> list[str]:
    return [sys.executable, "-m", "nandrig", *map(str, args)]


def query(db, sql: str) -> list[tuple]:
    with closing(sqlite3.connect(db, timeout=5)) as con:
        return con.execute(sql).fetchall()


def checkpoint(db) -> int | None:
    """The request count at the campaign's last checkpoint (None: none yet)."""
    try:
        rows = query(db, "SELECT n FROM program_states WHERE campaign_id=1")
    except sqlite3.Error:
        return None
    return rows[0][0] if rows else None


def outcome(db) -> tuple[dict, dict, dict]:
    """The stored result, the blocks' recorded P/E and the chip's own."""
    result = json.loads(query(db, "SELECT result FROM campaign_results WHERE campaign_id=1")[0][0])
    pe_db = dict(query(db, "SELECT block, pe FROM blocks WHERE pe > 0"))
    chip = VirtualChip.from_state(load_state(glob.glob(f"{db}.rigs/*.state")[0])["chip"])
    return result, pe_db, {b: chip.pe_count(b) for b in range(16) if chip.pe_count(b)}


@pytest.mark.slow
def test_sigkill_three_times_then_resume_gives_the_same_statistics_and_wear(tmp_path, run_cli):
    ref = tmp_path / "ref.db"
    r = run_cli(*ARGS, "--db", ref, "--json")
    assert r.code == 0, r.err
    reference = outcome(ref)
    assert json.loads(r.out) == reference[0]
    assert reference[1] == reference[2] and reference[1]  # every cycle the chip took is on record
    assert reference[0]["requests"] == 700 and reference[0]["gc_moves"] > 0 and reference[0]["erases"] > 0
    assert reference[0]["replayed_reads"] > 0 and reference[0]["energy_per_gb_j"] > 0

    db = tmp_path / "killed.db"
    rng = random.Random(3)
    since, replayed, in_flight = None, 0, 0
    proc = subprocess.Popen(nandrig(*ARGS, "--db", db), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(3):
        while (n := checkpoint(db)) is None or (since is not None and n <= since):
            assert proc.poll() is None, "the replay ended before it could be killed"
            time.sleep(0.01)
        # Between two checkpoints, so the resumed run replays its record: killed after a random number of
        # rig calls rather than a random time, which a fast machine could outrun to the end of the replay.
        calls = rng.randint(5, 100)
        while query(db, "SELECT count(*) FROM rig_calls WHERE campaign_id=1")[0][0] < calls:
            assert proc.poll() is None, "the replay ended before it could be killed"
            time.sleep(0.01)
        proc.kill()
        proc.wait()
        since = checkpoint(db)
        replayed += query(db, "SELECT count(*) FROM rig_calls WHERE campaign_id=1")[0][0] > 0
        in_flight += query(db, "SELECT count(*) FROM journal")[0][0]
        listed = subprocess.run(nandrig("ls", "--db", db), capture_output=True, text=True, check=True).stdout
        assert "workload" in listed and "interrupted" in listed
        proc = subprocess.Popen(nandrig("resume", "--db", db), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert replayed == 3 and in_flight >= 1, (replayed, in_flight)
    got = outcome(db)
    assert got[1] == got[2] == reference[1]  # recorded P/E = the chip's = the uninterrupted run's
    assert got[0] == reference[0]  # every statistic: latencies, energy, moves, errors, the P/E map
    assert query(db, "SELECT state FROM campaigns WHERE id=1")[0][0] == "done"
    assert query(db, "SELECT count(*) FROM blocks WHERE reserved_by IS NOT NULL")[0][0] == 0
    assert query(db, "SELECT count(*) FROM rig_calls")[0][0] < 2000  # the record spans a checkpoint, not the run
    page = run_cli("report", "--db", db, "--out", tmp_path / "rep")
    text = (tmp_path / "rep" / "index.html").read_text()
    assert page.code == 0 and "Campaign 1: workload" in text and "page reads checked" in text
    assert (tmp_path / "rep" / "workload_1_pe_map.png").exists()


def test_its_blocks_are_reserved_and_a_changed_trace_is_refused_on_resume(tmp_path, run_cli):
    trace = tmp_path / "t.csv"
    trace.write_text("".join(f"{128166372000000000 + 10_000 * k},h,0,{'Write' if k % 3 else 'Read'},"
                             f"{(k * 7919 % 300) * 4096},4096,100\n" for k in range(400)))
    args = ("run", "workload", "--rig", "sim", "--chip", "mlc-small", "--seed", "6", "--blocks", "0-9",
            "--trace", trace, "--format", "msr", "--db", tmp_path / "a.db", "--checkpoint-every", "0.2")
    # a checkpoint every 0.2 s: at the default 5 s a fast machine replayed all 400 requests before the first
    proc = subprocess.Popen(nandrig(*args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while checkpoint(tmp_path / "a.db") is None:
        assert proc.poll() is None, "the replay ended before it could be killed"
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    run_cli("run", "workload", "--rig", "sim", "--chip", "mlc-small", "--seed", "6", "--blocks", "5-12",
            "--db", tmp_path / "a.db").assert_one_line_error("block 5 is reserved by campaign 1")
    trace.write_text(trace.read_text() + "128166372090000000,h,0,Write,0,4096,100\n")
    r = run_cli("resume", "--db", tmp_path / "a.db")
    assert r.code != 0 and "Traceback" not in r.err
    assert "changed since the campaign started" in r.err.splitlines()[-1]
    assert query(tmp_path / "a.db", "SELECT state FROM campaigns WHERE id=1")[0][0] == "running"
