"""`nandrig serve`: the live campaign page, read by a real headless Chromium while a campaign runs in another
process; screenshots (desktop and phone) are kept in build/live-page-screenshots/."""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from tests.host.processes import free_ports, wait_for

SHOTS = Path(__file__).resolve().parents[2] / "build" / "live-page-screenshots"
CHIP = ("--rig", "sim", "--chip", "mlc-small", "--seed", "4")


def _nandrig(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "nandrig", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except urllib.error.URLError:  # not listening (yet)
        return 0, b""


def test_the_live_page_follows_a_running_campaign(run_cli, tmp_path, browser):
    db = tmp_path / "lab.db"
    assert run_cli("run", "endurance", *CHIP, "--db", db, "--blocks", "0-3", "--cycles", "3000", "--step",
                   "1000").code == 0
    port, = free_ports(1)
    server = _nandrig("serve", "--db", db, "--port", port, "--refresh", "1")
    running = _nandrig("run", "endurance", *CHIP, "--db", db, "--blocks", "4-7", "--cycles", "5000000", "--step",
                       "500")  # a minute or more of work (8 s in steps of 5,000 on a fast machine): it runs through
    # the whole test, which stops it
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _get(base + "/api/campaigns")[0] == 200 if server.poll() is None else None, 20,
                  "the server")
        snap = wait_for(lambda: (s := json.loads(_get(base + "/api/campaigns")[1]))["campaigns"][1:] and s, 60,
                         "the second campaign")
        first = snap["campaigns"][0]
        assert first["state"] == "done" and first["pe_range"] == [3000, 3000] and first["latest"]
        assert {"lower", "upper"} <= set(first["latest"][-1])
        status, png = _get(base + "/campaign/1/rber.png")
        assert status == 200 and png[:8] == b"\x89PNG\r\n\x1a\n"
        assert _get(base + "/campaign/99/rber.png")[0] == 404 and _get(base + "/nothing")[0] == 404
        with ThreadPoolExecutor(12) as pool:  # a page's plots arrive together: every one is drawn
            got = list(pool.map(lambda i: _get(f"{base}/campaign/{1 + i % 2}/rber.png?n={i}"), range(24)))
        assert all(code == 200 and body[:4] == b"\x89PNG" for code, body in got), [c for c, _ in got]

        browser.set_window_size(1280, 900)
        browser.get(base + "/")
        step = lambda: browser.execute_script(  # noqa: E731
            "const e = document.querySelector('#c2 .steps'); return e ? e.textContent : null")
        seen = wait_for(step, 30, "campaign 2 on the page")
        # the page redraws itself: the running campaign's step moves with no reload
        wait_for(lambda: step() != seen, 60, "the running campaign's progress on the page")
        assert "running" in browser.find_element("css selector", "#c2 .state").text
        assert f"pid {running.pid}" in browser.find_element("css selector", "#c2 .where").text  # who runs it
        images = wait_for(lambda: browser.execute_script(
            "const i = Array.from(document.images); return i.length && i.every(x => x.complete) ? "
            "i.map(x => x.naturalWidth) : null"), 30, "the plots")
        assert all(w >= 600 for w in images), images
        assert not [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        SHOTS.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(SHOTS / "desktop.png"))
        browser.set_window_size(390, 844)  # a phone: the cards fit its width, nothing scrolls sideways
        browser.get(base + "/")
        wait_for(step, 30, "the page on a phone")
        assert browser.execute_script("return document.documentElement.scrollWidth") <= 390
        assert browser.save_screenshot(str(SHOTS / "phone.png"))
        import matplotlib.image

        for shot in ("desktop.png", "phone.png"):
            assert np.std(matplotlib.image.imread(SHOTS / shot)[..., :3]) > 0.05, shot
    finally:
        for p in (running, server):
            p.send_signal(signal.SIGKILL)
            p.wait()


def test_serve_refuses_a_port_in_use(run_cli, tmp_path):
    db = tmp_path / "lab.db"
    assert run_cli("run", "endurance", *CHIP, "--db", db, "--blocks", "0", "--cycles", "10", "--step", "10").code == 0
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        run_cli("serve", "--db", db, "--port", s.getsockname()[1]).assert_one_line_error("cannot listen")
