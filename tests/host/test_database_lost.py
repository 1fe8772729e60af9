"""A database deleted under a running campaign: the campaign stops with one line, what was committed is copied
out of the still-open file, and once it is moved back `resume` finishes with the export of a clean run."""
import sqlite3
import subprocess
import sys
import time

import pytest

RUN = ("run", "endurance", "--rig", "sim", "--chip", "mlc-3x", "--seed", "4", "--blocks", "1-8", "--cycles", "20000",
       "--step", "200")


def step(db) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return con.execute("SELECT step FROM campaigns").fetchone()[0]
        finally:
            con.close()
    except (sqlite3.Error, TypeError):
        return 0


@pytest.mark.slow
def test_a_database_deleted_mid_campaign_loses_nothing(tmp_path, run_cli):
    db = tmp_path / "m.db"
    proc = subprocess.Popen([sys.executable, "-m", "nandrig", *RUN, "--db", str(db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while step(db) < 30:
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    db.unlink()
    _, err = proc.communicate(timeout=120)
    lines = err.strip().splitlines()
    assert proc.returncode == 1 and "Traceback" not in err
    assert "was deleted while in use" in lines[-1] and "m.db.recovered" in lines[-1], err
    assert not (tmp_path / "m.db-wal").exists()  # the deleted file's log would corrupt what is moved back

    (tmp_path / "m.db.recovered").rename(db)
    r = run_cli("resume", "--db", db)
    assert r.code == 0 and "campaign 1 done" in r.out, r.err
    clean = tmp_path / "clean" / "m.db"
    clean.parent.mkdir()
    assert run_cli(*RUN, "--db", clean).code == 0
    export = lambda d: run_cli("export", "--db", d, "--campaign", "1", "--csv", "--per-page").out  # noqa: E731
    assert export(db) == export(clean)
