"""Shared helpers for the test suite."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from nandrig.cli import main


class CliResult:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def assert_one_line_error(self, *words: str) -> None:
        """Non-zero exit, no traceback, one line on stderr that mentions every word."""
        assert self.code != 0
        assert "Traceback" not in self.err
        lines = [line for line in self.err.splitlines() if line.strip()]
        assert len(lines) == 1, self.err
        for w in words:
            assert w.lower() in lines[0].lower(), lines[0]


@pytest.fixture
def run_cli(capsys):
    """Run ``nandrig ARGS`` in-process; returns exit code, stdout and stderr."""

    def run(*args: str) -> CliResult:
        code = main([str(a) for a in args])
        cap = capsys.readouterr()
        return CliResult(code, cap.out, cap.err)

    return run



# ---- a real browser (Debian's headless Chromium through its WebDriver) ----------------------------------
@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """A headless Chromium for the tests that look at pages as people do."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    # headless as root on a closed network: no sandbox, no background connections that would be refused
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    yield driver
    driver.quit()


# ---- commands that run beside the suite ----------------------------------------------------------
# A test marked ``background("ARGS")`` needs only what ``nandrig ARGS`` prints: the command starts as the
# suite starts, in its own process, and the test (moved to the end) collects it. The ULX3S bitstream takes
# most of a CI run on one core; the rest of the suite runs on the other meanwhile.
class Background:
    def __init__(self, args: str) -> None:
        self.out, self.err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "nandrig", *args.split()], stdout=self.out,
                                     stderr=self.err, stdin=subprocess.DEVNULL, start_new_session=True)

    def result(self) -> CliResult:
        code = self.proc.wait()
        text = []
        for f in (self.out, self.err):
            f.seek(0)
            text.append(f.read().decode(errors="replace"))
        return CliResult(code, *text)

    def stop(self) -> None:
        if self.proc.poll() is None:  # the tools it started too
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


_BACKGROUND = pytest.StashKey[dict]()


def pytest_configure(config):
    config.addinivalue_line("markers", "background(args): runs `nandrig ARGS` beside the suite (conftest.py)")


def pytest_collection_modifyitems(items):
    later = [i for i in items if i.get_closest_marker("background")]
    items[:] = [i for i in items if not i.get_closest_marker("background")] + later


def pytest_collection_finish(session):
    session.config.stash[_BACKGROUND] = {i.nodeid: Background(i.get_closest_marker("background").args[0])
                                         for i in session.items if i.get_closest_marker("background")}


def pytest_sessionfinish(session):
    for b in session.config.stash.get(_BACKGROUND, {}).values():
        b.stop()


@pytest.fixture
def background(request) -> CliResult:
    """What the test's ``background`` command printed, once it has finished."""
    return request.config.stash[_BACKGROUND][request.node.nodeid].result()


# ---- a real PostgreSQL server (Debian's package), private to the test run -------------------------------
def _pg_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
    return found[-1].parent if found else None


@pytest.fixture(scope="session")
def postgres():
    """The URL of a PostgreSQL server on 127.0.0.1 (a free port, a private socket folder), stopped at the end."""
    from tests.host.processes import free_ports

    pg_bin = _pg_bin()
    assert pg_bin, "PostgreSQL's server is not installed: ./tools/setup.sh installs Debian's postgresql"
    root = Path(tempfile.mkdtemp(prefix="nandrig-pg-"))
    data, sockets, log = root / "data", root / "sockets", root / "server.log"
    sockets.mkdir()
    as_server = []
    if os.geteuid() == 0:  # the server refuses to run as root: Debian's postgres account runs it
        import pwd

        pw = pwd.getpwnam("postgres")
        as_server = ["runuser", "-u", "postgres", "--"]
        for p in (root, sockets):
            os.chown(p, pw.pw_uid, pw.pw_gid)
    (port,) = free_ports(1)
    subprocess.run([*as_server, pg_bin / "initdb", "-D", data, "-A", "trust", "-U", "nandrig", "-E", "UTF8"],
                   check=True, capture_output=True)
    subprocess.run([*as_server, pg_bin / "pg_ctl", "-D", data, "-l", log, "-w", "-t", "120", "-o",
                    f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets}", "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://nandrig@127.0.0.1:{port}"
    finally:
        subprocess.run([*as_server, pg_bin / "pg_ctl", "-D", data, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_database(postgres, tmp_path, monkeypatch):
    """Makes a new, empty database on the test server and returns its URL; virtual chips' state files go under
    this test's folder (their home for a PostgreSQL store is the host's state folder)."""
    import psycopg

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    made = []

    def make() -> str:
        name = f"{tmp_path.name.lower()}_{len(made)}"
        with psycopg.connect(f"{postgres}/postgres", autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        made.append(name)
        return f"{postgres}/{name}"

    return make
