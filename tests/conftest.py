"""Shared helpers for the test suite."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile

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
