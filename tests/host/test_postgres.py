"""A lab's shared store in a real PostgreSQL server: campaigns from two processes (standing in for two hosts)
side by side, one `nandrig ls`, one live page and one report over both, stored exactly as an SQLite file stores
them; a campaign live in one process refused to another; a server that does not answer, or crashes mid-campaign."""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import pytest

from tests.host.processes import free_ports, wait_for
from tests.host.test_live_page import _get, _nandrig
from tests.host.test_campaign_states import interrupted_campaign
from tests.host.test_resume import query

ENDURANCE = ["run", "endurance", "--rig", "sim", "--chip", "mlc-small", "--blocks", "1-4", "--cycles", "3000",
             "--step", "100"]
LONG = [*ENDURANCE[:-4], "--cycles", "20000", "--step", "10"]  # some 60 times the short one's work


def _steps(db) -> list[int]:
    try:
        return [r[0] for r in query(db, "SELECT step FROM campaigns ORDER BY id")]
    except Exception:  # not made yet
        return []


def nandrig(*args) -> list[str]:
    return [sys.executable, "-m", "nandrig", *map(str, args)]


def per_page(db, campaign: int) -> str:
    return subprocess.run(nandrig("export", "--db", db, "--campaign", campaign, "--csv", "--per-page"), check=True,
                          capture_output=True, text=True).stdout


