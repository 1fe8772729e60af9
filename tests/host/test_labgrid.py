"""A rig as a labgrid place: a real coordinator and exporter on 127.0.0.1 export a served virtual rig
(`nandrig sim serve`) as a NetworkSerialPort; campaigns take the place through labgrid, keep it while they
run, give it back at the end, and a resume takes it again."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.host.processes import free_ports, listening, wait_for

BIN = Path(sys.executable).parent
PLACE = "bench-a"


class Lab:
    def __init__(self, tmp: Path) -> None:
        self.tmp, self.procs = tmp, []
        coordinator_port, self.rig_port = free_ports(2)
        self.coordinator_port = coordinator_port
        self.coordinator = f"127.0.0.1:{coordinator_port}"
        self.url = f"labgrid://{self.coordinator}/{PLACE}"

    def start(self) -> None:
        self._start([BIN / "labgrid-coordinator", "-l", self.coordinator], "coordinator")
        self._start([sys.executable, "-m", "nandrig", "sim", "serve", "--port", self.rig_port, "--chip", "mlc-small",
                     "--seed", "3", "--state", self.tmp / "chip.json"], "rig")
        # An exporter that finds no coordinator exits (for its service manager to restart it): start it only
        # once the coordinator listens, which on a loaded machine takes seconds.
        self._wait(lambda: listening(self.coordinator_port), "the coordinator")
        self._wait(lambda: listening(self.rig_port), "the rig")
        (self.tmp / "exporter.yaml").write_text(
            f"rig-a:\n  NetworkSerialPort:\n    host: 127.0.0.1\n    port: {self.rig_port}\n    protocol: raw\n")
        self._start([BIN / "labgrid-exporter", "-c", self.coordinator, "-n", "host-a", "--hostname", "127.0.0.1",
                     self.tmp / "exporter.yaml"], "exporter")
        self._wait(lambda: "host-a/rig-a/NetworkSerialPort" in self.client("resources").stdout, "the exporter")
        assert self.client("create").returncode == 0
        assert self.client("add-match", "host-a/rig-a/*").returncode == 0

    def _wait(self, predicate, what: str) -> None:
        """Wait for ``what``; if it does not come, fail with what the lab's processes said."""
        try:
            wait_for(predicate, 120, what)
        except AssertionError:
            logs = "\n".join(f"--- {log.name}:\n{log.read_text()[-2000:]}" for log in sorted(self.tmp.glob("*.log")))
            raise AssertionError(f"timed out waiting for {what}\n{logs}") from None

    def _start(self, argv, name: str) -> None:
        log = open(self.tmp / f"{name}.log", "w")
        self.procs.append(subprocess.Popen([str(a) for a in argv], cwd=self.tmp, stdout=log, stderr=log,
                                           stdin=subprocess.DEVNULL, start_new_session=True))

    def client(self, *args: str, user: str | None = None) -> subprocess.CompletedProcess:
        env = {**os.environ, "LG_COORDINATOR": self.coordinator}
        if user:
            env["LG_USERNAME"] = user
        return subprocess.run([str(BIN / "labgrid-client"), "-p", PLACE, *args], env=env, capture_output=True,
                              text=True, timeout=60)

    def holder(self) -> str:
        show = self.client("show").stdout
        return next(ln.split(":", 1)[1].strip() for ln in show.splitlines() if ln.strip().startswith("acquired:"))

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = Lab(tmp_path_factory.mktemp("lab"))
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()  # also when the lab did not come up: nothing is left running


def _nandrig(*args, user: str | None = None) -> subprocess.Popen:
    """In its own session, with SIGINT as a terminal gives it (a test runner may have it ignored)."""
    env = {**os.environ, **({"LG_USERNAME": user} if user else {})}
    return subprocess.Popen([sys.executable, "-m", "nandrig", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _step(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            row = con.execute("SELECT step FROM campaigns ORDER BY id DESC LIMIT 1").fetchone()
    except sqlite3.Error:
        return 0
    return row[0] if row else 0


def test_a_campaign_holds_its_place_and_gives_it_back(lab, tmp_path):
    """While it runs nobody else gets the place; stopped (Ctrl-C), it gives the place back."""
    db = tmp_path / "lab.db"
    run = _nandrig("run", "endurance", "--rig", lab.url, "--db", db, "--blocks", "0-3", "--cycles", "5000000",
                   "--step", "1000")  # long enough to outlast the test on a fast machine, which stops it
    try:
        wait_for(lambda: _step(db) > 0, 60, "the campaign's first step")
        assert lab.holder() != "None"  # the campaign holds the place
        other = lab.client("acquire", user="someone-else")  # a second user is refused while it runs
        assert other.returncode != 0 and "already acquired" in other.stderr
        second = _nandrig("rig", "info", "--rig", lab.url, user="someone-else")
        _, err = second.communicate(timeout=60)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert second.returncode != 0 and len(lines) == 1 and "already acquired" in lines[0], err
        assert run.poll() is None, "the campaign ended before the checks"
        run.send_signal(signal.SIGINT)
        run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert lab.holder() == "None"  # given back as the process ended
    with sqlite3.connect(db) as con:
        state, url = con.execute("SELECT state, rig_url FROM campaigns").fetchone()
    assert state != "done" and url == lab.url


def test_a_killed_campaign_resumes_through_its_place(lab, tmp_path):
    db = tmp_path / "lab.db"
    run = _nandrig("run", "endurance", "--rig", lab.url, "--db", db, "--blocks", "4-7", "--cycles", "200000",
                   "--step", "1000")  # 200 checkpoints: still running when the kill comes
    wait_for(lambda: _step(db) > 2, 60, "a few steps")
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    assert lab.holder() != "None"  # the killed process could not give it back
    resume = _nandrig("resume", "--db", db, "--take-over")
    out, err = resume.communicate(timeout=300)
    assert resume.returncode == 0, err
    assert lab.holder() == "None"
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT state FROM campaigns").fetchone() == ("done",)
        assert con.execute("SELECT MIN(pe) FROM blocks WHERE block BETWEEN 4 AND 7").fetchone()[0] > 10000


@pytest.mark.parametrize("url, words", [
    ("labgrid://{coord}/no-such-place", ("no-such-place", "matches nothing")),
    ("labgrid://127.0.0.1:1/bench-a", ("bench-a", "coordinator")),
    ("labgrid://bad place", ("labgrid://PLACE",)),
])
def test_bad_places_are_one_line(lab, run_cli, url, words):
    run_cli("rig", "info", "--rig", url.format(coord=lab.coordinator)).assert_one_line_error(*words)
