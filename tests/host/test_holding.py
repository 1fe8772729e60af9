"""One host at a time on a served rig: a second host looks but does not take it, a second campaign is refused,
a take-over waits for the running command and stops the first campaign cleanly, and no P/E is lost."""
import sqlite3
import subprocess
import sys
import time

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.server import VirtualRig
from nandrig.boards.sim.tcp_link import serve_in_thread


def step_of(db) -> int:
    try:
        con = sqlite3.connect(db, timeout=1)
        try:
            row = con.execute("SELECT step FROM campaigns WHERE id=1").fetchone()
            return row[0] if row else 0
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def test_a_second_host_looks_is_refused_or_takes_over_after_the_running_command(run_cli, tmp_path):
    vr = VirtualRig(VirtualChip("mlc-small", 7))
    port, stop, _ = serve_in_thread(vr)
    url = f"socket://127.0.0.1:{port}"
    first = tmp_path / "first.db"
    args = ["--rig", url, "--chip", "mlc-small", "--blocks", "1-2"]
    proc = subprocess.Popen([sys.executable, "-m", "nandrig", "run", "endurance", *args, "--db", str(first),
                             "--cycles", "30000", "--step", "50"], stderr=subprocess.PIPE, text=True)
    try:
        while step_of(first) < 3:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.01)
        look = run_cli("rig", "info", "--rig", url, "--json")  # a look during the campaign
        assert look.code == 0, look.err
        second = tmp_path / "second.db"
        other = ["run", "endurance", "--rig", url, "--chip", "mlc-small", "--blocks", "5", "--db", second,
                 "--cycles", "10"]
        run_cli(*other).assert_one_line_error("held by another host session", "--take-over")
        assert proc.poll() is None  # neither the look nor the refusal touched the running campaign
        taken = run_cli(*other, "--take-over")
        assert taken.code == 0, taken.err
        err = proc.communicate(timeout=60)[1]
        assert proc.returncode != 0
        lines = [ln for ln in err.splitlines() if ln.startswith("nandrig: error")]
        assert len(lines) == 1 and "taken over" in lines[0] and "resume --take-over" in lines[0], err
        stopped_at = step_of(first)
        assert 3 <= stopped_at < 1200
        resumed = run_cli("resume", "--db", first, "--take-over")
        assert resumed.code == 0 and "campaign 1 done" in resumed.out, resumed.err
    finally:
        proc.kill()
        stop.set()
    for db, blocks in ((first, (1, 2)), (second, (5,))):  # every P/E on the chip counted once in its store
        con = sqlite3.connect(db)
        pe = dict(con.execute("SELECT block, pe FROM blocks WHERE pe > 0"))
        con.close()
        assert pe == {b: vr.chip.pe_count(b) for b in blocks}
    assert pe == {5: 10}