@pytest.mark.slow
def test_two_processes_share_one_store(pg_database, tmp_path):
    """A long campaign runs in one process; a second process starts, runs and ends its own beside it; the long one,
    stopped then, is left interrupted where it stood."""
    url = pg_database()
    first = subprocess.Popen(nandrig(*LONG, "--seed", 1, "--db", url), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_for(lambda: (rows := _steps(url)) and rows[0] > 0 or first.poll() is not None, 120, "the first campaign")
    second = subprocess.run(nandrig(*ENDURANCE, "--seed", 2, "--db", url), capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    ls = subprocess.run(nandrig("ls", "--db", url, "--json"), capture_output=True, text=True, check=True)
    assert first.poll() is None, "the first campaign ended before the second did: make it longer"
    # the other process's campaign is seen live through the server's lock
    assert sorted((c["chip"], c["state"], c["running_in"]) for c in json.loads(ls.stdout)) == [
        ("sim:mlc-small:1", "running", f"pid {first.pid} on {socket.gethostname()}"), ("sim:mlc-small:2", "done", "")]
    first.send_signal(signal.SIGINT)  # the long one has served its purpose: stopped as Ctrl-C stops it
    out, err = first.communicate(timeout=120)
    assert first.returncode == 130 and "Traceback" not in err, err
    ls = subprocess.run(nandrig("ls", "--db", url, "--json"), capture_output=True, text=True, check=True)
    assert sorted((c["chip"], c["state"], c["step"] == c["steps"]) for c in json.loads(ls.stdout)) == [
        ("sim:mlc-small:1", "interrupted", False), ("sim:mlc-small:2", "done", True)]
    text = subprocess.run(nandrig("ls", "--db", url), capture_output=True, text=True, check=True).stdout
    assert "sim:mlc-small:1" in text and "sim:mlc-small:2" in text

    port, = free_ports(1)
    server = _nandrig("serve", "--db", url, "--port", port)
    try:  # the live page over the shared store
        snap = wait_for(lambda: _get(f"http://127.0.0.1:{port}/api/campaigns")[1] or server.poll(), 30,
                        "the live page")
        assert server.poll() is None, server.communicate()
        assert sorted(c["chip"] for c in json.loads(snap)["campaigns"]) == ["sim:mlc-small:1", "sim:mlc-small:2"]
        status, png = _get(f"http://127.0.0.1:{port}/campaign/2/rber.png")
        assert status == 200 and png[:4] == b"\x89PNG"
    finally:
        server.terminate()
        server.wait(10)

    report = tmp_path / "report"
    subprocess.run(nandrig("report", "--db", url, "--out", report), check=True, capture_output=True)
    page = (report / "index.html").read_text()
    assert "sim:mlc-small:1" in page and "sim:mlc-small:2" in page

    # the same campaign alone in an SQLite file stores the same per-page results
    chip_of = {c["chip"]: c["id"] for c in json.loads(ls.stdout)}
    alone = tmp_path / "alone.db"
    subprocess.run(nandrig(*ENDURANCE, "--seed", 2, "--db", alone), check=True, capture_output=True)
    assert per_page(url, chip_of["sim:mlc-small:2"]) == per_page(alone, 1)


def test_a_campaign_live_in_one_process_is_refused_to_another(pg_database, run_cli):
    from tests.host.test_campaign_states import interrupted_campaign, states
    from nandrig.host.storage.store import Store

    url = pg_database()
    cid = interrupted_campaign(url)
    assert states(run_cli, url) == {cid: "interrupted"}
    holder = Store(url)
    with holder.lock(cid):
        assert states(run_cli, url) == {cid: "running"}
        r = run_cli("resume", "--db", url, "--campaign", cid)
        r.assert_one_line_error("running in another process", "pid")
    holder.close()
    r = run_cli("resume", "--db", url)
    assert r.code == 0, r.err
    assert states(run_cli, url) == {cid: "done"}


def test_a_ctrl_c_that_leaves_a_reply_uncollected_comes_out_as_the_interrupt(pg_database):
    """CI once saw a Ctrl-C land while psycopg collected a reply; the transaction's rollback then failed "another
    command is already in progress" and the campaign ended as a database error (exit 1), not interrupted (130).
    Here the connection is put in that state by hand: the interrupt comes out, the write is rolled back and the
    campaign's lock is free."""
    from nandrig.host.storage.store import Store

    url = pg_database()
    cid = interrupted_campaign(url)
    store = Store(url)
    with pytest.raises(KeyboardInterrupt):
        with store.lock(cid), store.tx() as db:
            db.execute("UPDATE campaigns SET step = -1 WHERE id = ?", (cid,))
            db.con.pgconn.send_query(b"SELECT pg_sleep(0.2)")  # sent; its reply never collected
            raise KeyboardInterrupt
    other = Store(url, read_only=True)
    wait_for(lambda: other.holder(cid) is None, 10, "the server to drop the closed connection's lock")
    assert other.campaign(cid).step >= 0
    other.close()


@pytest.mark.parametrize("db,words", [
    ("postgresql://nandrig@127.0.0.1:1/lab", ["cannot reach database", "127.0.0.1:1"]),
    ("{server}/no_such_database", ["cannot reach database", "no_such_database"]),
    ("postgresql://nandrig:secret@127.0.0.1:1/lab", ["cannot reach database"]),
])
def test_a_database_that_does_not_answer_is_one_line(postgres, run_cli, db, words):
    db = db.format(server=postgres)
    for args in (("ls", "--db", db), ("run", "endurance", "--rig", "sim", "--db", db, "--blocks", "1")):
        r = run_cli(*args)
        r.assert_one_line_error(*words)
        assert "secret" not in r.err  # a password in the URL is not printed


def test_bit_error_maps_are_stored_alike_in_both_engines(pg_database, run_cli, tmp_path):
    from nandrig.host.storage.store import Store

    args = ("run", "bitmap", "--rig", "sim", "--chip", "mlc-small", "--seed", "1", "--blocks", "1-2", "--wear", "20000")
    url, file = pg_database(), tmp_path / "maps.db"
    maps = []
    for db in (url, file):
        assert run_cli(*args, "--db", db).code == 0
        store = Store(db, read_only=True)
        try:
            maps.append(store.bit_errors(1))
        finally:
            store.close()
    assert maps[0] == maps[1] and any(codes for *_x, codes in maps[0])


@pytest.mark.slow
def test_a_server_that_goes_away_stops_the_campaign_in_one_line_and_resume_finishes_it(pg_server, tmp_path):
    """The server crashes mid-campaign (pg_ctl stop -m immediate): one line saying how to go on; once it is back,
    resume finishes the campaign exactly as an uninterrupted run in an SQLite file would."""
    from tests.host.test_resume import ARGS, campaign_step, nandrig as cmd, outcome, wait_for_progress

    url, alone = pg_server.create_database("lab"), tmp_path / "alone.db"
    subprocess.run(cmd("run", *ARGS, "--db", str(alone)), check=True, capture_output=True)
    run = subprocess.Popen(cmd("run", *ARGS, "--db", url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_progress(url, run, 5)
    pg_server.stop()
    _, err = run.communicate(timeout=120)
    lines = [ln for ln in err.splitlines() if ln.startswith("nandrig:")]
    assert run.returncode == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert "server closed the connection" in lines[0] and f"nandrig resume --db {url}" in lines[0]
    pg_server.start()
    assert campaign_step(url) < 204  # stopped part-way
    resumed = subprocess.run(cmd("resume", "--db", url), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert outcome(url) == outcome(alone)


def test_a_twin_is_fitted_from_a_postgresql_store_as_from_an_sqlite_file(pg_database, run_cli, tmp_path):
    """`sim profile --from-db` reads a chip's campaigns from a PostgreSQL server as from an SQLite file: the
    same campaigns there give the same inputs, and the command fits and writes the twin from the server."""
    from dataclasses import replace

    from nandrig.host.storage.store import Store
    from nandrig.host.views.twin_inputs import twin_inputs

    chip, label = ("--rig", "sim", "--chip", "mlc-small", "--seed", "6"), "sim:mlc-small:6"
    url, file = pg_database(), tmp_path / "die.db"
    inputs = []
    for db in (url, file):
        for kind in (("latency", "--blocks", "0", "--checkpoints", "1,2000"),
                     ("retention", "--blocks", "2-7", "--wear", "1000,4000", "--times", "1d,1mo")):
            r = run_cli("run", *kind, *chip, "--db", db)
            assert r.code == 0, r.err
        store = Store(db, read_only=True)
        try:
            inputs.append(replace(twin_inputs(store, label), database=""))
        finally:
            store.close()
    assert inputs[0] == inputs[1] and inputs[0].ops and inputs[0].rber_rows
    out = tmp_path / "twin.json"
    r = run_cli("sim", "profile", "--from-db", url, "--chip", label, "--out", out, "--json")
    assert r.code == 0, r.err
    fitted = {p["field"] for p in json.loads(r.out)["parts"] if p["ci95"]}
    assert {"timing.t_prog_msb_us", "rber.Bo"} <= fitted and json.loads(out.read_text())["twin"]["database"]
