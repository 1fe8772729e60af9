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


@pytest.fixture
def per_page(run_cli):
    """``per_page(db, campaign)``: its per-page export as rows of fields, without the wall-clock hours (when each
    checkpoint ran, which differs run to run)."""

    def export(db, cid) -> list[list[str]]:
        out = run_cli("export", "--db", db, "--campaign", cid, "--per-page")
        assert out.code == 0, out.err
        rows = [line.split(",") for line in out.out.splitlines()]
        keep = [i for i, name in enumerate(rows[0]) if name != "actual_h"]
        return [[r[i] for i in keep] for r in rows]

    return export



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
# A test marked ``background("ARGS")`` needs only what ``nandrig ARGS`` prints. The ULX3S bitstream takes most
# of a CI run on one core. In one process the command starts as the suite starts and the test (moved to the
# end) collects it; under pytest-xdist (the README's command: a worker per core) the test goes first, in a
# group of its own, so one worker runs it while the other runs the suite, the slow tests' groups first.
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
_STATE_HOME = pytest.StashKey[str]()


def _xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


_TMP_ROOT = pytest.StashKey[str]()
RAM_DISK = Path("/dev/shm")


def _temp_in_memory(config) -> None:
    """The suite's temporary files (databases, chip state files, tmp_path) on a RAM disk where the machine has
    one and the caller named no place: the store and the simulated rigs fsync after every record, which on this
    machine's disk made a 2-block latency campaign 33 s instead of 17 s (2026-11-30), time a worker waits doing
    nothing. Workers inherit the environment set here."""
    named = {"TMPDIR", "PYTEST_DEBUG_TEMPROOT"} & set(os.environ)
    if _xdist_worker(config) or named or not os.access(RAM_DISK, os.W_OK):
        return
    root = tempfile.mkdtemp(prefix="nandrig-tests-", dir=RAM_DISK)
    os.chmod(root, 0o1777)  # as /tmp: the PostgreSQL tests run their server as another user
    config.stash[_TMP_ROOT] = os.environ["TMPDIR"] = os.environ["PYTEST_DEBUG_TEMPROOT"] = root
    tempfile.tempdir = None  # computed again from TMPDIR


def pytest_configure(config):
    config.addinivalue_line("markers", "background(args): runs `nandrig ARGS` beside the suite (conftest.py)")
    _temp_in_memory(config)
    # the host's state folder (where `sim serve` keeps its chips by default) is the suite's own: no run sees
    # a chip an earlier run wore, and none leaves one behind
    config.stash[_STATE_HOME] = os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="nandrig-test-state-")


def pytest_unconfigure(config):
    for key in (_STATE_HOME, _TMP_ROOT):
        if where := config.stash.get(key, None):
            shutil.rmtree(where, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)  # before xdist names the groups
def pytest_collection_modifyitems(config, items):
    later = [i for i in items if i.get_closest_marker("background")]
    rest = [i for i in items if not i.get_closest_marker("background")]
    if not _xdist_worker(config):
        items[:] = rest + later
        return
    # a module's tests stay on one worker (its module fixtures are made once) unless it names groups itself
    # (measured: 2,478 s for a fresh-clone CI run grouping only modules with a module-scoped fixture, the rest per
    # test; by module, 2,380 s with another job beside it for a third of the run)
    for i in later:
        i.add_marker(pytest.mark.xdist_group(f"background-{i.name}"))
    for i in rest:
        if not i.get_closest_marker("xdist_group"):
            i.add_marker(pytest.mark.xdist_group(i.nodeid.split("::")[0]))
    # the long groups start first, so no worker is left with one at the end (groups go out in this order)
    slow = [i for i in rest if i.get_closest_marker("slow")]
    items[:] = later + slow + [i for i in rest if not i.get_closest_marker("slow")]


