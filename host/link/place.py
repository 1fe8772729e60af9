"""``--rig labgrid://[HOST:PORT/]PLACE``: a rig reached through a labgrid place.

labgrid (the embedded-lab framework) keeps who holds which board: exporters publish each host's resources to a
coordinator, and a place groups them for one user at a time. nandrig asks labgrid's own client
(``labgrid-client``, its documented interface) to acquire the place, talks to the rig over the place's
NetworkSerialPort (a board's USB serial port through ser2net, or a served rig: ``raw`` gives
``socket://``, ``rfc2217`` gives ``rfc2217://``), keeps the place while the command runs and releases it at
the end. The coordinator is ``HOST:PORT`` from the URL, else labgrid's ``LG_COORDINATOR``. Holders are
labgrid's user@host: a place another user holds is refused; one this user already holds (a run of ours that
was killed) is taken as ours, and the rig's own session rules decide the rest.
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from nandrig.errors import NandrigError

SCHEME = "labgrid://"
CLIENT_TIMEOUT_S = 60.0
_ACQUIRED_BLOCK = re.compile(r"Acquired resource '(\w+)' \(([^)]*)\):\n(\s*\{.*?\})\n", re.S)


@dataclass(frozen=True)
class PlaceUrl:
    place: str
    coordinator: str | None  # HOST:PORT; None: labgrid's LG_COORDINATOR (or its default)

    @classmethod
    def parse(cls, url: str) -> "PlaceUrl":
        rest = url[len(SCHEME):]
        coordinator, _, place = rest.rpartition("/")
        if not re.fullmatch(r"[\w.-]+", place or "") or (coordinator and not re.fullmatch(r"[\w.-]+:\d+", coordinator)):
            raise NandrigError(f"--rig {url}: a labgrid place is labgrid://PLACE or labgrid://HOST:PORT/PLACE")
        return cls(place, coordinator or None)


def rig_url_of(show: str, place: str) -> str:
    """The serial URL of the place's NetworkSerialPort, from ``labgrid-client show``."""
    for cls, name, params in _ACQUIRED_BLOCK.findall(show):
        if cls != "NetworkSerialPort":
            continue
        p = ast.literal_eval(params.strip())["params"]
        scheme = "socket" if p.get("protocol", "rfc2217") == "raw" else "rfc2217"
        return f"{scheme}://{p['host']}:{p['port']}"
    raise NandrigError(f"labgrid place {place} has no NetworkSerialPort among its resources")


class PlaceLease:
    """The place, acquired; :meth:`release` gives it back."""

    def __init__(self, url: str) -> None:
        self.url = PlaceUrl.parse(url)
        self._client = self._find_client()
        out = self._run("acquire", ok=("You have already acquired place",))
        self.held_before = "already acquired" in out
        try:
            self.rig_url = rig_url_of(self._run("show"), self.url.place)
        except NandrigError:
            self.release()
            raise

    @staticmethod
    def _find_client() -> str:
        beside = Path(sys.executable).with_name("labgrid-client")  # the venv nandrig runs in
        client = str(beside) if beside.exists() else shutil.which("labgrid-client")
        if client is None:
            raise NandrigError("--rig labgrid://...: labgrid is not installed (pip install labgrid)")
        return client

    def _run(self, *args: str, ok: tuple[str, ...] = ()) -> str:
        env = dict(os.environ)
        if self.url.coordinator:
            env["LG_COORDINATOR"] = self.url.coordinator
        try:
            r = subprocess.run([self._client, "-p", self.url.place, *args], env=env, capture_output=True, text=True,
                               timeout=CLIENT_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise NandrigError(f"labgrid place {self.url.place}: the coordinator did not answer within "
                               f"{CLIENT_TIMEOUT_S:g} s") from None
        text = r.stdout + r.stderr
        if r.returncode != 0 and not any(o in text for o in ok):
            lines = [ln for ln in r.stderr.splitlines() if ln.strip()] or ["labgrid-client failed"]
            why = next((ln for ln in reversed(lines) if "Error" in ln), lines[-1])
            why = why.split("Error: ", 1)[-1].strip()
            raise NandrigError(f"labgrid place {self.url.place}: {why}")
        return text

    def release(self) -> None:
        """Best effort: a coordinator that has gone keeps the place until someone releases it."""
        try:
            self._run("release")
        except NandrigError:
            pass