def pytest_collection_finish(session):
    if _xdist_worker(session.config):
        return  # started by the test itself, on the worker that runs it
    session.config.stash[_BACKGROUND] = {i.nodeid: Background(i.get_closest_marker("background").args[0])
                                         for i in session.items if i.get_closest_marker("background")}


def pytest_sessionfinish(session):
    for b in session.config.stash.get(_BACKGROUND, {}).values():
        b.stop()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if (root := config.stash.get(_TMP_ROOT, None)) and exitstatus:  # a failed run's files, for a look
        config.stash[_TMP_ROOT] = ""
        terminalreporter.write_line(f"this run's temporary files are kept in {root} (RAM: remove them when done)")


@pytest.fixture
def background(request) -> CliResult:
    """What the test's ``background`` command printed, once it has finished."""
    started = request.config.stash.setdefault(_BACKGROUND, {})
    if request.node.nodeid not in started:
        started[request.node.nodeid] = Background(request.node.get_closest_marker("background").args[0])
    return started[request.node.nodeid].result()


# ---- a real PostgreSQL server (Debian's package), private to the test run -------------------------------
def _pg_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
    return found[-1].parent if found else None


class PgServer:
    """A PostgreSQL server of Debian's package on 127.0.0.1 (a free port, a private socket folder), made with
    initdb in a folder of its own; stopped and started again on the same port and data."""

    def __init__(self) -> None:
        from tests.host.processes import free_ports

        pg_bin = _pg_bin()
        assert pg_bin, "PostgreSQL's server is not installed: ./tools/setup.sh installs Debian's postgresql"
        self.bin, self.root = pg_bin, Path(tempfile.mkdtemp(prefix="nandrig-pg-"))
        self.data, self.sockets = self.root / "data", self.root / "sockets"
        self.sockets.mkdir()
        self.as_server: list[str] = []
        if os.geteuid() == 0:  # the server refuses to run as root: Debian's postgres account runs it
            import pwd

            pw = pwd.getpwnam("postgres")
            self.as_server = ["runuser", "-u", "postgres", "--"]
            for p in (self.root, self.sockets):
                os.chown(p, pw.pw_uid, pw.pw_gid)
        (self.port,) = free_ports(1)
        self.url = f"postgresql://nandrig@127.0.0.1:{self.port}"
        subprocess.run([*self.as_server, pg_bin / "initdb", "-D", self.data, "-A", "trust", "-U", "nandrig", "-E",
                        "UTF8"], check=True, capture_output=True)
        self.start()

    def start(self) -> None:
        subprocess.run([*self.as_server, self.bin / "pg_ctl", "-D", self.data, "-l", self.root / "server.log", "-w",
                        "-t", "120", "-o", f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sockets}",
                        "start"], check=True, capture_output=True)

    def stop(self) -> None:
        """As a crash would: no shutdown checkpoint, connections cut."""
        subprocess.run([*self.as_server, self.bin / "pg_ctl", "-D", self.data, "-m", "immediate", "stop"],
                       capture_output=True)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def create_database(self, name: str) -> str:
        return create_database(self.url, name)


def create_database(server_url: str, name: str) -> str:
    """A new, empty database on the server; its URL."""
    import psycopg

    with psycopg.connect(f"{server_url}/postgres", autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    return f"{server_url}/{name}"


@pytest.fixture(scope="session")
def postgres():
    """The URL of a PostgreSQL server that the test run shares, stopped at the end."""
    server = PgServer()
    try:
        yield server.url
    finally:
        server.remove()


@pytest.fixture
def pg_server(tmp_path, monkeypatch):
    """A PostgreSQL server of this test's own (one the test may stop and start)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    server = PgServer()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture
def pg_database(postgres, tmp_path, monkeypatch):
    """Makes a new, empty database on the test server and returns its URL; virtual chips' state files go under
    this test's folder (their home for a PostgreSQL store is the host's state folder)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    made = []

    def make() -> str:
        made.append(f"{tmp_path.name.lower()}_{len(made)}")
        return create_database(postgres, made[-1])

    return make
